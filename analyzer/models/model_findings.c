/* The findings model's interface: it needs the cuda, mem, stragglers and
 * rdma models (their results are read at finish; cuda also hands over each
 * copy as it classifies it, pinned or pageable), and keeps, per process,
 * the events the idle analysis reads: synchronizing calls, launches,
 * copies, system calls and CPU samples; at finish it adds the NCCL calls
 * of the stragglers model's ranks (findings_nccl.c), so their time is read
 * with the rest.  The analysis is in findings_idle.c, the rules in
 * findings_kinds.c.
 *
 * Memory: the kept events grow with the recording (48 bytes each);
 * they are sorted at finish because the recorder writes a call when it
 * returns, not when it starts.  A streaming version would close an idle
 * interval once every thread's events are past it. */
#include "model_findings.h"
#include "findings_private.h"
#include "grow.h"
#include "fr_family.h"
#include "model_cuda.h"
#include "symbolize.h"
#include "trace_set.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void *fx_create(const struct model_opts *opts)
{
	struct fx_state *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	if (opts)
		m->opts = *opts;
	hmap_init(&m->proc_index);
	hmap_init(&m->listed);
	return m;
}

struct fx_proc *fx_proc_get(struct fx_state *m, uint32_t file, uint32_t pid)
{
	int created;
	uint64_t *v = hmap_slot(&m->proc_index, file, pid, &created);
	if (!v)
		return NULL;
	if (created) {
		if (m->n_procs == m->cap_procs) {
			size_t cap = m->cap_procs ? m->cap_procs * 2 : 8;
			struct fx_proc *grown = realloc(m->procs, cap * sizeof(*grown));
			if (!grown)
				return NULL;
			m->procs = grown;
			m->cap_procs = cap;
		}
		struct fx_proc *p = &m->procs[m->n_procs];
		memset(p, 0, sizeof(*p));
		p->file = file;
		p->pid = pid;
		hmap_init(&p->where);
		*v = m->n_procs++;
	}
	return &m->procs[*v];
}

int fx_push(struct fx_proc *p, const struct fx_ev *e)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 256;
		struct fx_ev *grown = realloc(p->ev, cap * sizeof(*grown));
		if (!grown)
			return -1;
		p->ev = grown;
		p->cap = cap;
	}
	p->ev[p->n++] = *e;
	return 0;
}

/* Calls that leave the device empty when they return without being
 * synchronizes: cudaFree (documented to synchronize the device, and the
 * stand-in's does), freeing and allocating pinned host memory.  Not
 * cudaMalloc: NVIDIA documents no synchronization, the stand-in makes
 * none, and a cudaMalloc after queued kernels would open an idle interval
 * while they still run. */
static int is_implicit_sync(uint16_t func)
{
	switch (func) {
	case FR_CUDA_FREE: case FR_CU_MEM_FREE: case FR_CUDA_FREE_HOST:
	case FR_CUDA_MALLOC_HOST: case FR_CUDA_HOST_ALLOC: case FR_CU_MEM_HOST_ALLOC:
		return 1;
	}
	return 0;
}

/* Device ordinals fit 16 bits; anything else reads as unknown. */
static int16_t device16(int32_t device)
{
	return device >= 0 && device <= INT16_MAX ? (int16_t)device : -1;
}

static int on_copy(void *ctx, const struct cuda_copy_seen *c)
{
	struct fx_state *m = ctx;
	struct fx_proc *p = fx_proc_get(m, c->file, c->pid);
	if (!p)
		return -1;
	struct fx_ev e = {
		.t0 = c->start_ns, .t1 = c->start_ns + c->duration_ns, .bytes = c->bytes,
		.stream = fx_stream_key(c->stream, c->flags & FR_CUDAF_PTSZ),
		.tid = c->tid, .stack_id = c->stack_id, .type = FXE_COPY, .what = c->func,
		.pageable = c->host == CUDA_HOST_PAGEABLE, .async = c->mode == CUDA_MODE_ASYNC,
		.d2h = c->dir == CUDA_DIR_D2H,
		.device = device16(c->device),
	};
	return fx_push(p, &e);
}

static void fx_bind(void *state, const char *name, void *dep)
{
	struct fx_state *m = state;
	if (!strcmp(name, "cuda")) {
		m->cuda = dep;
		model_cuda_on_copy(dep, on_copy, m);
	} else if (!strcmp(name, "mem")) {
		m->mem = dep;
	} else if (!strcmp(name, "stragglers")) {
		m->strag = dep;
	} else if (!strcmp(name, "rdma")) {
		m->rdma = dep;
	} else if (!strcmp(name, "gpu")) {
		m->gpu = dep;
	}
}

static int feed_cuda(struct fx_state *m, uint32_t file, const struct fr_rec_hdr *rec)
{
	struct fr_ev_cuda ev;
	memcpy(&ev, rec, sizeof(ev)); /* size checked by the decoder */
	m->cuda_events++;
	enum fr_func_class cls = fr_func_class_of(FR_PROBE_CUDA, ev.func);
	uint16_t type;
	if (cls == FR_FN_SYNC)
		type = FXE_SYNC;
	else if (is_implicit_sync(ev.func))
		type = FXE_IMPLICIT;
	else if ((cls == FR_FN_LAUNCH || cls == FR_FN_GRAPH_LAUNCH) && ev.result == 0)
		type = FXE_WORK;
	else if (cls == FR_FN_QUERY && ev.result == 0)
		type = FXE_QUERY; /* may end an enqueued collective's span (findings_nccl.c) */
	else
		return 0; /* copies come classified from model_cuda (on_copy) */
	struct fx_proc *p = fx_proc_get(m, file, ev.c.pid);
	if (!p)
		return -1;
	/* the stream: a stream synchronize names the one it waited for in ptr */
	uint64_t handle = ev.func == FR_CUDA_STREAM_SYNC ? ev.ptr : ev.stream;
	struct fx_ev e = {
		.t0 = ev.c.ts_ns, .t1 = ev.c.ts_ns + ev.duration_ns,
		.stream = fx_stream_key(handle, ev.flags & FR_CUDAF_PTSZ), .tid = ev.c.tid,
		.stack_id = ev.stack_id, .type = type, .what = ev.func, .device = device16(ev.device),
	};
	return fx_push(p, &e);
}

static int fx_feed(void *state, uint32_t file, const struct fr_rec_hdr *rec)
{
	struct fx_state *m = state;
	uint16_t type;
	memcpy(&type, (const uint8_t *)rec + offsetof(struct fr_rec_hdr, type), sizeof(type));
	uint32_t pid;
	memcpy(&pid, (const uint8_t *)rec + offsetof(struct fr_ev_common, pid), sizeof(pid));
	if (m->opts.filter_pid && pid != m->opts.pid)
		return 0;
	switch (type) {
	case FR_EV_CUDA:
		return feed_cuda(m, file, rec);
	case FR_EV_SYSCALL: {
		struct fr_ev_syscall ev;
		memcpy(&ev, rec, sizeof(ev));
		m->syscalls++;
		struct fx_proc *p = fx_proc_get(m, file, pid);
		struct fx_ev e = {
			.t0 = ev.c.ts_ns, .t1 = ev.c.ts_ns + ev.duration_ns,
			.bytes = ev.ret > 0 ? (uint64_t)ev.ret : 0,
			.fd = (ev.sc_flags & FR_SYSCALL_HAS_FD) ? ev.fd : -1, .tid = ev.c.tid,
			.stack_id = ev.stack_id, .type = FXE_SYSCALL,
			.what = ev.nr < 0xffff ? (uint16_t)ev.nr : 0xffff,
		};
		return p ? fx_push(p, &e) : -1;
	}
	case FR_EV_SCHED: {
		struct fr_ev_sched ev;
		memcpy(&ev, rec, sizeof(ev));
		m->offcpu_events++;
		struct fx_proc *p = fx_proc_get(m, file, pid);
		if (!p)
			return -1;
		if (p->n_offcpu == p->cap_offcpu) {
			size_t cap = p->cap_offcpu ? 2 * p->cap_offcpu : 64;
			struct fx_offcpu *g = realloc(p->offcpu, cap * sizeof(*g));
			if (!g)
				return -1;
			p->offcpu = g;
			p->cap_offcpu = cap;
		}
		p->offcpu[p->n_offcpu++] = (struct fx_offcpu){
			.t0 = ev.c.ts_ns, .off_ns = ev.duration_ns, .tid = ev.c.tid,
			.waker_pid = ev.waker_pid, .waker_tid = ev.waker_tid,
			.nr = ev.nr >= 0 && ev.nr < 0xffff ? (uint16_t)ev.nr : 0xffff,
			.waker_irq = (ev.waker_flags & FR_SCHEDF_WAKER_IRQ) != 0,
		};
		return 0;
	}
	case FR_EV_CPU_SAMPLE: {
		struct fr_ev_cpu_sample ev;
		memcpy(&ev, rec, sizeof(ev));
		m->samples++;
		/* the process now, in feed order; its samples in the second look */
		return fx_proc_get(m, file, pid) ? 0 : -1;
	}
	case FR_EV_FD_PATH: {
		struct fr_ev_fd_path ev;
		memcpy(&ev, rec, sizeof(ev));
		struct fx_proc *p = fx_proc_get(m, file, pid);
		if (!p)
			return -1;
		if (m->n_paths == m->cap_paths) {
			size_t cap = m->cap_paths ? 2 * m->cap_paths : 64;
			char **g = realloc(m->paths, cap * sizeof(*g));
			if (!g)
				return -1;
			m->paths = g;
			m->cap_paths = cap;
		}
		size_t n = strnlen(ev.path, sizeof(ev.path));
		char *name = malloc(n + 1);
		if (!name)
			return -1;
		memcpy(name, ev.path, n);
		name[n] = 0;
		m->paths[m->n_paths] = name;
		m->fd_paths++;
		struct fx_ev e = { .t0 = ev.c.ts_ns, .t1 = ev.c.ts_ns, .bytes = m->n_paths++,
				   .fd = ev.fd, .tid = ev.c.tid, .type = FXE_FDPATH };
		return fx_push(p, &e);
	}
	case FR_EV_STEP: {
		struct fx_proc *p = fx_proc_get(m, file, pid);
		if (!p)
			return -1;
		p->step_marks++;
		if (p->n_mark_ts == p->cap_mark_ts) {
			size_t cap = p->cap_mark_ts ? 2 * p->cap_mark_ts : 64;
			uint64_t *g = realloc(p->mark_ts, cap * sizeof(*g));
			if (!g)
				return -1;
			p->mark_ts = g;
			p->cap_mark_ts = cap;
		}
		struct fr_ev_common c;
		memcpy(&c, rec, sizeof(c));
		p->mark_ts[p->n_mark_ts++] = c.ts_ns;
		return 0;
	}
	case FR_EV_PROC_EXIT: {
		struct fr_ev_common c;
		memcpy(&c, rec, sizeof(c));
		uint64_t at;
		/* only a process already seen: an exit alone makes no process */
		if (hmap_get(&m->proc_index, file, pid, &at))
			m->procs[at].exit_ns = c.ts_ns;
		return 0;
	}
	case FR_EV_NCCL:
		m->nccl_events++;
		return 0;
	case FR_EV_RDMA_CTRL: case FR_EV_RDMA_POST: case FR_EV_RDMA_CQE:
		m->rdma_events++;
		return 0;
	}
	return 0;
}

/* What finish does for each process once its samples are in. */
static int attribute_proc(struct fx_state *m, struct fx_proc *p, struct trace_set *ts,
			  struct symbolizer *sym)
{
	if (m->gpu)
		p->gpu = model_gpu_proc(model_gpu_result(m->gpu), p->file, p->pid);
	fx_sort_samples(p);
	if (fx_idle_attribute(p, ts, sym, m->samples > 0, m->paths) || fx_streams_of(p))
		return -1;
	fx_steps_of(p);
	if (!m->opts.idle_intervals) {
		free(p->idle);
		p->idle = NULL;
		p->n_idle = p->cap_idle = 0;
	}
	free(p->samples); /* read by the attribution alone */
	p->samples = NULL;
	p->n_samples = p->cap_samples = 0;
	return 0;
}

static uint32_t proc_file(const void *items, size_t i)
{
	return ((const struct fx_proc *)items)[i].file;
}

static int fx_finish(void *state, struct trace_set *ts, struct frec_error *err)
{
	struct fx_state *m = state;
	struct symbolizer *sym = NULL;
	if (fx_nccl_events(m))
		goto oom;
	for (size_t i = 0; i < m->n_procs; i++)
		fx_sort_events(&m->procs[i]);
	if (fx_nccl_first_done(m))
		goto oom;
	if (m->n_procs && !(sym = trace_set_symbolizer(ts, err)))
		return -1;
	if (m->samples && m->n_procs) {
		/* the processes by file, for the second look (fx_revisit_*) */
		if (file_groups_build(&m->by_file, m->procs, m->n_procs, trace_set_count(ts),
				      proc_file))
			goto oom;
		m->look_sym = sym;
		m->look_ts = ts;
		m->look_file = 0;
		m->looking = 1;
		return 0;
	}
	for (size_t i = 0; i < m->n_procs; i++)
		if (attribute_proc(m, &m->procs[i], ts, sym))
			goto oom;
	if (fx_build_findings(m, ts, sym))
		goto oom;
	return 0;
oom:
	frec_error_set(err, "flightrec-analyze", -1, ENOMEM, "out of memory building the findings");
	return -1;
}

static int fx_revisit_wanted(void *state)
{
	return ((struct fx_state *)state)->looking;
}

/* The processes of the files before file, whose samples are all in. */
static int attribute_files_before(struct fx_state *m, uint32_t file, struct trace_set *ts)
{
	const struct file_groups *g = &m->by_file;
	for (; m->look_file < file && m->look_file < g->n_files; m->look_file++)
		for (size_t k = g->file_at[m->look_file]; k < g->file_at[m->look_file + 1]; k++)
			if (attribute_proc(m, &m->procs[g->order[k]], ts, m->look_sym))
				return -1;
	return 0;
}

static int fx_revisit_feed(void *state, uint32_t file, const struct fr_rec_hdr *rec)
{
	struct fx_state *m = state;
	struct fr_ev_cpu_sample ev;
	memcpy(&ev, rec, sizeof(ev));
	if (m->opts.filter_pid && ev.c.pid != m->opts.pid)
		return 0;
	if (file > m->look_file && attribute_files_before(m, file, m->look_ts))
		return -1;
	uint64_t at;
	if (!hmap_get(&m->proc_index, file, ev.c.pid, &at) || at >= m->n_procs)
		return 0; /* the events pass made one for each: not expected */
	struct fx_proc *p = &m->procs[at];
	void *samples = p->samples;
	if (grow_array(&samples, &p->cap_samples, p->n_samples + 1, sizeof(*p->samples), 256))
		return -1;
	p->samples = samples;
	p->samples[p->n_samples++] = (struct fx_sample){ ev.c.ts_ns, ev.c.tid, ev.stack_id };
	return 0;
}

static int fx_revisit_finish(void *state, struct trace_set *ts, struct frec_error *err)
{
	struct fx_state *m = state;
	m->looking = 0;
	if (attribute_files_before(m, UINT32_MAX, ts) || fx_build_findings(m, ts, m->look_sym)) {
		frec_error_set(err, "flightrec-analyze", -1, ENOMEM,
			       "out of memory building the findings");
		return -1;
	}
	return 0;
}

static void fx_destroy(void *state)
{
	struct fx_state *m = state;
	if (!m)
		return;
	for (size_t i = 0; i < m->n_procs; i++) {
		free(m->procs[i].ev);
		free(m->procs[i].idle);
		free(m->procs[i].mark_ts);
		free(m->procs[i].dl_waits);
		free(m->procs[i].offcpu);
		free(m->procs[i].samples);
		free(m->procs[i].nccl);
		hmap_free(&m->procs[i].where);
	}
	free(m->procs);
	file_groups_free(&m->by_file);
	hmap_free(&m->proc_index);
	hmap_free(&m->listed);
	fx_result_free(&m->result);
	for (size_t i = 0; i < m->n_paths; i++)
		free(m->paths[i]);
	free(m->paths);
	free(m);
}

const struct findings_result *model_findings_result(const void *state)
{
	return &((const struct fx_state *)state)->result;
}

static const char *const fx_needs[] = { "cuda", "mem", "stragglers", "rdma", "gpu", NULL };
static const uint16_t fx_revisit_types[] = { FR_EV_CPU_SAMPLE, 0 };

const struct model_ops model_findings_ops = {
	.name = "findings",
	.create = fx_create,
	.feed = fx_feed,
	.finish = fx_finish,
	.destroy = fx_destroy,
	.needs = fx_needs,
	.bind = fx_bind,
	.revisit_types = fx_revisit_types,
	.revisit_wanted = fx_revisit_wanted,
	.revisit_feed = fx_revisit_feed,
	.revisit_finish = fx_revisit_finish,
};
