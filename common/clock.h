/* Nanoseconds on a clock, as the trace stamps them: CLOCK_MONOTONIC for
 * events, deadlines and intervals (mono_ns), any other clock where the
 * trace pairs it with the monotonic one (clock_ns: the file header's
 * realtime anchors).  Inline: these are on paths that run per event. */
#ifndef FLIGHTREC_CLOCK_H
#define FLIGHTREC_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

#endif
