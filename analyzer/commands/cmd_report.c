/* `flightrec-analyze report`: one self-contained HTML file from one or many
 * trace files.  Parses options, asks for the models, runs the pass, hands
 * the results to out_report_write.  Not the
 * page (out_report.c, web/report.js). */
#include "cli.h"
#include "cli_jobs.h"
#include "commands.h"
#include "model_cuda.h"
#include "model_mem.h"
#include "model_rdma.h"
#include "model_stragglers.h"
#include "model_syscalls.h"
#include "out_report.h"
#include "out_report_data.h"
#include "trace_set.h"

#include <errno.h>
#include <stdlib.h>

static const char report_help[] =
	"usage: " CLI_PROG " report FILE... -o OUT.html [--jobs N]\n"
	"\n"
	"Write one self-contained HTML report (all scripts and styles inline; it\n"
	"makes no network request and opens from disk in any current browser):\n"
	"summary with drops and damage, what to fix first (as 'findings' finds\n"
	"it), CPU flame graphs per process, GPU memory, CUDA API, copies,\n"
	"stragglers, RDMA and system calls.  Sections whose data the traces lack\n"
	"say so.\n"
	"\n"
	"options:\n"
	"  -o, --output OUT.html  where to write ('-' for standard output)\n"
	CLI_JOBS_HELP
	"\n"
	"examples:\n"
	"  " CLI_PROG " report run.frec -o report.html\n"
	"  " CLI_PROG " report node*.frec -o job.html\n";

/* The in-use graphs at REPORT_SNAPSHOTS instants spread evenly over the
 * device-memory activity of the first pass: a second pass whose only
 * models are model_mem states, each frozen at one instant (the instants are
 * known only once the first pass has seen the events).  NULL *out_ts when
 * the trace has no device allocations.  The second pass opens first's
 * files again (trace_set_reopen): an archive's members are read from their
 * anonymous copies, not decompressed a second time. */
#define REPORT_SNAPSHOTS 20

static int mem_snapshots(const struct trace_set *first, const void *mem,
			 struct trace_set **out_ts, const void **snaps, size_t *n_snaps,
			 struct frec_error *err)
{
	const struct mem_result *r = model_mem_result(mem);
	uint64_t lo = UINT64_MAX, hi = 0;
	*out_ts = NULL;
	*n_snaps = 0;
	for (size_t i = 0; r && i < r->n_series; i++) {
		const struct mem_series *se = &r->series[i];
		if (se->space != MEM_SPACE_DEVICE || !se->allocs)
			continue;
		if (se->first_t_ns < lo)
			lo = se->first_t_ns;
		if (se->last_t_ns > hi)
			hi = se->last_t_ns;
	}
	if (lo == UINT64_MAX)
		return 0;
	struct trace_set *ts;
	if (trace_set_reopen(first, &ts, err))
		return -1;
	size_t n = hi > lo ? REPORT_SNAPSHOTS : 1;
	for (size_t k = 0; k < n; k++) {
		uint64_t at = n > 1 ? lo + (uint64_t)((double)(hi - lo) * (double)k / (double)(n - 1)) : lo;
		/* one state per instant: not trace_set_use_model, which shares */
		void *m = trace_set_add_model(ts, &model_mem_ops, NULL);
		if (!m || model_mem_set_at(m, ts, at)) {
			frec_error_set(err, "report", -1, ENOMEM, "out of memory");
			trace_set_free(ts);
			return -1;
		}
		snaps[k] = m;
	}
	if (trace_set_run(ts, err)) {
		trace_set_free(ts);
		return -1;
	}
	*n_snaps = n;
	*out_ts = ts;
	return 0;
}

int cmd_report(int argc, char **argv, FILE *out, FILE *errout)
{
	struct cli_file_output fo;
	unsigned jobs;
	if (cli_take_jobs(&argc, argv, "report", &jobs, errout))
		return CLI_USAGE;
	int rc = cli_parse_file_output(argc, argv, "report", report_help, "OUT.html", 0, &fo, out, errout);
	if (rc)
		return rc < 0 ? CLI_OK : rc;
	const char **files = fo.files;
	size_t n_files = fo.n_files;
	struct frec_error err = { .offset = -1 };
	struct trace_set *ts = cli_open(files, n_files, errout);
	if (!ts) {
		free(files);
		return CLI_FAIL;
	}
	trace_set_set_jobs(ts, jobs);
	struct model_opts cpu_opts = { .per_process = REPORT_MAX_PROC_TREES };
	void *cpu = trace_set_use_model(ts, "cpu", &cpu_opts);
	void *syscalls = cpu ? trace_set_use_model(ts, "syscalls", NULL) : NULL;
	void *mem = syscalls ? trace_set_use_model(ts, "mem", NULL) : NULL;
	void *cuda = mem ? trace_set_use_model(ts, "cuda", NULL) : NULL;
	void *cuda_time = cuda ? trace_set_use_model(ts, "cuda_time", NULL) : NULL;
	void *strag = cuda_time ? trace_set_use_model(ts, "stragglers", NULL) : NULL;
	void *rdma = strag ? trace_set_use_model(ts, "rdma", NULL) : NULL;
	/* reads cuda, mem, stragglers and rdma: the states above */
	void *findings = rdma ? trace_set_use_model(ts, "findings", NULL) : NULL;
	struct report_data data;
	if (!findings) {
		frec_error_set(&err, "report", -1, ENOMEM, "out of memory");
		cli_print_error(errout, &err);
		free(files);
		trace_set_free(ts);
		return CLI_FAIL;
	}
	struct trace_set *snap_ts = NULL;
	const void *snaps[REPORT_SNAPSHOTS];
	size_t n_snaps = 0;
	if (trace_set_run(ts, &err) ||
	    mem_snapshots(ts, mem, &snap_ts, snaps, &n_snaps, &err)) {
		cli_print_error(errout, &err);
		free(files);
		trace_set_free(ts);
		return CLI_FAIL;
	}
	free(files);
	cli_warn_troubled(ts, errout);
	report_data_build(&data, ts, cpu, cuda, mem);
	struct cli_dest dst;
	rc = cli_dest_open(&dst, fo.output, out, errout);
	if (rc == CLI_OK) {
		struct out_report_input in = { .ts = ts, .data = &data, .syscalls = syscalls, .mem = mem,
					       .mem_snapshots = snaps, .n_mem_snapshots = n_snaps,
					       .cuda = cuda, .cuda_time = cuda_time,
					       .stragglers = strag, .rdma = rdma,
					       .findings = findings };
		if (out_report_write(dst.f, &in, &err)) {
			fprintf(errout, CLI_PROG ": %s: write failed: %s\n", fo.output, err.what);
			rc = CLI_FAIL;
		}
		rc = cli_dest_close(&dst, rc, errout);
	}
	trace_set_free(ts);
	if (snap_ts)
		trace_set_free(snap_ts);
	return rc;
}
