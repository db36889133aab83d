/* The archive's tar.zst stream (see bundle_write.h). */
#include "bundle_write.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define COPY_BUF_BYTES (1u << 20)

struct bundle {
	struct archive *a;
	int fd;
	char *path;
	time_t mtime;
};

static int failed(struct bundle *b, struct frec_error *err, const char *what)
{
	const char *why = archive_error_string(b->a);
	int code = archive_errno(b->a);
	frec_error_set(err, b->path, -1, code ? code : EIO, "%s: %s", what,
		       why ? why : code ? strerror(code) : "write failed");
	return -1;
}

int bundle_open(const char *path, struct bundle **out, struct frec_error *err)
{
	*out = NULL;
	struct bundle *b = calloc(1, sizeof(*b));
	if (!b || !(b->path = strdup(path))) {
		free(b);
		frec_error_set(err, path, -1, ENOMEM, "out of memory");
		return -1;
	}
	b->mtime = time(NULL);
	b->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (b->fd < 0) {
		frec_error_set(err, path, -1, errno, "cannot create: %s", strerror(errno));
		free(b->path);
		free(b);
		return -1;
	}
	b->a = archive_write_new();
	/* bytes_in_last_block 1: no zero padding after the zstd frame, which
	 * `zstd -d` would take for garbage */
	if (!b->a || archive_write_add_filter_zstd(b->a) != ARCHIVE_OK ||
	    archive_write_set_format_pax_restricted(b->a) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(b->a, 1) != ARCHIVE_OK ||
	    archive_write_open_fd(b->a, b->fd) != ARCHIVE_OK) {
		if (b->a)
			failed(b, err, "cannot start the tar.zst stream");
		else
			frec_error_set(err, path, -1, ENOMEM, "out of memory");
		archive_write_free(b->a);
		close(b->fd);
		free(b->path);
		free(b);
		return -1;
	}
	*out = b;
	return 0;
}

static int header(struct bundle *b, const char *name, uint64_t size, struct frec_error *err)
{
	struct archive_entry *e = archive_entry_new();
	if (!e) {
		frec_error_set(err, b->path, -1, ENOMEM, "out of memory");
		return -1;
	}
	archive_entry_set_pathname(e, name);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_size(e, (la_int64_t)size);
	archive_entry_set_mtime(e, b->mtime, 0);
	archive_entry_set_uid(e, 0);
	archive_entry_set_gid(e, 0);
	int r = archive_write_header(b->a, e);
	archive_entry_free(e);
	return r == ARCHIVE_OK ? 0 : failed(b, err, "cannot write a member's header");
}

static int data(struct bundle *b, const void *p, size_t n, struct frec_error *err)
{
	while (n) {
		la_ssize_t k = archive_write_data(b->a, p, n);
		if (k <= 0)
			return failed(b, err, "write failed");
		p = (const char *)p + k;
		n -= (size_t)k;
	}
	return 0;
}

int bundle_add_bytes(struct bundle *b, const char *name, const void *bytes, size_t len,
		     struct frec_error *err)
{
	return header(b, name, len, err) || data(b, bytes, len, err) ? -1 : 0;
}

int bundle_add_fd(struct bundle *b, const char *name, int fd, uint64_t size, const char *src,
		  uint8_t digest[SHA256_DIGEST_BYTES], struct frec_error *err)
{
	uint8_t *buf = malloc(COPY_BUF_BYTES);
	if (!buf) {
		frec_error_set(err, b->path, -1, ENOMEM, "out of memory");
		return -1;
	}
	struct sha256_ctx sha;
	sha256_init(&sha);
	int rc = header(b, name, size, err);
	for (uint64_t off = 0; !rc && off < size;) {
		size_t want = size - off < COPY_BUF_BYTES ? (size_t)(size - off) : COPY_BUF_BYTES;
		ssize_t n = pread(fd, buf, want, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			frec_error_set(err, src, (int64_t)off, n ? errno : EIO, "%s",
				       n ? strerror(errno) : "shorter than when it was opened "
				       "(changed while it was being archived?)");
			rc = -1;
			break;
		}
		sha256_update(&sha, buf, (size_t)n);
		rc = data(b, buf, (size_t)n, err);
		off += (uint64_t)n;
	}
	free(buf);
	sha256_final(&sha, digest);
	return rc;
}

int bundle_close(struct bundle *b, struct frec_error *err)
{
	int rc = archive_write_close(b->a) == ARCHIVE_OK ? 0 : failed(b, err, "write failed");
	archive_write_free(b->a);
	if (close(b->fd) && !rc) {
		frec_error_set(err, b->path, -1, errno, "write failed: %s", strerror(errno));
		rc = -1;
	}
	free(b->path);
	free(b);
	return rc;
}
