/* Minimal test assertions: a failed CHECK prints file:line and the
 * expression and marks the test failed; the test keeps going so one run shows
 * every failure.  main() returns check_finish(). */
#ifndef FLIGHTREC_CHECK_H
#define FLIGHTREC_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures, check_passes;

#define CHECK(cond) do { \
	if (cond) check_passes++; \
	else { check_failures++; fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } \
} while (0)

#define CHECK_EQ_U64(a, b) do { \
	uint64_t _a = (uint64_t)(a), _b = (uint64_t)(b); \
	if (_a == _b) check_passes++; \
	else { check_failures++; fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%" PRIu64 " != %" PRIu64 ")\n", \
		__FILE__, __LINE__, #a, #b, _a, _b); } \
} while (0)

#define CHECK_STR(a, b) do { \
	const char *_a = (a), *_b = (b); \
	if (_a && _b && strcmp(_a, _b) == 0) check_passes++; \
	else { check_failures++; fprintf(stderr, "%s:%d: CHECK failed: %s == %s (\"%s\" != \"%s\")\n", \
		__FILE__, __LINE__, #a, #b, _a ? _a : "(null)", _b ? _b : "(null)"); } \
} while (0)

/* A test that ran no check has shown nothing, whatever the reason (an early
 * return, a loop over nothing): that fails too. */
static inline int check_finish(void)
{
	printf("%d checks passed, %d failed\n", check_passes, check_failures);
	if (!check_passes && !check_failures)
		fprintf(stderr, "FAIL: no check ran\n");
	return (check_failures || !check_passes) ? 1 : 0;
}

#endif
