/* DSO registry and mapping list of one recording (see dso_table.h). */
#include "dso_table.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_info.h"

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

static int open_in_root(uint32_t pid, const char *path)
{
	char buf[4096 + 64];
	int fd = -1;

	if (pid) {
		snprintf(buf, sizeof(buf), "/proc/%u/root%s", pid, path);
		fd = open(buf, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd;
}

uint32_t dso_table_lookup_or_add(struct dso_table *t, uint32_t pid, const char *path,
				 const uint8_t *build_id, uint8_t build_id_len,
				 bool *is_new)
{
	struct stat st = {0};
	uint8_t bid[20];
	uint32_t id = 0;
	int fd;

	*is_new = false;
	if (!path || path[0] != '/')
		return 0;
	fd = open_in_root(pid, path);
	if (fd >= 0 && fstat(fd, &st) != 0) {
		close(fd);
		fd = -1;
	}
	if (build_id_len == 0 && fd >= 0 &&
	    elf_read_build_id(fd, bid, &build_id_len) == 0)
		build_id = bid;
	if (build_id_len > 20)
		build_id_len = 20;

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n_dsos; i++) {
		struct dso *d = &t->dsos[i];
		bool same = build_id_len ?
			(d->build_id_len == build_id_len &&
			 !memcmp(d->build_id, build_id, build_id_len)) :
			(d->build_id_len == 0 && fd >= 0 && d->dev == (uint64_t)st.st_dev &&
			 d->ino == (uint64_t)st.st_ino) ||
			(d->build_id_len == 0 && fd < 0 && !strcmp(d->path, path));
		if (same) {
			id = d->dso_id;
			break;
		}
	}
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
		d->path = strdup(path);
		if (!d->path)
			goto out;
		d->dso_id = (uint32_t)++t->n_dsos;
		d->fd = fd;
		fd = -1; /* owned by the table now */
		if (d->fd >= 0 && t->n_dsos > t->max_open_fds) {
			/* keep fd usage bounded; the path is the fallback */
			close(d->fd);
			d->fd = -1;
		}
		d->dev = st.st_dev;
		d->ino = st.st_ino;
		d->build_id_len = build_id_len;
		if (build_id_len)
			memcpy(d->build_id, build_id, build_id_len);
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
