/* `flightrec-analyze archive`: the traces of a job bundled into one
 * tar.zst for a bug report, MANIFEST.json first, optionally redacted.
 * Parses options and connects the parts: the members' names, bytes and
 * digests (archive/members.c, redacted copies through archive/redact.h),
 * the manifest (archive/manifest.c) and the tar (archive/bundle_write.c),
 * written under a temporary name and renamed into place only when
 * complete.  Not for reading archives: every command reads them through
 * the decoder (decode/ts_archive.c). */
#include "bundle_write.h"
#include "flightrec_version.h"
#include "cli.h"
#include "commands.h"
#include "manifest.h"
#include "members.h"
#include "redact.h"
#include "sha256.h"
#include "trace_set.h"
#include "ts_archive.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static const char archive_help[] =
	"usage: " CLI_PROG " archive FILE... -o OUT.tar.zst [--redact] [--redact-all] [--force]\n"
	"\n"
	"Bundle trace files (one per node; archives are taken apart and their\n"
	"traces bundled again) into one file to attach to a bug report: a tar\n"
	"(pax/ustar) compressed with zstd, holding MANIFEST.json first, then the\n"
	"traces.  Every " CLI_PROG " command takes OUT wherever it takes FILE,\n"
	"with the same answers as on the files.  OUT is written under a temporary\n"
	"name and renamed into place only when complete.\n"
	"\n"
	"options:\n"
	"  -o, --output OUT.tar.zst  the archive to create\n"
	"  --redact                  bundle redacted copies of the traces (below)\n"
	"  --redact-all              --redact, and redact the settings that explain\n"
	"                            behaviour too (NCCL_*, CUDA_*, PYTORCH_*, ...)\n"
	"  --force                   replace OUT when it exists\n"
	"\n"
	"members: each trace under its base name (a member of an input archive\n"
	"under its own base name), with .frec added when it lacks one; when two\n"
	"traces have the same base name, each of them is prefixed with its\n"
	"position among the traces and a dash (1-run.frec, 2-run.frec).\n"
	"\n"
	"MANIFEST.json: {\"format\":1,\"created_by\":\"" CLI_PROG " VERSION\",\n"
	"\"traces\":[{\"name\",\"sha256\",\"bytes\" (of the member as archived),\n"
	"\"hosts\",\"ranks\",\"pids\" (sorted), \"start\",\"end\" (ISO 8601 UTC, as\n"
	"info prints them), \"status\" (check's verdict: intact, incomplete,\n"
	"damaged, stopped early, unusable), \"drops\" (events the probes lost)}]}.\n"
	"With --redact it describes the redacted copies: hosts are tokens.  Each\n"
	"copy is written into an unnamed temporary file in $TMPDIR (else in\n"
	"memory), so nothing is left behind, even when flightrec-analyze is killed.\n"
	"\n"
	"reading an archive: only members named *.frec are read, each decompressed\n"
	"into an unnamed temporary file in $TMPDIR (else in memory), never\n"
	"extracted by name; links, devices, names with \"..\" or a leading '/'\n"
	"are skipped with a warning.  An archive of more than "
	TS_ARCHIVE_STR(TS_ARCHIVE_MAX_MEMBERS) " members is\n"
	"refused, and so is a member that decompresses to more than "
	TS_ARCHIVE_STR(TS_ARCHIVE_DEFAULT_MAX_MEMBER_MB) " MiB:\n"
	TS_ARCHIVE_ENV_MAX_MEMBER_MB "=N raises that cap to N MiB.\n"
	"\n"
	"redaction:\n";

static const char archive_examples[] =
	"\n"
	"examples:\n"
	"  " CLI_PROG " archive node*.frec -o bug-1234.tar.zst\n"
	"  " CLI_PROG " archive run.frec --redact -o for-vendor.tar.zst\n"
	"  " CLI_PROG " stragglers bug-1234.tar.zst\n"
	"  tar --zstd -xOf bug-1234.tar.zst MANIFEST.json | jq .\n";

static void print_help(FILE *out)
{
	fputs(archive_help, out);
	cli_print_wrapped(out, redact_help_text);
	fputs(archive_examples, out);
}

struct archive_args {
	const char **files;
	size_t n_files;
	const char *output;
	int force, redact, redact_all;
};

/* CLI_OK, -1 after help, CLI_USAGE or CLI_FAIL after a message. */
static int parse(int argc, char **argv, struct archive_args *a, FILE *out, FILE *errout)
{
	static const char *const flags[] = { "--redact", "--redact-all", NULL };
	static const struct cli_file_spec spec = { .cmd = "archive", .print_help = print_help,
						   .out_name = "OUT.tar.zst", .allow_force = 1,
						   .flags = flags };
	struct cli_file_output fo;
	int rc = cli_parse_file_spec(argc, argv, &spec, &fo, out, errout);
	if (rc)
		return rc;
	*a = (struct archive_args){ .files = fo.files, .n_files = fo.n_files, .output = fo.output,
				    .force = fo.force, .redact = fo.flags != 0,
				    .redact_all = (fo.flags & 2) != 0 };
	if (!strcmp(a->output, "-")) {
		fprintf(errout, CLI_PROG " archive: -o - (standard output) is not supported: the "
			"archive is renamed into place when complete; name a file\n");
		free(a->files);
		a->files = NULL;
		return CLI_USAGE;
	}
	return CLI_OK;
}

/* MANIFEST.json, then every member into tmp, checked against the digests
 * the manifest gives (a trace still being written fails here). */
static int write_bundle(const char *tmp, const char *output, const struct members *ms,
			FILE *errout)
{
	size_t len;
	struct frec_error err = { .offset = -1 };
	char *manifest = manifest_json(ms->facts, ms->m, ms->n, CLI_PROG " " FLIGHTREC_VERSION, &len);
	if (!manifest) {
		fprintf(errout, CLI_PROG " archive: out of memory\n");
		return -1;
	}
	struct bundle *b;
	if (bundle_open(tmp, &b, &err)) {
		free(manifest);
		fprintf(errout, CLI_PROG ": %s: cannot create: %s\n", output, strerror(err.code));
		return -1;
	}
	int rc = bundle_add_bytes(b, MANIFEST_NAME, manifest, len, &err);
	free(manifest);
	for (size_t i = 0; !rc && i < ms->n; i++) {
		const char *src = trace_set_file(ms->facts, i)->path;
		uint8_t digest[SHA256_DIGEST_BYTES];
		char hex[2 * SHA256_DIGEST_BYTES + 1];
		rc = bundle_add_fd(b, ms->m[i].name, ms->fds[i], ms->m[i].bytes, src, digest, &err);
		sha256_hex(digest, hex);
		if (!rc && strcmp(hex, ms->m[i].sha256)) {
			frec_error_set(&err, src, -1, EAGAIN, "changed while it was being archived; "
				       "archive it again once the recording is over");
			rc = -1;
		}
	}
	if (rc) {
		struct frec_error ignored;
		bundle_close(b, &ignored);
	} else {
		rc = bundle_close(b, &err);
	}
	if (rc)
		cli_print_error(errout, &err);
	return rc;
}

static void print_counts(const struct redact_counts *c, FILE *errout)
{
	fprintf(errout, CLI_PROG ": redacted %" PRIu64 " command line%s, %" PRIu64 " environment "
		"value%s, %" PRIu64 " host name%s, %" PRIu64 " path%s, %" PRIu64 " user name%s\n",
		c->cmdlines, c->cmdlines == 1 ? "" : "s", c->env_values, c->env_values == 1 ? "" : "s",
		c->hosts, c->hosts == 1 ? "" : "s", c->paths, c->paths == 1 ? "" : "s",
		c->users, c->users == 1 ? "" : "s");
}

int cmd_archive(int argc, char **argv, FILE *out, FILE *errout)
{
	struct archive_args a;
	int rc = parse(argc, argv, &a, out, errout);
	if (rc)
		return rc < 0 ? CLI_OK : rc;
	if (!a.force && access(a.output, F_OK) == 0) {
		fprintf(errout, CLI_PROG ": %s: exists; pass --force to replace it\n", a.output);
		free(a.files);
		return CLI_FAIL;
	}
	struct trace_set *ts = cli_open(a.files, a.n_files, errout);
	free(a.files);
	if (!ts || cli_run_set(ts, errout))
		return CLI_FAIL;
	struct frec_error err = { .offset = -1 };
	struct members ms;
	size_t tlen = strlen(a.output) + 32;
	char *tmp = malloc(tlen);
	rc = CLI_FAIL;
	if (!tmp) {
		fprintf(errout, CLI_PROG " archive: out of memory\n");
		goto out;
	}
	if (members_open(&ms, ts, &err) ||
	    (a.redact && members_redact(&ms, a.redact_all, a.output, &err)) ||
	    members_hash(&ms, &err)) {
		cli_print_error(errout, &err);
		goto out_members;
	}
	if (a.redact)
		print_counts(&ms.counts, errout);
	snprintf(tmp, tlen, "%s.tmp-%ld", a.output, (long)getpid());
	unlink(tmp);
	if (write_bundle(tmp, a.output, &ms, errout)) {
		unlink(tmp);
		goto out_members;
	}
	if (rename(tmp, a.output)) {
		fprintf(errout, CLI_PROG ": %s: cannot create: %s\n", a.output, strerror(errno));
		unlink(tmp);
		goto out_members;
	}
	uint64_t total = 0;
	char b1[64];
	for (size_t i = 0; i < ms.n; i++)
		total += ms.m[i].bytes;
	fprintf(errout, CLI_PROG ": %s: %zu trace%s (%s)%s and " MANIFEST_NAME "\n", a.output, ms.n,
		ms.n == 1 ? "" : "s", out_bytes(total, b1, sizeof(b1)), a.redact ? ", redacted," : "");
	rc = CLI_OK;
out_members:
	members_free(&ms);
out:
	free(tmp);
	trace_set_free(ts);
	return rc;
}
