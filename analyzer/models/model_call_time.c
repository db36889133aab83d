/* Time in CUDA API calls and in system calls by stack; see
 * model_call_time.h.  Rows (file, pid, tid, stack, call) accumulate while
 * the decoder streams; the flame tree is built from them at finish, each
 * distinct stack symbolized once per row. */
#include "model_call_time.h"
#include "cuda_funcs.h"
#include "grow.h"
#include "hmap.h"
#include "model_syscalls.h"
#include "recorder_cmdline.h"
#include "symbolize.h"
#include "syscall_names.h"
#include "trace_set.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Calls of one thread not yet inside a later one: a nested call returns,
 * and so arrives, before the call around it. */
#define NEST_WINDOW 16
struct pending {
	uint64_t start[NEST_WINDOW], end[NEST_WINDOW], dur[NEST_WINDOW];
	unsigned n;
};

struct model_call_time {
	struct model_opts opts;
	enum call_kind {
		CALL_SYSCALL,      /* syscall_time: FR_EV_SYSCALL */
		CALL_CUDA,         /* cuda_time: FR_EV_CUDA */
		CALL_OFFCPU,       /* offcpu_time: FR_EV_SCHED */
	} kind;
	struct stack_profile rows;
	struct hmap thread_at;     /* (file, tid) -> index into threads */
	struct pending *threads;
	size_t n_threads, cap_threads;
	const char *func_names[CUDA_FUNC_LIMIT];
	char (*sys_names)[40];     /* "[syscall] read" ("[off-cpu] read"), by number */
	const char **sys_name_ptrs;
	struct call_time_result result;
};

static void *create(const struct model_opts *opts, enum call_kind kind)
{
	struct model_call_time *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	if (opts)
		m->opts = *opts;
	m->kind = kind;
	stack_profile_init(&m->rows);
	hmap_init(&m->thread_at);
	return m;
}

static void *cuda_create(const struct model_opts *opts)
{
	return create(opts, CALL_CUDA);
}

static void *sys_create(const struct model_opts *opts)
{
	return create(opts, CALL_SYSCALL);
}

static void *offcpu_create(const struct model_opts *opts)
{
	return create(opts, CALL_OFFCPU);
}

static uint16_t rec_type(const struct fr_rec_hdr *rec)
{
	uint16_t type;
	memcpy(&type, (const uint8_t *)rec + offsetof(struct fr_rec_hdr, type), sizeof(type));
	return type;
}

/* The call's own time: its duration less that of the calls nested in it. */
static int self_time(struct model_call_time *m, uint32_t file, uint32_t tid, uint64_t start,
		     uint64_t dur, uint64_t *self)
{
	int created;
	uint64_t *at = hmap_slot(&m->thread_at, file, tid, &created);
	if (!at)
		return -1;
	if (created) {
		void *p = m->threads;
		if (grow_array(&p, &m->cap_threads, m->n_threads + 1, sizeof(*m->threads), 16))
			return -1;
		m->threads = p;
		memset(&m->threads[m->n_threads], 0, sizeof(*m->threads));
		*hmap_slot(&m->thread_at, file, tid, NULL) = m->n_threads++;
		at = hmap_slot(&m->thread_at, file, tid, NULL);
	}
	struct pending *t = &m->threads[*at];
	uint64_t end = start + dur, inner = 0;
	while (t->n && t->start[t->n - 1] >= start && t->end[t->n - 1] <= end) {
		inner += t->dur[--t->n];
		m->result.nested++;
	}
	if (t->n == NEST_WINDOW) { /* the oldest can no longer be claimed in practice */
		memmove(t->start, t->start + 1, (NEST_WINDOW - 1) * sizeof(*t->start));
		memmove(t->end, t->end + 1, (NEST_WINDOW - 1) * sizeof(*t->end));
		memmove(t->dur, t->dur + 1, (NEST_WINDOW - 1) * sizeof(*t->dur));
		t->n--;
	}
	t->start[t->n] = start;
	t->end[t->n] = end;
	t->dur[t->n++] = dur;
	*self = dur > inner ? dur - inner : 0;
	return 0;
}

static int feed(void *state, uint32_t file_index, const struct fr_rec_hdr *rec)
{
	struct model_call_time *m = state;
	uint16_t type = rec_type(rec);
	uint32_t pid, tid, stack, leaf;
	uint64_t dur;
	if (m->kind == CALL_CUDA && type == FR_EV_CUDA) {
		struct fr_ev_cuda ev;
		memcpy(&ev, rec, sizeof(ev));
		if (m->opts.filter_pid && ev.c.pid != m->opts.pid)
			return 0;
		if (self_time(m, file_index, ev.c.tid, ev.c.ts_ns, ev.duration_ns, &dur))
			return -1;
		pid = ev.c.pid;
		tid = ev.c.tid;
		stack = ev.stack_id;
		leaf = ev.func < CUDA_FUNC_LIMIT ? ev.func : 0;
		if (ev.func == FR_CUDA_LAUNCH_KERNEL || ev.func == FR_CU_LAUNCH_KERNEL ||
		    ev.func == FR_CU_LAUNCH_KERNEL_EX) {
			m->result.launches++;
			m->result.launches_with_stack += !(ev.flags & FR_CUDAF_UNSAMPLED);
		}
	} else if (m->kind == CALL_OFFCPU && type == FR_EV_SCHED) {
		struct fr_ev_sched ev;
		memcpy(&ev, rec, sizeof(ev));
		if (m->opts.filter_pid && ev.c.pid != m->opts.pid)
			return 0;
		pid = ev.c.pid;
		tid = ev.c.tid;
		stack = ev.stack_id;
		leaf = ev.nr >= 0 && (uint32_t)ev.nr < SYSCALLS_MAX_NR ? (uint32_t)ev.nr : SYSCALLS_MAX_NR;
		dur = ev.duration_ns;
	} else if (m->kind == CALL_SYSCALL && type == FR_EV_SYSCALL) {
		struct fr_ev_syscall ev;
		memcpy(&ev, rec, sizeof(ev));
		if (m->opts.filter_pid && ev.c.pid != m->opts.pid)
			return 0;
		pid = ev.c.pid;
		tid = ev.c.tid;
		stack = ev.stack_id;
		leaf = ev.nr < SYSCALLS_MAX_NR ? ev.nr : SYSCALLS_MAX_NR;
		dur = ev.duration_ns;
	} else {
		return 0;
	}
	m->result.calls++;
	m->result.calls_no_stack += !stack;
	m->result.total_ns += dur;
	return stack_profile_add(&m->rows, file_index, pid, tid, stack, leaf, 1, dur);
}

static int leaf_names(struct model_call_time *m)
{
	struct stack_profile *p = &m->rows;
	if (m->kind == CALL_CUDA) {
		for (uint16_t f = 0; f < CUDA_FUNC_LIMIT; f++)
			m->func_names[f] = cuda_func_name(f);
		p->leaf_names = m->func_names;
		p->n_leaf_names = CUDA_FUNC_LIMIT;
		return 0;
	}
	m->sys_names = calloc(SYSCALLS_MAX_NR + 1, sizeof(*m->sys_names));
	m->sys_name_ptrs = calloc(SYSCALLS_MAX_NR + 1, sizeof(*m->sys_name_ptrs));
	if (!m->sys_names || !m->sys_name_ptrs)
		return -1;
	const char *tag = m->kind == CALL_OFFCPU ? "[off-cpu]" : "[syscall]";
	for (uint32_t nr = 0; nr <= SYSCALLS_MAX_NR; nr++) {
		const char *name = nr < SYSCALLS_MAX_NR ? syscall_name(nr) : NULL;
		if (name)
			snprintf(m->sys_names[nr], sizeof(m->sys_names[nr]), "%s %.28s", tag, name);
		else if (nr < SYSCALLS_MAX_NR)
			snprintf(m->sys_names[nr], sizeof(m->sys_names[nr]), "%s %u", tag, nr);
		else
			snprintf(m->sys_names[nr], sizeof(m->sys_names[nr]), "%s %u+", tag, nr);
		m->sys_name_ptrs[nr] = m->sys_names[nr];
	}
	p->leaf_names = m->sys_name_ptrs;
	p->n_leaf_names = SYSCALLS_MAX_NR + 1;
	return 0;
}

static int finish(void *state, struct trace_set *ts, struct frec_error *err)
{
	struct model_call_time *m = state;
	struct stack_profile *p = &m->rows;
	const struct trace_file *f0 = trace_set_file(ts, 0);
	m->result.launch_stack_every = (unsigned)recorder_option_uint(
		f0 ? f0->cmdline : "", "--launch-stack-every", 0, 64);
	stack_profile_sort(p);
	p->count_type = "calls";
	p->count_unit = "count";
	p->value_type = m->kind == CALL_CUDA ? "cuda_api" : m->kind == CALL_OFFCPU ? "offcpu" : "syscall";
	p->value_unit = "nanoseconds";
	if (leaf_names(m) || !(m->result.tree = flame_tree_new()))
		goto oom;
	struct symbolizer *sym = p->n_rows ? trace_set_symbolizer(ts, err) : NULL;
	if (p->n_rows && !sym)
		return -1;
	const char **frames = NULL;
	size_t cap = 0;
	for (size_t i = 0; i < p->n_rows; i++) {
		const struct stack_row *r = &p->rows[i];
		const struct trace_file *f = trace_set_file(ts, r->file);
		if (!f)
			continue;
		size_t n = symbolize_frames(sym, f, r->file, r->stack_id, &frames, &cap, NULL);
		if (n == SIZE_MAX) {
			free(frames);
			goto oom;
		}
		frames[n++] = stack_profile_leaf(p, r); /* symbolize_frames leaves room for one */
		if (flame_tree_add(m->result.tree, frames, n, r->value)) {
			free(frames);
			goto oom;
		}
	}
	free(frames);
	if (m->opts.profile)
		m->result.profile = p;
	return 0;
oom:
	frec_error_set(err, "flightrec-analyze", -1, ENOMEM, "out of memory building the call-time profile");
	return -1;
}

static void destroy(void *state)
{
	struct model_call_time *m = state;
	if (!m)
		return;
	stack_profile_free(&m->rows);
	hmap_free(&m->thread_at);
	free(m->threads);
	free(m->sys_names);
	free(m->sys_name_ptrs);
	flame_tree_free(m->result.tree);
	free(m);
}

const struct call_time_result *model_call_time_result(const void *state)
{
	return &((const struct model_call_time *)state)->result;
}

const struct model_ops model_cuda_time_ops = {
	.name = "cuda_time",
	.create = cuda_create,
	.feed = feed,
	.finish = finish,
	.destroy = destroy,
};

const struct model_ops model_syscall_time_ops = {
	.name = "syscall_time",
	.create = sys_create,
	.feed = feed,
	.finish = finish,
	.destroy = destroy,
};

const struct model_ops model_offcpu_time_ops = {
	.name = "offcpu_time",
	.create = offcpu_create,
	.feed = feed,
	.finish = finish,
	.destroy = destroy,
};
