/* The flight-recorder ring (flightrec record --ring; format/SPEC.md section
 * 8.1): a writer whose chunks stay in memory, compressed, instead of going
 * to a file.  EVENTS chunks form a ring of at most `bytes`, the oldest
 * leaving first; META chunks are all kept, because the events still held
 * may need any of them.  A snapshot writes what is held as a trace of its
 * own on the writer thread, so the ring cannot move while it is written.
 *
 * A chunk that leaves the ring is decompressed once: the metadata records
 * inside it (frame-pointer stacks, symbols, unwind data the tracking and
 * drain threads put among the events) are kept, a USTACK that ends it is
 * kept for the event that opens the next chunk (a builder may seal between
 * a stack and its event), and the caller sees the payload to keep the state
 * the evicted events leave behind (the live allocations). */
#include "writer_impl.h"
#include "writer_ring.h"
#include "grow.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* A snapshot request in the writer's queue; the caller waits on done. */
struct wr_snap_req {
	const struct frec_snapshot *s;
	struct frec_snapshot_result *res;
	struct frec_error *err;
	int rc, done;
	pthread_cond_t cv;
};

void wr_ring_free(struct wr_ring *r)
{
	if (!r)
		return;
	struct ring_chunk *c, *next;
	for (c = r->ev_head; c; c = next) {
		next = c->next;
		free(c);
	}
	for (c = r->meta_head; c; c = next) {
		next = c->next;
		free(c);
	}
	ZSTD_freeDCtx(r->dc);
	free(r->rescue);
	free(r->held);
	free(r->raw);
	free(r->retire);
	free(r);
}

int frec_writer_open_ring(const struct frec_writer_opts *opts,
			  const struct frec_ring_opts *ring, struct frec_writer **out,
			  struct frec_error *err)
{
	*out = NULL;
	struct frec_writer *w = wr_new("(ring)", opts, err);
	if (!w)
		return -1;
	w->ring = calloc(1, sizeof(*w->ring));
	if (!w->ring || !(w->ring->dc = ZSTD_createDCtx())) {
		frec_error_set(err, "(ring)", -1, ENOMEM, "out of memory");
		wr_free_writer(w);
		return -1;
	}
	w->ring->cap = ring ? ring->bytes : 0;
	w->ring->max_exited = ring && ring->max_exited ? ring->max_exited
						       : FREC_RING_EXITED_DEFAULT(w->ring->cap);
	w->ring->evicted = ring ? ring->evicted : NULL;
	w->ring->ctx = ring ? ring->ctx : NULL;
	if (wr_start_thread(w, err) < 0) {
		wr_free_writer(w);
		return -1;
	}
	*out = w;
	return 0;
}

/* ---- keeping chunks ------------------------------------------------------ */

struct ring_chunk *wr_ring_keep(struct frec_writer *w, uint16_t type, const uint8_t *raw,
			       size_t raw_len, uint32_t count, uint64_t first, uint64_t last)
{
	const uint8_t *stored;
	size_t stored_len;
	uint8_t codec = wr_compress(w, w->codec, raw, raw_len, &stored, &stored_len);
	struct ring_chunk *k = malloc(sizeof(*k) + stored_len);
	if (!k)
		return NULL;
	k->next = NULL;
	k->type = type;
	k->codec = codec;
	k->count = count;
	k->raw_len = raw_len;
	k->stored_len = stored_len;
	k->first_ts = first;
	k->last_ts = last;
	k->seq = w->ring->meta_seq++;
	k->processes = type == FR_CHUNK_META ? wr_ring_count_processes(raw, raw_len) : 0;
	memcpy(k->data, stored, stored_len);
	return k;
}

void wr_ring_append_meta(struct frec_writer *w, struct ring_chunk *k)
{
	struct wr_ring *r = w->ring;
	if (r->meta_tail)
		r->meta_tail->next = k;
	else
		r->meta_head = k;
	r->meta_tail = k;
	pthread_mutex_lock(&w->mu);
	r->st.meta_bytes += k->stored_len;
	r->st.meta_chunks++;
	r->st.meta_records += k->count;
	r->st.meta_processes += k->processes;
	pthread_mutex_unlock(&w->mu);
}

/* The kept metadata records become a META chunk once a chunk's worth. */
static void seal_rescue(struct frec_writer *w)
{
	struct wr_ring *r = w->ring;
	if (!r->rescue_len)
		return;
	struct ring_chunk *k = wr_ring_keep(w, FR_CHUNK_META, r->rescue, r->rescue_len,
				    r->rescue_count, 0, 0);
	if (!k)
		return; /* kept in the buffer; tried again at the next eviction */
	wr_ring_append_meta(w, k);
	r->rescue_len = 0;
	r->rescue_count = 0;
}

/* The raw payload of a kept chunk in r->raw; NULL when it does not
 * decompress (it always should: this process compressed it). */
const uint8_t *wr_ring_unpack(struct wr_ring *r, const struct ring_chunk *k)
{
	if (grow_bytes(&r->raw, &r->raw_cap, k->raw_len ? k->raw_len : 1))
		return NULL;
	if (k->codec == FR_CODEC_NONE) {
		if (k->stored_len != k->raw_len)
			return NULL;
		memcpy(r->raw, k->data, k->raw_len);
	} else if (k->codec == FR_CODEC_ZSTD) {
		size_t n = ZSTD_decompressDCtx(r->dc, r->raw, k->raw_len, k->data, k->stored_len);
		if (ZSTD_isError(n) || n != k->raw_len)
			return NULL;
	} else {
		uLongf n = (uLongf)k->raw_len;
		if (uncompress(r->raw, &n, k->data, (uLong)k->stored_len) != Z_OK ||
		    n != k->raw_len)
			return NULL;
	}
	return r->raw;
}

static void evict_oldest(struct frec_writer *w)
{
	struct wr_ring *r = w->ring;
	struct ring_chunk *k = r->ev_head;
	r->ev_head = k->next;
	if (!r->ev_head)
		r->ev_tail = NULL;
	uint64_t events = 0;
	const uint8_t *raw = wr_ring_unpack(r, k);
	r->held_len = 0; /* the held stack's event was in this chunk */
	if (raw) {
		size_t off = 0;
		while (off + sizeof(struct fr_rec_hdr) <= k->raw_len) {
			struct fr_rec_hdr h;
			memcpy(&h, raw + off, sizeof(h));
			if (h.size < sizeof(h) || h.size % 8 || h.size > k->raw_len - off)
				break;
			int last = off + h.size == k->raw_len;
			if (h.type < 0x100) {
				events++;
			} else if (h.type == FR_REC_USTACK) {
				if (last && grow_bytes(&r->held, &r->held_cap, h.size) == 0) {
					memcpy(r->held, raw + off, h.size);
					r->held_len = h.size;
				}
			} else if (grow_bytes(&r->rescue, &r->rescue_cap, r->rescue_len + h.size) == 0) {
				memcpy(r->rescue + r->rescue_len, raw + off, h.size);
				r->rescue_len += h.size;
				r->rescue_count++;
			}
			off += h.size;
		}
		if (r->evicted)
			r->evicted(r->ctx, raw, k->raw_len);
	}
	pthread_mutex_lock(&w->mu);
	r->st.event_bytes -= k->stored_len;
	r->st.event_chunks--;
	r->st.chunks_evicted++;
	r->st.records_evicted += raw ? events : k->count;
	r->st.window_first_ns = r->ev_head ? r->ev_head->first_ts : 0;
	pthread_mutex_unlock(&w->mu);
	free(k);
	if (r->rescue_len >= w->chunk_bytes)
		seal_rescue(w);
}

/* Under churn the events of a long window name more exited processes than
 * their metadata is worth (each weighs far more than its few events): with
 * over max_exited waiting, the chunks up to the exit of the oldest half of
 * them leave now, so those can retire.  The window then covers the latest
 * max_exited / 2 exits at least; chunks a trigger holds stay.  Returns
 * whether any left. */
static int evict_for_exited(struct frec_writer *w, uint64_t since)
{
	struct wr_ring *r = w->ring;
	uint64_t until = r->retire[r->n_retire - r->max_exited / 2 - 1].exit_ns;
	uint64_t gone = 0;
	while (r->ev_head != r->ev_tail && r->ev_head->first_ts <= until &&
	       !(since && r->ev_head->last_ts >= since)) {
		evict_oldest(w);
		gone++;
	}
	pthread_mutex_lock(&w->mu);
	r->st.chunks_evicted_exited += gone;
	pthread_mutex_unlock(&w->mu);
	return gone != 0;
}

int wr_ring_add(struct frec_writer *w, const struct sealed *c)
{
	struct wr_ring *r = w->ring;
	struct ring_chunk *k = wr_ring_keep(w, c->chunk_type, c->buf, c->len, c->record_count,
				    c->first_ts_ns, c->last_ts_ns);
	if (!k)
		return -1; /* counted as a dropped chunk by the caller */
	if (c->chunk_type != FR_CHUNK_EVENTS) {
		wr_ring_append_meta(w, k);
	} else {
		if (r->ev_tail)
			r->ev_tail->next = k;
		else
			r->ev_head = k;
		r->ev_tail = k;
		pthread_mutex_lock(&w->mu);
		r->st.event_bytes += k->stored_len;
		r->st.event_chunks++;
		if (!r->st.window_first_ns)
			r->st.window_first_ns = r->ev_head->first_ts;
		pthread_mutex_unlock(&w->mu);
		pthread_mutex_lock(&w->mu);
		uint64_t since = r->hold_since;
		pthread_mutex_unlock(&w->mu);
		/* chunks a trigger holds are not counted against the size */
		uint64_t held = 0;
		if (since)
			for (const struct ring_chunk *h = r->ev_head; h; h = h->next)
				if (h->last_ts >= since)
					held += h->stored_len;
		/* the newest chunk stays even when it alone is over the size */
		while (r->st.event_bytes - held > r->cap && r->ev_head != r->ev_tail &&
		       !(since && r->ev_head->last_ts >= since))
			evict_oldest(w);
		if (r->n_retire > r->max_exited && evict_for_exited(w, since)) {
			wr_ring_compact(w, 1);
			goto compacted;
		}
	}
	wr_ring_compact(w, 0);
compacted:
	pthread_mutex_lock(&w->mu);
	w->st.chunks_written++;
	w->st.records_written += c->record_count;
	w->st.bytes_raw += c->len;
	pthread_mutex_unlock(&w->mu);
	return 0;
}

void frec_writer_ring_hold(struct frec_writer *w, uint64_t since_ns)
{
	if (!w || !w->ring)
		return;
	pthread_mutex_lock(&w->mu);
	w->ring->hold_since = since_ns;
	pthread_mutex_unlock(&w->mu);
}

void frec_writer_ring_stats(struct frec_writer *w, struct frec_ring_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!w || !w->ring)
		return;
	pthread_mutex_lock(&w->mu);
	*out = w->ring->st;
	pthread_mutex_unlock(&w->mu);
}

/* ---- snapshots ----------------------------------------------------------- */

/* The snapshot record, the caller's detail and META records, in one META
 * chunk at the end of the snapshot. */
static int write_snapshot_meta(struct frec_writer *sw, const struct frec_snapshot *s,
			       struct fr_rec_snapshot rec)
{
	size_t dl = s->detail ? strnlen(s->detail, 4096) : 0;
	size_t rec_len = FR_ALIGN8(sizeof(rec) + dl);
	size_t len = rec_len + (s->meta ? s->meta_len : 0);
	uint8_t *buf = calloc(1, len);
	if (!buf) {
		wr_fail_io(sw, "cannot build the snapshot record", ENOMEM);
		return -1;
	}
	rec.h.size = (uint32_t)rec_len;
	rec.h.type = FR_REC_SNAPSHOT;
	rec.h.flags = 0;
	rec.detail_len = (uint32_t)dl;
	memcpy(buf, &rec, sizeof(rec));
	if (dl)
		memcpy(buf + sizeof(rec), s->detail, dl);
	if (s->meta && s->meta_len)
		memcpy(buf + rec_len, s->meta, s->meta_len);
	int rc = wr_write_chunk(sw, FR_CHUNK_META, sw->codec, buf, len,
				1 + (s->meta ? s->meta_count : 0), rec.trigger_ns, rec.trigger_ns);
	free(buf);
	return rc;
}

static int run_snapshot(struct frec_writer *w, const struct frec_snapshot *s,
			struct frec_snapshot_result *res, struct frec_error *err)
{
	struct wr_ring *r = w->ring;
	uint64_t first = 0, last = 0, chunks = 0;
	for (const struct ring_chunk *k = r->ev_head; k; k = k->next) {
		if (k->first_ts && (!first || k->first_ts < first))
			first = k->first_ts;
		if (k->last_ts > last)
			last = k->last_ts;
		chunks++;
	}
	/* the metadata this window's events need, not the whole run's */
	wr_ring_compact(w, 1);
	struct frec_carried carried = { 0 };
	if (s->carry && s->carry(s->carry_ctx, &carried) < 0) {
		frec_error_set(err, s->name, -1, ENOMEM,
			       "cannot gather the allocations live at the window's start");
		close(s->fd);
		return -1;
	}

	/* Times in the analyzer's outputs count from the header's start: the
	 * window's (or the recording's, while nothing has left the ring), moved
	 * back to the oldest carried record so none comes before it. */
	struct frec_file_info info = s->info ? *s->info : (struct frec_file_info){ 0 };
	uint64_t start = info.start_mono_ns;
	if (r->st.chunks_evicted && first)
		start = first;
	if (carried.len && carried.first_ts_ns && carried.first_ts_ns < start)
		start = carried.first_ts_ns;
	if (start && info.start_mono_ns) {
		info.start_real_ns += start - info.start_mono_ns;
		info.start_mono_ns = start;
	}

	struct frec_writer_opts o;
	frec_writer_opts_default(&o);
	o.codec = w->codec;
	o.level = w->level;
	o.chunk_bytes = w->chunk_bytes;
	o.schema = w->schema;
	o.n_schema = w->n_schema;
	struct frec_writer *sw;
	if (wr_open(s->name, s->fd, &info, &o, 0, &sw, err) < 0)
		return -1;

	int rc = 0;
	for (const struct ring_chunk *k = r->meta_head; k && rc == 0; k = k->next)
		rc = wr_write_stored(sw, k->type, k->codec, k->data, k->stored_len, k->raw_len,
				     k->count, k->first_ts, k->last_ts);
	if (rc == 0 && r->rescue_len)
		rc = wr_write_chunk(sw, FR_CHUNK_META, sw->codec, r->rescue, r->rescue_len,
				    r->rescue_count, 0, 0);
	if (rc == 0 && (carried.len || r->held_len)) {
		/* the held USTACK goes last: its event opens the first chunk below */
		uint8_t *buf = malloc(carried.len + r->held_len);
		if (!buf) {
			wr_fail_io(sw, "cannot build the carried records", ENOMEM);
			rc = -1;
		} else {
			if (carried.len)
				memcpy(buf, carried.raw, carried.len);
			if (r->held_len)
				memcpy(buf + carried.len, r->held, r->held_len);
			uint64_t t0 = carried.first_ts_ns ? carried.first_ts_ns : first;
			rc = wr_write_chunk(sw, FR_CHUNK_EVENTS, sw->codec, buf,
					    carried.len + r->held_len,
					    carried.count + (r->held_len ? 1 : 0), t0,
					    first ? first : t0);
			free(buf);
		}
	}
	for (const struct ring_chunk *k = r->ev_head; k && rc == 0; k = k->next)
		rc = wr_write_stored(sw, k->type, k->codec, k->data, k->stored_len, k->raw_len,
				     k->count, k->first_ts, k->last_ts);
	struct fr_rec_snapshot rec = s->rec;
	rec.window_first_ns = first;
	rec.window_last_ns = last;
	rec.evicted_records = r->st.records_evicted;
	rec.carried_allocs = carried.allocs;
	rec.carried_bytes = carried.alloc_bytes;
	if (rc == 0)
		rc = write_snapshot_meta(sw, s, rec);
	if (rc == 0 && s->n_drops && frec_writer_set_drops(sw, s->drops, s->n_drops) < 0) {
		wr_fail_io(sw, "cannot keep the drop counts", ENOMEM);
		rc = -1;
	}
	struct frec_error why = { .offset = -1 };
	if (rc < 0) {
		/* a chunk that did not fit (disk full) was cut away: the file is
		 * a valid prefix that close seals with a stop record */
		if (!sw->io_failed && !sw->stop_error)
			wr_fail_io(sw, "cannot write the snapshot", EIO);
		/* close succeeds then, and says nothing: the reason, kept here */
		if (sw->stop_error)
			frec_error_set(&why, s->name, (int64_t)sw->file_off, sw->stop_error,
				       "writing stopped: %s; the file holds what was written before, "
				       "sealed", strerror(sw->stop_error));
		else
			why = sw->io_err;
	}
	int crc = frec_writer_close(sw, s->end, s->probes, s->n_probes, err);
	if (rc < 0 && !err->what[0])
		*err = why;
	if (res) {
		res->window_first_ns = first;
		res->window_last_ns = last;
		res->event_chunks = chunks;
	}
	return rc < 0 || crc < 0 ? -1 : 0;
}

void wr_ring_snapshot(struct frec_writer *w, struct wr_snap_req *rq)
{
	int rc = run_snapshot(w, rq->s, rq->res, rq->err);
	pthread_mutex_lock(&w->mu);
	rq->rc = rc;
	rq->done = 1;
	pthread_cond_broadcast(&rq->cv);
	pthread_mutex_unlock(&w->mu);
}

int frec_writer_snapshot(struct frec_writer *w, const struct frec_snapshot *s,
			 struct frec_snapshot_result *res, struct frec_error *err)
{
	if (!w || !w->ring || !s) {
		frec_error_set(err, s && s->name ? s->name : "", -1, EINVAL,
			       "a snapshot needs a writer in ring mode");
		if (s && s->fd >= 0)
			close(s->fd);
		return -1;
	}
	struct wr_snap_req rq = { .s = s, .res = res, .err = err };
	struct sealed marker = { .snap = &rq };
	pthread_cond_init(&rq.cv, NULL);
	pthread_mutex_lock(&w->mu);
	if (!w->thread_started || w->stopping) {
		pthread_mutex_unlock(&w->mu);
		pthread_cond_destroy(&rq.cv);
		frec_error_set(err, s->name, -1, EINVAL, "the ring is closed");
		close(s->fd);
		return -1;
	}
	/* behind every chunk sealed before, whatever the queue's size limit */
	if (w->tail)
		w->tail->next = &marker;
	else
		w->head = &marker;
	w->tail = &marker;
	pthread_cond_signal(&w->cv);
	while (!rq.done)
		pthread_cond_wait(&rq.cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
	pthread_cond_destroy(&rq.cv);
	return rq.rc;
}
