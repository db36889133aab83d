/* `flightrec-analyze check`: the integrity verdict of each trace, and what
 * a damaged or incomplete one still holds.  Exit 0 when every file is
 * intact, 1 when one is damaged or incomplete, 2 when one is unusable.  Not
 * a description of the contents: that is `info`. */
#include "cli.h"
#include "commands.h"
#include "trace_set.h"

#include <inttypes.h>
#include <string.h>

static const char check_help[] =
	"usage: " CLI_PROG " check FILE...\n"
	"\n"
	"Verify each trace: every chunk's CRCs, every record's framing and\n"
	"lengths, the end record, and the index against the chunks found.\n"
	"Prints one summary line per file, then indented details of what is\n"
	"wrong and what could be recovered.  An archive (" CLI_PROG " archive)\n"
	"is checked member by member, each line naming ARCHIVE:MEMBER.\n"
	"\n"
	"exit status:\n"
	"  0  every file is intact\n"
	"  1  a file is damaged or incomplete (recorder killed); the other\n"
	"     commands still analyze what it holds\n"
	"  2  a file is unusable (not a flightrec trace, bad header, unreadable)\n"
	"\n"
	"examples:\n"
	"  " CLI_PROG " check run.frec\n"
	"  " CLI_PROG " check node*.frec && echo all intact\n";

/* The verdict of one file of a set, named by f->path (ARCHIVE:MEMBER for
 * an archive's member). */
static int check_file(struct trace_file *f, FILE *out)
{
	char b1[64];
	const char *path = f->path;
	size_t n_damage = frec_damage_count(f->reader);
	uint64_t missing = frec_chunks_missing(f->reader);
	int complete = trace_file_complete(f);
	char stop[160];
	const char *stopped = trace_file_stopped(f, stop, sizeof(stop));
	const char *verdict = trace_file_verdict(f);
	if (!strcmp(verdict, "intact")) {
		fprintf(out, "%s: intact: %" PRIu64 " chunks, %" PRIu64 " records, %s\n", path,
			f->chunks, f->records, out_bytes(f->size_bytes, b1, sizeof(b1)));
		return 0;
	}
	int status = f->io_failed ? 2 : 1;
	fprintf(out, "%s: %s: ", path, verdict);
	if (f->io_failed)
		fprintf(out, "read error; ");
	else if (!complete)
		fprintf(out, "no end record; ");
	else if (stopped)
		fprintf(out, "%s; ", stop + strlen("stopped early: "));
	fprintf(out, "recovered %" PRIu64 " chunk%s (%" PRIu64 " record%s)", f->chunks,
		f->chunks == 1 ? "" : "s", f->records, f->records == 1 ? "" : "s");
	if (n_damage)
		fprintf(out, "; %zu damaged region%s", n_damage, n_damage == 1 ? "" : "s");
	if (missing)
		fprintf(out, "; %" PRIu64 " chunk%s missing", missing, missing == 1 ? "" : "s");
	if (f->n_problems)
		fprintf(out, "; %" PRIu64 " malformed record%s", f->n_problems,
			f->n_problems == 1 ? "" : "s");
	fprintf(out, "\n");

	if (f->io_failed)
		fprintf(out, "  read error: offset %lld: %s\n", (long long)f->io_err.offset,
			f->io_err.what);
	if (!complete && !f->io_failed)
		fprintf(out, "  no end record: the recorder did not close the file (killed?); "
			"the intact chunks before the cut were recovered\n");
	for (size_t i = 0; i < n_damage; i++) {
		const struct frec_damage *d = frec_damage_at(f->reader, i);
		fprintf(out, "  damaged region: offset %" PRIu64 ", %" PRIu64 " bytes: %.160s\n",
			d->offset, d->length, d->what);
	}
	if (missing)
		fprintf(out, "  missing: %" PRIu64 " chunk%s listed in the index not found by the scan\n",
			missing, missing == 1 ? "" : "s");
	for (uint64_t i = 0; i < f->n_problems && i < TS_MAX_PROBLEMS_KEPT; i++)
		fprintf(out, "  malformed record: chunk at offset %" PRIu64 ", record +%" PRIu64 ": %s\n",
			f->problems[i].chunk_offset, f->problems[i].rec_offset, f->problems[i].what);
	if (f->n_problems > TS_MAX_PROBLEMS_KEPT)
		fprintf(out, "  ... and %" PRIu64 " more malformed records\n",
			f->n_problems - TS_MAX_PROBLEMS_KEPT);
	return status;
}

/* One argument: a trace file, or an archive whose every member is checked. */
static int check_one(const char *path, FILE *out, FILE *errout)
{
	struct frec_error err = { .offset = -1 };
	struct trace_set *ts;
	char buf[600];
	if (trace_set_open(&path, 1, &ts, &err)) {
		/* frec_open names the file itself (a member as ARCHIVE:MEMBER, an
		 * archive's own trouble as ARCHIVE); do not repeat it. */
		const char *msg = frec_error_str(&err, buf, sizeof(buf));
		size_t wlen = strlen(err.where);
		const char *rest = wlen && !strncmp(msg, err.where, wlen) ? msg + wlen + 2 : msg;
		fprintf(out, "%s: unusable: %s\n", wlen && strcmp(err.where, CLI_PROG) ? err.where : path,
			rest);
		return 2;
	}
	cli_warn_skipped(ts, errout);
	if (trace_set_run(ts, &err)) {
		fprintf(out, "%s: unusable: %s\n", path, frec_error_str(&err, buf, sizeof(buf)));
		trace_set_free(ts);
		return 2;
	}
	int status = 0;
	for (size_t i = 0; i < trace_set_count(ts); i++) {
		int s = check_file(trace_set_file(ts, i), out);
		if (s > status)
			status = s;
	}
	trace_set_free(ts);
	return status;
}

int cmd_check(int argc, char **argv, FILE *out, FILE *errout)
{
	int only_files = 0, n_files = 0, status = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (only_files || a[0] != '-' || !a[1]) {
			n_files++;
		} else if (strcmp(a, "--") == 0) {
			only_files = 1;
		} else if (cli_is_help(a)) {
			fputs(check_help, out);
			return CLI_OK;
		} else {
			fprintf(errout, CLI_PROG " check: unknown option '%s' (see '" CLI_PROG " check --help')\n", a);
			return CLI_USAGE;
		}
	}
	if (!n_files) {
		fprintf(errout, CLI_PROG " check: no trace file given (usage: " CLI_PROG " check FILE...)\n");
		return CLI_USAGE;
	}
	only_files = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!only_files && strcmp(a, "--") == 0) {
			only_files = 1;
			continue;
		}
		int s = check_one(a, out, errout);
		if (s > status)
			status = s;
	}
	return status;
}
