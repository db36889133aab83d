/* `flightrec-analyze flame`: a flame graph of one kind from one or many
 * traces, as folded stacks (flamegraph.pl, speedscope), SVG, HTML, pprof
 * or speedscope JSON.  Not the models (model_cpu.c, model_mem.c,
 * model_call_time.c) nor the output (out_flame.c): this file parses
 * options, asks the models and hands their results to the writer. */
#include "cli.h"
#include "commands.h"
#include "model_call_time.h"
#include "model_cpu.h"
#include "model_gpu.h"
#include "model_mem.h"
#include "out_flame.h"
#include "trace_set.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char flame_help[] =
	"usage: " CLI_PROG " flame FILE... [--kind cpu|mem-inuse|mem-alloc|cuda|gpu|syscalls|offcpu]\n"
	"                         [--at peak|SECONDS] [--pid PID] [--hide-interpreter]\n"
	"                         [--format folded|svg|html|pprof|speedscope] [-o OUT]\n"
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
	"                     cuda       nanoseconds in CUDA API calls per stack, the\n"
	"                                call as the leaf, each call without the\n"
	"                                calls nested in it; kernel launches carry a\n"
	"                                stack one in 64 (the recorder's\n"
	"                                --launch-stack-every), the others count\n"
	"                                under [no stack]\n"
	"                     gpu        nanoseconds kernels ran on the GPU per\n"
	"                                launch stack, the kernel as the leaf (CUPTI\n"
	"                                records: a job recorded with --gpu-kernels);\n"
	"                                every launch carries its stack, cut after\n"
	"                                the launch call (cudaLaunchKernel ...)\n"
	"                     syscalls   nanoseconds in system calls per stack, the\n"
	"                                call as the leaf ('[syscall] read'): the\n"
	"                                calls the recorder kept (--syscall-min-us);\n"
	"                                in dwarf stack mode a call shorter than 1 ms\n"
	"                                takes a stack one in 64, the others count\n"
	"                                under [no stack]\n"
	"                     offcpu     nanoseconds blocked off CPU per stack (probe\n"
	"                                sched): each system call in which a thread\n"
	"                                waited --sched-min-us or more in all, the\n"
	"                                call as the leaf ('[off-cpu] read'), the\n"
	"                                time off CPU, not the call's whole duration\n"
	"  --pid PID        only samples of process PID\n"
	"  --hide-interpreter  leave out CPython's own frames between two Python\n"
	"                   frames (_PyEval_*, *vectorcall*, PyObject_Call ...), as\n"
	"                   py-spy shows stacks; native frames of other code stay\n"
	"  --format FMT     folded (default): one line per stack, root first,\n"
	"                   frames joined by ';', a space, the value (samples for\n"
	"                   cpu, bytes for mem-*, nanoseconds for the others);\n"
	"                   svg: interactive standalone SVG; html: a page holding it;\n"
	"                   pprof: gzip'd profile.proto for go tool pprof, Pyroscope,\n"
	"                   Parca (samples labelled pid, thread, process, rank, host,\n"
	"                   and container_id, pod_uid, slurm_job ... where known;\n"
	"                   cpu time is samples x 1/--freq of the recording);\n"
	"                   speedscope: speedscope's JSON, one profile per process\n"
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
	"  " CLI_PROG " flame run.frec --format pprof -o cpu.pb.gz && go tool pprof -top cpu.pb.gz\n"
	"  " CLI_PROG " flame run.frec --kind cuda --format speedscope -o cuda.speedscope.json\n"
	"  " CLI_PROG " flame run.frec --kind offcpu --format svg -o blocked.svg\n"
	"  " CLI_PROG " flame run.frec --kind gpu --format html -o gpu.html\n"
	"  " CLI_PROG " flame run.frec --kind mem-inuse --format html -o peak.html\n"
	"  " CLI_PROG " flame run.frec --kind mem-inuse --at 42.5 > at42.folded\n"
	"  " CLI_PROG " flame run.frec --kind mem-alloc --pid 4242 | flamegraph.pl --countname bytes > alloc.svg\n";

struct flame_args {
	const char **files;
	size_t n_files;
	struct flame_request q;
};

static const char *const flame_kinds[] = { "cpu", "mem-inuse", "mem-alloc", "cuda", "gpu", "syscalls",
					    "offcpu", NULL };
static const char *const flame_formats[] = { "folded", "svg", "html", "pprof", "speedscope", NULL };

static int one_of(const char *v, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (strcmp(v, list[i]) == 0)
			return 1;
	return 0;
}

/* 0, CLI_USAGE after printing why, or -1 for --help (printed). */
static int flame_parse(int argc, char **argv, struct flame_args *a, FILE *out, FILE *errout)
{
	struct flame_request *q = &a->q;
	int only_files = 0;
	q->kind = "cpu";
	q->format = "folded";
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
		} else if (strcmp(arg, "--hide-interpreter") == 0) {
			q->hide_interpreter = 1;
		} else if ((m = cli_option(argc, argv, &i, "--kind", NULL, &value, "flame", errout))) {
			if (m < 0)
				return CLI_USAGE;
			q->kind = value;
		} else if ((m = cli_option(argc, argv, &i, "--format", NULL, &value, "flame", errout))) {
			if (m < 0)
				return CLI_USAGE;
			q->format = value;
		} else if ((m = cli_option(argc, argv, &i, "--output", "-o", &value, "flame", errout))) {
			if (m < 0)
				return CLI_USAGE;
			q->output = value;
		} else if ((m = cli_option(argc, argv, &i, "--at", NULL, &value, "flame", errout))) {
			if (m < 0)
				return CLI_USAGE;
			q->at = value;
		} else if ((m = cli_pid_option(argc, argv, &i, "flame", &q->pid, &q->filter_pid, errout))) {
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
	if (!one_of(q->kind, flame_kinds)) {
		fprintf(errout, CLI_PROG " flame: unknown --kind '%s' (expected cpu, mem-inuse, mem-alloc, "
			"cuda, gpu, syscalls or offcpu)\n", q->kind);
		return CLI_USAGE;
	}
	if (!one_of(q->format, flame_formats)) {
		fprintf(errout, CLI_PROG " flame: unknown --format '%s' (expected folded, svg, html, "
			"pprof or speedscope)\n", q->format);
		return CLI_USAGE;
	}
	if (q->at && strcmp(q->kind, "mem-inuse")) {
		fprintf(errout, CLI_PROG " flame: --at applies to --kind mem-inuse only\n");
		return CLI_USAGE;
	}
	if (q->at && strcmp(q->at, "peak")) {
		char *end;
		double sec = strtod(q->at, &end);
		if (end == q->at || *end || !isfinite(sec) || sec < 0 || sec > 1e9) {
			fprintf(errout, CLI_PROG " flame: --at '%s' is neither 'peak' nor seconds from the "
				"start of the recording (e.g. --at 12.5)\n", q->at);
			return CLI_USAGE;
		}
		q->at_time = 1;
		q->at_ns = (uint64_t)(sec * 1e9 + 0.5);
	}
	return 0;
}

/* The model's state after the pass, or NULL after saying why. */
static void *flame_run(struct trace_set *ts, const char *model, const struct flame_request *q,
		       FILE *errout)
{
	struct model_opts mo = { .filter_pid = q->filter_pid, .pid = q->pid,
				 .profile = out_flame_wants_profile(q->format) };
	struct frec_error err = { .offset = -1 };
	void *state = trace_set_use_model(ts, model, &mo);
	if (!state || (q->at_time && model_mem_set_at(state, ts, q->at_ns))) {
		fprintf(errout, CLI_PROG " flame: out of memory\n");
		return NULL;
	}
	if (trace_set_run(ts, &err)) {
		cli_print_error(errout, &err);
		return NULL;
	}
	cli_warn_troubled(ts, errout);
	return state;
}

/* The GPU memory graphs. */
static int flame_mem(const struct flame_request *q, struct trace_set *ts, FILE *out, FILE *errout)
{
	void *mem = flame_run(ts, "mem", q, errout);
	if (!mem)
		return CLI_FAIL;
	const struct mem_result *r = model_mem_result(mem);
	const struct trace_file *f0 = trace_set_file(ts, 0);
	if (!r->device_allocs) {
		if (q->filter_pid && r->cuda_events)
			fprintf(errout, CLI_PROG ": %s: no CUDA allocation events of pid %u, so --kind %s "
				"has nothing to show (see '" CLI_PROG " info')\n", f0->path, q->pid, q->kind);
		else
			fprintf(errout, CLI_PROG ": %s: no CUDA allocation events in this trace, so --kind %s "
				"has nothing to show (was the cuda probe attached? see '" CLI_PROG " info'); "
				"use --kind cpu\n", f0->path, q->kind);
		return CLI_FAIL;
	}
	return out_flame_mem(q, r, ts, out, errout) ? CLI_FAIL : CLI_OK;
}

/* Kernel time on the GPU by launch stack. */
static int flame_gpu(const struct flame_request *q, struct trace_set *ts, FILE *out, FILE *errout)
{
	void *state = flame_run(ts, "gpu", q, errout);
	if (!state)
		return CLI_FAIL;
	const struct gpu_result *r = model_gpu_result(state);
	if (!r->kernels) {
		char of_pid[32] = "";
		if (q->filter_pid)
			snprintf(of_pid, sizeof(of_pid), " of pid %u", q->pid);
		fprintf(errout, CLI_PROG ": %s: no GPU kernel records%s in this trace, so --kind gpu "
			"has nothing to show: kernel times need the job started by 'flightrec record "
			"--gpu-kernels -- COMMAND' (or with CUDA_INJECTION64_PATH naming "
			"libflightrec_cupti.so); --kind cuda shows host time in CUDA calls\n",
			trace_set_file(ts, 0)->path, of_pid);
		return CLI_FAIL;
	}
	return out_flame_calls(q, &r->flame, ts, out, errout) ? CLI_FAIL : CLI_OK;
}

/* Time in CUDA API calls, in system calls, or blocked in them. */
static int flame_calls(const struct flame_request *q, struct trace_set *ts, FILE *out, FILE *errout)
{
	int cuda = strcmp(q->kind, "cuda") == 0, offcpu = strcmp(q->kind, "offcpu") == 0;
	void *state = flame_run(ts, cuda ? "cuda_time" : offcpu ? "offcpu_time" : "syscall_time",
				q, errout);
	if (!state)
		return CLI_FAIL;
	const struct call_time_result *r = model_call_time_result(state);
	if (!r->calls) {
		char of_pid[32] = "";
		if (q->filter_pid)
			snprintf(of_pid, sizeof(of_pid), " of pid %u", q->pid);
		fprintf(errout, CLI_PROG ": %s: no %s events%s in this trace, so --kind %s has "
			"nothing to show (was the %s probe attached? see '" CLI_PROG " info')\n",
			trace_set_file(ts, 0)->path, cuda ? "CUDA" : offcpu ? "off-CPU" : "system call",
			of_pid, q->kind, cuda ? "cuda" : offcpu ? "sched" : "syscalls");
		return CLI_FAIL;
	}
	return out_flame_calls(q, r, ts, out, errout) ? CLI_FAIL : CLI_OK;
}

static int flame_cpu(const struct flame_request *q, struct trace_set *ts, FILE *out, FILE *errout)
{
	void *cpu = flame_run(ts, "cpu", q, errout);
	if (!cpu)
		return CLI_FAIL;
	const struct model_cpu_result *r = model_cpu_result(cpu);
	const char *first_path = trace_set_file(ts, 0)->path;
	if (!r->samples_kept) {
		if (q->filter_pid && r->samples)
			fprintf(errout, CLI_PROG ": %s: no CPU samples of pid %u (%" PRIu64
				" samples of other processes; see '" CLI_PROG " info')\n",
				first_path, q->pid, r->samples);
		else
			fprintf(errout, CLI_PROG ": %s: no CPU samples in this trace "
				"(was the cpu probe attached? see '" CLI_PROG " info')\n", first_path);
		return CLI_FAIL;
	}
	if (r->samples_missing_stack)
		fprintf(errout, CLI_PROG ": warning: %" PRIu64 " sample%s name stack ids their trace "
			"does not define; counted as [missing stack]\n", r->samples_missing_stack,
			r->samples_missing_stack == 1 ? "" : "s");
	return out_flame_cpu(q, r, ts, out, errout) ? CLI_FAIL : CLI_OK;
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
	struct trace_set *ts = cli_open(a.files, a.n_files, errout);
	free(a.files);
	if (!ts)
		return CLI_FAIL;
	if (strncmp(a.q.kind, "mem-", 4) == 0)
		rc = flame_mem(&a.q, ts, out, errout);
	else if (strcmp(a.q.kind, "cpu") == 0)
		rc = flame_cpu(&a.q, ts, out, errout);
	else if (strcmp(a.q.kind, "gpu") == 0)
		rc = flame_gpu(&a.q, ts, out, errout);
	else
		rc = flame_calls(&a.q, ts, out, errout);
	trace_set_free(ts);
	return rc;
}
