/* `flightrec-analyze info`: what a trace holds, for a human (aligned text)
 * or a script (--json).  Not an integrity verdict: that is `check`; nor the
 * layout: outputs/out_info.c. */
#include "cli.h"
#include "commands.h"
#include "model_syscalls.h"
#include "out_common.h"
#include "out_info.h"
#include "out_file_json.h"
#include "syscall_names.h"
#include "trace_set.h"
#include "ts_archive.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>


static const char info_help[] =
	"usage: " CLI_PROG " info [--json] FILE...\n"
	"\n"
	"Describe what each trace file holds: node, kernel, recorded command,\n"
	"start time and duration, processes, records by type, per-probe events\n"
	"and drops, the recorder's own CPU time, the busiest system calls, chunks\n"
	"and compression, and any damage.  Damaged or incomplete files are\n"
	"described as far as they can be read (with a warning).\n"
	"\n"
	"FILE may also be a trace archive (what '" CLI_PROG " archive' writes, or\n"
	"any .tar, .tar.gz or .tar.zst of traces), here and in every other command:\n"
	"each member named *.frec is decompressed once into an unnamed temporary\n"
	"file (in $TMPDIR, else in memory; gone when the command ends, however it\n"
	"ends) and called ARCHIVE:MEMBER; nothing is extracted by name.  Commands\n"
	"that read a trace twice (report's memory snapshots, dump) read that copy\n"
	"again, not the archive.  Links, devices, names with \"..\" or a leading\n"
	"'/' and other members are skipped with a warning; an archive of more than\n"
	TS_ARCHIVE_STR(TS_ARCHIVE_MAX_MEMBERS) " members is refused, and so is a member that decompresses to\n"
	"more than " TS_ARCHIVE_STR(TS_ARCHIVE_DEFAULT_MAX_MEMBER_MB) " MiB (" TS_ARCHIVE_ENV_MAX_MEMBER_MB "=N raises the cap\n"
	"to N MiB).\n"
	"\n"
	"options:\n"
	"  --json    one JSON document on stdout instead of text\n"
	"  -h, --help\n"
	"\n"
	"examples:\n"
	"  " CLI_PROG " info run.frec\n"
	"  " CLI_PROG " info node*.frec\n"
	"  " CLI_PROG " info bug-1234.tar.zst\n"
	"  " CLI_PROG " info --json run.frec | jq '.files[0].drops'\n";

static const struct cli_table_spec info_spec = {
	.cmd = "info", .help = info_help, .usage = "[--json] FILE...",
};

int cmd_info(int argc, char **argv, FILE *out, FILE *errout)
{
	struct cli_table_args a;
	int rc = cli_parse_table_args(argc, argv, &info_spec, &a, out, errout);
	if (rc)
		return rc < 0 ? CLI_OK : rc;
	struct trace_set *ts = cli_open((const char *const *)a.files, a.n_files, errout);
	free(a.files);
	if (!ts)
		return CLI_FAIL;
	void *syscalls = trace_set_use_model(ts, "syscalls", NULL);
	if (!syscalls) {
		struct frec_error err = { .offset = -1 };
		frec_error_set(&err, CLI_PROG, -1, ENOMEM, "out of memory");
		cli_print_error(errout, &err);
		trace_set_free(ts);
		return CLI_FAIL;
	}
	if (cli_run_set(ts, errout))
		return CLI_FAIL;
	if (a.json)
		fprintf(out, "{\"files\":[");
	for (size_t i = 0; i < trace_set_count(ts); i++) {
		if (a.json) {
			if (i)
				fputc(',', out);
			out_info_json(trace_set_file(ts, i), (uint32_t)i, syscalls, out);
		} else {
			if (i)
				fputc('\n', out);
			out_info_text(trace_set_file(ts, i), (uint32_t)i, syscalls, out);
		}
	}
	if (a.json)
		fprintf(out, "]}\n");
	trace_set_free(ts);
	return CLI_OK;
}
