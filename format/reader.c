/* Trace reader with recovery (format/SPEC.md section 9): walks the file one
 * chunk at a time, checks every length against what is really there before
 * reading or allocating, reports each damaged region and resynchronises on
 * the next chunk header whose CRC holds.  Input is hostile by default: it
 * comes from bug-report attachments.
 *
 * This file holds open and close, the file header, the scan with its
 * resync, chunk reading (deferred payloads included), record iteration and
 * the damage list.  Decompression is in reader_codec.c, INDEX and END in
 * reader_end.c; what the parts share is in reader_impl.h.  This file is not
 * for writing. */
#include "reader_impl.h"
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

#define MAX_DAMAGE 4096 /* past this, the last entry sums up the rest */

/* ---- helpers ------------------------------------------------------------- */

void rd_add_damage(struct frec_reader *r, uint64_t offset, uint64_t length,
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

void frec_release_buffers(struct frec_reader *r)
{
	if (!r)
		return;
	ZSTD_freeDCtx(r->zd);
	r->zd = NULL;
	free(r->stored);
	r->stored = NULL;
	r->stored_cap = 0;
	free(r->raw);
	r->raw = NULL;
	r->raw_cap = 0;
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
	/* made here, not kept in the reader: damage is rare, and an analysis
	 * of thousands of traces keeps thousands of readers open */
	uint8_t *scan = NULL;
	while (p + CHUNK_HDR <= r->size && found == r->size) {
		uint64_t left = r->size - p;
		size_t n = left < SCAN_BLOCK + CHUNK_HDR - 1 ?
			   (size_t)left : SCAN_BLOCK + CHUNK_HDR - 1;
		if (!scan && !(scan = malloc(SCAN_BLOCK + CHUNK_HDR))) {
			errno = ENOMEM;
			return -1;
		}
		if (pread_full(r->fd, scan, n, p) < 0) {
			free(scan);
			return -1;
		}
		for (size_t i = 0; i + CHUNK_HDR <= n; i++) {
			const uint8_t *m = memchr(scan + i, 'F',
						  n - CHUNK_HDR + 1 - i);
			if (!m)
				break;
			i = (size_t)(m - scan);
			struct fr_chunk_hdr h;
			if (header_trusted(m, &h)) {
				found = p + i;
				break;
			}
		}
		p += n - CHUNK_HDR + 1; /* overlap: every offset is tried once */
	}
	free(scan);
	rd_add_damage(r, start, found - start, "%s", why);
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
			rd_add_damage(r, c->offset, 0, "sequence gap: expected seq %"
				      PRIu64 ", found %" PRIu64, expected, seq);
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
		rd_parse_index(r, c);
	else if (c->hdr.chunk_type == FR_CHUNK_END)
		rd_parse_end(r, c);
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
		rd_add_damage(r, pos, rem, "truncated: %" PRIu64 " trailing bytes, "
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
	else
		data = rd_decode_payload(r, h, why, sizeof(why));
	if (!data) /* the header CRC held, so its length is trusted: skip it */
		rd_add_damage(r, pos, chunk_span(h), "%s", why);
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
	rd_recount_missing(r);
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
		rd_add_damage(r, offset, offset < r->size ? r->size - offset : 0,
			      "deferred chunk at offset %" PRIu64 " is past the end "
			      "of the file", offset);
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
		rd_add_damage(r, offset, CHUNK_HDR, "chunk header at offset %" PRIu64
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
			rd_add_damage(r, c->offset, chunk_span(&c->hdr),
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
		rd_add_damage(r, c->offset, chunk_span(&c->hdr),
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

uint64_t frec_chunks_read(const struct frec_reader *r)
{
	return r->chunks_read;
}

uint64_t frec_seq_gaps(const struct frec_reader *r)
{
	return r->seq_gaps;
}
