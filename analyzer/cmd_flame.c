/* `flightrec-analyze flame`: a flame graph of one kind from one or many
 * traces, as folded stacks (flamegraph.pl, speedscope), SVG or HTML.
 * Not the model (model_cpu.c) nor the renderers (flame_tree.c,
 * flame_render.c): this file parses options and connects them. */
#include "cli.h"
#include "commands.h"
#include "flame_tree.h"
#include "model_cpu.h"
#include "trace_set.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char flame_help[] =
	"usage: " CLI_PROG " flame FILE... [--kind cpu] [--pid PID]\n"
	"                         [--format folded|svg|html] [-o OUT]\n"
	"\n"
	"Build a flame graph from the traces (several files, one per node, are\n"
	"merged into one graph).\n"
	"\n"
	"options:\n"
	"  --kind KIND      what the graph counts (default cpu):\n"
	"                     cpu        on-CPU samples per stack\n"
	"                     mem-inuse  GPU bytes outstanding at --at (needs CUDA\n"
	"                                allocation events; not recorded yet)\n"
	"                     mem-alloc  GPU bytes allocated per stack (idem)\n"
	"  --pid PID        only samples of process PID\n"
	"  --format FMT     folded (default): one line per stack, root first,\n"
	"                   frames joined by ';', a space, the sample count;\n"
	"                   svg: interactive standalone SVG; html: a page holding it\n"
	"  -o, --output OUT write to OUT instead of stdout\n"
	"  --at peak|SECONDS  instant for mem-inuse\n"
	"\n"
	"Frame names: symbol names (C++ demangled), 'lib.so+0xOFFSET' (file offset)\n"
	"when a library has no symbol there, '[unknown]' outside any mapping,\n"
	"kernel frames end in '_[k]'.\n"
	"\n"
	"examples:\n"
	"  " CLI_PROG " flame run.frec > cpu.folded\n"
	"  " CLI_PROG " flame run.frec --kind cpu --pid 4242 --format svg -o cpu.svg\n"
	"  " CLI_PROG " flame node*.frec --format html -o cpu.html\n"
	"  " CLI_PROG " flame run.frec | flamegraph.pl > cpu.svg\n";

struct flame_args {
	const char **files;
	size_t n_files;
	const char *kind;
	const char *format;
	const char *output;
	const char *at;
	int filter_pid;
	uint32_t pid;
};

/* 0, CLI_USAGE after printing why, or -1 for --help (printed). */
static int flame_parse(int argc, char **argv, struct flame_args *a, FILE *out, FILE *errout)
{
	int only_files = 0;
	a->kind = "cpu";
	a->format = "folded";
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *value = NULL;
		int m;
		if (only_files || arg[0] != '-' || !arg[1]) {
			a->files[a->n_files++] = arg;
			continue;
		}
		if (strcmp(arg, "--") == 0) {
			only_files = 1;
		} else if (cli_is_help(arg)) {
			fputs(flame_help, out);
			return -1;
		} else if ((m = cli_option(argc, argv, &i, "--kind", NULL, &value, "flame", errout))) {
			if (m < 0)
				return CLI_USAGE;
			a->kind = value;
		} else if ((m = cli_option(argc, argv, &i, "--format", NULL, &value, "flame", errout))) {
			if (m < 0)
				return CLI_USAGE;
			a->format = value;
		} else if ((m = cli_option(argc, argv, &i, "--output", "-o", &value, "flame", errout))) {
			if (m < 0)
				return CLI_USAGE;
			a->output = value;
		} else if ((m = cli_option(argc, argv, &i, "--at", NULL, &value, "flame", errout))) {
			if (m < 0)
				return CLI_USAGE;
			a->at = value;
		} else if ((m = cli_option(argc, argv, &i, "--pid", NULL, &value, "flame", errout))) {
			if (m < 0)
				return CLI_USAGE;
			if (cli_parse_pid(value, &a->pid)) {
				fprintf(errout, CLI_PROG " flame: --pid '%s' is not a process id (a positive decimal number)\n", value);
				return CLI_USAGE;
			}
			a->filter_pid = 1;
		} else {
			fprintf(errout, CLI_PROG " flame: unknown option '%s' (see '" CLI_PROG " flame --help')\n", arg);
			return CLI_USAGE;
		}
	}
	if (!a->n_files) {
		fprintf(errout, CLI_PROG " flame: no trace file given (usage: " CLI_PROG " flame FILE... --kind cpu)\n");
		return CLI_USAGE;
	}
	if (strcmp(a->kind, "cpu") && strcmp(a->kind, "mem-inuse") && strcmp(a->kind, "mem-alloc")) {
		fprintf(errout, CLI_PROG " flame: unknown --kind '%s' (expected cpu, mem-inuse or mem-alloc)\n", a->kind);
		return CLI_USAGE;
	}
	if (strcmp(a->format, "folded") && strcmp(a->format, "svg") && strcmp(a->format, "html")) {
		fprintf(errout, CLI_PROG " flame: unknown --format '%s' (expected folded, svg or html)\n", a->format);
		return CLI_USAGE;
	}
	if (a->at && strcmp(a->kind, "mem-inuse")) {
		fprintf(errout, CLI_PROG " flame: --at applies to --kind mem-inuse only\n");
		return CLI_USAGE;
	}
	return 0;
}

static int flame_write(const struct flame_args *a, const struct model_cpu_result *r,
		       struct trace_set *ts, FILE *out, FILE *errout)
{
	FILE *dst = out;
	if (a->output && strcmp(a->output, "-")) {
		dst = fopen(a->output, "w");
		if (!dst) {
			fprintf(errout, CLI_PROG ": %s: cannot create: %s\n", a->output, strerror(errno));
			return CLI_FAIL;
		}
	}
	char title[256], subtitle[256];
	const struct trace_file *f0 = trace_set_file(ts, 0);
	if (a->filter_pid) {
		const struct ts_process *p = trace_file_process(f0, a->pid);
		snprintf(title, sizeof(title), "CPU samples: %s (pid %u)", p ? p->comm : "process", a->pid);
	} else {
		snprintf(title, sizeof(title), "CPU samples: %s", f0->cmdline[0] ? f0->cmdline : f0->path);
	}
	snprintf(subtitle, sizeof(subtitle), "%" PRIu64 " samples from %zu file%s (%s%s)",
		 r->samples_kept, trace_set_count(ts), trace_set_count(ts) == 1 ? "" : "s",
		 f0->path, trace_set_count(ts) > 1 ? ", ..." : "");
	struct flame_render_opts opts = { .title = title, .unit = "samples", .subtitle = subtitle };
	int rc;
	if (strcmp(a->format, "svg") == 0)
		rc = flame_write_svg(r->tree, &opts, dst);
	else if (strcmp(a->format, "html") == 0)
		rc = flame_write_html(r->tree, &opts, dst);
	else
		rc = flame_write_folded(r->tree, dst);
	if (fflush(dst) || ferror(dst))
		rc = -1;
	if (dst != out && fclose(dst))
		rc = -1;
	if (rc) {
		fprintf(errout, CLI_PROG ": %s: write failed: %s\n",
			dst != out ? a->output : "standard output", strerror(errno ? errno : EIO));
		return CLI_FAIL;
	}
	return CLI_OK;
}

int cmd_flame(int argc, char **argv, FILE *out, FILE *errout)
{
	struct flame_args a = { .files = calloc((size_t)argc + 1, sizeof(char *)) };
	if (!a.files) {
		fprintf(errout, CLI_PROG " flame: out of memory\n");
		return CLI_FAIL;
	}
	int rc = flame_parse(argc, argv, &a, out, errout);
	if (rc) {
		free(a.files);
		return rc < 0 ? CLI_OK : rc;
	}
	struct frec_error err = { .offset = -1 };
	struct trace_set *ts;
	if (trace_set_open(a.files, a.n_files, &ts, &err)) {
		cli_print_error(errout, &err);
		free(a.files);
		return CLI_FAIL;
	}
	free(a.files);
	if (strcmp(a.kind, "cpu")) {
		/* No event type carries CUDA allocations yet: say so rather than
		 * draw an empty graph. */
		fprintf(errout, CLI_PROG ": %s: no CUDA allocation events in this trace "
			"(this version records none), so --kind %s has nothing to show; use --kind cpu\n",
			trace_set_file(ts, 0)->path, a.kind);
		trace_set_free(ts);
		return CLI_FAIL;
	}
	struct model_opts mo = { .filter_pid = a.filter_pid, .pid = a.pid };
	void *cpu = trace_set_add_model(ts, &model_cpu_ops, &mo);
	if (!cpu) {
		fprintf(errout, CLI_PROG " flame: out of memory\n");
		trace_set_free(ts);
		return CLI_FAIL;
	}
	if (trace_set_run(ts, &err)) {
		cli_print_error(errout, &err);
		trace_set_free(ts);
		return CLI_FAIL;
	}
	cmd_warn_troubled(ts, errout);
	const struct model_cpu_result *r = model_cpu_result(cpu);
	const char *first_path = trace_set_file(ts, 0)->path;
	if (!r->samples_kept) {
		if (a.filter_pid && r->samples)
			fprintf(errout, CLI_PROG ": %s: no CPU samples of pid %u (%" PRIu64
				" samples of other processes; see '" CLI_PROG " info')\n",
				first_path, a.pid, r->samples);
		else
			fprintf(errout, CLI_PROG ": %s: no CPU samples in this trace "
				"(was the cpu probe attached? see '" CLI_PROG " info')\n", first_path);
		trace_set_free(ts);
		return CLI_FAIL;
	}
	if (r->samples_missing_stack)
		fprintf(errout, CLI_PROG ": warning: %" PRIu64 " sample%s name stack ids their trace "
			"does not define; counted as [missing stack]\n", r->samples_missing_stack,
			r->samples_missing_stack == 1 ? "" : "s");
	rc = flame_write(&a, r, ts, out, errout);
	trace_set_free(ts);
	return rc;
}
