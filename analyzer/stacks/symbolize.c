/* Symbolization from the trace's own metadata; see symbolize.h.
 *
 * Mappings of one pid may overlap in a trace (a library unmapped and another
 * mapped at the same place, or hostile input).  The rule is "the latest
 * record covering ip wins", so at construction each pid's mappings are
 * flattened into disjoint segments that each name their winner (a sweep
 * over the interval end points with a max-heap on record order): lookups are
 * then one binary search whatever the overlap. */
#include "symbolize.h"
#include "grow.h"
#include "name_index.h"
#include "strpool.h"
#include "trace_set.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* From libstdc++ (linked by the analyzer library); declared here so the
 * analyzer stays C. */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

struct sym_segment {
	uint32_t pid;
	uint32_t map_index;
	uint64_t start;
	uint64_t end;
};

struct sym_file {
	const struct trace_file *f;
	struct sym_segment *segs;
	size_t n_segs;
	const struct ts_dso *kernel;
	/* Per dso, per symbol: the name as shown (demangled, "_[k]"), filled on
	 * first use.  Bounded by the symbol tables, not by distinct ips. */
	const char ***shown;
	/* shown name -> (dso, symbol), the first of each name: built on the
	 * first symbolize_locs of a dwarf-mode stack (names, no ips) */
	int by_name_built;
	struct name_index by_name;
	uint32_t (*name_sym)[2];
	/* (pid, name pointer) -> what locate_name found: an index into
	 * named_at + 1, or 0 when nothing */
	struct hmap named;
	struct { uint32_t map_index; uint64_t ip; } *named_at;
	size_t n_named, cap_named;
};

struct symbolizer {
	struct sym_file *files;
	size_t n_files;
	struct strpool *pool;
	const char *unknown; /* "[unknown]" */
};

/* ---- segment construction ----------------------------------------------- */

static const struct ts_mapping *sort_maps; /* qsort has no context argument */

static int map_order(const void *a, const void *b)
{
	const struct ts_mapping *x = &sort_maps[*(const uint32_t *)a];
	const struct ts_mapping *y = &sort_maps[*(const uint32_t *)b];
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

static int u64_order(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

struct seq_heap {
	uint32_t *items;
	size_t n;
	const struct ts_mapping *maps;
};

static int heap_less(const struct seq_heap *h, size_t i, size_t j)
{
	return h->maps[h->items[i]].seq < h->maps[h->items[j]].seq;
}

static void heap_swap(struct seq_heap *h, size_t i, size_t j)
{
	uint32_t t = h->items[i];
	h->items[i] = h->items[j];
	h->items[j] = t;
}

static void heap_push(struct seq_heap *h, uint32_t item)
{
	size_t i = h->n++;
	h->items[i] = item;
	while (i && heap_less(h, (i - 1) / 2, i)) {
		heap_swap(h, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void heap_pop(struct seq_heap *h)
{
	h->items[0] = h->items[--h->n];
	for (size_t i = 0;;) {
		size_t l = 2 * i + 1, r = l + 1, top = i;
		if (l < h->n && heap_less(h, top, l))
			top = l;
		if (r < h->n && heap_less(h, top, r))
			top = r;
		if (top == i)
			break;
		heap_swap(h, i, top);
		i = top;
	}
}

/* Flattens the mappings order[g0, g1) of one pid into sf->segs. */
static void flatten_pid(struct sym_file *sf, const uint32_t *order, size_t g0, size_t g1,
			uint64_t *points, struct seq_heap *heap)
{
	const struct ts_mapping *maps = sf->f->maps;
	size_t n_points = 0;
	for (size_t i = g0; i < g1; i++) {
		points[n_points++] = maps[order[i]].start;
		points[n_points++] = maps[order[i]].end;
	}
	qsort(points, n_points, sizeof(*points), u64_order);
	size_t unique = 0;
	for (size_t i = 0; i < n_points; i++)
		if (!unique || points[unique - 1] != points[i])
			points[unique++] = points[i];
	heap->n = 0;
	size_t next = g0;
	for (size_t k = 0; k + 1 < unique; k++) {
		uint64_t at = points[k];
		while (next < g1 && maps[order[next]].start <= at)
			heap_push(heap, order[next++]);
		while (heap->n && maps[heap->items[0]].end <= at)
			heap_pop(heap);
		if (!heap->n)
			continue;
		uint32_t winner = heap->items[0];
		struct sym_segment *last = sf->n_segs ? &sf->segs[sf->n_segs - 1] : NULL;
		if (last && last->pid == maps[winner].pid && last->map_index == winner &&
		    last->end == at) {
			last->end = points[k + 1];
			continue;
		}
		sf->segs[sf->n_segs++] = (struct sym_segment){
			.pid = maps[winner].pid, .map_index = winner,
			.start = at, .end = points[k + 1],
		};
	}
}

static int index_file(struct sym_file *sf)
{
	const struct trace_file *f = sf->f;
	for (size_t i = 0; i < f->n_dsos; i++)
		if (f->dsos[i].kind == 1)
			sf->kernel = &f->dsos[i]; /* the latest kernel symbol table */
	if (!f->n_maps)
		return 0;
	if (f->n_maps > UINT32_MAX / 2)
		return -1;
	uint32_t *order = malloc(f->n_maps * sizeof(*order));
	uint64_t *points = malloc(2 * f->n_maps * sizeof(*points));
	struct seq_heap heap = { malloc(f->n_maps * sizeof(uint32_t)), 0, f->maps };
	/* n disjoint intervals split each other into at most 2n - 1 pieces. */
	sf->segs = malloc(2 * f->n_maps * sizeof(*sf->segs));
	if (!order || !points || !heap.items || !sf->segs) {
		free(order);
		free(points);
		free(heap.items);
		return -1;
	}
	for (size_t i = 0; i < f->n_maps; i++)
		order[i] = (uint32_t)i;
	sort_maps = f->maps;
	qsort(order, f->n_maps, sizeof(*order), map_order);
	for (size_t g0 = 0, g1; g0 < f->n_maps; g0 = g1) {
		for (g1 = g0 + 1; g1 < f->n_maps && f->maps[order[g1]].pid == f->maps[order[g0]].pid; g1++)
			;
		flatten_pid(sf, order, g0, g1, points, &heap);
	}
	free(order);
	free(points);
	free(heap.items);
	return 0;
}

struct symbolizer *symbolizer_new(struct trace_set *ts, struct frec_error *err)
{
	struct symbolizer *s = calloc(1, sizeof(*s));
	if (!s)
		goto oom;
	s->pool = strpool_new();
	s->n_files = trace_set_count(ts);
	s->files = calloc(s->n_files ? s->n_files : 1, sizeof(*s->files));
	if (!s->pool || !s->files || !(s->unknown = strpool_intern_cstr(s->pool, "[unknown]")))
		goto oom;
	for (size_t i = 0; i < s->n_files; i++) {
		struct sym_file *sf = &s->files[i];
		sf->f = trace_set_file(ts, i);
		name_index_init(&sf->by_name);
		hmap_init(&sf->named);
		if (index_file(sf))
			goto oom;
		if (sf->f->n_dsos && !(sf->shown = calloc(sf->f->n_dsos, sizeof(*sf->shown))))
			goto oom;
	}
	return s;
oom:
	symbolizer_free(s);
	frec_error_set(err, "flightrec-analyze", -1, ENOMEM, "out of memory indexing mappings");
	return NULL;
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; s->files && i < s->n_files; i++) {
		struct sym_file *sf = &s->files[i];
		free(sf->segs);
		name_index_free(&sf->by_name);
		free(sf->name_sym);
		hmap_free(&sf->named);
		free(sf->named_at);
		for (size_t d = 0; sf->shown && d < sf->f->n_dsos; d++)
			free(sf->shown[d]);
		free(sf->shown);
	}
	free(s->files);
	strpool_free(s->pool);
	free(s);
}

void symbolizer_free_slot(void *p)
{
	symbolizer_free(p);
}

struct symbolizer *trace_set_symbolizer(struct trace_set *ts, struct frec_error *err)
{
	struct symbolizer *s = trace_set_slot(ts, TS_SLOT_SYMBOLIZER);
	if (!s && (s = symbolizer_new(ts, err)))
		trace_set_put_slot(ts, TS_SLOT_SYMBOLIZER, s, symbolizer_free_slot);
	return s;
}

const char *symbolizer_intern(struct symbolizer *s, const char *name)
{
	return strpool_intern_cstr(s->pool, name);
}

/* ---- lookups ------------------------------------------------------------ */

static const struct sym_segment *find_segment(const struct sym_file *sf, uint32_t pid,
					      uint64_t ip)
{
	size_t lo = 0, hi = sf->n_segs; /* first segment after (pid, ip) */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct sym_segment *g = &sf->segs[mid];
		if (g->pid < pid || (g->pid == pid && g->start <= ip))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	const struct sym_segment *g = &sf->segs[lo - 1];
	return g->pid == pid && ip >= g->start && ip < g->end ? g : NULL;
}

/* Index of the named symbol covering off, or -1. */
static int64_t find_symbol(const struct ts_dso *d, uint64_t off)
{
	size_t lo = 0, hi = d->nsyms; /* first symbol after off */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->syms[mid].offset <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -1;
	const struct ts_symbol *sym = &d->syms[lo - 1];
	if (sym->size && off - sym->offset >= sym->size)
		return -1;
	/* name_off < strtab_len was checked at decode time. */
	return d->strtab[sym->name_off] ? (int64_t)(lo - 1) : -1;
}

/* The shown name of symbol i of dso d: demangled, "_[k]" for the kernel. */
static const char *symbol_name(struct symbolizer *s, struct sym_file *sf,
			       const struct ts_dso *d, int64_t i)
{
	const char ***slot = &sf->shown[d - sf->f->dsos];
	if (!*slot && !(*slot = calloc(d->nsyms, sizeof(**slot))))
		return NULL;
	if ((*slot)[i])
		return (*slot)[i];
	const char *name = d->strtab + d->syms[i].name_off;
	const char *shown = NULL;
	if (d->kind == 1) {
		char buf[512];
		snprintf(buf, sizeof(buf), "%.500s_[k]", name);
		shown = strpool_intern_cstr(s->pool, buf);
	} else if (name[0] == '_' && name[1] == 'Z') {
		int status = -1;
		char *demangled = __cxa_demangle(name, NULL, NULL, &status);
		if (demangled && status == 0)
			shown = strpool_intern_cstr(s->pool, demangled);
		free(demangled);
	}
	if (!shown)
		shown = strpool_intern_cstr(s->pool, name);
	(*slot)[i] = shown;
	return shown;
}

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash && slash[1] ? slash + 1 : path;
}

const char *symbolize_ip(struct symbolizer *s, uint32_t file_index, uint32_t pid,
			 uint64_t ip)
{
	char buf[512];
	if (file_index >= s->n_files)
		return s->unknown;
	struct sym_file *sf = &s->files[file_index];
	if (ip >= SYM_KERNEL_MIN) {
		int64_t i = sf->kernel ? find_symbol(sf->kernel, ip) : -1;
		if (i >= 0)
			return symbol_name(s, sf, sf->kernel, i);
		return strpool_intern_cstr(s->pool, "[unknown]_[k]");
	}
	const struct sym_segment *g = find_segment(sf, pid, ip);
	if (!g)
		return s->unknown;
	const struct ts_mapping *m = &sf->f->maps[g->map_index];
	uint64_t file_off = ip - m->start + m->pgoff;
	const struct ts_dso *d = m->dso_id ? trace_file_dso(sf->f, m->dso_id) : NULL;
	int64_t i = d && d->kind == 0 ? find_symbol(d, file_off) : -1;
	if (i >= 0)
		return symbol_name(s, sf, d, i);
	if (!m->path[0])
		return s->unknown;
	snprintf(buf, sizeof(buf), "%.200s+0x%" PRIx64, basename_of(m->path), file_off);
	return strpool_intern_cstr(s->pool, buf);
}

int symbolize_ip_where(struct symbolizer *s, uint32_t file_index, uint32_t pid, uint64_t ip,
		       const char **path, uint64_t *file_off, int *has_sym, uint64_t *sym_off)
{
	*has_sym = 0;
	if (file_index >= s->n_files || ip >= SYM_KERNEL_MIN)
		return 0;
	struct sym_file *sf = &s->files[file_index];
	const struct sym_segment *g = find_segment(sf, pid, ip);
	if (!g)
		return 0;
	const struct ts_mapping *m = &sf->f->maps[g->map_index];
	*path = m->path;
	*file_off = ip - m->start + m->pgoff;
	const struct ts_dso *d = m->dso_id ? trace_file_dso(sf->f, m->dso_id) : NULL;
	int64_t i = d && d->kind == 0 ? find_symbol(d, *file_off) : -1;
	if (i >= 0) {
		*has_sym = 1;
		*sym_off = d->syms[i].offset;
	}
	return 1;
}

void symbolize_stack(struct symbolizer *s, const struct trace_file *f,
		     uint32_t file_index, const struct ts_stack *st, const char **frames)
{
	const uint64_t *kernel = f->ips + st->ips_at;
	const uint64_t *user = kernel + st->n_kernel;
	size_t at = 0;

	if (st->ustack) { /* dwarf mode: unwound and merged (stack_merge.c) */
		for (size_t i = 0; i < st->n_user; i++)
			frames[at++] = f->ustack_names[st->names_at + i];
	}
	for (size_t i = st->ustack ? 0 : st->n_user; i-- > 0;) {
		int leaf = i == 0 && st->n_kernel == 0;
		frames[at++] = symbolize_ip(s, file_index, st->pid, user[i] - !leaf);
	}
	for (size_t i = st->n_kernel; i-- > 0;)
		frames[at++] = symbolize_ip(s, file_index, st->pid, kernel[i] - (i != 0));
}

size_t symbolize_frames(struct symbolizer *s, const struct trace_file *f, uint32_t file_index,
			uint32_t stack_id, const char ***frames, size_t *cap,
			enum stack_found *found)
{
	const struct ts_stack *st = stack_id ? trace_file_stack(f, stack_id) : NULL;
	size_t n = st ? (size_t)st->n_kernel + st->n_user : 0;
	size_t need = (n ? n : 1) + 1; /* and room for a leaf the caller adds */
	if (need > *cap) {
		const char **grown = realloc(*frames, need * sizeof(*grown));
		if (!grown)
			return SIZE_MAX;
		*frames = grown;
		*cap = need;
	}
	enum stack_found how = n ? STACK_FRAMES : stack_id && !st ? STACK_MISSING : STACK_NONE;
	if (found)
		*found = how;
	if (how != STACK_FRAMES) {
		(*frames)[0] = symbolizer_intern(s, how == STACK_MISSING ? "[missing stack]"
									  : "[no stack]");
		return (*frames)[0] ? 1 : SIZE_MAX;
	}
	symbolize_stack(s, f, file_index, st, *frames);
	for (size_t i = 0; i < n; i++)
		if (!(*frames)[i])
			return SIZE_MAX;
	return n;
}

/* ---- addresses of named frames (dwarf mode) --------------------------- */

static int build_by_name(struct symbolizer *s, struct sym_file *sf)
{
	size_t cap = 0;
	sf->by_name_built = 1;
	for (size_t d = 0; d < sf->f->n_dsos; d++) {
		const struct ts_dso *dso = &sf->f->dsos[d];
		if (dso->kind != 0)
			continue;
		for (uint32_t i = 0; i < dso->nsyms; i++) {
			if (!dso->strtab[dso->syms[i].name_off])
				continue;
			const char *shown = symbol_name(s, sf, dso, i);
			if (!shown)
				return -1;
			size_t before = sf->by_name.n;
			int64_t at = name_index_of(&sf->by_name, shown);
			if (at < 0)
				return -1;
			if ((size_t)at < before)
				continue; /* the first symbol of a name wins */
			void *p = sf->name_sym;
			if (grow_array(&p, &cap, (size_t)at + 1, sizeof(*sf->name_sym), 1024))
				return -1;
			sf->name_sym = p;
			sf->name_sym[at][0] = (uint32_t)d;
			sf->name_sym[at][1] = i;
		}
	}
	return 0;
}

/* The mapping of pid that holds file offset off of a file matching dso
 * (by id) or base (by file name), and the address there. */
static int map_of(const struct sym_file *sf, uint32_t pid, uint32_t dso_id, const char *base,
		  uint64_t off, struct sym_loc *l)
{
	const struct trace_file *f = sf->f;
	for (size_t i = 0; i < f->n_maps; i++) {
		const struct ts_mapping *m = &f->maps[i];
		if (m->pid != pid || off < m->pgoff || off - m->pgoff >= m->end - m->start)
			continue;
		if (dso_id ? m->dso_id != dso_id : strcmp(basename_of(m->path), base) != 0)
			continue;
		l->map = m;
		l->map_index = (uint32_t)i;
		l->ip = m->start + (off - m->pgoff);
		return 1;
	}
	return 0;
}

/* A dwarf-mode user frame has a name only: the symbol of that name (or
 * "lib.so+0xOFF") in pid's mappings gives it a mapping and the address of
 * the function's start. */
static void locate_name_uncached(struct symbolizer *s, struct sym_file *sf, uint32_t pid,
				 struct sym_loc *l)
{
	const char *plus = strstr(l->name, "+0x");
	if (plus && !strchr(plus + 3, '+') && plus - l->name < 256) {
		char base[256];
		memcpy(base, l->name, (size_t)(plus - l->name));
		base[plus - l->name] = 0;
		map_of(sf, pid, 0, base, strtoull(plus + 3, NULL, 16), l);
		return;
	}
	if (!sf->by_name_built && build_by_name(s, sf))
		return; /* out of memory: the frame keeps its name only */
	int64_t at = name_index_find(&sf->by_name, l->name);
	if (at < 0)
		return;
	const struct ts_dso *d = &sf->f->dsos[sf->name_sym[at][0]];
	map_of(sf, pid, d->dso_id, NULL, d->syms[sf->name_sym[at][1]].offset, l);
}

static void locate_name(struct symbolizer *s, struct sym_file *sf, uint32_t pid, struct sym_loc *l)
{
	uint64_t v;
	if (hmap_get(&sf->named, pid, (uint64_t)(uintptr_t)l->name, &v)) {
		if (v) {
			l->map_index = sf->named_at[v - 1].map_index;
			l->map = &sf->f->maps[l->map_index];
			l->ip = sf->named_at[v - 1].ip;
		}
		return;
	}
	locate_name_uncached(s, sf, pid, l);
	void *p = sf->named_at;
	if (!l->map || grow_array(&p, &sf->cap_named, sf->n_named + 1, sizeof(*sf->named_at), 64)) {
		hmap_put(&sf->named, pid, (uint64_t)(uintptr_t)l->name, 0);
		return;
	}
	sf->named_at = p;
	sf->named_at[sf->n_named].map_index = l->map_index;
	sf->named_at[sf->n_named].ip = l->ip;
	hmap_put(&sf->named, pid, (uint64_t)(uintptr_t)l->name, ++sf->n_named);
}

size_t symbolize_locs(struct symbolizer *s, const struct trace_file *f, uint32_t file_index,
		      uint32_t stack_id, struct sym_loc **locs, size_t *cap)
{
	const char **names = NULL;
	size_t names_cap = 0;
	size_t n = symbolize_frames(s, f, file_index, stack_id, &names, &names_cap, NULL);
	void *grown = *locs;
	if (n == SIZE_MAX || grow_array(&grown, cap, n, sizeof(**locs), 64)) {
		free(names);
		return SIZE_MAX;
	}
	*locs = grown;
	for (size_t i = 0; i < n; i++)
		(*locs)[i] = (struct sym_loc){ .name = names[i] };
	free(names);
	const struct ts_stack *st = stack_id ? trace_file_stack(f, stack_id) : NULL;
	if (!st || (size_t)st->n_kernel + st->n_user != n || file_index >= s->n_files)
		return n; /* "[no stack]", "[missing stack]" */
	const uint64_t *kernel = f->ips + st->ips_at;
	const uint64_t *user = kernel + st->n_kernel;
	const struct sym_file *sf = &s->files[file_index];
	struct sym_file *sfm = &s->files[file_index];
	for (size_t i = 0; st->ustack && i < st->n_user; i++)
		locate_name(s, sfm, st->pid, &(*locs)[i]);
	size_t at = st->ustack ? st->n_user : 0;
	for (size_t i = st->ustack ? 0 : st->n_user; i-- > 0; at++) {
		int leaf = i == 0 && st->n_kernel == 0;
		uint64_t ip = user[i] - !leaf;
		const struct sym_segment *g = find_segment(sf, st->pid, ip);
		(*locs)[at].ip = ip;
		if (g) {
			(*locs)[at].map = &f->maps[g->map_index];
			(*locs)[at].map_index = g->map_index;
		}
	}
	for (size_t i = st->n_kernel; i-- > 0; at++) {
		(*locs)[at].ip = kernel[i] - (i != 0);
		(*locs)[at].kernel = 1;
	}
	return n;
}
