/* Archives from strangers: path traversal, absolute names, symbolic and
 * hard links, devices and fifos, control characters and repeated names
 * (each skipped with exactly one warning while the rest is analyzed); more
 * members than the cap, a member over the size cap
 * (FLIGHTREC_ARCHIVE_MAX_MEMBER_MB=1 and 3 MiB of zeros), a truncated
 * stream, a full temporary file system (RLIMIT_FSIZE), a process killed in
 * the middle of a copy, other formats, an archive without a trace, a
 * member that is not a trace (each exactly one error line naming the
 * archive and the member).  Every case runs with a fresh, empty TMPDIR and
 * working directory and checks that both are still empty afterwards and
 * that nothing appeared where a member's name points.  No timing. */
#include "check.h"
#include "test_analyzer_archive_util.h"

#include "commands.h"
#include "ts_archive.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

static char adir[512], tmpd[512], cwdd[512], top[512];
static uint8_t *trace;
static size_t trace_len;

/* info on arch: status, error lines, what they name; the scratch
 * directories still empty. */
static void expect_info(const char *label, const char *arch, int rc, size_t lines,
			const char *member, const char *has)
{
	int before = check_failures;
	struct cmd_run r = CMD_RUN(cmd_info, "info", (char *)arch);
	CHECK_EQ_U64(r.rc, rc);
	CHECK_EQ_U64(aj_lines(r.err), lines);
	if (lines)
		CHECK(strstr(r.err, arch) != NULL);
	if (member)
		CHECK(strstr(r.err, member) != NULL);
	if (has)
		CHECK(strstr(r.err, has) != NULL);
	if (rc == 0)
		CHECK(strstr(r.out, "ok.frec\n") != NULL);
	CHECK_EQ_U64(aj_dir_entries(tmpd), 0);
	CHECK_EQ_U64(aj_dir_entries(cwdd), 0);
	if (check_failures != before)
		fprintf(stderr, "  case %s: rc %d, stderr:\n%s", label, r.rc, r.err);
	cmd_run_free(&r);
}

static void arch_path(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%.400s/%.60s", adir, name);
}

/* A tar.zst of the valid trace as ok.frec after one hostile member. */
static void with_ok(const char *label, struct aj_member bad, const char *member, const char *has)
{
	char arch[512];
	arch_path(label, arch, sizeof(arch));
	struct aj_member m[2] = { bad, { .name = "ok.frec", .data = trace, .size = trace_len } };
	CHECK(aj_write_tar(arch, AJ_ZSTD, m, 2) == 0);
	expect_info(label, arch, 0, 1, member, has);
}

static void test_skipped(void)
{
	with_ok("traversal.tar.zst", (struct aj_member){ .name = "../evil.frec", .data = trace,
			.size = trace_len }, "../evil.frec: skipped", "climbs out");
	with_ok("deep.tar.zst", (struct aj_member){ .name = "a/../../../../evil.frec", .data = trace,
			.size = trace_len }, "a/../../../../evil.frec: skipped", "climbs out");
	with_ok("absolute.tar.zst", (struct aj_member){ .name = "/tmp/flightrec-abs-test.frec",
			.data = trace, .size = trace_len }, "/tmp/flightrec-abs-test.frec: skipped",
		"absolute name");
	with_ok("symlink.tar.zst", (struct aj_member){ .name = "link.frec", .type = AE_IFLNK,
			.link = "/etc/passwd" }, "link.frec: skipped", "symbolic link");
	with_ok("hardlink.tar.zst", (struct aj_member){ .name = "hard.frec", .hard = 1,
			.link = "ok.frec" }, "hard.frec: skipped", "hard link");
	with_ok("device.tar.zst", (struct aj_member){ .name = "dev.frec", .type = AE_IFCHR },
		"dev.frec: skipped", "device file");
	with_ok("fifo.tar.zst", (struct aj_member){ .name = "fifo.frec", .type = AE_IFIFO },
		"fifo.frec: skipped", "a fifo");
	with_ok("control.tar.zst", (struct aj_member){ .name = "bad\nname.frec", .data = trace,
			.size = trace_len }, "bad?name.frec: skipped", "control characters");
	with_ok("other.tar.zst", (struct aj_member){ .name = "notes.txt", .size = 10 },
		"notes.txt: skipped", "only members named *.frec");
	/* the same name twice: the second one is skipped */
	char arch[512];
	arch_path("twice.tar.zst", arch, sizeof(arch));
	struct aj_member twice[2] = { { .name = "ok.frec", .data = trace, .size = trace_len },
				      { .name = "./ok.frec", .data = trace, .size = trace_len } };
	CHECK(aj_write_tar(arch, AJ_ZSTD, twice, 2) == 0);
	expect_info("twice", arch, 0, 1, "ok.frec: skipped", "second member");

	/* nothing was written where the names point */
	char p[600];
	snprintf(p, sizeof(p), "%s/evil.frec", top);
	CHECK(access(p, F_OK) != 0);
	CHECK(access("/tmp/flightrec-abs-test.frec", F_OK) != 0);

	/* gzip and plain tars are read too, a directory entry is no warning */
	struct aj_member plain[2] = { { .name = "run", .type = AE_IFDIR },
				      { .name = "run/ok.frec", .data = trace, .size = trace_len } };
	arch_path("plain.tar", arch, sizeof(arch));
	CHECK(aj_write_tar(arch, AJ_NONE, plain, 2) == 0);
	struct cmd_run r = CMD_RUN(cmd_info, "info", arch);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_STR(r.err, "");
	CHECK(strstr(r.out, "plain.tar:run/ok.frec\n") != NULL);
	cmd_run_free(&r);
	arch_path("ok.tar.gz", arch, sizeof(arch));
	CHECK(aj_write_tar(arch, AJ_GZIP, plain + 1, 1) == 0);
	expect_info("gzip", arch, 0, 0, NULL, NULL);
}

static void test_member_count(void)
{
	static char names[TS_ARCHIVE_MAX_MEMBERS + 1][16];
	static struct aj_member m[TS_ARCHIVE_MAX_MEMBERS + 1];
	for (size_t i = 0; i <= TS_ARCHIVE_MAX_MEMBERS; i++) {
		snprintf(names[i], sizeof(names[i]), "m%04zu.txt", i);
		m[i] = (struct aj_member){ .name = names[i] };
	}
	/* exactly the cap: read, ten warnings and one line for the rest */
	char arch[512];
	m[0] = (struct aj_member){ .name = "ok.frec", .data = trace, .size = trace_len };
	arch_path("cap.tar.zst", arch, sizeof(arch));
	CHECK(aj_write_tar(arch, AJ_ZSTD, m, TS_ARCHIVE_MAX_MEMBERS) == 0);
	expect_info("at the member cap", arch, 0, TS_ARCHIVE_MAX_WARNINGS + 1, "m0001.txt",
		    "4085 more members skipped");
	/* one more: refused */
	arch_path("many.tar.zst", arch, sizeof(arch));
	CHECK(aj_write_tar(arch, AJ_ZSTD, m, TS_ARCHIVE_MAX_MEMBERS + 1) == 0);
	expect_info("over the member cap", arch, 1, 1, NULL, "more than 4096 members");
}

static void test_sizes(void)
{
	char arch[512], want[700];
	struct aj_member zeros = { .name = "zeros.frec", .size = 3u << 20 };
	arch_path("zeros.tar.zst", arch, sizeof(arch));
	CHECK(aj_write_tar(arch, AJ_ZSTD, &zeros, 1) == 0);
	setenv("FLIGHTREC_ARCHIVE_MAX_MEMBER_MB", "1", 1);
	expect_info("member cap", arch, 1, 1, "zeros.frec", NULL);
	struct cmd_run r = CMD_RUN(cmd_info, "info", arch);
	snprintf(want, sizeof(want), "flightrec-analyze: %s: zeros.frec: decompresses to more than 1 "
		 "MiB (FLIGHTREC_ARCHIVE_MAX_MEMBER_MB raises the cap)\n", arch);
	CHECK_STR(r.err, want);
	cmd_run_free(&r);
	setenv("FLIGHTREC_ARCHIVE_MAX_MEMBER_MB", "12abc", 1);
	expect_info("bad cap", arch, 1, 1, NULL, "FLIGHTREC_ARCHIVE_MAX_MEMBER_MB='12abc'");
	/* a plain trace is never refused for the variable's sake */
	r = CMD_RUN(cmd_info, "info", (char *)"/dev/null/none.frec");
	CHECK(strstr(r.err, "FLIGHTREC_ARCHIVE") == NULL);
	cmd_run_free(&r);
	setenv("FLIGHTREC_ARCHIVE_MAX_MEMBER_MB", "100", 1);
	/* raised: read, and found not to be a trace */
	expect_info("raised cap", arch, 1, 1, "zeros.frec", "not a flightrec trace");

	/* the temporary file system full: RLIMIT_FSIZE in a child */
	pid_t pid = fork();
	if (pid == 0) {
		signal(SIGXFSZ, SIG_IGN);
		struct rlimit lim = { 1u << 20, 1u << 20 };
		setrlimit(RLIMIT_FSIZE, &lim);
		r = CMD_RUN(cmd_info, "info", arch);
		int ok = r.rc == 1 && aj_lines(r.err) == 1 &&
			 strstr(r.err, "zeros.frec: cannot copy into a temporary file") &&
			 strstr(r.err, "File too large");
		if (!ok)
			fprintf(stderr, "disk full: rc %d: %s", r.rc, r.err);
		_exit(ok ? 0 : 1);
	}
	int status = -1;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	/* killed in the middle of a copy (SIGXFSZ's default action, no core):
	 * nothing is left behind */
	pid = fork();
	if (pid == 0) {
		struct rlimit lim = { 1u << 20, 1u << 20 }, no_core = { 0, 0 };
		setrlimit(RLIMIT_CORE, &no_core);
		setrlimit(RLIMIT_FSIZE, &lim);
		r = CMD_RUN(cmd_info, "info", arch);
		_exit(3);
	}
	waitpid(pid, &status, 0);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGXFSZ);
	CHECK_EQ_U64(aj_dir_entries(tmpd), 0);
	CHECK_EQ_U64(aj_dir_entries(cwdd), 0);
	unsetenv("FLIGHTREC_ARCHIVE_MAX_MEMBER_MB");
}

/* A pseudo-random member (incompressible), the archive cut at share. */
static void truncated(const char *label, enum aj_filter filter, double share)
{
	size_t n = 512 * 1024;
	uint8_t *noise = malloc(n);
	uint64_t x = 88172645463325252ull;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		noise[i] = (uint8_t)x;
	}
	char arch[512];
	arch_path(label, arch, sizeof(arch));
	struct aj_member m[2] = { { .name = "ok.frec", .data = trace, .size = trace_len },
				  { .name = "big.frec", .data = noise, .size = n } };
	CHECK(aj_write_tar(arch, filter, m, 2) == 0);
	size_t len;
	free(aj_read_file(arch, &len));
	CHECK(truncate(arch, (off_t)((double)len * share)) == 0);
	expect_info(label, arch, 1, 1, "big.frec", "truncated");
	free(noise);
}

static void test_broken(void)
{
	truncated("cut.tar.zst", AJ_ZSTD, 0.6);
	truncated("cut.tar", AJ_NONE, 0.6);
	truncated("cut.tar.gz", AJ_GZIP, 0.6);

	char arch[512];
	/* other formats */
	arch_path("bug.zip", arch, sizeof(arch));
	FILE *f = fopen(arch, "wb");
	fwrite("PK\3\4junkjunkjunk", 1, 16, f);
	fclose(f);
	expect_info("zip", arch, 1, 1, NULL, "a zip archive");
	/* zstd around something that is not a tar */
	arch_path("trace.frec.zst", arch, sizeof(arch));
	struct archive *a = archive_write_new();
	archive_write_add_filter_zstd(a);
	archive_write_set_format_raw(a);
	archive_write_set_bytes_in_last_block(a, 1);
	archive_write_open_filename(a, arch);
	struct archive_entry *e = archive_entry_new();
	archive_entry_set_filetype(e, AE_IFREG);
	archive_write_header(a, e);
	archive_write_data(a, trace, trace_len);
	archive_entry_free(e);
	archive_write_close(a);
	archive_write_free(a);
	expect_info("zstd, not a tar", arch, 1, 1, NULL, "not a tar archive");
	/* no trace */
	arch_path("empty.tar.zst", arch, sizeof(arch));
	struct aj_member manifest = { .name = "MANIFEST.json", .data = "{}\n", .size = 3 };
	CHECK(aj_write_tar(arch, AJ_ZSTD, &manifest, 1) == 0);
	expect_info("no trace", arch, 1, 1, NULL, "holds no trace");
	/* a member that is not a trace: info fails naming it, check says
	 * unusable */
	arch_path("junk.tar.zst", arch, sizeof(arch));
	struct aj_member junk[2] = { { .name = "ok.frec", .data = trace, .size = trace_len },
				     { .name = "junk.frec", .data = "not a trace at all", .size = 18 } };
	CHECK(aj_write_tar(arch, AJ_ZSTD, junk, 2) == 0);
	expect_info("junk member", arch, 1, 1, ":junk.frec: ", NULL);
	struct cmd_run r = CMD_RUN(cmd_check, "check", arch);
	CHECK_EQ_U64(r.rc, 2);
	char want[600];
	snprintf(want, sizeof(want), "%s:junk.frec: unusable: ", arch);
	CHECK(!strncmp(r.out, want, strlen(want)));
	cmd_run_free(&r);
	/* check on an archive with a skipped member: the warning, then the
	 * verdict of what it holds */
	arch_path("symlink.tar.zst", arch, sizeof(arch));
	r = CMD_RUN(cmd_check, "check", arch);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_EQ_U64(aj_lines(r.err), 1);
	CHECK(strstr(r.out, ":ok.frec: intact") != NULL);
	cmd_run_free(&r);
}

int main(void)
{
	char base[512];
	synth_path("", base, sizeof(base));
	aj_fresh_dir("hostile", top, sizeof(top));
	snprintf(adir, sizeof(adir), "%.400s/archives", top);
	snprintf(tmpd, sizeof(tmpd), "%.400s/tmpdir", top);
	snprintf(cwdd, sizeof(cwdd), "%.400s/cwd", top);
	mkdir(adir, 0755);
	mkdir(tmpd, 0755);
	mkdir(cwdd, 0755);
	char paths[2][512];
	if (aj_write_job(adir, paths) || !(trace = aj_read_file(paths[0], &trace_len))) {
		fprintf(stderr, "cannot write the job's traces\n");
		return 1;
	}
	setenv("TMPDIR", tmpd, 1);
	unsetenv("FLIGHTREC_ARCHIVE_MAX_MEMBER_MB");
	if (chdir(cwdd)) {
		fprintf(stderr, "cannot enter %s\n", cwdd);
		return 1;
	}
	test_skipped();
	test_member_count();
	test_sizes();
	test_broken();
	free(trace);
	return check_finish();
}
