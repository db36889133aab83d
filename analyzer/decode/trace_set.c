/* The trace set: its files, the metadata each holds, the models it feeds,
 * and the lookups later stages use (see trace_set.h).  The passes are in
 * trace_run.c, the record decoders in ts_meta.c and stacks/ustack_intern.c.
 * Not for symbolization or analysis. */
#include "trace_set_impl.h"
#include "fr_family.h"
#include "ts_archive.h"
#include "strpool.h"
#include "py_codes.h"
#include "unwind.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Names and fixed sizes come from the format's schema table, the one list
 * of record types (format/schema.c), so analyzer and writer never disagree. */
const char *rec_type_name(uint16_t type)
{
	const struct frec_schema_entry *e = fr_schema_find(type);
	return e ? e->name : NULL;
}

const char *trace_file_type_name(const struct trace_file *f, uint16_t type)
{
	const char *name = rec_type_name(type);
	if (!name && f->schema_names)
		name = f->schema_names[type];
	return name;
}

/* ---- problems ----------------------------------------------------------- */

void ts_problem(struct trace_file *f, uint64_t chunk_offset, uint64_t rec_offset,
		       const char *fmt, ...)
{
	if (f->n_problems < TS_MAX_PROBLEMS_KEPT) {
		struct ts_problem *p = &f->problems[f->n_problems];
		p->chunk_offset = chunk_offset;
		p->rec_offset = rec_offset;
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(p->what, sizeof(p->what), fmt, ap);
		va_end(ap);
	}
	f->n_problems++;
}

/* ---- open / free -------------------------------------------------------- */

char *ts_strndup_printable(const char *s, size_t len, char sep_for_nul)
{
	char *out = malloc(len + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '\0')
			ch = (unsigned char)sep_for_nul;
		else if (ch < 0x20 || ch == 0x7f)
			ch = '?';
		out[i] = (char)ch;
	}
	/* argv ends with a NUL: do not leave a trailing separator. */
	while (len && out[len - 1] == sep_for_nul)
		len--;
	out[len] = '\0';
	return out;
}

void ts_copy_comm(char dst[17], const char src[16])
{
	memcpy(dst, src, 16);
	dst[16] = '\0';
	for (size_t i = 0; i < 16 && dst[i]; i++)
		if ((unsigned char)dst[i] < 0x20 || dst[i] == 0x7f)
			dst[i] = '?';
}

static void trace_file_free(struct trace_file *f)
{
	if (f->reader)
		frec_close(f->reader);
	if (f->member_fd >= 0)
		close(f->member_fd);
	free(f->path);
	free(f->cmdline);
	free(f->snapshot_detail);
	for (size_t i = 0; i < 256; i++)
		free(f->records_by_type[i]);
	for (size_t i = 0; i < f->n_procs; i++)
		free(f->procs[i].cmdline);
	free(f->procs);
	hmap_free(&f->proc_by_pid);
	hmap_free(&f->thread_seen);
	free(f->thread_names);
	for (size_t i = 0; i < f->n_maps; i++)
		free(f->maps[i].path);
	free(f->maps);
	for (size_t i = 0; i < f->n_dsos; i++) {
		free(f->dsos[i].path);
		free(f->dsos[i].syms);
		free(f->dsos[i].strtab);
	}
	free(f->dsos);
	hmap_free(&f->dso_by_id);
	free(f->stacks);
	hmap_free(&f->stack_by_id);
	free(f->ips);
	if (f->schema_names) {
		for (size_t i = 0; i < TS_N_TYPES; i++)
			free(f->schema_names[i]);
		free(f->schema_names);
	}
	free(f->stats_probes);
	free(f->stats_drops);
	free(f->syscall_drops);
	free(f->inflight);
	free(f->clock_pairs);
	hmap_free(&f->env_by_pid);
	ts_identity_free(f);
	free(f->rdma_counters);
	hmap_free(&f->rdma_counter_by_name);
	uw_store_free(f->ustacks);
	py_table_free(f->pycodes);
	hmap_free(&f->python_by_pid);
	free(f->ustack_names);
	free(f->ustack_ids.slots);
	hmap_free(&f->canon_by_hash);
	if (f->pass) {
		free(f->pass->refs);
		free(f->pass->late);
		free(f->pass);
	}
}

/* Opens what in holds (taking its names, descriptors and warnings); in is
 * emptied either way. */
static int open_inputs(struct ts_inputs *in, struct trace_set **out, struct frec_error *err)
{
	size_t n = in->n;
	struct trace_set *ts = calloc(1, sizeof(*ts));
	if (!ts || (n && !(ts->files = calloc(n, sizeof(*ts->files))))) {
		free(ts);
		ts_inputs_free(in);
		frec_error_set(err, "flightrec-analyze", -1, ENOMEM, "out of memory");
		return -1;
	}
	ts->warnings = in->warnings;
	ts->n_warnings = in->n_warnings;
	in->warnings = NULL;
	in->n_warnings = in->cap_warnings = 0;
	for (size_t i = 0; i < n; i++) {
		struct trace_file *f = &ts->files[i];
		struct ts_input *src = &in->v[i];
		ts->n_files = i + 1;
		hmap_init(&f->proc_by_pid);
		hmap_init(&f->thread_seen);
		hmap_init(&f->dso_by_id);
		hmap_init(&f->stack_by_id);
		hmap_init(&f->env_by_pid);
		hmap_init(&f->ident_by_pid);
		hmap_init(&f->rdma_counter_by_name);
		hmap_init(&f->python_by_pid);
		hmap_init(&f->canon_by_hash);
		f->path = src->name;
		f->member_at = src->member_at;
		f->member_fd = src->fd;
		src->name = NULL;
		src->fd = -1;
		int rc = f->member_fd >= 0 ? frec_open_fd(f->member_fd, f->path, &f->reader, err)
					   : frec_open(f->path, &f->reader, err);
		if (rc) {
			f->reader = NULL;
			goto fail;
		}
		/* The header's strings come from the stranger too: printable like
		 * every record's, or `info` and the text writers would print a
		 * trace's escape sequences to the terminal (found by fuzz_records). */
		const char *cmdline = frec_cmdline(f->reader);
		f->cmdline = ts_strndup_printable(cmdline, strlen(cmdline), ' ');
		if (!f->cmdline) {
			frec_error_set(err, f->path, -1, ENOMEM, "out of memory");
			goto fail;
		}
		memcpy(&f->hdr, frec_file_header(f->reader), sizeof(f->hdr));
		f->hdr.host[sizeof(f->hdr.host) - 1] = '\0';
		f->hdr.kernel_release[sizeof(f->hdr.kernel_release) - 1] = '\0';
		for (char *c = f->hdr.host; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		for (char *c = f->hdr.kernel_release; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		f->size_bytes = frec_file_size(f->reader);
	}
	ts_inputs_free(in);
	*out = ts;
	return 0;
fail:
	trace_set_free(ts);
	ts_inputs_free(in);
	return -1;
}

int trace_set_open(const char *const *paths, size_t n, struct trace_set **out,
		   struct frec_error *err)
{
	struct ts_inputs in;
	*out = NULL;
	if (ts_inputs_expand(paths, n, &in, err))
		return -1;
	return open_inputs(&in, out, err);
}

int trace_set_reopen(const struct trace_set *src, struct trace_set **out,
		     struct frec_error *err)
{
	struct ts_inputs in = { 0 };
	*out = NULL;
	for (size_t i = 0; i < src->n_files; i++) {
		const struct trace_file *f = &src->files[i];
		int fd = -1;
		if (f->member_fd >= 0 && (fd = fcntl(f->member_fd, F_DUPFD_CLOEXEC, 0)) < 0) {
			frec_error_set(err, f->path, -1, errno, "cannot open again: %s", strerror(errno));
			ts_inputs_free(&in);
			return -1;
		}
		if (ts_inputs_add(&in, f->path, f->member_at, fd)) {
			frec_error_set(err, f->path, -1, ENOMEM, "out of memory");
			ts_inputs_free(&in);
			return -1;
		}
	}
	if (open_inputs(&in, out, err))
		return -1;
	(*out)->jobs = src->jobs;
	return 0;
}

int trace_set_open_fds(const int *fds, const char *const *names, size_t n,
		       struct trace_set **out, struct frec_error *err)
{
	struct ts_inputs in = { 0 };
	*out = NULL;
	for (size_t i = 0; i < n; i++) {
		int fd = fcntl(fds[i], F_DUPFD_CLOEXEC, 0);
		if (fd < 0) {
			frec_error_set(err, names[i], -1, errno, "cannot open: %s", strerror(errno));
			ts_inputs_free(&in);
			return -1;
		}
		if (ts_inputs_add(&in, names[i], 0, fd)) {
			frec_error_set(err, names[i], -1, ENOMEM, "out of memory");
			ts_inputs_free(&in);
			return -1;
		}
	}
	return open_inputs(&in, out, err);
}

size_t trace_set_warning_count(const struct trace_set *ts)
{
	return ts->n_warnings;
}

const char *trace_set_warning(const struct trace_set *ts, size_t i)
{
	return i < ts->n_warnings ? ts->warnings[i] : NULL;
}

void trace_set_set_jobs(struct trace_set *ts, unsigned jobs)
{
	ts->jobs = jobs;
}

int trace_file_fd(const struct trace_file *f)
{
	/* a dup shares the copy's offset: every reader here uses pread */
	if (f->member_fd >= 0)
		return fcntl(f->member_fd, F_DUPFD_CLOEXEC, 0);
	return open(f->path, O_RDONLY | O_CLOEXEC);
}

void trace_set_free(struct trace_set *ts)
{
	if (!ts)
		return;
	for (size_t i = 0; i < ts->n_models; i++)
		ts->models[i].ops->destroy(ts->models[i].state);
	free(ts->models);
	for (size_t i = 0; i < ts->n_warnings; i++)
		free(ts->warnings[i]);
	free(ts->warnings);
	/* later stages' objects first: they may point into the files */
	for (int k = TS_SLOTS - 1; k >= 0; k--)
		trace_set_put_slot(ts, (enum ts_slot)k, NULL, NULL);
	for (size_t i = 0; i < ts->n_files; i++)
		trace_file_free(&ts->files[i]);
	free(ts->files);
	strpool_free(ts->names);
	free(ts->scratch);
	free(ts);
}

void *trace_set_add_model(struct trace_set *ts, const struct model_ops *ops,
			  const struct model_opts *opts)
{
	struct ts_model *m = realloc(ts->models, (ts->n_models + 1) * sizeof(*m));
	if (!m)
		return NULL;
	ts->models = m;
	void *state = ops->create(opts);
	if (!state)
		return NULL;
	m[ts->n_models].ops = ops;
	m[ts->n_models].state = state;
	ts->n_models++;
	return state;
}

void *trace_set_use_model(struct trace_set *ts, const char *name,
			  const struct model_opts *opts)
{
	const struct model_ops *ops = model_find(name);
	if (!ops)
		return NULL;
	for (size_t i = 0; i < ts->n_models; i++)
		if (ts->models[i].ops == ops)
			return ts->models[i].state;
	/* the models it reads first: fed the same events, finished before it */
	void *deps[8];
	size_t n_deps = 0;
	for (size_t i = 0; ops->needs && ops->needs[i]; i++) {
		if (n_deps == sizeof(deps) / sizeof(deps[0]) ||
		    !(deps[n_deps++] = trace_set_use_model(ts, ops->needs[i], NULL)))
			return NULL;
	}
	void *state = trace_set_add_model(ts, ops, opts);
	for (size_t i = 0; state && i < n_deps; i++)
		ops->bind(state, ops->needs[i], deps[i]);
	return state;
}

uint64_t trace_set_events_of(struct trace_set *ts, uint16_t type)
{
	uint64_t n = 0;
	for (size_t i = 0; type < 0x100 && i < ts->n_files; i++)
		n += ts->files[i].events_by_type[type];
	return n;
}

size_t trace_set_count(const struct trace_set *ts)
{
	return ts->n_files;
}

struct trace_file *trace_set_file(struct trace_set *ts, size_t i)
{
	return i < ts->n_files ? &ts->files[i] : NULL;
}

void *trace_set_slot(const struct trace_set *ts, enum ts_slot k)
{
	return ts->slots[k].p;
}

void trace_set_put_slot(struct trace_set *ts, enum ts_slot k, void *p, void (*free_fn)(void *))
{
	struct ts_slot_entry *e = &ts->slots[k];
	if (e->p && e->free_fn)
		e->free_fn(e->p);
	e->p = p;
	e->free_fn = free_fn;
}

/* ---- raw dwarf-mode id -> canonical id ---------------------------------- */

static size_t idmap_home(uint32_t key, size_t mask)
{
	return (size_t)(((uint64_t)key * 0x9e3779b97f4a7c15ull) >> 32) & mask;
}

int ts_idmap_get(const struct ts_idmap *m, uint32_t key, uint32_t *value)
{
	if (!m->cap || !key)
		return 0;
	size_t mask = m->cap - 1;
	for (size_t i = idmap_home(key, mask);; i = (i + 1) & mask) {
		uint64_t slot = m->slots[i];
		if (!slot)
			return 0;
		if ((uint32_t)(slot >> 32) == key) {
			if (value)
				*value = (uint32_t)slot;
			return 1;
		}
	}
}

int ts_idmap_put(struct ts_idmap *m, uint32_t key, uint32_t value)
{
	if ((m->count + 1) * 4 > m->cap * 3) {
		size_t cap = m->cap ? 2 * m->cap : 1024;
		uint64_t *slots = calloc(cap, sizeof(*slots));
		if (!slots)
			return -1;
		for (size_t i = 0; i < m->cap; i++) {
			uint64_t slot = m->slots[i];
			if (!slot)
				continue;
			size_t j = idmap_home((uint32_t)(slot >> 32), cap - 1);
			while (slots[j])
				j = (j + 1) & (cap - 1);
			slots[j] = slot;
		}
		free(m->slots);
		m->slots = slots;
		m->cap = cap;
	}
	size_t mask = m->cap - 1, i = idmap_home(key, mask);
	while (m->slots[i])
		i = (i + 1) & mask;
	m->slots[i] = (uint64_t)key << 32 | value;
	m->count++;
	return 0;
}

/* ---- lookups ------------------------------------------------------------ */

const struct ts_stack *trace_file_stack(const struct trace_file *f, uint32_t stack_id)
{
	uint64_t i;
	uint32_t canon;
	if (!hmap_get(&f->stack_by_id, stack_id, 0, &i) &&
	    !(ts_idmap_get(&f->ustack_ids, stack_id, &canon) &&
	      hmap_get(&f->stack_by_id, canon, 0, &i)))
		return NULL;
	if (i >= f->n_stacks)
		return NULL;
	return &f->stacks[i];
}

const struct ts_dso *trace_file_dso(const struct trace_file *f, uint32_t dso_id)
{
	uint64_t i;
	if (!hmap_get(&f->dso_by_id, dso_id, 0, &i) || i >= f->n_dsos)
		return NULL;
	return &f->dsos[i];
}

const struct ts_process *trace_file_process(const struct trace_file *f, uint32_t pid)
{
	uint64_t i;
	if (!hmap_get(&f->proc_by_pid, pid, 0, &i) || i >= f->n_procs)
		return NULL;
	return &f->procs[i];
}

int trace_file_complete(const struct trace_file *f)
{
	return !f->io_failed && f->reader && frec_has_end(f->reader);
}

const char *trace_file_verdict(const struct trace_file *f)
{
	char stop[160];
	int stopped = trace_file_stopped(f, stop, sizeof(stop)) != NULL;
	if (f->io_failed || !f->reader)
		return "unusable";
	if (!trace_file_damaged(f) && trace_file_complete(f) && !stopped)
		return "intact";
	if (stopped && !trace_file_damaged(f))
		return "stopped early";
	return trace_file_complete(f) ? "damaged" : "incomplete";
}

uint64_t trace_file_duration_ns(const struct trace_file *f, int *exact)
{
	const struct fr_end *end = f->reader ? frec_end(f->reader) : NULL;
	*exact = end != NULL;
	uint64_t last = end ? end->end_mono_ns : f->last_event_ns;
	if (!end && f->has_stats && f->stats_ts_ns > last)
		last = f->stats_ts_ns;
	return last > f->hdr.start_mono_ns ? last - f->hdr.start_mono_ns : 0;
}

const struct fr_drop_count *trace_file_drops(const struct trace_file *f, uint32_t *n)
{
	if (f->reader && frec_end(f->reader))
		return frec_end_drops(f->reader, n);
	*n = f->n_stats_drops;
	return f->n_stats_drops ? f->stats_drops : NULL;
}

const struct fr_syscall_drop *trace_file_syscall_drops(const struct trace_file *f, uint32_t *n)
{
	*n = f->n_syscall_drops;
	return f->n_syscall_drops ? f->syscall_drops : NULL;
}

const char *trace_file_stopped(const struct trace_file *f, char *buf, size_t len)
{
	int e = 0;
	uint64_t at = 0;
	if (!f->reader || !frec_end_stopped(f->reader, &e, &at))
		return NULL;
	double t = at > f->hdr.start_mono_ns ? (at - f->hdr.start_mono_ns) / 1e9 : 0.0;
	snprintf(buf, len, "stopped early: %s at %.3f s (the file holds everything before)",
		 frec_write_error_name(e), t);
	return buf;
}

int trace_file_drop_window(const struct trace_file *f, const struct fr_drop_count *d,
			   double *first_s, double *last_s)
{
	uint64_t t0 = f->hdr.start_mono_ns;
	if (!d->first_ns || d->first_ns < t0 || d->last_ns < d->first_ns)
		return 0;
	*first_s = (d->first_ns - t0) / 1e9;
	*last_s = (d->last_ns - t0) / 1e9;
	return 1;
}

int trace_file_damaged(const struct trace_file *f)
{
	return f->io_failed || !f->reader || frec_damage_count(f->reader) ||
	       frec_chunks_missing(f->reader) || f->n_problems;
}

const char *trace_file_trouble(const struct trace_file *f, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
#define TROUBLE(...) do { \
	int _n = snprintf(buf + used, len - used, "%s", used ? "; " : ""); \
	if (_n > 0 && (size_t)_n < len - used) used += (size_t)_n; \
	_n = snprintf(buf + used, len - used, __VA_ARGS__); \
	if (_n > 0) used = (size_t)_n < len - used ? used + (size_t)_n : len - 1; \
} while (0)
	if (f->io_failed)
		TROUBLE("read error at offset %lld: %s", (long long)f->io_err.offset,
			f->io_err.what);
	if (!f->io_failed && f->reader && !frec_has_end(f->reader))
		TROUBLE("incomplete: no end record (recorder killed?)");
	char stop[160];
	if (trace_file_stopped(f, stop, sizeof(stop)))
		TROUBLE("%s", stop);
	size_t damaged = f->reader ? frec_damage_count(f->reader) : 0;
	if (damaged)
		TROUBLE("%zu damaged region%s", damaged, damaged == 1 ? "" : "s");
	uint64_t missing = f->reader ? frec_chunks_missing(f->reader) : 0;
	if (missing)
		TROUBLE("%llu chunk%s listed in the index missing", (unsigned long long)missing,
			missing == 1 ? "" : "s");
	if (f->n_problems)
		TROUBLE("%llu malformed record%s", (unsigned long long)f->n_problems,
			f->n_problems == 1 ? "" : "s");
#undef TROUBLE
	return buf;
}

int ts_oom(struct frec_error *err, const struct ts_where *w)
{
	frec_error_set(err, w->f->path, (int64_t)w->chunk_offset, ENOMEM,
		       "out of memory while decoding");
	return -1;
}

