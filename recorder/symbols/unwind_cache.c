/* The build-id cache of --stack dwarf's per-file work (see unwind_cache.h).
 *
 * An entry, BUILDID-SIZE-UID.unwind, host byte order (a foreign host's
 * entry fails the version check, which reads differently swapped):
 *
 *   struct uwc_hdr (72 bytes)
 *   nsyms x struct fr_dso_sym     as in FR_REC_DSO (name_off into strtab)
 *   strtab_len bytes of names     NUL-terminated, then zeros to 8
 *   image_len bytes               the reduced ELF image of FR_REC_UNWIND
 *
 * crc32c covers the whole entry with that field zero.  The parser below
 * checks every field and length before it hands out a pointer, like
 * format/reader.c: the directory is the recorder's own, but a disk, a crash
 * during a write elsewhere, or an older flightrec can leave anything there. */
#include "symbols/unwind_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "inspect/elf_info.h"
#include "frec_crc32c.h"

#define UWC_MAGIC "FRUNWIND"
#define UWC_SUFFIX ".unwind"
#define UWC_TMP_PREFIX ".tmp-"
#define UWC_NAME_MAX 96
#define UWC_SYMS_MAX (1u << 26)       /* nsyms x 16 bytes stays under 1 GiB */
#define UWC_BYTES_MAX (1u << 30)      /* strtab, image: a record's limit */
#define UWC_ENTRY_MAX (3ull << 30)
#define UWC_TMP_STALE_S 600           /* a temporary file this old was abandoned */
#define UWC_FREE_MIN (256ull << 20)   /* free space an entry must leave ... */
#define UWC_FREE_PERCENT 5            /* ... and this share of the file system */

enum {
	UWC_HAS_SYMBOLS = 1,
	UWC_HAS_IMAGE = 2,
	UWC_DEBUG_FILE = 4, /* the debug file was there when the entry was made */
};

struct uwc_hdr {
	char magic[8];          /* "FRUNWIND" */
	uint32_t version;       /* UNWIND_CACHE_VERSION */
	uint32_t header_size;   /* sizeof(struct uwc_hdr) */
	uint64_t file_size;     /* the key: the ELF file's size ... */
	uint32_t file_uid;      /* ... and owner ... */
	uint32_t crc32c;        /* of the whole entry, this field 0 */
	uint8_t build_id[20];   /* ... and build-id */
	uint8_t build_id_len;
	uint8_t flags;          /* UWC_* */
	uint8_t stripped;       /* unwind_file_data.stripped: 0, 1, 2 */
	uint8_t _pad;
	uint32_t nsyms;
	uint32_t strtab_len;
	uint32_t image_len;
	uint32_t _pad2;
};
_Static_assert(sizeof(struct uwc_hdr) == 72, "uwc_hdr");

struct unwind_cache {
	pthread_mutex_t lock;
	int dirfd;
	char *dir;
	uid_t uid;
	uint64_t max_bytes;
	bool scanned;          /* total_bytes is known */
	uint64_t total_bytes;  /* of the entries, as of the last scan plus stores */
	uint64_t evicted;
	unsigned tmp_seq;
};

static uint64_t align8(uint64_t x)
{
	return (x + 7) & ~7ull;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void entry_name(const struct unwind_cache_key *k, char name[UWC_NAME_MAX])
{
	size_t at = 0;
	for (uint8_t i = 0; i < k->build_id_len && i < 20; i++)
		at += (size_t)snprintf(name + at, UWC_NAME_MAX - at, "%02x", k->build_id[i]);
	snprintf(name + at, UWC_NAME_MAX - at, "-%llx-%u" UWC_SUFFIX,
		 (unsigned long long)k->file_size, (unsigned)k->file_uid);
}

/* Whether ELF_DEBUG_ROOT holds a debug file for this build-id now: the
 * symbols of a stripped file depend on it. */
static bool debug_file_present(const uint8_t *bid, uint8_t bid_len)
{
	char path[ELF_DEBUG_PATH_MAX];
	struct stat st;
	if (!bid_len)
		return false;
	elf_debug_path(bid, bid_len, path);
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* mkdir -p: the missing parents 0755 (like /var/cache), dir itself 0700
 * (umask can only take bits away).  0, or -1 with errno. */
static int make_dirs(const char *dir)
{
	char path[4096];
	size_t len = strlen(dir);
	if (len >= sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(path, dir, len + 1);
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(path, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(path, 0700) && errno != EEXIST ? -1 : 0;
}

struct unwind_cache *unwind_cache_open(const char *dir, uint64_t max_bytes, char *err,
				       size_t err_len)
{
	struct stat st;
	int fd;

	if (!dir || !*dir) {
		snprintf(err, err_len, "no directory given");
		return NULL;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		if (make_dirs(dir)) {
			snprintf(err, err_len, "cannot create it: %s", strerror(errno));
			return NULL;
		}
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0) {
		if (errno == ELOOP || errno == ENOTDIR)
			snprintf(err, err_len, "not a directory (a symbolic link is never followed)");
		else
			snprintf(err, err_len, "cannot open it: %s", strerror(errno));
		return NULL;
	}
	/* The entries hold the symbols of every user's files, and the recorder
	 * (root) trusts them: nobody else may read the directory or plant an
	 * entry in it.  A directory that allows it is left alone, not fixed:
	 * someone chose its mode. */
	if (fstat(fd, &st)) {
		snprintf(err, err_len, "cannot stat it: %s", strerror(errno));
		close(fd);
		return NULL;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 077)) {
		snprintf(err, err_len, "owner uid %u, mode %04o; the cache needs a directory of "
			 "uid %u that nobody else can open (chmod 700)", (unsigned)st.st_uid,
			 (unsigned)(st.st_mode & 07777), (unsigned)geteuid());
		close(fd);
		return NULL;
	}
	struct unwind_cache *c = calloc(1, sizeof(*c));
	if (!c || !(c->dir = strdup(dir))) {
		free(c);
		close(fd);
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	c->dirfd = fd;
	c->uid = geteuid();
	c->max_bytes = max_bytes;
	return c;
}

void unwind_cache_close(struct unwind_cache *c)
{
	if (!c)
		return;
	close(c->dirfd);
	pthread_mutex_destroy(&c->lock);
	free(c->dir);
	free(c);
}

const char *unwind_cache_dir(const struct unwind_cache *c)
{
	return c->dir;
}

uint64_t unwind_cache_evicted(const struct unwind_cache *c)
{
	return c->evicted;
}

/* ---- reading an entry ------------------------------------------------- */

/* d from the entry in buf (size bytes) when it is sound and made from k's
 * file; d points into buf.  0, or -1. */
static int parse_entry(const uint8_t *buf, uint64_t size, const struct unwind_cache_key *k,
		       struct unwind_file_data *d)
{
	struct uwc_hdr h;

	if (size < sizeof(h))
		return -1;
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, UWC_MAGIC, 8) || h.version != UNWIND_CACHE_VERSION ||
	    h.header_size != sizeof(h) || h._pad || h._pad2)
		return -1;
	if (h.file_size != k->file_size || h.file_uid != k->file_uid ||
	    h.build_id_len != k->build_id_len || h.build_id_len > 20 ||
	    memcmp(h.build_id, k->build_id, h.build_id_len))
		return -1;
	if ((h.flags & ~(UWC_HAS_SYMBOLS | UWC_HAS_IMAGE | UWC_DEBUG_FILE)) || h.stripped > 2)
		return -1;
	bool has_syms = h.flags & UWC_HAS_SYMBOLS, has_image = h.flags & UWC_HAS_IMAGE;
	if ((!has_syms && (h.nsyms || h.strtab_len)) || (has_image != (h.image_len > 0)))
		return -1;
	if (h.nsyms >= UWC_SYMS_MAX || h.strtab_len >= UWC_BYTES_MAX ||
	    h.image_len >= UWC_BYTES_MAX || (h.nsyms > 0) != (h.strtab_len > 0))
		return -1;
	/* every length against the entry's size before any of it is read;
	 * each term is under 2^30, so the sum cannot wrap */
	uint64_t syms_at = sizeof(h);
	uint64_t str_at = syms_at + (uint64_t)h.nsyms * sizeof(struct fr_dso_sym);
	uint64_t image_at = str_at + align8(h.strtab_len);
	if (image_at + h.image_len != size)
		return -1;
	struct uwc_hdr zero = h;
	zero.crc32c = 0;
	uint32_t crc = frec_crc32c(0, &zero, sizeof(zero));
	crc = frec_crc32c(crc, buf + sizeof(h), (size_t)(size - sizeof(h)));
	if (crc != h.crc32c)
		return -1;
	/* what the records will carry: sound even if the CRC were forged */
	const char *strtab = (const char *)buf + str_at;
	if (h.strtab_len && strtab[h.strtab_len - 1])
		return -1;
	struct fr_dso_sym sym, prev = {0};
	for (uint32_t i = 0; i < h.nsyms; i++) {
		memcpy(&sym, buf + syms_at + (uint64_t)i * sizeof(sym), sizeof(sym));
		if (sym.name_off >= h.strtab_len || (i && sym.offset <= prev.offset))
			return -1;
		prev = sym;
	}
	if (has_image && (h.image_len < 4 || memcmp(buf + image_at, "\177ELF", 4)))
		return -1;
	/* a stripped file's symbols came from its debug file, or could not: the
	 * entry holds while that is still so */
	if (h.stripped && debug_file_present(k->build_id, k->build_id_len) !=
	    !!(h.flags & UWC_DEBUG_FILE))
		return -1;

	memset(d, 0, sizeof(*d));
	d->has_symbols = has_syms;
	d->stripped = h.stripped;
	d->nsyms = h.nsyms;
	d->syms = (const struct fr_dso_sym *)(buf + syms_at); /* 8-aligned: malloc'd + 72 */
	d->strtab = strtab;
	d->strtab_len = h.strtab_len;
	d->image = has_image ? buf + image_at : NULL;
	d->image_len = h.image_len;
	return 0;
}

static int read_all(int fd, uint8_t *buf, uint64_t size)
{
	uint64_t done = 0;
	while (done < size) {
		ssize_t n = pread(fd, buf + done, (size_t)(size - done), (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (uint64_t)n;
	}
	return 0;
}

int unwind_cache_load(struct unwind_cache *c, const struct unwind_cache_key *k,
		      struct unwind_file_data *d)
{
	char name[UWC_NAME_MAX];
	struct stat st;
	uint8_t *buf = NULL;
	int rc = -1;

	memset(d, 0, sizeof(*d));
	if (!k->build_id_len || k->build_id_len > 20)
		return 1;
	entry_name(k, name);
	pthread_mutex_lock(&c->lock);
	/* O_NONBLOCK: whatever is under the name, opening it never waits */
	int fd = openat(c->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		pthread_mutex_unlock(&c->lock);
		return 1;
	}
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != c->uid ||
	    st.st_nlink != 1 || st.st_size < (off_t)sizeof(struct uwc_hdr) ||
	    (uint64_t)st.st_size > UWC_ENTRY_MAX || (uint64_t)st.st_size > c->max_bytes)
		goto out;
	buf = malloc((size_t)st.st_size);
	if (!buf || read_all(fd, buf, (uint64_t)st.st_size) ||
	    parse_entry(buf, (uint64_t)st.st_size, k, d))
		goto out;
	d->owned[0] = buf;
	buf = NULL;
	/* least recently used goes first when the cap is reached */
	futimens(fd, NULL);
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	if (rc) {
		/* never trusted, never kept: the store that follows rewrites it
		 * (a directory under the name stays, and the store then fails) */
		unlinkat(c->dirfd, name, 0);
		memset(d, 0, sizeof(*d));
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* ---- writing, and the cap --------------------------------------------- */

struct scanned_entry {
	struct timespec mtime;
	uint64_t size;
	char name[UWC_NAME_MAX];
};

static int by_mtime(const void *a, const void *b)
{
	const struct scanned_entry *x = a, *y = b;
	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n > m && !strcmp(s + n - m, suffix);
}

/* Totals the entries (removing temporary files abandoned by a killed
 * recorder) and, past the cap, removes the least recently used down to
 * 90% of it, so the next stores do not scan again.  Called with the lock. */
static void scan_and_evict(struct unwind_cache *c)
{
	struct scanned_entry *list = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	time_t now = time(NULL);
	int fd = dup(c->dirfd);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!dir) {
		if (fd >= 0)
			close(fd);
		return;
	}
	rewinddir(dir); /* the dup shares its offset with c->dirfd */
	while ((de = readdir(dir))) {
		struct stat st;
		bool tmp = !strncmp(de->d_name, UWC_TMP_PREFIX, strlen(UWC_TMP_PREFIX));
		if ((!tmp && !has_suffix(de->d_name, UWC_SUFFIX)) ||
		    strlen(de->d_name) >= UWC_NAME_MAX ||
		    fstatat(c->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (tmp) {
			if (now - st.st_mtim.tv_sec > UWC_TMP_STALE_S)
				unlinkat(c->dirfd, de->d_name, 0);
			continue;
		}
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			struct scanned_entry *l = realloc(list, ncap * sizeof(*l));
			if (!l)
				break;
			list = l;
			cap = ncap;
		}
		list[n].mtime = st.st_mtim;
		list[n].size = (uint64_t)st.st_size;
		memcpy(list[n].name, de->d_name, strlen(de->d_name) + 1); /* < UWC_NAME_MAX */
		total += (uint64_t)st.st_size;
		n++;
	}
	closedir(dir);
	if (total > c->max_bytes && n) {
		uint64_t low = c->max_bytes / 10 * 9;
		qsort(list, n, sizeof(*list), by_mtime);
		for (size_t i = 0; i < n && total > low; i++) {
			if (unlinkat(c->dirfd, list[i].name, 0) == 0 || errno == ENOENT) {
				total -= list[i].size;
				c->evicted++;
			}
		}
	}
	free(list);
	c->total_bytes = total;
	c->scanned = true;
}

static int write_all(int fd, const void *p, uint64_t len)
{
	const uint8_t *b = p;
	while (len) {
		ssize_t n = write(fd, b, len > (1u << 30) ? (1u << 30) : (size_t)len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		b += n;
		len -= (uint64_t)n;
	}
	return 0;
}

/* Whether an entry of size bytes leaves the file system room enough. */
static bool room_for(int dirfd, uint64_t size)
{
	struct statvfs vfs;
	if (fstatvfs(dirfd, &vfs))
		return false;
	uint64_t avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	uint64_t fs = (uint64_t)vfs.f_blocks * vfs.f_frsize;
	uint64_t keep = fs / 100 * UWC_FREE_PERCENT;
	if (keep < UWC_FREE_MIN)
		keep = UWC_FREE_MIN;
	return avail > size && avail - size >= keep;
}

static int store_locked(struct unwind_cache *c, const struct unwind_cache_key *k,
			const struct unwind_file_data *d, bool debug_file)
{
	static const uint8_t zeros[8];
	char name[UWC_NAME_MAX], tmp[64];
	struct uwc_hdr h = {0};

	if (!k->build_id_len || k->build_id_len > 20 || d->nsyms >= UWC_SYMS_MAX ||
	    d->strtab_len >= UWC_BYTES_MAX || d->image_len >= UWC_BYTES_MAX ||
	    (d->nsyms > 0) != (d->strtab_len > 0) || (d->image && d->image_len < 4))
		return -1;
	memcpy(h.magic, UWC_MAGIC, 8);
	h.version = UNWIND_CACHE_VERSION;
	h.header_size = sizeof(h);
	h.file_size = k->file_size;
	h.file_uid = k->file_uid;
	memcpy(h.build_id, k->build_id, k->build_id_len);
	h.build_id_len = k->build_id_len;
	h.flags = (uint8_t)((d->has_symbols ? UWC_HAS_SYMBOLS : 0) |
			    (d->image ? UWC_HAS_IMAGE : 0) | (debug_file ? UWC_DEBUG_FILE : 0));
	h.stripped = d->stripped;
	h.nsyms = d->has_symbols ? d->nsyms : 0;
	h.strtab_len = d->has_symbols ? d->strtab_len : 0;
	h.image_len = d->image ? d->image_len : 0;
	uint64_t syms_len = (uint64_t)h.nsyms * sizeof(struct fr_dso_sym);
	uint64_t str_pad = align8(h.strtab_len) - h.strtab_len;
	uint64_t size = sizeof(h) + syms_len + h.strtab_len + str_pad + h.image_len;
	if (size > c->max_bytes || !room_for(c->dirfd, size))
		return -1;
	uint32_t crc = frec_crc32c(0, &h, sizeof(h));
	crc = frec_crc32c(crc, d->syms, (size_t)syms_len);
	crc = frec_crc32c(crc, d->strtab, h.strtab_len);
	crc = frec_crc32c(crc, zeros, (size_t)str_pad);
	crc = frec_crc32c(crc, d->image, h.image_len);
	h.crc32c = crc;

	entry_name(k, name);
	snprintf(tmp, sizeof(tmp), UWC_TMP_PREFIX "%d-%u", (int)getpid(), c->tmp_seq++);
	/* O_EXCL|O_NOFOLLOW: a name that exists, link or not, is never written through */
	int fd = openat(c->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	int rc = write_all(fd, &h, sizeof(h)) || write_all(fd, d->syms, syms_len) ||
		 write_all(fd, d->strtab, h.strtab_len) || write_all(fd, zeros, str_pad) ||
		 write_all(fd, d->image, h.image_len) ? -1 : 0;
	if (close(fd))
		rc = -1;
	/* no fsync: a torn entry after a crash fails its checks and is rewritten */
	if (rc || renameat(c->dirfd, tmp, c->dirfd, name)) {
		unlinkat(c->dirfd, tmp, 0);
		return -1;
	}
	if (!c->scanned)
		scan_and_evict(c); /* counts the new entry too */
	else if ((c->total_bytes += size) > c->max_bytes)
		scan_and_evict(c);
	return 0;
}

int unwind_cache_store(struct unwind_cache *c, const struct unwind_cache_key *k,
		       const struct unwind_file_data *d)
{
	bool debug_file = d->stripped && debug_file_present(k->build_id, k->build_id_len);
	pthread_mutex_lock(&c->lock);
	int rc = store_locked(c, k, d, debug_file);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* ---- the recorder's entry point --------------------------------------- */

static void copy_image(const struct unwind_file_data *d, uint8_t **image, size_t *image_len)
{
	if (!image || !d->image || !(*image = malloc(d->image_len)))
		return;
	memcpy(*image, d->image, d->image_len);
	*image_len = d->image_len;
}

void unwind_cache_write_file(struct unwind_cache *c, struct frec_builder *b, uint32_t dso_id,
			     int fd, const char *path, const uint8_t *bid, uint8_t bid_len,
			     struct unwind_writer_stats *st, uint8_t **image, size_t *image_len)
{
	uint64_t t0 = thread_cpu_ns();
	struct unwind_cache_key k = {0};
	struct unwind_file_data d;
	struct stat sb;
	bool keyed = false;

	if (image)
		*image = NULL;
	st->files_seen++;
	if (fd < 0)
		goto out;
	if (!bid_len)
		st->no_build_id++;
	else if (c && fstat(fd, &sb) == 0) {
		k.build_id_len = bid_len > 20 ? 20 : bid_len;
		memcpy(k.build_id, bid, k.build_id_len);
		k.file_size = (uint64_t)sb.st_size;
		k.file_uid = (uint32_t)sb.st_uid;
		keyed = true;
	}
	if (keyed) {
		int rc = unwind_cache_load(c, &k, &d);
		if (rc == 0) {
			unwind_file_emit(b, dso_id, path, bid, bid_len, &d, st);
			copy_image(&d, image, image_len);
			unwind_file_data_free(&d);
			st->cache_hits++;
			goto out;
		}
		if (rc < 0)
			st->cache_rejected++;
	}
	/* the debug file is looked at before the read: one installed meanwhile
	 * makes the entry stale rather than wrongly fresh */
	bool debug_file = keyed && debug_file_present(k.build_id, k.build_id_len);
	if (unwind_file_read(fd, bid, bid_len, &d))
		goto out;
	unwind_file_emit(b, dso_id, path, bid, bid_len, &d, st);
	if (keyed) {
		pthread_mutex_lock(&c->lock);
		if (store_locked(c, &k, &d, d.stripped && debug_file) == 0)
			st->cache_stored++;
		pthread_mutex_unlock(&c->lock);
	}
	copy_image(&d, image, image_len);
	unwind_file_data_free(&d);
out:
	st->file_cpu_ns += thread_cpu_ns() - t0;
}
