/* The syscalls model: per file, one bucket per x86-64 syscall number.  Not
 * for per-stack syscall profiles (that will be a flame kind of its own). */
#include "model_syscalls.h"
#include "trace_set.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct model_syscalls {
	struct model_opts opts;
	struct syscall_stat **per_file; /* SYSCALLS_MAX_NR + 1 buckets each */
	uint32_t n_files;
};

static void *sc_create(const struct model_opts *opts)
{
	struct model_syscalls *m = calloc(1, sizeof(*m));
	if (m && opts)
		m->opts = *opts;
	return m;
}

static int sc_feed(void *state, uint32_t file_index, const struct fr_rec_hdr *rec)
{
	struct model_syscalls *m = state;
	struct fr_ev_syscall ev;
	uint16_t type;
	memcpy(&type, (const uint8_t *)rec + offsetof(struct fr_rec_hdr, type), sizeof(type));
	if (type != FR_EV_SYSCALL)
		return 0;
	memcpy(&ev, rec, sizeof(ev)); /* size checked by the decoder */
	if (m->opts.filter_pid && ev.c.pid != m->opts.pid)
		return 0;
	if (file_index >= m->n_files) {
		struct syscall_stat **grown = realloc(m->per_file, (file_index + 1) * sizeof(*grown));
		if (!grown)
			return -1;
		memset(grown + m->n_files, 0, (file_index + 1 - m->n_files) * sizeof(*grown));
		m->per_file = grown;
		m->n_files = file_index + 1;
	}
	if (!m->per_file[file_index]) {
		struct syscall_stat *b = calloc(SYSCALLS_MAX_NR + 1, sizeof(*b));
		if (!b)
			return -1;
		for (uint32_t i = 0; i <= SYSCALLS_MAX_NR; i++)
			b[i].nr = i;
		m->per_file[file_index] = b;
	}
	struct syscall_stat *s = &m->per_file[file_index][ev.nr < SYSCALLS_MAX_NR ? ev.nr : SYSCALLS_MAX_NR];
	s->count++;
	s->total_ns += ev.duration_ns;
	if (ev.duration_ns > s->max_ns)
		s->max_ns = ev.duration_ns;
	if (ev.ret < 0)
		s->failed++;
	return 0;
}

static int sc_finish(void *state, struct trace_set *ts, struct frec_error *err)
{
	(void)state;
	(void)ts;
	(void)err;
	return 0;
}

static void sc_destroy(void *state)
{
	struct model_syscalls *m = state;
	if (!m)
		return;
	for (uint32_t i = 0; i < m->n_files; i++)
		free(m->per_file[i]);
	free(m->per_file);
	free(m);
}

static int by_total_desc(const void *a, const void *b)
{
	const struct syscall_stat *x = a, *y = b;
	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->nr < y->nr ? -1 : x->nr > y->nr;
}

size_t model_syscalls_top(const void *state, uint32_t file_index,
			  struct syscall_stat *out, size_t max_out)
{
	const struct model_syscalls *m = state;
	if (file_index >= m->n_files || !m->per_file[file_index] || !max_out)
		return 0;
	struct syscall_stat used[SYSCALLS_MAX_NR + 1];
	size_t n = 0;
	for (uint32_t i = 0; i <= SYSCALLS_MAX_NR; i++)
		if (m->per_file[file_index][i].count)
			used[n++] = m->per_file[file_index][i];
	qsort(used, n, sizeof(*used), by_total_desc);
	if (n > max_out)
		n = max_out;
	memcpy(out, used, n * sizeof(*out));
	return n;
}

const struct model_ops model_syscalls_ops = {
	.name = "syscalls",
	.create = sc_create,
	.feed = sc_feed,
	.finish = sc_finish,
	.destroy = sc_destroy,
};
