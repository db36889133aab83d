/* Snapshot triggers (see triggers.h). */
#include "ring/triggers.h"

#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "fr_family.h"
#include "frec_writer.h"
#include "ring/hang_watch.h"
#include "mem_ledger.h"

/* cudaErrorMemoryAllocation and CUDA_ERROR_OUT_OF_MEMORY are both 2. */
#define CUDA_OOM 2
/* ncclInProgress: a nonblocking communicator's call still running, not an
 * error. */
#define NCCL_IN_PROGRESS 7

static const char *const names[] = {
	[FR_TRIGGER_SIGNAL] = "signal",
	[FR_TRIGGER_OOM] = "oom",
	[FR_TRIGGER_NCCL_ERROR] = "nccl-error",
	[FR_TRIGGER_HANG] = "hang",
	[FR_TRIGGER_EXIT] = "exit",
};

const char *trigger_name(unsigned kind)
{
	return kind < sizeof(names) / sizeof(names[0]) && names[kind] ? names[kind] : "trigger";
}

int triggers_parse(const char *list, unsigned *out, const char **bad)
{
	static char word[64];
	*out = 0;
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");
		snprintf(word, sizeof(word), "%.*s", (int)(n < 63 ? n : 63), p);
		unsigned bit = 0;
		for (unsigned k = 1; k < sizeof(names) / sizeof(names[0]); k++)
			if (names[k] && !strcasecmp(word, names[k]))
				bit = TRIGGER_BIT(k);
		/* a hang is an NCCL error that never returns: CLI.md puts it
		 * under nccl-error */
		if (bit == TRIGGER_BIT(FR_TRIGGER_NCCL_ERROR))
			bit |= TRIGGER_BIT(FR_TRIGGER_HANG);
		if (!strcasecmp(word, "exit=all"))
			bit = TRIGGER_BIT(FR_TRIGGER_EXIT) | TRIGGER_EXIT_ALL;
		if (!strcasecmp(word, "all"))
			bit = TRIGGER_BIT(FR_TRIGGER_OOM) | TRIGGER_BIT(FR_TRIGGER_NCCL_ERROR) |
			      TRIGGER_BIT(FR_TRIGGER_HANG) | TRIGGER_BIT(FR_TRIGGER_EXIT);
		if (!bit) {
			*bad = word;
			return -1;
		}
		*out |= bit;
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

void triggers_init(struct triggers *t, unsigned armed, uint64_t delay_ns)
{
	memset(t, 0, sizeof(*t));
	t->armed = armed | TRIGGER_BIT(FR_TRIGGER_SIGNAL);
	t->delay_ns = delay_ns;
	pthread_mutex_init(&t->mu, NULL);
}

void triggers_destroy(struct triggers *t)
{
	free(t->exits);
	t->exits = NULL;
	pthread_mutex_destroy(&t->mu);
}

static void raise_locked(struct triggers *t, const struct trigger_hit *hit)
{
	if (t->pending) {
		t->merged++;
		return;
	}
	t->pending = true;
	t->hit = *hit;
	t->merged = 0;
	if (t->ring)
		frec_writer_ring_hold(t->ring, hit->at_ns);
}

void triggers_raise(struct triggers *t, const struct trigger_hit *hit)
{
	if (!(t->armed & TRIGGER_BIT(hit->kind)))
		return;
	pthread_mutex_lock(&t->mu);
	raise_locked(t, hit);
	pthread_mutex_unlock(&t->mu);
}

/* The caching allocator's answer to an OOM: it frees its cache and asks
 * again.  The next allocation of the same thread that starts after the
 * failed call ended tells whether that worked (the failed call's outer
 * half, cudaMalloc around cuMemAlloc, started before it ended). */
static void follow_retry(struct triggers *t, const struct fr_ev_cuda *ev)
{
	if (!t->oom_tid || ev->c.tid != t->oom_tid || ev->c.pid != t->oom_pid ||
	    ev->c.ts_ns <= t->oom_end_ns || ev->bytes < t->oom_bytes ||
	    t->oom_retry != FR_OOM_RETRY_UNSEEN)
		return;
	t->oom_retry = ev->result == 0 ? FR_OOM_RETRY_OK : FR_OOM_RETRY_FAILED;
}

static void on_cuda(struct triggers *t, const struct fr_ev_cuda *ev)
{
	enum mem_class cls = mem_func_class(ev->func);
	if (cls != MEM_DEV_ALLOC && cls != MEM_PHYS_CREATE)
		return;
	pthread_mutex_lock(&t->mu);
	follow_retry(t, ev);
	if (ev->result == CUDA_OOM && (t->armed & TRIGGER_BIT(FR_TRIGGER_OOM)) &&
	    !(t->pending && t->hit.kind == FR_TRIGGER_OOM)) {
		struct trigger_hit h = { .kind = FR_TRIGGER_OOM, .at_ns = ev->c.ts_ns,
					 .due_ns = ev->c.ts_ns + ev->duration_ns + t->delay_ns,
					 .pid = ev->c.pid, .tid = ev->c.tid };
		const char *fn = fr_func_name(FR_PROBE_CUDA, ev->func);
		snprintf(h.detail, sizeof(h.detail), "%s of %" PRIu64 " bytes returned out of "
			 "memory (error %" PRId64 ") in pid %u, thread %u, device %d",
			 fn ? fn : "an allocation", (uint64_t)ev->bytes, (int64_t)ev->result,
			 ev->c.pid, ev->c.tid, ev->device);
		t->oom_pid = ev->c.pid;
		t->oom_tid = ev->c.tid;
		t->oom_bytes = ev->bytes;
		t->oom_end_ns = ev->c.ts_ns + ev->duration_ns;
		t->oom_retry = FR_OOM_RETRY_UNSEEN;
		raise_locked(t, &h);
	} else if (ev->result == CUDA_OOM && t->pending) {
		t->merged += t->hit.kind != FR_TRIGGER_OOM || ev->c.tid != t->oom_tid;
	}
	pthread_mutex_unlock(&t->mu);
}

static void on_nccl(struct triggers *t, const struct fr_ev_nccl *ev)
{
	/* ncclCommGetAsyncError's own answer is in count (events.h) */
	int64_t err = ev->result;
	if (ev->func == FR_NCCL_COMM_GET_ASYNC_ERROR && !err)
		err = (int64_t)ev->count;
	if (err == 0 || err == NCCL_IN_PROGRESS || !(t->armed & TRIGGER_BIT(FR_TRIGGER_NCCL_ERROR)))
		return;
	struct trigger_hit h = { .kind = FR_TRIGGER_NCCL_ERROR, .at_ns = ev->c.ts_ns,
				 .due_ns = ev->c.ts_ns + ev->duration_ns + t->delay_ns,
				 .pid = ev->c.pid, .tid = ev->c.tid };
	const char *fn = fr_func_name(FR_PROBE_NCCL, ev->func);
	snprintf(h.detail, sizeof(h.detail), "%s %s error %" PRId64 " in pid %u, thread %u",
		 fn ? fn : "an NCCL call",
		 ev->func == FR_NCCL_COMM_GET_ASYNC_ERROR && !ev->result ? "reported" : "returned",
		 err, ev->c.pid, ev->c.tid);
	triggers_raise(t, &h);
}

static void on_exit_event(struct triggers *t, const struct fr_ev_proc *ev)
{
	if (!ev->exit_code || !(t->armed & TRIGGER_BIT(FR_TRIGGER_EXIT)))
		return;
	struct trigger_hit h = { .kind = FR_TRIGGER_EXIT, .at_ns = ev->c.ts_ns,
				 .due_ns = ev->c.ts_ns + t->delay_ns, .pid = ev->c.pid };
	int sig = ev->exit_code & 0x7f;
	if (sig)
		snprintf(h.detail, sizeof(h.detail), "pid %u (%.16s) died on signal %d", ev->c.pid,
			 ev->comm, sig);
	else
		snprintf(h.detail, sizeof(h.detail), "pid %u (%.16s) exited with status %d",
			 ev->c.pid, ev->comm, (ev->exit_code >> 8) & 0xff);
	if (t->armed & TRIGGER_EXIT_ALL) {
		triggers_raise(t, &h);
		return;
	}
	pthread_mutex_lock(&t->mu);
	if (t->n_exits == t->cap_exits) {
		size_t cap = t->cap_exits ? t->cap_exits * 2 : 16;
		struct trigger_hit *v = realloc(t->exits, cap * sizeof(*v));
		if (!v) {
			/* undecided: taken for the job's, the safe side */
			raise_locked(t, &h);
			pthread_mutex_unlock(&t->mu);
			return;
		}
		t->exits = v;
		t->cap_exits = cap;
	}
	t->exits[t->n_exits++] = h;
	pthread_mutex_unlock(&t->mu);
}

size_t triggers_take_exits(struct triggers *t, struct trigger_hit **out)
{
	pthread_mutex_lock(&t->mu);
	size_t n = t->n_exits;
	*out = t->exits;
	t->exits = NULL;
	t->n_exits = t->cap_exits = 0;
	pthread_mutex_unlock(&t->mu);
	return n;
}

/* A CUDA, NCCL or RDMA call: its process is the job.  The cache holds the
 * pids marked since the table last changed, so a call costs a compare. */
static void mark_job(struct triggers *t, const struct fr_ev_common *ev)
{
	if (!t->job)
		return;
	unsigned gen = atomic_load_explicit(&t->job->gen, memory_order_relaxed);
	unsigned slot = ev->pid & 63;
	if (t->job_cache[slot] == ev->pid && t->job_cache_gen[slot] == gen)
		return;
	job_pids_mark(t->job, ev->pid, JOB_EVENTS, ev->ts_ns, 0);
	t->job_cache[slot] = ev->pid;
	t->job_cache_gen[slot] = gen;
}

void triggers_on_event(void *ctx, const struct fr_ev_common *ev)
{
	struct triggers *t = ctx;
	switch (ev->h.type) {
	case FR_EV_CUDA:
		mark_job(t, ev);
		on_cuda(t, (const struct fr_ev_cuda *)ev);
		if (t->watch)
			hang_watch_event(t->watch, ev);
		break;
	case FR_EV_NCCL:
		mark_job(t, ev);
		on_nccl(t, (const struct fr_ev_nccl *)ev);
		break;
	case FR_EV_RDMA_CTRL:
	case FR_EV_RDMA_POST:
	case FR_EV_RDMA_CQE:
		mark_job(t, ev);
		break;
	case FR_EV_PROC_EXIT:
		on_exit_event(t, (const struct fr_ev_proc *)ev);
		if (t->watch) /* a process gone waits for nothing */
			hang_watch_event(t->watch, ev);
		break;
	case FR_EV_PROC_EXEC:
		if (t->watch)
			hang_watch_event(t->watch, ev);
		break;
	}
}

bool triggers_take_due(struct triggers *t, uint64_t now_ns, struct trigger_hit *out,
		       uint32_t *merged, uint16_t *oom_retry)
{
	bool due = false;
	pthread_mutex_lock(&t->mu);
	if (t->pending && now_ns >= t->hit.due_ns) {
		*out = t->hit;
		*merged = t->merged;
		*oom_retry = t->hit.kind == FR_TRIGGER_OOM ? t->oom_retry : FR_OOM_RETRY_NONE;
		t->pending = false;
		t->merged = 0;
		if (t->hit.kind == FR_TRIGGER_OOM)
			t->oom_tid = 0;
		due = true;
	}
	pthread_mutex_unlock(&t->mu);
	return due;
}
