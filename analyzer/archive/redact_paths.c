/* The path rules of the redactor (redact_help_text in redact.c says them
 * to the user): what of a path stays, and which part becomes a token.
 * Used for mappings, symbol files, Python file names, attach messages and
 * environment values that name a path.  Not for tokens themselves
 * (redact.c) nor records (redact_records.c). */
#include "redact_impl.h"

#include <string.h>

/* Directories whose files are the distribution's or the CUDA toolkit's:
 * kept whole.  A prefix ending in '-' matches versioned names
 * (/usr/local/cuda-12.4/). */
static const char *const system_dirs[] = {
	"/usr/lib/", "/usr/lib32/", "/usr/lib64/", "/lib/", "/lib32/", "/lib64/",
	"/usr/libexec/", "/usr/local/lib/", "/usr/local/lib64/", "/usr/local/cuda/",
	"/usr/local/cuda-", "/usr/bin/", "/usr/sbin/", "/bin/", "/sbin/",
};

static int starts_with(const char *s, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);
	return n >= k && memcmp(s, prefix, k) == 0;
}

/* 1 when a path component is "..": such a path may leave any directory. */
static int has_dotdot(const char *s, size_t n)
{
	for (size_t i = 0; i + 1 < n; i++)
		if (s[i] == '.' && s[i + 1] == '.' && (i == 0 || s[i - 1] == '/') &&
		    (i + 2 == n || s[i + 2] == '/'))
			return 1;
	return 0;
}

static int in_system_dir(const char *s, size_t n)
{
	if (has_dotdot(s, n))
		return 0;
	for (size_t i = 0; i < sizeof(system_dirs) / sizeof(system_dirs[0]); i++) {
		size_t k = strlen(system_dirs[i]);
		/* the directory itself too (CUDA_HOME=/usr/local/cuda) */
		if (starts_with(s, n, system_dirs[i]) ||
		    (system_dirs[i][k - 1] == '/' && n == k - 1 && !memcmp(s, system_dirs[i], n)))
			return 1;
	}
	return 0;
}

/* A shared library's file name: "libx.so", "libcudart.so.12",
 * "_C.cpython-311-x86_64-linux-gnu.so". */
static int is_shared_library(const char *name, size_t n)
{
	for (size_t i = 1; i + 3 <= n; i++)
		if (!memcmp(name + i, ".so", 3) && (i + 3 == n || name[i + 3] == '.'))
			return 1;
	return 0;
}

/* The extension a token keeps: the last ".xxx" of the file name, 1 to 16
 * letters, digits or '_' ("" for none, and for dot files). */
static size_t extension_len(const char *name, size_t n)
{
	size_t dot = n;
	while (dot > 0 && name[dot - 1] != '.')
		dot--;
	if (dot < 2) /* no dot, or a name that only starts with one */
		return 0;
	size_t len = n - dot;
	if (len < 1 || len > 16)
		return 0;
	for (size_t i = dot; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_'))
			return 0;
	}
	return len + 1;
}

/* Where a Python library file's kept part starts: "/lib/pythonX.Y/" (the
 * standard library of an interpreter outside the system directories, and
 * the site-packages under it), else the last "/site-packages/" or
 * "/dist-packages/".  n when none. */
static size_t python_root(const char *s, size_t n)
{
	static const char *const libs[] = { "/lib/python", "/lib64/python" };
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < 2; k++) {
			size_t len = strlen(libs[k]);
			if (n - i < len || memcmp(s + i, libs[k], len))
				continue;
			size_t j = i + len;
			if (j >= n || s[j] < '0' || s[j] > '9')
				continue;
			while (j < n && ((s[j] >= '0' && s[j] <= '9') || s[j] == '.'))
				j++;
			if (j < n && s[j] == 't') /* free-threaded builds: python3.13t */
				j++;
			if (j < n && s[j] == '/')
				return i;
		}
	}
	static const char *const roots[] = { "/site-packages/", "/dist-packages/" };
	size_t best = n;
	for (size_t k = 0; k < 2; k++) {
		size_t len = strlen(roots[k]);
		for (size_t i = 0; i + len <= n; i++)
			if (!memcmp(s + i, roots[k], len) && (best == n || i > best))
				best = i;
	}
	return best;
}

int rd_path(struct redactor *r, const char *s, size_t n, struct rd_buf *out)
{
	/* "/path (deleted)": the path is redacted, the note stays */
	static const char deleted[] = " (deleted)";
	size_t note = 0;
	if (n > sizeof(deleted) - 1 &&
	    !memcmp(s + n - (sizeof(deleted) - 1), deleted, sizeof(deleted) - 1))
		note = sizeof(deleted) - 1;
	size_t len = n - note;
	int rc = 0;

	size_t slash = len;
	while (slash > 0 && s[slash - 1] != '/')
		slash--;
	const char *name = s + slash; /* the file name */
	size_t name_len = len - slash;
	size_t root;

	if (len == 0 || (s[0] == '[' && s[len - 1] == ']') || (s[0] == '<' && s[len - 1] == '>') ||
	    (s[0] == '/' && in_system_dir(s, len))) {
		rc = rd_put(out, s, len);
	} else if (is_shared_library(name, name_len)) {
		/* the directory is the secret, the library's name is needed */
		if (slash) {
			size_t dir = slash > 1 ? slash - 1 : slash;
			rc = rd_token(r, RD_PATH, s, dir, out) || rd_put(out, "/", 1);
		}
		rc = rc || rd_put(out, name, name_len);
	} else if ((root = python_root(s, len)) < len && root > 0) {
		rc = rd_token(r, RD_PATH, s, root, out) || rd_put(out, s + root, len - root);
	} else {
		size_t ext = extension_len(name, name_len);
		rc = rd_token(r, RD_PATH, s, len, out) || rd_put(out, s + len - ext, ext);
	}
	return rc || rd_put(out, s + len, note);
}

/* "path: reason": the path as a path; in the reason, each word that starts
 * with '/' too (a message may name another file). */
int rd_attach_text(struct redactor *r, const char *s, size_t n, struct rd_buf *out)
{
	size_t colon = 0;
	while (colon + 1 < n && !(s[colon] == ':' && s[colon + 1] == ' '))
		colon++;
	if (colon + 1 >= n)
		colon = n;
	if (rd_path(r, s, colon, out))
		return -1;
	for (size_t i = colon; i < n;) {
		if (s[i] == '/' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '(' || s[i - 1] == '\'' ||
				    s[i - 1] == '"' || s[i - 1] == '=')) {
			size_t j = i;
			while (j < n && s[j] != ' ' && s[j] != ')' && s[j] != '\'' && s[j] != '"' &&
			       s[j] != ',' && s[j] != ';' && !(s[j] == ':' && (j + 1 == n || s[j + 1] == ' ')))
				j++;
			if (rd_path(r, s + i, j - i, out))
				return -1;
			i = j;
		} else {
			if (rd_put(out, s + i, 1))
				return -1;
			i++;
		}
	}
	return 0;
}
