/* Writes the seed corpus of fuzz_archive: small archives around a real
 * trace, one for each path of the archive reader — a tar.zst as the archive
 * command writes it (MANIFEST.json first), a plain tar of hostile members
 * (a symbolic and a hard link, a fifo, a device, "../" and absolute names,
 * a repeated name), a tar.gz of two traces in a directory, a plain tar whose
 * .frec member is not a trace, and a tar.zst cut in the middle of a member.
 * Usage: make_archive_seeds DIR TRACE.  The outputs are committed in
 * corpus/archive/. */
#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

struct member {
	const char *name;
	unsigned type;         /* 0: a regular file */
	const void *data;
	size_t size;
	const char *link;
	int hard;
};

static int write_tar(const char *dir, const char *name, int filter, const struct member *m,
		     size_t n, double keep)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	struct archive *a = archive_write_new();
	if (filter == 'z')
		archive_write_add_filter_zstd(a);
	else if (filter == 'g')
		archive_write_add_filter_gzip(a);
	archive_write_set_format_pax_restricted(a);
	archive_write_set_bytes_in_last_block(a, 1);
	if (archive_write_open_filename(a, path) != ARCHIVE_OK)
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct archive_entry *e = archive_entry_new();
		unsigned type = m[i].type ? m[i].type : AE_IFREG;
		archive_entry_set_pathname(e, m[i].name);
		archive_entry_set_filetype(e, type);
		archive_entry_set_perm(e, 0644);
		archive_entry_set_mtime(e, 1714564800, 0);
		if (type == AE_IFLNK)
			archive_entry_set_symlink(e, m[i].link);
		if (m[i].hard)
			archive_entry_set_hardlink(e, m[i].link);
		if (type == AE_IFCHR)
			archive_entry_set_rdev(e, makedev(1, 3));
		size_t size = type == AE_IFREG && !m[i].hard ? m[i].size : 0;
		archive_entry_set_size(e, (la_int64_t)size);
		archive_write_header(a, e);
		if (size)
			archive_write_data(a, m[i].data, size);
		archive_entry_free(e);
	}
	archive_write_close(a);
	archive_write_free(a);
	if (keep < 1) {
		struct stat st;
		if (stat(path, &st) || truncate(path, (off_t)((double)st.st_size * keep)))
			return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: make_archive_seeds DIR TRACE\n");
		return 2;
	}
	FILE *f = fopen(argv[2], "rb");
	static uint8_t trace[1 << 20];
	size_t len = f ? fread(trace, 1, sizeof(trace), f) : 0;
	if (f)
		fclose(f);
	if (!len) {
		fprintf(stderr, "make_archive_seeds: cannot read %s\n", argv[2]);
		return 1;
	}
	static const char manifest[] = "{\"format\":1,\"created_by\":\"make_archive_seeds\","
				       "\"traces\":[{\"name\":\"node0.frec\"}]}\n";
	const struct member ok[] = {
		{ .name = "MANIFEST.json", .data = manifest, .size = sizeof(manifest) - 1 },
		{ .name = "node0.frec", .data = trace, .size = len },
	};
	const struct member hostile[] = {
		{ .name = "link.frec", .type = AE_IFLNK, .link = "/etc/passwd" },
		{ .name = "hard.frec", .hard = 1, .link = "node0.frec" },
		{ .name = "fifo.frec", .type = AE_IFIFO },
		{ .name = "dev.frec", .type = AE_IFCHR },
		{ .name = "../up.frec", .data = trace, .size = 64 },
		{ .name = "/abs.frec", .data = trace, .size = 64 },
		{ .name = "node0.frec", .data = trace, .size = len },
		{ .name = "./node0.frec", .data = trace, .size = len },
	};
	const struct member two[] = {
		{ .name = "run", .type = AE_IFDIR },
		{ .name = "run/a.frec", .data = trace, .size = len },
		{ .name = "run/b.frec", .data = trace, .size = len },
	};
	const struct member junk[] = {
		{ .name = "notes.txt", .data = "hello\n", .size = 6 },
		{ .name = "junk.frec", .data = "not a trace, not at all", .size = 23 },
	};
	int rc = write_tar(argv[1], "ok.tar.zst", 'z', ok, 2, 1) |
		 write_tar(argv[1], "hostile.tar", 0, hostile, 8, 1) |
		 write_tar(argv[1], "two.tar.gz", 'g', two, 3, 1) |
		 write_tar(argv[1], "junk.tar", 0, junk, 2, 1) |
		 write_tar(argv[1], "cut.tar.zst", 'z', ok, 2, 0.7);
	return rc ? 1 : 0;
}
