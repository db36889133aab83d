/* The members of a new archive (see members.h): names, bytes, digests. */
#include "members.h"
#include "anon_file.h"
#include "sha256.h"
#include "trace_set.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READ_BUF_BYTES (1u << 20)

/* ---- names ---------------------------------------------------------------- */

static char *base_name_of(const struct trace_file *f)
{
	const char *name = f->path + f->member_at;
	const char *slash = strrchr(name, '/');
	const char *base = slash ? slash + 1 : name;
	if (!base[0])
		base = "trace";
	size_t len = strlen(base);
	int add = len < 6 || strcmp(base + len - 5, ".frec") != 0;
	char *out = malloc(len + (add ? 6 : 1));
	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++)
		out[i] = (unsigned char)base[i] < 0x20 || base[i] == 0x7f ? '_' : base[i];
	strcpy(out + len, add ? ".frec" : "");
	return out;
}

static char *prefixed(size_t position, char *name)
{
	size_t len = strlen(name) + 24;
	char *out = malloc(len);
	if (out)
		snprintf(out, len, "%zu-%s", position, name);
	free(name);
	return out;
}

static int name_all(struct members *ms, struct trace_set *ts)
{
	size_t n = ms->n;
	for (size_t i = 0; i < n; i++)
		if (!(ms->names[i] = base_name_of(trace_set_file(ts, i))))
			return -1;
	char *shared = calloc(n ? n : 1, 1);
	if (!shared)
		return -1;
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (!strcmp(ms->names[i], ms->names[j]))
				shared[i] = shared[j] = 1;
	for (size_t i = 0; i < n; i++)
		if (shared[i] && !(ms->names[i] = prefixed(i + 1, ms->names[i])))
			break;
	free(shared);
	/* "1-run.frec" given as a file of its own: prefix again until unique */
	for (size_t i = 0; i < n && ms->names[i]; i++)
		for (size_t j = 0; j < i && ms->names[i]; j++)
			if (!strcmp(ms->names[i], ms->names[j])) {
				ms->names[i] = prefixed(i + 1, ms->names[i]);
				j = (size_t)-1;
			}
	for (size_t i = 0; i < n; i++)
		if (!ms->names[i])
			return -1;
	return 0;
}

int members_open(struct members *ms, struct trace_set *ts, struct frec_error *err)
{
	size_t n = trace_set_count(ts);
	*ms = (struct members){ .n = n, .facts = ts, .input = ts,
				.names = calloc(n ? n : 1, sizeof(*ms->names)),
				.fds = malloc((n ? n : 1) * sizeof(*ms->fds)),
				.m = calloc(n ? n : 1, sizeof(*ms->m)) };
	if (ms->fds)
		for (size_t i = 0; i < n; i++)
			ms->fds[i] = -1;
	if (!ms->names || !ms->fds || !ms->m || name_all(ms, ts)) {
		frec_error_set(err, "flightrec-analyze", -1, ENOMEM, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		const struct trace_file *f = trace_set_file(ts, i);
		ms->m[i].name = ms->names[i];
		if ((ms->fds[i] = trace_file_fd(f)) < 0) {
			frec_error_set(err, f->path, -1, errno, "cannot open again: %s", strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* ---- redaction ------------------------------------------------------------ */

/* Member i's trace redacted into an anonymous file (nothing named is
 * ever written, so nothing is left behind even after SIGKILL). */
static int redact_one(struct members *ms, struct redactor *r, size_t i, struct frec_error *err)
{
	const struct trace_file *f = trace_set_file(ms->input, i);
	char in[64];
	snprintf(in, sizeof(in), "/proc/self/fd/%d", ms->fds[i]);
	int fd = anon_file_create();
	if (fd < 0) {
		frec_error_set(err, anon_file_dir(), -1, errno, "cannot create a file for the "
			       "redacted copy of %s: %s (TMPDIR chooses another place)", f->path,
			       strerror(errno));
		return -1;
	}
	if (redact_trace_fd(r, f->member_fd >= 0 ? in : f->path, fd, f->path, err) ||
	    lseek(fd, 0, SEEK_SET) != 0) {
		/* the descriptor's name means nothing to the user */
		if (!strcmp(err->where, in))
			snprintf(err->where, sizeof(err->where), "%s", f->path);
		close(fd);
		return -1;
	}
	close(ms->fds[i]);
	ms->fds[i] = fd;
	return 0;
}

int members_redact(struct members *ms, int all, const char *archive, struct frec_error *err)
{
	struct redactor *r = redactor_new(all);
	char **shown = calloc(ms->n ? ms->n : 1, sizeof(*shown));
	int rc = -1;
	if (!r || !shown) {
		frec_error_set(err, "flightrec-analyze", -1, ENOMEM, "cannot start redacting: out of "
			       "memory, or no random bytes for the tokens' secret");
		goto out;
	}
	for (size_t i = 0; i < ms->n; i++) {
		size_t len = strlen(archive) + strlen(ms->names[i]) + 2;
		if (redact_one(ms, r, i, err))
			goto out;
		if (!(shown[i] = malloc(len))) {
			frec_error_set(err, "flightrec-analyze", -1, ENOMEM, "out of memory");
			goto out;
		}
		snprintf(shown[i], len, "%s:%s", archive, ms->names[i]);
	}
	redactor_counts(r, &ms->counts);
	struct trace_set *copies;
	if (trace_set_open_fds(ms->fds, (const char *const *)shown, ms->n, &copies, err))
		goto out;
	ms->facts = copies;
	rc = trace_set_run(copies, err);
out:
	for (size_t i = 0; shown && i < ms->n; i++)
		free(shown[i]);
	free(shown);
	redactor_free(r);
	return rc;
}

/* ---- digests -------------------------------------------------------------- */

int members_hash(struct members *ms, struct frec_error *err)
{
	uint8_t *buf = malloc(READ_BUF_BYTES);
	if (!buf) {
		frec_error_set(err, "flightrec-analyze", -1, ENOMEM, "out of memory");
		return -1;
	}
	int rc = 0;
	for (size_t i = 0; !rc && i < ms->n; i++) {
		struct sha256_ctx sha;
		uint8_t digest[SHA256_DIGEST_BYTES];
		uint64_t off = 0;
		sha256_init(&sha);
		for (;;) {
			ssize_t k = pread(ms->fds[i], buf, READ_BUF_BYTES, (off_t)off);
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0) {
				frec_error_set(err, trace_set_file(ms->facts, i)->path, (int64_t)off, errno,
					       "cannot read: %s", strerror(errno));
				rc = -1;
			}
			if (k <= 0)
				break;
			sha256_update(&sha, buf, (size_t)k);
			off += (uint64_t)k;
		}
		sha256_final(&sha, digest);
		sha256_hex(digest, ms->m[i].sha256);
		ms->m[i].bytes = off;
	}
	free(buf);
	return rc;
}

void members_free(struct members *ms)
{
	for (size_t i = 0; ms->fds && i < ms->n; i++)
		if (ms->fds[i] >= 0)
			close(ms->fds[i]);
	for (size_t i = 0; ms->names && i < ms->n; i++)
		free(ms->names[i]);
	free(ms->names);
	free(ms->fds);
	free(ms->m);
	if (ms->facts && ms->facts != ms->input)
		trace_set_free(ms->facts);
	memset(ms, 0, sizeof(*ms));
}
