/* SQLite tables for the event types no hand-written table covers: a probe
 * family added later lands in `events_<record name>` without a line of
 * SQLite code, one column per field of its descriptor (bpf/families/):
 * file_id, pid, tid, ts_ns (common clock) first, then every field but the
 * padding and the common ones, `name` beside `func` (the function's name),
 * stack_id NULL when 0; integers as INTEGER, char[N] as TEXT, u8[N] as hex
 * TEXT, other arrays as comma-separated TEXT.  SQLITE_SCHEMA.md documents
 * the rule; the hand-written tables stay the reference for the families
 * they cover. */
#include "out_sqlite_impl.h"
#include "fr_fields.h"
#include "model_events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sq_generic {
	sqlite3_stmt *st;
	int n;
	struct fr_field f[FR_FIELDS_MAX];
};

/* Field i is a column of its own (not padding, the common part, the var part). */
static int is_column(const struct fr_field *f)
{
	return f->offset >= 24 && f->name[0] != '_' && f->kind != FR_FIELD_VAR;
}

static int append(char *buf, size_t len, size_t *at, const char *fmt, const char *a, const char *b)
{
	int n = snprintf(buf + *at, len - *at, fmt, a, b);
	if (n < 0 || (size_t)n >= len - *at)
		return -1;
	*at += (size_t)n;
	return 0;
}

int out_sqlite_event_table(struct out_sqlite *o, uint16_t type)
{
	const struct fr_family_record *r = type < 0x100 ? fr_family_record(type) : NULL;
	if (!r || o->generic[type])
		return r ? 0 : -1;
	struct sq_generic *g = calloc(1, sizeof(*g));
	if (!g || (g->n = fr_fields_parse(r->desc, g->f, FR_FIELDS_MAX)) < 0) {
		free(g);
		return -1;
	}
	char create[2048], insert[2048];
	size_t c = 0, i = 0;
	int bad = append(create, sizeof(create), &c, "CREATE TABLE IF NOT EXISTS events_%s%s ("
			 "file_id INTEGER, pid INTEGER, tid INTEGER, ts_ns INTEGER", r->name, "") ||
		  append(insert, sizeof(insert), &i, "INSERT INTO events_%s%s VALUES(?,?,?,?", r->name, "");
	for (int k = 0; !bad && k < g->n; k++) {
		const struct fr_field *f = &g->f[k];
		if (!is_column(f))
			continue;
		int integer = f->kind == FR_FIELD_UNSIGNED || f->kind == FR_FIELD_SIGNED;
		if (!strcmp(f->name, "func"))
			bad = append(create, sizeof(create), &c, ", name TEXT%s%s", "", "") ||
			      append(insert, sizeof(insert), &i, ",?%s%s", "", "");
		bad = bad || append(create, sizeof(create), &c, ", %s %s", f->name,
				    integer ? "INTEGER" : "TEXT") ||
		      append(insert, sizeof(insert), &i, ",?%s%s", "", "");
	}
	bad = bad || append(create, sizeof(create), &c, ")%s%s", "", "") ||
	      append(insert, sizeof(insert), &i, ")%s%s", "", "");
	sqlite3_stmt *mk = bad ? NULL : sq_prep(o, create);
	int ok = mk && sqlite3_step(mk) == SQLITE_DONE;
	sqlite3_finalize(mk);
	if (!ok || !(g->st = sq_prep(o, insert))) {
		free(g);
		return bad ? -1 : sq_fail(o, "create an event table");
	}
	o->generic[type] = g;
	return 0;
}

int sq_generic_put(struct out_sqlite *o, const struct ev_item *e)
{
	struct sq_generic *g = o->generic[e->type & 0xff];
	if (!g)
		return 0;
	const struct fr_field *last = &g->f[g->n - 1];
	if (e->rec->size < last->offset + last->size)
		return 0; /* the decoder checks the fixed part; never here */
	sqlite3_stmt *st = g->st;
	int col = 1;
	bi(st, col++, e->file);
	bi(st, col++, e->pid);
	bi(st, col++, e->tid);
	bi(st, col++, e->start_ns);
	for (int k = 0; k < g->n; k++) {
		const struct fr_field *f = &g->f[k];
		if (!is_column(f))
			continue;
		const uint8_t *at = (const uint8_t *)e->rec + f->offset;
		if (!strcmp(f->name, "func"))
			bt(st, col++, e->func_name);
		if (!strcmp(f->name, "stack_id")) {
			bstack(st, col++, e->stack_id);
			continue;
		}
		char text[4097];
		switch (f->kind) {
		case FR_FIELD_UNSIGNED:
			bu(st, col++, fr_field_u64(e->rec, f));
			break;
		case FR_FIELD_SIGNED:
			bi(st, col++, fr_field_s64(e->rec, f));
			break;
		case FR_FIELD_CHARS: {
			size_t n = strnlen((const char *)at, f->size);
			memcpy(text, at, n);
			text[n] = '\0';
			bt(st, col++, text);
			break;
		}
		case FR_FIELD_BYTES:
			for (uint32_t b = 0; b < f->size && 2 * b + 2 < sizeof(text); b++)
				snprintf(text + 2 * b, 3, "%02x", at[b]);
			text[2 * (f->size < 2048 ? f->size : 2047)] = '\0';
			bt(st, col++, text);
			break;
		case FR_FIELD_ARRAY: {
			size_t used = 0;
			text[0] = '\0';
			for (uint32_t x = 0; x < f->size / f->elem && used < sizeof(text) - 24; x++) {
				struct fr_field one = { .kind = FR_FIELD_UNSIGNED,
							.offset = f->offset + x * f->elem,
							.size = f->elem, .elem = f->elem };
				used += (size_t)snprintf(text + used, sizeof(text) - used, "%s%llu",
							 x ? "," : "",
							 (unsigned long long)fr_field_u64(e->rec, &one));
			}
			bt(st, col++, text);
			break;
		}
		case FR_FIELD_VAR:
			break;
		}
	}
	return sq_put(o, st);
}

void sq_generic_free(struct out_sqlite *o)
{
	for (size_t t = 0; t < 0x100; t++) {
		if (!o->generic[t])
			continue;
		sqlite3_finalize(o->generic[t]->st);
		free(o->generic[t]);
		o->generic[t] = NULL;
	}
}
