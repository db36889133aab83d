/* The build-id cache of dwarf mode's per-file work (recorder/symbols/unwind_cache.c):
 * an entry read back is exactly what the ELF file gave (so the records
 * written from it are the same bytes); a truncated, corrupted, foreign or
 * linked entry is refused, removed and written again, never trusted (also
 * one whose CRC was forged to match); the directory rules; and the cap
 * evicting the least recently used.  The data comes from this test's own
 * executable, a real ELF file with symbols and .eh_frame. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "inspect/elf_info.h"
#include "frec_crc32c.h"
#include "symbols/unwind_cache.h"
#include "symbols/unwind_writer.h"

#define HDR_SIZE 72 /* struct uwc_hdr */

static char base_dir[1024];

static void rm_rf(const char *path)
{
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", path);
}

static void dir_for(const char *name, char *out, size_t len)
{
	snprintf(out, len, "%s/%s", base_dir, name);
	rm_rf(out);
}

/* The data and key of this executable. */
static struct unwind_file_data self_data;
static struct unwind_cache_key self_key;

static void load_self(void)
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	struct stat st;
	CHECK(fd >= 0);
	CHECK(elf_read_build_id(fd, self_key.build_id, &self_key.build_id_len) == 0);
	CHECK(self_key.build_id_len > 0);
	CHECK(fstat(fd, &st) == 0);
	self_key.file_size = (uint64_t)st.st_size;
	self_key.file_uid = (uint32_t)st.st_uid;
	CHECK(unwind_file_read(fd, self_key.build_id, self_key.build_id_len, &self_data) == 0);
	CHECK(self_data.has_symbols && self_data.nsyms > 10);
	CHECK(self_data.image && self_data.image_len > 64);
	close(fd);
}

static struct unwind_cache_key key_n(unsigned n)
{
	struct unwind_cache_key k = self_key;
	k.build_id[0] ^= (uint8_t)(n + 1);
	return k;
}

static void entry_path(const char *dir, const struct unwind_cache_key *k, char *out, size_t len)
{
	size_t at = (size_t)snprintf(out, len, "%s/", dir);
	for (uint8_t i = 0; i < k->build_id_len; i++)
		at += (size_t)snprintf(out + at, len - at, "%02x", k->build_id[i]);
	snprintf(out + at, len - at, "-%llx-%u.unwind", (unsigned long long)k->file_size,
		 (unsigned)k->file_uid);
}

static int same_data(const struct unwind_file_data *a, const struct unwind_file_data *b)
{
	return a->has_symbols == b->has_symbols && a->stripped == b->stripped &&
	       a->nsyms == b->nsyms && a->strtab_len == b->strtab_len &&
	       a->image_len == b->image_len && !!a->image == !!b->image &&
	       !memcmp(a->syms, b->syms, (size_t)a->nsyms * sizeof(struct fr_dso_sym)) &&
	       !memcmp(a->strtab, b->strtab, a->strtab_len) &&
	       (!a->image || !memcmp(a->image, b->image, a->image_len));
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;
	*len = 0;
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n)
		*len = (size_t)n;
	fclose(f);
	return buf;
}

static void spill(const char *path, const uint8_t *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	if (f) {
		CHECK(fwrite(buf, 1, len, f) == len);
		fclose(f);
	}
}

/* The entry's CRC made right again after a change: what a forger would do. */
static void reseal(uint8_t *buf, size_t len)
{
	memset(buf + 28, 0, 4);
	uint32_t crc = frec_crc32c(0, buf, len);
	memcpy(buf + 28, &crc, 4);
}

static void test_roundtrip(void)
{
	char dir[1200], err[256];
	struct unwind_file_data d;
	struct stat st;

	dir_for("roundtrip/nested/cache", dir, sizeof(dir));
	struct unwind_cache *c = unwind_cache_open(dir, 1ull << 30, err, sizeof(err));
	CHECK(c != NULL);
	if (!c)
		return;
	/* created on demand, readable by nobody else */
	CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
	CHECK(unwind_cache_load(c, &self_key, &d) == 1); /* none yet */
	CHECK(unwind_cache_store(c, &self_key, &self_data) == 0);
	char path[1400];
	entry_path(dir, &self_key, path, sizeof(path));
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
	for (int round = 0; round < 2; round++) {
		CHECK(unwind_cache_load(c, &self_key, &d) == 0);
		CHECK(same_data(&d, &self_data));
		unwind_file_data_free(&d);
	}
	/* the key is the file's build-id, size and owner: another of any misses */
	struct unwind_cache_key k = self_key;
	k.file_size++;
	CHECK(unwind_cache_load(c, &k, &d) == 1);
	k = self_key;
	k.file_uid++;
	CHECK(unwind_cache_load(c, &k, &d) == 1);
	k = self_key;
	k.build_id_len = 0;
	CHECK(unwind_cache_load(c, &k, &d) == 1);
	CHECK(unwind_cache_store(c, &k, &self_data) == -1); /* no build-id: never cached */
	/* a file without symbols or unwind sections is cached too */
	struct unwind_file_data empty = {0};
	k = key_n(7);
	CHECK(unwind_cache_store(c, &k, &empty) == 0);
	CHECK(unwind_cache_load(c, &k, &d) == 0);
	CHECK(!d.has_symbols && !d.image && d.nsyms == 0);
	unwind_file_data_free(&d);
	unwind_cache_close(c);
}

/* Stores a fresh entry, damages it with fn, and checks that it is refused,
 * removed, and written again by the next store. */
static void damaged_case(struct unwind_cache *c, const char *dir, const char *what,
			 void (*fn)(uint8_t *buf, size_t *len, size_t arg), size_t arg)
{
	char path[1400];
	struct unwind_file_data d;
	size_t len;

	entry_path(dir, &self_key, path, sizeof(path));
	CHECK(unwind_cache_store(c, &self_key, &self_data) == 0);
	uint8_t *buf = slurp(path, &len);
	CHECK(buf != NULL);
	if (!buf)
		return;
	fn(buf, &len, arg);
	unlink(path);
	spill(path, buf, len);
	free(buf);
	int rc = unwind_cache_load(c, &self_key, &d);
	if (rc != -1)
		fprintf(stderr, "damage '%s' (%zu) was not refused\n", what, arg);
	CHECK(rc == -1);
	CHECK(access(path, F_OK) != 0); /* removed */
	CHECK(unwind_cache_store(c, &self_key, &self_data) == 0);
	CHECK(unwind_cache_load(c, &self_key, &d) == 0);
	CHECK(same_data(&d, &self_data));
	unwind_file_data_free(&d);
}

static void truncate_to(uint8_t *buf, size_t *len, size_t at)
{
	(void)buf;
	if (at < *len)
		*len = at;
}

static void truncate_by(uint8_t *buf, size_t *len, size_t by)
{
	(void)buf;
	*len -= by;
}

static void append_bytes(uint8_t *buf, size_t *len, size_t n)
{
	(void)buf;
	/* slurp left one byte of room; more would need a realloc */
	if (n == 1) {
		buf[*len] = 0;
		*len += 1;
	}
}

static void flip_at(uint8_t *buf, size_t *len, size_t at)
{
	if (at < *len)
		buf[at] ^= 0x5a;
}

static void flip_from_end(uint8_t *buf, size_t *len, size_t back)
{
	buf[*len - back] ^= 0x01;
}

/* Forged: a name offset past the names, the CRC made to match. */
static void forge_name_off(uint8_t *buf, size_t *len, size_t arg)
{
	(void)arg;
	uint32_t bad = 0xfffffff0u;
	memcpy(buf + HDR_SIZE + 12, &bad, 4);
	reseal(buf, *len);
}

/* Forged: two symbols out of order. */
static void forge_order(uint8_t *buf, size_t *len, size_t arg)
{
	(void)arg;
	uint8_t tmp[16];
	memcpy(tmp, buf + HDR_SIZE, 16);
	memcpy(buf + HDR_SIZE, buf + HDR_SIZE + 16, 16);
	memcpy(buf + HDR_SIZE + 16, tmp, 16);
	reseal(buf, *len);
}

/* Forged: more symbols than the entry holds. */
static void forge_count(uint8_t *buf, size_t *len, size_t arg)
{
	uint32_t n;
	memcpy(&n, buf + 56, 4);
	n += (uint32_t)arg;
	memcpy(buf + 56, &n, 4);
	reseal(buf, *len);
}

/* Forged: an image that is not ELF. */
static void forge_image(uint8_t *buf, size_t *len, size_t arg)
{
	uint32_t image_len;
	(void)arg;
	memcpy(&image_len, buf + 64, 4);
	buf[*len - image_len] = 'X';
	reseal(buf, *len);
}

/* Foreign: another format version, or this file's bytes swapped. */
static void forge_version(uint8_t *buf, size_t *len, size_t version)
{
	uint32_t v = (uint32_t)version;
	memcpy(buf + 8, &v, 4);
	reseal(buf, *len);
}

/* Foreign: bytes of something else altogether. */
static void replace_with_text(uint8_t *buf, size_t *len, size_t arg)
{
	(void)arg;
	const char *text = "not a cache entry\n";
	memcpy(buf, text, strlen(text));
	*len = strlen(text);
}

static void test_damaged(void)
{
	char dir[1200], err[256];
	dir_for("damaged", dir, sizeof(dir));
	struct unwind_cache *c = unwind_cache_open(dir, 1ull << 30, err, sizeof(err));
	CHECK(c != NULL);
	if (!c)
		return;
	size_t image_at = HDR_SIZE + (size_t)self_data.nsyms * 16 +
			  ((self_data.strtab_len + 7u) & ~7u);
	size_t cuts[] = {0, 1, 8, 71, 72, 100, image_at, image_at + 3};
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++)
		damaged_case(c, dir, "truncated at", truncate_to, cuts[i]);
	damaged_case(c, dir, "truncated by", truncate_by, 1);
	damaged_case(c, dir, "one byte appended", append_bytes, 1);
	/* every header field, the first symbol, a name, the image's last byte */
	size_t flips[] = {0, 7, 8, 12, 16, 24, 28, 32, 51, 52, 53, 54, 55, 56, 60, 64, 68,
			  HDR_SIZE, HDR_SIZE + 8, HDR_SIZE + 12,
			  HDR_SIZE + (size_t)self_data.nsyms * 16 + 1, image_at, image_at + 100};
	for (size_t i = 0; i < sizeof(flips) / sizeof(flips[0]); i++)
		damaged_case(c, dir, "byte flipped at", flip_at, flips[i]);
	damaged_case(c, dir, "last byte flipped", flip_from_end, 1);
	damaged_case(c, dir, "forged name offset", forge_name_off, 0);
	damaged_case(c, dir, "forged order", forge_order, 0);
	damaged_case(c, dir, "forged count", forge_count, 1);
	damaged_case(c, dir, "forged count", forge_count, 1u << 27);
	damaged_case(c, dir, "forged image", forge_image, 0);
	damaged_case(c, dir, "other version", forge_version, UNWIND_CACHE_VERSION + 1);
	damaged_case(c, dir, "byte-swapped version", forge_version,
		     __builtin_bswap32(UNWIND_CACHE_VERSION));
	damaged_case(c, dir, "not an entry", replace_with_text, 0);
	unwind_cache_close(c);
}

/* An entry made for one file, found under another's name (copied, renamed):
 * the header names its own key and the load refuses it. */
static void test_foreign_key(void)
{
	char dir[1200], err[256], from[1400], to[1400];
	struct unwind_file_data d;
	dir_for("foreign", dir, sizeof(dir));
	struct unwind_cache *c = unwind_cache_open(dir, 1ull << 30, err, sizeof(err));
	CHECK(c != NULL);
	if (!c)
		return;
	struct unwind_cache_key other = key_n(1);
	CHECK(unwind_cache_store(c, &self_key, &self_data) == 0);
	entry_path(dir, &self_key, from, sizeof(from));
	entry_path(dir, &other, to, sizeof(to));
	CHECK(rename(from, to) == 0);
	CHECK(unwind_cache_load(c, &other, &d) == -1);
	CHECK(access(to, F_OK) != 0);
	unwind_cache_close(c);
}

/* Whatever else stands under an entry's name is never read through, never
 * written through, and never blocks. */
static void test_not_a_plain_entry(void)
{
	char dir[1200], err[256], path[1400], outside[1400];
	struct unwind_file_data d;
	size_t len, len2;
	dir_for("links", dir, sizeof(dir));
	struct unwind_cache *c = unwind_cache_open(dir, 1ull << 30, err, sizeof(err));
	CHECK(c != NULL);
	if (!c)
		return;
	entry_path(dir, &self_key, path, sizeof(path));
	snprintf(outside, sizeof(outside), "%s/outside", base_dir);

	/* a symbolic link to a sound entry elsewhere */
	CHECK(unwind_cache_store(c, &self_key, &self_data) == 0);
	CHECK(rename(path, outside) == 0);
	CHECK(symlink(outside, path) == 0);
	uint8_t *before = slurp(outside, &len);
	CHECK(unwind_cache_load(c, &self_key, &d) == -1);
	struct stat st;
	CHECK(lstat(path, &st) != 0); /* the link is gone ... */
	uint8_t *after = slurp(outside, &len2);
	CHECK(before && after && len == len2 && !memcmp(before, after, len)); /* ... its target intact */
	free(before);
	free(after);
	/* a link planted where the store writes: replaced, the target untouched */
	CHECK(symlink(outside, path) == 0);
	CHECK(unwind_cache_store(c, &self_key, &self_data) == 0);
	CHECK(lstat(path, &st) == 0 && S_ISREG(st.st_mode));
	after = slurp(outside, &len2);
	CHECK(after && len2 == len);
	free(after);

	/* a second hard link: the entry is not the cache's alone */
	unlink(outside);
	CHECK(link(path, outside) == 0);
	CHECK(unwind_cache_load(c, &self_key, &d) == -1);
	unlink(outside);

	/* a FIFO: refused at once (O_NONBLOCK), not waited on */
	CHECK(mkfifo(path, 0600) == 0);
	CHECK(unwind_cache_load(c, &self_key, &d) == -1);
	CHECK(access(path, F_OK) != 0);

	/* a directory: refused, and the store fails rather than writing into it */
	CHECK(mkdir(path, 0700) == 0);
	CHECK(unwind_cache_load(c, &self_key, &d) == -1);
	CHECK(unwind_cache_store(c, &self_key, &self_data) == -1);
	rmdir(path);
	CHECK(unwind_cache_store(c, &self_key, &self_data) == 0);
	CHECK(unwind_cache_load(c, &self_key, &d) == 0);
	unwind_file_data_free(&d);
	unwind_cache_close(c);
}

static void test_dir_rules(void)
{
	char dir[1200], err[256], link_path[1300];
	dir_for("rules", dir, sizeof(dir));
	CHECK(mkdir(dir, 0700) == 0);
	CHECK(chmod(dir, 0755) == 0); /* others could read every file's symbols */
	struct unwind_cache *c = unwind_cache_open(dir, 1ull << 30, err, sizeof(err));
	CHECK(c == NULL);
	CHECK(strstr(err, "chmod 700") != NULL);
	CHECK(chmod(dir, 0700) == 0);
	c = unwind_cache_open(dir, 1ull << 30, err, sizeof(err));
	CHECK(c != NULL);
	unwind_cache_close(c);
	/* a link to a good directory is still a link */
	snprintf(link_path, sizeof(link_path), "%s-link", dir);
	unlink(link_path);
	CHECK(symlink(dir, link_path) == 0);
	CHECK(unwind_cache_open(link_path, 1ull << 30, err, sizeof(err)) == NULL);
	unlink(link_path);
	/* a file is not a directory */
	snprintf(link_path, sizeof(link_path), "%s-file", dir);
	spill(link_path, (const uint8_t *)"x", 1);
	CHECK(unwind_cache_open(link_path, 1ull << 30, err, sizeof(err)) == NULL);
	unlink(link_path);
	CHECK(unwind_cache_open("", 1ull << 30, err, sizeof(err)) == NULL);
}

static void set_mtime(const char *dir, const struct unwind_cache_key *k, time_t t)
{
	char path[1400];
	struct timespec ts[2] = {{t, 0}, {t, 0}};
	entry_path(dir, k, path, sizeof(path));
	CHECK(utimensat(AT_FDCWD, path, ts, 0) == 0);
}

static int present(const char *dir, const struct unwind_cache_key *k)
{
	char path[1400];
	entry_path(dir, k, path, sizeof(path));
	return access(path, F_OK) == 0;
}

static void test_evict(void)
{
	char dir[1200], err[256], path[1400];
	struct unwind_file_data d;
	struct stat st;
	dir_for("evict", dir, sizeof(dir));
	CHECK(mkdir(dir, 0700) == 0);
	/* a temporary file a killed recorder left, and one being written now */
	snprintf(path, sizeof(path), "%s/.tmp-99-0", dir);
	spill(path, (const uint8_t *)"old", 3);
	struct timespec old[2] = {{1000, 0}, {1000, 0}};
	CHECK(utimensat(AT_FDCWD, path, old, 0) == 0);
	snprintf(path, sizeof(path), "%s/.tmp-99-1", dir);
	spill(path, (const uint8_t *)"new", 3);

	/* the size of one entry, then a cap of three and a half */
	struct unwind_cache *c = unwind_cache_open(dir, 1ull << 30, err, sizeof(err));
	struct unwind_cache_key k[6];
	for (unsigned i = 0; i < 6; i++)
		k[i] = key_n(10 + i);
	CHECK(c && unwind_cache_store(c, &k[0], &self_data) == 0);
	entry_path(dir, &k[0], path, sizeof(path));
	CHECK(stat(path, &st) == 0);
	uint64_t one = (uint64_t)st.st_size;
	unwind_cache_close(c);
	snprintf(path, sizeof(path), "%s/.tmp-99-0", dir);
	CHECK(access(path, F_OK) != 0); /* abandoned: removed */
	snprintf(path, sizeof(path), "%s/.tmp-99-1", dir);
	CHECK(access(path, F_OK) == 0); /* maybe someone's: kept */

	c = unwind_cache_open(dir, one * 7 / 2, err, sizeof(err));
	CHECK(c != NULL);
	if (!c)
		return;
	set_mtime(dir, &k[0], 1000);
	for (unsigned i = 1; i < 3; i++) {
		CHECK(unwind_cache_store(c, &k[i], &self_data) == 0);
		set_mtime(dir, &k[i], 1000 + 1000 * (time_t)i);
	}
	CHECK(unwind_cache_evicted(c) == 0);
	CHECK(unwind_cache_store(c, &k[3], &self_data) == 0); /* 4 > 3.5: the oldest goes */
	CHECK(!present(dir, &k[0]) && present(dir, &k[1]) && present(dir, &k[2]) &&
	      present(dir, &k[3]));
	set_mtime(dir, &k[3], 4000);
	/* a hit makes k[1] the most recently used: k[2] goes next */
	CHECK(unwind_cache_load(c, &k[1], &d) == 0);
	unwind_file_data_free(&d);
	CHECK(unwind_cache_store(c, &k[4], &self_data) == 0);
	CHECK(present(dir, &k[1]) && !present(dir, &k[2]) && present(dir, &k[3]) &&
	      present(dir, &k[4]));
	CHECK(unwind_cache_evicted(c) == 2);
	unwind_cache_close(c);
	/* an entry larger than the whole cap is not written */
	c = unwind_cache_open(dir, one / 2, err, sizeof(err));
	CHECK(c && unwind_cache_store(c, &k[5], &self_data) == -1);
	CHECK(!present(dir, &k[5]));
	unwind_cache_close(c);
}

int main(void)
{
	const char *tmp = getenv("FLIGHTREC_TEST_TMP");
	snprintf(base_dir, sizeof(base_dir), "%s/unwind_cache", tmp && *tmp ? tmp : "/tmp");
	rm_rf(base_dir);
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", base_dir);
	CHECK(system(cmd) == 0);
	umask(022);
	load_self();
	test_roundtrip();
	test_damaged();
	test_foreign_key();
	test_not_a_plain_entry();
	test_dir_rules();
	test_evict();
	unwind_file_data_free(&self_data);
	rm_rf(base_dir);
	return check_finish();
}
