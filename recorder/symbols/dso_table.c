/* DSO registry and mapping list of one recording (see dso_table.h). */
#include "symbols/dso_table.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inspect/elf_info.h"
#include "inspect/safe_open.h"

void dso_table_init(struct dso_table *t)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
	t->max_open_fds = 4096;
}

void dso_table_destroy(struct dso_table *t)
{
	for (size_t i = 0; i < t->n_dsos; i++) {
		if (t->dsos[i].fd >= 0)
			close(t->dsos[i].fd);
		free(t->dsos[i].path);
	}
	free(t->dsos);
	free(t->maps);
	pthread_mutex_destroy(&t->lock);
}

/* Whether the file open at fd (fstat in st) is the one the kernel reported
 * m maps.  A build-id compares contents, so it holds across overlayfs,
 * whose inode numbers differ between the mapping and a reopened name. */
static bool same_file(int fd, const struct stat *st, const struct mapped_file *m)
{
	if (m->build_id && m->build_id_len) {
		uint8_t bid[20], len = 0;
		uint8_t want = m->build_id_len > 20 ? 20 : m->build_id_len;
		return elf_read_build_id(fd, bid, &len) == 0 && len == want &&
		       !memcmp(bid, m->build_id, want);
	}
	return m->has_inode && (uint64_t)st->st_dev == m->dev && (uint64_t)st->st_ino == m->ino;
}

/* /proc/PID/map_files/ENTRY for the mapping that starts at m->start: the
 * exact range first; when the area was split or merged since (mprotect,
 * a neighbouring mmap), the entry whose range covers m->start.  Whatever
 * file the process maps there now, it is one the process could open. */
static int open_map_files(const struct mapped_file *m, struct stat *st)
{
	char path[64 + 256]; /* the directory, then an entry's name */
	int n = snprintf(path, sizeof(path), "/proc/%u/map_files/", m->pid);
	snprintf(path + n, sizeof(path) - (size_t)n, "%" PRIx64 "-%" PRIx64, m->start, m->end);
	int fd = safe_open_regular(AT_FDCWD, path, 0, st);
	if (fd >= 0 || errno != ENOENT)
		return fd;
	path[n] = 0;
	DIR *dir = opendir(path);
	struct dirent *de;
	while (dir && (de = readdir(dir))) {
		unsigned long long lo, hi;
		if (sscanf(de->d_name, "%llx-%llx", &lo, &hi) != 2 || m->start < lo || m->start >= hi)
			continue;
		snprintf(path + n, sizeof(path) - (size_t)n, "%s", de->d_name);
		fd = safe_open_regular(AT_FDCWD, path, 0, st);
		break;
	}
	if (dir)
		closedir(dir);
	return fd;
}

int dso_open_mapped(const struct mapped_file *m, struct stat *st)
{
	char root_path[64];
	int fd;

	if (m->pid && m->end > m->start && (fd = open_map_files(m, st)) >= 0)
		return fd;
	/* By name: the process may have put anything there since it mapped
	 * the file.  Kernel-written paths (d_path) hold no symbolic link, so
	 * none is followed, and what is found must be what was mapped. */
	if (!(m->build_id && m->build_id_len) && !m->has_inode)
		return -1;
	if (m->pid) {
		snprintf(root_path, sizeof(root_path), "/proc/%u/root", m->pid);
		int root = open(root_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (root >= 0) {
			fd = safe_open_regular(root, m->path, SAFE_OPEN_NOFOLLOW | SAFE_OPEN_IN_ROOT, st);
			close(root);
			if (fd >= 0 && same_file(fd, st, m))
				return fd;
			if (fd >= 0)
				close(fd);
		}
	}
	/* /proc/PID/maps names files as seen from the reader's root, and the
	 * process may be gone: the recorder's own view of the name */
	fd = safe_open_regular(AT_FDCWD, m->path, SAFE_OPEN_NOFOLLOW, st);
	if (fd >= 0 && same_file(fd, st, m))
		return fd;
	if (fd >= 0)
		close(fd);
	return -1;
}

int dso_table_reopen(const struct dso *d)
{
	struct stat st;
	struct mapped_file m = {
		.pid = d->pid, .path = d->path, .build_id = d->build_id,
		.build_id_len = d->build_id_len, .has_inode = d->has_inode, .dev = d->dev,
		.ino = d->ino,
	};
	return d->path && d->path[0] == '/' ? dso_open_mapped(&m, &st) : -1;
}

/* The DSO the kernel's identity (or, with none, the path) names; 0 when
 * none.  Called with the lock held. */
static uint32_t find_locked(struct dso_table *t, const uint8_t *bid, uint8_t bid_len,
			    bool has_inode, uint64_t dev, uint64_t ino, const char *path)
{
	for (size_t i = 0; i < t->n_dsos; i++) {
		const struct dso *d = &t->dsos[i];
		if (bid_len) {
			if (d->build_id_len == bid_len && !memcmp(d->build_id, bid, bid_len))
				return d->dso_id;
		} else if (has_inode) {
			if (d->has_inode && d->dev == dev && d->ino == ino)
				return d->dso_id;
		} else if (path && !d->build_id_len && !strcmp(d->path, path)) {
			return d->dso_id;
		}
	}
	return 0;
}

uint32_t dso_table_lookup_or_add(struct dso_table *t, const struct mapped_file *m, bool *is_new)
{
	struct stat st = {0};
	uint8_t bid[20], bid_len = m->build_id_len > 20 ? 20 : m->build_id_len;
	const uint8_t *build_id = m->build_id;
	bool has_inode = m->has_inode;
	uint64_t dev = m->dev, ino = m->ino;
	uint32_t id;
	int fd;

	*is_new = false;
	if (!m->path || m->path[0] != '/')
		return 0;
	if (!build_id)
		bid_len = 0;
	/* a file seen before, known by what the kernel said: no open at all */
	if (bid_len || has_inode) {
		pthread_mutex_lock(&t->lock);
		id = find_locked(t, build_id, bid_len, has_inode, dev, ino, NULL);
		pthread_mutex_unlock(&t->lock);
		if (id)
			return id;
	}
	fd = dso_open_mapped(m, &st);
	if (!bid_len && fd >= 0 && elf_read_build_id(fd, bid, &bid_len) == 0)
		build_id = bid;
	if (!has_inode && fd >= 0) {
		has_inode = true;
		dev = (uint64_t)st.st_dev;
		ino = (uint64_t)st.st_ino;
	}

	pthread_mutex_lock(&t->lock);
	id = find_locked(t, build_id, bid_len, has_inode, dev, ino, m->path);
	if (!id && t->n_dsos < UINT32_MAX - 1) {
		if (t->n_dsos == t->cap_dsos) {
			size_t cap = t->cap_dsos ? t->cap_dsos * 2 : 64;
			struct dso *n = realloc(t->dsos, cap * sizeof(*n));
			if (!n)
				goto out;
			t->dsos = n;
			t->cap_dsos = cap;
		}
		struct dso *d = &t->dsos[t->n_dsos];
		memset(d, 0, sizeof(*d));
		d->path = strdup(m->path);
		if (!d->path)
			goto out;
		d->dso_id = (uint32_t)++t->n_dsos;
		d->fd = fd;
		fd = -1; /* owned by the table now */
		if (d->fd >= 0 && t->n_dsos > t->max_open_fds) {
			/* keep fd usage bounded; dso_table_reopen is the fallback */
			close(d->fd);
			d->fd = -1;
		}
		d->pid = m->pid;
		d->has_inode = has_inode;
		d->dev = dev;
		d->ino = ino;
		d->build_id_len = bid_len;
		if (bid_len)
			memcpy(d->build_id, build_id, bid_len);
		id = d->dso_id;
		*is_new = true;
	}
out:
	pthread_mutex_unlock(&t->lock);
	if (fd >= 0)
		close(fd);
	return id;
}

void dso_table_add_mapping(struct dso_table *t, const struct mapping *m)
{
	pthread_mutex_lock(&t->lock);
	if (t->n_maps == t->cap_maps) {
		size_t cap = t->cap_maps ? t->cap_maps * 2 : 256;
		struct mapping *n = realloc(t->maps, cap * sizeof(*n));
		if (!n) {
			pthread_mutex_unlock(&t->lock);
			return;
		}
		t->maps = n;
		t->cap_maps = cap;
	}
	t->maps[t->n_maps++] = *m;
	pthread_mutex_unlock(&t->lock);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

void dso_table_forget_pids(struct dso_table *t, uint32_t *pids, size_t n)
{
	if (!n)
		return;
	qsort(pids, n, sizeof(*pids), cmp_u32);
	pthread_mutex_lock(&t->lock);
	size_t w = 0;
	for (size_t i = 0; i < t->n_maps; i++)
		if (!bsearch(&t->maps[i].pid, pids, n, sizeof(*pids), cmp_u32))
			t->maps[w++] = t->maps[i];
	t->n_maps = w;
	pthread_mutex_unlock(&t->lock);
}

bool dso_table_has_mapping(struct dso_table *t, const struct mapping *m)
{
	struct mapping cur;
	return dso_table_find_mapping_locked(t, m->pid, m->start, &cur) && cur.dso_id == m->dso_id &&
	       cur.start == m->start && cur.end == m->end && cur.pgoff == m->pgoff;
}

bool dso_table_find_mapping_locked(struct dso_table *t, uint32_t pid, uint64_t addr,
				   struct mapping *out)
{
	const struct mapping *best = NULL;

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n_maps; i++) {
		const struct mapping *m = &t->maps[i];
		if (m->pid == pid && addr >= m->start && addr < m->end &&
		    (!best || m->ts_ns >= best->ts_ns))
			best = m;
	}
	if (best)
		*out = *best;
	pthread_mutex_unlock(&t->lock);
	return best != NULL;
}

const struct dso *dso_table_get(const struct dso_table *t, uint32_t dso_id)
{
	if (dso_id == 0 || dso_id > t->n_dsos)
		return NULL;
	return &t->dsos[dso_id - 1];
}

bool dso_table_path(struct dso_table *t, uint32_t dso_id, char *buf, size_t len)
{
	bool ok = false;
	pthread_mutex_lock(&t->lock);
	if (dso_id && dso_id <= t->n_dsos && t->dsos[dso_id - 1].path) {
		snprintf(buf, len, "%s", t->dsos[dso_id - 1].path);
		ok = true;
	}
	pthread_mutex_unlock(&t->lock);
	return ok;
}
