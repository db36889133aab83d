/* The SQLite output's stacks, written once at finish: every stack of every
 * file symbolized (the first of duplicate ids wins), one frames row per
 * distinct (name, dso) across all files, one stack_frames row per frame,
 * root first, and the stack's folded text, so queries join samples to
 * functions without the symbolizer.
 *
 * Not for deciding names (symbolize.c does, for every output alike), nor
 * for the rows that refer to stacks (they store stack_id as recorded). */
#include "out_sqlite_impl.h"
#include "symbolize.h"
#include "trace_set.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The order map_path searches: by (pid, start), higher seq first at an
 * equal start. */
static int map_cmp(const void *a, const void *b)
{
	const struct ts_mapping *x = *(const struct ts_mapping *const *)a;
	const struct ts_mapping *y = *(const struct ts_mapping *const *)b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? 1 : x->seq > y->seq ? -1 : 0;
}

/* The mapping path holding ip for pid (any of them on overlap); NULL when
 * none.  A binary search over the file's mappings, which the caller sorted
 * with map_cmp, then a short walk back over that pid's. */
static const char *map_path(const struct ts_mapping *const *maps, size_t n, uint32_t pid,
			    uint64_t ip)
{
	/* last mapping with (pid, start) <= (pid, ip) */
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (maps[mid]->pid < pid || (maps[mid]->pid == pid && maps[mid]->start <= ip))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = lo; k-- > 0 && maps[k]->pid == pid;) {
		if (ip >= maps[k]->start && ip < maps[k]->end)
			return maps[k]->path;
		if (lo - k > 8)
			break; /* overlapping remaps are rare; do not scan far */
	}
	return NULL;
}

static uint64_t fnv(const char *s, uint64_t h)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ull;
	}
	return h;
}

struct frame_ids {
	struct hmap ids;    /* (hash(name), hash(dso)) -> frame_id */
	int64_t next;
	sqlite3_stmt *ins;
};

static int frame_id(struct out_sqlite *o, struct frame_ids *fr, const char *name, const char *dso,
		    int kernel, int64_t *id)
{
	uint64_t a = fnv(name, 0xcbf29ce484222325ull), b = fnv(dso ? dso : "", 0x84222325cbf29ce4ull);
	int created;
	uint64_t *v = hmap_slot(&fr->ids, a, b, &created);
	if (!v)
		return -1;
	if (!created) {
		*id = (int64_t)*v;
		return 0;
	}
	*v = (uint64_t)++fr->next;
	*id = fr->next;
	int unresolved = strncmp(name, "[unknown]", 9) == 0 || strncmp(name, "[no stack]", 10) == 0 ||
			 (!kernel && strstr(name, "+0x") && !strchr(name, '('));
	char symbol[512];
	snprintf(symbol, sizeof(symbol), "%s", name);
	size_t len = strlen(symbol);
	if (kernel && len > 4 && strcmp(symbol + len - 4, "_[k]") == 0)
		symbol[len - 4] = '\0';
	bi(fr->ins, 1, *id);
	bt(fr->ins, 2, name);
	bt(fr->ins, 3, unresolved ? NULL : symbol);
	bt(fr->ins, 4, dso);
	/* file, line: NULL until line info / Python frames arrive */
	bt(fr->ins, 7, kernel ? "kernel" : "native");
	return sq_put(o, fr->ins);
}

int sq_write_stacks(struct out_sqlite *o, struct trace_set *ts, struct frec_error *err)
{
	struct symbolizer *sym = trace_set_symbolizer(ts, err);
	if (!sym)
		return -1;
	struct frame_ids fr = { .ins = sq_prep(o, "INSERT INTO frames VALUES(?,?,?,?,?,?,?)") };
	hmap_init(&fr.ids);
	sqlite3_stmt *ss = sq_prep(o, "INSERT OR IGNORE INTO stacks VALUES(?,?,?,?,?,?)");
	sqlite3_stmt *sf = sq_prep(o, "INSERT OR IGNORE INTO stack_frames VALUES(?,?,?,?,?)");
	const char **frames = NULL;
	const struct ts_mapping **maps = NULL;
	char *folded = NULL;
	size_t folded_cap = 0;
	int rc = fr.ins && ss && sf ? 0 : -1;
	for (size_t i = 0; !rc && i < trace_set_count(ts); i++) {
		const struct trace_file *f = trace_set_file(ts, i);
		free(maps);
		maps = malloc((f->n_maps ? f->n_maps : 1) * sizeof(*maps));
		if (!maps) {
			rc = -1;
			break;
		}
		for (size_t k = 0; k < f->n_maps; k++)
			maps[k] = &f->maps[k];
		qsort(maps, f->n_maps, sizeof(*maps), map_cmp);
		for (size_t k = 0; !rc && k < f->n_stacks; k++) {
			const struct ts_stack *st = &f->stacks[k];
			if (trace_file_stack(f, st->stack_id) != st)
				continue; /* a later duplicate id: the first one wins */
			size_t n = (size_t)st->n_kernel + st->n_user;
			const char **grown = realloc(frames, (n ? n : 1) * sizeof(*frames));
			if (!grown) {
				rc = -1;
				break;
			}
			frames = grown;
			symbolize_stack(sym, f, (uint32_t)i, st, frames);
			size_t flen = 0;
			int64_t leaf = 0;
			for (size_t d = 0; !rc && d < n; d++) {
				if (!frames[d]) {
					rc = -1;
					break;
				}
				/* root first: user outermost .. user leaf, kernel outermost .. leaf */
				int kernel = d >= st->n_user;
				/* a dwarf-mode stack keeps its user frames as names (unwound
				 * and merged with Python frames), no ips: reading them ran
				 * past f->ips (found by fuzz_outputs) */
				int named = !kernel && st->ustack;
				uint64_t ip = kernel ? f->ips[st->ips_at + (n - 1 - d)]
					      : named ? 0
						      : f->ips[st->ips_at + st->n_kernel + (st->n_user - 1 - d)];
				const char *dso = kernel ? "[kernel.kallsyms]"
					       : named ? NULL : map_path(maps, f->n_maps, st->pid, ip);
				int64_t id;
				if (frame_id(o, &fr, frames[d], dso, kernel, &id)) {
					rc = -1;
					break;
				}
				leaf = id;
				bi(sf, 1, (int64_t)i);
				bi(sf, 2, st->stack_id);
				bi(sf, 3, (int64_t)d);
				bi(sf, 4, id);
				if (named)
					sqlite3_bind_null(sf, 5);
				else
					bu(sf, 5, ip);
				if ((rc = sq_put(o, sf)))
					break;
				size_t add = strlen(frames[d]) + 2;
				if (flen + add > folded_cap) {
					size_t cap = (flen + add) * 2;
					char *g = realloc(folded, cap);
					if (!g) {
						rc = -1;
						break;
					}
					folded = g;
					folded_cap = cap;
				}
				if (flen)
					folded[flen++] = ';';
				memcpy(folded + flen, frames[d], add - 2);
				flen += add - 2;
				folded[flen] = '\0';
			}
			if (rc)
				break;
			bi(ss, 1, (int64_t)i);
			bi(ss, 2, st->stack_id);
			bi(ss, 3, st->pid);
			bi(ss, 4, (int64_t)n);
			if (n)
				bi(ss, 5, leaf);
			bt(ss, 6, n ? folded : "");
			rc = sq_put(o, ss);
		}
	}
	free(frames);
	free(maps);
	free(folded);
	hmap_free(&fr.ids);
	sqlite3_finalize(fr.ins);
	sqlite3_finalize(ss);
	sqlite3_finalize(sf);
	return rc;
}
