/* The build-id cache of --stack dwarf's per-file work.  Reading a file's
 * symbols and copying its unwind sections (unwind_writer.h) is the
 * recorder's ELF work at attach: 314 files and 185,000 symbols for a
 * PyTorch process.  The same files come back in every recording of the
 * node's jobs, so the result is kept, one file per entry, in a directory
 * only the recorder's user can read (default /var/cache/flightrec, mode
 * 0700, created on demand; --cache-dir or FLIGHTREC_CACHE_DIR choose another), and the next recording writes the same records
 * from it without opening the ELF file's sections.
 *
 * An entry is named and checked by the file's build-id, its size and its
 * owner (BUILDID-SIZE-UID.unwind):
 *   - size: a stripped copy keeps its unstripped original's build-id but
 *     not its symbols or .debug_frame;
 *   - owner: a user who crafts a file with another file's build-id and
 *     size only ever reads, or writes, entries made from their own files;
 *   - a stripped file's entry says whether its debug file (ELF_DEBUG_ROOT)
 *     was there; installing or removing one makes the entry stale.
 * Files without a build-id are never cached.
 *
 * Rules: entries are written under a temporary name and renamed (a reader
 * sees a whole entry or none), opened with O_NOFOLLOW, never through a
 * symbolic link, and read back with every length checked against the
 * entry's size and a CRC-32C over all of it: a damaged, truncated, foreign
 * or stale entry is ignored, removed and written again from the ELF file,
 * never trusted.  The entries' total size is capped (default 2 GiB): past
 * it the least recently used are removed (a hit refreshes an entry's
 * mtime) down to 90% of the cap.  An entry is not written when it would
 * leave its file system with less than 5% or 256 MiB free: a cache must
 * never be what fills the disk a trace is written to.
 *
 * Not for: the trace's bytes, which are the same with or without the cache
 * (unwind_file_emit writes both), nor fp mode's symbols (sym_collector.c),
 * which are chosen by the addresses recorded. */
#ifndef FLIGHTREC_UNWIND_CACHE_H
#define FLIGHTREC_UNWIND_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "symbols/unwind_writer.h"

#define UNWIND_CACHE_DEFAULT_DIR "/var/cache/flightrec"
#define UNWIND_CACHE_DEFAULT_MAX (2ull << 30)

/* Bumped whenever what unwind_file_read derives from a file changes (a
 * symbol rule, the image's layout): older entries are then stale. */
#define UNWIND_CACHE_VERSION 1

struct unwind_cache;

/* What an entry is made from. */
struct unwind_cache_key {
	uint8_t build_id[20];
	uint8_t build_id_len;   /* 1..20 */
	uint64_t file_size;
	uint32_t file_uid;
};

/* Opens the cache in dir, creating dir (mode 0700; missing parents 0755)
 * when missing.  dir must be a directory of the recorder's user, not a
 * symbolic link, and writable by nobody else; the reason it is not usable
 * goes to err.  max_bytes: the cap on the entries' total size. */
struct unwind_cache *unwind_cache_open(const char *dir, uint64_t max_bytes, char *err,
				       size_t err_len);
void unwind_cache_close(struct unwind_cache *c);
const char *unwind_cache_dir(const struct unwind_cache *c);

/* 0 and d (free with unwind_file_data_free) from k's entry; 1 when there
 * is none; -1 when there was one but it was damaged, foreign or stale (it is
 * removed). */
int unwind_cache_load(struct unwind_cache *c, const struct unwind_cache_key *k,
		      struct unwind_file_data *d);
/* Writes k's entry (replacing any), then evicts past the cap.  0, or -1
 * when it was not written (disk, the cap). */
int unwind_cache_store(struct unwind_cache *c, const struct unwind_cache_key *k,
		       const struct unwind_file_data *d);
/* Entries removed by the cap so far. */
uint64_t unwind_cache_evicted(const struct unwind_cache *c);

/* unwind_write_file through the cache: a file with a build-id is written
 * from its entry when there is a sound one, else read, written and cached.
 * c may be NULL (--no-cache, or no usable directory).  image, when not
 * NULL, gets a malloc'd copy of the unwind image written (*image_len its
 * bytes), or NULL: the sparse-stack planner unwinds with the same bytes
 * without reducing the file a second time. */
void unwind_cache_write_file(struct unwind_cache *c, struct frec_builder *b, uint32_t dso_id,
			     int fd, const char *path, const uint8_t *build_id,
			     uint8_t build_id_len, struct unwind_writer_stats *st,
			     uint8_t **image, size_t *image_len);

#endif
