/* The subcommands end to end through the library (cmd_* with captured
 * stdout/stderr): the output shapes CLI.md promises, exit statuses, and one
 * clear line for each failure. */
#include "check.h"
#include "frec_schema.h"
#include "test_analyzer_common.h"

#include "commands.h"

#include <unistd.h>

struct run {
	int rc;
	char *out;
	char *err;
};

static struct run run(int (*cmd)(int, char **, FILE *, FILE *), char **argv)
{
	struct run r = { 0 };
	size_t out_len = 0, err_len = 0;
	int argc = 0;
	while (argv[argc])
		argc++;
	FILE *o = open_memstream(&r.out, &out_len), *e = open_memstream(&r.err, &err_len);
	r.rc = cmd(argc, argv, o, e);
	fclose(o);
	fclose(e);
	return r;
}

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

static int one_line(const char *s)
{
	size_t len = strlen(s);
	return len > 0 && s[len - 1] == '\n' && !memchr(s, '\n', len - 1);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return strdup("");
	char *buf = calloc(1, 1 << 20);
	size_t n = fread(buf, 1, (1 << 20) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

int main(void)
{
	char path[512], inc[512], out_folded[512], out_svg[512], out_html[512];
	synth_path("analyzer_cli.frec", path, sizeof(path));
	synth_path("analyzer_cli_incomplete.frec", inc, sizeof(inc));
	synth_path("analyzer_cli.folded", out_folded, sizeof(out_folded));
	synth_path("analyzer_cli.svg", out_svg, sizeof(out_svg));
	synth_path("analyzer_cli.html", out_html, sizeof(out_html));
	CHECK_EQ_U64(std_trace_write(path, 1), 0);
	CHECK_EQ_U64(std_trace_write(inc, 0), 0);
	char want[160];

	/* flame: folded to stdout by default, --kind cpu implied */
	struct run r = run(cmd_flame, (char *[]){ "flame", path, NULL });
	char *sorted = sorted_lines(r.out);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_STR(sorted, STD_FOLDED_ALL);
	free(sorted);
	run_free(&r);

	r = run(cmd_flame, (char *[]){ "flame", path, "--kind", "cpu", "--pid", "100", NULL });
	sorted = sorted_lines(r.out);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_STR(sorted, STD_FOLDED_PID100);
	CHECK_STR(r.err, "");
	free(sorted);
	run_free(&r);

	r = run(cmd_flame, (char *[]){ "flame", "--pid=100", "--format=folded", "-o", out_folded, path, NULL });
	CHECK_EQ_U64(r.rc, 0);
	CHECK_STR(r.out, "");
	char *file = slurp(out_folded);
	sorted = sorted_lines(file);
	CHECK_STR(sorted, STD_FOLDED_PID100);
	free(sorted);
	free(file);
	run_free(&r);

	r = run(cmd_flame, (char *[]){ "flame", path, "--format", "svg", "-o", out_svg, NULL });
	CHECK_EQ_U64(r.rc, 0);
	file = slurp(out_svg);
	CHECK(strstr(file, "<svg") != NULL);
	CHECK(strstr(file, "work_a") != NULL);
	free(file);
	run_free(&r);

	r = run(cmd_flame, (char *[]){ "flame", path, "--format", "html", "-o", out_html, NULL });
	CHECK_EQ_U64(r.rc, 0);
	file = slurp(out_html);
	CHECK(strstr(file, "<html") != NULL || strstr(file, "<!DOCTYPE") != NULL || strstr(file, "<!doctype") != NULL);
	free(file);
	run_free(&r);

	/* incomplete trace: analyzed, one warning line */
	r = run(cmd_flame, (char *[]){ "flame", inc, "--pid", "100", NULL });
	sorted = sorted_lines(r.out);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_STR(sorted, STD_FOLDED_PID100);
	CHECK(one_line(r.err));
	CHECK(strstr(r.err, "warning: ") && strstr(r.err, "no end record"));
	free(sorted);
	run_free(&r);

	/* failures: one line on stderr, non-zero */
	r = run(cmd_flame, (char *[]){ "flame", path, "--kind", "mem-inuse", NULL });
	CHECK(r.rc != 0);
	CHECK(one_line(r.err));
	CHECK(strstr(r.err, "no CUDA allocation events") != NULL);
	CHECK_STR(r.out, "");
	run_free(&r);
	r = run(cmd_flame, (char *[]){ "flame", path, "--kind", "mem-alloc", NULL });
	CHECK(r.rc != 0 && strstr(r.err, "no CUDA allocation events"));
	run_free(&r);
	r = run(cmd_flame, (char *[]){ "flame", path, "--kind", "gpu", NULL });
	CHECK_EQ_U64(r.rc, 1);
	CHECK(one_line(r.err));
	CHECK(strstr(r.err, "no GPU kernel records in this trace") != NULL);
	CHECK_STR(r.out, "");
	run_free(&r);
	r = run(cmd_flame, (char *[]){ "flame", path, "--kind", "kernels", NULL });
	CHECK_EQ_U64(r.rc, 2);
	CHECK(one_line(r.err));
	run_free(&r);
	r = run(cmd_flame, (char *[]){ "flame", path, "--pid", "abc", NULL });
	CHECK_EQ_U64(r.rc, 2);
	CHECK(one_line(r.err));
	run_free(&r);
	r = run(cmd_flame, (char *[]){ "flame", path, "--pid", NULL });
	CHECK_EQ_U64(r.rc, 2);
	CHECK(one_line(r.err));
	run_free(&r);
	r = run(cmd_flame, (char *[]){ "flame", NULL });
	CHECK_EQ_U64(r.rc, 2);
	CHECK(one_line(r.err));
	run_free(&r);
	r = run(cmd_flame, (char *[]){ "flame", "/nonexistent/run.frec", NULL });
	CHECK(r.rc != 0);
	CHECK(one_line(r.err));
	CHECK(strstr(r.err, "/nonexistent/run.frec") != NULL);
	run_free(&r);
	r = run(cmd_flame, (char *[]){ "flame", path, "--pid", "4242", NULL });
	CHECK(r.rc != 0);
	CHECK(one_line(r.err));
	CHECK(strstr(r.err, "no CPU samples of pid 4242") != NULL);
	run_free(&r);

	/* info */
	r = run(cmd_info, (char *[]){ "info", path, NULL });
	CHECK_EQ_U64(r.rc, 0);
	CHECK_STR(r.err, "");
	CHECK(strstr(r.out, "host:          node-a") != NULL);
	CHECK(strstr(r.out, "command:       python train.py --epochs 1") != NULL);
	CHECK(strstr(r.out, "start:         2024-05-01T12:00:00.123Z") != NULL);
	CHECK(strstr(r.out, "status:        intact") != NULL);
	CHECK(strstr(r.out, "100      1        2       trainer") != NULL);
	CHECK(strstr(r.out, "cpu_sample                        422") != NULL);
	CHECK(strstr(r.out, "probes (from end record)") != NULL);
	CHECK(strstr(r.out, "    read ") != NULL);
	run_free(&r);

	r = run(cmd_info, (char *[]){ "info", inc, NULL });
	CHECK_EQ_U64(r.rc, 0);
	CHECK(strstr(r.out, "probes (from last stats record; recording incomplete)") != NULL);
	CHECK(strstr(r.out, "incomplete: no end record (recorder killed?)") != NULL);
	CHECK(one_line(r.err));
	run_free(&r);

	r = run(cmd_info, (char *[]){ "info", "--json", path, inc, NULL });
	CHECK_EQ_U64(r.rc, 0);
	CHECK(strncmp(r.out, "{\"files\":[{\"path\":", 18) == 0);
	CHECK(strstr(r.out, "\"complete\":false") != NULL);
	CHECK(strstr(r.out, "\"name\":\"cpu_sample\",\"known\":true,\"count\":422") != NULL);
	run_free(&r);

	/* check */
	/* the synthetic trace's 441 records plus one schema record per type */
	size_t n_schema;
	fr_schema_table(&n_schema);
	r = run(cmd_check, (char *[]){ "check", path, NULL });
	CHECK_EQ_U64(r.rc, 0);
	snprintf(want, sizeof(want), ": intact: 5 chunks, %zu records, ", 441 + n_schema);
	CHECK(strstr(r.out, want) != NULL);
	run_free(&r);
	r = run(cmd_check, (char *[]){ "check", path, inc, NULL });
	CHECK_EQ_U64(r.rc, 1);
	snprintf(want, sizeof(want), "analyzer_cli_incomplete.frec: incomplete: no end record; "
		 "recovered 3 chunks (%zu records)", 441 + n_schema);
	CHECK(strstr(r.out, want) != NULL);
	run_free(&r);

	/* FILE... -o OUT commands share one parser: its messages name the command */
	struct {
		int (*cmd)(int, char **, FILE *, FILE *);
		const char *name;
	} fo_cmds[] = { { cmd_report, "report" }, { cmd_timeline, "timeline" }, { cmd_sqlite, "sqlite" } };
	for (int i = 0; i < 3; i++) {
		char *name = (char *)fo_cmds[i].name;
		r = run(fo_cmds[i].cmd, (char *[]){ name, path, NULL });
		CHECK_EQ_U64(r.rc, 2);
		CHECK(one_line(r.err));
		snprintf(want, sizeof(want), "flightrec-analyze %s: no output given (usage: ", name);
		CHECK(strstr(r.err, want) != NULL);
		run_free(&r);
		r = run(fo_cmds[i].cmd, (char *[]){ name, "-o", out_html, NULL });
		CHECK_EQ_U64(r.rc, 2);
		CHECK(strstr(r.err, "no trace file given") != NULL);
		run_free(&r);
		r = run(fo_cmds[i].cmd, (char *[]){ name, path, "-o", NULL });
		CHECK_EQ_U64(r.rc, 2);
		CHECK(one_line(r.err) && strstr(r.err, "option -o needs a value"));
		run_free(&r);
		if (i < 2) {
			r = run(fo_cmds[i].cmd, (char *[]){ name, "--force", path, "-o", out_html, NULL });
			CHECK_EQ_U64(r.rc, 2);
			CHECK(one_line(r.err) && strstr(r.err, "unknown option '--force'"));
			run_free(&r);
		}
		r = run(fo_cmds[i].cmd, (char *[]){ name, "--help", NULL });
		CHECK(r.rc == 0 && strstr(r.out, "usage: ") && !strcmp(r.err, ""));
		run_free(&r);
	}

	/* sqlite alone takes --force, and wants it to replace a file */
	char out_db[512];
	synth_path("analyzer_cli.db", out_db, sizeof(out_db));
	unlink(out_db);
	r = run(cmd_sqlite, (char *[]){ "sqlite", path, "-o", out_db, NULL });
	CHECK_EQ_U64(r.rc, 0);
	run_free(&r);
	r = run(cmd_sqlite, (char *[]){ "sqlite", path, "-o", out_db, NULL });
	CHECK_EQ_U64(r.rc, 1);
	CHECK(one_line(r.err) && strstr(r.err, "exists; pass --force"));
	run_free(&r);
	r = run(cmd_sqlite, (char *[]){ "sqlite", "--force", path, "-o", out_db, NULL });
	CHECK_EQ_U64(r.rc, 0);
	run_free(&r);

	/* numeric and pid options: the value and its range in one line */
	r = run(cmd_cuda, (char *[]){ "cuda", path, "--top", "1001", NULL });
	CHECK_EQ_U64(r.rc, 2);
	CHECK_STR(r.err, "flightrec-analyze cuda: --top '1001' is not a number from 0 to 1000\n");
	run_free(&r);
	r = run(cmd_cuda, (char *[]){ "cuda", path, "--top=-1", NULL });
	CHECK_EQ_U64(r.rc, 2);
	run_free(&r);
	r = run(cmd_dump, (char *[]){ "dump", path, "--pid", "0", NULL });
	CHECK_EQ_U64(r.rc, 2);
	CHECK(strstr(r.err, "flightrec-analyze dump: --pid '0' is not a process id") != NULL);
	run_free(&r);

	/* help teaches, with examples */
	int (*cmds[])(int, char **, FILE *, FILE *) = { cmd_info, cmd_check, cmd_flame };
	const char *names[] = { "info", "check", "flame" };
	for (int i = 0; i < 3; i++) {
		r = run(cmds[i], (char *[]){ (char *)names[i], "--help", NULL });
		CHECK_EQ_U64(r.rc, 0);
		CHECK(strstr(r.out, "examples:") != NULL);
		run_free(&r);
		r = run(cmds[i], (char *[]){ (char *)names[i], "--bogus", path, NULL });
		CHECK_EQ_U64(r.rc, 2);
		CHECK(one_line(r.err));
		run_free(&r);
	}
	/* JSON strings carry UTF-8 as characters, not as one escape per byte */
	char utf8[512];
	synth_path("analyzer_cli_utf8.frec", utf8, sizeof(utf8));
	struct synth su;
	CHECK(synth_open(&su, utf8) == 0);
	synth_process(&su, 300, 1, "entra\xc3\xaenement", "python entra\xc3\xaener.py --\xcf\x80");
	CHECK(synth_close(&su, 0, 0) == 0);
	r = run(cmd_info, (char *[]){ "info", "--json", utf8, NULL });
	CHECK_EQ_U64(r.rc, 0);
	CHECK(strstr(r.out, "entra\\u00eener.py --\\u03c0") != NULL);
	CHECK(strstr(r.out, "\\u00c3") == NULL);
	run_free(&r);
	return check_finish();
}
