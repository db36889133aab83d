/* The decode stage: two streaming passes over every file, metadata chunks
 * then event chunks, keeping metadata, resolving dwarf-mode stacks into
 * canonical ones and feeding events to models (see trace_set.h).
 * Not for symbolization or analysis.  Every field read from a record is
 * checked against the record's size before use; records are copied with
 * memcpy because decompressed payloads need not be aligned. */
#include "trace_set.h"
#include "frec_schema.h"
#include "strpool.h"
#include "pyframes.h"
#include "stack_merge.h"
#include "symbolize.h"
#include "unwind.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ts_model {
	const struct model_ops *ops;
	void *state;
};

struct trace_set {
	struct trace_file *files;
	size_t n_files;
	struct ts_model *models;
	size_t n_models;
	struct symbolizer *sym;
	/* dwarf-mode resolution during pass 2: a symbolizer of its own (freed
	 * before metadata found in EVENTS chunks is applied, so the public one,
	 * built after the run, sees everything), the pool the resolved names
	 * live in (until trace_set_free), the resolver of the file being read,
	 * and a buffer for events patched with canonical stack ids */
	struct symbolizer *resolve_sym;
	struct strpool *names;
	struct sm_resolver *resolver;
	uint8_t *scratch;
	size_t scratch_cap;
};

/* One record chunk pass 2 reads: an EVENTS chunk (every record), or a
 * metadata chunk holding events or USTACK records (those only). */
struct ts_chunk_ref {
	uint64_t offset;
	uint32_t ordinal;   /* chunk order in the file: the high half of seq */
	uint32_t late_only;
};

/* Pass state of one file. */
struct ts_pass {
	struct ts_chunk_ref *refs;
	size_t n_refs, cap_refs;
	/* DSO, UNWIND and PYCODE records found in EVENTS chunks: applied after
	 * pass 2 (the resolver's symbolizer and caches point into those tables) */
	uint8_t *late;
	size_t late_len, late_cap;
};

#define TS_N_TYPES 65536u

/* Names and fixed sizes come from the format's schema table, the one list
 * of record types (format/schema.c), so analyzer and writer never disagree. */
const char *rec_type_name(uint16_t type)
{
	const struct frec_schema_entry *e = frec_schema_find(type);
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

static void ts_problem(struct trace_file *f, uint64_t chunk_offset, uint64_t rec_offset,
		       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void ts_problem(struct trace_file *f, uint64_t chunk_offset, uint64_t rec_offset,
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

static char *ts_strndup_printable(const char *s, size_t len, char sep_for_nul)
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

static void ts_copy_comm(char dst[17], const char src[16])
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
	free(f->path);
	free(f->cmdline);
	free(f->records_by_type);
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
	free(f->clock_pairs);
	hmap_free(&f->env_by_pid);
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

int trace_set_open(const char *const *paths, size_t n, struct trace_set **out,
		   struct frec_error *err)
{
	*out = NULL;
	struct trace_set *ts = calloc(1, sizeof(*ts));
	if (!ts || (n && !(ts->files = calloc(n, sizeof(*ts->files))))) {
		free(ts);
		frec_error_set(err, "flightrec-analyze", -1, ENOMEM, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		struct trace_file *f = &ts->files[i];
		ts->n_files = i + 1;
		hmap_init(&f->proc_by_pid);
		hmap_init(&f->thread_seen);
		hmap_init(&f->dso_by_id);
		hmap_init(&f->stack_by_id);
		hmap_init(&f->env_by_pid);
		hmap_init(&f->rdma_counter_by_name);
		hmap_init(&f->python_by_pid);
		hmap_init(&f->canon_by_hash);
		if (frec_open(paths[i], &f->reader, err)) {
			f->reader = NULL;
			trace_set_free(ts);
			return -1;
		}
		f->path = strdup(paths[i]);
		f->records_by_type = calloc(TS_N_TYPES, sizeof(uint64_t));
		f->cmdline = strdup(frec_cmdline(f->reader));
		if (!f->path || !f->records_by_type || !f->cmdline) {
			trace_set_free(ts);
			frec_error_set(err, paths[i], -1, ENOMEM, "out of memory");
			return -1;
		}
		memcpy(&f->hdr, frec_file_header(f->reader), sizeof(f->hdr));
		f->hdr.host[sizeof(f->hdr.host) - 1] = '\0';
		f->hdr.kernel_release[sizeof(f->hdr.kernel_release) - 1] = '\0';
		f->size_bytes = frec_file_size(f->reader);
	}
	*out = ts;
	return 0;
}

void trace_set_free(struct trace_set *ts)
{
	if (!ts)
		return;
	for (size_t i = 0; i < ts->n_models; i++)
		ts->models[i].ops->destroy(ts->models[i].state);
	free(ts->models);
	symbolizer_free(ts->sym);
	sm_resolver_free(ts->resolver);
	symbolizer_free(ts->resolve_sym);
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

size_t trace_set_count(const struct trace_set *ts)
{
	return ts->n_files;
}

struct trace_file *trace_set_file(struct trace_set *ts, size_t i)
{
	return i < ts->n_files ? &ts->files[i] : NULL;
}

struct symbolizer *trace_set_symbolizer(struct trace_set *ts, struct frec_error *err)
{
	if (!ts->sym)
		ts->sym = symbolizer_new(ts, err);
	return ts->sym;
}

/* ---- raw dwarf-mode id -> canonical id ---------------------------------- */

static size_t idmap_home(uint32_t key, size_t mask)
{
	return (size_t)(((uint64_t)key * 0x9e3779b97f4a7c15ull) >> 32) & mask;
}

static int idmap_get(const struct ts_idmap *m, uint32_t key, uint32_t *value)
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

/* Inserts key (not present, nonzero) -> value; -1 when memory runs out. */
static int idmap_put(struct ts_idmap *m, uint32_t key, uint32_t value)
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
	    !(idmap_get(&f->ustack_ids, stack_id, &canon) &&
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

const struct fr_drop_count *trace_file_drops(const struct trace_file *f, uint32_t *n)
{
	if (f->reader && frec_end(f->reader))
		return frec_end_drops(f->reader, n);
	*n = f->n_stats_drops;
	return f->n_stats_drops ? f->stats_drops : NULL;
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

/* ---- record decoders ---------------------------------------------------- */

/* Where the record being decoded is, for problems. */
struct ts_where {
	struct trace_file *f;
	uint64_t chunk_offset;
	uint64_t rec_offset;
	uint64_t seq;
};

#define PROBLEM(w, ...) ts_problem((w)->f, (w)->chunk_offset, (w)->rec_offset, __VA_ARGS__)

static int ts_oom(struct frec_error *err, const struct ts_where *w)
{
	frec_error_set(err, w->f->path, (int64_t)w->chunk_offset, ENOMEM,
		       "out of memory while decoding");
	return -1;
}

static int decode_process(const struct ts_where *w, const uint8_t *p, uint32_t size,
			  struct frec_error *err)
{
	struct trace_file *f = w->f;
	struct fr_rec_process r;
	memcpy(&r, p, sizeof(r));
	if (r.cmdline_len > size - sizeof(r)) {
		PROBLEM(w, "process %u: cmdline_len %u exceeds the record (%u bytes)",
			r.pid, r.cmdline_len, size);
		return 0;
	}
	char *cmdline = ts_strndup_printable((const char *)p + sizeof(r), r.cmdline_len, ' ');
	if (!cmdline)
		return ts_oom(err, w);
	int created;
	uint64_t *slot = hmap_slot(&f->proc_by_pid, r.pid, 0, &created);
	if (!slot) {
		free(cmdline);
		return ts_oom(err, w);
	}
	if (created) {
		struct ts_process *procs = realloc(f->procs, (f->n_procs + 1) * sizeof(*procs));
		if (!procs) {
			free(cmdline);
			return ts_oom(err, w);
		}
		f->procs = procs;
		*slot = f->n_procs++;
		memset(&procs[*slot], 0, sizeof(procs[*slot]));
	}
	struct ts_process *proc = &f->procs[*slot];
	free(proc->cmdline);
	proc->pid = r.pid;
	proc->ppid = r.ppid;
	proc->start_time_ns = r.start_time_ns;
	ts_copy_comm(proc->comm, r.comm);
	proc->cmdline = cmdline;
	return 0;
}

static int decode_thread(const struct ts_where *w, const uint8_t *p, struct frec_error *err)
{
	struct fr_rec_thread r;
	memcpy(&r, p, sizeof(r));
	struct trace_file *f = w->f;
	uint64_t *slot = hmap_slot(&f->thread_seen, r.pid, r.tid, NULL);
	if (!slot)
		return ts_oom(err, w);
	if (!*slot) {
		size_t n = f->n_thread_names;
		if ((n & (n - 1)) == 0) { /* capacity doubles at powers of two */
			void *grown = realloc(f->thread_names, (n ? 2 * n : 1) * sizeof(*f->thread_names));
			if (!grown)
				return ts_oom(err, w);
			f->thread_names = grown;
		}
		*slot = ++f->n_thread_names;
	}
	ts_copy_comm(f->thread_names[*slot - 1], r.comm);
	return 0;
}

const char *trace_file_thread_name(const struct trace_file *f, uint32_t pid, uint32_t tid)
{
	uint64_t v = 0;
	if (!hmap_get(&f->thread_seen, pid, tid, &v) || !v || v > f->n_thread_names)
		return NULL;
	return f->thread_names[v - 1];
}

static int decode_mapping(const struct ts_where *w, const uint8_t *p, uint32_t size,
			  struct frec_error *err)
{
	struct trace_file *f = w->f;
	struct fr_rec_mapping r;
	memcpy(&r, p, sizeof(r));
	if (r.path_len > size - sizeof(r)) {
		PROBLEM(w, "mapping of pid %u: path_len %u exceeds the record (%u bytes)",
			r.pid, r.path_len, size);
		return 0;
	}
	if (r.end <= r.start) {
		PROBLEM(w, "mapping of pid %u: empty or inverted range [0x%llx, 0x%llx)",
			r.pid, (unsigned long long)r.start, (unsigned long long)r.end);
		return 0;
	}
	struct ts_mapping *maps = realloc(f->maps, (f->n_maps + 1) * sizeof(*maps));
	if (!maps)
		return ts_oom(err, w);
	f->maps = maps;
	char *path = ts_strndup_printable((const char *)p + sizeof(r), r.path_len, '?');
	if (!path)
		return ts_oom(err, w);
	maps[f->n_maps++] = (struct ts_mapping){
		.pid = r.pid, .dso_id = r.dso_id, .start = r.start, .end = r.end,
		.pgoff = r.pgoff, .seq = w->seq, .path = path,
	};
	return 0;
}

static int decode_stack(const struct ts_where *w, const uint8_t *p, uint32_t size,
			struct frec_error *err)
{
	struct trace_file *f = w->f;
	struct fr_rec_stack r;
	memcpy(&r, p, sizeof(r));
	uint64_t n_frames = (uint64_t)r.n_kernel + r.n_user;
	if (n_frames * 8 > size - sizeof(r)) {
		PROBLEM(w, "stack %u: %u kernel + %u user frames do not fit in the record (%u bytes)",
			r.stack_id, r.n_kernel, r.n_user, size);
		return 0;
	}
	if (r.stack_id == FR_STACK_NONE) {
		PROBLEM(w, "stack record with id 0 (reserved for \"no stack\")");
		return 0;
	}
	if (idmap_get(&f->ustack_ids, r.stack_id, NULL)) {
		PROBLEM(w, "stack %u defined twice; keeping the first definition", r.stack_id);
		return 0;
	}
	int created;
	uint64_t *slot = hmap_slot(&f->stack_by_id, r.stack_id, 0, &created);
	if (!slot)
		return ts_oom(err, w);
	if (!created) {
		PROBLEM(w, "stack %u defined twice; keeping the first definition", r.stack_id);
		return 0;
	}
	struct ts_stack *stacks = realloc(f->stacks, (f->n_stacks + 1) * sizeof(*stacks));
	if (!stacks)
		return ts_oom(err, w);
	f->stacks = stacks;
	uint64_t *ips = realloc(f->ips, (f->n_ips + n_frames + 1) * sizeof(*ips));
	if (!ips)
		return ts_oom(err, w);
	f->ips = ips;
	memcpy(ips + f->n_ips, p + sizeof(r), n_frames * 8);
	*slot = f->n_stacks;
	stacks[f->n_stacks++] = (struct ts_stack){
		.stack_id = r.stack_id, .pid = r.pid, .n_kernel = r.n_kernel,
		.n_user = r.n_user, .ips_at = f->n_ips,
	};
	f->n_ips += n_frames;
	return 0;
}

static uint64_t canon_mix(uint64_t h, uint64_t v)
{
	h ^= v;
	h *= 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

/* The canonical stack of (pid, kernel ips, merged user frames): found by
 * content, or made.  Returns its id, 0 when memory runs out. */
static uint32_t intern_canonical(struct trace_file *f, uint32_t pid, const uint8_t *kernel,
				 uint16_t n_kernel, const char *const *names, size_t n_names)
{
	uint64_t h = canon_mix(0x243f6a8885a308d3ull, (uint64_t)n_kernel << 32 | n_names);
	for (size_t i = 0; i < n_kernel; i++) {
		uint64_t ip;
		memcpy(&ip, kernel + 8 * i, 8);
		h = canon_mix(h, ip);
	}
	for (size_t i = 0; i < n_names; i++)
		h = canon_mix(h, (uint64_t)(uintptr_t)names[i]);
	uint64_t k = 0;
	for (;; k++) {
		uint64_t at;
		if (!hmap_get(&f->canon_by_hash, h + k, pid, &at))
			break;
		const struct ts_stack *st = at < f->n_stacks ? &f->stacks[at] : NULL;
		if (st && st->pid == pid && st->n_kernel == n_kernel && st->n_user == n_names &&
		    (!n_kernel || !memcmp(f->ips + st->ips_at, kernel, (size_t)n_kernel * 8)) &&
		    (!n_names || !memcmp(f->ustack_names + st->names_at, names,
					 n_names * sizeof(*names))))
			return st->stack_id;
	}
	/* a new canonical stack: the next id no fp STACK record took */
	uint32_t id;
	uint64_t taken;
	do {
		if (f->next_canon >= TS_CANON_STACK_BIT - 1)
			return 0;
		id = TS_CANON_STACK_BIT | ++f->next_canon;
	} while (hmap_get(&f->stack_by_id, id, 0, &taken));
	if (f->n_ustack_names + n_names > f->cap_ustack_names) {
		size_t cap = f->cap_ustack_names ? 2 * f->cap_ustack_names : 4096;
		while (cap < f->n_ustack_names + n_names)
			cap *= 2;
		const char **grown = realloc(f->ustack_names, cap * sizeof(*grown));
		if (!grown)
			return 0;
		f->ustack_names = grown;
		f->cap_ustack_names = cap;
	}
	struct ts_stack *stacks = realloc(f->stacks, (f->n_stacks + 1) * sizeof(*stacks));
	if (!stacks)
		return 0;
	f->stacks = stacks;
	uint64_t *ips = realloc(f->ips, (f->n_ips + n_kernel + 1) * sizeof(*ips));
	if (!ips)
		return 0;
	f->ips = ips;
	if (hmap_put(&f->stack_by_id, id, 0, f->n_stacks) ||
	    hmap_put(&f->canon_by_hash, h + k, pid, f->n_stacks))
		return 0;
	memcpy(ips + f->n_ips, kernel, (size_t)n_kernel * 8);
	if (n_names)
		memcpy(f->ustack_names + f->n_ustack_names, names, n_names * sizeof(*names));
	stacks[f->n_stacks++] = (struct ts_stack){
		.stack_id = id, .pid = pid, .n_kernel = n_kernel, .n_user = (uint16_t)n_names,
		.ips_at = f->n_ips, .ustack = 1, .names_at = f->n_ustack_names,
	};
	f->n_ips += n_kernel;
	f->n_ustack_names += n_names;
	f->dwarf_stats.distinct++;
	return id;
}

/* A dwarf-mode stack: registers, kernel ips, Python frames and the copied
 * user stack.  Unwound, named and merged now (pass 2: every file's
 * metadata is known), interned into a canonical stack with the kernel ips,
 * and forgotten but for its id's entry in f->ustack_ids. */
static int decode_ustack(struct trace_set *ts, uint32_t file_index, const struct ts_where *w,
			 const uint8_t *p, uint32_t size, struct frec_error *err)
{
	struct trace_file *f = w->f;
	struct fr_rec_ustack r;
	memcpy(&r, p, sizeof(r));
	uint64_t py_bytes = (uint64_t)r.n_py * sizeof(struct fr_py_frame);
	if ((uint64_t)r.n_kernel * 8 + py_bytes + r.stack_len > size - sizeof(r)) {
		PROBLEM(w, "ustack %u: %u kernel ips, %u Python frames and %u stack bytes do not fit in the record (%u bytes)",
			r.stack_id, r.n_kernel, r.n_py, r.stack_len, size);
		return 0;
	}
	if (r.stack_id == FR_STACK_NONE) {
		PROBLEM(w, "ustack record with id 0 (reserved for \"no stack\")");
		return 0;
	}
	uint16_t n_py = r.n_py, flags = r.flags;
	if (n_py > FR_MAX_PY_FRAMES) {
		PROBLEM(w, "ustack %u: %u Python frames, more than the %u a walk records; the first %u kept",
			r.stack_id, r.n_py, FR_MAX_PY_FRAMES, FR_MAX_PY_FRAMES);
		n_py = FR_MAX_PY_FRAMES;
		flags |= FR_USTACK_PY_TRUNCATED;
	}
	uint64_t taken;
	if (idmap_get(&f->ustack_ids, r.stack_id, NULL) ||
	    hmap_get(&f->stack_by_id, r.stack_id, 0, &taken)) {
		PROBLEM(w, "stack %u defined twice; keeping the first definition", r.stack_id);
		return 0;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!ts->names && !(ts->names = strpool_new()))
		return ts_oom(err, w);
	if (!ts->resolve_sym && !(ts->resolve_sym = symbolizer_new(ts, err)))
		return -1;
	if (!ts->resolver && !(ts->resolver = sm_resolver_new(ts->resolve_sym, ts->names, f,
								file_index)))
		return ts_oom(err, w);
	const uint8_t *kernel = p + sizeof(r);
	const uint8_t *py = kernel + (size_t)r.n_kernel * 8;
	struct uw_raw raw = {
		.pid = r.pid, .tid = r.tid, .flags = flags, .py_version = r.py_version,
		.n_py = n_py, .stack_len = r.stack_len, .seq = w->seq,
	};
	memcpy(raw.regs, r.regs, sizeof(raw.regs));
	const char *const *names;
	int64_t n = sm_resolve(ts->resolver, &raw, py, py + py_bytes, &names);
	uint32_t canon = n < 0 ? 0 : intern_canonical(f, r.pid, kernel, r.n_kernel, names,
						       (size_t)n);
	if (!canon && n >= 0 && f->next_canon >= TS_CANON_STACK_BIT - 1) {
		PROBLEM(w, "ustack %u: canonical stack ids exhausted; stack dropped", r.stack_id);
		return 0;
	}
	if (!canon || idmap_put(&f->ustack_ids, r.stack_id, canon))
		return ts_oom(err, w);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	f->dwarf_stats.resolve_ns += (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000ll +
						(t1.tv_nsec - t0.tv_nsec));
	f->dwarf_stats.records++;
	return 0;
}

/* Unwind tables of one file: a reduced ELF image. */
static int decode_unwind(const struct ts_where *w, const uint8_t *p, uint32_t size,
			 struct frec_error *err)
{
	struct trace_file *f = w->f;
	struct fr_rec_unwind r;
	memcpy(&r, p, sizeof(r));
	if (r.image_len > size - sizeof(r)) {
		PROBLEM(w, "unwind data of dso %u: image_len %u exceeds the record (%u bytes)",
			r.dso_id, r.image_len, size);
		return 0;
	}
	if (!f->ustacks && !(f->ustacks = uw_store_new()))
		return ts_oom(err, w);
	char why[120];
	int rc = uw_store_add_image(f->ustacks, r.dso_id, r.build_id,
				    r.build_id_len < sizeof(r.build_id) ? r.build_id_len : sizeof(r.build_id),
				    p + sizeof(r), r.image_len, why, sizeof(why));
	if (rc < 0)
		return ts_oom(err, w);
	if (rc > 0)
		PROBLEM(w, "unwind data of dso %u refused: %s; stacks stop at its frames", r.dso_id, why);
	else
		f->dwarf_stats.images++;
	return 0;
}

static int decode_pycode(const struct ts_where *w, const uint8_t *p, uint32_t size,
			 struct frec_error *err)
{
	struct trace_file *f = w->f;
	struct fr_rec_pycode r;
	memcpy(&r, p, sizeof(r));
	if ((uint64_t)r.qualname_len + r.filename_len + r.linetable_len > size - sizeof(r)) {
		PROBLEM(w, "pycode 0x%llx of pid %u: %u + %u + %u name and table bytes exceed the record (%u bytes)",
			(unsigned long long)r.code, r.pid, r.qualname_len, r.filename_len,
			r.linetable_len, size);
		return 0;
	}
	if (!f->pycodes && !(f->pycodes = py_table_new()))
		return ts_oom(err, w);
	const char *qual = (const char *)p + sizeof(r);
	const char *file = qual + r.qualname_len;
	const uint8_t *table = (const uint8_t *)file + r.filename_len;
	if (py_table_add(f->pycodes, r.pid, r.code, w->seq, r.py_version, r.firstlineno, qual,
			 r.qualname_len, file, r.filename_len, table, r.linetable_len))
		return ts_oom(err, w);
	return 0;
}

static int decode_python(const struct ts_where *w, const uint8_t *p, struct frec_error *err)
{
	struct fr_rec_python r;
	memcpy(&r, p, sizeof(r));
	if (hmap_put(&w->f->python_by_pid, r.pid, 0, r.py_version | (uint64_t)r.status << 16))
		return ts_oom(err, w);
	return 0;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct ts_symbol *x = a, *y = b;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return x->size < y->size ? -1 : x->size > y->size;
}

/* Appends the symbols of `add` (a later record of the same dso) to `into`;
 * frees `add`'s storage either way. */
static int merge_dso(const struct ts_where *w, struct ts_dso *into, struct ts_dso *add,
		     struct frec_error *err)
{
	uint64_t strtab_len = (uint64_t)into->strtab_len + add->strtab_len;
	uint64_t nsyms = (uint64_t)into->nsyms + add->nsyms;
	char *strtab = NULL;
	struct ts_symbol *syms = NULL;

	if (strtab_len < UINT32_MAX && nsyms < UINT32_MAX) {
		strtab = realloc(into->strtab, (size_t)strtab_len + 1);
		if (strtab)
			into->strtab = strtab;
		syms = realloc(into->syms, ((size_t)nsyms ? (size_t)nsyms : 1) * sizeof(*syms));
		if (syms)
			into->syms = syms;
	}
	if (!strtab || !syms) {
		free(add->path);
		free(add->strtab);
		free(add->syms);
		return strtab_len < UINT32_MAX && nsyms < UINT32_MAX ? ts_oom(err, w) : 0;
	}
	memcpy(into->strtab + into->strtab_len, add->strtab, add->strtab_len);
	into->strtab[strtab_len] = '\0';
	for (uint32_t i = 0; i < add->nsyms; i++) {
		struct ts_symbol s = add->syms[i];
		s.name_off += into->strtab_len;
		into->syms[into->nsyms++] = s;
	}
	into->strtab_len = (uint32_t)strtab_len;
	qsort(into->syms, into->nsyms, sizeof(*into->syms), sym_cmp);
	free(add->path);
	free(add->strtab);
	free(add->syms);
	return 0;
}

static int decode_dso(const struct ts_where *w, const uint8_t *p, uint32_t size,
		      struct frec_error *err)
{
	struct trace_file *f = w->f;
	struct fr_rec_dso r;
	memcpy(&r, p, sizeof(r));
	uint64_t off = sizeof(r);
	if (r.path_len > size - off) {
		PROBLEM(w, "dso %u: path_len %u exceeds the record (%u bytes)", r.dso_id,
			r.path_len, size);
		return 0;
	}
	const char *path = (const char *)p + off;
	off += FR_ALIGN8((uint64_t)r.path_len);
	uint64_t syms_bytes = (uint64_t)r.nsyms * sizeof(struct fr_dso_sym);
	if (off > size || syms_bytes > size - off) {
		PROBLEM(w, "dso %u: %u symbols do not fit in the record (%u bytes)", r.dso_id,
			r.nsyms, size);
		return 0;
	}
	const uint8_t *syms_at = p + off;
	off += syms_bytes;
	if (r.strtab_len > size - off) {
		PROBLEM(w, "dso %u: strtab_len %u exceeds the record (%u bytes)", r.dso_id,
			r.strtab_len, size);
		return 0;
	}
	if (r.kind > 1) {
		PROBLEM(w, "dso %u: unknown kind %u; its symbols are not used", r.dso_id, r.kind);
		return 0;
	}
	struct ts_dso d = { .dso_id = r.dso_id, .kind = r.kind };
	d.build_id_len = r.build_id_len <= sizeof(d.build_id) ? r.build_id_len : sizeof(d.build_id);
	memcpy(d.build_id, r.build_id, d.build_id_len);
	d.path = ts_strndup_printable(path, r.path_len, '?');
	d.strtab = malloc((size_t)r.strtab_len + 1);
	d.syms = malloc(((size_t)r.nsyms ? r.nsyms : 1) * sizeof(*d.syms));
	if (!d.path || !d.strtab || !d.syms) {
		free(d.path);
		free(d.strtab);
		free(d.syms);
		return ts_oom(err, w);
	}
	memcpy(d.strtab, p + off, r.strtab_len);
	d.strtab[r.strtab_len] = '\0'; /* every name ends, even the last one */
	d.strtab_len = r.strtab_len;
	uint32_t bad_names = 0;
	int sorted = 1;
	for (uint32_t i = 0; i < r.nsyms; i++) {
		struct fr_dso_sym s;
		memcpy(&s, syms_at + (size_t)i * sizeof(s), sizeof(s));
		if (s.name_off >= r.strtab_len) {
			bad_names++;
			continue;
		}
		if (d.nsyms && s.offset < d.syms[d.nsyms - 1].offset)
			sorted = 0;
		d.syms[d.nsyms++] = (struct ts_symbol){ s.offset, s.size, s.name_off };
	}
	if (bad_names)
		PROBLEM(w, "dso %u (%s): %u of %u symbols have name offsets beyond its %u-byte strtab; dropped",
			r.dso_id, d.path, bad_names, r.nsyms, r.strtab_len);
	if (!sorted)
		qsort(d.syms, d.nsyms, sizeof(*d.syms), sym_cmp);

	/* The recorder writes a file's symbols as they are first needed, so
	 * several records may describe one dso_id: their symbols add up. */
	size_t prev;
	if (hmap_get(&f->dso_by_id, r.dso_id, 0, &prev) && prev < f->n_dsos &&
	    f->dsos[prev].kind == d.kind)
		return merge_dso(w, &f->dsos[prev], &d, err);

	struct ts_dso *dsos = realloc(f->dsos, (f->n_dsos + 1) * sizeof(*dsos));
	if (!dsos) {
		free(d.path);
		free(d.strtab);
		free(d.syms);
		return ts_oom(err, w);
	}
	f->dsos = dsos;
	dsos[f->n_dsos] = d;
	if (hmap_put(&f->dso_by_id, r.dso_id, 0, f->n_dsos))
		return ts_oom(err, w); /* the dso is stored: freed with the file */
	f->n_dsos++;
	return 0;
}

static int decode_stats(const struct ts_where *w, const uint8_t *p, uint32_t size,
			struct frec_error *err)
{
	struct trace_file *f = w->f;
	struct fr_rec_stats r;
	memcpy(&r, p, sizeof(r));
	if ((uint64_t)r.n_probes * sizeof(struct fr_probe_stats) > size - sizeof(r)) {
		PROBLEM(w, "stats: %u probes do not fit in the record (%u bytes)", r.n_probes, size);
		return 0;
	}
	struct ts_probe *probes = calloc(r.n_probes ? r.n_probes : 1, sizeof(*probes));
	if (!probes)
		return ts_oom(err, w);
	for (uint32_t i = 0; i < r.n_probes; i++) {
		struct fr_probe_stats s;
		memcpy(&s, p + sizeof(r) + (size_t)i * sizeof(s), sizeof(s));
		ts_copy_comm(probes[i].name, s.name);
		probes[i].events = s.events;
		probes[i].drops = s.drops;
	}
	size_t drops_at = sizeof(r) + (size_t)r.n_probes * sizeof(struct fr_probe_stats);
	uint32_t nd = r.n_drops;
	if ((uint64_t)nd * sizeof(struct fr_drop_count) > size - drops_at) {
		PROBLEM(w, "stats: %u drop counts do not fit in the record (%u bytes)", nd, size);
		nd = 0;
	}
	struct fr_drop_count *drops = NULL;
	if (nd) {
		drops = malloc((size_t)nd * sizeof(*drops));
		if (!drops) {
			free(probes);
			return ts_oom(err, w);
		}
		memcpy(drops, p + drops_at, (size_t)nd * sizeof(*drops));
	}
	free(f->stats_probes);
	f->stats_probes = probes;
	f->n_stats_probes = r.n_probes;
	free(f->stats_drops);
	f->stats_drops = drops;
	f->n_stats_drops = nd;
	f->has_stats = 1;
	f->stats_ts_ns = r.ts_ns;
	f->stats_cpu_user_ns = r.cpu_user_ns;
	f->stats_cpu_sys_ns = r.cpu_sys_ns;
	return 0;
}

/* One sample of every RDMA port counter: add each increase to its name. */
static int decode_rdma_counters(const struct ts_where *w, const uint8_t *p, uint32_t size,
				struct frec_error *err)
{
	struct trace_file *f = w->f;
	struct fr_rec_rdma_counters r;
	memcpy(&r, p, sizeof(r));
	if ((uint64_t)r.n * sizeof(struct fr_rdma_counter) > size - sizeof(r)) {
		PROBLEM(w, "rdma counters: %u counters do not fit in the record (%u bytes)", r.n, size);
		return 0;
	}
	f->rdma_counter_records++;
	for (uint32_t i = 0; i < r.n; i++) {
		struct fr_rdma_counter c;
		memcpy(&c, p + sizeof(r) + (size_t)i * sizeof(c), sizeof(c));
		char name[41];
		memcpy(name, c.name, sizeof(c.name));
		name[40] = '\0';
		size_t len = strlen(name);
		for (size_t k = 0; k < len; k++)
			if ((unsigned char)name[k] < 0x20 || name[k] == 0x7f)
				name[k] = '?';
		uint64_t hash = 0xcbf29ce484222325ull; /* FNV-1a */
		for (size_t k = 0; k < len; k++)
			hash = (hash ^ (unsigned char)name[k]) * 0x100000001b3ull;
		uint64_t at;
		int found = hmap_get(&f->rdma_counter_by_name, hash, len, &at) &&
			    at < f->n_rdma_counters && !strcmp(f->rdma_counters[at].name, name);
		for (size_t k = 0; !found && k < f->n_rdma_counters; k++) /* hash collision */
			if (!strcmp(f->rdma_counters[k].name, name)) {
				at = k;
				found = 1;
			}
		if (!found) {
			struct ts_rdma_counter *grown = realloc(f->rdma_counters,
				(f->n_rdma_counters + 1) * sizeof(*grown));
			if (!grown)
				return ts_oom(err, w);
			f->rdma_counters = grown;
			at = f->n_rdma_counters++;
			memset(&grown[at], 0, sizeof(grown[at]));
			memcpy(grown[at].name, name, len + 1);
			uint64_t other;
			if (!hmap_get(&f->rdma_counter_by_name, hash, len, &other) &&
			    hmap_put(&f->rdma_counter_by_name, hash, len, at))
				return ts_oom(err, w);
		}
		struct ts_rdma_counter *t = &f->rdma_counters[at];
		t->total += c.delta;
		t->samples++;
		if (c.delta > t->max_delta)
			t->max_delta = c.delta;
		double per_s = r.interval_ns ? (double)c.delta * 1e9 / (double)r.interval_ns
					     : (double)c.delta;
		if (per_s > t->max_per_s)
			t->max_per_s = per_s;
	}
	return 0;
}

/* RANK, LOCAL_RANK and WORLD_SIZE of a process, kept by pid until the pass
 * ends (the PROCESS record may come later): (pid, 0) -> rank | local_rank
 * << 32, (pid, 1) -> world_size, each stored + 1 so 0 means unknown. */
static int64_t env_int(const char *kv, size_t len, const char *key)
{
	size_t klen = strlen(key);
	if (len <= klen + 1 || memcmp(kv, key, klen) || kv[klen] != '=')
		return -1;
	int64_t v = 0;
	for (size_t i = klen + 1; i < len; i++) {
		if (kv[i] < '0' || kv[i] > '9' || v > 100000000)
			return -1;
		v = v * 10 + (kv[i] - '0');
	}
	return v;
}

static int decode_proc_env(const struct ts_where *w, const uint8_t *p, uint32_t size,
			   struct frec_error *err)
{
	struct fr_rec_proc_env r;
	memcpy(&r, p, sizeof(r));
	if (r.len > size - sizeof(r)) {
		PROBLEM(w, "proc_env of pid %u: len %u exceeds the record (%u bytes)", r.pid, r.len,
			size);
		return 0;
	}
	const char *env = (const char *)p + sizeof(r);
	int64_t rank = -1, local_rank = -1, world_size = -1;
	for (size_t at = 0; at < r.len;) {
		const char *end = memchr(env + at, '\0', r.len - at);
		size_t len = end ? (size_t)(end - (env + at)) : r.len - at;
		int64_t v;
		if ((v = env_int(env + at, len, "RANK")) >= 0)
			rank = v;
		else if ((v = env_int(env + at, len, "LOCAL_RANK")) >= 0)
			local_rank = v;
		else if ((v = env_int(env + at, len, "WORLD_SIZE")) >= 0)
			world_size = v;
		at += len + 1;
	}
	uint64_t packed = (uint64_t)(rank + 1) | (uint64_t)(local_rank + 1) << 32;
	if (hmap_put(&w->f->env_by_pid, r.pid, 0, packed) ||
	    hmap_put(&w->f->env_by_pid, r.pid, 1, (uint64_t)(world_size + 1)))
		return ts_oom(err, w);
	return 0;
}

static int decode_schema(const struct ts_where *w, const uint8_t *p, struct frec_error *err)
{
	struct trace_file *f = w->f;
	struct fr_rec_schema r;
	memcpy(&r, p, sizeof(r));
	if (rec_type_name(r.rec_type))
		return 0; /* the built-in name wins */
	if (!f->schema_names && !(f->schema_names = calloc(TS_N_TYPES, sizeof(char *))))
		return ts_oom(err, w);
	char name[25];
	memcpy(name, r.name, sizeof(r.name));
	name[24] = '\0';
	char *copy = ts_strndup_printable(name, strlen(name), '?');
	if (!copy)
		return ts_oom(err, w);
	free(f->schema_names[r.rec_type]);
	f->schema_names[r.rec_type] = copy;
	return 0;
}

static int feed_models(struct trace_set *ts, uint32_t file_index, const struct ts_where *w,
		       const struct fr_rec_hdr *rec, struct frec_error *err)
{
	for (size_t i = 0; i < ts->n_models; i++)
		if (ts->models[i].ops->feed(ts->models[i].state, file_index, rec))
			return ts_oom(err, w);
	return 0;
}

/* An event whose stack_id names a raw dwarf-mode stack goes to the models
 * as a copy carrying the canonical id, so their tables grow with distinct
 * stacks. */
static int feed_event(struct trace_set *ts, uint32_t file_index, const struct ts_where *w,
		      const uint8_t *p, uint16_t type, uint32_t size, struct frec_error *err)
{
	const struct trace_file *f = w->f;
	uint32_t stack_id, canon;
	switch (type) {
	case FR_EV_CPU_SAMPLE: case FR_EV_SYSCALL: case FR_EV_CUDA: case FR_EV_NCCL:
	case FR_EV_RDMA_CTRL: case FR_EV_STEP:
		if (!f->ustack_ids.count || size < FR_EV_STACK_ID_OFFSET + sizeof(stack_id))
			break;
		memcpy(&stack_id, p + FR_EV_STACK_ID_OFFSET, sizeof(stack_id));
		if (!idmap_get(&f->ustack_ids, stack_id, &canon))
			break;
		if (size > ts->scratch_cap) {
			size_t cap = ts->scratch_cap ? ts->scratch_cap : 256;
			while (cap < size)
				cap *= 2;
			uint8_t *grown = realloc(ts->scratch, cap);
			if (!grown)
				return ts_oom(err, w);
			ts->scratch = grown;
			ts->scratch_cap = cap;
		}
		memcpy(ts->scratch, p, size);
		memcpy(ts->scratch + FR_EV_STACK_ID_OFFSET, &canon, sizeof(canon));
		return feed_models(ts, file_index, w,
				   (const struct fr_rec_hdr *)(const void *)ts->scratch, err);
	}
	/* Models see the record as stored; they read at most its size. */
	return feed_models(ts, file_index, w, (const struct fr_rec_hdr *)(const void *)p, err);
}

static int decode_record(struct trace_set *ts, uint32_t file_index, const struct ts_where *w,
			 const uint8_t *p, uint32_t size, struct frec_error *err)
{
	struct trace_file *f = w->f;
	struct fr_rec_hdr h;
	memcpy(&h, p, sizeof(h));
	f->records++;
	f->records_by_type[h.type]++;
	const struct frec_schema_entry *known = frec_schema_find(h.type);
	if (!known)
		return 0; /* unknown types are counted, never decoded */
	if (size < known->fixed_size) {
		PROBLEM(w, "%s record of %u bytes is shorter than its fixed part (%u bytes)",
			known->name, size, known->fixed_size);
		return 0;
	}
	if (h.type < 0x100) { /* a kernel event: every one goes to the models */
		struct fr_ev_common c;
		memcpy(&c, p, sizeof(c));
		f->events++;
		if (c.ts_ns) {
			if (!f->first_event_ns || c.ts_ns < f->first_event_ns)
				f->first_event_ns = c.ts_ns;
			if (c.ts_ns > f->last_event_ns)
				f->last_event_ns = c.ts_ns;
		}
		return feed_event(ts, file_index, w, p, h.type, size, err);
	}
	switch (h.type) {
	case FR_REC_PROCESS:
		return decode_process(w, p, size, err);
	case FR_REC_THREAD:
		return decode_thread(w, p, err);
	case FR_REC_MAPPING:
		return decode_mapping(w, p, size, err);
	case FR_REC_STACK:
		return decode_stack(w, p, size, err);
	case FR_REC_DSO:
		return decode_dso(w, p, size, err);
	case FR_REC_CLOCK: {
		struct fr_rec_clock r;
		memcpy(&r, p, sizeof(r));
		f->clocks++;
		f->last_clock_mono_ns = r.mono_ns;
		f->last_clock_real_ns = r.real_ns;
		size_t n = f->n_clock_pairs;
		if (n < TS_MAX_CLOCK_PAIRS) {
			if (n >= 8 && (n & (n - 1)) == 0) { /* capacity doubles at powers of two */
				struct ts_clock *grown = realloc(f->clock_pairs, 2 * n * sizeof(*grown));
				if (!grown)
					return ts_oom(err, w);
				f->clock_pairs = grown;
			} else if (!f->clock_pairs &&
				   !(f->clock_pairs = malloc(8 * sizeof(*f->clock_pairs)))) {
				return ts_oom(err, w);
			}
			f->clock_pairs[f->n_clock_pairs++] = (struct ts_clock){ r.mono_ns, r.real_ns };
		}
		return 0;
	}
	case FR_REC_PROC_ENV:
		return decode_proc_env(w, p, size, err);
	case FR_REC_STATS:
		return decode_stats(w, p, size, err);
	case FR_REC_SCHEMA:
		return decode_schema(w, p, err);
	case FR_REC_RDMA_COUNTERS:
		return decode_rdma_counters(w, p, size, err);
	case FR_REC_USTACK:
		return decode_ustack(ts, file_index, w, p, size, err);
	case FR_REC_UNWIND:
		return decode_unwind(w, p, size, err);
	case FR_REC_PYCODE:
		return decode_pycode(w, p, size, err);
	case FR_REC_PYTHON:
		return decode_python(w, p, err);
	}
	return 0;
}

static enum ts_chunk_kind chunk_kind(uint16_t type)
{
	switch (type) {
	case FR_CHUNK_SCHEMA: return TS_CHUNK_SCHEMA;
	case FR_CHUNK_EVENTS: return TS_CHUNK_EVENTS;
	case FR_CHUNK_META: return TS_CHUNK_META;
	case FR_CHUNK_INDEX: return TS_CHUNK_INDEX;
	case FR_CHUNK_END: return TS_CHUNK_END;
	}
	return TS_CHUNK_UNKNOWN;
}

/* Record types pass 1 leaves for pass 2 wherever they are: events go to
 * the models in file order, and USTACK records need every file's metadata. */
static int pass2_type(uint16_t type)
{
	return type < 0x100 || type == FR_REC_USTACK;
}

/* Metadata that the resolver's symbolizer and caches point into: found in
 * an EVENTS chunk during pass 2, applied after it. */
static int late_type(uint16_t type)
{
	return type == FR_REC_DSO || type == FR_REC_UNWIND || type == FR_REC_PYCODE;
}

struct ts_late_hdr {
	uint64_t seq, chunk_offset, rec_offset;
};

static int grow_bytes(uint8_t **buf, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t cap2 = *cap ? *cap : 4096;
	while (cap2 < need)
		cap2 *= 2;
	uint8_t *grown = realloc(*buf, cap2);
	if (!grown)
		return -1;
	*buf = grown;
	*cap = cap2;
	return 0;
}

static void count_chunk(struct trace_file *f, const struct frec_chunk *c)
{
	f->chunks++;
	f->chunks_by_kind[chunk_kind(c->hdr.chunk_type)]++;
	f->chunks_by_codec[c->hdr.codec < 3 ? c->hdr.codec : 3]++;
	f->raw_bytes += c->hdr.raw_len;
	f->stored_bytes += c->hdr.stored_len;
}

/* The records of one chunk, every length checked.  mode 1: pass 1 of a
 * metadata chunk (pass-2 types are left, and the chunk noted for pass 2);
 * 2: an EVENTS chunk in pass 2 (late types are kept for later); 3: pass 2
 * of a metadata chunk (pass-2 types only; its damage was reported in pass
 * 1, so records are walked quietly). */
static int read_records(struct trace_set *ts, uint32_t file_index, struct ts_where *w,
			const struct frec_chunk *c, uint32_t ordinal, int mode, int *wants_pass2,
			struct frec_error *err)
{
	struct trace_file *f = w->f;
	size_t cursor = 0;
	uint64_t index = 0;
	w->chunk_offset = c->offset;
	for (;;) {
		const uint8_t *p;
		if (mode == 3) {
			struct fr_rec_hdr q;
			if (!c->data || cursor >= c->len || c->len - cursor < sizeof(q))
				break;
			memcpy(&q, c->data + cursor, sizeof(q));
			if (q.size < sizeof(q) || q.size % 8 || q.size > c->len - cursor)
				break;
			p = c->data + cursor;
			cursor += q.size;
		} else {
			const struct fr_rec_hdr *rec;
			if (frec_chunk_next_record(f->reader, c, &cursor, &rec) != 1)
				break;
			p = (const uint8_t *)rec;
		}
		struct fr_rec_hdr h;
		if (!c->data || p < c->data || (size_t)(p - c->data) > c->len ||
		    c->len - (size_t)(p - c->data) < sizeof(h)) {
			if (mode != 3)
				PROBLEM(w, "record outside its chunk; rest of chunk skipped");
			break;
		}
		w->rec_offset = (uint64_t)(p - c->data);
		memcpy(&h, p, sizeof(h));
		if (h.size < sizeof(h) || h.size > c->len - w->rec_offset) {
			if (mode != 3)
				PROBLEM(w, "record size %u runs past its chunk; rest of chunk skipped",
					h.size);
			break;
		}
		/* file order: chunk ordinal, then place in the chunk, alike in both passes */
		w->seq = (uint64_t)ordinal << 32 | ++index;
		if (mode == 1 && pass2_type(h.type)) {
			*wants_pass2 = 1;
			continue;
		}
		if (mode == 3 && !pass2_type(h.type))
			continue;
		if (mode == 2 && late_type(h.type)) {
			struct ts_pass *ps = f->pass;
			struct ts_late_hdr lh = { w->seq, w->chunk_offset, w->rec_offset };
			if (grow_bytes(&ps->late, &ps->late_cap, ps->late_len + sizeof(lh) + h.size))
				return ts_oom(err, w);
			memcpy(ps->late + ps->late_len, &lh, sizeof(lh));
			memcpy(ps->late + ps->late_len + sizeof(lh), p, h.size);
			ps->late_len += sizeof(lh) + FR_ALIGN8((uint64_t)h.size);
			continue;
		}
		if (decode_record(ts, file_index, w, p, h.size, err))
			return -1;
	}
	return 0;
}

static void mark_io_failed(struct trace_file *f)
{
	f->io_failed = 1;
	if (!f->io_err.where[0])
		snprintf(f->io_err.where, sizeof(f->io_err.where), "%s", f->path);
}

/* Pass 1: every chunk header; metadata chunks decoded, EVENTS chunks (and
 * metadata chunks holding events) noted for pass 2 by offset. */
static int read_pass1(struct trace_set *ts, uint32_t file_index, struct frec_error *err)
{
	struct trace_file *f = &ts->files[file_index];
	struct ts_where w = { .f = f };
	struct frec_chunk c;
	int rc;
	uint32_t ordinal = 0;
	if (!f->pass && !(f->pass = calloc(1, sizeof(*f->pass))))
		return ts_oom(err, &w);
	struct ts_pass *ps = f->pass;
	frec_defer_payloads(f->reader, FR_CHUNK_EVENTS);
	while ((rc = frec_next_chunk(f->reader, &c, &f->io_err)) == 1) {
		enum ts_chunk_kind kind = chunk_kind(c.hdr.chunk_type);
		ordinal++;
		int events = kind == TS_CHUNK_EVENTS, wants_pass2 = events;
		if (!events)
			count_chunk(f, &c); /* EVENTS chunks: once their payload is read */
		/* INDEX and END are the reader's business; unknown chunk types are
		 * skipped whole (a newer writer's chunk may not hold records). */
		if (!events && kind != TS_CHUNK_SCHEMA && kind != TS_CHUNK_META)
			continue;
		if (!events && read_records(ts, file_index, &w, &c, ordinal, 1, &wants_pass2, err))
			return -1;
		if (!wants_pass2)
			continue;
		if (ps->n_refs == ps->cap_refs) {
			size_t cap = ps->cap_refs ? 2 * ps->cap_refs : 256;
			struct ts_chunk_ref *grown = realloc(ps->refs, cap * sizeof(*grown));
			if (!grown)
				return ts_oom(err, &w);
			ps->refs = grown;
			ps->cap_refs = cap;
		}
		ps->refs[ps->n_refs++] = (struct ts_chunk_ref){ c.offset, ordinal, !events };
	}
	if (rc < 0)
		mark_io_failed(f);
	return 0;
}

/* Pass 2: the noted chunks in file order, then the metadata found in them. */
static int read_pass2(struct trace_set *ts, uint32_t file_index, struct frec_error *err)
{
	struct trace_file *f = &ts->files[file_index];
	struct ts_pass *ps = f->pass;
	struct ts_where w = { .f = f };
	struct frec_chunk c;
	int rc = 0;
	for (size_t i = 0; ps && i < ps->n_refs; i++) {
		const struct ts_chunk_ref *ref = &ps->refs[i];
		struct frec_error io_err = { 0 };
		rc = frec_read_chunk_at(f->reader, ref->offset, &c, &io_err);
		if (rc < 0) {
			if (!f->io_failed)
				f->io_err = io_err;
			mark_io_failed(f);
			break;
		}
		if (rc == 0)
			continue; /* damaged after all: recorded by the reader */
		if (!ref->late_only)
			count_chunk(f, &c);
		if (read_records(ts, file_index, &w, &c, ref->ordinal, ref->late_only ? 3 : 2,
				 NULL, err))
			return -1;
	}
	sm_resolver_free(ts->resolver);
	ts->resolver = NULL;
	return 0;
}

/* After every file's pass 2, with the resolver's symbolizer gone. */
static int finish_file(struct trace_set *ts, uint32_t file_index, struct frec_error *err)
{
	struct trace_file *f = &ts->files[file_index];
	struct ts_pass *ps = f->pass;
	struct ts_where w = { .f = f };
	for (size_t at = 0; ps && at + sizeof(struct ts_late_hdr) + sizeof(struct fr_rec_hdr) <= ps->late_len;) {
		struct ts_late_hdr lh;
		struct fr_rec_hdr h;
		memcpy(&lh, ps->late + at, sizeof(lh));
		const uint8_t *p = ps->late + at + sizeof(lh);
		memcpy(&h, p, sizeof(h));
		w.seq = lh.seq;
		w.chunk_offset = lh.chunk_offset;
		w.rec_offset = lh.rec_offset;
		if (decode_record(ts, file_index, &w, p, h.size, err))
			return -1;
		at += sizeof(lh) + FR_ALIGN8((uint64_t)h.size);
	}
	if (ps) {
		free(ps->refs);
		free(ps->late);
		free(ps);
		f->pass = NULL;
	}
	/* Threads may be named before their process: count them afterwards. */
	for (size_t i = 0; i < f->thread_seen.cap; i++) {
		const struct hmap_slot *s = &f->thread_seen.slots[i];
		uint64_t pi;
		if (s->used && hmap_get(&f->proc_by_pid, s->key_a, 0, &pi) && pi < f->n_procs)
			f->procs[pi].threads++;
	}
	/* Launcher ranks likewise (-1 unknown). */
	for (size_t i = 0; i < f->n_procs; i++) {
		uint64_t packed = 0, world = 0;
		hmap_get(&f->env_by_pid, f->procs[i].pid, 0, &packed);
		hmap_get(&f->env_by_pid, f->procs[i].pid, 1, &world);
		f->procs[i].rank = (int32_t)(packed & 0xffffffffu) - 1;
		f->procs[i].local_rank = (int32_t)(packed >> 32) - 1;
		f->procs[i].world_size = (int32_t)world - 1;
	}
	return 0;
}

int trace_set_run(struct trace_set *ts, struct frec_error *err)
{
	/* every file's metadata first: a dwarf-mode stack is resolved as pass 2
	 * reads it, against the mappings, unwind images and code objects */
	for (size_t i = 0; i < ts->n_files; i++)
		if (read_pass1(ts, (uint32_t)i, err))
			return -1;
	for (size_t i = 0; i < ts->n_files; i++)
		if (read_pass2(ts, (uint32_t)i, err))
			return -1;
	symbolizer_free(ts->resolve_sym);
	ts->resolve_sym = NULL;
	for (size_t i = 0; i < ts->n_files; i++)
		if (finish_file(ts, (uint32_t)i, err))
			return -1;
	free(ts->scratch);
	ts->scratch = NULL;
	ts->scratch_cap = 0;
	for (size_t i = 0; i < ts->n_models; i++)
		if (ts->models[i].ops->finish(ts->models[i].state, ts, err))
			return -1;
	return 0;
}
