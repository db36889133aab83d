/* The archive command and every command's reading of archives, on the
 * two-node job of test_analyzer_archive_util.h: MANIFEST.json first with
 * each trace's digest and size (checked against sha256.h over the files),
 * hosts, ranks, pids, times and verdict; the same answers, byte for byte,
 * from info, check, stragglers, memory, cuda, flame, dump and report on
 * the archive as on the files once the file names are normalised; --redact
 * with the same answers minus the names; member naming (duplicates, no
 * .frec, an archive of an archive); --force; no descriptor left open.
 * Hostile archives are test_analyzer_archive_hostile.c. */
#include "check.h"
#include "test_analyzer_archive_util.h"

#include "commands.h"
#include "sha256.h"

static char dir[512], paths[2][512];

/* The members' names, one a line, and MANIFEST.json's text (when first). */
static char *members_of(const char *path, char **manifest)
{
	char *names = NULL;
	size_t len;
	FILE *out = open_memstream(&names, &len);
	*manifest = NULL;
	struct archive *a = archive_read_new();
	archive_read_support_filter_zstd(a);
	archive_read_support_format_tar(a);
	if (archive_read_open_filename(a, path, 65536) == ARCHIVE_OK) {
		struct archive_entry *e;
		for (int i = 0; archive_read_next_header(a, &e) == ARCHIVE_OK; i++) {
			fprintf(out, "%s\n", archive_entry_pathname(e));
			if (i == 0 && !strcmp(archive_entry_pathname(e), "MANIFEST.json")) {
				size_t n = (size_t)archive_entry_size(e);
				*manifest = calloc(1, n + 1);
				if (archive_read_data(a, *manifest, n) != (la_ssize_t)n)
					(*manifest)[0] = '\0';
			}
		}
	}
	archive_read_free(a);
	fclose(out);
	return names;
}

static void sha256_of_file(const char *path, char hex[65], size_t *len)
{
	uint8_t *data = aj_read_file(path, len), digest[SHA256_DIGEST_BYTES];
	sha256(data, *len, digest);
	sha256_hex(digest, hex);
	free(data);
}

/* cmd on the files and on the archive: the same status, output and
 * diagnostics once "ARCHIVE:" reads "DIR/". */
static void same_answers(const char *archive, char **argv_files, char **argv_archive)
{
	struct cmd_run f = { 0 }, a = { 0 };
	cmd_fn cmds[] = { cmd_info, cmd_check, cmd_stragglers, cmd_memory, cmd_cuda, cmd_flame,
			  cmd_dump, cmd_report };
	const char *names[] = { "info", "check", "stragglers", "memory", "cuda", "flame", "dump",
				"report" };
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (strcmp(argv_files[0], names[i]))
			continue;
		f = cmd_run_argv(cmds[i], argv_files);
		a = cmd_run_argv(cmds[i], argv_archive);
	}
	char from[640], to[640];
	snprintf(from, sizeof(from), "%s:", archive);
	snprintf(to, sizeof(to), "%s/", dir);
	char *out = aj_replace(a.out, from, to), *err = aj_replace(a.err, from, to);
	CHECK_EQ_U64(a.rc, f.rc);
	CHECK(strlen(f.out) > 20);
	if (strcmp(out, f.out) || strcmp(err, f.err))
		fprintf(stderr, "%s differs on the archive:\n--- files\n%s%s--- archive\n%s%s", argv_files[0],
			f.out, f.err, out, err);
	CHECK(!strcmp(out, f.out));
	CHECK(!strcmp(err, f.err));
	free(out);
	free(err);
	cmd_run_free(&f);
	cmd_run_free(&a);
}

static void test_round_trip(void)
{
	char arch[600];
	snprintf(arch, sizeof(arch), "%s/job.tar.zst", dir);
	int fds = aj_open_fds();

	struct cmd_run r = CMD_RUN(cmd_archive, "archive", paths[0], paths[1], "-o", arch);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_EQ_U64(aj_lines(r.err), 1);
	CHECK(strstr(r.err, "2 traces") != NULL);
	cmd_run_free(&r);
	r = CMD_RUN(cmd_archive, "archive", paths[0], paths[1], "-o", arch);
	CHECK_EQ_U64(r.rc, 1);
	CHECK_EQ_U64(aj_lines(r.err), 1);
	CHECK(strstr(r.err, "exists; pass --force") != NULL);
	cmd_run_free(&r);
	r = CMD_RUN(cmd_archive, "archive", paths[0], paths[1], "-o", arch, "--force");
	CHECK_EQ_U64(r.rc, 0);
	cmd_run_free(&r);

	char *manifest, *members = members_of(arch, &manifest);
	CHECK_STR(members, "MANIFEST.json\nnode0.frec\nnode1.frec\n");
	CHECK(manifest && !strncmp(manifest, "{\"format\":1,\"created_by\":\"flightrec-analyze ", 44));
	for (int n = 0; manifest && n < 2; n++) {
		char hex[65], want[512];
		size_t len;
		sha256_of_file(paths[n], hex, &len);
		snprintf(want, sizeof(want), "{\"name\":\"node%d.frec\",\"sha256\":\"%s\",\"bytes\":%zu,"
			 "\"hosts\":[\"node-%c\"],\"ranks\":[%d,%d],\"pids\":[%d,%d],"
			 "\"containers\":[],\"pods\":[],\"pod_namespaces\":[],\"slurm_jobs\":[],"
			 "\"start\":\"2024-05-01T12:00:00.000Z\",\"end\":\"2024-05-01T12:00:0", n, hex,
			 len, 'a' + n, 2 * n, 2 * n + 1, 1000 + 100 * n, 1001 + 100 * n);
		CHECK(strstr(manifest, want) != NULL);
		if (!strstr(manifest, want))
			fprintf(stderr, "manifest:\n%s\nwanted:\n%s\n", manifest, want);
	}
	CHECK(manifest && strstr(manifest, "\"status\":\"intact\",\"drops\":0}") != NULL);
	if (manifest)
		printf("MANIFEST.json:\n%s", manifest);
	free(manifest);
	free(members);

	char *p0 = paths[0], *p1 = paths[1];
	same_answers(arch, (char *[]){ "info", "--json", p0, p1, NULL },
		     (char *[]){ "info", "--json", arch, NULL });
	same_answers(arch, (char *[]){ "info", p0, p1, NULL }, (char *[]){ "info", arch, NULL });
	same_answers(arch, (char *[]){ "check", p0, p1, NULL }, (char *[]){ "check", arch, NULL });
	same_answers(arch, (char *[]){ "stragglers", "--json", p0, p1, NULL },
		     (char *[]){ "stragglers", "--json", arch, NULL });
	same_answers(arch, (char *[]){ "memory", "--json", p0, p1, NULL },
		     (char *[]){ "memory", "--json", arch, NULL });
	same_answers(arch, (char *[]){ "cuda", "--json", p0, p1, NULL },
		     (char *[]){ "cuda", "--json", arch, NULL });
	same_answers(arch, (char *[]){ "flame", p0, p1, "--kind", "cpu", NULL },
		     (char *[]){ "flame", arch, "--kind", "cpu", NULL });
	same_answers(arch, (char *[]){ "dump", p0, p1, NULL }, (char *[]){ "dump", arch, NULL });
	/* the memory snapshots' second pass reopens the members' copies */
	same_answers(arch, (char *[]){ "report", p0, p1, "-o", "-", NULL },
		     (char *[]){ "report", arch, "-o", "-", NULL });

	/* an archive and a plain file on one command line */
	r = CMD_RUN(cmd_info, "info", "--json", arch, p1);
	CHECK_EQ_U64(r.rc, 0);
	CHECK(strstr(r.out, "job.tar.zst:node1.frec\"") && strstr(r.out, "/node1.frec\""));
	CHECK_STR(r.err, "");
	cmd_run_free(&r);
	CHECK_EQ_U64(aj_open_fds(), fds);
}

/* Every "host":"..." value as "host":"H". */
static char *hosts_out(const char *text)
{
	char *out = strdup(text);
	for (char *p = out; (p = strstr(p, "\"host\":\"")); ) {
		p += 8;
		char *end = strchr(p, '"');
		if (!end)
			break;
		memmove(p + 1, end, strlen(end) + 1);
		*p = 'H';
	}
	return out;
}

static void test_redacted(void)
{
	char arch[600];
	snprintf(arch, sizeof(arch), "%s/redacted.tar.zst", dir);
	int fds = aj_open_fds();
	struct cmd_run r = CMD_RUN(cmd_archive, "archive", paths[0], paths[1], "--redact", "-o", arch);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_EQ_U64(aj_lines(r.err), 2);
	CHECK(strstr(r.err, "redacted") && strstr(r.err, "host names"));
	cmd_run_free(&r);

	char *manifest, *members = members_of(arch, &manifest);
	CHECK_STR(members, "MANIFEST.json\nnode0.frec\nnode1.frec\n");
	CHECK(manifest && !strstr(manifest, "node-a") && !strstr(manifest, "node-b"));
	CHECK(manifest && strstr(manifest, "\"hosts\":[\"\\u003ch:") != NULL);
	CHECK(manifest && strstr(manifest, "\"ranks\":[2,3],\"pids\":[1100,1101]") != NULL);
	free(manifest);
	free(members);

	r = CMD_RUN(cmd_info, "info", arch);
	CHECK_EQ_U64(r.rc, 0);
	CHECK(!strstr(r.out, "alice") && !strstr(r.out, "node-a") && strstr(r.out, "<h:"));
	cmd_run_free(&r);
	/* none of the names it replaced, wherever the analyzer reads them:
	 * info --json, dump, the report */
	static const char *const secrets[] = { "node-a", "node-b", "alice", "train.py", "torchrun" };
	struct cmd_run outs[] = {
		CMD_RUN(cmd_info, "info", "--json", arch),
		CMD_RUN(cmd_dump, "dump", arch),
		CMD_RUN(cmd_report, "report", arch, "-o", "-"),
	};
	for (size_t k = 0; k < sizeof(outs) / sizeof(outs[0]); k++) {
		CHECK_EQ_U64(outs[k].rc, 0);
		CHECK(outs[k].out && strlen(outs[k].out) > 100);
		for (size_t i = 0; outs[k].out && i < sizeof(secrets) / sizeof(secrets[0]); i++) {
			CHECK(!strstr(outs[k].out, secrets[i]));
			if (strstr(outs[k].out, secrets[i]))
				fprintf(stderr, "output %zu of the redacted archive names %s\n", k,
					secrets[i]);
		}
		cmd_run_free(&outs[k]);
	}

	/* the same answers minus the names */
	const char *which[] = { "stragglers", "memory" };
	cmd_fn cmds[] = { cmd_stragglers, cmd_memory };
	for (int i = 0; i < 2; i++) {
		char *c = (char *)which[i];
		struct cmd_run f = cmd_run_argv(cmds[i], (char *[]){ c, "--json", paths[0], paths[1], NULL });
		struct cmd_run a = cmd_run_argv(cmds[i], (char *[]){ c, "--json", arch, NULL });
		char from[640], to[640];
		snprintf(from, sizeof(from), "%s:", arch);
		snprintf(to, sizeof(to), "%s/", dir);
		char *renamed = aj_replace(a.out, from, to);
		char *fo = hosts_out(f.out), *ao = hosts_out(renamed);
		CHECK_EQ_U64(a.rc, f.rc);
		CHECK(strlen(fo) > 20);
		CHECK(!strcmp(fo, ao));
		if (strcmp(fo, ao))
			fprintf(stderr, "%s differs redacted:\n%s\n%s\n", c, fo, ao);
		free(renamed);
		free(fo);
		free(ao);
		cmd_run_free(&f);
		cmd_run_free(&a);
	}
	CHECK_EQ_U64(aj_open_fds(), fds);
}

static void copy_file(const char *from, const char *to)
{
	size_t len;
	uint8_t *data = aj_read_file(from, &len);
	FILE *f = fopen(to, "wb");
	if (f && data)
		fwrite(data, 1, len, f);
	if (f)
		fclose(f);
	free(data);
}

static void test_names(void)
{
	char sub[600], dup[700], bin[620], arch[620], again[620];
	snprintf(sub, sizeof(sub), "%s/b", dir);
	mkdir(sub, 0755);
	snprintf(dup, sizeof(dup), "%s/node0.frec", sub);
	snprintf(bin, sizeof(bin), "%s/trace.bin", dir);
	copy_file(paths[0], dup);
	copy_file(paths[1], bin);
	snprintf(arch, sizeof(arch), "%s/names.tar.zst", dir);
	struct cmd_run r = CMD_RUN(cmd_archive, "archive", paths[0], dup, bin, "-o", arch);
	CHECK_EQ_U64(r.rc, 0);
	cmd_run_free(&r);
	char *manifest, *members = members_of(arch, &manifest);
	CHECK_STR(members, "MANIFEST.json\n1-node0.frec\n2-node0.frec\ntrace.bin.frec\n");
	free(manifest);
	free(members);

	/* an archive of an archive: its members under their own names, the
	 * same bytes */
	snprintf(again, sizeof(again), "%s/again.tar.zst", dir);
	r = CMD_RUN(cmd_archive, "archive", arch, "-o", again);
	CHECK_EQ_U64(r.rc, 0);
	cmd_run_free(&r);
	members = members_of(again, &manifest);
	CHECK_STR(members, "MANIFEST.json\n1-node0.frec\n2-node0.frec\ntrace.bin.frec\n");
	char hex[65];
	size_t len;
	sha256_of_file(paths[1], hex, &len);
	CHECK(manifest && strstr(manifest, hex) != NULL);
	free(manifest);
	free(members);

	/* usage errors */
	r = CMD_RUN(cmd_archive, "archive", paths[0]);
	CHECK_EQ_U64(r.rc, 2);
	CHECK_EQ_U64(aj_lines(r.err), 1);
	cmd_run_free(&r);
	r = CMD_RUN(cmd_archive, "archive", "--help");
	CHECK_EQ_U64(r.rc, 0);
	CHECK(strstr(r.out, "FLIGHTREC_ARCHIVE_MAX_MEMBER_MB") && strstr(r.out, "4096") &&
	      strstr(r.out, "16384 MiB") && strstr(r.out, "--redact-all"));
	cmd_run_free(&r);
}

int main(void)
{
	aj_fresh_dir("archive", dir, sizeof(dir));
	if (aj_write_job(dir, paths)) {
		fprintf(stderr, "cannot write the job's traces\n");
		return 1;
	}
	test_round_trip();
	test_redacted();
	test_names();
	return check_finish();
}
