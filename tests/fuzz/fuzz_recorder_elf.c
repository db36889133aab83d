/* libFuzzer target: the recorder's readers of ELF files that traced
 * processes map (issue 16, hostile input on the recorder's side).  A job
 * can map any file executable; the recorder, as root, reads its build-id
 * (elf_read_build_id), its symbols (elf_load_symtab, elf_symtab_find),
 * looks functions up for uprobes (elf_find_functions), copies its unwind
 * sections (unwind_reduced_image) and, for a command's program and
 * libraries, its DT_NEEDED entries (needed_read_dynamic).  Each input is
 * one file, given to every reader through a memfd as the recorder gets an
 * fd.  Besides crashes, the checks below catch answers that point outside
 * the file. */
#include "inspect/elf_info.h"
#include "attach/needed_libs.h"
#include "symbols/unwind_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int input_fd(const uint8_t *data, size_t size)
{
	int fd = memfd_create("frec-fuzz-elf", MFD_CLOEXEC);
	size_t done = 0;
	while (fd >= 0 && done < size) {
		ssize_t n = write(fd, data + done, size - done);
		if (n <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)n;
	}
	return fd;
}

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_recorder_elf: %s\n", what);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = input_fd(data, size);
	if (fd < 0)
		return 0;

	uint8_t bid[20], bid_len = 0;
	if (elf_read_build_id(fd, bid, &bid_len) == 0)
		check(bid_len <= 20, "build-id longer than 20 bytes");

	struct elf_symtab tab;
	if (elf_load_symtab(fd, &tab) == 0) {
		for (size_t i = 0; i < tab.n; i++) {
			check(tab.syms[i].name && tab.syms[i].name >= tab.names &&
			      tab.syms[i].name < tab.names + tab.names_len, "name outside storage");
			check(i == 0 || tab.syms[i - 1].offset < tab.syms[i].offset, "not sorted");
			const struct elf_sym *s = elf_symtab_find(&tab, tab.syms[i].offset);
			check(s == &tab.syms[i] || tab.syms[i].size == 0, "own offset not found");
		}
		elf_symtab_find(&tab, 0);
		elf_symtab_find(&tab, UINT64_MAX);
		elf_symtab_free(&tab);
	}

	static const char *const names[] = {"cudaMalloc", "func_a", "ncclAllReduce", "main", ""};
	uint64_t off[5];
	uint8_t first[5][8];
	int found = elf_find_functions(fd, names, 5, off, first);
	check(found <= 5, "more functions found than asked for");
	if (found > 0)
		for (int i = 0; i < 5; i++)
			uprobe_insn_emulated(first[i]);

	size_t len = 0;
	uint8_t *image = unwind_reduced_image(fd, &len);
	check(!image || (len > 0 && len <= (1u << 30)), "image length");
	if (image) {
		/* the image is parsed again by the analyzer: it must be ELF */
		check(len >= 4 && !memcmp(image, "\177ELF", 4), "image is not ELF");
		free(image);
	}

	struct needed_dynamic dyn;
	needed_read_dynamic(fd, &dyn);
	check(dyn.n_needed >= 0 && dyn.n_needed <= NEEDED_MAX, "needed count");
	needed_dynamic_free(&dyn);

	close(fd);
	return 0;
}
