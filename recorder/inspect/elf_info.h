/* What the recorder reads from ELF files: build-ids and function symbols
 * (translated to file offsets, the address space mappings use). */
#ifndef FLIGHTREC_ELF_INFO_H
#define FLIGHTREC_ELF_INFO_H

#include <stddef.h>
#include <stdint.h>

/* 0 and the GNU build-id (up to 20 bytes) in out, or -1. */
int elf_read_build_id(int fd, uint8_t out[20], uint8_t *len);

struct elf_sym {
	uint64_t offset; /* file offset of the symbol's first byte */
	uint64_t size;
	const char *name; /* into the owning elf_symtab's storage */
};

struct elf_symtab {
	struct elf_sym *syms; /* sorted by offset, one per offset */
	size_t n;
	char *names;          /* storage */
	size_t names_len;
};

/* Function symbols of the file open at fd (.symtab, else .dynsym; both
 * merged when present).  Symbols of size 0 extend to the next one. */
int elf_load_symtab(int fd, struct elf_symtab *out);

/* Separate debug files (Debian's -dbg packages) are looked for here. */
#define ELF_DEBUG_ROOT "/usr/lib/debug"
/* As elf_load_symtab, and when the file is stripped (no .symtab) also the
 * .symtab of its debug file ELF_DEBUG_ROOT/.build-id/xx/rest.debug found by
 * build-id bid.  *stripped (may be NULL): 0 the file has a .symtab, 1 its
 * debug file was used, 2 stripped and no debug file found. */
int elf_load_symtab_debug(int fd, const uint8_t *bid, uint8_t bid_len, struct elf_symtab *out,
			  int *stripped);
/* Where the debug file of build-id bid (bid_len >= 1) is looked for. */
#define ELF_DEBUG_PATH_MAX 128
void elf_debug_path(const uint8_t *bid, uint8_t bid_len, char path[ELF_DEBUG_PATH_MAX]);
/* The symbol covering offset, or NULL. */
const struct elf_sym *elf_symtab_find(const struct elf_symtab *t, uint64_t offset);
void elf_symtab_free(struct elf_symtab *t);

/* Looks up function symbols by name for probing: out[i] is the FILE offset
 * of names[i] (0 when absent).  Exported symbols (.dynsym) are preferred,
 * and among versioned ones the default version (name@@VER), as the dynamic
 * linker binds; .symtab is searched too (a library linked statically into
 * another keeps its names there when not stripped).  first_bytes[i] gets
 * the first 8 bytes of code at that offset when first_bytes is not NULL.
 * Returns the number found, -1 when fd is not a readable ELF file. */
int elf_find_functions(int fd, const char *const *names, size_t n, uint64_t *out,
		       uint8_t (*first_bytes)[8]);

/* Whether the kernel emulates this first instruction of a probed function
 * (fast) or single-steps it out of line (about 15x slower per hit). */
int uprobe_insn_emulated(const uint8_t code[8]);

/* Kernel text symbols from /proc/kallsyms (addresses as offsets). */
int kallsyms_load(const char *path, struct elf_symtab *out);

#endif
