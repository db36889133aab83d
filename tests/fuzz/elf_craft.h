/* Small ELF64 x86-64 shared objects written from scratch, for the seeds of
 * fuzz_recorder_elf and the hostile-input cases of test_recorder_elf: a
 * file whose every section is known, so a test can corrupt one field and
 * say which.  No binary is committed; these are built at run time.
 *
 * Layout (file offsets = virtual addresses, one PT_LOAD over the file):
 *   Ehdr | Phdr[PT_LOAD, PT_DYNAMIC, PT_NOTE] | .text | .note.gnu.build-id |
 *   .dynstr | .dynsym | .gnu.version | .strtab | .symtab | .dynamic |
 *   .eh_frame | .shstrtab | Shdr[CRAFT_NSEC]
 * Function symbols: each name in opts.funcs is a 16-byte function in
 * .text, exported in .dynsym and listed in .symtab. */
#ifndef FLIGHTREC_ELF_CRAFT_H
#define FLIGHTREC_ELF_CRAFT_H

#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum {
	CRAFT_SEC_NULL,
	CRAFT_SEC_TEXT,
	CRAFT_SEC_NOTE,
	CRAFT_SEC_DYNSTR,
	CRAFT_SEC_DYNSYM,
	CRAFT_SEC_VERSYM,
	CRAFT_SEC_STRTAB,
	CRAFT_SEC_SYMTAB,
	CRAFT_SEC_DYNAMIC,
	CRAFT_SEC_EH_FRAME,
	CRAFT_SEC_SHSTRTAB,
	CRAFT_NSEC
};
enum { CRAFT_PH_LOAD, CRAFT_PH_DYNAMIC, CRAFT_PH_NOTE, CRAFT_NPH };

#define CRAFT_MAX_NAMES 16

struct craft_opts {
	const char *funcs[CRAFT_MAX_NAMES];   /* NULL-terminated */
	const char *needed[CRAFT_MAX_NAMES];  /* NULL-terminated */
	const char *rpath, *runpath;          /* NULL: no entry */
	uint8_t build_id[20];
	int no_build_id;
	/* extra .symtab entries, all named funcs[0] at the first function:
	 * many symbols sharing one (long) name */
	size_t repeat_first;
};

struct craft_buf {
	uint8_t *d;
	size_t len, cap;
};

static inline size_t craft_put(struct craft_buf *b, const void *p, size_t n)
{
	size_t at = b->len;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		b->d = realloc(b->d, cap);
		if (!b->d)
			abort();
		memset(b->d + b->cap, 0, cap - b->cap);
		b->cap = cap;
	}
	if (p)
		memcpy(b->d + b->len, p, n);
	b->len += n;
	return at;
}

static inline void craft_align(struct craft_buf *b, size_t a)
{
	while (b->len % a)
		craft_put(b, "", 1);
}

static inline size_t craft_str(struct craft_buf *s, const char *str)
{
	return craft_put(s, str, strlen(str) + 1);
}

static inline Elf64_Ehdr *craft_ehdr(uint8_t *d)
{
	return (Elf64_Ehdr *)d;
}

static inline Elf64_Shdr *craft_shdr(uint8_t *d, int i)
{
	Elf64_Ehdr eh;
	memcpy(&eh, d, sizeof(eh));
	return (Elf64_Shdr *)(d + eh.e_shoff) + i;
}

static inline Elf64_Phdr *craft_phdr(uint8_t *d, int i)
{
	return (Elf64_Phdr *)(d + sizeof(Elf64_Ehdr)) + i;
}

/* The file (malloc'd) and its length. */
static inline uint8_t *craft_elf(const struct craft_opts *o, size_t *len)
{
	struct craft_buf f = {0}, dynstr = {0}, strtab = {0}, shstr = {0};
	Elf64_Shdr sh[CRAFT_NSEC];
	static const char *const sec_names[CRAFT_NSEC] = {
		"", ".text", ".note.gnu.build-id", ".dynstr", ".dynsym", ".gnu.version",
		".strtab", ".symtab", ".dynamic", ".eh_frame", ".shstrtab"};
	size_t sh_name[CRAFT_NSEC], nfunc = 0, func_dyn[CRAFT_MAX_NAMES], func_str[CRAFT_MAX_NAMES];
	size_t needed_at[CRAFT_MAX_NAMES], rpath_at = 0, runpath_at = 0;

	memset(sh, 0, sizeof(sh));
	for (int i = 0; i < CRAFT_NSEC; i++)
		sh_name[i] = craft_str(&shstr, sec_names[i]);
	craft_str(&dynstr, "");
	craft_str(&strtab, "");
	while (nfunc < CRAFT_MAX_NAMES && o->funcs[nfunc]) {
		func_dyn[nfunc] = craft_str(&dynstr, o->funcs[nfunc]);
		func_str[nfunc] = craft_str(&strtab, o->funcs[nfunc]);
		nfunc++;
	}
	size_t local_name = craft_str(&strtab, "craft_local_helper");
	int nneeded = 0;
	while (nneeded < CRAFT_MAX_NAMES && o->needed[nneeded]) {
		needed_at[nneeded] = craft_str(&dynstr, o->needed[nneeded]);
		nneeded++;
	}
	if (o->rpath)
		rpath_at = craft_str(&dynstr, o->rpath);
	if (o->runpath)
		runpath_at = craft_str(&dynstr, o->runpath);

	craft_put(&f, NULL, sizeof(Elf64_Ehdr) + CRAFT_NPH * sizeof(Elf64_Phdr));

	/* .text: each function pushes %rbp and returns, padded to 16 bytes */
	craft_align(&f, 16);
	sh[CRAFT_SEC_TEXT].sh_offset = f.len;
	for (size_t i = 0; i < nfunc + 1; i++) {
		static const uint8_t fn[16] = {0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3, 0x90, 0x90,
					       0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90};
		craft_put(&f, fn, sizeof(fn));
	}
	sh[CRAFT_SEC_TEXT].sh_size = f.len - sh[CRAFT_SEC_TEXT].sh_offset;
	sh[CRAFT_SEC_TEXT].sh_type = SHT_PROGBITS;
	sh[CRAFT_SEC_TEXT].sh_flags = SHF_ALLOC | SHF_EXECINSTR;
	sh[CRAFT_SEC_TEXT].sh_addralign = 16;

	craft_align(&f, 4);
	sh[CRAFT_SEC_NOTE].sh_offset = f.len;
	if (!o->no_build_id) {
		Elf64_Nhdr nh = {.n_namesz = 4, .n_descsz = 20, .n_type = NT_GNU_BUILD_ID};
		craft_put(&f, &nh, sizeof(nh));
		craft_put(&f, "GNU", 4);
		craft_put(&f, o->build_id, 20);
	} else {
		Elf64_Nhdr nh = {.n_namesz = 4, .n_descsz = 4, .n_type = 1 /* NT_GNU_ABI_TAG */};
		craft_put(&f, &nh, sizeof(nh));
		craft_put(&f, "GNU\0\0\0\0", 8);
	}
	sh[CRAFT_SEC_NOTE].sh_size = f.len - sh[CRAFT_SEC_NOTE].sh_offset;
	sh[CRAFT_SEC_NOTE].sh_type = SHT_NOTE;
	sh[CRAFT_SEC_NOTE].sh_flags = SHF_ALLOC;
	sh[CRAFT_SEC_NOTE].sh_addralign = 4;

	sh[CRAFT_SEC_DYNSTR].sh_offset = craft_put(&f, dynstr.d, dynstr.len);
	sh[CRAFT_SEC_DYNSTR].sh_size = dynstr.len;
	sh[CRAFT_SEC_DYNSTR].sh_type = SHT_STRTAB;
	sh[CRAFT_SEC_DYNSTR].sh_flags = SHF_ALLOC;
	sh[CRAFT_SEC_DYNSTR].sh_addralign = 1;

	craft_align(&f, 8);
	sh[CRAFT_SEC_DYNSYM].sh_offset = f.len;
	craft_put(&f, NULL, sizeof(Elf64_Sym));
	for (size_t i = 0; i < nfunc; i++) {
		Elf64_Sym s = {.st_name = (Elf64_Word)func_dyn[i],
			       .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
			       .st_shndx = CRAFT_SEC_TEXT,
			       .st_value = sh[CRAFT_SEC_TEXT].sh_offset + 16 * i, .st_size = 6};
		craft_put(&f, &s, sizeof(s));
	}
	sh[CRAFT_SEC_DYNSYM].sh_size = f.len - sh[CRAFT_SEC_DYNSYM].sh_offset;
	sh[CRAFT_SEC_DYNSYM].sh_type = SHT_DYNSYM;
	sh[CRAFT_SEC_DYNSYM].sh_flags = SHF_ALLOC;
	sh[CRAFT_SEC_DYNSYM].sh_entsize = sizeof(Elf64_Sym);
	sh[CRAFT_SEC_DYNSYM].sh_link = CRAFT_SEC_DYNSTR;
	sh[CRAFT_SEC_DYNSYM].sh_info = 1;
	sh[CRAFT_SEC_DYNSYM].sh_addralign = 8;

	sh[CRAFT_SEC_VERSYM].sh_offset = f.len;
	for (size_t i = 0; i < nfunc + 1; i++) {
		uint16_t v = i ? 1 : 0; /* VER_NDX_GLOBAL */
		craft_put(&f, &v, 2);
	}
	sh[CRAFT_SEC_VERSYM].sh_size = f.len - sh[CRAFT_SEC_VERSYM].sh_offset;
	sh[CRAFT_SEC_VERSYM].sh_type = SHT_GNU_versym;
	sh[CRAFT_SEC_VERSYM].sh_flags = SHF_ALLOC;
	sh[CRAFT_SEC_VERSYM].sh_entsize = 2;
	sh[CRAFT_SEC_VERSYM].sh_link = CRAFT_SEC_DYNSYM;
	sh[CRAFT_SEC_VERSYM].sh_addralign = 2;

	sh[CRAFT_SEC_STRTAB].sh_offset = craft_put(&f, strtab.d, strtab.len);
	sh[CRAFT_SEC_STRTAB].sh_size = strtab.len;
	sh[CRAFT_SEC_STRTAB].sh_type = SHT_STRTAB;
	sh[CRAFT_SEC_STRTAB].sh_addralign = 1;

	craft_align(&f, 8);
	sh[CRAFT_SEC_SYMTAB].sh_offset = f.len;
	craft_put(&f, NULL, sizeof(Elf64_Sym));
	{
		Elf64_Sym s = {.st_name = (Elf64_Word)local_name,
			       .st_info = ELF64_ST_INFO(STB_LOCAL, STT_FUNC),
			       .st_shndx = CRAFT_SEC_TEXT,
			       .st_value = sh[CRAFT_SEC_TEXT].sh_offset + 16 * nfunc, .st_size = 6};
		craft_put(&f, &s, sizeof(s));
	}
	for (size_t i = 0; i < nfunc; i++) {
		Elf64_Sym s = {.st_name = (Elf64_Word)func_str[i],
			       .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
			       .st_shndx = CRAFT_SEC_TEXT,
			       .st_value = sh[CRAFT_SEC_TEXT].sh_offset + 16 * i, .st_size = 6};
		craft_put(&f, &s, sizeof(s));
	}
	for (size_t i = 0; nfunc && i < o->repeat_first; i++) {
		Elf64_Sym s = {.st_name = (Elf64_Word)func_str[0],
			       .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
			       .st_shndx = CRAFT_SEC_TEXT,
			       .st_value = sh[CRAFT_SEC_TEXT].sh_offset, .st_size = 6};
		craft_put(&f, &s, sizeof(s));
	}
	sh[CRAFT_SEC_SYMTAB].sh_size = f.len - sh[CRAFT_SEC_SYMTAB].sh_offset;
	sh[CRAFT_SEC_SYMTAB].sh_type = SHT_SYMTAB;
	sh[CRAFT_SEC_SYMTAB].sh_entsize = sizeof(Elf64_Sym);
	sh[CRAFT_SEC_SYMTAB].sh_link = CRAFT_SEC_STRTAB;
	sh[CRAFT_SEC_SYMTAB].sh_info = 2;
	sh[CRAFT_SEC_SYMTAB].sh_addralign = 8;

	sh[CRAFT_SEC_DYNAMIC].sh_offset = f.len;
	for (int i = 0; i < nneeded; i++) {
		Elf64_Dyn dn = {.d_tag = DT_NEEDED, .d_un.d_val = needed_at[i]};
		craft_put(&f, &dn, sizeof(dn));
	}
	if (o->rpath) {
		Elf64_Dyn dn = {.d_tag = DT_RPATH, .d_un.d_val = rpath_at};
		craft_put(&f, &dn, sizeof(dn));
	}
	if (o->runpath) {
		Elf64_Dyn dn = {.d_tag = DT_RUNPATH, .d_un.d_val = runpath_at};
		craft_put(&f, &dn, sizeof(dn));
	}
	{
		Elf64_Dyn tail[] = {
			{.d_tag = DT_STRTAB, .d_un.d_ptr = sh[CRAFT_SEC_DYNSTR].sh_offset},
			{.d_tag = DT_SYMTAB, .d_un.d_ptr = sh[CRAFT_SEC_DYNSYM].sh_offset},
			{.d_tag = DT_STRSZ, .d_un.d_val = dynstr.len},
			{.d_tag = DT_SYMENT, .d_un.d_val = sizeof(Elf64_Sym)},
			{.d_tag = DT_NULL},
		};
		craft_put(&f, tail, sizeof(tail));
	}
	sh[CRAFT_SEC_DYNAMIC].sh_size = f.len - sh[CRAFT_SEC_DYNAMIC].sh_offset;
	sh[CRAFT_SEC_DYNAMIC].sh_type = SHT_DYNAMIC;
	sh[CRAFT_SEC_DYNAMIC].sh_flags = SHF_ALLOC | SHF_WRITE;
	sh[CRAFT_SEC_DYNAMIC].sh_entsize = sizeof(Elf64_Dyn);
	sh[CRAFT_SEC_DYNAMIC].sh_link = CRAFT_SEC_DYNSTR;
	sh[CRAFT_SEC_DYNAMIC].sh_addralign = 8;

	/* .eh_frame: one CIE (version 1, "zR", code align 1, data align -8,
	 * return address column 16, pcrel|sdata4 FDE pointers) and the
	 * terminator; no FDE, the unwind writer only copies the bytes */
	craft_align(&f, 8);
	sh[CRAFT_SEC_EH_FRAME].sh_offset = f.len;
	{
		static const uint8_t cie[] = {0x14, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78,
					      0x10, 1, 0x1b, 0x0c, 7, 8, 0x90, 1, 0, 0, 0, 0, 0, 0};
		craft_put(&f, cie, sizeof(cie));
	}
	sh[CRAFT_SEC_EH_FRAME].sh_size = f.len - sh[CRAFT_SEC_EH_FRAME].sh_offset;
	sh[CRAFT_SEC_EH_FRAME].sh_type = SHT_PROGBITS;
	sh[CRAFT_SEC_EH_FRAME].sh_flags = SHF_ALLOC;
	sh[CRAFT_SEC_EH_FRAME].sh_addralign = 8;

	sh[CRAFT_SEC_SHSTRTAB].sh_offset = craft_put(&f, shstr.d, shstr.len);
	sh[CRAFT_SEC_SHSTRTAB].sh_size = shstr.len;
	sh[CRAFT_SEC_SHSTRTAB].sh_type = SHT_STRTAB;
	sh[CRAFT_SEC_SHSTRTAB].sh_addralign = 1;

	for (int i = 1; i < CRAFT_NSEC; i++) {
		sh[i].sh_name = (Elf64_Word)sh_name[i];
		if (sh[i].sh_flags & SHF_ALLOC)
			sh[i].sh_addr = sh[i].sh_offset;
	}
	craft_align(&f, 8);
	size_t shoff = craft_put(&f, sh, sizeof(sh));

	Elf64_Ehdr eh = {
		.e_ident = {ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB, EV_CURRENT},
		.e_type = ET_DYN,
		.e_machine = EM_X86_64,
		.e_version = EV_CURRENT,
		.e_phoff = sizeof(Elf64_Ehdr),
		.e_shoff = shoff,
		.e_ehsize = sizeof(Elf64_Ehdr),
		.e_phentsize = sizeof(Elf64_Phdr),
		.e_phnum = CRAFT_NPH,
		.e_shentsize = sizeof(Elf64_Shdr),
		.e_shnum = CRAFT_NSEC,
		.e_shstrndx = CRAFT_SEC_SHSTRTAB,
	};
	memcpy(f.d, &eh, sizeof(eh));
	Elf64_Phdr ph[CRAFT_NPH] = {
		[CRAFT_PH_LOAD] = {.p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = 0,
				   .p_vaddr = 0, .p_paddr = 0, .p_filesz = f.len, .p_memsz = f.len,
				   .p_align = 4096},
		[CRAFT_PH_DYNAMIC] = {.p_type = PT_DYNAMIC, .p_flags = PF_R | PF_W,
				      .p_offset = sh[CRAFT_SEC_DYNAMIC].sh_offset,
				      .p_vaddr = sh[CRAFT_SEC_DYNAMIC].sh_offset,
				      .p_filesz = sh[CRAFT_SEC_DYNAMIC].sh_size,
				      .p_memsz = sh[CRAFT_SEC_DYNAMIC].sh_size, .p_align = 8},
		[CRAFT_PH_NOTE] = {.p_type = PT_NOTE, .p_flags = PF_R,
				   .p_offset = sh[CRAFT_SEC_NOTE].sh_offset,
				   .p_vaddr = sh[CRAFT_SEC_NOTE].sh_offset,
				   .p_filesz = sh[CRAFT_SEC_NOTE].sh_size,
				   .p_memsz = sh[CRAFT_SEC_NOTE].sh_size, .p_align = 4},
	};
	memcpy(f.d + sizeof(eh), ph, sizeof(ph));
	free(dynstr.d);
	free(strtab.d);
	free(shstr.d);
	*len = f.len;
	return f.d;
}

#endif
