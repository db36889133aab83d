/* Redacted copies of the traces the MCP server serves (mcp_redact.h). */
#include "mcp_redact.h"
#include "mcp_paths.h"
#include "redact.h"
#include "ts_archive.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One trace as a client named it: the file's identity when copied, and its
 * copies (one for a .frec, one per member for an archive). */
struct copied {
	char *real;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	size_t first, n; /* its copies: names[first .. first + n) */
};

struct mcp_redact {
	const struct mcp_roots *roots;
	struct redactor *red;
	char dir[256];     /* while copies are being made */
	struct copied *v;
	size_t n, cap;
	/* every copy ever made: "/proc/self/fd/N" (an unlinked file), its
	 * descriptor, and the client's name for it */
	char **paths, **names;
	int *fds;
	size_t n_copies, cap_copies;
	const char **list; /* mcp_redact_copy's answer */
};

struct mcp_redact *mcp_redact_new(const struct mcp_roots *roots, int all, char *err,
				  size_t errlen)
{
	struct mcp_redact *m = calloc(1, sizeof(*m));
	if (!m || !(m->red = redactor_new(all))) {
		snprintf(err, errlen, "out of memory (or no random bytes for the redaction secret)");
		free(m);
		return NULL;
	}
	m->roots = roots;
	return m;
}

void mcp_redact_free(struct mcp_redact *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_copies; i++) {
		close(m->fds[i]);
		free(m->paths[i]);
		free(m->names[i]);
	}
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].real);
	free(m->v);
	free(m->paths);
	free(m->names);
	free(m->fds);
	free(m->list);
	redactor_free(m->red);
	free(m);
}

/* A copy of in_path (any path frec_open takes) named name for clients;
 * 0, or -1 with err. */
static int add_copy(struct mcp_redact *m, const char *in_path, const char *name, char *err,
		    size_t errlen)
{
	if (m->n_copies == m->cap_copies) {
		size_t cap = m->cap_copies ? m->cap_copies * 2 : 16;
		char **p = realloc(m->paths, cap * sizeof(*p));
		if (p)
			m->paths = p;
		char **q = p ? realloc(m->names, cap * sizeof(*q)) : NULL;
		if (q)
			m->names = q;
		int *f = q ? realloc(m->fds, cap * sizeof(*f)) : NULL;
		if (!f) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		m->fds = f;
		m->cap_copies = cap;
	}
	/* redact_trace writes to a path and never through a link: the copy is
	 * named only until it is open */
	char path[300];
	snprintf(path, sizeof(path), "%s/%zu.frec", m->dir, m->n_copies + 1);
	struct frec_error ferr = { 0 };
	if (redact_trace(m->red, in_path, path, &ferr)) {
		char buf[600];
		/* the message names what the client knows, not the scratch path */
		snprintf(err, errlen, "cannot redact %s: %s", name, ferr.what[0] ? ferr.what :
			 frec_error_str(&ferr, buf, sizeof(buf)));
		unlink(path);
		return -1;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	unlink(path);
	char fd_path[64];
	snprintf(fd_path, sizeof(fd_path), "/proc/self/fd/%d", fd);
	m->paths[m->n_copies] = fd >= 0 ? strdup(fd_path) : NULL;
	m->names[m->n_copies] = strdup(name);
	if (!m->paths[m->n_copies] || !m->names[m->n_copies]) {
		free(m->paths[m->n_copies]);
		free(m->names[m->n_copies]);
		if (fd >= 0)
			close(fd);
		snprintf(err, errlen, fd < 0 ? "cannot open a redacted copy" : "out of memory");
		return -1;
	}
	m->fds[m->n_copies++] = fd;
	return 0;
}

static int same_file(const struct copied *c, const struct stat *st)
{
	return c->dev == st->st_dev && c->ino == st->st_ino && c->size == st->st_size &&
	       c->mtime.tv_sec == st->st_mtim.tv_sec && c->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

/* The copies of real, made now: every .frec member of an archive, or the
 * file itself. */
static int make_copies(struct mcp_redact *m, const char *real, struct copied *c, char *err,
		       size_t errlen)
{
	const char *shown = mcp_shown(m->roots, real);
	struct ts_inputs in = { 0 };
	struct frec_error ferr = { 0 };
	const char *paths[] = { real };
	if (ts_inputs_expand(paths, 1, &in, &ferr)) {
		char buf[600];
		snprintf(err, errlen, "%s", frec_error_str(&ferr, buf, sizeof(buf)));
		return -1;
	}
	const char *tmp = getenv("TMPDIR");
	snprintf(m->dir, sizeof(m->dir), "%s/flightrec-mcp-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(m->dir)) { /* mode 0700 */
		snprintf(err, errlen, "cannot make a private directory for redacted copies in %s: %s",
			 tmp && *tmp ? tmp : "/tmp", strerror(errno));
		ts_inputs_free(&in);
		return -1;
	}
	c->first = m->n_copies;
	int rc = 0;
	for (size_t i = 0; i < in.n && !rc; i++) {
		const struct ts_input *t = &in.v[i];
		char name[1024], fd_path[64];
		if (t->fd < 0) {
			rc = add_copy(m, real, shown, err, errlen);
			continue;
		}
		snprintf(name, sizeof(name), "%s:%s", shown, t->name + t->member_at);
		snprintf(fd_path, sizeof(fd_path), "/proc/self/fd/%d", t->fd);
		rc = add_copy(m, fd_path, name, err, errlen);
	}
	c->n = m->n_copies - c->first;
	rmdir(m->dir);
	ts_inputs_free(&in);
	return rc;
}

const char *const *mcp_redact_copy(struct mcp_redact *m, const char *real, size_t *n, char *err,
				   size_t errlen)
{
	struct stat st;
	if (stat(real, &st)) {
		snprintf(err, errlen, "%s: %s", mcp_shown(m->roots, real), strerror(errno));
		return NULL;
	}
	struct copied *c = NULL;
	for (size_t i = 0; i < m->n && !c; i++)
		if (!strcmp(m->v[i].real, real) && same_file(&m->v[i], &st))
			c = &m->v[i];
	if (!c) {
		/* a file that changed is copied again; its old copies stay, for
		 * the names of earlier answers */
		if (m->n == m->cap) {
			size_t cap = m->cap ? m->cap * 2 : 8;
			struct copied *g = realloc(m->v, cap * sizeof(*g));
			if (!g) {
				snprintf(err, errlen, "out of memory");
				return NULL;
			}
			m->v = g;
			m->cap = cap;
		}
		struct copied fresh = { .real = strdup(real), .dev = st.st_dev, .ino = st.st_ino,
					.size = st.st_size, .mtime = st.st_mtim };
		if (!fresh.real) {
			snprintf(err, errlen, "out of memory");
			return NULL;
		}
		if (make_copies(m, real, &fresh, err, errlen)) {
			free(fresh.real);
			return NULL;
		}
		m->v[m->n] = fresh;
		c = &m->v[m->n++];
	}
	const char **list = realloc(m->list, (c->n + 1) * sizeof(*list));
	if (!list) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	m->list = list;
	for (size_t i = 0; i < c->n; i++)
		list[i] = m->paths[c->first + i];
	*n = c->n;
	return list;
}

/* name as it goes into a JSON string, without its quotes */
static void put_name(FILE *f, const char *name, int json)
{
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		if (json && (*p == '"' || *p == '\\'))
			fprintf(f, "\\%c", *p);
		else if (json && *p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
}

/* The copy whose path starts text (at most len bytes), and that path's
 * length; -1 when none does. */
static long copy_at(const struct mcp_redact *m, const char *text, size_t len, size_t *plen)
{
	static const char prefix[] = "/proc/self/fd/";
	size_t k = sizeof(prefix) - 1, fd = 0, digits = 0;
	if (len < k || memcmp(text, prefix, k))
		return -1;
	for (; k < len && text[k] >= '0' && text[k] <= '9' && digits < 9; k++, digits++)
		fd = fd * 10 + (size_t)(text[k] - '0');
	if (!digits || (k < len && text[k] >= '0' && text[k] <= '9'))
		return -1;
	for (size_t i = 0; i < m->n_copies; i++)
		if ((size_t)m->fds[i] == fd) {
			*plen = k;
			return (long)i;
		}
	return -1;
}

char *mcp_redact_names(const struct mcp_redact *m, const char *text, size_t len, int json,
		       size_t *out_len)
{
	char *out = NULL;
	FILE *f = open_memstream(&out, out_len);
	if (!f)
		return NULL;
	size_t i = 0;
	while (i < len) {
		const char *hit = memmem(text + i, len - i, "/proc/self/fd/", 14);
		size_t at = hit ? (size_t)(hit - text) : len, plen = 0;
		fwrite(text + i, 1, at - i, f);
		if (!hit)
			break;
		long c = copy_at(m, hit, len - at, &plen);
		if (c >= 0) {
			put_name(f, m->names[c], json);
			i = at + plen;
		} else {
			fputc('/', f);
			i = at + 1;
		}
	}
	if (fclose(f)) {
		free(out);
		return NULL;
	}
	return out;
}
