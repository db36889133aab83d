/* The redacted copy of one trace file: every intact chunk of the input,
 * read in file order, becomes one chunk of the copy with the same type,
 * the same records in the same order (each through rd_record) and the same
 * time range in its header; the copy gets the input's header (host and
 * command line redacted), its SCHEMA, its codec and its END, or no END when
 * the input has none (an incomplete recording stays incomplete).  A damaged
 * region of the input is simply not in the copy.  Not for the rules
 * (redact.c) nor the records (redact_records.c).
 *
 * The writer (format/frec_writer.h) is made for a recorder that must never
 * wait, so it drops a chunk its queue has no room for; the copy instead
 * waits for the writer before handing it more, and fails rather than lose a
 * chunk.  The copy keeps the input's recorder pid, CPU count, kernel
 * release and flags (frec_file_info.like) and, for an input that stopped
 * early, its stop (frec_writer_set_stopped). */
#include "redact_impl.h"
#include "fr_family.h"
#include "frec_crc32c.h"
#include "frec_reader.h"
#include "frec_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Raw bytes the copy lets wait in the writer's queue (its own limit, 256
 * MiB, drops; this one waits). */
#define QUEUE_LIMIT ((size_t)64 << 20)
#define MAX_RECORD_CHUNK_TYPE 0x0f

struct copy {
	struct redactor *r;
	const char *in_path, *out_path;
	int out_fd;                   /* >= 0: write here, not to out_path */
	int in_fd;
	struct frec_reader *rd;
	struct frec_writer *w;
	struct frec_builder *builders[MAX_RECORD_CHUNK_TYPE + 1];
	struct frec_schema_entry *schema;
	size_t n_schema;
	char **strings; /* the schema's names and descriptions */
	size_t n_strings;
	struct rd_buf rec;
	uint64_t base_raw, pushed_raw; /* writer's bytes_raw after open; what we handed it */
};

/* ---- the input's header and schema ---------------------------------------- */

/* The header's argv bytes (the reader gives them joined with spaces only),
 * read again and checked against the header's CRC. */
static int read_cmdline(struct copy *c, const struct fr_file_hdr *h, char **out,
			struct frec_error *err)
{
	*out = malloc((size_t)h->cmdline_len + 1); /* + a NUL the last argument may lack */
	if (!*out) {
		frec_error_set(err, c->in_path, -1, ENOMEM, "out of memory");
		return -1;
	}
	ssize_t n = h->cmdline_len ? pread(c->in_fd, *out, h->cmdline_len, sizeof(*h)) : 0;
	struct fr_file_hdr fixed = *h;
	fixed.header_crc32c = 0;
	uint32_t crc = frec_crc32c(frec_crc32c(0, &fixed, sizeof(fixed)), *out,
				   n > 0 ? (size_t)n : 0);
	if (n != (ssize_t)h->cmdline_len || crc != h->header_crc32c) {
		frec_error_set(err, c->in_path, (int64_t)sizeof(*h), n < 0 ? errno : EIO,
			       "cannot read the command line of the file header again (the file changed?)");
		return -1;
	}
	return 0;
}

static char *keep_string(struct copy *c, const char *s, size_t n)
{
	char **grown = realloc(c->strings, (c->n_strings + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	c->strings = grown;
	char *copy = strndup(s, n);
	if (copy)
		c->strings[c->n_strings++] = copy;
	return copy;
}

/* The input's SCHEMA chunk as the writer's table, so the copy names what
 * the input named (record types of later versions included).  Refuses a
 * file whose redacted record types have another layout than this
 * build's: their strings would not be found, and would leak. */
static int take_schema(struct copy *c, const struct frec_chunk *ch, struct frec_error *err)
{
	c->schema = calloc(ch->hdr.record_count ? ch->hdr.record_count : 1, sizeof(*c->schema));
	if (!c->schema)
		goto oom;
	size_t cursor = 0;
	const struct fr_rec_hdr *rec;
	while (c->n_schema < ch->hdr.record_count &&
	       frec_chunk_next_record(c->rd, ch, &cursor, &rec) == 1) {
		struct fr_rec_schema s;
		if (rec->type != FR_REC_SCHEMA || rec->size < sizeof(s))
			continue;
		memcpy(&s, rec, sizeof(s));
		if (s.desc_len > rec->size - sizeof(s))
			continue;
		struct frec_schema_entry *e = &c->schema[c->n_schema];
		e->rec_type = s.rec_type;
		e->version = s.version;
		e->fixed_size = s.fixed_size;
		e->name = keep_string(c, s.name, strnlen(s.name, sizeof(s.name)));
		e->desc = keep_string(c, (const char *)rec + sizeof(s), s.desc_len);
		if (!e->name || !e->desc)
			goto oom;
		uint32_t ours;
		if (rd_record_redacted(e->rec_type, &ours) && e->fixed_size != ours) {
			frec_error_set(err, c->in_path, (int64_t)ch->offset, EPROTO,
				       "its %s records have a newer layout (%u bytes, this version knows %u); "
				       "redact it with a newer flightrec-analyze", e->name,
				       e->fixed_size, ours);
			return -1;
		}
		c->n_schema++;
	}
	return 0;
oom:
	frec_error_set(err, c->in_path, -1, ENOMEM, "out of memory");
	return -1;
}

/* ---- writing -------------------------------------------------------------- */

/* Fails when the writer lost a chunk or stopped (disk full ...). */
static int writer_ok(struct copy *c, struct frec_writer_stats *st, struct frec_error *err)
{
	frec_writer_stats(c->w, st);
	if (st->stop_error || st->chunks_dropped) {
		int e = st->stop_error ? st->stop_error : EIO;
		frec_error_set(err, c->out_path, (int64_t)st->bytes_written, e,
			       "cannot write the redacted copy: %s", frec_write_error_name(e));
		return -1;
	}
	return 0;
}

/* Waits until the writer has room for next more raw bytes. */
static int wait_for_room(struct copy *c, size_t next, struct frec_error *err)
{
	for (;;) {
		struct frec_writer_stats st;
		if (writer_ok(c, &st, err))
			return -1;
		/* a chunk the builder sealed by itself (a record past chunk_bytes)
		 * is not in pushed_raw: never wait for more than was handed over */
		uint64_t written = st.bytes_raw - c->base_raw;
		uint64_t queued = c->pushed_raw > written ? c->pushed_raw - written : 0;
		if (!queued || queued + next <= QUEUE_LIMIT)
			return 0;
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	}
}

/* The builder's commit time sets the chunk header's range (min and max of
 * the nonzero ones): the first record carries the input's first_ts_ns, the
 * last its last_ts_ns, so the copy's range is the input's whatever records
 * the recorder timed. */
static uint64_t commit_ts(const struct fr_chunk_hdr *h, uint32_t i)
{
	if (i == 0)
		return h->first_ts_ns ? h->first_ts_ns : h->last_ts_ns;
	return i + 1 == h->record_count ? h->last_ts_ns : 0;
}

static int copy_chunk(struct copy *c, const struct frec_chunk *ch, struct frec_error *err)
{
	uint16_t type = ch->hdr.chunk_type;
	if (type == 0 || type > MAX_RECORD_CHUNK_TYPE)
		return 0; /* INDEX and END are the writer's; unknown kinds hold no records we know */
	if (!c->builders[type] && !(c->builders[type] = frec_builder_new(c->w, type)))
		goto oom;
	struct frec_builder *b = c->builders[type];
	if (wait_for_room(c, ch->len, err))
		return -1;
	size_t cursor = 0;
	const struct fr_rec_hdr *rec;
	for (uint32_t i = 0; frec_chunk_next_record(c->rd, ch, &cursor, &rec) == 1; i++) {
		if (rd_record(c->r, (const uint8_t *)rec, rec->size, &c->rec) ||
		    frec_builder_append(b, c->rec.p, (uint32_t)c->rec.len, commit_ts(&ch->hdr, i)))
			goto oom;
	}
	/* a malformed record ends the chunk (the reader recorded it as damage):
	 * the records before it are copied, as the analyzer uses them */
	c->pushed_raw += frec_builder_bytes(b);
	frec_builder_flush(b);
	return 0;
oom:
	frec_error_set(err, c->out_path, -1, ENOMEM, "out of memory");
	return -1;
}

/* ---- the copy -------------------------------------------------------------- */

static void copy_free(struct copy *c)
{
	for (size_t i = 0; i <= MAX_RECORD_CHUNK_TYPE; i++)
		frec_builder_free(c->builders[i]);
	if (c->w)
		frec_writer_abandon(c->w);
	if (c->rd)
		frec_close(c->rd);
	if (c->in_fd >= 0)
		close(c->in_fd);
	for (size_t i = 0; i < c->n_strings; i++)
		free(c->strings[i]);
	free(c->strings);
	free(c->schema);
	rd_buf_free(&c->rec);
}

/* Splits n bytes of NUL-terminated strings into argv (pointers into s, which
 * ends in a NUL). */
static char **split_argv(char *s, size_t n, int *argc)
{
	size_t count = 0;
	for (size_t i = 0; i < n; i++)
		count += s[i] == '\0';
	char **argv = calloc(count + 1, sizeof(*argv));
	if (!argv)
		return NULL;
	*argc = 0;
	for (size_t at = 0; at < n; at += strlen(s + at) + 1)
		argv[(*argc)++] = s + at;
	return argv;
}

/* Opens the writer with the input's header (host and argv redacted),
 * schema and codec. */
static int open_writer(struct copy *c, const struct fr_file_hdr *h, int codec,
		       struct frec_error *err)
{
	char *cmd = NULL, **argv = NULL;
	struct rd_buf host = { 0 }, args = { 0 };
	int rc = -1, argc = 0;
	if (read_cmdline(c, h, &cmd, err))
		goto out;
	size_t cmd_len = h->cmdline_len;
	if (cmd_len && cmd[cmd_len - 1] != '\0') /* the last argument without its NUL */
		cmd[cmd_len++] = '\0';
	size_t host_len = strnlen(h->host, sizeof(h->host));
	if ((host_len && rd_token(c->r, RD_HOST, h->host, host_len, &host)) || rd_put(&host, "", 1) ||
	    rd_header_argv(c->r, cmd, cmd_len, &args) || rd_put(&args, "", 1) ||
	    !(argv = split_argv((char *)args.p, args.len - 1, &argc))) {
		frec_error_set(err, c->out_path, -1, ENOMEM, "out of memory");
		goto out;
	}
	struct frec_file_info info = {
		.host = (const char *)host.p, .argv = (const char *const *)argv, .argc = argc,
		.start_mono_ns = h->start_mono_ns, .start_real_ns = h->start_real_ns, .like = h,
	};
	struct frec_writer_opts opts;
	frec_writer_opts_default(&opts);
	opts.codec = codec;
	opts.chunk_bytes = FR_MAX_CHUNK_RAW; /* one chunk per input chunk, never split */
	if (c->schema) {
		opts.schema = c->schema;
		opts.n_schema = c->n_schema;
	} else {
		opts.schema = fr_schema_table(&opts.n_schema);
	}
	if (c->out_fd >= 0 ? frec_writer_open_fd(fcntl(c->out_fd, F_DUPFD_CLOEXEC, 0), c->out_path,
						  &info, &opts, &c->w, err)
			   : frec_writer_open(c->out_path, &info, &opts, &c->w, err))
		goto out;
	struct frec_writer_stats st;
	frec_writer_stats(c->w, &st);
	c->base_raw = st.bytes_raw;
	rc = 0;
out:
	free(argv);
	free(cmd);
	rd_buf_free(&host);
	rd_buf_free(&args);
	return rc;
}

static int copy_trace(struct redactor *r, const char *in_path, const char *out_path, int out_fd,
		 struct frec_error *err)
{
	struct copy c = { .r = r, .in_path = in_path, .out_path = out_path, .out_fd = out_fd };
	c.in_fd = open(in_path, O_RDONLY | O_CLOEXEC);
	if (c.in_fd < 0) {
		frec_error_set(err, in_path, -1, errno, "cannot open: %s", strerror(errno));
		return -1;
	}
	if (frec_open_fd(c.in_fd, in_path, &c.rd, err)) {
		copy_free(&c);
		return -1;
	}
	struct fr_file_hdr hdr = *frec_file_header(c.rd);

	/* the SCHEMA chunk comes first: it and its codec make the writer's */
	struct frec_chunk ch;
	int got = frec_next_chunk(c.rd, &ch, err), pending = 0, codec = FR_CODEC_ZSTD;
	if (got == 1 && ch.hdr.chunk_type == FR_CHUNK_SCHEMA) {
		codec = ch.hdr.codec;
		if (take_schema(&c, &ch, err))
			got = -1;
	} else if (got == 1) {
		pending = 1;
	}
	if (got < 0 || open_writer(&c, &hdr, codec, err)) {
		copy_free(&c);
		return -1;
	}
	while (got == 1) {
		if (!pending)
			got = frec_next_chunk(c.rd, &ch, err);
		pending = 0;
		if (got == 1 && copy_chunk(&c, &ch, err))
			got = -1;
	}
	for (size_t i = 0; i <= MAX_RECORD_CHUNK_TYPE; i++) {
		frec_builder_free(c.builders[i]);
		c.builders[i] = NULL;
	}
	frec_writer_drain(c.w);
	struct frec_writer_stats st;
	if (got < 0 || writer_ok(&c, &st, err)) {
		copy_free(&c);
		if (out_fd < 0)
			unlink(out_path);
		return -1;
	}

	int rc = 0;
	if (frec_has_end(c.rd)) {
		uint32_t n_probes = 0, n_drops = 0;
		const struct fr_probe_stats *probes = frec_end_probes(c.rd, &n_probes);
		const struct fr_drop_count *drops = frec_end_drops(c.rd, &n_drops);
		if (frec_writer_set_drops(c.w, drops, n_drops)) {
			frec_error_set(err, out_path, -1, ENOMEM, "out of memory");
			rc = -1;
		}
		struct frec_writer *w = c.w;
		c.w = NULL;
		int stop_error = 0;
		uint64_t stop_at = 0;
		if (frec_end_stopped(c.rd, &stop_error, &stop_at))
			frec_writer_set_stopped(w, stop_error, stop_at);
		if (rc == 0)
			rc = frec_writer_close(w, frec_end(c.rd), probes, n_probes, err);
		else
			frec_writer_abandon(w);
	} else {
		/* incomplete input, incomplete copy: every queued chunk is
		 * written (drained above), no INDEX, no END */
		frec_writer_abandon(c.w);
		c.w = NULL;
	}
	copy_free(&c);
	if (rc)
		if (out_fd < 0)
			unlink(out_path);
	return rc;
}

int redact_trace(struct redactor *r, const char *in_path, const char *out_path,
		 struct frec_error *err)
{
	return copy_trace(r, in_path, out_path, -1, err);
}

int redact_trace_fd(struct redactor *r, const char *in_path, int out_fd, const char *out_name,
		    struct frec_error *err)
{
	return copy_trace(r, in_path, out_name, out_fd, err);
}
