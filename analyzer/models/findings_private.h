/* What the findings model's files share: the events it keeps per process,
 * the idle attribution (findings_idle.c and the files it names) and the
 * rules that turn it and the other models' results into findings
 * (findings_kinds.c).  Private to model_findings*.c and findings_*.c. */
#ifndef FLIGHTREC_FINDINGS_PRIVATE_H
#define FLIGHTREC_FINDINGS_PRIVATE_H

#include <stddef.h>
#include <stdint.h>
#include "file_groups.h"
#include "hmap.h"
#include "model_findings.h"
#include "model_gpu.h"

struct trace_set;
struct symbolizer;

enum fx_type {
	FXE_SYNC,     /* the host waited for the device (class FR_FN_SYNC) */
	FXE_IMPLICIT, /* a call that synchronizes the device implicitly (cudaFree ...) */
	FXE_COPY,     /* a successful copy, classified by model_cuda */
	FXE_QUERY,    /* an event query that found its event complete (result 0) */
	FXE_WORK,     /* device work queued: a launch or a graph launch */
	FXE_NCCL_WORK, /* a launch made inside an NCCL call of its thread: the
			  collective's own kernel (fx_nccl_prepare), not compute */
	FXE_SYSCALL,
	FXE_FDPATH,   /* which file fd names from t0 on (FR_EV_FD_PATH): bytes
			 indexes the state's paths; any thread of the process */
	FXE_NCCL,     /* a collective or send/recv (findings_nccl.c): t0 its entry,
			 t1 its completion as far as the host saw it; bytes
			 indexes the process's nccl[]; async: not known to
			 block (its return proves nothing of the device) */
};

/* An FXE_NCCL's split (findings_nccl.c), on the file's clock but for
 * entry_common_ns. */
struct fx_nccl {
	uint64_t exit_ns;         /* the call's own return */
	int64_t entry_common_ns;  /* its entry on the common timeline */
	uint32_t instance;        /* into the NCCL model's instances; NCCL_NONE none */
	uint64_t all_ready_ns;    /* the last member's entry into the instance; 0: not
				     split (instance not complete in these traces,
				     or send/recv) */
	uint64_t done_ns;         /* the earliest completion of the instance on any of
				     its members (fx_nccl_first_done); 0 unknown */
	uint64_t straggler_ns;    /* of the wait before all_ready_ns, what the
				     stragglers model charges to its straggler
				     (stragglers_result.charged_lost_ns): the
				     stretch [all_ready_ns - straggler_ns, all_ready_ns) */
	uint64_t bytes;           /* count x the datatype's size (0 unknown) */
};

/* A where entry's leaf that is an NCCL function, not a CUDA one. */
#define FX_LEAF_NCCL 0x8000u

/* One event kept, of one process (48 bytes: one union instead of two
 * fields keeps it so; the findings model holds every one in memory).  CPU
 * samples, most of a process's events, are kept apart in 16 bytes each
 * (struct fx_sample). */
struct fx_ev {
	uint64_t t0, t1;      /* entry and return, CLOCK_MONOTONIC of the file */
	uint64_t bytes;       /* copies: bytes; syscalls: bytes transferred (ret) */
	union {
		int64_t fd;   /* syscalls, FXE_FDPATH: -1 when none */
		uint64_t stream; /* CUDA calls: fx_stream_key(); a stream synchronize's
				    is the stream it waited for */
	};
	uint32_t tid, stack_id;
	uint16_t type;        /* enum fx_type */
	uint16_t what;        /* CUDA function or syscall number */
	uint8_t pageable : 1, async : 1;
	uint8_t d2h : 1;      /* copies: device to host */
	int16_t device;       /* CUDA calls: the thread's device, -1 unknown */
};

/* A stream handle as one key: the legacy default stream (handle 0, or
 * cudaStreamLegacy 0x1) is 0, the per-thread default stream (handle 0 in a
 * _ptsz call, or cudaStreamPerThread 0x2) is 2, any other handle itself. */
static inline uint64_t fx_stream_key(uint64_t handle, int ptsz)
{
	if (handle == 0)
		return ptsz ? 2 : 0;
	return handle == 1 ? 0 : handle;
}

/* Where idle went, per (kind, stack): value ns; a sample-based entry is
 * trimmed after the frame that matched its rule. */
enum { FX_WHERE_WHOLE = 0, FX_WHERE_TRIM = 1 };

struct fx_evidence {
	/* dataloader */
	uint64_t dl_reads, dl_read_bytes, dl_read_ns, dl_futex, dl_futex_ns, dl_cpu_ns, dl_samples;
	uint64_t dl_unsampled_ns;  /* the rest of intervals with loader calls and no sample */
	/* pageable_copy */
	uint64_t pg_copies, pg_sync, pg_bytes, pg_ns;
	/* sync_checkpoint */
	uint64_t ck_writes, ck_write_bytes, ck_write_ns, ck_fsyncs, ck_fsync_ns, ck_openclose_ns;
	uint64_t ck_cpu_ns, ck_saves;
	uint64_t ck_between_ns;   /* between a save's calls, no call covering it */
	uint64_t ck_named;        /* writes to a file with a checkpoint's name */
	/* host_sync */
	uint64_t hs_gaps, hs_ns, hs_max_ns;
	uint64_t hs_copy_gaps, hs_copy_ns, hs_copy_bytes; /* of them: after a small
							     synchronous copy to the host */
	/* launch_bound: the steps whose pace the host set (findings_launch_bound.c) */
	uint64_t lb_steps, lb_launches, lb_launch_ns, lb_wait_ns, lb_bound_ns;
	uint64_t lb_span_ns;              /* first launch to last, summed over the runs */
	uint64_t lb_gaps, lb_gap_ns;      /* the gaps that left the GPU idle, their idle */
	uint64_t lb_measured;             /* of those gaps, read against kernel records */
	uint64_t lb_left_ns;              /* kernel work left at the closing synchronizes
					     (kernel records; lb_wait_ns: the calls' time) */
	uint64_t lb_mixed;                /* long runs of launches skipped: several streams,
					     a graph launch, or a synchronize of another stream */
	/* nccl_exchange and the rest of the time in collectives (findings_attribute.c) */
	uint64_t nc_calls, nc_bytes, nc_exchange_ns;
	uint64_t nc_xfer_calls, nc_xfer_bytes, nc_xfer_ns; /* calls with an exchange: for
							       the bandwidth */
	uint64_t nc_straggler_ns;         /* charged to the straggler */
	uint64_t nc_skew_ns;              /* waits for late ranks no verdict names */
	uint64_t nc_unsplit_calls, nc_unsplit_ns; /* not split: unexplained */
	uint64_t nc_late_ns;              /* returned after the collective had completed on
					     another rank (the thread not running) */
	/* unexplained */
	uint64_t other_syscall_ns, implicit_ns, no_sample_ns;
};

/* A system call of the training thread charged to dataloader, as long as
 * a batch could take to arrive (findings_kinds.c looks for who ended it). */
struct fx_wait {
	uint64_t t0, t1;
	uint32_t tid;
	uint16_t what;
};
#define FX_WAIT_MIN_NS 200000ull

/* A system call of one thread spent off CPU (FR_EV_SCHED): who woke it. */
struct fx_offcpu {
	uint64_t t0;          /* its first block */
	uint64_t off_ns;
	uint32_t tid, waker_pid, waker_tid;
	uint16_t nr;
	uint16_t waker_irq;
};

/* A CPU sample of one process. */
struct fx_sample {
	uint64_t t;
	uint32_t tid, stack_id;
};

struct fx_proc {
	uint32_t file, pid;
	struct fx_ev *ev;
	size_t n, cap;
	struct fx_sample *samples; /* sorted by t with the events (fx_sort_events) */
	size_t n_samples, cap_samples;
	uint64_t step_marks;      /* FR_EV_STEP events */
	uint64_t exit_ns;         /* FR_EV_PROC_EXIT; 0 not recorded */
	struct fx_wait *dl_waits; /* the dataloader waits in idle time (system calls) */
	size_t n_dl_waits, cap_dl_waits;
	uint64_t idle_ns, intervals;
	uint64_t kind_ns[FIND_IDLE_KINDS];
	uint64_t unexplained_ns;
	struct fx_evidence e;     /* counters only: summed over processes */
	const char *ck_files[3];  /* the checkpoint files written, when named */
	size_t n_ck_files;
	struct hmap where;        /* (kind << 8 | trim, cuda func << 32 | stack_id) -> ns */
	struct findings_idle_interval *idle; /* every interval, in time order */
	size_t n_idle, cap_idle;
	size_t steps;
	const char *steps_from;
	double step_ms;           /* median time between step boundaries; 0 unknown */
	double step_regular;      /* the share of steps within 25% of it */
	uint16_t step_site;       /* sync_period: the CUDA function at the boundary */
	uint64_t *mark_ts;        /* FR_EV_STEP times, in file order */
	size_t n_mark_ts, cap_mark_ts;
	uint32_t streams, devices; /* fx_streams_of() */
	struct fx_nccl *nccl;     /* FXE_NCCL's splits, bytes indexes them */
	size_t n_nccl, cap_nccl;
	struct fx_offcpu *offcpu; /* sorted by t0 with the events (fx_sort_events) */
	size_t n_offcpu, cap_offcpu;
	/* its kernels' merged spans (model_gpu), NULL when the trace has no
	 * kernel record of it: then idle is read from host signals alone */
	const struct gpu_proc *gpu;
	uint64_t busy_in_idle_ns; /* kernel time inside the host-signal intervals */
};

struct fx_state {
	struct model_opts opts;
	void *cuda, *mem, *strag, *rdma, *gpu;
	struct fx_proc *procs;
	size_t n_procs, cap_procs;
	struct hmap proc_index;   /* (file, pid) -> index */
	uint64_t cuda_events, syscalls, samples, nccl_events, rdma_events, fd_paths;
	uint64_t offcpu_events;   /* FR_EV_SCHED: the sched family was recorded */
	char **paths;             /* FXE_FDPATH's names */
	size_t n_paths, cap_paths;
	struct findings_result result;
	/* the processes the finding being built lists, (file, pid): pids
	 * repeat across nodes (a container's), and a finding can name
	 * thousands of ranks; its arrays' capacities */
	struct hmap listed;
	size_t listed_cap_pids, listed_cap_ranks;
	/* the second look at the CPU samples (model_findings.c): each file's
	 * processes are attributed once its samples are in, and their samples
	 * freed, so only one node's samples are held */
	struct symbolizer *look_sym;
	struct trace_set *look_ts;
	struct file_groups by_file; /* the processes */
	uint32_t look_file;       /* files before it are attributed */
	int looking;
};

struct fx_proc *fx_proc_get(struct fx_state *m, uint32_t file, uint32_t pid);
int fx_push(struct fx_proc *p, const struct fx_ev *e);

/* findings_nccl.c: an FXE_NCCL event for every collective and send/recv
 * of the stragglers model's ranks (those that pass the model's pid
 * filter), with its split; before fx_sort_events.  -1 when memory runs
 * out. */
int fx_nccl_events(struct fx_state *m);
/* findings_nccl.c, on p's sorted events: launches inside an NCCL call
 * made FXE_NCCL_WORK, and each FXE_NCCL's t1 moved to the return of the
 * synchronize or event query that waited for it, where one did (an
 * enqueued collective's completion). */
void fx_nccl_prepare(struct fx_proc *p);
/* findings_nccl.c, once every process's events are prepared: each
 * FXE_NCCL's done_ns.  -1 when memory runs out. */
int fx_nccl_first_done(struct fx_state *m);
/* findings_idle.c: p's events sorted by entry, its samples and off-CPU
 * spans by time, then fx_nccl_prepare. */
void fx_sort_events(struct fx_proc *p);
/* findings_idle.c: p's samples alone in time order (the second look
 * brings them after the rest is sorted). */
void fx_sort_samples(struct fx_proc *p);

/* findings_idle.c: the idle intervals of p and their attribution (kind_ns,
 * unexplained_ns, evidence, where); the events are sorted first.
 * have_samples: the recording has CPU samples (else on-CPU time is left
 * unexplained).  -1 when memory runs out. */
int fx_idle_attribute(struct fx_proc *p, struct trace_set *ts, struct symbolizer *sym,
		      int have_samples, char *const *paths);
/* findings_frames.c: the innermost user frame of frames[0..n) whose
 * function name matches the rule of kind (dataloader: *load*, *decode*, *collate*, __next__;
 * sync_checkpoint: *save*, *checkpoint*, *serializ*), case-insensitive;
 * SIZE_MAX when none. */
size_t fx_frame_match(const char *const *frames, size_t n, enum finding_kind kind);
/* findings_steps.c: p->steps and p->steps_from from its own events
 * (markers, else the period of its synchronizing calls, else 1). */
void fx_steps_of(struct fx_proc *p);
/* findings_streams.c: p->streams and p->devices from its CUDA calls; -1
 * when memory runs out. */
int fx_streams_of(struct fx_proc *p);

/* findings_waker.c: the thread that ended most of p's dataloader waits
 * (pid 0: none ended half of them), with the waits' count and time.  From
 * the scheduler's wake-ups where the sched family was recorded (woken:
 * matched counts the waits it woke, blocked_ns their time off CPU), else
 * from the system calls that handed input over. */
struct fx_waker {
	uint32_t file;            /* p's: a waker is of its node */
	uint32_t pid, tid;
	uint64_t waits, matched, wait_ns;
	int woken;
	uint64_t blocked_ns;
};
int fx_find_waker(const struct fx_state *m, const struct fx_proc *p, struct fx_waker *out);

/* findings_kinds.c: the findings, not_evaluated and the order. */
int fx_build_findings(struct fx_state *m, struct trace_set *ts, struct symbolizer *sym);
void fx_result_free(struct findings_result *r);

#endif
