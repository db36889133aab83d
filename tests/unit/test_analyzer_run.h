/* An analyzer command run in-process with its output and diagnostics
 * captured, for the analyzer's tests.  Not a test itself. */
#ifndef FLIGHTREC_TEST_ANALYZER_RUN_H
#define FLIGHTREC_TEST_ANALYZER_RUN_H

#include <stdio.h>
#include <stdlib.h>

struct cmd_run {
	int rc;
	char *out, *err;
};

typedef int (*cmd_fn)(int argc, char **argv, FILE *out, FILE *errout);

/* cmd with argv (NULL-terminated), output and diagnostics captured. */
static inline struct cmd_run cmd_run_argv(cmd_fn cmd, char **argv)
{
	struct cmd_run r = { 0 };
	size_t ol, el;
	int argc = 0;
	while (argv[argc])
		argc++;
	FILE *o = open_memstream(&r.out, &ol), *e = open_memstream(&r.err, &el);
	r.rc = cmd(argc, argv, o, e);
	fclose(o);
	fclose(e);
	return r;
}

#define CMD_RUN(cmd, ...) cmd_run_argv(cmd, (char *[]){ __VA_ARGS__, NULL })

static inline void cmd_run_free(struct cmd_run *r)
{
	free(r->out);
	free(r->err);
}

#endif
