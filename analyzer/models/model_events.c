/* The event stream model (see model_events.h).  Each event type's layout is
 * parsed once from its family's descriptor, so the duration, function and
 * stack fields are found by name, for every family alike. */
#include "model_events.h"
#include "align.h"
#include "fr_fields.h"
#include "trace_set.h"

#include <stdlib.h>
#include <string.h>

struct ev_layout {
	int parsed;
	const struct fr_family *family;
	struct fr_field duration, func, stack; /* size 0: the record has none */
};

struct subscriber {
	ev_fn fn;
	void *ctx;
};

struct model_events {
	struct trace_set *ts;
	struct subscriber *subs;
	size_t n_subs;
	int64_t *offsets;            /* per file, taken at the first event */
	size_t n_offsets;
	struct ev_layout layouts[0x100];
};

static void *events_create(const struct model_opts *opts)
{
	(void)opts;
	return calloc(1, sizeof(struct model_events));
}

int model_events_subscribe(void *state, struct trace_set *ts, ev_fn fn, void *ctx)
{
	struct model_events *m = state;
	m->ts = ts;
	struct subscriber *g = realloc(m->subs, (m->n_subs + 1) * sizeof(*g));
	if (!g)
		return -1;
	m->subs = g;
	m->subs[m->n_subs++] = (struct subscriber){ fn, ctx };
	return 0;
}

static const struct ev_layout *layout_of(struct model_events *m, uint16_t type)
{
	struct ev_layout *l = &m->layouts[type & 0xff];
	if (!l->parsed) {
		struct fr_field f[FR_FIELDS_MAX];
		const struct fr_family_record *r = fr_family_record(type);
		int n = r ? fr_fields_parse(r->desc, f, FR_FIELDS_MAX) : -1;
		const struct fr_field *x;
		l->parsed = 1;
		l->family = fr_family_of_record(type);
		if ((x = fr_field_find(f, n, "duration_ns")))
			l->duration = *x;
		if ((x = fr_field_find(f, n, "func")))
			l->func = *x;
		if ((x = fr_field_find(f, n, "stack_id")))
			l->stack = *x;
	}
	return l;
}

/* The files' offsets: final once events flow (the decoder's align stage
 * has run), so they are read once. */
static int offsets_ready(struct model_events *m, struct trace_set *ts)
{
	if (m->offsets)
		return 0;
	m->n_offsets = trace_set_count(ts);
	m->offsets = calloc(m->n_offsets ? m->n_offsets : 1, sizeof(*m->offsets));
	if (!m->offsets)
		return -1;
	for (size_t i = 0; i < m->n_offsets; i++)
		m->offsets[i] = trace_set_time_offset_ns(ts, i);
	return 0;
}

static int events_feed(void *state, uint32_t file_index, const struct fr_rec_hdr *rec)
{
	struct model_events *m = state;
	if (!m->n_subs)
		return 0;
	struct fr_ev_common c;
	memcpy(&c, rec, sizeof(c));
	if (!m->offsets && offsets_ready(m, m->ts))
		return -1;
	const struct ev_layout *l = layout_of(m, c.h.type);
	struct ev_item e = {
		.file = file_index, .type = c.h.type, .family = l->family, .pid = c.pid,
		.tid = c.tid, .ts_ns = c.ts_ns, .func = -1, .rec = rec,
	};
	int64_t off = file_index < m->n_offsets ? m->offsets[file_index] : 0;
	e.start_ns = (int64_t)(c.ts_ns + (uint64_t)off); /* wraps like every writer's */
	if (l->duration.size)
		e.duration_ns = fr_field_u64(rec, &l->duration);
	if (l->func.size) {
		e.func = (int)fr_field_u64(rec, &l->func);
		const struct fr_family_func *fn = fr_family_func(l->family, (uint16_t)e.func);
		e.func_name = fn ? fn->name : NULL;
	}
	if (l->stack.size)
		e.stack_id = (uint32_t)fr_field_u64(rec, &l->stack);
	for (size_t i = 0; i < m->n_subs; i++)
		if (m->subs[i].fn(m->subs[i].ctx, &e))
			return -1;
	return 0;
}

static int events_finish(void *state, struct trace_set *ts, struct frec_error *err)
{
	(void)state;
	(void)ts;
	(void)err;
	return 0;
}

static void events_destroy(void *state)
{
	struct model_events *m = state;
	if (!m)
		return;
	free(m->subs);
	free(m->offsets);
	free(m);
}

const struct model_ops model_events_ops = {
	.name = "events",
	.create = events_create,
	.feed = events_feed,
	.finish = events_finish,
	.destroy = events_destroy,
};
