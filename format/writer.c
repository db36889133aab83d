/* Trace writer: builders fill chunks on the appending threads, and one
 * writer thread compresses, checksums and appends them to the file, then
 * writes INDEX and END on close (format/SPEC.md sections 2, 4 and 8).
 *
 * The appending thread is the ring-buffer drain, so it must never wait for
 * compression or disk: handing over a sealed chunk takes the mutex for a
 * pointer push, and a chunk that would overflow max_queue_bytes is dropped
 * and counted instead of waited for.
 *
 * This file holds open (the file header and SCHEMA chunk), compressing and
 * writing one chunk, the writer thread and its queue, and stopping cleanly
 * when a chunk write fails (disk full).  The builders are in
 * writer_builder.c, INDEX, END and close in writer_end.c; what the parts
 * share is in writer_impl.h.  This file is not for reading. */
#include "writer_impl.h"
#include "frec_crc32c.h"
#include "frec_schema.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <zlib.h>

#define DEFAULT_CHUNK_BYTES (4u << 20)
#define MIN_CHUNK_BYTES 4096u
#define DEFAULT_MAX_QUEUE ((size_t)256 << 20)
#define POOL_MAX 4 /* idle chunk buffers kept for reuse */

/* Copies at most cap - 1 bytes so the field stays NUL-terminated. */
static void copy_field(char *dst, size_t cap, const char *src)
{
	size_t n = strnlen(src, cap - 1);
	memcpy(dst, src, n);
	dst[n] = 0;
}

void frec_writer_opts_default(struct frec_writer_opts *o)
{
	o->codec = FR_CODEC_ZSTD;
	o->level = 1;
	o->chunk_bytes = DEFAULT_CHUNK_BYTES;
	o->max_queue_bytes = DEFAULT_MAX_QUEUE;
	o->set_owner = 0;
	o->owner_uid = o->owner_gid = 0;
	o->schema = NULL;
	o->n_schema = 0;
}

/* ---- low-level output ---------------------------------------------------- */

/* One writev per chunk (retried from where it stopped), so the file is a
 * valid prefix at any instant; a crash leaves at most one partial chunk. */
static int write_iov(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		ssize_t r = writev(fd, iov, n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		size_t done = (size_t)r;
		while (n > 0 && done >= iov->iov_len) {
			done -= iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + done;
			iov->iov_len -= done;
		}
	}
	return 0;
}

static int ensure_out(struct frec_writer *w, size_t need)
{
	if (w->out_cap >= need)
		return 0;
	uint8_t *p = realloc(w->out, need);
	if (!p)
		return -1;
	w->out = p;
	w->out_cap = need;
	return 0;
}

/* Compress into w->out when that makes the payload smaller; otherwise the
 * raw bytes are stored (codec none).  Sets *stored / *stored_len. */
uint8_t wr_compress(struct frec_writer *w, int codec, const uint8_t *raw, size_t raw_len,
		    const uint8_t **stored, size_t *stored_len)
{
	*stored = raw;
	*stored_len = raw_len;
	if (raw_len == 0)
		return FR_CODEC_NONE;
	if (codec == FR_CODEC_ZSTD && w->zc) {
		size_t bound = ZSTD_compressBound(raw_len);
		if (ensure_out(w, bound) == 0) {
			size_t n = ZSTD_compressCCtx(w->zc, w->out, bound, raw,
						     raw_len, w->level);
			if (!ZSTD_isError(n) && n < raw_len) {
				*stored = w->out;
				*stored_len = n;
				return FR_CODEC_ZSTD;
			}
		}
	} else if (codec == FR_CODEC_ZLIB) {
		uLong bound = compressBound((uLong)raw_len);
		if (ensure_out(w, bound) == 0) {
			uLongf n = bound;
			if (compress2(w->out, &n, raw, (uLong)raw_len,
				      w->level) == Z_OK && n < raw_len) {
				*stored = w->out;
				*stored_len = n;
				return FR_CODEC_ZLIB;
			}
		}
	}
	return FR_CODEC_NONE;
}

void wr_fail_io(struct frec_writer *w, const char *what, int code)
{
	pthread_mutex_lock(&w->mu);
	if (!w->io_failed) {
		w->io_failed = 1;
		frec_error_set(&w->io_err, w->path, (int64_t)w->file_off, code,
			       "%s: %s", what, strerror(code));
	}
	pthread_mutex_unlock(&w->mu);
}

/* Room the file keeps past its end for the END chunk, so a recording that
 * fills the disk can still be sealed: blocks allocated but not part of the
 * file (FALLOC_FL_KEEP_SIZE).  Every chunk's own room and the END's past it
 * are allocated before the chunk is written, so no chunk (nor a metadata
 * chunk tried after writing stopped) ever takes the END's room: when they
 * cannot be, the chunk is not written.  Filesystems without fallocate get
 * no reserve; there a failed write is cut away, which frees its room. */
#define END_RESERVE (64u << 10)

/* 1: room for len bytes at the end of the file and the END past them;
 * 0: none (errno: ENOSPC, EDQUOT ...); -1: the filesystem cannot reserve. */
static int room_for(struct frec_writer *w, size_t len)
{
	if (w->no_fallocate)
		return -1;
	if (fallocate(w->fd, FALLOC_FL_KEEP_SIZE, (off_t)w->file_off,
		      (off_t)(len + END_RESERVE)) == 0)
		return 1;
	if (errno == EOPNOTSUPP || errno == ENOSYS || errno == EINVAL) {
		w->no_fallocate = 1;
		return -1;
	}
	return 0;
}

/* Writing stops (disk full, quota, I/O error); the first failure is the one
 * reported. */
static void note_stop(struct frec_writer *w, int code)
{
	pthread_mutex_lock(&w->mu);
	if (!w->stop_error && !w->io_failed) {
		w->stop_error = code ? code : EIO;
		w->stop_mono_ns = clock_ns(CLOCK_MONOTONIC);
		w->st.stop_error = w->stop_error;
		w->st.stop_mono_ns = w->stop_mono_ns;
	}
	pthread_mutex_unlock(&w->mu);
}

/* A chunk that could not be written whole: cut its bytes away so the file
 * stays a valid prefix, and stop writing events. */
static void stop_writing(struct frec_writer *w, int code)
{
	int cut = ftruncate(w->fd, (off_t)w->file_off) == 0 &&
		  lseek(w->fd, (off_t)w->file_off, SEEK_SET) == (off_t)w->file_off;
	note_stop(w, code);
	if (!cut)
		wr_fail_io(w, "cannot cut a partly written chunk away", errno);
}

/* Compress, checksum and append one chunk; assigns its seq.  Returns 0 or -1
 * (writing stopped, or w->io_err filled). */
int wr_write_chunk(struct frec_writer *w, uint16_t type, int codec,
		   const uint8_t *raw, size_t raw_len, uint32_t count,
		   uint64_t first_ts, uint64_t last_ts)
{
	const uint8_t *stored;
	size_t stored_len;
	uint8_t used = wr_compress(w, codec, raw, raw_len, &stored, &stored_len);
	return wr_write_stored(w, type, used, stored, stored_len, raw_len, count, first_ts,
			       last_ts);
}

int wr_write_stored(struct frec_writer *w, uint16_t type, uint8_t stored_codec,
		    const uint8_t *stored, size_t stored_len, size_t raw_len,
		    uint32_t count, uint64_t first_ts, uint64_t last_ts)
{
	struct fr_chunk_hdr h;
	memset(&h, 0, sizeof(h));
	h.codec = stored_codec;
	h.magic = FR_CHUNK_MAGIC;
	h.chunk_type = type;
	h.header_size = sizeof(h);
	h.record_count = count;
	h.raw_len = (uint32_t)raw_len;
	h.stored_len = (uint32_t)stored_len;
	h.seq = w->next_seq;
	h.first_ts_ns = first_ts;
	h.last_ts_ns = last_ts;
	h.payload_crc32c = frec_crc32c(0, stored, stored_len);
	h.header_crc32c = frec_crc32c(0, &h, offsetof(struct fr_chunk_hdr,
						       header_crc32c));

	static const uint8_t zeros[8];
	size_t pad = FR_ALIGN8(stored_len) - stored_len;
	struct iovec iov[3] = {
		{ &h, sizeof(h) },
		{ (void *)stored, stored_len },
		{ (void *)zeros, pad },
	};
	int data = type != FR_CHUNK_INDEX && type != FR_CHUNK_END;
	if (data && room_for(w, sizeof(h) + stored_len + pad) == 0) {
		note_stop(w, errno); /* nothing written: the END's room stays */
		return -1;
	}
	if (write_iov(w->fd, iov, 3) < 0) {
		if (!data)
			wr_fail_io(w, "cannot write chunk", errno);
		else
			stop_writing(w, errno);
		return -1;
	}

	if (type != FR_CHUNK_INDEX && type != FR_CHUNK_END && !w->index_broken) {
		if (w->index_n == w->index_cap) {
			size_t cap = w->index_cap ? w->index_cap * 2 : 256;
			void *p = realloc(w->index, cap * sizeof(*w->index));
			if (p) {
				w->index = p;
				w->index_cap = cap;
			}
		}
		if (w->index_n < w->index_cap) {
			struct fr_index_entry *e = &w->index[w->index_n++];
			memset(e, 0, sizeof(*e));
			e->offset = w->file_off;
			e->seq = h.seq;
			e->chunk_type = type;
			e->codec = h.codec;
			e->record_count = count;
			e->first_ts_ns = first_ts;
			e->last_ts_ns = last_ts;
		} else {
			w->index_broken = 1;
		}
	}
	w->next_seq++;
	w->file_off += sizeof(h) + stored_len + pad;

	pthread_mutex_lock(&w->mu);
	w->st.chunks_written++;
	if (type != FR_CHUNK_INDEX && type != FR_CHUNK_END) /* not records */
		w->st.records_written += count;
	w->st.bytes_raw += raw_len;
	w->st.bytes_written = w->file_off;
	pthread_mutex_unlock(&w->mu);
	return 0;
}

/* ---- the writer thread --------------------------------------------------- */

static void recycle_locked(struct frec_writer *w, struct sealed *c)
{
	if (c->cap == w->chunk_bytes && w->pool_n < POOL_MAX) {
		c->next = w->pool;
		w->pool = c;
		w->pool_n++;
	} else {
		free_sealed(c);
	}
}

static void *writer_main(void *arg)
{
	struct frec_writer *w = arg;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while ((!w->head || w->hold) && !w->stopping)
			pthread_cond_wait(&w->cv, &w->mu);
		struct sealed *c = w->head;
		if (!c)
			break; /* stopping and drained */
		w->head = c->next;
		if (!w->head)
			w->tail = NULL;
		if (c->retire) {
			pthread_mutex_unlock(&w->mu);
			if (w->ring)
				wr_ring_retire(w, c->retire);
			else
				free(c->retire);
			free(c);
			pthread_mutex_lock(&w->mu);
			continue;
		}
		if (c->snap) {
			/* every chunk queued before it is in the ring now */
			pthread_mutex_unlock(&w->mu);
			wr_ring_snapshot(w, c->snap);
			pthread_mutex_lock(&w->mu);
			continue;
		}
		/* Once writing stopped, only metadata chunks are still tried (and
		 * cut away again if they do not fit): processes, mappings, symbols
		 * and unwind data are what make the events already in the file
		 * readable, and the room the failed chunk held is free again. */
		int failed = w->io_failed || (w->stop_error && !w->copy_stopped &&
					      c->chunk_type != FR_CHUNK_META);
		pthread_mutex_unlock(&w->mu);

		if (!failed && w->ring)
			failed = wr_ring_add(w, c) < 0;
		else if (!failed)
			failed = wr_write_chunk(w, c->chunk_type, w->codec, c->buf,
						c->len, c->record_count,
						c->first_ts_ns, c->last_ts_ns) < 0;

		pthread_mutex_lock(&w->mu);
		if (failed) {
			/* after a write error nothing more reaches the file: the
			 * file stays a valid prefix that close seals */
			w->st.chunks_dropped++;
			w->st.records_dropped += c->record_count;
		}
		w->queued_bytes -= c->len;
		recycle_locked(w, c);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* Hand a sealed chunk to the writer thread, or drop it when the queue is
 * full.  Returns 1 when taken; on drop the caller keeps c.  *next receives a
 * pooled buffer for the builder's next chunk (or NULL). */
int wr_push_sealed(struct frec_writer *w, struct sealed *c,
		   struct sealed **next)
{
	int taken;
	*next = NULL;
	pthread_mutex_lock(&w->mu);
	if (w->queued_bytes && w->queued_bytes + c->len > w->max_queue_bytes) {
		w->st.chunks_dropped++;
		w->st.records_dropped += c->record_count;
		taken = 0;
	} else {
		c->next = NULL;
		if (w->tail)
			w->tail->next = c;
		else
			w->head = c;
		w->tail = c;
		w->queued_bytes += c->len;
		if (w->queued_bytes > w->st.queue_bytes_peak)
			w->st.queue_bytes_peak = w->queued_bytes;
		if (w->pool) {
			*next = w->pool;
			w->pool = w->pool->next;
			w->pool_n--;
		}
		taken = 1;
	}
	pthread_mutex_unlock(&w->mu);
	if (taken)
		pthread_cond_signal(&w->cv);
	return taken;
}

/* ---- open ---------------------------------------------------------------- */

static int write_file_header(struct frec_writer *w,
			     const struct frec_file_info *info,
			     struct frec_error *err)
{
	struct fr_file_hdr h;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, FR_FILE_MAGIC, sizeof(h.magic));
	h.version_major = FR_VERSION_MAJOR;
	h.version_minor = FR_VERSION_MINOR;

	struct utsname un;
	int have_un = uname(&un) == 0;
	const char *host = info && info->host ? info->host
			   : have_un ? un.nodename : "";
	copy_field(h.host, sizeof(h.host), host);
	if (have_un)
		copy_field(h.kernel_release, sizeof(h.kernel_release), un.release);
	h.recorder_pid = (uint32_t)getpid();
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	h.n_cpus = ncpu > 0 ? (uint32_t)ncpu : 0;
	h.flags = info ? info->flags : 0;
	if (info && info->like) {
		h.recorder_pid = info->like->recorder_pid;
		h.n_cpus = info->like->n_cpus;
		h.flags = info->like->flags;
		memcpy(h.kernel_release, info->like->kernel_release, sizeof(h.kernel_release));
	}
	if (info && info->start_mono_ns) {
		h.start_mono_ns = info->start_mono_ns;
		h.start_real_ns = info->start_real_ns;
	} else {
		h.start_mono_ns = clock_ns(CLOCK_MONOTONIC);
		h.start_real_ns = clock_ns(CLOCK_REALTIME);
	}

	/* argv as NUL-terminated strings; arguments that would pass
	 * FR_MAX_CMDLINE are left out (a reader refuses longer headers). */
	size_t cl = 0;
	int argc = info && info->argv ? info->argc : 0;
	for (int i = 0; i < argc && info->argv[i]; i++) {
		size_t n = strlen(info->argv[i]) + 1;
		if (cl + n > FR_MAX_CMDLINE)
			break;
		cl += n;
	}
	size_t padded = FR_ALIGN8(cl);
	uint8_t *cmd = calloc(1, padded ? padded : 1);
	if (!cmd) {
		frec_error_set(err, w->path, -1, ENOMEM, "out of memory");
		return -1;
	}
	size_t at = 0;
	for (int i = 0; i < argc && info->argv[i]; i++) {
		size_t n = strlen(info->argv[i]) + 1;
		if (at + n > cl)
			break;
		memcpy(cmd + at, info->argv[i], n);
		at += n;
	}
	h.cmdline_len = (uint32_t)cl;
	h.header_size = (uint32_t)(sizeof(h) + padded);
	h.header_crc32c = frec_crc32c(frec_crc32c(0, &h, sizeof(h)), cmd, cl);

	struct iovec iov[2] = { { &h, sizeof(h) }, { cmd, padded } };
	int rc = write_iov(w->fd, iov, 2);
	int e = errno;
	free(cmd);
	if (rc < 0) {
		frec_error_set(err, w->path, 0, e, "cannot write file header: %s",
			       strerror(e));
		return -1;
	}
	w->file_off = h.header_size;
	return 0;
}

static int write_schema_chunk(struct frec_writer *w, struct frec_error *err)
{
	size_t n = w->n_schema;
	const struct frec_schema_entry *t = w->schema;
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += FR_ALIGN8(sizeof(struct fr_rec_schema) + strlen(t[i].desc));
	uint8_t *buf = calloc(1, len);
	if (!buf) {
		frec_error_set(err, w->path, -1, ENOMEM, "out of memory");
		return -1;
	}
	uint8_t *p = buf;
	for (size_t i = 0; i < n; i++) {
		struct fr_rec_schema s;
		memset(&s, 0, sizeof(s));
		size_t dl = strlen(t[i].desc);
		s.h.size = (uint32_t)FR_ALIGN8(sizeof(s) + dl);
		s.h.type = FR_REC_SCHEMA;
		s.rec_type = t[i].rec_type;
		s.version = t[i].version;
		s.fixed_size = t[i].fixed_size;
		copy_field(s.name, sizeof(s.name), t[i].name);
		s.desc_len = (uint32_t)dl;
		memcpy(p, &s, sizeof(s));
		memcpy(p + sizeof(s), t[i].desc, dl);
		p += s.h.size;
	}
	int rc = wr_write_chunk(w, FR_CHUNK_SCHEMA, w->codec, buf, len,
				(uint32_t)n, 0, 0);
	free(buf);
	if (rc < 0) {
		/* a disk already full stops writing without an I/O error: say
		 * why all the same (the caller prints this line alone) */
		int code = w->stop_error ? w->stop_error : EIO;
		if (err && w->io_failed)
			*err = w->io_err;
		else if (err)
			frec_error_set(err, w->path, (int64_t)w->file_off, code,
				       "cannot write the schema chunk: %s", strerror(code));
		return -1;
	}
	return 0;
}

void wr_free_writer(struct frec_writer *w)
{
	struct sealed *c, *next;
	for (c = w->head; c; c = next) {
		next = c->next;
		free_sealed(c);
	}
	for (c = w->pool; c; c = next) {
		next = c->next;
		free_sealed(c);
	}
	if (w->fd >= 0)
		close(w->fd);
	wr_ring_free(w->ring);
	ZSTD_freeCCtx(w->zc);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w->out);
	free(w->index);
	free(w->drops);
	free(w->path);
	free(w);
}

struct frec_writer *wr_new(const char *path, const struct frec_writer_opts *opts,
			   struct frec_error *err)
{
	struct frec_writer_opts o;
	frec_writer_opts_default(&o);
	if (opts) {
		o.codec = opts->codec;
		if (opts->level)
			o.level = opts->level;
		if (opts->chunk_bytes)
			o.chunk_bytes = opts->chunk_bytes;
		if (opts->max_queue_bytes)
			o.max_queue_bytes = opts->max_queue_bytes;
		o.set_owner = opts->set_owner;
		o.owner_uid = opts->owner_uid;
		o.owner_gid = opts->owner_gid;
		o.schema = opts->schema;
		o.n_schema = opts->schema ? opts->n_schema : 0;
	}
	if (o.codec != FR_CODEC_NONE && o.codec != FR_CODEC_ZSTD &&
	    o.codec != FR_CODEC_ZLIB) {
		frec_error_set(err, path, -1, EINVAL, "unknown codec %d", o.codec);
		return NULL;
	}
	if (o.codec == FR_CODEC_ZLIB && (o.level < 1 || o.level > 9))
		o.level = o.level < 1 ? 1 : 9;
	if (o.chunk_bytes < MIN_CHUNK_BYTES)
		o.chunk_bytes = MIN_CHUNK_BYTES;
	if (o.chunk_bytes > FR_MAX_CHUNK_RAW)
		o.chunk_bytes = FR_MAX_CHUNK_RAW;
	o.chunk_bytes &= ~(size_t)7;

	struct frec_writer *w = calloc(1, sizeof(*w));
	if (!w || !(w->path = strdup(path))) {
		free(w);
		frec_error_set(err, path, -1, ENOMEM, "out of memory");
		return NULL;
	}
	w->fd = -1;
	w->codec = o.codec;
	w->level = o.level;
	w->chunk_bytes = o.chunk_bytes;
	w->max_queue_bytes = o.max_queue_bytes;
	w->schema = o.schema;
	w->n_schema = o.n_schema;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	if (w->codec == FR_CODEC_ZSTD && !(w->zc = ZSTD_createCCtx())) {
		frec_error_set(err, path, -1, ENOMEM, "cannot create zstd context");
		wr_free_writer(w);
		return NULL;
	}
	return w;
}

int wr_start_thread(struct frec_writer *w, struct frec_error *err)
{
	/* The recorder's signal handling belongs to its main thread. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&w->thread, NULL, writer_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		frec_error_set(err, w->path, -1, rc, "cannot start writer thread: %s",
			       strerror(rc));
		return -1;
	}
	w->thread_started = 1;
	return 0;
}

int wr_open(const char *path, int given_fd, const struct frec_file_info *info,
	    const struct frec_writer_opts *opts, int start_thread,
	    struct frec_writer **out, struct frec_error *err)
{
	*out = NULL;
	struct frec_writer *w = wr_new(path, opts, err);
	if (!w) {
		if (given_fd >= 0)
			close(given_fd);
		return -1;
	}
	int set_owner = opts && opts->set_owner;

	/* Often run as root: never through a symbolic link planted where the
	 * trace goes, and mode 0644 whatever the umask.  An fd given by the
	 * caller (frec_writer_open_fd) is its business. */
	w->fd = given_fd >= 0 ? given_fd
			      : open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (w->fd < 0) {
		if (errno == ELOOP)
			frec_error_set(err, path, -1, errno, "cannot create trace: it is a "
				       "symbolic link, which is never followed");
		else
			frec_error_set(err, path, -1, errno, "cannot create trace: %s",
				       strerror(errno));
		wr_free_writer(w);
		return -1;
	}
	if ((given_fd < 0 && fchmod(w->fd, 0644)) ||
	    (set_owner && fchown(w->fd, (uid_t)opts->owner_uid, (gid_t)opts->owner_gid))) {
		frec_error_set(err, path, -1, errno, "cannot set the trace's owner and mode: %s",
			       strerror(errno));
		wr_free_writer(w);
		return -1;
	}
	if (write_file_header(w, info, err) < 0 || write_schema_chunk(w, err) < 0 ||
	    (start_thread && wr_start_thread(w, err) < 0)) {
		wr_free_writer(w);
		return -1;
	}
	*out = w;
	return 0;
}

/* ---- stats and hold ------------------------------------------------------ */

void frec_writer_stats(struct frec_writer *w, struct frec_writer_stats *out)
{
	pthread_mutex_lock(&w->mu);
	*out = w->st;
	out->queue_bytes = w->queued_bytes;
	pthread_mutex_unlock(&w->mu);
}

void frec_writer_hold(struct frec_writer *w, int hold)
{
	pthread_mutex_lock(&w->mu);
	w->hold = hold;
	pthread_mutex_unlock(&w->mu);
	pthread_cond_broadcast(&w->cv);
}

/* Let the thread write what is queued, then end it. */

int frec_writer_open(const char *path, const struct frec_file_info *info,
		     const struct frec_writer_opts *opts,
		     struct frec_writer **out, struct frec_error *err)
{
	return wr_open(path, -1, info, opts, 1, out, err);
}

int frec_writer_open_fd(int fd, const char *name, const struct frec_file_info *info,
			const struct frec_writer_opts *opts, struct frec_writer **out,
			struct frec_error *err)
{
	if (fd < 0) {
		frec_error_set(err, name, -1, EBADF, "no file to write the trace to");
		return -1;
	}
	return wr_open(name, fd, info, opts, 1, out, err);
}
