/* libFuzzer target: the recorder's readers of /proc text about a traced
 * process (recorder/inspect/proc_text.c): the launcher variables kept from
 * /proc/PID/environ (RANK, WORLD_SIZE ...), and /proc/PID/stat's comm,
 * ppid and start time and /proc/PID/status's NSpid.  The process chooses
 * its environment and its comm; each input is given to all three, sized
 * exactly (ASan reports any read past it; the recorder's buffers are not
 * NUL-terminated either).  The checks catch a kept variable that is not one
 * of the launcher's, is cut without its NUL, or overruns the record. */
#include "inspect/proc_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_recorder_proc: %s\n", what);
	abort();
}

static void check_env(const char *in, size_t size, size_t cap)
{
	char *out = malloc(cap ? cap : 1);
	if (!out)
		return;
	size_t n = proc_env_keep(in, size, out, cap);
	if (n > cap)
		fail("kept variables overran the record");
	for (size_t at = 0; at < n;) {
		const char *nul = memchr(out + at, 0, n - at);
		if (!nul)
			fail("a kept variable has no NUL");
		size_t len = (size_t)(nul - (out + at));
		const char *eq = memchr(out + at, '=', len);
		if (!eq || len > PROC_ENV_VALUE_MAX)
			fail("a kept variable is not KEY=value or is too long");
		/* each kept one is a copy of the start of one input string */
		if (!memmem(in, size, out + at, len))
			fail("a kept variable is not in the environment");
		at += len + 1;
	}
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = malloc(size ? size : 1);
	if (!in)
		return 0;
	memcpy(in, data, size);
	check_env(in, size, 4096);           /* the record's buffer */
	check_env(in, size, size % 97);      /* small ones: the cut at the end */

	struct proc_stat_fields sf;
	if (proc_stat_parse(in, size, &sf) == 0 && strnlen(sf.comm, sizeof(sf.comm)) >= sizeof(sf.comm))
		fail("comm is not NUL-terminated");
	(void)proc_status_nspid(in, size);
	free(in);
	return 0;
}
