/* The findings model: why the GPUs wait, what it costs, what to change.
 * It reads GPU idle from host signals (findings_idle.c states the rule and
 * its limits; findings_nccl.c how NCCL calls count), attributes each idle
 * interval to what the thread that made the device wait did meanwhile
 * (inside a collective: its exchange, or the wait for the straggler the
 * stragglers model names), and turns the idle-time causes and the
 * verdicts of the cuda, mem, stragglers and rdma models into findings
 * (findings_kinds.c: the rules, the threshold, the order CLI.md fixes).
 * Not for output: cmd_findings.c lays the result out. */
#ifndef FLIGHTREC_MODEL_FINDINGS_H
#define FLIGHTREC_MODEL_FINDINGS_H

#include <stddef.h>
#include <stdint.h>
#include "model.h"

extern const struct model_ops model_findings_ops;

/* A finding with an idle cost under this share of wall time x its
 * processes is not listed: on the stand-in, the clean run of
 * samples/train_causes leaves under 1% of residual idle (loop overhead
 * between a synchronize and the next launch), so 3% separates a cause
 * from that noise with room for a recorder's overhead.  launch_bound
 * needs no other threshold: in a healthy (GPU-bound) step the closing
 * synchronize waits longer than a launch gap, and the run is not counted
 * at all (test_analyzer_findings: the GPU-bound run).  nccl_exchange keeps
 * it too: a healthy job's collectives take about 1% of its steps (the
 * stand-in's 4 MiB all-reduce at 10 GB/s in a 40-100 ms step; the unit
 * test's healthy job 1.9%), an exposed exchange worth overlapping tens of
 * percent. */
#define FINDINGS_MIN_SHARE 0.03

enum finding_kind {
	FIND_DATALOADER,
	FIND_PAGEABLE_COPY,
	FIND_SYNC_CHECKPOINT,
	FIND_HOST_SYNC,
	FIND_LAUNCH_BOUND,
	FIND_NCCL_EXCHANGE,        /* a collective's exchange after its last rank entered */
	FIND_STRAGGLER,            /* the wait for the straggler, as the stragglers model charges it */
	FIND_IDLE_KINDS,           /* the kinds above are costed in idle time */
	FIND_OOM = FIND_IDLE_KINDS,
	FIND_MEMORY_LEAK,
	FIND_RDMA_ERRORS,
	FIND_KINDS,
};
const char *finding_kind_name(enum finding_kind k);

struct finding {
	enum finding_kind kind;
	int has_cost;              /* 0: cost_ms null (no idle cost) */
	double cost_ms;            /* summed over pids */
	double cost_ms_per_step;
	double share;              /* cost_ms / (wall_ms x n_pids) */
	uint32_t *pids;
	int32_t *ranks;            /* -1 unknown, one per pid */
	size_t n_pids;
	const char **where;        /* root first, names interned by the set's symbolizer */
	size_t n_where;
	char evidence[768];
	char fix[512];
};

/* One GPU-idle interval of a process and where its time went (the same
 * attribution as the process's totals: findings_idle.c).  Times are the
 * file's CLOCK_MONOTONIC ns (add out_clock_offset_ns for the common
 * clock).  kind_ns[] and unexplained_ns add up to end_ns - start_ns -
 * busy_ns (give or take the clock rounding between probes). */
struct findings_idle_interval {
	uint64_t start_ns, end_ns;
	uint64_t busy_ns;          /* kernel records' time inside it (0 without them) */
	uint64_t kind_ns[FIND_IDLE_KINDS];
	uint64_t unexplained_ns;
};

/* The cause that holds most of an interval's time: a kind below
 * FIND_IDLE_KINDS, or FIND_KINDS for the unexplained part (ties go to
 * the kind, the first in enum order). */
enum finding_kind findings_idle_cause(const struct findings_idle_interval *iv);

/* GPU idle of one process (file, pid) that made CUDA calls. */
struct findings_proc {
	uint32_t file, pid;
	int32_t rank;              /* -1 unknown */
	char host[64];             /* its file's node name (pids repeat across nodes) */
	uint64_t intervals;        /* idle intervals */
	double idle_ms;
	double kind_ms[FIND_IDLE_KINDS]; /* attributed, listed or not */
	double unexplained_ms;     /* idle_ms minus every kind_ms */
	size_t steps;
	const char *steps_from;    /* "marker", "collective_period", "sync_period", "none" */
	uint32_t streams;          /* distinct (device, stream) its launches and async
				      copies went to */
	uint32_t devices;          /* distinct devices of its CUDA calls (-1, unknown, is one) */
	/* Where its GPU time came from: "kernels" (the CUPTI records of a job
	 * recorded with --gpu-kernels: idle_ms is the host-signal intervals
	 * less the kernel time inside them, a measurement) or "host_signals"
	 * (idle_ms is an upper bound: a kernel may run on after the host
	 * signal that opened an interval says the device is empty, and in a
	 * launch-bound run's gaps). */
	const char *gpu_time_from;
	uint64_t gpu_kernels;      /* its kernel records */
	double gpu_busy_ms;        /* their merged spans */
	double busy_in_idle_ms;    /* of which inside the host-signal intervals (taken off idle_ms) */
	/* its idle intervals in time order (intervals of them), owned by the
	 * model: for outputs that draw them (the timeline), which ask for
	 * them with model_opts.idle_intervals; none (NULL, 0) otherwise */
	const struct findings_idle_interval *idle;
	size_t n_idle;
};

struct findings_not_evaluated {
	const char *kind;
	char why[256];
};
#define FINDINGS_MAX_NOT_EVALUATED 12

struct findings_result {
	size_t steps;              /* the steps of the process with the most idle */
	const char *steps_from;
	double step_ms;            /* the median time between its step boundaries;
				      0: not known (collective_period, one step) */
	double step_regular;       /* the share of its steps within 25% of step_ms */
	const char *step_site;     /* sync_period: the CUDA function whose return
				      marks a step; NULL otherwise */
	double wall_ms;            /* the longest span of one file's events */
	double min_share;          /* FINDINGS_MIN_SHARE */
	struct findings_proc *procs; /* by file, pid */
	size_t n_procs;
	struct finding *findings;  /* CLI.md's order; above the threshold only */
	size_t n_findings;
	struct finding *below;     /* costed kinds found under the threshold */
	size_t n_below;
	struct findings_not_evaluated not_evaluated[FINDINGS_MAX_NOT_EVALUATED];
	size_t n_not_evaluated;
};

const struct findings_result *model_findings_result(const void *state);

#endif
