/* Trace archives expanded into anonymous files (see ts_archive.h): the
 * magic-byte test, the walk over the members with every check a stranger's
 * archive needs, and the bounded copy.  Not for opening the traces
 * (trace_set.c) nor for writing archives. */
#include "ts_archive.h"
#include "anon_file.h"
#include "grow.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COPY_BUF_BYTES (1u << 20)
#define NAME_SHOWN 120 /* bytes of a member's name in a message */

/* ---- inputs ------------------------------------------------------------- */

int ts_inputs_add(struct ts_inputs *in, const char *name, size_t member_at, int fd)
{
	char *copy = strdup(name);
	if (!copy || grow_array((void **)&in->v, &in->cap, in->n + 1, sizeof(*in->v), 8)) {
		free(copy);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	in->v[in->n++] = (struct ts_input){ .name = copy, .member_at = member_at, .fd = fd };
	return 0;
}

void ts_inputs_free(struct ts_inputs *in)
{
	for (size_t i = 0; i < in->n; i++) {
		if (in->v[i].fd >= 0)
			close(in->v[i].fd);
		free(in->v[i].name);
	}
	for (size_t i = 0; i < in->n_warnings; i++)
		free(in->warnings[i]);
	free(in->v);
	free(in->warnings);
	memset(in, 0, sizeof(*in));
}

static int add_warning(struct ts_inputs *in, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int add_warning(struct ts_inputs *in, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	char *copy = strdup(line);
	if (!copy || grow_array((void **)&in->warnings, &in->cap_warnings, in->n_warnings + 1,
				sizeof(*in->warnings), 4)) {
		free(copy);
		return -1;
	}
	in->warnings[in->n_warnings++] = copy;
	return 0;
}

int ts_archive_max_member_bytes(uint64_t *bytes, struct frec_error *err)
{
	const char *v = getenv(TS_ARCHIVE_ENV_MAX_MEMBER_MB);
	uint64_t mb = TS_ARCHIVE_DEFAULT_MAX_MEMBER_MB;
	if (v && v[0]) {
		char *end;
		errno = 0;
		unsigned long long x = strtoull(v, &end, 10);
		if (errno || *end || v[0] < '0' || v[0] > '9' || x == 0 || x > (UINT64_MAX >> 20)) {
			frec_error_set(err, "flightrec-analyze", -1, EINVAL,
				       TS_ARCHIVE_ENV_MAX_MEMBER_MB "='%.40s' is not a number of MiB "
				       "(a whole number from 1; the default is %d)", v,
				       TS_ARCHIVE_DEFAULT_MAX_MEMBER_MB);
			return -1;
		}
		mb = x;
	}
	*bytes = mb << 20;
	return 0;
}

/* ---- what a file is ------------------------------------------------------ */

enum kind { KIND_TRACE, KIND_ARCHIVE, KIND_REFUSED };

/* An archive by its first bytes; KIND_TRACE for everything else (frec_open
 * then says what is wrong with it, including that it cannot be opened).
 * Only regular files are looked at: reading a fifo would eat its bytes. */
static enum kind sniff(const char *path, const char **what)
{
	static const struct {
		uint8_t len;
		uint8_t magic[6];
		enum kind kind;
		const char *what;
	} magics[] = {
		{ 4, { 0x28, 0xb5, 0x2f, 0xfd }, KIND_ARCHIVE, "zstd" },
		{ 2, { 0x1f, 0x8b }, KIND_ARCHIVE, "gzip" },
		{ 6, { 0xfd, '7', 'z', 'X', 'Z', 0 }, KIND_REFUSED, "an xz-compressed file" },
		{ 3, { 'B', 'Z', 'h' }, KIND_REFUSED, "a bzip2-compressed file" },
		{ 4, { 0x04, 0x22, 0x4d, 0x18 }, KIND_REFUSED, "an lz4-compressed file" },
		{ 4, { 'P', 'K', 3, 4 }, KIND_REFUSED, "a zip archive" },
		{ 6, { '7', 'z', 0xbc, 0xaf, 0x27, 0x1c }, KIND_REFUSED, "a 7-zip archive" },
	};
	struct stat st;
	uint8_t b[512];
	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return KIND_TRACE;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return KIND_TRACE;
	ssize_t n = pread(fd, b, sizeof(b), 0);
	close(fd);
	for (size_t i = 0; n > 0 && i < sizeof(magics) / sizeof(magics[0]); i++) {
		if ((size_t)n >= magics[i].len && !memcmp(b, magics[i].magic, magics[i].len)) {
			*what = magics[i].what;
			return magics[i].kind;
		}
	}
	if (n >= 262 && !memcmp(b + 257, "ustar", 5)) /* POSIX and GNU tar */
		return KIND_ARCHIVE;
	return KIND_TRACE;
}

/* ---- one archive --------------------------------------------------------- */

struct expand {
	const char *path;         /* the archive */
	struct archive *a;
	struct ts_inputs *in;
	size_t first;             /* its first member in in->v */
	uint64_t cap_bytes;
	size_t members;           /* headers read, of every kind */
	size_t warned, unshown;   /* skip warnings written, and left out */
	uint8_t *buf;
	struct frec_error *err;
};

/* s with control characters as '?', cut at max bytes (with "..."). */
static void printable(const char *s, char *out, size_t max)
{
	size_t i = 0;
	for (; s[i] && i < max; i++)
		out[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	out[i] = '\0';
	if (s[i])
		memcpy(out + (i > 3 ? i - 3 : 0), "...", 4);
}

static const char *archive_why(struct archive *a, char *buf, size_t len)
{
	const char *s = archive_error_string(a);
	printable(s ? s : "read failed", buf, len - 4);
	return buf;
}

static int skip(struct expand *x, const char *shown, const char *why)
{
	if (x->warned == TS_ARCHIVE_MAX_WARNINGS) {
		x->unshown++;
		return 0;
	}
	x->warned++;
	return add_warning(x->in, "%s: %s: skipped: %s", x->path, shown, why);
}

/* Why a regular member's name is not read; NULL when it is fine. */
static const char *name_trouble(const struct expand *x, const char *name)
{
	if (!name[0])
		return "an empty name";
	for (const char *p = name; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return "a name with control characters";
	if (name[0] == '/')
		return "an absolute name (members are never extracted; a flightrec archive holds none)";
	for (const char *p = name; *p;) {
		size_t len = strcspn(p, "/");
		if (len == 2 && p[0] == '.' && p[1] == '.')
			return "a name that climbs out with \"..\" (members are never extracted; "
			       "a flightrec archive holds none)";
		p += len;
		p += strspn(p, "/");
	}
	size_t len = strlen(name);
	if (len < 6 || strcmp(name + len - 5, ".frec"))
		return "not a trace (only members named *.frec are read)";
	for (size_t i = x->first; i < x->in->n; i++)
		if (!strcmp(x->in->v[i].name + x->in->v[i].member_at, name))
			return "a second member of the same name";
	return NULL;
}

/* Why an entry is not a regular file (*silent: say nothing); NULL when it
 * is one. */
static const char *type_trouble(struct archive_entry *e, int *silent)
{
	*silent = 0;
	if (archive_entry_hardlink(e))
		return "a hard link (only regular files are read)";
	switch (archive_entry_filetype(e)) {
	case AE_IFREG:
		return NULL;
	case AE_IFDIR:
		*silent = 1;
		return "a directory";
	case AE_IFLNK:
		return "a symbolic link (only regular files are read)";
	case AE_IFCHR:
	case AE_IFBLK:
		return "a device file (only regular files are read)";
	case AE_IFIFO:
		return "a fifo (only regular files are read)";
	case AE_IFSOCK:
		return "a socket (only regular files are read)";
	default:
		return "not a regular file (only regular files are read)";
	}
}

static int too_big(struct expand *x, const char *shown)
{
	frec_error_set(x->err, x->path, -1, EFBIG, "%s: decompresses to more than %" PRIu64
		       " MiB (" TS_ARCHIVE_ENV_MAX_MEMBER_MB " raises the cap)", shown,
		       x->cap_bytes >> 20);
	return -1;
}

/* The member's bytes into a new anonymous file, at most cap_bytes. */
static int copy_member(struct expand *x, struct archive_entry *e, const char *name,
		       const char *shown)
{
	if (archive_entry_size_is_set(e) && archive_entry_size(e) > 0 &&
	    (uint64_t)archive_entry_size(e) > x->cap_bytes)
		return too_big(x, shown);
	int fd = anon_file_create();
	if (fd < 0) {
		int code = errno;
		frec_error_set(x->err, x->path, -1, code, "%s: cannot create a temporary file in %s: "
			       "%s%s", shown, anon_file_dir(), strerror(code), code == EMFILE ?
			       " (each trace holds two; ulimit -n raises the limit)" : "");
		return -1;
	}
	uint64_t total = 0;
	for (;;) {
		la_ssize_t n = archive_read_data(x->a, x->buf, COPY_BUF_BYTES);
		if (n == 0)
			break;
		if (n < 0) {
			char why[160];
			frec_error_set(x->err, x->path, -1, EIO, "%s: truncated or corrupt archive: %s",
				       shown, archive_why(x->a, why, sizeof(why)));
			close(fd);
			return -1;
		}
		total += (uint64_t)n;
		if (total > x->cap_bytes) {
			close(fd);
			return too_big(x, shown);
		}
		if (anon_file_write(fd, x->buf, (size_t)n)) {
			int code = errno;
			frec_error_set(x->err, x->path, -1, code, "%s: cannot copy into a temporary file "
				       "in %s: %s (TMPDIR chooses another place)", shown, anon_file_dir(),
				       strerror(code));
			close(fd);
			return -1;
		}
	}
	size_t plen = strlen(x->path), len = plen + 1 + strlen(name) + 1;
	char *display = malloc(len);
	if (!display) {
		close(fd);
		goto oom;
	}
	snprintf(display, len, "%s:%s", x->path, name);
	int rc = ts_inputs_add(x->in, display, plen + 1, fd);
	free(display);
	if (!rc)
		return 0;
oom:
	frec_error_set(x->err, x->path, -1, ENOMEM, "out of memory");
	return -1;
}

/* One header: skipped (with a warning where it matters) or copied. */
static int one_member(struct expand *x, struct archive_entry *e)
{
	const char *raw = archive_entry_pathname(e);
	char shown[NAME_SHOWN + 1];
	const char *name = raw ? raw : "";
	while (name[0] == '.' && name[1] == '/') /* "./node0.frec" as tar c . writes it */
		name += 2 + strspn(name + 2, "/");
	printable(raw ? name : "(a name libarchive could not read)", shown, NAME_SHOWN);
	int silent;
	const char *why = type_trouble(e, &silent);
	if (!why && !strcmp(name, "MANIFEST.json")) {
		silent = 1;
		why = "the manifest";
	}
	if (!why)
		why = name_trouble(x, name);
	if (why) {
		if (!silent && skip(x, shown, why))
			goto oom;
		return 0; /* the next header skips its data */
	}
	return copy_member(x, e, name, shown);
oom:
	frec_error_set(x->err, x->path, -1, ENOMEM, "out of memory");
	return -1;
}

static int walk(struct expand *x)
{
	char last[NAME_SHOWN + 1] = "";
	for (;;) {
		struct archive_entry *e;
		int r = archive_read_next_header(x->a, &e);
		if (r == ARCHIVE_EOF)
			return 0;
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
			char why[160];
			archive_why(x->a, why, sizeof(why));
			if (!x->members)
				frec_error_set(x->err, x->path, -1, EINVAL, "not a tar archive, or damaged "
					       "at its start: %s (archives are read as .tar, .tar.gz or "
					       ".tar.zst; decompress a lone compressed trace first)", why);
			else
				frec_error_set(x->err, x->path, -1, EIO, "truncated or corrupt after "
					       "member %s: %s", last, why);
			return -1;
		}
		if (++x->members > TS_ARCHIVE_MAX_MEMBERS) {
			frec_error_set(x->err, x->path, -1, EFBIG, "more than %d members, the most an "
				       "archive may hold (a flightrec archive holds one trace per node)",
				       TS_ARCHIVE_MAX_MEMBERS);
			return -1;
		}
		const char *name = archive_entry_pathname(e);
		printable(name ? name : "?", last, NAME_SHOWN);
		if (one_member(x, e))
			return -1;
	}
}

static int expand_archive(struct expand *x)
{
	int fd = open(x->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		frec_error_set(x->err, x->path, -1, errno, "cannot open: %s", strerror(errno));
		return -1;
	}
	x->a = archive_read_new();
	if (!x->a) {
		close(fd);
		frec_error_set(x->err, x->path, -1, ENOMEM, "out of memory");
		return -1;
	}
	/* libarchive's own decoders only: never an external program */
	archive_read_support_filter_zstd(x->a);
	archive_read_support_filter_gzip(x->a);
	archive_read_support_format_tar(x->a);
	int rc = -1;
	if (archive_read_open_fd(x->a, fd, 64 * 1024) != ARCHIVE_OK) {
		char why[160];
		frec_error_set(x->err, x->path, -1, EINVAL, "not a tar archive, or damaged at its "
			       "start: %s (archives are read as .tar, .tar.gz or .tar.zst; decompress "
			       "a lone compressed trace first)", archive_why(x->a, why, sizeof(why)));
	} else if (!walk(x)) {
		rc = 0;
	}
	archive_read_free(x->a);
	close(fd);
	if (rc)
		return -1;
	if (x->unshown && add_warning(x->in, "%s: %zu more member%s skipped (not shown)", x->path,
				      x->unshown, x->unshown == 1 ? "" : "s")) {
		frec_error_set(x->err, x->path, -1, ENOMEM, "out of memory");
		return -1;
	}
	if (x->in->n == x->first) {
		frec_error_set(x->err, x->path, -1, ENOENT, "holds no trace (no member named *.frec)");
		return -1;
	}
	return 0;
}

int ts_inputs_expand(const char *const *paths, size_t n, struct ts_inputs *in,
		     struct frec_error *err)
{
	memset(in, 0, sizeof(*in));
	uint8_t *buf = NULL;
	uint64_t cap_bytes = 0;
	for (size_t i = 0; i < n; i++) {
		const char *what = NULL;
		enum kind k = sniff(paths[i], &what);
		if (k == KIND_TRACE) {
			if (ts_inputs_add(in, paths[i], 0, -1)) {
				frec_error_set(err, paths[i], -1, ENOMEM, "out of memory");
				goto fail;
			}
			continue;
		}
		if (k == KIND_REFUSED) {
			frec_error_set(err, paths[i], -1, EINVAL, "%s, not a trace; archives are read as "
				       ".tar, .tar.gz or .tar.zst (what 'flightrec-analyze archive' "
				       "writes)", what);
			goto fail;
		}
		if (!buf && ts_archive_max_member_bytes(&cap_bytes, err)) {
			snprintf(err->where, sizeof(err->where), "%s", paths[i]);
			goto fail;
		}
		if (!buf && !(buf = malloc(COPY_BUF_BYTES))) {
			frec_error_set(err, paths[i], -1, ENOMEM, "out of memory");
			goto fail;
		}
		struct expand x = { .path = paths[i], .in = in, .first = in->n,
				    .cap_bytes = cap_bytes, .buf = buf, .err = err };
		if (expand_archive(&x))
			goto fail;
	}
	free(buf);
	return 0;
fail:
	free(buf);
	ts_inputs_free(in);
	return -1;
}
