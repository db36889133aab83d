/* The files (DSOs) traced processes map executable, and their mappings.
 * Filled by the tracking thread while recording; read at the end by the
 * symbol writer.  An fd to each file is kept open from the moment it is first
 * seen, so symbols can be read at the end even when the process has exited
 * or the file was replaced or deleted meanwhile. */
#ifndef FLIGHTREC_DSO_TABLE_H
#define FLIGHTREC_DSO_TABLE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dso {
	uint32_t dso_id;     /* 1.. */
	int fd;              /* -1 when the file could not be opened */
	char *path;          /* as the process sees it */
	uint8_t build_id[20];
	uint8_t build_id_len;
	uint64_t dev, ino;   /* identity when there is no build-id */
};

struct mapping {
	uint32_t pid;
	uint32_t dso_id;     /* 0: anonymous or unreadable */
	uint64_t start, end, pgoff;
	uint64_t ts_ns;
};

struct dso_table {
	pthread_mutex_t lock;
	struct dso *dsos;    /* index dso_id-1 */
	size_t n_dsos, cap_dsos;
	struct mapping *maps;
	size_t n_maps, cap_maps;
	unsigned max_open_fds;
};

void dso_table_init(struct dso_table *t);
void dso_table_destroy(struct dso_table *t);

/* Finds or adds the DSO for `path` as mapped by pid.  build_id may be NULL.
 * Opens the file through /proc/PID/root so paths inside containers resolve
 * in the container's own root.  Returns the dso_id, or 0 for anonymous
 * memory (path not absolute, e.g. "//anon", "[vdso]"). */
uint32_t dso_table_lookup_or_add(struct dso_table *t, uint32_t pid, const char *path,
				 const uint8_t *build_id, uint8_t build_id_len,
				 bool *is_new);

void dso_table_add_mapping(struct dso_table *t, const struct mapping *m);

/* Copies the latest mapping of pid that covers addr into *out; false when
 * none does.  A scan: it runs once per new stack, not per event. */
bool dso_table_find_mapping_locked(struct dso_table *t, uint32_t pid, uint64_t addr,
				   struct mapping *out);

const struct dso *dso_table_get(const struct dso_table *t, uint32_t dso_id);
/* The path of dso_id copied under the lock (for threads other than the one
 * adding files); false when unknown. */
bool dso_table_path(struct dso_table *t, uint32_t dso_id, char *buf, size_t len);

#endif
