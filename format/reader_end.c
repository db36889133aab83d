/* INDEX and END for the trace reader (format/SPEC.md sections 4.4 and 4.5):
 * parses the last intact INDEX and END the scan finds, checking every count
 * against the payload that holds it, and answers what they say: the
 * recorder's totals, probe stats, drop counts (format 1.1), why a recording
 * stopped early (the STOP trailer), and which chunks the INDEX lists that
 * the scan did not yield.  The INDEX is a cross-check, never trusted over
 * the chunks themselves.  This file does not read the file: reader.c hands
 * it each intact INDEX and END chunk in file order. */
#include "reader_impl.h"

#include <inttypes.h>
#include <string.h>

/* Whether the scan returned the chunk at offset with this seq (r->intact is
 * in file order, so a binary search finds it). */
static int intact_has(const struct frec_reader *r, uint64_t offset, uint64_t seq)
{
	size_t lo = 0, hi = r->intact_n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->intact[mid].offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->intact_n && r->intact[lo].offset == offset &&
	       r->intact[lo].seq == seq;
}

void rd_parse_index(struct frec_reader *r, const struct frec_chunk *c)
{
	size_t n = c->len / sizeof(struct fr_index_entry);
	if (c->len % sizeof(struct fr_index_entry) || n != c->hdr.record_count) {
		rd_add_damage(r, c->offset, chunk_span(&c->hdr),
			      "INDEX payload of %zu bytes does not hold record_count "
			      "%u entries (chunk seq %" PRIu64 ")", c->len,
			      c->hdr.record_count, c->hdr.seq);
		return;
	}
	uint64_t missing = 0;
	struct intact *kept = n ? malloc(n * sizeof(*kept)) : NULL;
	for (size_t i = 0; i < n; i++) {
		struct fr_index_entry e;
		memcpy(&e, c->data + i * sizeof(e), sizeof(e));
		if (kept)
			kept[i] = (struct intact){ e.offset, e.seq };
		if (!intact_has(r, e.offset, e.seq))
			missing++;
	}
	r->missing = missing; /* the last INDEX describes the file */
	free(r->index);
	r->index = kept;
	r->index_n = kept ? n : 0;
}

void rd_parse_end(struct frec_reader *r, const struct frec_chunk *c)
{
	struct fr_end e;
	if (c->len < sizeof(e)) {
		rd_add_damage(r, c->offset, chunk_span(&c->hdr),
			      "END payload is %zu bytes, needs %zu (chunk seq %"
			      PRIu64 ")", c->len, sizeof(e), c->hdr.seq);
		return;
	}
	memcpy(&e, c->data, sizeof(e));
	uint64_t need = sizeof(e) + (uint64_t)e.n_probes * sizeof(struct fr_probe_stats);
	if (need > c->len) {
		rd_add_damage(r, c->offset, chunk_span(&c->hdr),
			      "END n_probes %u needs %" PRIu64 " bytes, payload has %zu "
			      "(chunk seq %" PRIu64 ")", e.n_probes, need, c->len,
			      c->hdr.seq);
		return;
	}
	struct fr_probe_stats *p = NULL;
	if (e.n_probes) {
		p = malloc((size_t)e.n_probes * sizeof(*p));
		if (!p)
			return;
		memcpy(p, c->data + sizeof(e), (size_t)e.n_probes * sizeof(*p));
	}
	/* the drop counts (format 1.1) follow the probes; an older END has
	 * none, and a count that does not fit is damage, not a crash */
	struct fr_drop_count *d = NULL;
	uint64_t need_d = need + (uint64_t)e.n_drops * sizeof(struct fr_drop_count);
	if (need_d > c->len) {
		rd_add_damage(r, c->offset, chunk_span(&c->hdr),
			      "END n_drops %u needs %" PRIu64 " bytes, payload has %zu "
			      "(chunk seq %" PRIu64 ")", e.n_drops, need_d, c->len,
			      c->hdr.seq);
		e.n_drops = 0;
	} else if (e.n_drops) {
		d = malloc((size_t)e.n_drops * sizeof(*d));
		if (!d)
			e.n_drops = 0;
		else
			memcpy(d, c->data + need, (size_t)e.n_drops * sizeof(*d));
	}
	/* since 1.1: why the recording stopped early, after the drop counts */
	struct fr_end_stop stop = { 0 };
	if (need_d <= c->len && c->len - need_d >= sizeof(stop))
		memcpy(&stop, c->data + need_d, sizeof(stop));
	r->stop = stop.magic == FR_END_STOP_MAGIC ? stop : (struct fr_end_stop){ 0 };
	free(r->probes);
	free(r->drops);
	r->probes = p;
	r->drops = d;
	r->end = e;
	r->has_end = 1;
}

void rd_recount_missing(struct frec_reader *r)
{
	uint64_t missing = 0;
	for (size_t i = 0; i < r->index_n; i++)
		missing += !intact_has(r, r->index[i].offset, r->index[i].seq);
	if (r->index_n)
		r->missing = missing;
}

/* ---- accessors ----------------------------------------------------------- */

int frec_has_end(const struct frec_reader *r)
{
	return r->has_end;
}

const struct fr_end *frec_end(const struct frec_reader *r)
{
	return r->has_end ? &r->end : NULL;
}

const struct fr_probe_stats *frec_end_probes(const struct frec_reader *r,
					     uint32_t *n)
{
	*n = r->has_end ? r->end.n_probes : 0;
	return *n ? r->probes : NULL;
}

int frec_end_stopped(const struct frec_reader *r, int *error, uint64_t *at_mono_ns)
{
	if (!r->has_end || r->stop.magic != FR_END_STOP_MAGIC)
		return 0;
	*error = r->stop.error;
	*at_mono_ns = r->stop.at_mono_ns;
	return 1;
}

const struct fr_drop_count *frec_end_drops(const struct frec_reader *r, uint32_t *n)
{
	*n = r->has_end ? r->end.n_drops : 0;
	return *n ? r->drops : NULL;
}

uint64_t frec_chunks_missing(const struct frec_reader *r)
{
	return r->missing;
}
