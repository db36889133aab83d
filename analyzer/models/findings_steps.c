/* The steps of a process (fx_steps_of, findings_private.h). */
#include "findings_idle.h"

#include <stdlib.h>

/* The smallest period p of the sequence of (function, stack) of the calls
 * that open intervals under which at least 90% of it repeats, seen at
 * least twice, and in *repeats how many times it repeats; 0 when none (up
 * to 64 calls per step). */
static size_t sync_period(const uint64_t *seq, size_t n, size_t *repeats)
{
	for (size_t p = 1; p <= 64 && 2 * p <= n; p++) {
		size_t match = 0;
		for (size_t i = 0; i + p < n; i++)
			match += seq[i] == seq[i + p];
		if ((double)match >= 0.9 * (double)(n - p)) {
			/* every repeat of the pattern after the first matches p
			 * calls: a stray call (the last cudaFree) adds no step */
			*repeats = (match + p / 2) / p + 1;
			return p;
		}
	}
	return 0;
}

void fx_steps_of(struct fx_proc *p)
{
	if (p->step_marks) {
		p->steps = p->step_marks;
		p->steps_from = "marker";
		return;
	}
	p->steps = 1;
	p->steps_from = "none";
	size_t n = 0;
	for (size_t i = 0; i < p->n; i++) {
		uint64_t t;
		n += fx_opens_at(&p->ev[i], &t);
	}
	uint64_t *seq = n ? malloc(n * sizeof(*seq)) : NULL;
	if (!seq)
		return;
	n = 0;
	for (size_t i = 0; i < p->n; i++) {
		uint64_t t;
		if (fx_opens_at(&p->ev[i], &t))
			seq[n++] = (uint64_t)p->ev[i].what << 32 | p->ev[i].stack_id;
	}
	size_t repeats = 1;
	size_t period = sync_period(seq, n, &repeats);
	free(seq);
	if (period) {
		p->steps = repeats;
		p->steps_from = "sync_period";
	}
}
