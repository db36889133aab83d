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
	"wrong and what could be recovered.\n"
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

static int check_one(const char *path, FILE *out)
{
	struct frec_error err = { .offset = -1 };
	struct trace_set *ts;
	char buf[600], b1[64];
	if (trace_set_open(&path, 1, &ts, &err)) {
		/* frec_open names the file itself; do not repeat it. */
		const char *msg = frec_error_str(&err, buf, sizeof(buf));
		size_t plen = strlen(path);
		if (strncmp(msg, path, plen) == 0 && msg[plen] == ':')
			msg += plen + 2;
		fprintf(out, "%s: unusable: %s\n", path, msg);
		return 2;
	}
	if (trace_set_run(ts, &err)) {
		fprintf(out, "%s: unusable: %s\n", path, frec_error_str(&err, buf, sizeof(buf)));
		trace_set_free(ts);
		return 2;
	}
	struct trace_file *f = trace_set_file(ts, 0);
	size_t n_damage = frec_damage_count(f->reader);
	uint64_t missing = frec_chunks_missing(f->reader);
	int complete = trace_file_complete(f);
	char stop[160];
	const char *stopped = trace_file_stopped(f, stop, sizeof(stop));
	if (!trace_file_damaged(f) && complete && !stopped) {
		fprintf(out, "%s: intact: %" PRIu64 " chunks, %" PRIu64 " records, %s\n", path,
			f->chunks, f->records, cli_bytes(f->size_bytes, b1, sizeof(b1)));
		trace_set_free(ts);
		return 0;
	}
	int status = f->io_failed ? 2 : 1;
	fprintf(out, "%s: %s: ", path, f->io_failed ? "unusable" :
		stopped && !trace_file_damaged(f) ? "stopped early" : complete ? "damaged" : "incomplete");
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
		int s = check_one(a, out);
		if (s > status)
			status = s;
	}
	return status;
}
