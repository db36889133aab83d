/* Root confinement and listing (mcp_paths.h). */
#include "mcp_paths.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int mcp_roots_init(struct mcp_roots *r, const char *const *paths, size_t n, char *err,
		   size_t errlen)
{
	memset(r, 0, sizeof(*r));
	r->dirs = calloc(n ? n : 1, sizeof(*r->dirs));
	r->files = calloc(n ? n : 1, sizeof(*r->files));
	if (!r->dirs || !r->files) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		char *real = realpath(paths[i], NULL);
		struct stat st;
		if (!real || stat(real, &st)) {
			snprintf(err, errlen, "%s: cannot resolve the root", paths[i]);
			free(real);
			mcp_roots_free(r);
			return -1;
		}
		if (S_ISDIR(st.st_mode)) {
			r->dirs[r->n++] = real;
		} else {
			char *slash = strrchr(real, '/');
			r->files[r->n] = real;
			r->dirs[r->n++] = slash && slash != real ? strndup(real, (size_t)(slash - real))
								 : strdup("/");
		}
	}
	return 0;
}

void mcp_roots_free(struct mcp_roots *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->dirs[i]);
		free(r->files[i]);
	}
	free(r->dirs);
	free(r->files);
	memset(r, 0, sizeof(*r));
}

static int under(const char *real, const char *dir)
{
	size_t n = strlen(dir);
	if (n == 1 && dir[0] == '/')
		return real[0] == '/';
	return !strncmp(real, dir, n) && real[n] == '/';
}

static int allowed(const struct mcp_roots *r, size_t i, const char *real)
{
	if (r->files[i])
		return !strcmp(real, r->files[i]);
	return under(real, r->dirs[i]);
}

char *mcp_resolve(const struct mcp_roots *r, const char *path)
{
	if (!path || !path[0] || strlen(path) > PATH_MAX)
		return NULL;
	for (size_t i = 0; i < r->n; i++) {
		char joined[PATH_MAX * 2 + 2];
		if (path[0] == '/')
			snprintf(joined, sizeof(joined), "%s", path);
		else
			snprintf(joined, sizeof(joined), "%s/%s", r->dirs[i], path);
		char *real = realpath(joined, NULL);
		struct stat st;
		if (real && allowed(r, i, real) && !stat(real, &st) && S_ISREG(st.st_mode))
			return real;
		free(real);
	}
	return NULL;
}

const char *mcp_shown(const struct mcp_roots *r, const char *real)
{
	for (size_t i = 0; i < r->n; i++) {
		size_t n = strlen(r->dirs[i]);
		if (under(real, r->dirs[i]))
			return real + n + (n > 1);
	}
	return real;
}

static const char *kind_of(const char *name)
{
	size_t n = strlen(name);
	static const char *const archives[] = { ".tar", ".tar.gz", ".tar.zst", ".tgz" };
	if (n > 5 && !strcmp(name + n - 5, ".frec"))
		return "frec";
	for (size_t i = 0; i < 4; i++) {
		size_t k = strlen(archives[i]);
		if (n > k && !strcmp(name + n - k, archives[i]))
			return "archive";
	}
	return NULL;
}

struct list {
	struct mcp_listing *v;
	long n, cap;
};

static int walk(const struct mcp_roots *r, const char *dir, int depth, struct list *l)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int rc = 0;
	struct dirent *e;
	while (!rc && (e = readdir(d)) && l->n < 100000) {
		if (e->d_name[0] == '.')
			continue;
		char path[PATH_MAX];
		if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			continue;
		struct stat st;
		if (lstat(path, &st)) /* symbolic links are not followed: they may leave the root */
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (depth < 4)
				rc = walk(r, path, depth + 1, l);
			continue;
		}
		const char *kind = S_ISREG(st.st_mode) ? kind_of(e->d_name) : NULL;
		if (!kind)
			continue;
		if (l->n == l->cap) {
			long cap = l->cap ? l->cap * 2 : 64;
			struct mcp_listing *grown = realloc(l->v, (size_t)cap * sizeof(*grown));
			if (!grown) {
				rc = -1;
				break;
			}
			l->v = grown;
			l->cap = cap;
		}
		char *name = strdup(mcp_shown(r, path));
		if (!name) {
			rc = -1;
			break;
		}
		l->v[l->n++] = (struct mcp_listing){ name, (unsigned long long)st.st_size, kind };
	}
	closedir(d);
	return rc;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct mcp_listing *)a)->name, ((const struct mcp_listing *)b)->name);
}

long mcp_list(const struct mcp_roots *r, struct mcp_listing **out)
{
	struct list l = { 0 };
	for (size_t i = 0; i < r->n; i++) {
		if (r->files[i]) {
			struct stat st;
			const char *kind = kind_of(r->files[i]);
			if (!kind || stat(r->files[i], &st))
				continue;
			struct mcp_listing *grown = realloc(l.v, (size_t)(l.n + 1) * sizeof(*grown));
			char *name = grown ? strdup(mcp_shown(r, r->files[i])) : NULL;
			if (!name) {
				l.v = grown ? grown : l.v;
				mcp_listing_free(l.v, l.n);
				return -1;
			}
			l.v = grown;
			l.v[l.n++] = (struct mcp_listing){ name, (unsigned long long)st.st_size, kind };
		} else if (walk(r, r->dirs[i], 0, &l)) {
			mcp_listing_free(l.v, l.n);
			return -1;
		}
	}
	if (l.n)
		qsort(l.v, (size_t)l.n, sizeof(*l.v), by_name);
	*out = l.v;
	return l.n;
}

void mcp_listing_free(struct mcp_listing *v, long n)
{
	for (long i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}
