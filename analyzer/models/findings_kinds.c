/* The findings: each kind's rule, cost, evidence and fix, the threshold
 * and the order of /work/shared/CLI.md.  Not the idle analysis
 * (findings_idle.c) nor output (cmd_findings.c).
 *
 *   dataloader, pageable_copy, sync_checkpoint, host_sync, launch_bound,
 *   nccl_exchange idle time findings_idle.c attributed to them (its rules,
 *                 launch_bound's included; nccl_exchange: the collectives'
 *                 transfer after their last rank entered, findings_nccl.c);
 *                 a process is named when the kind takes >= 1% of its wall
 *                 time (all that have it when none does: a thin exchange
 *                 on every rank)
 *   straggler     the stragglers model's verdict, costed as the GPU idle
 *                 findings_idle.c charged to it: on each other rank, its
 *                 lead over the second latest rank in every collective it
 *                 was latest in since the change point (charged_lost_ns),
 *                 where that wait lay in the rank's idle; so it is never
 *                 also counted as nccl_exchange or anything else, and per
 *                 step it is the model's cost_ms_per_step x the ranks
 *   oom           failed device allocations (model_mem)
 *   memory_leak   one stack holds at the end at least max(2, steps / 2)
 *                 device allocations it made (8 when the steps are
 *                 unknown): memory that grows with the steps (model_mem)
 *   rdma_errors   error completions, flushes excluded (model_rdma)
 * The last three have no idle cost (cost_ms null).  small_batch is never
 * evaluated (list_not_evaluated says why).  Findings with a cost come
 * first, most costly first, those under FINDINGS_MIN_SHARE are kept apart
 * (`below`); then oom, rdma_errors, memory_leak (most severe first).  The
 * threshold holds for every costed kind alike; launch_bound stays at 0 in
 * a healthy run because a GPU-bound step's closing synchronize waits
 * longer than a launch gap, and a healthy job's collectives move their
 * bytes in a small part of the step (samples/nccl_train's 4 MiB at the
 * stand-in's default 10 GB/s: 0.4 ms of a 40-100 ms step, ~1%).
 * Steps: step markers, else the NCCL collective period (stragglers
 * model), else the period of the synchronizing calls, else 1 (the whole
 * run, said as steps_from "none"). */
#include "findings_private.h"
#include "grow.h"
#include "cuda_funcs.h"
#include "model_cuda.h"
#include "model_mem.h"
#include "model_rdma.h"
#include "model_stragglers.h"
#include "symbolize.h"
#include "trace_set.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROC_MIN_SHARE 0.01

const char *finding_kind_name(enum finding_kind k)
{
	static const char *const names[FIND_KINDS] = {
		"dataloader", "pageable_copy", "sync_checkpoint", "host_sync", "launch_bound",
		"nccl_exchange", "straggler", "oom", "memory_leak", "rdma_errors",
	};
	return (unsigned)k < FIND_KINDS ? names[k] : "?";
}

static const char *const fixes[FIND_KINDS] = {
	[FIND_DATALOADER] =
		"load and decode input off the training thread: DataLoader(num_workers>0, "
		"pin_memory=True, prefetch_factor>=2, persistent_workers=True); if the workers "
		"cannot keep up, decode on the GPU (DALI, nvJPEG) or store input pre-decoded",
	[FIND_PAGEABLE_COPY] =
		"copy from pinned host memory: allocate the buffer with cudaMallocHost/cudaHostAlloc "
		"or cudaHostRegister it (PyTorch: pin_memory=True, tensor.pin_memory()), and use "
		"cudaMemcpyAsync / .to(device, non_blocking=True) so the copy overlaps compute",
	[FIND_SYNC_CHECKPOINT] =
		"save checkpoints off the critical path: copy the state to pinned host memory and "
		"write it from a background thread or process "
		"(torch.distributed.checkpoint.async_save), or save less often",
	[FIND_HOST_SYNC] =
		"remove synchronizing calls from the step: keep values on the GPU (no .item(), "
		".cpu(), .tolist() or printing tensors each step; read metrics every N steps), "
		"and order work with events (cudaEventRecord/cudaStreamWaitEvent) instead of "
		"stream or device synchronizes",
	[FIND_LAUNCH_BOUND] =
		"issue fewer, larger kernels: capture the step in a CUDA graph "
		"(torch.compile(mode=\"reduce-overhead\") or torch.cuda.CUDAGraph), fuse small ops "
		"(torch.compile; fused/foreach optimizers: Adam(fused=True)), or give each kernel "
		"more work (a larger batch per step)",
	[FIND_NCCL_EXCHANGE] =
		"overlap communication with computation: all-reduce gradient buckets while backward "
		"still runs (DDP does; a larger bucket_cap_mb for fewer, fuller buckets), with "
		"gradient accumulation reduce once per optimizer step (no_sync() on the other "
		"micro-steps), issue other collectives with async_op=True and wait where the result "
		"is needed; if it still shows, move fewer bytes (bf16 gradients, compression hooks) "
		"and check the interconnect (NCCL_DEBUG=INFO transport, nccl-tests bus bandwidth)",
	[FIND_STRAGGLER] =
		"make the slow rank as fast as the others: balance its input and work, and check "
		"its node (CPU contention, throttling, its NIC and links) with the evidence above",
	[FIND_OOM] =
		"lower peak device memory: a smaller batch, activation checkpointing, freeing "
		"what the top holders keep; against fragmentation "
		"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
	[FIND_MEMORY_LEAK] =
		"free what this stack allocates every step: a cache or list that keeps tensors "
		"(or their graphs: store .detach() or .item() values) must be bounded or cleared",
	[FIND_RDMA_ERRORS] =
		"check the fabric and the peers: retry-exceeded and remote-access errors mean a "
		"lost path or a peer's queue pair gone (ibv_devinfo, port counters, the peer's log)",
};

/* snprintf that appends to buf. */
static void appendf(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = strlen(buf);
	if (used + 1 >= len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
}

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

/* "1.2 MiB", "512 B" */
static const char *bytes_str(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	size_t u = 0;
	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, units[u]);
	return buf;
}

/* ---- result storage ---------------------------------------------------------- */

static struct finding *new_finding(struct fx_state *m, enum finding_kind k)
{
	struct findings_result *r = &m->result;
	struct finding *grown = realloc(r->findings, (r->n_findings + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	r->findings = grown;
	struct finding *f = &grown[r->n_findings++];
	memset(f, 0, sizeof(*f));
	f->kind = k;
	hmap_free(&m->listed);
	hmap_init(&m->listed);
	m->listed_cap_pids = m->listed_cap_ranks = 0;
	snprintf(f->fix, sizeof(f->fix), "%s", fixes[k]);
	return f;
}

/* f, the finding new_finding made last, lists process pid of file (once). */
static int add_pid(struct fx_state *m, struct finding *f, uint32_t file, uint32_t pid,
		   int32_t rank)
{
	int created;
	uint64_t *slot = hmap_slot(&m->listed, file, pid, &created);
	if (!slot)
		return -1;
	if (!created)
		return 0;
	void *pids = f->pids, *ranks = f->ranks;
	if (grow_array(&pids, &m->listed_cap_pids, f->n_pids + 1, sizeof(*f->pids), 8))
		return -1;
	f->pids = pids;
	if (grow_array(&ranks, &m->listed_cap_ranks, f->n_pids + 1, sizeof(*f->ranks), 8))
		return -1;
	f->ranks = ranks;
	f->pids[f->n_pids] = pid;
	f->ranks[f->n_pids++] = rank;
	return 0;
}

static void free_finding(struct finding *f)
{
	free(f->pids);
	free(f->ranks);
	free(f->where);
}

void fx_result_free(struct findings_result *r)
{
	for (size_t i = 0; i < r->n_findings; i++)
		free_finding(&r->findings[i]);
	for (size_t i = 0; i < r->n_below; i++)
		free_finding(&r->below[i]);
	free(r->findings);
	free(r->below);
	free(r->procs);
}

static int32_t rank_of(struct trace_set *ts, uint32_t file, uint32_t pid)
{
	const struct trace_file *f = trace_set_file(ts, file);
	const struct ts_process *p = f ? trace_file_process(f, pid) : NULL;
	return p ? p->rank : -1;
}

/* ---- where: the heaviest culprit stack --------------------------------------- */

struct where_acc {
	const char **frames;
	size_t n;
	uint64_t ns;
	int real;       /* a stack, not "[no stack]" (short calls carry none in dwarf mode) */
};

/* The frames of one where entry, trimmed or with its CUDA leaf; a copy the
 * caller frees.  NULL when memory runs out. */
static const char **entry_frames(struct symbolizer *sym, struct trace_set *ts, uint32_t file,
				 enum finding_kind k, int trim, uint64_t key_b, size_t *n_out,
				 int *real)
{
	const struct trace_file *f = trace_set_file(ts, file);
	const char **frames = NULL;
	enum stack_found found = STACK_NONE;
	size_t cap = 0, n = f ? symbolize_frames(sym, f, file, (uint32_t)key_b, &frames, &cap, &found)
				  : SIZE_MAX;
	*real = found == STACK_FRAMES;
	if (n == SIZE_MAX) {
		free(frames);
		return NULL;
	}
	uint16_t leaf = (uint16_t)(key_b >> 32);
	if (trim) {
		size_t at = fx_frame_match(frames, n, k);
		if (at != SIZE_MAX)
			n = at + 1;
	} else if (leaf) {
		/* the call the stack made: its frame is not in the stack its probe takes */
		const char *name = leaf & FX_LEAF_NCCL ? nccl_func_name((uint16_t)(leaf & ~FX_LEAF_NCCL))
						       : cuda_func_name(leaf);
		const char **grown = name ? realloc(frames, (n + 1) * sizeof(*grown)) : frames;
		if (!grown) {
			free(frames);
			return NULL;
		}
		frames = grown;
		if (name)
			frames[n++] = name;
	}
	*n_out = n;
	return frames;
}

/* out: the finding new_finding made last */
static int pick_where(struct fx_state *m, struct trace_set *ts, struct symbolizer *sym,
		      enum finding_kind k, struct finding *out)
{
	struct where_acc *acc = NULL;
	size_t n_acc = 0;
	int rc = 0;
	for (size_t i = 0; i < m->n_procs && !rc; i++) {
		const struct fx_proc *p = &m->procs[i];
		uint64_t listed;
		if (!hmap_get(&m->listed, p->file, p->pid, &listed))
			continue; /* not among out's (add_pid) */
		for (size_t s = 0; s < p->where.cap && !rc; s++) {
			const struct hmap_slot *slot = &p->where.slots[s];
			if (!slot->used || (slot->key_a >> 8) != (uint64_t)k)
				continue;
			size_t n;
			int real;
			const char **frames = entry_frames(sym, ts, p->file, k, (int)(slot->key_a & 1),
							   slot->key_b, &n, &real);
			if (!frames) {
				rc = -1;
				break;
			}
			size_t a = 0;
			while (a < n_acc && (acc[a].n != n ||
					     memcmp(acc[a].frames, frames, n * sizeof(*frames))))
				a++;
			if (a < n_acc) {
				acc[a].ns += slot->value;
				free(frames);
				continue;
			}
			struct where_acc *grown = realloc(acc, (n_acc + 1) * sizeof(*grown));
			if (!grown) {
				free(frames);
				rc = -1;
				break;
			}
			acc = grown;
			acc[n_acc++] = (struct where_acc){ frames, n, slot->value, real };
		}
	}
	size_t best = SIZE_MAX; /* the heaviest stack; "[no stack]" only when there is no other */
	for (size_t a = 0; a < n_acc; a++)
		if (best == SIZE_MAX || acc[a].real > acc[best].real ||
		    (acc[a].real == acc[best].real && acc[a].ns > acc[best].ns))
			best = a;
	if (!rc && best != SIZE_MAX) {
		out->where = acc[best].frames;
		out->n_where = acc[best].n;
		acc[best].frames = NULL;
	}
	for (size_t a = 0; a < n_acc; a++)
		free(acc[a].frames);
	free(acc);
	return rc;
}

/* ---- the idle kinds ----------------------------------------------------------- */

static void sum_evidence(struct fx_evidence *sum, const struct fx_evidence *e)
{
	_Static_assert(sizeof(struct fx_evidence) % sizeof(uint64_t) == 0, "fx_evidence: u64 only");
	uint64_t hs_max = sum->hs_max_ns > e->hs_max_ns ? sum->hs_max_ns : e->hs_max_ns;
	uint64_t *d = (uint64_t *)sum;
	const uint64_t *s = (const uint64_t *)e;
	for (size_t i = 0; i < sizeof(*e) / sizeof(uint64_t); i++)
		d[i] += s[i];
	sum->hs_max_ns = hs_max; /* the longest over the processes, not a sum */
}

/* The checkpoint files the processes of a finding wrote, up to three. */
struct ck_names {
	const char *files[3];
	size_t n;
};

static void add_ck_names(struct ck_names *c, const struct fx_proc *p)
{
	for (size_t i = 0; i < p->n_ck_files; i++) {
		size_t k = 0;
		while (k < c->n && strcmp(c->files[k], p->ck_files[i]))
			k++;
		if (k == c->n && c->n < sizeof(c->files) / sizeof(c->files[0]))
			c->files[c->n++] = p->ck_files[i];
	}
}

static void idle_evidence(struct finding *f, const struct fx_evidence *e, size_t steps,
			  const struct ck_names *ck)
{
	char b1[32], b2[32];
	switch (f->kind) {
	case FIND_DATALOADER:
		snprintf(f->evidence, sizeof(f->evidence),
			 "while the GPU had no work the training thread read input %" PRIu64
			 " times (%s, %.1f ms), waited on futexes %" PRIu64 " times (%.1f ms) and ran "
			 "loader code for %.1f ms (%" PRIu64 " CPU samples in *load*/*decode*/"
			 "*collate*/__next__ functions)",
			 e->dl_reads, bytes_str(e->dl_read_bytes, b1, sizeof(b1)), ms(e->dl_read_ns),
			 e->dl_futex, ms(e->dl_futex_ns), ms(e->dl_cpu_ns), e->dl_samples);
		if (e->dl_unsampled_ns)
			appendf(f->evidence, sizeof(f->evidence), "; %.1f ms more around those calls "
				"in intervals without a CPU sample (the thread descheduled, or between "
				"calls)", ms(e->dl_unsampled_ns));
		break;
	case FIND_PAGEABLE_COPY:
		snprintf(f->evidence, sizeof(f->evidence),
			 "%" PRIu64 " copies from pageable host memory (%" PRIu64 " synchronous) "
			 "while the GPU had no work: %s, %.1f ms; pinned memory moves ~3x faster and "
			 "lets the copy overlap compute",
			 e->pg_copies, e->pg_sync, bytes_str(e->pg_bytes, b1, sizeof(b1)),
			 ms(f->has_cost ? (uint64_t)(f->cost_ms * 1e6) : 0));
		break;
	case FIND_SYNC_CHECKPOINT: {
		char files[200] = "";
		size_t at = 0;
		for (size_t i = 0; i < ck->n && at < sizeof(files); i++)
			at += (size_t)snprintf(files + at, sizeof(files) - at, "%s%s", i ? ", " : "",
					       ck->files[i] ? ck->files[i] : "");
		snprintf(f->evidence, sizeof(f->evidence),
			 "%" PRIu64 " saves on the training thread while the GPU had no work: %" PRIu64
			 " writes (%s, %.1f ms), %" PRIu64 " fsync/fdatasync (%.1f ms), open, close and "
			 "rename of those files %.1f ms, %.1f ms between those calls, %.1f ms on CPU in "
			 "*save*/*checkpoint* code; %s%s",
			 e->ck_saves, e->ck_writes, bytes_str(e->ck_write_bytes, b2, sizeof(b2)),
			 ms(e->ck_write_ns), e->ck_fsyncs, ms(e->ck_fsync_ns), ms(e->ck_openclose_ns),
			 ms(e->ck_between_ns), ms(e->ck_cpu_ns), ck->n ? "written to " : "the files are not named "
			 "(no open() of them recorded: the syscalls probe records each open's file), so a "
			 "checkpoint is told by large writes made durable (>= 1 MiB then fsync, or "
			 ">= 16 MiB to one descriptor)", files);
		break;
	}
	case FIND_HOST_SYNC:
		snprintf(f->evidence, sizeof(f->evidence),
			 "%" PRIu64 " gaps between a synchronize's return and the next launch with only "
			 "the host's own work on the thread (%.1f per step, %.3f ms on average, "
			 "longest %.3f ms)",
			 e->hs_gaps, steps ? (double)e->hs_gaps / (double)steps : 0.0,
			 e->hs_gaps ? ms(e->hs_ns) / (double)e->hs_gaps : 0.0, ms(e->hs_max_ns));
		if (e->hs_copy_gaps)
			appendf(f->evidence, sizeof(f->evidence), "; %" PRIu64 " of them (%.1f per "
				"step, %.1f ms) after a synchronous copy to the host of %" PRIu64
				" bytes on average: a value read back each time, as .item() does",
				e->hs_copy_gaps, steps ? (double)e->hs_copy_gaps / (double)steps : 0.0,
				ms(e->hs_copy_ns), e->hs_copy_bytes / e->hs_copy_gaps);
		break;
	case FIND_LAUNCH_BOUND: {
		double runs = e->lb_steps ? (double)e->lb_steps : 1.0;
		snprintf(f->evidence, sizeof(f->evidence),
			 "%" PRIu64 " runs of launches paced by the host: %s %.3f ms on average%s, "
			 "less than the median time between launches; %.0f "
			 "launches per run, %.3f ms apart on average (the launch calls %.1f us each), "
			 "while each run's last kernel ran within %.3f ms; %" PRIu64 " gaps left the GPU "
			 "idle (%.2f ms) %s",
			 e->lb_steps,
			 e->lb_measured ? "their closing synchronize found kernel work left for"
					: "their closing synchronize waited",
			 ms(e->lb_measured ? e->lb_left_ns : e->lb_wait_ns) / runs,
			 e->lb_measured ? " (the kernel records)" : "",
			 (double)e->lb_launches / runs,
			 e->lb_launches > e->lb_steps
				 ? ms(e->lb_span_ns) / (double)(e->lb_launches - e->lb_steps) : 0.0,
			 e->lb_launches ? ms(e->lb_launch_ns) * 1e3 / (double)e->lb_launches : 0.0,
			 ms(e->lb_bound_ns) / runs, e->lb_gaps, ms(e->lb_gap_ns),
			 e->lb_measured && e->lb_measured == e->lb_gaps ? "as the kernel records measured (the gaps less the kernels' "
					  "time in them)" :
					  "if no kernel ran longer than that (kernel times are not "
					  "recorded: 'flightrec record --gpu-kernels' measures them)");
		if (e->lb_mixed)
			appendf(f->evidence, sizeof(f->evidence), "; %" PRIu64 " runs of as many launches "
				"not read (several streams, a graph launch, or a synchronize of another "
				"stream or of an event)", e->lb_mixed);
		break;
	}
	case FIND_NCCL_EXCHANGE: {
		double gbps = e->nc_xfer_ns ? (double)e->nc_xfer_bytes / (double)e->nc_xfer_ns : 0;
		snprintf(f->evidence, sizeof(f->evidence),
			 "%" PRIu64 " NCCL calls while the GPU had no other work; after the last rank "
			 "entered each, moving the data took %.1f ms (%.3f ms per collective on average, "
			 "%s each: %.2f GB/s algorithm bandwidth), on the critical path: nothing "
			 "computed meanwhile",
			 e->nc_calls, ms(e->nc_exchange_ns),
			 e->nc_xfer_calls ? ms(e->nc_exchange_ns) / (double)e->nc_xfer_calls : 0.0,
			 bytes_str(e->nc_xfer_calls ? e->nc_xfer_bytes / e->nc_xfer_calls : 0, b1,
				   sizeof(b1)), gbps);
		appendf(f->evidence, sizeof(f->evidence), "; before that the ranks waited %.1f ms for "
			"the last to enter (%.1f ms of it for the straggler: its own finding; %.1f ms "
			"for ranks no verdict names, unexplained)",
			ms(e->nc_straggler_ns + e->nc_skew_ns), ms(e->nc_straggler_ns), ms(e->nc_skew_ns));
		if (e->nc_late_ns)
			appendf(f->evidence, sizeof(f->evidence), "; %.1f ms more returning after the "
				"collective had completed on another rank (the thread was not running: CPU "
				"contention on the host; unexplained)", ms(e->nc_late_ns));
		if (e->nc_unsplit_calls)
			appendf(f->evidence, sizeof(f->evidence), "; %" PRIu64 " calls (%.1f ms) not "
				"split: send/recv, or a rank of theirs not in these traces", e->nc_unsplit_calls,
				ms(e->nc_unsplit_ns));
		break;
	}
	default:
		break;
	}
}

/* A dataloader finding whose waits another thread ended (fx_find_waker):
 * the job has a worker, and the worker is what it waits for. */
static void worker_bound(const struct fx_state *m, struct finding *f, const struct fx_waker *w,
			 size_t steps)
{
	char was[sizeof(f->evidence)];
	snprintf(was, sizeof(was), "%s", f->evidence);
	double per = steps ? ms(w->wait_ns) / (double)steps : 0.0;
	uint64_t listed;
	int own = hmap_get(&m->listed, w->file, w->pid, &listed); /* f is the last made */
	if (w->woken && own)
		snprintf(f->evidence, sizeof(f->evidence), "the training thread waited for its "
			 "loader thread (tid %u), woken by it: %" PRIu64 " waits of at least 0.2 ms, "
			 "%.1f ms per step; the scheduler saw that thread wake it at the end of %" PRIu64
			 " of them, %.1f ms blocked off CPU in those; ", w->tid, w->waits, per,
			 w->matched, ms(w->blocked_ns));
	else if (w->woken)
		snprintf(f->evidence, sizeof(f->evidence), "the training thread waited for its "
			 "loader worker process (pid %u, thread %u), woken by it: %" PRIu64 " waits of "
			 "at least 0.2 ms, %.1f ms per step; the scheduler saw that process wake it at "
			 "the end of %" PRIu64 " of them, %.1f ms blocked off CPU in those; ", w->pid,
			 w->tid, w->waits, per, w->matched, ms(w->blocked_ns));
	else if (own)
		snprintf(f->evidence, sizeof(f->evidence), "the training thread waited for its "
			 "loader thread (tid %u): %" PRIu64 " waits of at least 0.2 ms, %.1f ms per "
			 "step, %" PRIu64 " of them ended right after that thread handed over (a write "
			 "or futex wake); ", w->tid, w->waits, per, w->matched);
	else
		snprintf(f->evidence, sizeof(f->evidence), "the training thread waited for its "
			 "loader worker process (pid %u, thread %u): %" PRIu64 " waits of at least "
			 "0.2 ms, %.1f ms per step, %" PRIu64 " of them ended right after that process "
			 "wrote to it; ", w->pid, w->tid, w->waits, per, w->matched);
	appendf(f->evidence, sizeof(f->evidence), "%s", was);
	snprintf(f->fix, sizeof(f->fix), "the job already loads off the training thread, and its "
		 "loader %s %u cannot keep up: make each batch cheaper to produce (decode less, "
		 "cache or pre-decode input, decode on the GPU with DALI or nvJPEG), or run more "
		 "loader workers than now and let them prefetch further (prefetch_factor)",
		 own ? "thread" : "process", own ? w->tid : w->pid);
}

static int idle_findings(struct fx_state *m, struct trace_set *ts, struct symbolizer *sym,
			 double wall_ms)
{
	struct findings_result *r = &m->result;
	for (int k = 0; k < FIND_IDLE_KINDS; k++) {
		uint64_t total = 0;
		for (size_t i = 0; i < m->n_procs; i++)
			total += m->procs[i].kind_ns[k];
		if (!total || k == FIND_STRAGGLER)
			continue; /* the straggler's: straggler_finding */
		struct finding *f = new_finding(m, (enum finding_kind)k);
		if (!f)
			return -1;
		struct fx_evidence e = { 0 };
		struct ck_names ck = { .n = 0 };
		struct fx_waker waker = { 0 };
		uint64_t cost = 0;
		/* a kind spread thinly over many processes (a collective's
		 * exchange on every rank) names them all rather than none */
		int thin = 1;
		for (size_t i = 0; i < m->n_procs && thin; i++)
			thin = ms(m->procs[i].kind_ns[k]) < PROC_MIN_SHARE * wall_ms &&
			       (double)m->procs[i].kind_ns[k] * 2 < (double)total;
		for (size_t i = 0; i < m->n_procs; i++) {
			const struct fx_proc *p = &m->procs[i];
			if (!p->kind_ns[k] || (!thin && ms(p->kind_ns[k]) < PROC_MIN_SHARE * wall_ms &&
					       (double)p->kind_ns[k] * 2 < (double)total))
				continue; /* a trace of it in a process that has little */
			if (add_pid(m, f, p->file, p->pid, rank_of(ts, p->file, p->pid)))
				return -1;
			cost += p->kind_ns[k];
			sum_evidence(&e, &p->e);
			add_ck_names(&ck, p);
			if (k == FIND_DATALOADER && !waker.pid && fx_find_waker(m, p, &waker))
				return -1;
		}
		f->has_cost = 1;
		f->cost_ms = ms(cost);
		f->cost_ms_per_step = f->cost_ms / (double)(r->steps ? r->steps : 1);
		f->share = wall_ms > 0 ? f->cost_ms / (wall_ms * (double)f->n_pids) : 0;
		idle_evidence(f, &e, r->steps, &ck);
		if (waker.pid)
			worker_bound(m, f, &waker, r->steps);
		if (pick_where(m, ts, sym, (enum finding_kind)k, f))
			return -1;
	}
	return 0;
}

/* ---- the other models' verdicts ---------------------------------------------- */

/* The straggler: what findings_idle.c charged to it inside the other
 * ranks' GPU idle -- on each of them, the stragglers model's lost of every
 * instance it counts (charged_lost_ns) -- summed over them, per step since
 * the change point; the evidence and the culprit function are the model's.
 * When part of those waits fell where a rank's GPU still had work queued
 * (not GPU idle), the cost is less than the model's and the evidence says
 * so. */
static int straggler_finding(struct fx_state *m, double wall_ms)
{
	if (!m->strag)
		return 0;
	const struct stragglers_result *s = model_stragglers_result(m->strag);
	const struct straggler_verdict *v = &s->verdict;
	if (!v->found || !s->nccl || v->rank_index >= s->nccl->n_ranks)
		return 0;
	const struct nccl_result *nc = s->nccl;
	size_t named = 0;
	for (size_t i = 0; i < nc->n_ranks; i++) {
		uint64_t at;
		named += i != v->rank_index &&
			 hmap_get(&m->proc_index, nc->ranks[i].file_index, nc->ranks[i].pid, &at);
	}
	if (!named)
		return 0; /* --pid of the straggler itself: nobody here waits */
	struct finding *f = new_finding(m, FIND_STRAGGLER);
	if (!f)
		return -1;
	size_t steps = s->rows[v->rank_index].steps;
	size_t since = v->since_step > 0 ? (size_t)v->since_step : 0;
	size_t steps_since = steps > since ? steps - since : 1;
	uint64_t cost = 0, model_ns = 0;
	for (size_t i = 0; i < nc->n_ranks; i++) {
		const struct nccl_rank *rk = &nc->ranks[i];
		uint64_t at;
		if (i == v->rank_index || !hmap_get(&m->proc_index, rk->file_index, rk->pid, &at))
			continue;
		if (add_pid(m, f, rk->file_index, rk->pid, rk->rank))
			return -1;
		cost += m->procs[at].kind_ns[FIND_STRAGGLER];
		for (size_t c = 0; s->charged_lost_ns && c < rk->n_calls; c++)
			if (rk->calls[c].instance < nc->n_instances &&
			    s->charged_lost_ns[rk->calls[c].instance] > 0)
				model_ns += (uint64_t)s->charged_lost_ns[rk->calls[c].instance];
	}
	const struct nccl_rank *rk = &nc->ranks[v->rank_index];
	f->has_cost = 1;
	f->cost_ms = ms(cost);
	f->cost_ms_per_step = f->cost_ms / (double)steps_since;
	f->share = wall_ms > 0 ? f->cost_ms / (wall_ms * (double)f->n_pids) : 0;
	snprintf(f->evidence, sizeof(f->evidence),
		 "the other %zu ranks wait for rank %d (host %s, pid %u) %.2f ms per step each "
		 "since step %d (confidence %.2f)", f->n_pids, rk->rank, rk->host, rk->pid,
		 v->cost_ms_per_step, v->since_step, v->confidence);
	if (model_ns > cost + 1000000) /* clock rounding aside */
		appendf(f->evidence, sizeof(f->evidence), "; %.1f ms of those %.1f ms of waiting fell "
			"in their GPU idle, the rest while their GPU still had work queued",
			ms(cost), ms(model_ns));
	appendf(f->evidence, sizeof(f->evidence), ": %.400s", v->evidence);
	if (v->n_frames) {
		f->where = malloc(sizeof(*f->where));
		if (!f->where)
			return -1;
		f->where[0] = v->frames[0].name;
		f->n_where = 1;
	}
	return 0;
}

static int oom_finding(struct fx_state *m, struct trace_set *ts)
{
	if (!m->mem)
		return 0;
	const struct mem_result *mr = model_mem_result(m->mem);
	if (!mr->n_failures || !mr->n_failures_kept)
		return 0;
	struct finding *f = new_finding(m, FIND_OOM);
	if (!f)
		return -1;
	for (size_t i = 0; i < mr->n_failures_kept; i++)
		if (add_pid(m, f, mr->failures[i].file, mr->failures[i].pid,
			    rank_of(ts, mr->failures[i].file, mr->failures[i].pid)))
			return -1;
	const struct mem_failure *x = &mr->failures[0];
	char b1[32], b2[32];
	const char *err = cuda_error_name(x->func, x->error);
	snprintf(f->evidence, sizeof(f->evidence),
		 "%" PRIu64 " failed allocation%s; the first asked for %s (%s) with %s in use on "
		 "device %d", mr->n_failures, mr->n_failures == 1 ? "" : "s",
		 bytes_str(x->bytes, b1, sizeof(b1)),
		 err ? err : "error", bytes_str(x->inuse_bytes, b2, sizeof(b2)), x->device);
	if (x->n_holders) {
		char b3[32];
		size_t n;
		const char **frames = mem_stack_frames(ts, x->file, x->holders[0].stack_id, &n);
		appendf(f->evidence, sizeof(f->evidence), "; the top holder kept %s",
			bytes_str(x->holders[0].bytes, b3, sizeof(b3)));
		if (frames && n)
			appendf(f->evidence, sizeof(f->evidence), " (allocated in %s)", frames[n - 1]);
		free(frames);
	}
	size_t n;
	const char **frames = mem_stack_frames(ts, x->file, x->stack_id, &n);
	if (!frames)
		return -1;
	const char **grown = realloc(frames, (n + 1) * sizeof(*grown));
	if (!grown) {
		free(frames);
		return -1;
	}
	if (cuda_func_name(x->func))
		grown[n++] = cuda_func_name(x->func);
	f->where = grown;
	f->n_where = n;
	return 0;
}

static int leak_finding(struct fx_state *m, struct trace_set *ts, size_t steps, int steps_known)
{
	if (!m->mem)
		return 0;
	const struct mem_result *mr = model_mem_result(m->mem);
	uint64_t min_count = steps_known ? (steps / 2 > 2 ? steps / 2 : 2) : 8;
	const struct mem_series *worst = NULL;
	for (size_t i = 0; i < mr->n_series; i++) {
		const struct mem_series *s = &mr->series[i];
		if (s->space != MEM_SPACE_DEVICE || !s->n_top_leaks ||
		    s->top_leaks[0].count < min_count)
			continue;
		if (!worst || s->top_leaks[0].bytes > worst->top_leaks[0].bytes)
			worst = s;
	}
	if (!worst)
		return 0;
	struct finding *f = new_finding(m, FIND_MEMORY_LEAK);
	if (!f)
		return -1;
	for (size_t i = 0; i < mr->n_series; i++) {
		const struct mem_series *s = &mr->series[i];
		if (s->space == MEM_SPACE_DEVICE && s->n_top_leaks &&
		    s->top_leaks[0].count >= min_count &&
		    add_pid(m, f, s->file, s->pid, rank_of(ts, s->file, s->pid)))
			return -1;
	}
	const struct mem_stack_bytes *l = &worst->top_leaks[0];
	char b1[32], b2[32];
	snprintf(f->evidence, sizeof(f->evidence),
		 "pid %u still holds %s at the end in %" PRIu64 " allocations made by one stack "
		 "(%s in all never freed) over %zu steps", worst->pid,
		 bytes_str(l->bytes, b1, sizeof(b1)), l->count,
		 bytes_str(worst->end_bytes, b2, sizeof(b2)), steps);
	size_t n;
	f->where = mem_stack_frames(ts, worst->file, l->stack_id, &n);
	if (!f->where)
		return -1;
	f->n_where = n;
	return 0;
}

static int rdma_finding(struct fx_state *m, struct trace_set *ts)
{
	if (!m->rdma)
		return 0;
	const struct rdma_result *rr = model_rdma_result(m->rdma);
	uint64_t errors = 0, by_status[RDMA_WC_STATUSES] = { 0 };
	size_t conns = 0;
	for (size_t i = 0; i < rr->n_conns; i++) {
		const struct rdma_conn *c = &rr->conns[i];
		if (!c->errors)
			continue;
		errors += c->errors;
		conns++;
		for (size_t s = 0; s < RDMA_WC_STATUSES; s++)
			if (s != 5) /* IBV_WC_WR_FLUSH_ERR: consequences, counted apart */
				by_status[s] += c->by_status[s];
	}
	if (!errors)
		return 0;
	struct finding *f = new_finding(m, FIND_RDMA_ERRORS);
	if (!f)
		return -1;
	for (size_t i = 0; i < rr->n_conns; i++)
		if (rr->conns[i].errors &&
		    add_pid(m, f, rr->conns[i].local.file, rr->conns[i].local.pid,
			    rank_of(ts, rr->conns[i].local.file, rr->conns[i].local.pid)))
			return -1;
	snprintf(f->evidence, sizeof(f->evidence), "%" PRIu64 " error completions on %zu "
		 "connections:", errors, conns);
	for (size_t s = 0; s < RDMA_WC_STATUSES; s++) {
		if (!by_status[s])
			continue;
		const char *name = rdma_wc_status_name((uint32_t)s);
		appendf(f->evidence, sizeof(f->evidence), " %s x%" PRIu64, name ? name : "status",
			by_status[s]);
	}
	return 0;
}

/* ---- order, steps, not evaluated --------------------------------------------- */

static int severity(enum finding_kind k)
{
	switch (k) {
	case FIND_OOM: return 0;
	case FIND_RDMA_ERRORS: return 1;
	case FIND_MEMORY_LEAK: return 2;
	default: return 3;
	}
}

static int finding_cmp(const void *a, const void *b)
{
	const struct finding *x = a, *y = b;
	if (x->has_cost != y->has_cost)
		return x->has_cost ? -1 : 1;
	if (x->has_cost && x->cost_ms != y->cost_ms)
		return x->cost_ms > y->cost_ms ? -1 : 1;
	if (!x->has_cost && severity(x->kind) != severity(y->kind))
		return severity(x->kind) - severity(y->kind);
	return (int)x->kind - (int)y->kind;
}

static void not_evaluated_named(struct findings_result *r, const char *kind, const char *why)
{
	if (r->n_not_evaluated == FINDINGS_MAX_NOT_EVALUATED)
		return;
	struct findings_not_evaluated *n = &r->not_evaluated[r->n_not_evaluated++];
	n->kind = kind;
	snprintf(n->why, sizeof(n->why), "%s", why);
}

static void not_evaluated(struct findings_result *r, enum finding_kind k, const char *why)
{
	not_evaluated_named(r, finding_kind_name(k), why);
}

/* What is done when one process drives several streams or devices: said
 * once, for the process with the most streams. */
static void several_streams(struct findings_result *r)
{
	const struct findings_proc *most = NULL;
	for (size_t i = 0; i < r->n_procs; i++) {
		const struct findings_proc *p = &r->procs[i];
		if ((p->streams > 1 || p->devices > 1) &&
		    (!most || p->streams + p->devices > most->streams + most->devices))
			most = p;
	}
	if (!most)
		return;
	char why[256];
	snprintf(why, sizeof(why), "pid %u queued work on %u streams of %u device%s: idle is read "
		 "per process, any synchronize taken to empty them all, so time another stream or "
		 "device still ran counts as idle; launch_bound counts only one-stream runs",
		 most->pid, most->streams, most->devices, most->devices == 1 ? "" : "s");
	not_evaluated_named(r, "per_stream_idle", why);
}

static void list_not_evaluated(struct fx_state *m)
{
	struct findings_result *r = &m->result;
	if (!m->cuda_events) {
		/* the kinds read from CUDA calls; the NCCL ones below */
		for (int k = 0; k < FIND_NCCL_EXCHANGE; k++)
			not_evaluated(r, (enum finding_kind)k, m->nccl_events
				      ? "no CUDA calls recorded (cuda probe not attached?): GPU idle is "
					"read from synchronizes and launches, here only from the time "
					"inside NCCL calls"
				      : "no CUDA calls recorded (cuda probe not attached?): GPU idle is "
					"read from synchronizes and launches");
	} else {
		if (!m->syscalls) {
			not_evaluated(r, FIND_DATALOADER, m->samples
				      ? "system calls not recorded (--probes without syscalls): reads "
					"and waits for loader workers not seen, only loader code on CPU"
				      : "neither system calls nor CPU samples recorded (--probes "
					"cpu,syscalls,cuda)");
			not_evaluated(r, FIND_SYNC_CHECKPOINT, "system calls not recorded (--probes "
				      "without syscalls): writes and fsyncs not seen");
		} else if (!m->samples) {
			not_evaluated(r, FIND_DATALOADER, "no CPU samples (--probes without cpu): "
				      "decoding on the training thread not seen, only its reads and waits");
		}
		if (!m->samples) {
			not_evaluated(r, FIND_HOST_SYNC, "no CPU samples (--probes without cpu): the "
				      "host's own work after a synchronize cannot be told from other waits");
			not_evaluated(r, FIND_LAUNCH_BOUND, "no CPU samples (--probes without cpu): the "
				      "host's work between launches cannot be told from other waits");
		}
	}
	const struct stragglers_result *s = m->strag ? model_stragglers_result(m->strag) : NULL;
	if (!m->nccl_events) {
		not_evaluated(r, FIND_NCCL_EXCHANGE, "no NCCL calls recorded (nccl probe)");
		not_evaluated(r, FIND_STRAGGLER, "no NCCL calls recorded (nccl probe)");
	} else if (s && s->nccl && s->nccl->n_ranks < 2) {
		not_evaluated(r, FIND_STRAGGLER, "fewer than two NCCL ranks in these traces "
			      "(give one trace per node)");
	}
	if (m->nccl_events && s && s->nccl && !s->complete_collectives)
		not_evaluated(r, FIND_NCCL_EXCHANGE, "no collective has every rank of its "
			      "communicator in these traces (give one trace per node): when the last "
			      "rank entered is not known, so the time inside collectives is not split "
			      "into waiting and exchange (unexplained)");
	if (!m->rdma_events)
		not_evaluated(r, FIND_RDMA_ERRORS, "no RDMA verbs calls recorded (rdma probe)");
	/* a small batch shows on the GPU (occupancy, kernel time per sample),
	 * which no host signal measures */
	not_evaluated_named(r, "small_batch", "kernel grid sizes and GPU occupancy are not "
			    "recorded, and bytes copied or read per step do not tell a small batch "
			    "from a small model; a launch_bound finding is the symptom host signals see");
	several_streams(r);
}

static void steps_from_nccl(struct fx_state *m)
{
	const struct stragglers_result *s = m->strag ? model_stragglers_result(m->strag) : NULL;
	if (!s || !s->nccl)
		return;
	for (size_t i = 0; i < s->nccl->n_ranks; i++) {
		const struct nccl_rank *rk = &s->nccl->ranks[i];
		if (!rk->n_steps || s->nccl->step_source == NCCL_STEPS_EACH)
			continue;
		uint64_t at;
		if (!hmap_get(&m->proc_index, rk->file_index, rk->pid, &at))
			continue;
		struct fx_proc *p = &m->procs[at];
		if (strcmp(p->steps_from, "marker")) {
			/* every period of the rank's collectives is a step: the
			 * straggler model's steps begin at a collective's exit, so
			 * they leave out the first, which no collective opens */
			size_t whole = s->nccl->step_source == NCCL_STEPS_PERIOD && s->nccl->period
				? rk->n_calls / s->nccl->period : 0;
			p->steps = whole > rk->n_steps ? whole : rk->n_steps;
			p->steps_from = "collective_period";
			p->step_ms = p->step_regular = 0; /* not read here */
		}
	}
}

int fx_build_findings(struct fx_state *m, struct trace_set *ts, struct symbolizer *sym)
{
	struct findings_result *r = &m->result;
	r->min_share = FINDINGS_MIN_SHARE;
	/* wall: the longest span of recorded events (not the recorder's own
	 * start-up before the job ran, which the file's duration holds) */
	uint64_t wall_ns = 0;
	for (size_t i = 0; i < trace_set_count(ts); i++) {
		const struct trace_file *f = trace_set_file(ts, i);
		uint64_t d = f->last_event_ns > f->first_event_ns
			? f->last_event_ns - f->first_event_ns : 0;
		if (d > wall_ns)
			wall_ns = d;
	}
	r->wall_ms = ms(wall_ns);
	steps_from_nccl(m);

	/* the processes that made the device wait, or drove one */
	r->procs = calloc(m->n_procs ? m->n_procs : 1, sizeof(*r->procs));
	if (!r->procs)
		return -1;
	const struct fx_proc *busiest = NULL;
	for (size_t i = 0; i < m->n_procs; i++) {
		const struct fx_proc *p = &m->procs[i];
		int drives = 0;
		for (size_t j = 0; j < p->n && !drives; j++)
			drives = p->ev[j].type <= FXE_WORK || p->ev[j].type == FXE_NCCL;
		if (!drives)
			continue;
		struct findings_proc *o = &r->procs[r->n_procs++];
		o->file = p->file;
		o->pid = p->pid;
		o->rank = rank_of(ts, p->file, p->pid);
		const struct trace_file *tf = trace_set_file(ts, p->file);
		snprintf(o->host, sizeof(o->host), "%s", tf ? tf->hdr.host : "");
		o->intervals = p->intervals;
		o->idle_ms = ms(p->idle_ns);
		for (int k = 0; k < FIND_IDLE_KINDS; k++)
			o->kind_ms[k] = ms(p->kind_ns[k]);
		o->unexplained_ms = ms(p->unexplained_ns);
		o->steps = p->steps;
		o->steps_from = p->steps_from;
		o->streams = p->streams;
		o->devices = p->devices;
		o->idle = p->idle;
		o->n_idle = p->n_idle;
		o->gpu_time_from = p->gpu ? "kernels" : "host_signals";
		o->gpu_kernels = p->gpu ? p->gpu->kernels : 0;
		o->gpu_busy_ms = p->gpu ? ms(p->gpu->busy_ns) : 0;
		o->busy_in_idle_ms = ms(p->busy_in_idle_ns);
		if (!busiest || p->idle_ns > busiest->idle_ns)
			busiest = p;
	}
	r->steps = busiest ? busiest->steps : 1;
	r->steps_from = busiest ? busiest->steps_from : "none";
	if (busiest) {
		r->step_ms = busiest->step_ms;
		r->step_regular = busiest->step_regular;
		if (!strcmp(busiest->steps_from, "sync_period"))
			r->step_site = cuda_func_name(busiest->step_site);
	}
	if (!busiest) {
		/* no process drove a GPU: the job's steps are its collectives' */
		const struct stragglers_result *s = m->strag ? model_stragglers_result(m->strag) : NULL;
		for (size_t i = 0; s && s->nccl && i < s->nccl->n_ranks; i++)
			if (s->nccl->ranks[i].n_steps > r->steps) {
				r->steps = s->nccl->ranks[i].n_steps;
				r->steps_from = "collective_period";
			}
	}

	if (idle_findings(m, ts, sym, r->wall_ms) || straggler_finding(m, r->wall_ms) ||
	    oom_finding(m, ts) || leak_finding(m, ts, r->steps, strcmp(r->steps_from, "none") != 0) ||
	    rdma_finding(m, ts))
		return -1;
	if (r->n_findings)
		qsort(r->findings, r->n_findings, sizeof(*r->findings), finding_cmp);

	/* below the threshold: kept apart, in the same order */
	r->below = calloc(r->n_findings ? r->n_findings : 1, sizeof(*r->below));
	if (!r->below)
		return -1;
	size_t kept = 0;
	for (size_t i = 0; i < r->n_findings; i++) {
		struct finding *f = &r->findings[i];
		if (!f->has_cost || f->share >= FINDINGS_MIN_SHARE)
			r->findings[kept++] = *f;
		else
			r->below[r->n_below++] = *f;
	}
	r->n_findings = kept;
	list_not_evaluated(m);
	return 0;
}
