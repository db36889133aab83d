/* GPU kernel times joined to their launches; see model_gpu.h.
 *
 * The pass keeps every launch (process, correlation id -> thread, stack)
 * and every kernel (48 bytes each); the join waits for finish, because a
 * kernel's record reaches the trace when CUPTI hands over its buffer,
 * seconds after the launch and possibly in another file chunk's order.
 * The CUDA call around a launch is found during the pass: the library's
 * launch probe fires inside that call, so the call's record (written at
 * its return) arrives after the launch on the same thread.
 *
 * The flame graph puts each kernel's time under its launch's stack, cut
 * after the outermost launch API frame (cudaLaunchKernel, cuLaunchKernel,
 * cudaGraphLaunch...): what lies below it is the driver, CUPTI and the
 * injection library, the same in every launch.  A stack without such a
 * frame (frame-pointer walks stop inside the runtime) loses its CUPTI
 * frames only. */
#include "model_gpu.h"
#include "cuda_funcs.h"
#include "fr_family.h"
#include "grow.h"
#include "hmap.h"
#include "lat_hist.h"
#include "strpool.h"
#include "symbolize.h"
#include "trace_set.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define GPU_LATENCY_BITS 7

struct launch {
	uint32_t file, pid, tid, stack_id;
	uint64_t ts_ns;
	uint16_t api;       /* the CUDA call around it (enum fr_cuda_func), 0: none recorded */
	uint8_t has_kernel;
};

struct kernel {
	uint64_t start_ns, end_ns, correlation_id;
	uint32_t file, pid, device, stream;
	uint32_t name;      /* index into names */
	uint32_t launch;    /* index into launches + 1, 0: none (set at finish) */
};

struct name_row {
	struct lat_hist lat;
	const char *name;
};

struct model_gpu {
	struct model_opts opts;
	struct launch *launches;
	size_t n_launches, cap_launches;
	struct hmap launch_at;     /* (file << 32 | pid, correlation id) -> index + 1 */
	struct hmap open_launch;   /* (file, tid) -> index + 1 of its last launch not yet in a call */
	struct kernel *kernels;
	size_t n_kernels, cap_kernels;
	struct strpool *pool;
	struct hmap name_at;       /* (pooled pointer, 0) -> index + 1 */
	struct name_row *names;
	size_t n_names, cap_names;
	const char **leaf_names;
	struct stack_profile rows;
	struct gpu_result result;
};

static void *create(const struct model_opts *opts)
{
	struct model_gpu *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	if (opts)
		m->opts = *opts;
	hmap_init(&m->launch_at);
	hmap_init(&m->open_launch);
	hmap_init(&m->name_at);
	stack_profile_init(&m->rows);
	if (!(m->pool = strpool_new())) {
		free(m);
		return NULL;
	}
	return m;
}

const char *gpu_kernel_name(const char *raw, char *buf, char **to_free)
{
	*to_free = NULL;
	memcpy(buf, raw, FR_GPU_KERNEL_NAME);
	buf[FR_GPU_KERNEL_NAME] = 0;
	for (char *c = buf; *c; c++)
		if (!isprint((unsigned char)*c) || *c == '"' || *c == '\\')
			*c = '?';
	if (!buf[0])
		strcpy(buf, "[unnamed kernel]");
	/* a name cut at the record's size does not demangle: it stays as recorded */
	if (buf[0] == '_' && buf[1] == 'Z') {
		int status = -1;
		char *demangled = __cxa_demangle(buf, NULL, NULL, &status);
		if (status == 0 && demangled) {
			for (char *c = demangled; *c; c++)
				if (!isprint((unsigned char)*c) || *c == '"' || *c == '\\')
					*c = '?';
			*to_free = demangled;
			return demangled;
		}
		free(demangled);
		if (status == -1)
			return NULL; /* out of memory */
	}
	return buf;
}

static int intern_name(struct model_gpu *m, const char raw[FR_GPU_KERNEL_NAME], uint32_t *index)
{
	char buf[FR_GPU_KERNEL_NAME + 1], *demangled;
	const char *shown = gpu_kernel_name(raw, buf, &demangled);
	const char *name = shown ? strpool_intern_cstr(m->pool, shown) : NULL;
	free(demangled);
	if (!name)
		return -1;
	int created;
	uint64_t *slot = hmap_slot(&m->name_at, (uint64_t)(uintptr_t)name, 0, &created);
	if (!slot)
		return -1;
	if (created) {
		void *p = m->names;
		if (grow_array(&p, &m->cap_names, m->n_names + 1, sizeof(*m->names), 16))
			return -1;
		m->names = p;
		lat_hist_init(&m->names[m->n_names].lat, GPU_LATENCY_BITS);
		m->names[m->n_names].name = name;
		*slot = ++m->n_names;
	}
	*index = (uint32_t)(*slot - 1);
	return 0;
}

static uint16_t rec_type(const struct fr_rec_hdr *rec)
{
	uint16_t type;
	memcpy(&type, (const uint8_t *)rec + offsetof(struct fr_rec_hdr, type), sizeof(type));
	return type;
}

static int feed_launch(struct model_gpu *m, uint32_t file, const struct fr_ev_gpu_launch *ev)
{
	int created;
	uint64_t *slot = hmap_slot(&m->launch_at, (uint64_t)file << 32 | ev->c.pid,
				   ev->correlation_id, &created);
	if (!slot)
		return -1;
	if (!created)
		return 0; /* a correlation id seen twice (a damaged file): the first stands */
	void *p = m->launches;
	if (grow_array(&p, &m->cap_launches, m->n_launches + 1, sizeof(*m->launches), 64))
		return -1;
	m->launches = p;
	m->launches[m->n_launches] = (struct launch){
		.file = file, .pid = ev->c.pid, .tid = ev->c.tid, .stack_id = ev->stack_id,
		.ts_ns = ev->c.ts_ns,
	};
	*slot = ++m->n_launches;
	m->result.launches++;
	return hmap_put(&m->open_launch, file, ev->c.tid, m->n_launches);
}

/* A CUDA launch call returning on a thread: the launch its span holds is
 * the one it made. */
static int feed_cuda(struct model_gpu *m, uint32_t file, const struct fr_ev_cuda *ev)
{
	enum fr_func_class cls = fr_func_class_of(FR_PROBE_CUDA, ev->func);
	if (cls != FR_FN_LAUNCH && cls != FR_FN_GRAPH_LAUNCH)
		return 0;
	uint64_t at;
	if (!hmap_get(&m->open_launch, file, ev->c.tid, &at) || !at)
		return 0;
	struct launch *l = &m->launches[at - 1];
	if (l->ts_ns >= ev->c.ts_ns && l->ts_ns - ev->c.ts_ns <= ev->duration_ns && !l->api) {
		l->api = ev->func ? ev->func : 0xffff;
		m->result.in_api_call++;
	}
	return hmap_put(&m->open_launch, file, ev->c.tid, 0);
}

static int feed_kernel(struct model_gpu *m, uint32_t file, const struct fr_ev_gpu_kernel *ev)
{
	void *p = m->kernels;
	if (grow_array(&p, &m->cap_kernels, m->n_kernels + 1, sizeof(*m->kernels), 256))
		return -1;
	m->kernels = p;
	struct kernel *k = &m->kernels[m->n_kernels];
	*k = (struct kernel){
		.start_ns = ev->start_ns, .end_ns = ev->end_ns, .correlation_id = ev->correlation_id,
		.file = file, .pid = ev->c.pid, .device = ev->device, .stream = ev->stream,
	};
	if (k->end_ns < k->start_ns) {
		k->end_ns = k->start_ns;
		m->result.bad_times++;
	}
	if (intern_name(m, ev->name, &k->name))
		return -1;
	m->n_kernels++;
	m->result.kernels++;
	m->result.dropped += ev->dropped;
	return 0;
}

static int feed(void *state, uint32_t file_index, const struct fr_rec_hdr *rec)
{
	struct model_gpu *m = state;
	uint16_t type = rec_type(rec);
	if (type == FR_EV_GPU_LAUNCH) {
		struct fr_ev_gpu_launch ev;
		memcpy(&ev, rec, sizeof(ev));
		if (m->opts.filter_pid && ev.c.pid != m->opts.pid)
			return 0;
		return feed_launch(m, file_index, &ev);
	}
	if (type == FR_EV_GPU_KERNEL) {
		struct fr_ev_gpu_kernel ev;
		memcpy(&ev, rec, sizeof(ev));
		if (m->opts.filter_pid && ev.c.pid != m->opts.pid)
			return 0;
		return feed_kernel(m, file_index, &ev);
	}
	if (type == FR_EV_CUDA && m->n_launches) {
		struct fr_ev_cuda ev;
		memcpy(&ev, rec, sizeof(ev));
		return feed_cuda(m, file_index, &ev);
	}
	return 0;
}

/* ---- finish ------------------------------------------------------------- */

static int by_proc_start(const void *a, const void *b)
{
	const struct kernel *x = a, *y = b;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	if (x->end_ns != y->end_ns)
		return x->end_ns < y->end_ns ? -1 : 1;
	return x->correlation_id < y->correlation_id ? -1 : x->correlation_id > y->correlation_id;
}

static int by_stream_start(const void *a, const void *b)
{
	const struct kernel *x = a, *y = b;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	return by_proc_start(a, b);
}

/* Each process's merged busy spans; the kernels are by (file, pid, start). */
static int build_procs(struct model_gpu *m)
{
	struct gpu_result *r = &m->result;
	size_t cap = 0;
	for (size_t i = 0; i < m->n_kernels;) {
		const struct kernel *k0 = &m->kernels[i];
		void *p = r->procs;
		if (grow_array(&p, &cap, r->n_procs + 1, sizeof(*r->procs), 8))
			return -1;
		r->procs = p;
		struct gpu_proc *g = &r->procs[r->n_procs++];
		*g = (struct gpu_proc){ .file = k0->file, .pid = k0->pid };
		size_t cap_busy = 0;
		for (; i < m->n_kernels && m->kernels[i].file == g->file && m->kernels[i].pid == g->pid; i++) {
			const struct kernel *k = &m->kernels[i];
			g->kernels++;
			if (g->n_busy && k->start_ns <= g->busy[g->n_busy - 1].end_ns) {
				if (k->end_ns > g->busy[g->n_busy - 1].end_ns)
					g->busy[g->n_busy - 1].end_ns = k->end_ns;
				continue;
			}
			p = g->busy;
			if (grow_array(&p, &cap_busy, g->n_busy + 1, sizeof(*g->busy), 64))
				return -1;
			g->busy = p;
			g->busy[g->n_busy++] = (struct gpu_span){ k->start_ns, k->end_ns };
		}
		for (size_t s = 0; s < g->n_busy; s++)
			g->busy_ns += g->busy[s].end_ns - g->busy[s].start_ns;
	}
	return 0;
}

/* Per stream: kernels, busy time (a stream's kernels run one after
 * another, but a damaged or merged file may overlap them: the union). */
static int build_streams(struct model_gpu *m)
{
	struct gpu_result *r = &m->result;
	size_t cap = 0;
	for (size_t i = 0; i < m->n_kernels;) {
		const struct kernel *k0 = &m->kernels[i];
		void *p = r->streams;
		if (grow_array(&p, &cap, r->n_streams + 1, sizeof(*r->streams), 8))
			return -1;
		r->streams = p;
		struct gpu_stream_row *s = &r->streams[r->n_streams++];
		*s = (struct gpu_stream_row){ .file = k0->file, .pid = k0->pid, .device = k0->device,
					      .stream = k0->stream, .first_ns = k0->start_ns };
		uint64_t covered_to = 0;
		for (; i < m->n_kernels; i++) {
			const struct kernel *k = &m->kernels[i];
			if (k->file != s->file || k->pid != s->pid || k->device != s->device ||
			    k->stream != s->stream)
				break;
			s->kernels++;
			uint64_t from = k->start_ns > covered_to ? k->start_ns : covered_to;
			if (k->end_ns > from)
				s->busy_ns += k->end_ns - from;
			if (k->end_ns > covered_to)
				covered_to = k->end_ns;
			if (k->end_ns > s->last_ns)
				s->last_ns = k->end_ns;
		}
	}
	return 0;
}

static int row_cmp(const void *a, const void *b)
{
	const struct gpu_kernel_row *x = a, *y = b;
	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int build_rows(struct model_gpu *m)
{
	struct gpu_result *r = &m->result;
	for (size_t i = 0; i < m->n_kernels; i++) {
		const struct kernel *k = &m->kernels[i];
		if (lat_hist_add(&m->names[k->name].lat, k->end_ns - k->start_ns))
			return -1;
	}
	r->rows = calloc(m->n_names ? m->n_names : 1, sizeof(*r->rows));
	if (!r->rows)
		return -1;
	for (size_t i = 0; i < m->n_names; i++) {
		const struct lat_hist *h = &m->names[i].lat;
		r->rows[i] = (struct gpu_kernel_row){
			.name = m->names[i].name, .count = h->count, .total_ns = h->sum_ns,
			.min_ns = h->min_ns, .max_ns = h->max_ns,
			.p50_ns = lat_hist_quantile(h, 0.50), .p99_ns = lat_hist_quantile(h, 0.99),
		};
	}
	r->n_rows = m->n_names;
	qsort(r->rows, r->n_rows, sizeof(*r->rows), row_cmp);
	return 0;
}

/* frame names the launch API's */
static int is_launch_api(const char *frame)
{
	for (uint16_t f = 1; f < CUDA_FUNC_LIMIT; f++) {
		enum fr_func_class cls = fr_func_class_of(FR_PROBE_CUDA, f);
		const char *name = (cls == FR_FN_LAUNCH || cls == FR_FN_GRAPH_LAUNCH) ?
					   cuda_func_name(f) : NULL;
		if (!name)
			continue;
		size_t n = strlen(name);
		if (strncmp(frame, name, n) == 0 &&
		    (!frame[n] || frame[n] == '_' || frame[n] == ' ' || frame[n] == '('))
			return 1;
	}
	return 0;
}

static int mentions_cupti(const char *frame)
{
	for (const char *c = frame; *c; c++)
		if (strncasecmp(c, "cupti", 5) == 0)
			return 1;
	return 0;
}

/* The frames a launch's kernels go under (see the top of the file). */
static size_t cut_launch_frames(const char **frames, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (is_launch_api(frames[i]))
			return i + 1;
	size_t keep = n;
	while (keep > 1 && mentions_cupti(frames[keep - 1]))
		keep--;
	return keep;
}

static int build_flame(struct model_gpu *m, struct trace_set *ts, struct frec_error *err)
{
	struct stack_profile *p = &m->rows;
	struct call_time_result *fl = &m->result.flame;
	for (size_t i = 0; i < m->n_kernels; i++) {
		const struct kernel *k = &m->kernels[i];
		const struct launch *l = k->launch ? &m->launches[k->launch - 1] : NULL;
		uint64_t ns = k->end_ns - k->start_ns;
		/* a kernel without its launch: stack 0 under thread 0 */
		if (stack_profile_add(p, k->file, k->pid, l ? l->tid : 0, l ? l->stack_id : 0,
				      k->name, 1, ns))
			return -1;
		fl->calls++;
		fl->calls_no_stack += !l || !l->stack_id;
		fl->total_ns += ns;
	}
	stack_profile_sort(p);
	p->count_type = "kernels";
	p->count_unit = "count";
	p->value_type = "gpu";
	p->value_unit = "nanoseconds";
	m->leaf_names = calloc(m->n_names ? m->n_names : 1, sizeof(*m->leaf_names));
	if (!m->leaf_names || !(fl->tree = flame_tree_new()))
		return -1;
	for (size_t i = 0; i < m->n_names; i++)
		m->leaf_names[i] = m->names[i].name;
	p->leaf_names = m->leaf_names;
	p->n_leaf_names = m->n_names;
	struct symbolizer *sym = p->n_rows ? trace_set_symbolizer(ts, err) : NULL;
	if (p->n_rows && !sym)
		return -2;
	const char **frames = NULL;
	size_t cap = 0;
	for (size_t i = 0; i < p->n_rows; i++) {
		const struct stack_row *r = &p->rows[i];
		const struct trace_file *f = trace_set_file(ts, r->file);
		if (!f)
			continue;
		size_t n;
		if (r->tid == 0 && r->stack_id == 0) {
			if (grow_array((void **)&frames, &cap, 2, sizeof(*frames), 8)) {
				free(frames);
				return -1;
			}
			frames[0] = "[no launch]";
			n = 1;
		} else {
			n = symbolize_frames(sym, f, r->file, r->stack_id, &frames, &cap, NULL);
			if (n == SIZE_MAX) {
				free(frames);
				return -1;
			}
			n = cut_launch_frames(frames, n);
		}
		frames[n++] = stack_profile_leaf(p, r);
		if (flame_tree_add(fl->tree, frames, n, r->value)) {
			free(frames);
			return -1;
		}
	}
	free(frames);
	if (m->opts.profile)
		fl->profile = p;
	return 0;
}

static int finish(void *state, struct trace_set *ts, struct frec_error *err)
{
	struct model_gpu *m = state;
	struct gpu_result *r = &m->result;
	for (size_t i = 0; i < m->n_kernels; i++) {
		struct kernel *k = &m->kernels[i];
		uint64_t at;
		if (hmap_get(&m->launch_at, (uint64_t)k->file << 32 | k->pid, k->correlation_id, &at)) {
			k->launch = (uint32_t)at;
			if (!m->launches[at - 1].has_kernel) {
				m->launches[at - 1].has_kernel = 1;
				r->joined++;
			} else {
				r->joined++; /* a launch may queue several kernels (a graph) */
			}
		}
		r->total_ns += k->end_ns - k->start_ns;
	}
	for (size_t i = 0; i < m->n_launches; i++)
		r->launches_without_kernel += !m->launches[i].has_kernel;
	if (build_rows(m))
		goto oom;
	int rc = build_flame(m, ts, err);
	if (rc == -2)
		return -1;
	if (rc)
		goto oom;
	if (m->n_kernels) /* qsort's base may not be NULL, even for 0 items */
		qsort(m->kernels, m->n_kernels, sizeof(*m->kernels), by_stream_start);
	if (build_streams(m))
		goto oom;
	if (m->n_kernels)
		qsort(m->kernels, m->n_kernels, sizeof(*m->kernels), by_proc_start);
	if (build_procs(m))
		goto oom;
	return 0;
oom:
	frec_error_set(err, "flightrec-analyze", -1, ENOMEM, "out of memory joining GPU kernels");
	return -1;
}

static void destroy(void *state)
{
	struct model_gpu *m = state;
	if (!m)
		return;
	for (size_t i = 0; i < m->n_names; i++)
		lat_hist_free(&m->names[i].lat);
	free(m->names);
	free(m->leaf_names);
	free(m->launches);
	free(m->kernels);
	hmap_free(&m->launch_at);
	hmap_free(&m->open_launch);
	hmap_free(&m->name_at);
	strpool_free(m->pool);
	stack_profile_free(&m->rows);
	flame_tree_free(m->result.flame.tree);
	free(m->result.rows);
	free(m->result.streams);
	for (size_t i = 0; i < m->result.n_procs; i++)
		free(m->result.procs[i].busy);
	free(m->result.procs);
	free(m);
}

const struct gpu_result *model_gpu_result(const void *state)
{
	return &((const struct model_gpu *)state)->result;
}

const struct gpu_proc *model_gpu_proc(const struct gpu_result *r, uint32_t file, uint32_t pid)
{
	size_t lo = 0, hi = r->n_procs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct gpu_proc *p = &r->procs[mid];
		if (p->file == file && p->pid == pid)
			return p;
		if (p->file < file || (p->file == file && p->pid < pid))
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

size_t gpu_first_span_after(const struct gpu_proc *p, uint64_t a)
{
	size_t lo = 0, hi = p->n_busy;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->busy[mid].end_ns <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uint64_t gpu_work_left(const struct gpu_proc *p, uint64_t t0, uint64_t t1)
{
	if (!p)
		return 0;
	uint64_t end = t0; /* the spans are merged: the walk is the call's few */
	for (size_t i = gpu_first_span_after(p, t0); i < p->n_busy && p->busy[i].start_ns < t1; i++)
		end = p->busy[i].end_ns;
	return (end < t1 ? end : t1) - t0;
}

uint64_t gpu_busy_within(const struct gpu_proc *p, uint64_t a, uint64_t b)
{
	if (!p || b <= a)
		return 0;
	uint64_t busy = 0;
	for (size_t i = gpu_first_span_after(p, a); i < p->n_busy && p->busy[i].start_ns < b; i++) {
		uint64_t s = p->busy[i].start_ns > a ? p->busy[i].start_ns : a;
		uint64_t e = p->busy[i].end_ns < b ? p->busy[i].end_ns : b;
		if (e > s)
			busy += e - s;
	}
	return busy;
}

const struct model_ops model_gpu_ops = {
	.name = "gpu",
	.create = create,
	.feed = feed,
	.finish = finish,
	.destroy = destroy,
};
