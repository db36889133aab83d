/* Trace reader with recovery (format/SPEC.md section 9): walks the file one
 * chunk at a time, checks every length against what is really there before
 * reading or allocating, reports each damaged region and resynchronises on
 * the next chunk header whose CRC holds.  Input is hostile by default: it
 * comes from bug-report attachments.  This file is not for writing. */
#include "frec_reader.h"
#include "frec_crc32c.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#define CHUNK_HDR ((uint64_t)sizeof(struct fr_chunk_hdr))
#define SCAN_BLOCK (64u << 10)
#define MAX_DAMAGE 4096 /* past this, the last entry sums up the rest */
#define RAW_INITIAL_MAX (1u << 20) /* first guess before output proves more */

struct intact {
	uint64_t offset, seq;
};

struct frec_reader {
	int fd;
	char *path;
	uint64_t size;
	struct fr_file_hdr hdr;
	char *cmdline;
	uint64_t pos;

	uint8_t *stored; /* one chunk's payload as stored */
	size_t stored_cap;
	uint8_t *raw;    /* ... and decompressed */
	size_t raw_cap;
	ZSTD_DCtx *zd;
	uint8_t scan[SCAN_BLOCK + 64];

	struct frec_damage *dmg;
	size_t dmg_n, dmg_cap;
	uint64_t dmg_more; /* regions folded into the last entry */
	int damage_since_intact;

	int have_prev_seq;
	uint64_t prev_seq, seq_gaps;
	uint64_t chunks_read;
	struct intact *intact; /* offsets ascending: the scan only moves forward */
	size_t intact_n, intact_cap;
	uint64_t missing;

	int has_end;
	struct fr_end end;
	struct fr_probe_stats *probes;
	struct fr_drop_count *drops;
	struct fr_end_stop stop;   /* magic 0: not stopped early */

	/* frec_chunk_next_record's count check */
	uint64_t it_offset, it_seen;
	int it_counting, it_done;

	/* frec_defer_payloads: chunks of this type are returned without their
	 * payload during the scan (0: none), read later by frec_read_chunk_at */
	uint16_t defer_type;
	/* the last INDEX's entries, so that a deferred chunk found damaged
	 * later can still count as missing */
	struct intact *index;
	size_t index_n;
};

/* ---- helpers ------------------------------------------------------------- */

static uint64_t chunk_span(const struct fr_chunk_hdr *h)
{
	return CHUNK_HDR + FR_ALIGN8((uint64_t)h->stored_len);
}

__attribute__((format(printf, 4, 5)))
static void add_damage(struct frec_reader *r, uint64_t offset, uint64_t length,
		       const char *fmt, ...)
{
	r->damage_since_intact = 1;
	if (r->dmg_n == MAX_DAMAGE) {
		/* A hostile file can be nothing but damage: keep memory bounded. */
		struct frec_damage *last = &r->dmg[r->dmg_n - 1];
		r->dmg_more++;
		if (offset + length > last->offset)
			last->length = offset + length - last->offset;
		snprintf(last->what, sizeof(last->what),
			 "%" PRIu64 " more damaged regions (too many to list)",
			 r->dmg_more + 1);
		return;
	}
	if (r->dmg_n == r->dmg_cap) {
		size_t cap = r->dmg_cap ? r->dmg_cap * 2 : 8;
		void *p = realloc(r->dmg, cap * sizeof(*r->dmg));
		if (!p)
			return; /* damage is still skipped, only not listed */
		r->dmg = p;
		r->dmg_cap = cap;
	}
	struct frec_damage *d = &r->dmg[r->dmg_n++];
	d->offset = offset;
	d->length = length;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->what, sizeof(d->what), fmt, ap);
	va_end(ap);
}

/* Returns 0 when all n bytes were read; -1 with errno otherwise (a short
 * read means the file shrank under us). */
static int pread_full(int fd, void *buf, size_t n, uint64_t off)
{
	uint8_t *p = buf;
	while (n) {
		ssize_t k = pread(fd, p, n, (off_t)off);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (k == 0) {
			errno = EIO;
			return -1;
		}
		p += k;
		n -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

static int grow(uint8_t **buf, size_t *cap, size_t need)
{
	if (*cap >= need)
		return 0;
	uint8_t *p = realloc(*buf, need);
	if (!p)
		return -1;
	*buf = p;
	*cap = need;
	return 0;
}

/* Magic and header CRC: whether the header's own bytes can be trusted. */
static int header_trusted(const uint8_t *b, struct fr_chunk_hdr *h)
{
	memcpy(h, b, sizeof(*h));
	return h->magic == FR_CHUNK_MAGIC &&
	       h->header_crc32c ==
		       frec_crc32c(0, b, offsetof(struct fr_chunk_hdr, header_crc32c));
}

/* ---- open / close -------------------------------------------------------- */

static int read_file_header(struct frec_reader *r, struct frec_error *err)
{
	struct fr_file_hdr *h = &r->hdr;
	if (r->size < sizeof(*h)) {
		frec_error_set(err, r->path, -1, EINVAL,
			       "not a flightrec trace: %" PRIu64 " bytes, shorter "
			       "than the 128-byte file header", r->size);
		return -1;
	}
	if (pread_full(r->fd, h, sizeof(*h), 0) < 0) {
		frec_error_set(err, r->path, 0, errno, "cannot read: %s",
			       strerror(errno));
		return -1;
	}
	if (memcmp(h->magic, FR_FILE_MAGIC, sizeof(h->magic)) != 0) {
		frec_error_set(err, r->path, 0, EINVAL,
			       "not a flightrec trace (bad magic)");
		return -1;
	}
	if (h->version_major != FR_VERSION_MAJOR) {
		frec_error_set(err, r->path, 8, ENOTSUP,
			       "format version %u.%u is not supported by this "
			       "reader (it reads %u.x); use a newer flightrec-analyze",
			       h->version_major, h->version_minor, FR_VERSION_MAJOR);
		return -1;
	}
	uint64_t min_size = sizeof(*h) + FR_ALIGN8((uint64_t)h->cmdline_len);
	if (h->cmdline_len > FR_MAX_CMDLINE || h->header_size < min_size ||
	    h->header_size % 8 || h->header_size > r->size) {
		frec_error_set(err, r->path, 12, EINVAL,
			       "bad file header: header_size %u, cmdline_len %u, "
			       "file size %" PRIu64, h->header_size,
			       h->cmdline_len, r->size);
		return -1;
	}
	uint8_t *cmd = malloc((size_t)h->cmdline_len + 1);
	if (!cmd) {
		frec_error_set(err, r->path, -1, ENOMEM, "out of memory");
		return -1;
	}
	if (h->cmdline_len &&
	    pread_full(r->fd, cmd, h->cmdline_len, sizeof(*h)) < 0) {
		frec_error_set(err, r->path, sizeof(*h), errno, "cannot read: %s",
			       strerror(errno));
		free(cmd);
		return -1;
	}
	struct fr_file_hdr z = *h;
	z.header_crc32c = 0;
	uint32_t crc = frec_crc32c(frec_crc32c(0, &z, sizeof(z)), cmd,
				   h->cmdline_len);
	if (crc != h->header_crc32c) {
		frec_error_set(err, r->path, 0, EINVAL,
			       "file header CRC mismatch (stored 0x%08x, computed "
			       "0x%08x): the header is corrupt", h->header_crc32c, crc);
		free(cmd);
		return -1;
	}
	/* argv is NUL-separated; show it as one line. */
	size_t n = h->cmdline_len;
	while (n && cmd[n - 1] == 0)
		n--;
	for (size_t i = 0; i < n; i++)
		if (cmd[i] == 0)
			cmd[i] = ' ';
	cmd[n] = 0;
	r->cmdline = (char *)cmd;
	h->host[sizeof(h->host) - 1] = 0;
	h->kernel_release[sizeof(h->kernel_release) - 1] = 0;
	r->pos = h->header_size;
	return 0;
}

int frec_open_fd(int fd, const char *name, struct frec_reader **out,
		 struct frec_error *err)
{
	*out = NULL;
	if (!name)
		name = "";
	struct frec_reader *r = calloc(1, sizeof(*r));
	if (!r || !(r->path = strdup(name))) {
		free(r);
		frec_error_set(err, name, -1, ENOMEM, "out of memory");
		return -1;
	}
	r->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	struct stat st;
	if (r->fd < 0 || fstat(r->fd, &st) < 0) {
		frec_error_set(err, name, -1, errno, "cannot open: %s",
			       strerror(errno));
		frec_close(r);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		frec_error_set(err, name, -1, EINVAL,
			       "not a regular file (a trace must be seekable)");
		frec_close(r);
		return -1;
	}
	r->size = (uint64_t)st.st_size;
	if (read_file_header(r, err) < 0) {
		frec_close(r);
		return -1;
	}
	*out = r;
	return 0;
}

int frec_open(const char *path, struct frec_reader **out, struct frec_error *err)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		frec_error_set(err, path, -1, errno, "cannot open: %s",
			       strerror(errno));
		return -1;
	}
	int rc = frec_open_fd(fd, path, out, err);
	close(fd);
	return rc;
}

void frec_close(struct frec_reader *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	ZSTD_freeDCtx(r->zd);
	free(r->path);
	free(r->cmdline);
	free(r->stored);
	free(r->raw);
	free(r->dmg);
	free(r->intact);
	free(r->index);
	free(r->probes);
	free(r->drops);
	free(r);
}

/* ---- scanning ------------------------------------------------------------ */

/* The region from start is damaged (why): find the next offset after start
 * holding a chunk header whose CRC holds, at any byte offset in case bytes
 * were inserted or lost.  Records the damage and moves pos there (or EOF). */
static int resync(struct frec_reader *r, uint64_t start, const char *why)
{
	uint64_t p = start + 1, found = r->size;
	while (p + CHUNK_HDR <= r->size && found == r->size) {
		uint64_t left = r->size - p;
		size_t n = left < SCAN_BLOCK + CHUNK_HDR - 1 ?
			   (size_t)left : SCAN_BLOCK + CHUNK_HDR - 1;
		if (pread_full(r->fd, r->scan, n, p) < 0)
			return -1;
		for (size_t i = 0; i + CHUNK_HDR <= n; i++) {
			const uint8_t *m = memchr(r->scan + i, 'F',
						  n - CHUNK_HDR + 1 - i);
			if (!m)
				break;
			i = (size_t)(m - r->scan);
			struct fr_chunk_hdr h;
			if (header_trusted(m, &h)) {
				found = p + i;
				break;
			}
		}
		p += n - CHUNK_HDR + 1; /* overlap: every offset is tried once */
	}
	add_damage(r, start, found - start, "%s", why);
	r->pos = found;
	return 0;
}

/* Header fields that must hold before the payload is read. */
static int header_limits(const struct fr_chunk_hdr *h, char *why, size_t len)
{
	if (h->header_size != CHUNK_HDR)
		snprintf(why, len, "unsupported chunk header_size %u (seq %" PRIu64 ")",
			 h->header_size, h->seq);
	else if (h->raw_len > FR_MAX_CHUNK_RAW || h->stored_len > FR_MAX_CHUNK_RAW)
		snprintf(why, len, "chunk too large: raw_len %u, stored_len %u, "
			 "limit %u (seq %" PRIu64 ")", h->raw_len, h->stored_len,
			 FR_MAX_CHUNK_RAW, h->seq);
	else if (h->codec == FR_CODEC_NONE && h->stored_len != h->raw_len)
		snprintf(why, len, "uncompressed chunk with stored_len %u != "
			 "raw_len %u (seq %" PRIu64 ")", h->stored_len, h->raw_len,
			 h->seq);
	else
		return 0;
	return -1;
}

/* Make room for produced output, growing only as the decompressor proves
 * the data is really there; limit is raw_len + 1 so overlong output shows. */
static size_t raw_room(struct frec_reader *r, size_t produced, size_t limit,
		       size_t stored_len)
{
	size_t have = r->raw_cap < limit ? r->raw_cap : limit;
	if (produced < have)
		return have;
	if (have == limit)
		return have; /* full: caller sees overflow */
	size_t want = r->raw_cap * 2;
	size_t guess = stored_len * 16 > RAW_INITIAL_MAX ? stored_len * 16
							  : RAW_INITIAL_MAX;
	if (want < guess)
		want = guess;
	if (want > limit)
		want = limit;
	if (grow(&r->raw, &r->raw_cap, want) < 0)
		return have;
	return want;
}

static int decode_zstd(struct frec_reader *r, const struct fr_chunk_hdr *h,
		       char *why, size_t wlen)
{
	unsigned long long fcs = ZSTD_getFrameContentSize(r->stored, h->stored_len);
	if (fcs == ZSTD_CONTENTSIZE_ERROR) {
		snprintf(why, wlen, "zstd: not a zstd frame (chunk seq %" PRIu64 ")",
			 h->seq);
		return -1;
	}
	if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != h->raw_len) {
		snprintf(why, wlen, "zstd: frame holds %llu bytes, raw_len is %u "
			 "(chunk seq %" PRIu64 ")", fcs, h->raw_len, h->seq);
		return -1;
	}
	if (!r->zd && !(r->zd = ZSTD_createDCtx())) {
		snprintf(why, wlen, "zstd: out of memory");
		return -1;
	}
	/* Bound zstd's own window buffer by what this chunk may hold. */
	int wlog = 23;
	while (wlog < 28 && (1ull << wlog) < h->raw_len)
		wlog++;
	ZSTD_DCtx_reset(r->zd, ZSTD_reset_session_and_parameters);
	ZSTD_DCtx_setParameter(r->zd, ZSTD_d_windowLogMax, wlog);

	size_t limit = (size_t)h->raw_len + 1, produced = 0;
	ZSTD_inBuffer in = { r->stored, h->stored_len, 0 };
	for (;;) {
		size_t room = raw_room(r, produced, limit, h->stored_len);
		if (produced == room) {
			snprintf(why, wlen, produced == limit ?
				 "zstd: output exceeds raw_len %u (chunk seq %" PRIu64 ")" :
				 "zstd: out of memory for raw_len %u (chunk seq %" PRIu64 ")",
				 h->raw_len, h->seq);
			return -1;
		}
		ZSTD_outBuffer ob = { r->raw, room, produced };
		size_t in_before = in.pos;
		size_t ret = ZSTD_decompressStream(r->zd, &ob, &in);
		if (ZSTD_isError(ret)) {
			snprintf(why, wlen, "zstd: %s (chunk seq %" PRIu64 ")",
				 ZSTD_getErrorName(ret), h->seq);
			return -1;
		}
		int progressed = ob.pos != produced || in.pos != in_before;
		produced = ob.pos;
		if (ret == 0)
			break; /* frame complete */
		if (!progressed || (in.pos == in.size && ob.pos < ob.size)) {
			snprintf(why, wlen, "zstd: truncated frame (chunk seq %" PRIu64 ")",
				 h->seq);
			return -1;
		}
	}
	if (in.pos != in.size) {
		snprintf(why, wlen, "zstd: %zu bytes after the frame (chunk seq %"
			 PRIu64 ")", in.size - in.pos, h->seq);
		return -1;
	}
	if (produced != h->raw_len) {
		snprintf(why, wlen, "zstd: decompressed %zu bytes, raw_len is %u "
			 "(chunk seq %" PRIu64 ")", produced, h->raw_len, h->seq);
		return -1;
	}
	return 0;
}

static int decode_zlib(struct frec_reader *r, const struct fr_chunk_hdr *h,
		       char *why, size_t wlen)
{
	z_stream z;
	memset(&z, 0, sizeof(z));
	if (inflateInit(&z) != Z_OK) {
		snprintf(why, wlen, "zlib: cannot initialise");
		return -1;
	}
	size_t limit = (size_t)h->raw_len + 1, produced = 0;
	z.next_in = r->stored;
	z.avail_in = h->stored_len;
	int rc = -1;
	for (;;) {
		size_t room = raw_room(r, produced, limit, h->stored_len);
		if (produced == room) {
			snprintf(why, wlen, produced == limit ?
				 "zlib: output exceeds raw_len %u (chunk seq %" PRIu64 ")" :
				 "zlib: out of memory for raw_len %u (chunk seq %" PRIu64 ")",
				 h->raw_len, h->seq);
			break;
		}
		z.next_out = r->raw + produced;
		z.avail_out = (uInt)(room - produced);
		int zr = inflate(&z, Z_NO_FLUSH);
		produced = room - z.avail_out;
		if (zr == Z_STREAM_END) {
			if (z.avail_in)
				snprintf(why, wlen, "zlib: %u bytes after the stream "
					 "(chunk seq %" PRIu64 ")", z.avail_in, h->seq);
			else if (produced != h->raw_len)
				snprintf(why, wlen, "zlib: decompressed %zu bytes, raw_len "
					 "is %u (chunk seq %" PRIu64 ")", produced,
					 h->raw_len, h->seq);
			else
				rc = 0;
			break;
		}
		if (zr == Z_BUF_ERROR && z.avail_out)
			zr = Z_DATA_ERROR; /* no progress with room left: input ended */
		if (zr != Z_OK && zr != Z_BUF_ERROR) {
			snprintf(why, wlen, "zlib: %s (chunk seq %" PRIu64 ")",
				 zr == Z_DATA_ERROR && !z.avail_in ? "truncated stream"
				 : z.msg ? z.msg : "corrupt stream", h->seq);
			break;
		}
	}
	inflateEnd(&z);
	return rc;
}

/* ---- INDEX and END ------------------------------------------------------- */

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

static void parse_index(struct frec_reader *r, const struct frec_chunk *c)
{
	size_t n = c->len / sizeof(struct fr_index_entry);
	if (c->len % sizeof(struct fr_index_entry) || n != c->hdr.record_count) {
		add_damage(r, c->offset, chunk_span(&c->hdr),
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

static void parse_end(struct frec_reader *r, const struct frec_chunk *c)
{
	struct fr_end e;
	if (c->len < sizeof(e)) {
		add_damage(r, c->offset, chunk_span(&c->hdr),
			   "END payload is %zu bytes, needs %zu (chunk seq %" PRIu64 ")",
			   c->len, sizeof(e), c->hdr.seq);
		return;
	}
	memcpy(&e, c->data, sizeof(e));
	uint64_t need = sizeof(e) + (uint64_t)e.n_probes * sizeof(struct fr_probe_stats);
	if (need > c->len) {
		add_damage(r, c->offset, chunk_span(&c->hdr),
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
		add_damage(r, c->offset, chunk_span(&c->hdr),
			   "END n_drops %u needs %" PRIu64 " bytes, payload has %zu "
			   "(chunk seq %" PRIu64 ")", e.n_drops, need_d, c->len, c->hdr.seq);
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

/* Bookkeeping for a chunk about to be returned. */
static void chunk_intact(struct frec_reader *r, const struct frec_chunk *c)
{
	uint64_t seq = c->hdr.seq;
	uint64_t expected = r->have_prev_seq ? r->prev_seq + 1 : 0;
	if (seq != expected) {
		if (seq > expected)
			r->seq_gaps += seq - expected;
		/* damage already found explains a gap; report only silent loss */
		if (!r->damage_since_intact)
			add_damage(r, c->offset, 0, "sequence gap: expected seq %" PRIu64
				   ", found %" PRIu64, expected, seq);
	}
	r->have_prev_seq = 1;
	r->prev_seq = seq;
	r->damage_since_intact = 0;
	r->chunks_read++;

	if (r->intact_n == r->intact_cap) {
		size_t cap = r->intact_cap ? r->intact_cap * 2 : 64;
		void *p = realloc(r->intact, cap * sizeof(*r->intact));
		if (p) {
			r->intact = p;
			r->intact_cap = cap;
		}
	}
	if (r->intact_n < r->intact_cap)
		r->intact[r->intact_n++] = (struct intact){ c->offset, seq };

	if (c->hdr.chunk_type == FR_CHUNK_INDEX)
		parse_index(r, c);
	else if (c->hdr.chunk_type == FR_CHUNK_END)
		parse_end(r, c);
}

/* ---- chunks -------------------------------------------------------------- */

/* Reads the chunk header at r->pos.  Returns 1 when its header and extent
 * are good, 0 after recording damage and moving past it, -1 on I/O error. */
static int check_header_at(struct frec_reader *r, struct fr_chunk_hdr *h)
{
	char why[160];
	uint64_t pos = r->pos, rem = r->size - pos;
	uint8_t hb[sizeof(struct fr_chunk_hdr)];
	if (rem < CHUNK_HDR) {
		add_damage(r, pos, rem, "truncated: %" PRIu64 " trailing bytes, "
			   "less than a chunk header", rem);
		r->pos = r->size;
		return 0;
	}
	if (pread_full(r->fd, hb, sizeof(hb), pos) < 0)
		return -1;
	if (!header_trusted(hb, h)) {
		if (h->magic != FR_CHUNK_MAGIC)
			snprintf(why, sizeof(why), "no chunk header (bad magic "
				 "0x%08x)", h->magic);
		else
			snprintf(why, sizeof(why), "chunk header CRC mismatch");
	} else if (header_limits(h, why, sizeof(why)) == 0) {
		if (chunk_span(h) <= rem)
			return 1;
		snprintf(why, sizeof(why), "truncated: chunk needs %" PRIu64
			 " bytes, %" PRIu64 " remain (seq %" PRIu64 ")",
			 chunk_span(h), rem, h->seq);
	}
	return resync(r, pos, why);
}

/* Reads, checks and decodes the payload of the chunk whose header h at
 * r->pos passed check_header_at.  Returns the raw payload, or NULL after
 * recording damage (why filled); r->pos moves past the chunk either way. */
static const uint8_t *read_payload(struct frec_reader *r,
				   const struct fr_chunk_hdr *h, int *io_error)
{
	char why[160];
	uint64_t pos = r->pos;
	*io_error = 0;
	/* stored_len fits in the file (checked), so this allocation does too. */
	if (grow(&r->stored, &r->stored_cap, h->stored_len ? h->stored_len : 1) < 0) {
		errno = ENOMEM;
		*io_error = 1;
		return NULL;
	}
	if (h->stored_len && pread_full(r->fd, r->stored, h->stored_len,
					pos + CHUNK_HDR) < 0) {
		*io_error = 1;
		return NULL;
	}
	r->pos = pos + chunk_span(h);

	const uint8_t *data = NULL;
	uint32_t crc = frec_crc32c(0, r->stored, h->stored_len);
	if (crc != h->payload_crc32c)
		snprintf(why, sizeof(why), "payload CRC mismatch (chunk seq %"
			 PRIu64 ")", h->seq);
	else if (h->codec == FR_CODEC_NONE)
		data = r->stored;
	else if (h->codec == FR_CODEC_ZSTD)
		data = decode_zstd(r, h, why, sizeof(why)) == 0 ? r->raw : NULL;
	else if (h->codec == FR_CODEC_ZLIB)
		data = decode_zlib(r, h, why, sizeof(why)) == 0 ? r->raw : NULL;
	else
		snprintf(why, sizeof(why), "unknown codec %u (chunk seq %" PRIu64
			 ")", h->codec, h->seq);
	if (!data) /* the header CRC held, so its length is trusted: skip it */
		add_damage(r, pos, chunk_span(h), "%s", why);
	return data;
}

int frec_next_chunk(struct frec_reader *r, struct frec_chunk *out,
		    struct frec_error *err)
{
	while (r->pos < r->size) {
		struct fr_chunk_hdr h;
		uint64_t pos = r->pos;
		int rc = check_header_at(r, &h);
		if (rc < 0)
			goto io_error;
		if (rc == 0)
			continue;
		if (r->defer_type && h.chunk_type == r->defer_type) {
			/* the header held: the payload waits for frec_read_chunk_at */
			r->pos = pos + chunk_span(&h);
			memset(out, 0, sizeof(*out));
			out->hdr = h;
			out->offset = pos;
			chunk_intact(r, out);
			return 1;
		}
		int io_error;
		const uint8_t *data = read_payload(r, &h, &io_error);
		if (io_error)
			goto io_error;
		if (!data)
			continue;
		memset(out, 0, sizeof(*out));
		out->hdr = h;
		out->offset = pos;
		out->data = data;
		out->len = h.raw_len;
		chunk_intact(r, out);
		return 1;
	}
	return 0;

io_error:;
	int e = errno ? errno : EIO;
	frec_error_set(err, r->path, (int64_t)r->pos, e, "read failed: %s",
		       strerror(e));
	return -1;
}

void frec_defer_payloads(struct frec_reader *r, uint16_t chunk_type)
{
	r->defer_type = chunk_type;
}

/* A chunk the scan counted intact turned out damaged: it is lost after all. */
static void deferred_lost(struct frec_reader *r, uint64_t offset)
{
	size_t lo = 0, hi = r->intact_n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->intact[mid].offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo >= r->intact_n || r->intact[lo].offset != offset || r->intact[lo].seq == UINT64_MAX)
		return;
	r->intact[lo].seq = UINT64_MAX; /* no INDEX entry matches it any more */
	r->chunks_read--;
	r->seq_gaps++;
	uint64_t missing = 0;
	for (size_t i = 0; i < r->index_n; i++)
		missing += !intact_has(r, r->index[i].offset, r->index[i].seq);
	if (r->index_n)
		r->missing = missing;
	/* keep the damage list in file order */
	if (r->dmg_n >= 2 && !r->dmg_more) {
		struct frec_damage d = r->dmg[r->dmg_n - 1];
		size_t at = r->dmg_n - 1;
		while (at && r->dmg[at - 1].offset > d.offset) {
			r->dmg[at] = r->dmg[at - 1];
			at--;
		}
		r->dmg[at] = d;
	}
}

int frec_read_chunk_at(struct frec_reader *r, uint64_t offset, struct frec_chunk *out,
		       struct frec_error *err)
{
	uint64_t saved_pos = r->pos;
	int saved_since = r->damage_since_intact;
	struct fr_chunk_hdr h;
	uint8_t hb[sizeof(struct fr_chunk_hdr)];
	char why[160];
	int rc = 0;
	memset(out, 0, sizeof(*out));
	if (offset > r->size || r->size - offset < CHUNK_HDR) {
		add_damage(r, offset, offset < r->size ? r->size - offset : 0,
			   "deferred chunk at offset %" PRIu64 " is past the end of the file", offset);
		deferred_lost(r, offset);
		goto out;
	}
	if (pread_full(r->fd, hb, sizeof(hb), offset) < 0) {
		rc = -1;
		goto out;
	}
	if (!header_trusted(hb, &h) || header_limits(&h, why, sizeof(why)) ||
	    chunk_span(&h) > r->size - offset) {
		/* it held during the scan: the file changed under us */
		add_damage(r, offset, CHUNK_HDR, "chunk header at offset %" PRIu64
			   " no longer valid", offset);
		deferred_lost(r, offset);
		goto out;
	}
	r->pos = offset;
	int io_error;
	const uint8_t *data = read_payload(r, &h, &io_error);
	if (io_error) {
		rc = -1;
		goto out;
	}
	if (!data) {
		deferred_lost(r, offset);
		goto out;
	}
	out->hdr = h;
	out->offset = offset;
	out->data = data;
	out->len = h.raw_len;
	rc = 1;
out:
	r->pos = saved_pos;
	r->damage_since_intact = saved_since;
	if (rc < 0) {
		int e = errno ? errno : EIO;
		frec_error_set(err, r->path, (int64_t)offset, e, "read failed: %s", strerror(e));
	}
	return rc;
}

/* ---- records ------------------------------------------------------------- */

int frec_chunk_next_record(struct frec_reader *r, const struct frec_chunk *c,
			   size_t *cursor, const struct fr_rec_hdr **rec)
{
	*rec = NULL;
	if (c->hdr.chunk_type == FR_CHUNK_INDEX || c->hdr.chunk_type == FR_CHUNK_END)
		return 0; /* their payloads are not records */
	if (!c->data)
		return 0; /* deferred: frec_read_chunk_at first */
	if (*cursor == 0) {
		r->it_offset = c->offset;
		r->it_seen = 0;
		r->it_counting = 1;
		r->it_done = 0;
	} else if (r->it_offset != c->offset) {
		r->it_counting = 0;
	}
	if (*cursor >= c->len) {
		if (r->it_counting && !r->it_done && r->it_seen != c->hdr.record_count) {
			r->it_done = 1;
			add_damage(r, c->offset, chunk_span(&c->hdr),
				   "chunk seq %" PRIu64 " holds %" PRIu64 " records, "
				   "header says %u", c->hdr.seq, r->it_seen,
				   c->hdr.record_count);
			return -1;
		}
		r->it_done = 1;
		return 0;
	}
	size_t rem = c->len - *cursor;
	struct fr_rec_hdr h = { 0, 0, 0 };
	if (rem >= sizeof(h))
		memcpy(&h, c->data + *cursor, sizeof(h));
	if (rem < sizeof(h) || h.size < sizeof(h) || h.size % 8 || h.size > rem) {
		add_damage(r, c->offset, chunk_span(&c->hdr),
			   "malformed record in chunk seq %" PRIu64 " at payload "
			   "offset %zu: size %u, %zu bytes remain; rest of chunk "
			   "skipped", c->hdr.seq, *cursor, h.size, rem);
		*cursor = c->len;
		r->it_done = 1;
		return -1;
	}
	*rec = (const struct fr_rec_hdr *)(const void *)(c->data + *cursor);
	*cursor += h.size;
	r->it_seen++;
	return 1;
}

/* ---- accessors ----------------------------------------------------------- */

const struct fr_file_hdr *frec_file_header(const struct frec_reader *r)
{
	return &r->hdr;
}

const char *frec_path(const struct frec_reader *r)
{
	return r->path;
}

const char *frec_cmdline(const struct frec_reader *r)
{
	return r->cmdline ? r->cmdline : "";
}

uint64_t frec_file_size(const struct frec_reader *r)
{
	return r->size;
}

size_t frec_damage_count(const struct frec_reader *r)
{
	return r->dmg_n;
}

const struct frec_damage *frec_damage_at(const struct frec_reader *r, size_t i)
{
	return i < r->dmg_n ? &r->dmg[i] : NULL;
}

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

uint64_t frec_chunks_read(const struct frec_reader *r)
{
	return r->chunks_read;
}

uint64_t frec_chunks_missing(const struct frec_reader *r)
{
	return r->missing;
}

uint64_t frec_seq_gaps(const struct frec_reader *r)
{
	return r->seq_gaps;
}
