/* How the recorder opens the files traced processes map
 * (recorder/symbols/dso_table.c dso_open_mapped, recorder/inspect/safe_open.c), against a
 * process that swaps the mapped file's name for something else after
 * mapping it: a symbolic link to a file it cannot read, another regular
 * file, a FIFO, a directory link in the middle of the path.  The recorder
 * runs as root and writes what it reads into a trace the user owns, so it
 * must open the mapped file or nothing.
 *
 * The test maps a file itself and plays both sides.  As root (CI) the
 * kernel's reference /proc/self/map_files/ is open to it and the mapped
 * file is found whatever its name became; without CAP_SYS_ADMIN only the
 * name is left and a swapped name must give nothing. */
#include "check.h"
#include "elf_craft.h"

#include "symbols/dso_table.h"
#include "inspect/elf_info.h"
#include "inspect/proc_maps.h"
#include "inspect/safe_open.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

static char tmp_dir[PATH_MAX];
static const uint8_t BID_A[20] = {0xaa, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19};
static const uint8_t BID_B[20] = {0xbb, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19};

static void path_of(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", tmp_dir, name);
}

static void write_elf(const char *name, const char *func, const uint8_t bid[20], mode_t mode)
{
	char path[PATH_MAX + 64];
	struct craft_opts o = {.funcs = {func}};
	memcpy(o.build_id, bid, 20);
	size_t len;
	uint8_t *d = craft_elf(&o, &len);
	path_of(path, sizeof(path), name);
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	CHECK(fd >= 0 && write(fd, d, len) == (ssize_t)len);
	if (fd >= 0)
		close(fd);
	free(d);
}

/* The mapping at addr as /proc/self/maps reports it. */
static int maps_entry(void *addr, struct mapped_file *m, char *path, size_t path_len)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int found = -1;
	while (f && (n = getline(&line, &cap, f)) > 0) {
		struct proc_maps_entry e;
		if (proc_maps_parse_line(line, (size_t)n, &e) || e.start != (uint64_t)(uintptr_t)addr ||
		    e.path_len >= path_len)
			continue;
		memcpy(path, e.path, e.path_len);
		path[e.path_len] = 0;
		*m = (struct mapped_file){
			.pid = (uint32_t)getpid(), .path = path, .start = e.start, .end = e.end,
			.has_inode = true, .dev = makedev(e.dev_major, e.dev_minor), .ino = e.ino};
		found = 0;
		break;
	}
	free(line);
	if (f)
		fclose(f);
	return found;
}

/* 1 the fd is the file with inode ino, 0 another file, -1 no fd */
static int fd_is(int fd, ino_t ino)
{
	struct stat st;
	if (fd < 0)
		return -1;
	int same = fstat(fd, &st) == 0 && st.st_ino == ino;
	close(fd);
	return same;
}

static bool can_use_map_files(void *addr, size_t len)
{
	char p[128];
	snprintf(p, sizeof(p), "/proc/self/map_files/%lx-%lx", (unsigned long)(uintptr_t)addr,
		 (unsigned long)(uintptr_t)addr + len);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

static void test_safe_open(void)
{
	char reg[PATH_MAX + 64], lnk[PATH_MAX + 64], fifo[PATH_MAX + 64];
	struct stat st;
	path_of(reg, sizeof(reg), "plain");
	path_of(lnk, sizeof(lnk), "plain.link");
	path_of(fifo, sizeof(fifo), "plain.fifo");
	int fd = open(reg, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0);
	close(fd);
	CHECK(symlink(reg, lnk) == 0);
	CHECK(mkfifo(fifo, 0644) == 0);

	fd = safe_open_regular(AT_FDCWD, reg, SAFE_OPEN_NOFOLLOW, &st);
	CHECK(fd >= 0 && S_ISREG(st.st_mode));
	if (fd >= 0)
		close(fd);
	CHECK(safe_open_regular(AT_FDCWD, lnk, SAFE_OPEN_NOFOLLOW, &st) < 0);
	fd = safe_open_regular(AT_FDCWD, lnk, 0, &st); /* links followed when asked */
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	/* a FIFO and a device: refused without being opened (the FIFO would
	 * block this test forever) */
	errno = 0;
	CHECK(safe_open_regular(AT_FDCWD, fifo, 0, &st) < 0 && errno == EINVAL);
	CHECK(safe_open_regular(AT_FDCWD, "/dev/null", 0, &st) < 0 && errno == EINVAL);
	CHECK(safe_open_regular(AT_FDCWD, tmp_dir, 0, &st) < 0);

	/* in a root: an absolute link resolves inside it, not in ours */
	int root = open(tmp_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	char abs_link[PATH_MAX + 64];
	path_of(abs_link, sizeof(abs_link), "abs.link");
	CHECK(symlink("/plain", abs_link) == 0);
	fd = safe_open_regular(root, "/plain", SAFE_OPEN_IN_ROOT | SAFE_OPEN_NOFOLLOW, &st);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	fd = safe_open_regular(root, "abs.link", SAFE_OPEN_IN_ROOT, &st); /* "/plain" of the root */
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	CHECK(safe_open_regular(root, "abs.link", SAFE_OPEN_IN_ROOT | SAFE_OPEN_NOFOLLOW, &st) < 0);
	close(root);
}

static void test_swapped_names(void)
{
	char a[PATH_MAX + 64], a_moved[PATH_MAX + 64], b[PATH_MAX + 64], copy[PATH_MAX + 64];
	char mpath[PROC_MAPS_PATH_MAX + 1];
	struct stat st_a, st;
	struct mapped_file m;

	write_elf("liba.so", "mapped_a", BID_A, 0644);
	write_elf("secret.so", "secret_b", BID_B, 0600);
	path_of(a, sizeof(a), "liba.so");
	path_of(a_moved, sizeof(a_moved), "liba.so.moved");
	path_of(b, sizeof(b), "secret.so");
	path_of(copy, sizeof(copy), "liba.copy");

	int fd = open(a, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0 && fstat(fd, &st_a) == 0);
	size_t len = (size_t)st_a.st_size;
	void *addr = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	CHECK(addr != MAP_FAILED);
	CHECK(maps_entry(addr, &m, mpath, sizeof(mpath)) == 0);
	CHECK_STR(m.path, a);
	CHECK_EQ_U64(m.ino, st_a.st_ino);
	bool kernel_ref = can_use_map_files(addr, (size_t)(m.end - m.start));
	printf("map_files %s\n", kernel_ref ? "usable (the mapped file is expected)" :
					      "not usable here (nothing is expected)");

	/* nothing swapped yet: by the kernel's reference, and by the name */
	CHECK(fd_is(dso_open_mapped(&m, &st), st_a.st_ino) == 1);
	struct mapped_file by_name = m;
	by_name.start = by_name.end = 0;
	CHECK(fd_is(dso_open_mapped(&by_name, &st), st_a.st_ino) == 1);
	struct mapped_file by_bid = by_name;
	by_bid.has_inode = false;
	by_bid.build_id = BID_A;
	by_bid.build_id_len = 20;
	CHECK(fd_is(dso_open_mapped(&by_bid, &st), st_a.st_ino) == 1);
	/* no identity at all: the name alone is never trusted */
	struct mapped_file anonymous = by_name;
	anonymous.has_inode = false;
	CHECK(dso_open_mapped(&anonymous, &st) == -1);

	/* the name now a link to a file the process could not read */
	CHECK(rename(a, a_moved) == 0);
	CHECK(symlink(b, a) == 0);
	int r = fd_is(dso_open_mapped(&m, &st), st_a.st_ino);
	CHECK(kernel_ref ? r == 1 : r == -1);
	CHECK(dso_open_mapped(&by_name, &st) == -1);
	CHECK(dso_open_mapped(&by_bid, &st) == -1);

	/* the table: the DSO is A (or has no fd), never the link's target */
	struct dso_table t;
	dso_table_init(&t);
	bool is_new;
	uint32_t id = dso_table_lookup_or_add(&t, &m, &is_new);
	const struct dso *d = dso_table_get(&t, id);
	CHECK(id && is_new && d);
	if (d) {
		CHECK(kernel_ref ? d->fd >= 0 : d->fd == -1);
		CHECK(memcmp(d->build_id, BID_B, 20) != 0);
		if (d->fd >= 0)
			CHECK(d->build_id_len == 20 && !memcmp(d->build_id, BID_A, 20));
		/* reopened by name later (its fd closed to bound fds): refused */
		CHECK(dso_table_reopen(d) == -1);
	}
	dso_table_destroy(&t);

	/* the name now another regular file: by inode refused; by build-id a
	 * copy of the same content is the same file, the secret is not */
	unlink(a);
	write_elf("liba.so", "mapped_a", BID_A, 0644);
	CHECK(dso_open_mapped(&by_name, &st) == -1);
	fd = dso_open_mapped(&by_bid, &st);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	unlink(a);
	CHECK(link(b, a) == 0); /* the secret itself, under the mapped name */
	CHECK(dso_open_mapped(&by_name, &st) == -1);
	CHECK(dso_open_mapped(&by_bid, &st) == -1);

	/* a FIFO under the name: refused at once, nothing blocks */
	unlink(a);
	CHECK(mkfifo(a, 0644) == 0);
	CHECK(dso_open_mapped(&by_name, &st) == -1);
	CHECK(dso_open_mapped(&by_bid, &st) == -1);
	unlink(a);
	munmap(addr, len);
}

/* A link in the middle of the path: dir/sub/lib.so mapped, then sub made a
 * link to a directory holding another lib.so. */
static void test_swapped_directory(void)
{
	char sub[PATH_MAX + 64], sub_moved[PATH_MAX + 64], other[PATH_MAX + 64];
	char lib[PATH_MAX + 64], mpath[PROC_MAPS_PATH_MAX + 1];
	struct mapped_file m;
	struct stat st_lib, st;

	path_of(sub, sizeof(sub), "sub");
	path_of(sub_moved, sizeof(sub_moved), "sub.moved");
	path_of(other, sizeof(other), "other");
	CHECK(mkdir(sub, 0755) == 0 && mkdir(other, 0755) == 0);
	write_elf("sub/lib.so", "mapped_a", BID_A, 0644);
	write_elf("other/lib.so", "secret_b", BID_B, 0600);
	path_of(lib, sizeof(lib), "sub/lib.so");
	int fd = open(lib, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0 && fstat(fd, &st_lib) == 0);
	void *addr = mmap(NULL, (size_t)st_lib.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	CHECK(addr != MAP_FAILED && maps_entry(addr, &m, mpath, sizeof(mpath)) == 0);
	bool kernel_ref = can_use_map_files(addr, (size_t)(m.end - m.start));

	CHECK(rename(sub, sub_moved) == 0);
	CHECK(symlink(other, sub) == 0);
	int r = fd_is(dso_open_mapped(&m, &st), st_lib.st_ino);
	CHECK(kernel_ref ? r == 1 : r == -1);
	m.start = m.end = 0;
	CHECK(dso_open_mapped(&m, &st) == -1);
	m.has_inode = false;
	m.build_id = BID_A;
	m.build_id_len = 20;
	CHECK(dso_open_mapped(&m, &st) == -1);
	munmap(addr, (size_t)st_lib.st_size);
}

int main(void)
{
	const char *base = getenv("FLIGHTREC_TEST_TMP");
	if (!base || !*base)
		base = "/tmp";
	mkdir(base, 0755);
	snprintf(tmp_dir, sizeof(tmp_dir), "%s/test_recorder_mapped_open.XXXXXX", base);
	if (!mkdtemp(tmp_dir)) {
		perror("mkdtemp");
		return 1;
	}
	/* realpath: maps names files by their real path */
	char real[PATH_MAX];
	if (realpath(tmp_dir, real))
		snprintf(tmp_dir, sizeof(tmp_dir), "%s", real);
	test_safe_open();
	test_swapped_names();
	test_swapped_directory();
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmp_dir);
	return check_finish();
}
