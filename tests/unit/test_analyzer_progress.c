/* Progress of a long analysis (decode/ts_progress.c): with
 * FLIGHTREC_PROGRESS=1, `info` over three traces writes one line per pass
 * to standard error, the counts exact and the closing line last, and the
 * command's output is byte for byte what it is without; with
 * FLIGHTREC_PROGRESS=0, or unset when stderr is not a terminal (a file,
 * here), nothing. */
#include "check.h"
#include "test_analyzer_common.h"
#include "test_analyzer_run.h"

#include "commands.h"

#include <fcntl.h>
#include <unistd.h>

/* cmd's run with the process's own stderr (where progress goes) in a file. */
static struct cmd_run run_stderr(char **argv, char **progress)
{
	char path[512];
	synth_path("progress.err", path, sizeof(path));
	fflush(stderr);
	int saved = dup(STDERR_FILENO), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	dup2(fd, STDERR_FILENO);
	close(fd);
	struct cmd_run r = cmd_run_argv(cmd_summary, argv);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	FILE *f = fopen(path, "r");
	*progress = calloc(1, 1 << 16);
	size_t n = f ? fread(*progress, 1, (1 << 16) - 1, f) : 0;
	(*progress)[n] = 0;
	if (f)
		fclose(f);
	return r;
}

int main(void)
{
	char a[512], b[512], c[512];
	synth_path("progress-a.frec", a, sizeof(a));
	synth_path("progress-b.frec", b, sizeof(b));
	synth_path("progress-c.frec", c, sizeof(c));
	CHECK(std_trace_write(a, 1) == 0);
	CHECK(std_trace_write(b, 1) == 0);
	CHECK(std_trace_write(c, 1) == 0);
	char *argv[] = { "summary", a, b, c, NULL };

	char *quiet_err, *plain_err, *off_err;
	unsetenv("FLIGHTREC_PROGRESS");
	struct cmd_run quiet = run_stderr(argv, &quiet_err);
	setenv("FLIGHTREC_PROGRESS", "1", 1);
	struct cmd_run plain = run_stderr(argv, &plain_err);
	setenv("FLIGHTREC_PROGRESS", "0", 1);
	struct cmd_run off = run_stderr(argv, &off_err);
	unsetenv("FLIGHTREC_PROGRESS");

	CHECK_EQ_U64(quiet.rc, 0);
	CHECK_EQ_U64(plain.rc, 0);
	CHECK(quiet.out && plain.out && !strcmp(quiet.out, plain.out));
	CHECK(off.out && !strcmp(quiet.out, off.out));
	CHECK_EQ_U64(strlen(quiet_err), 0); /* stderr is a file, not a terminal */
	CHECK_EQ_U64(strlen(off_err), 0);
	CHECK(strstr(plain_err, "flightrec-analyze: metadata: 3 of 3 files (") != NULL);
	CHECK(strstr(plain_err, "flightrec-analyze: clocks aligned: 3 of 3 files (") != NULL);
	CHECK(strstr(plain_err, "flightrec-analyze: events: 3 of 3 files (") != NULL);
	CHECK(strstr(plain_err, " models (") != NULL);
	const char *last = strstr(plain_err, "flightrec-analyze: 3 files analysed in ");
	CHECK(last != NULL);
	CHECK(last && !strchr(last, '\n')[1]); /* the closing line is the last */
	if (!strstr(plain_err, "events: 3 of 3"))
		fprintf(stderr, "progress was:\n%s", plain_err);
	cmd_run_free(&quiet);
	cmd_run_free(&plain);
	cmd_run_free(&off);
	free(quiet_err);
	free(plain_err);
	free(off_err);
	return check_finish();
}
