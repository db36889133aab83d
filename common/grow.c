/* Capacity doubling with overflow checks; see grow.h. */
#include "grow.h"

#include <stdint.h>
#include <stdlib.h>

int grow_array(void **p, size_t *cap, size_t need, size_t elem, size_t first_cap)
{
	if (need <= *cap)
		return 0;
	if (!elem || need > SIZE_MAX / elem)
		return -1;
	size_t max = SIZE_MAX / elem;
	size_t want = *cap ? *cap : first_cap ? first_cap : 1;
	if (want > max)
		want = max;
	while (want < need)
		want = want > max / 2 ? max : want * 2;
	void *grown = realloc(*p, want * elem);
	if (!grown)
		return -1;
	*p = grown;
	*cap = want;
	return 0;
}
