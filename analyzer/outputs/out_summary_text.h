/* How the summary (out_summary.c) shortens what it shows: frames that
 * only say a program started, stacks trimmed to the innermost user frames,
 * texts clipped at a word.  Not for layout. */
#ifndef FLIGHTREC_OUT_SUMMARY_TEXT_H
#define FLIGHTREC_OUT_SUMMARY_TEXT_H

#include <stddef.h>

/* _start, __libc_start_main, start_thread, clone ... */
int summary_startup_frame(const char *name);
/* Appends s to buf (at *at, capacity len), at most max bytes of it, with
 * "..." when cut; control characters become '?'. */
void summary_put_clipped(char *buf, size_t len, size_t *at, const char *s, size_t max);
/* frames root first -> "...;a;b;leaf": start-up frames dropped, the
 * innermost keep user frames (a kernel part as its innermost frame and
 * "..."), each cut at 64 bytes; into buf. */
const char *summary_trim_stack(const char *const *frames, size_t n, size_t keep, char *buf,
			       size_t len);
/* s cut at max bytes, at a space when one is near, with "..."; into buf. */
const char *summary_clip_text(const char *s, size_t max, char *buf, size_t len);

#endif
