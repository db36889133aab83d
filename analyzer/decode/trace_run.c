/* The decode stage's two streaming passes over every file: metadata
 * chunks first (every file's), then the align stage (align_pass.c), then
 * event chunks in file order, with
 * dwarf-mode stacks resolved as they come and every event fed to the
 * models; then metadata found late, and the models' finish (see
 * trace_set.h).  With jobs (ts_prefetch.c) the chunks come decompressed
 * from worker threads, in the same order; a file's read buffers are
 * released when its pass ends, so they follow the file being read, not
 * the number of files.  Every record's length is checked before it is read;
 * records are copied with memcpy because decompressed payloads need not be
 * aligned. */
#include "trace_set_impl.h"
#include "grow.h"
#include "fr_family.h"
#include "align.h"
#include "ts_progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int feed_models(struct trace_set *ts, uint32_t file_index, const struct ts_where *w,
		       const struct fr_rec_hdr *rec, struct frec_error *err)
{
	for (size_t i = 0; i < ts->n_models; i++)
		if (ts->models[i].ops->feed(ts->models[i].state, file_index, rec))
			return ts_oom(err, w);
	return 0;
}

const struct fr_rec_hdr *ts_event_as_fed(struct trace_set *ts, const struct trace_file *f,
					 const uint8_t *p, uint16_t type, uint32_t size)
{
	uint32_t stack_id, canon;
	switch (type) {
	case FR_EV_CPU_SAMPLE: case FR_EV_SYSCALL: case FR_EV_CUDA: case FR_EV_NCCL:
	case FR_EV_RDMA_CTRL: case FR_EV_STEP:
		if (!f->ustack_ids.count || size < FR_EV_STACK_ID_OFFSET + sizeof(stack_id))
			break;
		memcpy(&stack_id, p + FR_EV_STACK_ID_OFFSET, sizeof(stack_id));
		if (!ts_idmap_get(&f->ustack_ids, stack_id, &canon))
			break;
		if (size > ts->scratch_cap) {
			size_t cap = ts->scratch_cap ? ts->scratch_cap : 256;
			while (cap < size)
				cap *= 2;
			uint8_t *grown = realloc(ts->scratch, cap);
			if (!grown)
				return NULL;
			ts->scratch = grown;
			ts->scratch_cap = cap;
		}
		memcpy(ts->scratch, p, size);
		memcpy(ts->scratch + FR_EV_STACK_ID_OFFSET, &canon, sizeof(canon));
		return (const struct fr_rec_hdr *)(const void *)ts->scratch;
	}
	/* Models see the record as stored; they read at most its size. */
	return (const struct fr_rec_hdr *)(const void *)p;
}

static int feed_event(struct trace_set *ts, uint32_t file_index, const struct ts_where *w,
		      const uint8_t *p, uint16_t type, uint32_t size, struct frec_error *err)
{
	const struct fr_rec_hdr *rec = ts_event_as_fed(ts, w->f, p, type, size);
	if (!rec)
		return ts_oom(err, w);
	return feed_models(ts, file_index, w, rec, err);
}

static int decode_record(struct trace_set *ts, uint32_t file_index, const struct ts_where *w,
			 const uint8_t *p, uint32_t size, struct frec_error *err)
{
	struct trace_file *f = w->f;
	struct fr_rec_hdr h;
	memcpy(&h, p, sizeof(h));
	f->records++;
	uint64_t **row = &f->records_by_type[h.type >> 8];
	if (!*row && !(*row = calloc(256, sizeof(**row))))
		return ts_oom(err, w);
	(*row)[h.type & 0xff]++;
	const struct frec_schema_entry *known = fr_schema_find(h.type);
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
		f->events_by_type[h.type]++;
		if (c.ts_ns) {
			if (!f->first_event_ns || c.ts_ns < f->first_event_ns)
				f->first_event_ns = c.ts_ns;
			if (c.ts_ns > f->last_event_ns)
				f->last_event_ns = c.ts_ns;
		}
		return feed_event(ts, file_index, w, p, h.type, size, err);
	}
	if (h.type == FR_REC_USTACK)
		return ts_decode_ustack(ts, file_index, w, p, size, err);
	return ts_decode_meta(w, h.type, p, size, err);
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
		else if (c.hdr.first_ts_ns &&
			 (!f->first_chunk_event_ns || c.hdr.first_ts_ns < f->first_chunk_event_ns))
			f->first_chunk_event_ns = c.hdr.first_ts_ns;
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
		ps->refs[ps->n_refs++] = (struct ts_chunk_ref){ c.offset, ordinal, !events, 0 };
	}
	if (rc < 0)
		mark_io_failed(f);
	frec_release_buffers(f->reader); /* one file's buffers at a time, not every file's */
	return 0;
}

/* Pass 2: the noted chunks in file order, then the metadata found in them;
 * pf (or NULL) has them decompressed ahead. */
static int read_pass2(struct trace_set *ts, struct ts_prefetch *pf, uint32_t file_index,
		      struct frec_error *err)
{
	struct trace_file *f = &ts->files[file_index];
	struct ts_pass *ps = f->pass;
	struct ts_where w = { .f = f };
	struct frec_chunk c;
	int rc = 0;
	size_t i = 0;
	for (; ps && i < ps->n_refs; i++) {
		const struct ts_chunk_ref *ref = &ps->refs[i];
		struct frec_error io_err = { 0 };
		rc = ts_prefetch_get(pf, file_index, i, &c);
		if (!rc && ref->damaged)
			continue; /* found damaged before, and the reader said so then */
		if (!rc)
			rc = frec_read_chunk_at(f->reader, ref->offset, &c, &io_err);
		if (rc < 0) {
			if (!f->io_failed)
				f->io_err = io_err;
			mark_io_failed(f);
			break;
		}
		if (rc == 0) {
			ps->refs[i].damaged = 1; /* damaged after all: recorded by the reader */
			continue;
		}
		if (!ref->late_only)
			count_chunk(f, &c);
		if (read_records(ts, file_index, &w, &c, ref->ordinal, ref->late_only ? 3 : 2,
				 NULL, err)) {
			ts_prefetch_file_done(pf, file_index);
			return -1;
		}
	}
	if (ps)
		ps->n_read = i;
	ts_prefetch_file_done(pf, file_index);
	trace_set_put_slot(ts, TS_SLOT_RESOLVER, NULL, NULL);
	frec_release_buffers(f->reader);
	return 0;
}

/* Every process's launcher ranks (-1 unknown), from the environments seen
 * so far: after pass 1 for the align stage, again after pass 2. */
static void set_ranks(struct trace_file *f)
{
	for (size_t i = 0; i < f->n_procs; i++) {
		uint64_t packed = 0, world = 0;
		hmap_get(&f->env_by_pid, f->procs[i].pid, 0, &packed);
		hmap_get(&f->env_by_pid, f->procs[i].pid, 1, &world);
		f->procs[i].rank = (int32_t)(packed & 0xffffffffu) - 1;
		f->procs[i].local_rank = (int32_t)(packed >> 32) - 1;
		f->procs[i].world_size = (int32_t)world - 1;
	}
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
		/* the refs stay for a model's second look (revisit_pass.c) */
		free(ps->late);
		ps->late = NULL;
		ps->late_len = ps->late_cap = 0;
	}
	/* Threads may be named before their process: count them afterwards. */
	for (size_t i = 0; i < f->thread_seen.cap; i++) {
		const struct hmap_slot *s = &f->thread_seen.slots[i];
		uint64_t pi;
		if (s->used && hmap_get(&f->proc_by_pid, s->key_a, 0, &pi) && pi < f->n_procs)
			f->procs[pi].threads++;
	}
	/* Launcher ranks likewise. */
	set_ranks(f);
	return 0;
}

int trace_set_run(struct trace_set *ts, struct frec_error *err)
{
	struct ts_progress pg;
	ts_progress_init(&pg);
	int rc = -1;
	/* every file's metadata first: a dwarf-mode stack is resolved as pass 2
	 * reads it, against the mappings, unwind images and code objects */
	for (size_t i = 0; i < ts->n_files; i++) {
		if (read_pass1(ts, (uint32_t)i, err))
			goto out;
		ts_progress_step(&pg, "metadata", i + 1, ts->n_files, "files");
	}
	/* the final clock before any event reaches a model */
	for (size_t i = 0; i < ts->n_files; i++)
		set_ranks(&ts->files[i]);
	if (trace_set_align_pass(ts, err))
		goto out;
	ts_progress_step(&pg, "clocks aligned", ts->n_files, ts->n_files, "files");
	struct ts_prefetch *pf = ts_prefetch_start(ts, 0);
	for (size_t i = 0; i < ts->n_files; i++) {
		if (read_pass2(ts, pf, (uint32_t)i, err)) {
			ts_prefetch_stop(pf);
			goto out;
		}
		ts_progress_step(&pg, "events", i + 1, ts->n_files, "files");
	}
	ts_prefetch_stop(pf);
	trace_set_put_slot(ts, TS_SLOT_RESOLVE_SYMBOLIZER, NULL, NULL);
	for (size_t i = 0; i < ts->n_files; i++)
		if (finish_file(ts, (uint32_t)i, err))
			goto out;
	free(ts->scratch);
	ts->scratch = NULL;
	ts->scratch_cap = 0;
	for (size_t i = 0; i < ts->n_models; i++) {
		if (ts->models[i].ops->finish(ts->models[i].state, ts, err))
			goto out;
		/* before the models that read this one finish */
		if (trace_set_revisit(ts, i, &pg, err))
			goto out;
		ts_progress_step(&pg, "models", i + 1, ts->n_models, "models");
	}
	rc = 0;
out:
	for (size_t i = 0; i < ts->n_files; i++) {
		struct ts_pass *ps = ts->files[i].pass;
		if (ps) {
			free(ps->refs);
			free(ps->late);
			free(ps);
			ts->files[i].pass = NULL;
		}
	}
	free(ts->scratch);
	ts->scratch = NULL;
	ts->scratch_cap = 0;
	ts_progress_end(&pg, ts->n_files);
	return rc;
}
