/* What an unwind image's program headers say: whether the store may take
 * it (a 64-bit x86-64 ELF executable or shared object with a PT_LOAD), and
 * where a mapping of it puts it in a process (its load base and range, as
 * libdwfl computes them).
 *
 * Not for the CFI inside the image (libdw reads it: unwind.c,
 * unwind_fast.c) nor for keeping images (unwind_store.c).  Images come from
 * strangers' files: libelf reads them from memory and every refusal says
 * why. */
#include "unwind_private.h"

#include <gelf.h>
#include <stdio.h>
#include <string.h>

static int elf_ok = -1;

int uw_elf_init(void)
{
	if (elf_ok < 0)
		elf_ok = elf_version(EV_CURRENT) != EV_NONE;
	return elf_ok;
}

int uw_read_layout(const uint8_t *image, size_t len, struct uw_layout *lay, char *why,
		   size_t why_len)
{
	memset(lay, 0, sizeof(*lay));
	if (!uw_elf_init()) {
		snprintf(why, why_len, "libelf unusable");
		return -1;
	}
	if (len < 64 || memcmp(image, ELFMAG, SELFMAG) || image[EI_CLASS] != ELFCLASS64 ||
	    image[EI_DATA] != ELFDATA2LSB) {
		snprintf(why, why_len, "not a 64-bit little-endian ELF image");
		return -1;
	}
	Elf *elf = elf_memory((char *)(uintptr_t)image, len);
	GElf_Ehdr eh;
	size_t phnum = 0;
	if (!elf || !gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &phnum)) {
		snprintf(why, why_len, "unreadable ELF header: %s", elf_errmsg(-1));
		elf_end(elf);
		return -1;
	}
	if (eh.e_machine != EM_X86_64 || (eh.e_type != ET_DYN && eh.e_type != ET_EXEC)) {
		snprintf(why, why_len, "not an x86-64 executable or shared object (machine %u, type %u)",
			 eh.e_machine, eh.e_type);
		elf_end(elf);
		return -1;
	}
	for (size_t i = 0; i < phnum && lay->n_loads < 16; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (ph.p_vaddr + ph.p_memsz < ph.p_vaddr || ph.p_offset + ph.p_filesz < ph.p_offset)
			continue;
		struct uw_load *l = &lay->loads[lay->n_loads++];
		*l = (struct uw_load){ ph.p_offset, ph.p_vaddr, ph.p_filesz, ph.p_memsz, ph.p_align };
		if (lay->n_loads == 1) {
			uint64_t align = ph.p_align && !(ph.p_align & (ph.p_align - 1)) ? ph.p_align : 1;
			lay->low = ph.p_vaddr & ~(align - 1);
		}
		if (ph.p_vaddr + ph.p_memsz > lay->high)
			lay->high = ph.p_vaddr + ph.p_memsz;
	}
	elf_end(elf);
	if (!lay->n_loads || lay->high <= lay->low) {
		snprintf(why, why_len, "no PT_LOAD program header");
		return -1;
	}
	return 0;
}

int uw_load_base(const struct uw_layout *lay, uint64_t start, uint64_t pgoff, uint64_t *base)
{
	for (size_t i = 0; i < lay->n_loads; i++) {
		const struct uw_load *l = &lay->loads[i];
		uint64_t first_page = l->offset & ~0xfffull;
		if (pgoff < first_page || pgoff >= l->offset + (l->filesz ? l->filesz : 1))
			continue;
		uint64_t vaddr = l->vaddr - l->offset + pgoff; /* where pgoff lives */
		*base = start - vaddr;
		return 0;
	}
	return -1;
}
