/* Progress lines of a long analysis (ts_progress.h). */
#include "ts_progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Terminal updates at most this often, and only after the first second. */
#define PROGRESS_AFTER_NS 1000000000ull
#define PROGRESS_EVERY_NS 200000000ull

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void ts_progress_init(struct ts_progress *p)
{
	memset(p, 0, sizeof(*p));
	const char *env = getenv("FLIGHTREC_PROGRESS");
	if (env && !strcmp(env, "0"))
		return;
	p->mode = env && !strcmp(env, "1") ? 2 : isatty(STDERR_FILENO) ? 1 : 0;
	p->start_ns = p->last_ns = now_ns();
}

void ts_progress_step(struct ts_progress *p, const char *what, size_t done, size_t total,
		      const char *units)
{
	if (!p->mode || !total)
		return;
	uint64_t now = now_ns();
	double s = (double)(now - p->start_ns) / 1e9;
	if (p->mode == 2) {
		/* plain lines: a pass's end, and at most one a second within it */
		if (done < total && now - p->last_ns < PROGRESS_AFTER_NS)
			return;
		p->last_ns = now;
		fprintf(stderr, "flightrec-analyze: %s: %zu of %zu %s (%.1f s)\n", what, done, total,
			units, s);
		return;
	}
	if (now - p->start_ns < PROGRESS_AFTER_NS ||
	    (now - p->last_ns < PROGRESS_EVERY_NS && done < total))
		return;
	p->last_ns = now;
	fprintf(stderr, "\rflightrec-analyze: %s: %zu of %zu %s (%3.0f%%), %.1f s\033[K", what,
		done, total, units, 100.0 * (double)done / (double)total, s);
	fflush(stderr);
	p->shown = 1;
}

void ts_progress_end(struct ts_progress *p, size_t files)
{
	if (p->mode == 2)
		fprintf(stderr, "flightrec-analyze: %zu files analysed in %.1f s\n", files,
			(double)(now_ns() - p->start_ns) / 1e9);
	else if (p->shown)
		fputs("\r\033[K", stderr);
	p->shown = 0;
}
