/* `flightrec-analyze flame`: a flame graph of one kind from one or many
 * traces, as folded stacks (flamegraph.pl, speedscope), SVG or HTML.
 * Not the models (model_cpu.c, model_mem.c) nor the renderers (flame_tree.c,
 * flame_render.c): this file parses options and connects them. */
#include "cli.h"
#include "commands.h"
#include "flame_tree.h"
#include "model_cpu.h"
#include "model_mem.h"
#include "trace_set.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char flame_help[] =
	"usage: " CLI_PROG " flame FILE... [--kind cpu|mem-inuse|mem-alloc]\n"
	"                         [--at peak|SECONDS] [--pid PID]\n"
	"                         [--format folded|svg|html] [-o OUT]\n"
	"\n"
	"Build a flame graph from the traces (several files, one per node, are\n"
	"merged into one graph).\n"
	"\n"
	"options:\n"
	"  --kind KIND      what the graph counts (default cpu):\n"
	"                     cpu        on-CPU samples per stack\n"
	"                     mem-inuse  GPU device bytes in use per allocation stack\n"
	"                                at one instant (--at); needs CUDA\n"
	"                                allocation events (probe cuda)\n"
	"                     mem-alloc  GPU device bytes allocated per stack over\n"
	"                                the whole recording\n"
	"  --pid PID        only samples of process PID\n"
	"  --format FMT     folded (default): one line per stack, root first,\n"
	"                   frames joined by ';', a space, the value (samples for\n"
	"                   cpu, bytes for mem-*);\n"
	"                   svg: interactive standalone SVG; html: a page holding it\n"
	"  -o, --output OUT write to OUT instead of stdout\n"
	"  --at peak|SECONDS  instant for mem-inuse (default peak): 'peak' is the\n"
	"                   time of the largest total device bytes in use (each\n"
	"                   file at its own peak); SECONDS counts from the start\n"
	"                   of the recording (e.g. 12.5).  Memory freed but\n"
	"                   allocated before the recording is not in the graph\n"
	"                   (its size is unknown); a note on stderr counts it\n"
	"\n"
	"Frame names: symbol names (C++ demangled), 'lib.so+0xOFFSET' (file offset)\n"
	"when a library has no symbol there, '[unknown]' outside any mapping,\n"
	"kernel frames end in '_[k]'.\n"
	"\n"
	"examples:\n"
	"  " CLI_PROG " flame run.frec > cpu.folded\n"
	"  " CLI_PROG " flame run.frec --kind cpu --pid 4242 --format svg -o cpu.svg\n"
	"  " CLI_PROG " flame node*.frec --format html -o cpu.html\n"
	"  " CLI_PROG " flame run.frec | flamegraph.pl > cpu.svg\n"
	"  " CLI_PROG " flame run.frec --kind mem-inuse --format html -o peak.html\n"
	"  " CLI_PROG " flame run.frec --kind mem-inuse --at 42.5 > at42.folded\n"
	"  " CLI_PROG " flame run.frec --kind mem-alloc --pid 4242 | flamegraph.pl --countname bytes > alloc.svg\n";

struct flame_args {
	const char **files;
	size_t n_files;
	const char *kind;
	const char *format;
	const char *output;
	const char *at;
	int at_time;        /* --at SECONDS given: at_ns is set */
	uint64_t at_ns;
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
		} else if ((m = cli_pid_option(argc, argv, &i, "flame", &a->pid, &a->filter_pid, errout))) {
			if (m < 0)
				return CLI_USAGE;
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
	if (a->at && strcmp(a->at, "peak")) {
		char *end;
		double sec = strtod(a->at, &end);
		if (end == a->at || *end || !isfinite(sec) || sec < 0 || sec > 1e9) {
			fprintf(errout, CLI_PROG " flame: --at '%s' is neither 'peak' nor seconds from the "
				"start of the recording (e.g. --at 12.5)\n", a->at);
			return CLI_USAGE;
		}
		a->at_time = 1;
		a->at_ns = (uint64_t)(sec * 1e9 + 0.5);
	}
	return 0;
}

/* Writes tree in a->format; title and subtitle for svg/html. */
static int flame_write_tree(const struct flame_args *a, const struct flame_tree *tree,
			    const struct flame_render_opts *opts, FILE *out, FILE *errout)
{
	FILE *dst = out;
	if (a->output && strcmp(a->output, "-")) {
		dst = fopen(a->output, "w");
		if (!dst) {
			fprintf(errout, CLI_PROG ": %s: cannot create: %s\n", a->output, strerror(errno));
			return CLI_FAIL;
		}
	}
	int rc;
	if (strcmp(a->format, "svg") == 0)
		rc = flame_write_svg(tree, opts, dst);
	else if (strcmp(a->format, "html") == 0)
		rc = flame_write_html(tree, opts, dst);
	else
		rc = flame_write_folded(tree, dst);
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

/* The GPU memory graphs: model_mem, then one tree. */
static int flame_mem(const struct flame_args *a, struct trace_set *ts, FILE *out, FILE *errout)
{
	struct model_opts mo = { .filter_pid = a->filter_pid, .pid = a->pid };
	struct frec_error err = { .offset = -1 };
	void *mem = trace_set_use_model(ts, "mem", &mo);
	if (!mem || (a->at_time && model_mem_set_at(mem, ts, a->at_ns))) {
		fprintf(errout, CLI_PROG " flame: out of memory\n");
		return CLI_FAIL;
	}
	if (trace_set_run(ts, &err)) {
		cli_print_error(errout, &err);
		return CLI_FAIL;
	}
	cli_warn_troubled(ts, errout);
	const struct mem_result *r = model_mem_result(mem);
	const struct trace_file *f0 = trace_set_file(ts, 0);
	if (!r->device_allocs) {
		if (a->filter_pid && r->cuda_events)
			fprintf(errout, CLI_PROG ": %s: no CUDA allocation events of pid %u, so --kind %s "
				"has nothing to show (see '" CLI_PROG " info')\n", f0->path, a->pid, a->kind);
		else
			fprintf(errout, CLI_PROG ": %s: no CUDA allocation events in this trace, so --kind %s "
				"has nothing to show (was the cuda probe attached? see '" CLI_PROG " info'); "
				"use --kind cpu\n", f0->path, a->kind);
		return CLI_FAIL;
	}
	int alloc = strcmp(a->kind, "mem-alloc") == 0;
	const struct flame_tree *tree = alloc ? r->alloc : r->inuse;
	char title[512], subtitle[512], b1[32], who[160];
	if (a->filter_pid) {
		const struct ts_process *p = trace_file_process(f0, a->pid);
		snprintf(who, sizeof(who), "%s (pid %u)", p ? p->comm : "process", a->pid);
	} else {
		snprintf(who, sizeof(who), "%s", f0->cmdline[0] ? f0->cmdline : f0->path);
	}
	if (alloc) {
		snprintf(title, sizeof(title), "GPU bytes allocated per stack: %s, %s in total",
			 who, out_bytes(flame_tree_total(tree), b1, sizeof(b1)));
	} else if (trace_set_count(ts) > 1) {
		snprintf(title, sizeof(title), "GPU bytes in use %s%s%s: %s, %s in total",
			 a->at_time ? "at " : "at each file's peak", a->at_time ? a->at : "",
			 a->at_time ? " s" : "", who,
			 out_bytes(flame_tree_total(tree), b1, sizeof(b1)));
	} else if (a->at_time) {
		snprintf(title, sizeof(title), "GPU bytes in use at %.3f s%s: %s, %s in total",
			 (double)a->at_ns / 1e9, r->files[0].at_after_end ? " (after the last event)" : "",
			 who, out_bytes(flame_tree_total(tree), b1, sizeof(b1)));
	} else {
		snprintf(title, sizeof(title), "GPU bytes in use at the peak, %.3f s: %s, %s in total",
			 (double)r->files[0].peak_t_ns / 1e9, who,
			 out_bytes(flame_tree_total(tree), b1, sizeof(b1)));
	}
	snprintf(subtitle, sizeof(subtitle), "device memory by allocation stack; %zu file%s (%s%s)%s",
		 trace_set_count(ts), trace_set_count(ts) == 1 ? "" : "s", f0->path,
		 trace_set_count(ts) > 1 ? ", ..." : "",
		 r->before_frees ? "; frees of memory allocated before the recording are not shown" : "");
	if (r->before_frees)
		fprintf(errout, CLI_PROG ": note: %" PRIu64 " free%s of memory allocated before the "
			"recording (size unknown) %s not in the graph; see '" CLI_PROG " memory'\n",
			r->before_frees, r->before_frees == 1 ? "" : "s", r->before_frees == 1 ? "is" : "are");
	if (!flame_tree_total(tree))
		fprintf(errout, CLI_PROG ": note: no device memory in use at that instant\n");
	struct flame_render_opts opts = { .title = title, .unit = "bytes", .subtitle = subtitle };
	return flame_write_tree(a, tree, &opts, out, errout);
}

static int flame_write(const struct flame_args *a, const struct model_cpu_result *r,
		       struct trace_set *ts, FILE *out, FILE *errout)
{
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
	return flame_write_tree(a, r->tree, &opts, out, errout);
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
	struct trace_set *ts = cli_open(a.files, a.n_files, errout);
	free(a.files);
	if (!ts)
		return CLI_FAIL;
	if (strcmp(a.kind, "cpu")) {
		rc = flame_mem(&a, ts, out, errout);
		trace_set_free(ts);
		return rc;
	}
	struct model_opts mo = { .filter_pid = a.filter_pid, .pid = a.pid };
	void *cpu = trace_set_use_model(ts, "cpu", &mo);
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
	cli_warn_troubled(ts, errout);
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
