/* The ring's metadata over a job's life (format/SPEC.md section 8.1):
 * what the recorder keeps of the processes that have come and gone.  Each
 * exited process is named by frec_writer_ring_retire once its metadata is
 * sealed; once its exit event has left the ring, no event still held can
 * name it, and a compaction drops its records: by time for the records that
 * arrived before the retirement or carry a time no later than its exit
 * (process, threads, environment, mappings, interpreter, attach results,
 * code objects), and, for stacks, unless the pid has come back as another
 * process (reused) since.  The
 * clock anchors, stats and RDMA counters older than the window go too, but
 * the latest of each.  What stays: the metadata of the processes alive or
 * with events in the window, and of the files they map (symbols, unwind
 * data: one per file, whatever the number of processes).  A compaction
 * runs when the metadata has grown by half since the last one and some of
 * it can go (its cost is then proportional to what was added), and before
 * every snapshot. */
#include "writer_impl.h"
#include "writer_ring.h"
#include "grow.h"

#include <stddef.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

uint32_t wr_ring_count_processes(const uint8_t *raw, size_t len)
{
	uint32_t n = 0;
	for (size_t off = 0; off + sizeof(struct fr_rec_hdr) <= len;) {
		struct fr_rec_hdr h;
		memcpy(&h, raw + off, sizeof(h));
		if (h.size < sizeof(h) || h.size % 8 || h.size > len - off)
			break;
		n += h.type == FR_REC_PROCESS;
		off += h.size;
	}
	return n;
}

int frec_writer_ring_retire(struct frec_writer *w, const struct frec_retired *v, size_t n)
{
	if (!w || !w->ring || !n)
		return 0;
	struct wr_retire_req *rq = malloc(sizeof(*rq) + n * sizeof(rq->v[0]));
	struct sealed *c = calloc(1, sizeof(*c));
	if (!rq || !c) {
		free(rq);
		free(c);
		return -1;
	}
	rq->n = n;
	memcpy(rq->v, v, n * sizeof(v[0]));
	c->retire = rq;
	pthread_mutex_lock(&w->mu);
	if (!w->thread_started || w->stopping) {
		pthread_mutex_unlock(&w->mu);
		free(rq);
		free(c);
		return 0;
	}
	/* behind the chunks sealed before, whatever the queue's size limit */
	if (w->tail)
		w->tail->next = c;
	else
		w->head = c;
	w->tail = c;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	return 0;
}

void wr_ring_retire(struct frec_writer *w, struct wr_retire_req *rq)
{
	struct wr_ring *r = w->ring;
	if (r->n_retire + rq->n > r->cap_retire) {
		size_t cap = r->cap_retire ? r->cap_retire : 64;
		while (cap < r->n_retire + rq->n)
			cap *= 2;
		struct ring_retire *v = realloc(r->retire, cap * sizeof(*v));
		if (!v) {
			free(rq);
			return; /* kept: the metadata of these stays */
		}
		r->retire = v;
		r->cap_retire = cap;
	}
	/* every chunk queued before the request has its seq below this one */
	for (size_t i = 0; i < rq->n; i++)
		r->retire[r->n_retire++] = (struct ring_retire){
			.pid = rq->v[i].pid, .exit_ns = rq->v[i].exit_ns, .seq = r->meta_seq};
	free(rq);
	pthread_mutex_lock(&w->mu);
	r->st.retire_waiting = r->n_retire;
	pthread_mutex_unlock(&w->mu);
	wr_ring_compact(w, 0);
}

/* ---- compaction ---------------------------------------------------------- */

/* The retired processes whose exits have left the ring, by pid. */
struct gone {
	uint32_t pid; /* 0: empty slot */
	uint8_t reborn; /* a later FR_REC_PROCESS of the same pid */
	uint64_t exit_ns, seq;
};

struct compaction {
	struct gone *slots;
	size_t mask;
	uint64_t window;  /* the oldest event still held */
	/* the latest time-series record older than the window, by kind */
	uint64_t clock_keep, stats_keep, rdma_keep;
	uint64_t dropped;
};

static struct gone *gone_of(struct compaction *c, uint32_t pid)
{
	if (!c->slots || !pid)
		return NULL;
	for (size_t i = (pid * 2654435761u) & c->mask;; i = (i + 1) & c->mask) {
		if (c->slots[i].pid == pid)
			return &c->slots[i];
		if (!c->slots[i].pid)
			return NULL;
	}
}

static int gone_add(struct compaction *c, const struct ring_retire *e)
{
	for (size_t i = (e->pid * 2654435761u) & c->mask;; i = (i + 1) & c->mask) {
		struct gone *g = &c->slots[i];
		if (!g->pid || g->pid == e->pid) {
			/* pid reused and gone again: the latest exit covers both */
			if (!g->pid || e->exit_ns > g->exit_ns)
				g->exit_ns = e->exit_ns;
			if (e->seq > g->seq)
				g->seq = e->seq;
			g->pid = e->pid;
			return 0;
		}
	}
}

/* The time of a time-series record (clock anchor, stats, RDMA counters). */
static uint64_t *series_keep(struct compaction *c, uint16_t type)
{
	switch (type) {
	case FR_REC_CLOCK: return &c->clock_keep;
	case FR_REC_STATS: return &c->stats_keep;
	case FR_REC_RDMA_COUNTERS: return &c->rdma_keep;
	default: return NULL;
	}
}

/* First pass: which pids came back, which series records stay. */
static void survey(struct compaction *c, const uint8_t *raw, size_t len, uint64_t seq)
{
	for (size_t off = 0; off + sizeof(struct fr_rec_hdr) <= len;) {
		struct fr_rec_hdr h;
		memcpy(&h, raw + off, sizeof(h));
		if (h.size < sizeof(h) || h.size % 8 || h.size > len - off)
			break;
		const uint8_t *p = raw + off;
		uint64_t *keep = series_keep(c, h.type);
		if (keep && h.size >= 16) {
			uint64_t ts = rd64(p + 8);
			if (ts < c->window && ts > *keep)
				*keep = ts;
		} else if (h.type == FR_REC_PROCESS && h.size >= sizeof(struct fr_rec_process)) {
			struct gone *g = gone_of(c, rd32(p + offsetof(struct fr_rec_process, pid)));
			if (g && seq >= g->seq &&
			    rd64(p + offsetof(struct fr_rec_process, ts_ns)) > g->exit_ns)
				g->reborn = 1;
		}
		off += h.size;
	}
}

/* Whether the record at p (size bytes, of a chunk with seq) is still needed. */
static int needed(struct compaction *c, const uint8_t *p, uint16_t type, uint32_t size,
		  uint64_t seq)
{
	uint64_t *keep = series_keep(c, type);
	if (keep)
		return size < 16 || rd64(p + 8) >= c->window || rd64(p + 8) == *keep;
	size_t pid_off, ts_off = 8;
	switch (type) {
	case FR_REC_PROCESS:
		pid_off = offsetof(struct fr_rec_process, pid);
		break;
	case FR_REC_THREAD:
	case FR_REC_MAPPING:
	case FR_REC_PROC_ENV:
	case FR_REC_PROC_CGROUP:
	case FR_REC_PYTHON:
	case FR_REC_ATTACH:
		pid_off = 16; /* after h and ts_ns, in each (format/SPEC.md) */
		break;
	case FR_REC_PYCODE:
		pid_off = offsetof(struct fr_rec_pycode, pid);
		ts_off = 0;
		break;
	case FR_REC_STACK:
		pid_off = offsetof(struct fr_rec_stack, pid);
		ts_off = 0;
		break;
	default:
		if (type >= 0x100)
			return 1;
		pid_off = 16; /* an event among the metadata: fr_ev_common */
	}
	if (size < pid_off + 4)
		return 1;
	struct gone *g = gone_of(c, rd32(p + pid_off));
	if (!g)
		return 1;
	if (type == FR_REC_STACK)
		return g->reborn;
	/* before the retirement, or no later than the exit: the process that
	 * exited (a zombie's /proc is read after its exit; the mappings it made
	 * may be handled after the retirement) */
	if (seq < g->seq)
		return 0;
	return !ts_off || rd64(p + ts_off) > g->exit_ns;
}

/* Appends the records of raw that are needed to *out; their number. */
static uint32_t filter(struct compaction *c, const uint8_t *raw, size_t len, uint64_t seq,
		       uint8_t **out, size_t *out_len, size_t *out_cap)
{
	uint32_t kept = 0;
	for (size_t off = 0; off + sizeof(struct fr_rec_hdr) <= len;) {
		struct fr_rec_hdr h;
		memcpy(&h, raw + off, sizeof(h));
		if (h.size < sizeof(h) || h.size % 8 || h.size > len - off)
			break;
		if (needed(c, raw + off, h.type, h.size, seq)) {
			if (grow_bytes(out, out_cap, *out_len + h.size))
				return UINT32_MAX;
			memcpy(*out + *out_len, raw + off, h.size);
			*out_len += h.size;
			kept++;
		} else {
			c->dropped++;
		}
		off += h.size;
	}
	return kept;
}

static void free_chunks(struct ring_chunk *k)
{
	while (k) {
		struct ring_chunk *next = k->next;
		free(k);
		k = next;
	}
}

void wr_ring_compact(struct frec_writer *w, int force)
{
	struct wr_ring *r = w->ring;
	/* half as much again as after the last one, when exited processes'
	 * metadata can go; four times, for the time series alone */
	uint64_t floor = r->compacted_bytes + (1u << 20);
	if (!force && r->st.meta_bytes < floor + r->compacted_bytes / 2)
		return;
	struct compaction c = { .window = UINT64_MAX };
	for (const struct ring_chunk *k = r->ev_head; k; k = k->next)
		if (k->first_ts && k->first_ts < c.window)
			c.window = k->first_ts;
	if (!force && !(r->n_retire && r->retire[0].exit_ns < c.window) &&
	    r->st.meta_bytes < 4 * floor)
		return;
	/* the exits that have left the ring */
	size_t n_gone = 0;
	for (size_t i = 0; i < r->n_retire; i++)
		n_gone += r->retire[i].exit_ns < c.window;
	size_t cap = 16;
	while (cap < 2 * n_gone)
		cap *= 2;
	if (n_gone && !(c.slots = calloc(cap, sizeof(*c.slots))))
		return;
	c.mask = cap - 1;
	size_t w_i = 0;
	for (size_t i = 0; i < r->n_retire; i++) {
		if (r->retire[i].exit_ns < c.window)
			gone_add(&c, &r->retire[i]);
		else
			r->retire[w_i++] = r->retire[i];
	}
	/* the ones still waiting keep their place: chunks are not merged
	 * across it, so the code objects before it can go later */
	uint64_t next_boundary = w_i ? r->retire[0].seq : UINT64_MAX;
	size_t b_i = 0;

	for (const struct ring_chunk *k = r->meta_head; k; k = k->next) {
		const uint8_t *raw = wr_ring_unpack(r, k);
		if (raw)
			survey(&c, raw, k->raw_len, k->seq);
	}
	if (r->rescue_len)
		survey(&c, r->rescue, r->rescue_len, r->meta_seq);

	struct ring_chunk *head = NULL, *tail = NULL;
	uint8_t *out = NULL;
	size_t out_len = 0, out_cap = 0;
	uint32_t out_count = 0;
	uint64_t out_first = 0, out_last = 0, out_seq = 0, bytes = 0, chunks = 0, records = 0,
		 processes = 0;
	int failed = 0;
	for (struct ring_chunk *k = r->meta_head; k && !failed;) {
		/* one chunk out per chunk_bytes, or at a waiting retirement's place */
		while (b_i < w_i && r->retire[b_i].seq <= k->seq)
			b_i++;
		uint64_t boundary = b_i < w_i ? r->retire[b_i].seq : UINT64_MAX;
		if (out_len && (out_len >= w->chunk_bytes || boundary != next_boundary)) {
			struct ring_chunk *n = wr_ring_keep(w, FR_CHUNK_META, out, out_len, out_count,
							    out_first, out_last);
			if (!n) {
				failed = 1;
				break;
			}
			n->seq = out_seq;
			if (tail)
				tail->next = n;
			else
				head = n;
			tail = n;
			bytes += n->stored_len;
			chunks++;
			records += n->count;
			processes += n->processes;
			out_len = 0;
			out_count = 0;
			out_first = out_last = 0;
		}
		next_boundary = boundary;
		const uint8_t *raw = wr_ring_unpack(r, k);
		uint32_t kept;
		if (!raw || (kept = filter(&c, raw, k->raw_len, k->seq, &out, &out_len,
					   &out_cap)) == UINT32_MAX) {
			failed = 1;
			break;
		}
		out_count += kept;
		if (k->first_ts && (!out_first || k->first_ts < out_first))
			out_first = k->first_ts;
		if (k->last_ts > out_last)
			out_last = k->last_ts;
		out_seq = k->seq; /* the latest place: the code objects in it stay longest */
		k = k->next;
	}
	if (!failed && out_len) {
		struct ring_chunk *n = wr_ring_keep(w, FR_CHUNK_META, out, out_len, out_count,
						    out_first, out_last);
		if (!n) {
			failed = 1;
		} else {
			n->seq = out_seq;
			if (tail)
				tail->next = n;
			else
				head = n;
			tail = n;
			bytes += n->stored_len;
			chunks++;
			records += n->count;
			processes += n->processes;
		}
	}
	/* the rescued records not sealed yet, filtered in place */
	uint8_t *res = NULL;
	size_t res_len = 0, res_cap = 0;
	uint32_t res_count = 0;
	if (!failed && r->rescue_len) {
		res_count = filter(&c, r->rescue, r->rescue_len, r->meta_seq, &res, &res_len, &res_cap);
		failed = res_count == UINT32_MAX;
	}
	free(out);
	if (failed) {
		/* out of memory: everything stays as it was, the gone ones too */
		free_chunks(head);
		free(res);
		free(c.slots);
		r->n_retire = w_i; /* those that left are tried no more: kept */
		return;
	}
	free_chunks(r->meta_head);
	r->meta_head = head;
	r->meta_tail = tail;
	if (r->rescue_len) {
		free(r->rescue);
		r->rescue = res;
		r->rescue_len = res_len;
		r->rescue_cap = res_cap;
		r->rescue_count = res_count;
	}
	r->n_retire = w_i;
	r->compacted_bytes = bytes;
	pthread_mutex_lock(&w->mu);
	r->st.meta_bytes = bytes;
	r->st.meta_chunks = chunks;
	r->st.meta_records = records + r->rescue_count;
	r->st.meta_processes = processes + wr_ring_count_processes(r->rescue, r->rescue_len);
	r->st.retire_waiting = r->n_retire;
	r->st.pids_retired += n_gone;
	r->st.records_retired += c.dropped;
	r->st.compactions++;
	pthread_mutex_unlock(&w->mu);
	free(c.slots);
#ifdef __GLIBC__
	/* the old chunks were freed after the new ones were made: without a
	 * trim the heap keeps the peak of the two, and a week of compactions
	 * fragments it (glibc raises its mmap threshold to the largest block
	 * freed, so these come from the heap) */
	malloc_trim(0);
#endif
}

void frec_writer_ring_compact(struct frec_writer *w)
{
	if (!w || !w->ring)
		return;
	pthread_mutex_lock(&w->mu);
	int running = w->thread_started && !w->stopping;
	pthread_mutex_unlock(&w->mu);
	if (!running)
		wr_ring_compact(w, 1);
}
