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
#include <sys/stat.h>

struct dso {
	uint32_t dso_id;     /* 1.. */
	int fd;              /* -1 when the file could not be opened */
	char *path;          /* as the process sees it */
	uint8_t build_id[20];
	uint8_t build_id_len;
	bool has_inode;      /* dev, ino are known */
	uint64_t dev, ino;   /* identity when there is no build-id: the kernel's
				(mapping record, maps line), else the opened file's */
	uint32_t pid;        /* the first process seen mapping it */
};

/* One mapping of a file, as the kernel reported it: the name, and what
 * tells the mapped file from whatever that name points to by the time the
 * recorder opens it. */
struct mapped_file {
	uint32_t pid;
	const char *path;         /* as the process sees it */
	uint64_t start, end;      /* the mapping, for /proc/PID/map_files; end 0: unknown */
	const uint8_t *build_id;  /* the kernel's (perf mmap2), NULL when none */
	uint8_t build_id_len;
	bool has_inode;           /* dev, ino given (maps lines, mmap2 without build-id) */
	uint64_t dev;             /* makedev(major, minor) */
	uint64_t ino;
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

/* Finds or adds the DSO of the file m maps.  Returns the dso_id, or 0 for
 * anonymous memory (path not absolute, e.g. "//anon", "[vdso]").
 * A new file is opened with dso_open_mapped, so the DSO's fd (and the
 * symbols and unwind data read from it) is the mapped file or none. */
uint32_t dso_table_lookup_or_add(struct dso_table *t, const struct mapped_file *m, bool *is_new);

/* Opens the file m maps, read-only, in a way the mapping process cannot
 * redirect (it runs as another user; the recorder as root):
 *   1. /proc/PID/map_files/START-END, the kernel's own reference to the
 *      mapped file, whatever its path names now (renamed, deleted, a link);
 *   2. else the path inside the process's root (/proc/PID/root), then in
 *      the recorder's, following no symbolic link, and only when the file
 *      found is the one the kernel reported (same build-id, else same
 *      device and inode; neither known: refused).
 * Only regular files are opened (see safe_open.h).  An fd with *st filled,
 * or -1. */
int dso_open_mapped(const struct mapped_file *m, struct stat *st);

/* An fd to d's file again, by step 2 above (its fd was closed to bound the
 * number open); -1 when it is gone or is no longer the same file. */
int dso_table_reopen(const struct dso *d);

void dso_table_add_mapping(struct dso_table *t, const struct mapping *m);

/* Drops the mappings of pids (n of them; sorted here), processes that have
 * exited: the table holds the mappings of the live processes only, so a
 * fork's copy and a stack's lookup cost what the live ones map.  The files
 * stay (their symbols and unwind data serve the next process mapping them). */
void dso_table_forget_pids(struct dso_table *t, uint32_t *pids, size_t n);

/* Whether pid's latest mapping at m->start is m already (same file, range
 * and offset): a library mapped again where it was (dlopen after dlclose). */
bool dso_table_has_mapping(struct dso_table *t, const struct mapping *m);

/* Copies the latest mapping of pid that covers addr into *out; false when
 * none does.  A scan: it runs once per new stack, not per event. */
bool dso_table_find_mapping_locked(struct dso_table *t, uint32_t pid, uint64_t addr,
				   struct mapping *out);

const struct dso *dso_table_get(const struct dso_table *t, uint32_t dso_id);
/* The path of dso_id copied under the lock (for threads other than the one
 * adding files); false when unknown. */
bool dso_table_path(struct dso_table *t, uint32_t dso_id, char *buf, size_t len);

#endif
