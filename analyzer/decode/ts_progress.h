/* Progress of a long analysis on standard error: which pass, how many of
 * the files, the time so far.  On a terminal it appears once a run has
 * taken a second (a short run prints nothing) and is one line rewritten in
 * place, erased at the end; FLIGHTREC_PROGRESS=1 prints it as plain lines
 * whatever stderr is (a log, a test), every pass's end included, and
 * FLIGHTREC_PROGRESS=0 never.  Standard output is never touched.  Not for
 * the passes themselves (trace_run.c). */
#ifndef FLIGHTREC_TS_PROGRESS_H
#define FLIGHTREC_TS_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

struct ts_progress {
	int mode;          /* 0 off, 1 terminal, 2 plain lines */
	uint64_t start_ns, last_ns;
	int shown;         /* a terminal line is on screen */
};

void ts_progress_init(struct ts_progress *p);
/* done of total units ("files", "models") through pass what ("metadata",
 * "events" ...). */
void ts_progress_step(struct ts_progress *p, const char *what, size_t done, size_t total,
		      const char *units);
/* The analysis is over: the terminal line erased (plain: one closing line). */
void ts_progress_end(struct ts_progress *p, size_t files);

#endif
