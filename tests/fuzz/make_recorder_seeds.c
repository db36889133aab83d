/* Writes the seed corpora of fuzz_recorder_elf and fuzz_recorder_maps at
 * build time (no binary is committed):
 *   make_recorder_seeds ELF_DIR MAPS_DIR [REAL_ELF...]
 * ELF_DIR gets crafted shared objects (elf_craft.h: every section the
 * recorder reads, with and without a build-id, without section headers,
 * cut short) and a copy of each REAL_ELF (files the compiler and linker
 * made).  MAPS_DIR gets this process's own /proc/self/maps and lines the
 * kernel can write but that are unusual (paths with spaces, " (deleted)",
 * long paths, device numbers of several digits). */
#include "elf_craft.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int write_file(const char *dir, const char *name, const void *data, size_t len)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f)) {
		fprintf(stderr, "make_recorder_seeds: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

static int copy_file(const char *dir, const char *src, int index)
{
	FILE *f = fopen(src, "rb");
	if (!f) {
		fprintf(stderr, "make_recorder_seeds: cannot read %s: %s\n", src, strerror(errno));
		return -1;
	}
	size_t cap = 1 << 16, len = 0, n;
	uint8_t *buf = malloc(cap);
	while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
		len += n;
		if (len == cap && !(buf = realloc(buf, cap *= 2)))
			break;
	}
	fclose(f);
	if (!buf)
		return -1;
	char name[64];
	snprintf(name, sizeof(name), "real-%d.elf", index);
	int rc = write_file(dir, name, buf, len);
	free(buf);
	return rc;
}

static int elf_seeds(const char *dir)
{
	struct craft_opts o = {
		.funcs = {"cudaMalloc", "cudaFree", "ncclAllReduce", "func_a"},
		.needed = {"libcudart.so.12", "libcraft_b.so", "libc.so.6"},
		.runpath = "$ORIGIN/lib:/opt/craft/lib",
		.build_id = {0xfe, 0xed, 0xfa, 0xce, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
	};
	size_t len;
	uint8_t *d = craft_elf(&o, &len);
	int rc = write_file(dir, "craft-full.elf", d, len);

	/* no section headers: build-id from PT_NOTE only, no symbols */
	craft_ehdr(d)->e_shoff = 0;
	craft_ehdr(d)->e_shnum = 0;
	craft_ehdr(d)->e_shstrndx = 0;
	rc |= write_file(dir, "craft-no-shdrs.elf", d, len);
	/* cut in the middle of the section headers */
	rc |= write_file(dir, "craft-cut.elf", d, len / 2);
	free(d);

	struct craft_opts bare = {.funcs = {"main"}, .rpath = "${ORIGIN}/../lib", .no_build_id = 1};
	d = craft_elf(&bare, &len);
	rc |= write_file(dir, "craft-rpath-no-build-id.elf", d, len);
	free(d);
	return rc;
}

static int maps_seeds(const char *dir)
{
	static const char crafted[] =
		"00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon\n"
		"7f2c4f7d8000-7f2c4f7f9000 r-xp 00021000 103:05 1234567890  /tmp/a b/lib x.so (deleted)\n"
		"7fffb2c0d000-7fffb2c2e000 rw-p 00000000 00:00 0          [stack]\n"
		"7f0000000000-7f0000001000 r-xp 00000000 00:00 0 \n"
		"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n"
		"7f00000000-7f00001000 r-xs 0000000000001000 fd:101 42 /dev/shm/jit\n";
	int rc = write_file(dir, "crafted.maps", crafted, sizeof(crafted) - 1);

	/* a path longer than any fixed line buffer, with a mapping line
	 * inside it where a 4352-byte buffer would cut it */
	char *long_line = malloc(8192);
	if (!long_line)
		return -1;
	int n = snprintf(long_line, 8192, "7f0000000000-7f0000001000 r-xp 00000000 08:01 99 /tmp/");
	while (n < 4352 - 80)
		long_line[n++] = 'd';
	n += snprintf(long_line + n, 8192 - (size_t)n,
		      "/7f0000002000-7f0000003000 r-xp 00000000 08:01 77 /etc/secret.so\n");
	rc |= write_file(dir, "long-path.maps", long_line, (size_t)n);
	free(long_line);

	FILE *f = fopen("/proc/self/maps", "r");
	char buf[65536];
	size_t len = f ? fread(buf, 1, sizeof(buf), f) : 0;
	if (f)
		fclose(f);
	if (len)
		rc |= write_file(dir, "self.maps", buf, len);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: make_recorder_seeds ELF_DIR MAPS_DIR [REAL_ELF...]\n");
		return 2;
	}
	int rc = elf_seeds(argv[1]) | maps_seeds(argv[2]);
	for (int i = 3; i < argc; i++)
		rc |= copy_file(argv[1], argv[i], i - 3);
	return rc ? 1 : 0;
}
