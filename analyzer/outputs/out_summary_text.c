/* The summary's text helpers (out_summary_text.h): stacks trimmed to
 * their informative frames, texts clipped to a budget. */
#include "out_summary_text.h"

#include <string.h>

#define FRAME_CHARS 64

/* Frames that say only that a program or thread started. */
int summary_startup_frame(const char *name)
{
	static const char *const startup[] = {
		"_start", "__libc_start_main", "__libc_start_main_impl", "__libc_start_call_main",
		"_dl_start_user", "start_thread", "clone", "clone3", "__clone", "__clone3",
		"__GI___clone3", "__GI___clone",
	};
	for (size_t i = 0; i < sizeof(startup) / sizeof(startup[0]); i++)
		if (!strcmp(name, startup[i]))
			return 1;
	return 0;
}

/* Appends s to buf (at *at, capacity len), at most max bytes of it, with
 * "..." when cut; control characters become '?'. */
void summary_put_clipped(char *buf, size_t len, size_t *at, const char *s, size_t max)
{
	size_t n = strlen(s), cut = n > max;
	if (cut)
		n = max > 3 ? max - 3 : 0;
	for (size_t i = 0; i < n && *at + 1 < len; i++)
		buf[(*at)++] = (unsigned char)s[i] < 0x20 ? '?' : s[i];
	for (size_t i = 0; cut && i < 3 && *at + 1 < len; i++)
		buf[(*at)++] = '.';
	buf[*at] = '\0';
}

static int kernel_frame(const char *f)
{
	size_t n = f ? strlen(f) : 0;
	return n > 4 && !strcmp(f + n - 4, "_[k]");
}

/* frames root first -> "...;a;b;leaf": start-up frames dropped, the
 * innermost keep user frames (a kernel part counts as its innermost frame
 * alone, the rest of it shown as "..."), each cut at FRAME_CHARS: the
 * code that asked the kernel matters more than the kernel's own path. */
const char *summary_trim_stack(const char *const *frames, size_t n, size_t keep, char *buf,
			      size_t len)
{
	enum { SKIP = 0, SHOW = 1, GAP = 2 };
	unsigned char show[512];
	size_t m = n < sizeof(show) ? n : sizeof(show);
	const char *const *fr = frames + (n - m);
	memset(show, SKIP, m);
	size_t kept = 0, i = m;
	while (i > 0 && kernel_frame(fr[i - 1]))
		i--;
	if (i < m) { /* a kernel part: its innermost frame, and a gap for the rest */
		show[m - 1] = SHOW;
		if (m - 1 > i)
			show[m - 2] = GAP;
	}
	for (; i-- > 0 && kept < keep;) {
		if (fr[i] && summary_startup_frame(fr[i]))
			continue;
		show[i] = SHOW;
		kept++;
	}
	size_t at = 0;
	buf[0] = '\0';
	int cut = n > m;
	for (size_t k = 0; k < m && !cut; k++)
		cut = show[k] == SKIP && !(fr[k] && summary_startup_frame(fr[k]));
	if (cut && !(m && show[0] != SKIP))
		summary_put_clipped(buf, len, &at, "...", 3);
	for (size_t k = 0; k < m; k++) {
		if (show[k] == SKIP)
			continue;
		if (at)
			summary_put_clipped(buf, len, &at, ";", 1);
		if (show[k] == GAP)
			summary_put_clipped(buf, len, &at, "...", 3);
		else
			summary_put_clipped(buf, len, &at, fr[k] ? fr[k] : "[unknown]", FRAME_CHARS);
	}
	if (!at)
		summary_put_clipped(buf, len, &at, "[no frames]", 16);
	return buf;
}

/* s cut at max bytes, at a space when one is near, with "..." */
const char *summary_clip_text(const char *s, size_t max, char *buf, size_t len)
{
	size_t at = 0;
	if (strlen(s) <= max) {
		summary_put_clipped(buf, len, &at, s, max);
		return buf;
	}
	size_t n = max > 3 ? max - 3 : 0;
	while (n > max / 2 && s[n] != ' ')
		n--;
	if (s[n] != ' ')
		n = max > 3 ? max - 3 : 0;
	summary_put_clipped(buf, len, &at, s, n + 3); /* n bytes, then "..." */
	return buf;
}

