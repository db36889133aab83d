/* The recorder's parsers of what traced processes give it (issue 16): the
 * ELF readers (recorder/inspect/elf_info.c), the unwind image (unwind_writer.c),
 * the DT_NEEDED reader and closure walk (needed_libs.c) and the
 * /proc/PID/maps line parser (proc_maps.c), on crafted input: files cut
 * anywhere, offsets and counts out of range, sizes that wrap, many symbols
 * on one long name, an alignment of 2^40, cyclic and endless DT_NEEDED
 * chains, a FIFO named as a library, paths longer than any buffer.  Each
 * case says what the recorder must do instead of crashing, looping or
 * allocating without bound.  Files are crafted by tests/fuzz/elf_craft.h,
 * not committed. */
#include "check.h"
#include "elf_craft.h"

#include "inspect/elf_info.h"
#include "attach/needed_libs.h"
#include "inspect/proc_maps.h"
#include "symbols/unwind_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const uint8_t BID[20] = {0xb1, 0xd0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18};

static uint8_t *craft_default(size_t *len)
{
	struct craft_opts o = {
		.funcs = {"cudaMalloc", "cudaFree", "func_a"},
		.needed = {"libneed_one.so", "libneed_two.so.3"},
		.runpath = "$ORIGIN/lib",
		.rpath = "/opt/old/lib",
	};
	memcpy(o.build_id, BID, 20);
	return craft_elf(&o, len);
}

static int mem_fd(const uint8_t *d, size_t len)
{
	int fd = memfd_create("test-elf", MFD_CLOEXEC);
	if (fd >= 0 && write(fd, d, len) != (ssize_t)len) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Every reader on one file; returns how many succeeded.  Under ASan any
 * read outside the file or leak fails the test. */
static int all_readers(const uint8_t *d, size_t len)
{
	int fd = mem_fd(d, len), ok = 0;
	if (fd < 0)
		return -1;
	uint8_t bid[20], bid_len;
	ok += elf_read_build_id(fd, bid, &bid_len) == 0;
	struct elf_symtab t;
	if (elf_load_symtab(fd, &t) == 0) {
		ok++;
		elf_symtab_free(&t);
	}
	static const char *const names[] = {"cudaMalloc", "func_a"};
	uint64_t off[2];
	uint8_t first[2][8];
	ok += elf_find_functions(fd, names, 2, off, first) > 0;
	size_t ilen;
	uint8_t *img = unwind_reduced_image(fd, &ilen);
	ok += img != NULL;
	free(img);
	struct needed_dynamic nd;
	ok += needed_read_dynamic(fd, &nd) == 0 && nd.n_needed > 0;
	needed_dynamic_free(&nd);
	close(fd);
	return ok;
}

static void test_well_formed(void)
{
	size_t len;
	uint8_t *d = craft_default(&len);
	int fd = mem_fd(d, len);
	uint8_t bid[20], bid_len = 0;

	CHECK(elf_read_build_id(fd, bid, &bid_len) == 0);
	CHECK_EQ_U64(bid_len, 20);
	CHECK(!memcmp(bid, BID, 20));

	struct elf_symtab t;
	CHECK(elf_load_symtab(fd, &t) == 0);
	uint64_t text = craft_shdr(d, CRAFT_SEC_TEXT)->sh_offset;
	const struct elf_sym *s = elf_symtab_find(&t, text + 2);
	CHECK(s && !strcmp(s->name, "cudaMalloc"));
	s = elf_symtab_find(&t, text + 16 * 3);
	CHECK(s && !strcmp(s->name, "craft_local_helper")); /* .symtab only */
	elf_symtab_free(&t);

	static const char *const names[] = {"func_a", "cudaFree", "absent"};
	uint64_t off[3];
	uint8_t first[3][8];
	CHECK(elf_find_functions(fd, names, 3, off, first) == 2);
	CHECK_EQ_U64(off[0], text + 32);
	CHECK_EQ_U64(off[1], text + 16);
	CHECK_EQ_U64(off[2], 0);
	CHECK(first[0][0] == 0x55 && uprobe_insn_emulated(first[0]));

	size_t ilen = 0;
	uint8_t *img = unwind_reduced_image(fd, &ilen);
	CHECK(img && ilen > 0 && !memcmp(img, "\177ELF", 4));
	free(img);

	struct needed_dynamic nd;
	CHECK(needed_read_dynamic(fd, &nd) == 0);
	CHECK(nd.n_needed == 2);
	CHECK_STR(nd.needed[0], "libneed_one.so");
	CHECK_STR(nd.needed[1], "libneed_two.so.3");
	CHECK_STR(nd.runpath, "$ORIGIN/lib");
	CHECK_STR(nd.rpath, "/opt/old/lib");
	needed_dynamic_free(&nd);
	close(fd);
	free(d);
}

/* Cut at every length: no reader may read past the end. */
static void test_truncated(void)
{
	size_t len;
	uint8_t *d = craft_default(&len);
	int full = all_readers(d, len), cut_ok = 1;
	CHECK(full == 5);
	for (size_t n = 0; n < len; n++) {
		uint8_t *copy = malloc(n ? n : 1);
		memcpy(copy, d, n);
		if (all_readers(copy, n) < 0)
			cut_ok = 0;
		free(copy);
	}
	CHECK(cut_ok);
	free(d);
}

/* Section and segment fields pointing outside the file or overflowing. */
static void test_out_of_range(void)
{
	size_t len;
	uint8_t *d = craft_default(&len);
	static const int secs[] = {CRAFT_SEC_DYNSYM, CRAFT_SEC_SYMTAB, CRAFT_SEC_DYNAMIC,
				   CRAFT_SEC_NOTE, CRAFT_SEC_EH_FRAME, CRAFT_SEC_DYNSTR};
	for (size_t i = 0; i < sizeof(secs) / sizeof(secs[0]); i++) {
		static const uint64_t offsets[] = {UINT64_MAX, UINT64_MAX - 7, 1ull << 40};
		for (size_t k = 0; k < 3; k++) {
			uint8_t *c = malloc(len);
			memcpy(c, d, len);
			craft_shdr(c, secs[i])->sh_offset = offsets[k];
			CHECK(all_readers(c, len) >= 0);
			memcpy(c, d, len);
			craft_shdr(c, secs[i])->sh_size = offsets[k];
			CHECK(all_readers(c, len) >= 0);
			memcpy(c, d, len);
			craft_shdr(c, secs[i])->sh_entsize = 1; /* counts of millions */
			craft_shdr(c, secs[i])->sh_link = 0xffff;
			CHECK(all_readers(c, len) >= 0);
			free(c);
		}
	}
	/* e_shnum far beyond the file, section headers at its very end */
	uint8_t *c = malloc(len);
	memcpy(c, d, len);
	craft_ehdr(c)->e_shnum = 0xfeff;
	CHECK(all_readers(c, len) >= 0);
	memcpy(c, d, len);
	craft_ehdr(c)->e_shoff = len - 8;
	CHECK(all_readers(c, len) >= 0);
	/* string tables that do not end in NUL */
	memcpy(c, d, len);
	Elf64_Shdr *str = craft_shdr(c, CRAFT_SEC_DYNSTR);
	memset(c + str->sh_offset, 'A', str->sh_size);
	CHECK(all_readers(c, len) >= 0);
	/* a note whose descsz runs past its section */
	memcpy(c, d, len);
	((Elf64_Nhdr *)(c + craft_shdr(c, CRAFT_SEC_NOTE)->sh_offset))->n_descsz = 0xfffffff0u;
	uint8_t bid[20], bid_len;
	int fd = mem_fd(c, len);
	elf_read_build_id(fd, bid, &bid_len);
	CHECK(bid_len <= 20);
	close(fd);
	free(c);
	free(d);
}

/* A function whose file offset is near 2^64 (PT_LOAD p_offset crafted):
 * found, but its first bytes are not read from 2^64 - 3 (before the fix,
 * offset + 8 wrapped past the length check and memcpy read there). */
static void test_first_bytes_wrap(void)
{
	size_t len;
	uint8_t *d = craft_default(&len);
	uint64_t text = craft_shdr(d, CRAFT_SEC_TEXT)->sh_offset;
	craft_phdr(d, CRAFT_PH_LOAD)->p_offset = UINT64_MAX - 3 - text;
	int fd = mem_fd(d, len);
	static const char *const names[] = {"cudaMalloc"};
	uint64_t off[1];
	uint8_t first[1][8];
	memset(first, 0xcc, sizeof(first));
	CHECK(elf_find_functions(fd, names, 1, off, first) == 1);
	CHECK_EQ_U64(off[0], UINT64_MAX - 3);
	static const uint8_t zero[8];
	CHECK(!memcmp(first[0], zero, 8));
	close(fd);
	free(d);
}

/* A symbol whose size wraps offset + size: still found at its offset. */
static void test_symbol_size_wrap(void)
{
	size_t len;
	uint8_t *d = craft_default(&len);
	Elf64_Shdr *sh = craft_shdr(d, CRAFT_SEC_SYMTAB);
	Elf64_Sym *syms = (Elf64_Sym *)(d + sh->sh_offset);
	size_t n = sh->sh_size / sizeof(Elf64_Sym);
	syms[n - 1].st_size = UINT64_MAX; /* func_a, the last function */
	craft_shdr(d, CRAFT_SEC_DYNSYM)->sh_type = SHT_PROGBITS;
	int fd = mem_fd(d, len);
	struct elf_symtab t;
	CHECK(elf_load_symtab(fd, &t) == 0);
	uint64_t at = syms[n - 1].st_value;
	const struct elf_sym *s = elf_symtab_find(&t, at);
	CHECK(s && !strcmp(s->name, "func_a"));
	for (size_t i = 0; i < t.n; i++)
		CHECK(t.syms[i].offset + t.syms[i].size >= t.syms[i].offset);
	elf_symtab_free(&t);
	close(fd);
	free(d);
}

/* The outcome of the two hostile layouts below is a size (the table, the
 * image); their time bound is only a hang guard, generous enough for a
 * sanitized build on a loaded machine: the bug they guard against took
 * hours (a terabyte written, 2.6 GB copied). */
#define HANG_GUARD_S 120.0

/* 40,000 symbols sharing one 64 KiB name: 2.6 GB of copies before the
 * budget; now the table is cut at about twice the file's size. */
static void test_names_budget(void)
{
	char *name = malloc(65536);
	memset(name, 'n', 65535);
	name[65535] = 0;
	struct craft_opts o = {.funcs = {name}, .repeat_first = 40000};
	size_t len;
	uint8_t *d = craft_elf(&o, &len);
	int fd = mem_fd(d, len);
	struct elf_symtab t;
	double t0 = now_s();
	CHECK(elf_load_symtab(fd, &t) == 0);
	CHECK(t.names_len <= 2 * len + (1u << 20));
	CHECK(t.n >= 1 && !strcmp(t.syms[0].name, name));
	CHECK(now_s() - t0 < HANG_GUARD_S);
	elf_symtab_free(&t);
	close(fd);
	free(d);
	free(name);
}

/* .eh_frame aligned to 2^40: libelf laid the image out with a terabyte of
 * padding (the recorder hung writing it into a memfd). */
static void test_unwind_alignment(void)
{
	size_t len;
	uint8_t *d = craft_default(&len);
	craft_shdr(d, CRAFT_SEC_EH_FRAME)->sh_addralign = 1ull << 40;
	int fd = mem_fd(d, len);
	size_t ilen = 0;
	double t0 = now_s();
	uint8_t *img = unwind_reduced_image(fd, &ilen);
	CHECK(img && ilen < 65536);
	CHECK(now_s() - t0 < HANG_GUARD_S);
	free(img);
	close(fd);
	free(d);
	/* an alignment that is no power of two */
	d = craft_default(&len);
	craft_shdr(d, CRAFT_SEC_EH_FRAME)->sh_addralign = 3;
	fd = mem_fd(d, len);
	img = unwind_reduced_image(fd, &ilen);
	CHECK(img && ilen < 65536);
	free(img);
	close(fd);
	free(d);
}

/* No section headers: the build-id comes from PT_NOTE.  The other byte
 * order: refused by every reader (no process here runs it, and libelf
 * would convert a copy of every section). */
static void test_headers_and_byte_order(void)
{
	size_t len;
	uint8_t *d = craft_default(&len);
	craft_ehdr(d)->e_shoff = 0;
	craft_ehdr(d)->e_shnum = 0;
	craft_ehdr(d)->e_shstrndx = 0;
	int fd = mem_fd(d, len);
	uint8_t bid[20], bid_len = 0;
	CHECK(elf_read_build_id(fd, bid, &bid_len) == 0 && bid_len == 20 && !memcmp(bid, BID, 20));
	close(fd);
	free(d);

	d = craft_default(&len);
	d[EI_DATA] = ELFDATA2MSB;
	CHECK(all_readers(d, len) == 0);
	free(d);
}

/* DT_NEEDED strings: a name no path buffer holds is skipped; more than
 * NEEDED_MAX are cut there. */
static void test_needed_strings(void)
{
	char *huge = malloc(PATH_MAX + 100);
	memset(huge, 'x', PATH_MAX + 99);
	huge[PATH_MAX + 99] = 0;
	struct craft_opts o = {.needed = {"liba.so", huge, "libb.so"}, .runpath = huge};
	size_t len;
	uint8_t *d = craft_elf(&o, &len);
	int fd = mem_fd(d, len);
	struct needed_dynamic nd;
	CHECK(needed_read_dynamic(fd, &nd) == 0);
	CHECK(nd.n_needed == 2);
	CHECK_STR(nd.needed[0], "liba.so");
	CHECK_STR(nd.needed[1], "libb.so");
	CHECK(nd.runpath == NULL);
	needed_dynamic_free(&nd);
	close(fd);
	free(d);
	free(huge);

	/* a second dynamic section over the same bytes: only the first is
	 * read (the dynamic linker reads one) */
	d = craft_default(&len);
	*craft_shdr(d, CRAFT_SEC_EH_FRAME) = *craft_shdr(d, CRAFT_SEC_DYNAMIC);
	fd = mem_fd(d, len);
	CHECK(needed_read_dynamic(fd, &nd) == 0 && nd.n_needed == 2);
	needed_dynamic_free(&nd);
	close(fd);
	free(d);
}

static char tmp_dir[PATH_MAX];

static void write_lib(const char *name, const struct craft_opts *o)
{
	char path[PATH_MAX + 64];
	size_t len;
	uint8_t *d = craft_elf(o, &len);
	snprintf(path, sizeof(path), "%s/%s", tmp_dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0 && write(fd, d, len) == (ssize_t)len);
	if (fd >= 0)
		close(fd);
	free(d);
}

struct walked {
	int n;
	char names[600][64];
};

static void on_file(const char *path, void *ctx)
{
	struct walked *w = ctx;
	const char *base = strrchr(path, '/');
	if (w->n < 600)
		snprintf(w->names[w->n], sizeof(w->names[0]), "%s", base ? base + 1 : path);
	w->n++;
}

/* a <-> b cycle, a library needing itself, and a FIFO named as a library
 * (before: opened with open(2), which blocks until a writer comes) */
static void test_needed_walk_cycle(void)
{
	char fifo[PATH_MAX + 64], prog[PATH_MAX + 64];
	snprintf(fifo, sizeof(fifo), "%s/fifo.so", tmp_dir);
	CHECK(mkfifo(fifo, 0644) == 0);
	struct craft_opts a = {.funcs = {"a"}, .needed = {"libcyc_b.so", "libcyc_a.so", fifo},
			       .runpath = "$ORIGIN"};
	struct craft_opts b = {.funcs = {"b"}, .needed = {"libcyc_a.so"}, .rpath = "${ORIGIN}"};
	write_lib("libcyc_a.so", &a);
	write_lib("libcyc_b.so", &b);
	snprintf(prog, sizeof(prog), "%s/libcyc_a.so", tmp_dir);
	struct walked *w = calloc(1, sizeof(*w));
	int n = needed_libs_walk(prog, on_file, w);
	CHECK(n == 2 && w->n == 2);
	CHECK_STR(w->names[0], "libcyc_a.so");
	CHECK_STR(w->names[1], "libcyc_b.so");
	free(w);
}

struct chain_walk {
	const char *prog;
	struct walked *w;
	int n;
};

static void *chain_thread(void *arg)
{
	struct chain_walk *c = arg;
	c->n = needed_libs_walk(c->prog, on_file, c->w);
	return NULL;
}

/* A chain of 600 libraries, each needing the next: the walk stops at its
 * bound (512 files) without exhausting the stack.  Its frames were 13 KiB
 * (6.6 MiB at 512 deep: a crash under a 4 MiB stack limit); run here on a
 * thread of 1 MiB. */
static void test_needed_walk_chain(void)
{
	for (int i = 0; i < 600; i++) {
		char name[64], next[64];
		snprintf(name, sizeof(name), "libchain_%d.so", i);
		snprintf(next, sizeof(next), "libchain_%d.so", i + 1);
		struct craft_opts o = {.funcs = {"f"}, .needed = {next}, .runpath = "$ORIGIN"};
		write_lib(name, &o);
	}
	char prog[PATH_MAX + 64];
	snprintf(prog, sizeof(prog), "%s/libchain_0.so", tmp_dir);
	struct chain_walk c = {.prog = prog, .w = calloc(1, sizeof(struct walked))};
	pthread_attr_t attr;
	pthread_t th;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 1 << 20);
	CHECK(pthread_create(&th, &attr, chain_thread, &c) == 0);
	pthread_join(th, NULL);
	pthread_attr_destroy(&attr);
	CHECK(c.n == 512);
	CHECK_STR(c.w->names[511], "libchain_511.so");
	free(c.w);
}

static void test_maps_lines(void)
{
	struct proc_maps_entry e;
	const char *l = "7f2c4f7d8000-7f2c4f7f9000 r-xp 00021000 103:05 1234567  /tmp/a b/x.so (deleted)\n";
	CHECK(proc_maps_parse_line(l, strlen(l), &e) == 0);
	CHECK_EQ_U64(e.start, 0x7f2c4f7d8000ull);
	CHECK_EQ_U64(e.end, 0x7f2c4f7f9000ull);
	CHECK_EQ_U64(e.offset, 0x21000);
	CHECK_EQ_U64(e.dev_major, 0x103);
	CHECK_EQ_U64(e.dev_minor, 5);
	CHECK_EQ_U64(e.ino, 1234567);
	CHECK_STR(e.perms, "r-xp");
	CHECK(e.path_len == strlen("/tmp/a b/x.so (deleted)") &&
	      !memcmp(e.path, "/tmp/a b/x.so (deleted)", e.path_len));

	l = "7fffb2c0d000-7fffb2c2e000 rw-p 00000000 00:00 0 ";
	CHECK(proc_maps_parse_line(l, strlen(l), &e) == 0 && e.path_len == 0);
	l = "7fffb2c0d000-7fffb2c2e000 rw-p 00000000 00:00 0";
	CHECK(proc_maps_parse_line(l, strlen(l), &e) == 0 && e.path_len == 0);

	static const char *const bad[] = {
		"",
		"\n",
		"7f00-7e00 r-xp 00000000 00:00 0 /x\n",            /* backwards */
		"10000000000000000-10000000000000001 r-xp 0 0:0 0 /x", /* 17 digits */
		"7f00-7f10 r-xp 0 0:0 99999999999999999999999 /x",  /* inode overflows */
		"7f00-7f10 r-x 0 0:0 0 /x",
		"7f00-7f10 r-xp 0 0:0",
		"7f00 7f10 r-xp 0 0:0 0 /x",
		"-7f10 r-xp 0 0:0 0 /x",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(proc_maps_parse_line(bad[i], strlen(bad[i]), &e) == -1);
	static const char nul_perms[] = "7f00-7f10 r\0xp 0 0:0 0 /x";
	CHECK(proc_maps_parse_line(nul_perms, sizeof(nul_perms) - 1, &e) == -1);
	/* a NUL inside the path: the C string would name another file */
	static const char nul[] = "7f00-7f10 r-xp 0 0:0 0 /tmp/x\0/etc/y";
	CHECK(proc_maps_parse_line(nul, sizeof(nul) - 1, &e) == -1);

	/* A path of 4095 bytes is kept; longer ones are refused whole.  Before,
	 * a 4352-byte buffer cut the line and the rest of the crafted name
	 * parsed as a mapping of /etc/secret.so. */
	char *line = malloc(8192);
	int n = snprintf(line, 8192, "7f0000000000-7f0000001000 r-xp 00000000 08:01 99 ");
	int path_at = n;
	line[n++] = '/';
	while (n - path_at < PROC_MAPS_PATH_MAX)
		line[n++] = 'd';
	line[n++] = '\n';
	CHECK(proc_maps_parse_line(line, (size_t)n, &e) == 0 && e.path_len == PROC_MAPS_PATH_MAX);
	n = path_at + snprintf(line + path_at, 8192 - (size_t)path_at, "/tmp/");
	while (n < 4352 - 80)
		line[n++] = 'd';
	n += snprintf(line + n, 8192 - (size_t)n,
		      "/7f0000002000-7f0000003000 r-xp 00000000 08:01 77 /etc/secret.so\n");
	CHECK(proc_maps_parse_line(line, (size_t)n, &e) == -1);
	free(line);
}

int main(void)
{
	const char *base = getenv("FLIGHTREC_TEST_TMP");
	if (!base || !*base)
		base = "/tmp";
	mkdir(base, 0755);
	snprintf(tmp_dir, sizeof(tmp_dir), "%s/test_recorder_elf.XXXXXX", base);
	if (!mkdtemp(tmp_dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_well_formed();
	test_truncated();
	test_out_of_range();
	test_first_bytes_wrap();
	test_symbol_size_wrap();
	test_names_budget();
	test_unwind_alignment();
	test_headers_and_byte_order();
	test_needed_strings();
	test_needed_walk_cycle();
	test_needed_walk_chain();
	test_maps_lines();
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmp_dir);
	return check_finish();
}
