/* pprof's profile.proto from a stack profile; see out_pprof.h.
 *
 * The rules pprof's own reader enforces (profile/profile.go CheckValid,
 * encode.go): string_table[0] is "", every id is nonzero and unique, every
 * sample has as many values as there are sample types, time_nanos appears
 * once.  Locations are one per (mapping, address), one per kernel address
 * of a file, and one per name for frames that have no address (dwarf-mode
 * and Python frames, the call made, "[no stack]"): a location names one
 * function, as symbolization gives one name per address.  Functions have
 * a name and no system_name: pprof then takes the name as final, where it
 * would otherwise cut what looks like C++ parameters or templates out of
 * it ("<module> (train.py:3)" would become " "). */
#include "out_pprof.h"
#include "hmap.h"
#include "name_index.h"
#include "out_identity.h"
#include "out_common.h"
#include "pb_write.h"
#include "py_hide.h"
#include "stack_profile.h"
#include "symbolize.h"
#include "trace_set.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* profile.proto field numbers */
enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4, PROFILE_FUNCTION = 5, PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9, PROFILE_DURATION_NANOS = 10, PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12, PROFILE_COMMENT = 13,
	VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
	LABEL_KEY = 1, LABEL_STR = 2,
	MAPPING_ID = 1, MAPPING_START = 2, MAPPING_LIMIT = 3, MAPPING_OFFSET = 4,
	MAPPING_FILENAME = 5, MAPPING_BUILD_ID = 6, MAPPING_HAS_FUNCTIONS = 7,
	LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3, LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1, LINE_LINE = 2,
	FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_FILENAME = 4,
	FUNCTION_START_LINE = 5,
};

/* Location keys: the kind in the top bits of key_a. */
#define LOC_MAPPED (1ull << 62)
#define LOC_KERNEL (2ull << 62)
#define LOC_NAMED (3ull << 62)

struct pprof_writer {
	struct pb_buf out, sub;
	struct name_index strs;  /* the string table */
	struct hmap fn_index;    /* name string -> function id */
	struct hmap map_index;   /* (file, map index) -> mapping id */
	struct hmap loc_index;   /* see LOC_* -> location id */
	uint64_t next_fn, next_map, next_loc;
	struct pb_buf functions, mappings, lib_mappings, locations;
	char **owned;            /* strings made here (build ids, numbers) */
	size_t n_owned, cap_owned;
};

/* The string's index in the table; s must outlive the writer.  -1: out
 * of memory. */
static int64_t str_of(struct pprof_writer *w, const char *s)
{
	return name_index_of(&w->strs, s);
}

/* A string made here, interned; kept until the writer is freed. */
static int64_t str_owned(struct pprof_writer *w, const char *s)
{
	if (w->n_owned == w->cap_owned) {
		size_t cap = w->cap_owned ? 2 * w->cap_owned : 64;
		char **grown = realloc(w->owned, cap * sizeof(*grown));
		if (!grown)
			return -1;
		w->owned = grown;
		w->cap_owned = cap;
	}
	char *copy = strdup(s);
	if (!copy)
		return -1;
	w->owned[w->n_owned++] = copy;
	return str_of(w, copy);
}

static void value_type(struct pprof_writer *w, uint32_t field, const char *type, const char *unit)
{
	pb_reset(&w->sub);
	int64_t t = str_of(w, type), u = str_of(w, unit);
	if (t < 0 || u < 0) {
		w->out.failed = 1;
		return;
	}
	pb_uint(&w->sub, VALUE_TYPE_TYPE, (uint64_t)t);
	pb_uint(&w->sub, VALUE_TYPE_UNIT, (uint64_t)u);
	pb_msg(&w->out, field, &w->sub);
}

static uint64_t function_id(struct pprof_writer *w, const char *name)
{
	if (!name)
		name = "[unknown]";
	int64_t s = str_of(w, name);
	uint64_t id;
	if (s < 0)
		return 0;
	if (hmap_get(&w->fn_index, (uint64_t)s, 0, &id))
		return id;
	id = ++w->next_fn;
	if (hmap_put(&w->fn_index, (uint64_t)s, 0, id))
		return 0;
	/* a Python frame names its file and line: `pprof -list` shows the
	 * source (found with -source_path) */
	char src[256];
	int line = 0;
	int64_t file_s = py_frame_source(name, src, sizeof(src), &line) ? str_owned(w, src) : 0;
	if (file_s < 0)
		return 0;
	pb_reset(&w->sub);
	pb_uint(&w->sub, FUNCTION_ID, id);
	pb_uint(&w->sub, FUNCTION_NAME, (uint64_t)s);
	pb_uint(&w->sub, FUNCTION_FILENAME, (uint64_t)file_s);
	pb_int(&w->sub, FUNCTION_START_LINE, line);
	pb_msg(&w->functions, PROFILE_FUNCTION, &w->sub);
	return id;
}

static uint64_t mapping_id(struct pprof_writer *w, const struct trace_file *f, uint32_t file,
			   const struct sym_loc *l)
{
	uint64_t id;
	if (hmap_get(&w->map_index, file, l->map_index, &id))
		return id;
	id = ++w->next_map;
	if (hmap_put(&w->map_index, file, l->map_index, id))
		return 0;
	const struct ts_mapping *m = l->map;
	const struct ts_dso *d = m->dso_id ? trace_file_dso(f, m->dso_id) : NULL;
	char hex[2 * sizeof(d->build_id) + 1] = "";
	for (unsigned i = 0; d && i < d->build_id_len && i < sizeof(d->build_id); i++)
		snprintf(hex + 2 * i, 3, "%02x", d->build_id[i]);
	int64_t path = str_of(w, m->path), build = hex[0] ? str_owned(w, hex) : 0;
	if (path < 0 || build < 0)
		return 0;
	pb_reset(&w->sub);
	pb_uint(&w->sub, MAPPING_ID, id);
	pb_uint(&w->sub, MAPPING_START, m->start);
	pb_uint(&w->sub, MAPPING_LIMIT, m->end);
	pb_uint(&w->sub, MAPPING_OFFSET, m->pgoff);
	pb_uint(&w->sub, MAPPING_FILENAME, (uint64_t)path);
	pb_uint(&w->sub, MAPPING_BUILD_ID, (uint64_t)build);
	/* the names are final: pprof must not look for the node's binaries */
	pb_bool(&w->sub, MAPPING_HAS_FUNCTIONS, 1);
	/* pprof takes the first mapping for the main binary: executables
	 * before shared libraries */
	const char *base = strrchr(m->path, '/');
	base = base ? base + 1 : m->path;
	pb_msg(strstr(base, ".so") ? &w->lib_mappings : &w->mappings, PROFILE_MAPPING, &w->sub);
	return id;
}

/* The location of one frame; 0 when memory ran out. */
static uint64_t location_id(struct pprof_writer *w, const struct trace_file *f, uint32_t file,
			    const struct sym_loc *l)
{
	uint64_t fn = function_id(w, l->name);
	if (!fn)
		return 0;
	uint64_t map = 0, a, b, id;
	if (l->map) {
		if (!(map = mapping_id(w, f, file, l)))
			return 0;
		a = LOC_MAPPED | map;
		b = l->ip;
	} else if (l->kernel) {
		a = LOC_KERNEL | file;
		b = l->ip;
	} else {
		a = LOC_NAMED | fn;
		b = 0;
	}
	if (hmap_get(&w->loc_index, a, b, &id))
		return id;
	id = ++w->next_loc;
	if (hmap_put(&w->loc_index, a, b, id))
		return 0;
	struct pb_buf line = { 0 };
	char src[256];
	int line_no = 0;
	pb_uint(&line, LINE_FUNCTION_ID, fn);
	if (py_frame_source(l->name ? l->name : "", src, sizeof(src), &line_no))
		pb_int(&line, LINE_LINE, line_no);
	pb_reset(&w->sub);
	pb_uint(&w->sub, LOCATION_ID, id);
	pb_uint(&w->sub, LOCATION_MAPPING_ID, map);
	pb_uint(&w->sub, LOCATION_ADDRESS, l->map || l->kernel ? l->ip : 0);
	pb_msg(&w->sub, LOCATION_LINE, &line);
	pb_free(&line);
	pb_msg(&w->locations, PROFILE_LOCATION, &w->sub);
	return id;
}

static void label(struct pprof_writer *w, struct pb_buf *sample, const char *key, int64_t str)
{
	int64_t k = str_of(w, key);
	if (k < 0 || str < 0) {
		w->out.failed = 1;
		return;
	}
	pb_reset(&w->sub);
	pb_uint(&w->sub, LABEL_KEY, (uint64_t)k);
	pb_uint(&w->sub, LABEL_STR, (uint64_t)str);
	pb_msg(sample, SAMPLE_LABEL, &w->sub);
}

static int64_t number_str(struct pprof_writer *w, uint64_t v)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return str_owned(w, buf);
}

static int write_samples(struct pprof_writer *w, const struct pprof_opts *o)
{
	const struct stack_profile *p = o->prof;
	struct frec_error err = { .offset = -1 };
	struct symbolizer *sym = trace_set_symbolizer(o->ts, &err);
	struct sym_loc *locs = NULL;
	size_t cap = 0;
	uint64_t *ids = NULL;
	size_t ids_cap = 0;
	const char **names = NULL;
	unsigned char *hide = NULL;
	struct pb_buf sample = { 0 };
	/* the identity labels of the last (file, pid): rows come sorted by
	 * process, and the cgroup path is parsed once per process, not per row */
	struct out_identity_labels il = { .n = 0 };
	uint64_t il_of = UINT64_MAX;
	if (!sym)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_rows && !w->out.failed; i++) {
		const struct stack_row *r = &p->rows[i];
		const struct trace_file *f = trace_set_file(o->ts, r->file);
		if (!f)
			continue;
		size_t n = symbolize_locs(sym, f, r->file, r->stack_id, &locs, &cap);
		if (n == SIZE_MAX)
			goto oom;
		if (n + 1 > ids_cap) {
			uint64_t *grown = realloc(ids, (n + 1) * sizeof(*ids));
			const char **grown_names = grown ? realloc(names, (n + 1) * sizeof(*names)) : NULL;
			unsigned char *grown_hide = grown_names ? realloc(hide, n + 1) : NULL;
			if (grown)
				ids = grown;
			if (grown_names)
				names = grown_names;
			if (!grown_hide)
				goto oom;
			hide = grown_hide;
			ids_cap = n + 1;
		}
		if (o->hide) {
			for (size_t j = 0; j < n; j++)
				names[j] = locs[j].name;
			py_hide_mask(o->hide, names, n, hide);
			size_t kept = 0;
			for (size_t j = 0; j < n; j++)
				if (!hide[j])
					locs[kept++] = locs[j];
			n = kept;
		}
		size_t k = 0; /* leaf first */
		if (r->leaf != STACK_LEAF_NONE) {
			struct sym_loc leaf = { .name = stack_profile_leaf(p, r) };
			if (!(ids[k++] = location_id(w, f, r->file, &leaf)))
				goto oom;
		}
		for (size_t j = n; j-- > 0;)
			if (!(ids[k++] = location_id(w, f, r->file, &locs[j])))
				goto oom;
		pb_reset(&sample);
		pb_packed(&sample, SAMPLE_LOCATION_ID, ids, k);
		uint64_t values[2] = { r->count, r->value };
		if (p->count_type)
			pb_packed(&sample, SAMPLE_VALUE, values, 2);
		else
			pb_packed(&sample, SAMPLE_VALUE, values + 1, 1);
		const struct ts_process *proc = trace_file_process(f, r->pid);
		label(w, &sample, "pid", number_str(w, r->pid));
		if (r->tid) {
			label(w, &sample, "thread", number_str(w, r->tid));
			const char *tn = trace_file_thread_name(f, r->pid, r->tid);
			if (tn && tn[0])
				label(w, &sample, "thread_name", str_of(w, tn));
		}
		if (proc && proc->comm[0])
			label(w, &sample, "process", str_of(w, proc->comm));
		int64_t rank;
		if (out_process_rank(f, r->pid, &rank))
			label(w, &sample, "rank", number_str(w, (uint64_t)rank));
		if (f->hdr.host[0])
			label(w, &sample, "host", str_of(w, f->hdr.host));
		if (il_of != ((uint64_t)r->file << 32 | r->pid)) {
			out_identity_labels(f, r->pid, &il);
			il_of = (uint64_t)r->file << 32 | r->pid;
		}
		for (size_t i = 0; i < il.n; i++)
			label(w, &sample, il.key[i], str_of(w, il.value[i]));
		pb_msg(&w->out, PROFILE_SAMPLE, &sample);
	}
	int rc = w->out.failed ? -ENOMEM : 0;
	goto done;
oom:
	rc = -ENOMEM;
done:
	free(locs);
	free(ids);
	free(names);
	free(hide);
	pb_free(&sample);
	return rc;
}

static void writer_free(struct pprof_writer *w)
{
	pb_free(&w->out);
	pb_free(&w->sub);
	pb_free(&w->functions);
	pb_free(&w->mappings);
	pb_free(&w->lib_mappings);
	pb_free(&w->locations);
	name_index_free(&w->strs);
	hmap_free(&w->fn_index);
	hmap_free(&w->map_index);
	hmap_free(&w->loc_index);
	for (size_t i = 0; i < w->n_owned; i++)
		free(w->owned[i]);
	free(w->owned);
}

int out_pprof_write(const struct pprof_opts *o, FILE *out)
{
	struct pprof_writer w;
	memset(&w, 0, sizeof(w));
	name_index_init(&w.strs);
	hmap_init(&w.fn_index);
	hmap_init(&w.map_index);
	hmap_init(&w.loc_index);
	const struct stack_profile *p = o->prof;
	int rc = str_of(&w, "") == 0 ? 0 : -ENOMEM; /* string_table[0] must be "" */
	if (!rc && p->count_type)
		value_type(&w, PROFILE_SAMPLE_TYPE, p->count_type, p->count_unit);
	/* the value last: speedscope shows the last sample type */
	if (!rc)
		value_type(&w, PROFILE_SAMPLE_TYPE, p->value_type, p->value_unit);
	if (!rc)
		rc = write_samples(&w, o);
	if (!rc) {
		const struct trace_file *f0 = trace_set_file(o->ts, 0);
		pb_append(&w.out, &w.mappings);
		pb_append(&w.out, &w.lib_mappings);
		pb_append(&w.out, &w.locations);
		pb_append(&w.out, &w.functions);
		if (p->period_type)
			value_type(&w, PROFILE_PERIOD_TYPE, p->period_type, p->period_unit);
		pb_int(&w.out, PROFILE_PERIOD, (int64_t)p->period);
		int64_t comment = o->comment ? str_of(&w, o->comment) : 0;
		if (comment < 0)
			w.out.failed = 1;
		else if (comment > 0)
			pb_packed(&w.out, PROFILE_COMMENT, &(uint64_t){ (uint64_t)comment }, 1);
		if (f0) {
			pb_int(&w.out, PROFILE_TIME_NANOS, (int64_t)f0->hdr.start_real_ns);
			if (f0->last_event_ns > f0->hdr.start_mono_ns)
				pb_int(&w.out, PROFILE_DURATION_NANOS,
				       (int64_t)(f0->last_event_ns - f0->hdr.start_mono_ns));
		}
		for (size_t i = 0; i < w.strs.n; i++)
			pb_string(&w.out, PROFILE_STRING_TABLE, w.strs.names[i]);
		rc = w.out.failed ? -ENOMEM : pb_write_gzip(&w.out, out);
	}
	writer_free(&w);
	return rc;
}
