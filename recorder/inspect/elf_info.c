/* Build-ids and symbol tables from ELF files (libelf), and the kernel's from
 * /proc/kallsyms.  Runs off the hot path: on the tracking thread (build-ids)
 * and at the end of the recording (symbols). */
#include "inspect/elf_info.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool elf_ready(void)
{
	static int state; /* 0 unknown, 1 ok, -1 failed */
	if (!state)
		state = elf_version(EV_CURRENT) == EV_NONE ? -1 : 1;
	return state > 0;
}

/* The file at fd as an ELF file, or NULL.  Only the host's byte order:
 * no process here runs code of the other, and libelf converts such a file
 * into fresh copies of every section read, which a crafted file (thousands
 * of section headers over the same bytes) turns into gigabytes. */
static Elf *elf_open_native(int fd)
{
	Elf *e;
	if (!elf_ready() || !(e = elf_begin(fd, ELF_C_READ_MMAP, NULL)))
		return NULL;
	size_t n = 0;
	const char *ident = elf_getident(e, &n);
	if (elf_kind(e) != ELF_K_ELF || !ident || n <= EI_DATA ||
	    ident[EI_DATA] != (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB)) {
		elf_end(e);
		return NULL;
	}
	return e;
}

/* The entries a symbol table section really holds, whatever its sh_size
 * and sh_entsize claim.  (Readers take the first .symtab and the first
 * .dynsym only: a file has one of each, and a crafted one with thousands
 * would have each read, and its names copied, again.) */
static size_t sym_count(Elf *e, const GElf_Shdr *sh, const Elf_Data *d)
{
	size_t ent = gelf_fsize(e, ELF_T_SYM, 1, EV_CURRENT);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	if (!ent || !d)
		return 0;
	return n < d->d_size / ent ? n : d->d_size / ent;
}

static int note_build_id(Elf_Data *data, uint8_t out[20], uint8_t *len)
{
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;

	while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp((char *)data->d_buf + name_off, "GNU", 4)) {
			size_t n = nh.n_descsz > 20 ? 20 : nh.n_descsz;
			memcpy(out, (char *)data->d_buf + desc_off, n);
			*len = (uint8_t)n;
			return 0;
		}
	}
	return -1;
}

int elf_read_build_id(int fd, uint8_t out[20], uint8_t *len)
{
	Elf *e;
	Elf_Scn *scn = NULL;
	int ret = -1;

	*len = 0;
	if (!(e = elf_open_native(fd)))
		return -1;
	while ((scn = elf_nextscn(e, scn)) && ret) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (d)
			ret = note_build_id(d, out, len);
	}
	if (ret) {
		/* section headers stripped: try program headers */
		size_t n = 0;
		if (elf_getphdrnum(e, &n) == 0) {
			for (size_t i = 0; i < n && ret; i++) {
				GElf_Phdr ph;
				if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_NOTE)
					continue;
				Elf_Data *d = elf_getdata_rawchunk(e, ph.p_offset, ph.p_filesz, ELF_T_NHDR);
				if (d)
					ret = note_build_id(d, out, len);
			}
		}
	}
	elf_end(e);
	return ret;
}

struct load_seg {
	uint64_t vaddr, filesz, offset;
};

struct sym_builder {
	struct elf_sym *syms;
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
	/* 0: unbounded.  Each symbol's name is copied, and a crafted file
	 * can point thousands of symbols at one long string (a 1 MiB file
	 * asking for gigabytes); a real file's names fit in its own size. */
	size_t names_budget;
	bool full; /* the budget ran out: the table is cut short */
};

static int add_sym(struct sym_builder *b, uint64_t offset, uint64_t size, const char *name)
{
	size_t len = strlen(name) + 1;
	if (b->names_budget && len > b->names_budget - b->names_len) {
		b->full = true;
		return 0;
	}
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 1024;
		struct elf_sym *s = realloc(b->syms, cap * sizeof(*s));
		if (!s)
			return -1;
		b->syms = s;
		b->cap = cap;
	}
	if (b->names_len + len > b->names_cap) {
		size_t cap = b->names_cap ? b->names_cap : 16384;
		while (cap < b->names_len + len)
			cap *= 2;
		char *s = realloc(b->names, cap);
		if (!s)
			return -1;
		b->names = s;
		b->names_cap = cap;
	}
	memcpy(b->names + b->names_len, name, len);
	/* name stored as an offset until the storage stops moving */
	b->syms[b->n].offset = offset;
	b->syms[b->n].size = size;
	b->syms[b->n].name = (const char *)(uintptr_t)b->names_len;
	b->n++;
	b->names_len += len;
	return 0;
}

static int cmp_sym_named(const void *a, const void *b)
{
	const struct elf_sym *x = a, *y = b;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	if (x->size != y->size)
		return (x->size < y->size) - (x->size > y->size);
	size_t lx = strlen(x->name), ly = strlen(y->name);
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void finish_syms(struct sym_builder *b, struct elf_symtab *out)
{
	size_t w = 0;

	for (size_t i = 0; i < b->n; i++)
		b->syms[i].name = b->names + (uintptr_t)b->syms[i].name;
	if (b->n) /* qsort(NULL, 0, ...) is undefined behaviour */
		qsort(b->syms, b->n, sizeof(*b->syms), cmp_sym_named);
	for (size_t i = 0; i < b->n; i++) {
		if (w && b->syms[w - 1].offset == b->syms[i].offset)
			continue; /* one name per offset (aliases) */
		b->syms[w++] = b->syms[i];
	}
	for (size_t i = 0; i < w; i++) {
		/* up to the next symbol, and never past 2^64: a crafted size
		 * would wrap offset + size and the symbol would cover nothing */
		uint64_t off = b->syms[i].offset;
		uint64_t room = i + 1 < w ? b->syms[i + 1].offset - off : UINT64_MAX - off;
		if (b->syms[i].size == 0 || b->syms[i].size > room)
			b->syms[i].size = i + 1 < w || room < 4096 ? room : 4096;
	}
	out->syms = b->syms;
	out->n = w;
	out->names = b->names;
	out->names_len = b->names_len;
}

/* The function symbols of e's symbol tables of type want (SHT_SYMTAB or
 * SHT_DYNSYM; 0: both) into b, as file offsets through segs.  *had_symtab
 * tells whether e has a .symtab.  0, or -1 out of memory. */
static int collect_syms(Elf *e, const struct load_seg *segs, size_t nsegs, uint32_t want,
			struct sym_builder *b, bool *had_symtab)
{
	Elf_Scn *scn = NULL;
	bool seen_symtab = false, seen_dynsym = false;
	while ((scn = elf_nextscn(e, scn)) && !b->full) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		if (sh.sh_type == SHT_SYMTAB && had_symtab)
			*had_symtab = true;
		bool *seen = sh.sh_type == SHT_SYMTAB ? &seen_symtab : &seen_dynsym;
		if ((want && sh.sh_type != want) || *seen)
			continue;
		*seen = true;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !sh.sh_entsize)
			continue;
		size_t count = sym_count(e, &sh, d);
		for (size_t i = 0; i < count && !b->full; i++) {
			GElf_Sym s;
			if (!gelf_getsym(d, (int)i, &s))
				continue;
			int type = GELF_ST_TYPE(s.st_info);
			if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF ||
			    !s.st_value)
				continue;
			const char *name = elf_strptr(e, sh.sh_link, s.st_name);
			if (!name || !*name)
				continue;
			for (size_t k = 0; k < nsegs; k++) {
				if (s.st_value >= segs[k].vaddr &&
				    s.st_value < segs[k].vaddr + segs[k].filesz) {
					if (add_sym(b, s.st_value - segs[k].vaddr + segs[k].offset,
						    s.st_size, name))
						return -1;
					break;
				}
			}
		}
	}
	return 0;
}

/* Names a file of size bytes may ask the recorder to copy: twice its size
 * (.symtab and .dynsym name the same functions, in two string tables) and
 * 1 MiB (linkers share string tails). */
static size_t names_budget(size_t size)
{
	return size < (SIZE_MAX >> 2) ? 2 * size + (1u << 20) : SIZE_MAX >> 1;
}

void elf_debug_path(const uint8_t *bid, uint8_t bid_len, char path[ELF_DEBUG_PATH_MAX])
{
	size_t len = ELF_DEBUG_PATH_MAX;
	size_t at = (size_t)snprintf(path, len, "%s/.build-id/%02x/", ELF_DEBUG_ROOT, bid[0]);
	for (uint8_t i = 1; i < bid_len && at + 3 < len; i++)
		at += (size_t)snprintf(path + at, len - at, "%02x", bid[i]);
	snprintf(path + at, len - at, ".debug");
}

/* The .symtab of the separate debug file of build-id bid, when installed:
 * DEBUG_ROOT/.build-id/xx/rest.debug (Debian's -dbg packages).  Its
 * addresses are the file's own, so the file's segments translate them. */
static int collect_debug_syms(const uint8_t *bid, uint8_t bid_len, const struct load_seg *segs,
			      size_t nsegs, struct sym_builder *b, bool *found)
{
	char path[ELF_DEBUG_PATH_MAX];
	elf_debug_path(bid, bid_len, path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	int rc = 0;
	Elf *e = elf_open_native(fd);
	if (e) {
		bool had = false;
		size_t size = 0;
		elf_rawfile(e, &size);
		b->names_budget += names_budget(size);
		rc = collect_syms(e, segs, nsegs, SHT_SYMTAB, b, &had);
		*found = had;
	}
	if (e)
		elf_end(e);
	close(fd);
	return rc;
}

int elf_load_symtab_debug(int fd, const uint8_t *bid, uint8_t bid_len, struct elf_symtab *out,
			  int *stripped)
{
	struct sym_builder b = {0};
	struct load_seg segs[32];
	size_t nsegs = 0, nph = 0;
	Elf *e;

	memset(out, 0, sizeof(*out));
	if (stripped)
		*stripped = 0;
	if (!(e = elf_open_native(fd)))
		return -1;
	if (elf_getphdrnum(e, &nph) != 0) {
		elf_end(e);
		return -1;
	}
	size_t file_size = 0;
	elf_rawfile(e, &file_size);
	b.names_budget = names_budget(file_size);
	for (size_t i = 0; i < nph && nsegs < 32; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD)
			segs[nsegs++] = (struct load_seg){ph.p_vaddr, ph.p_filesz, ph.p_offset};
	}
	bool had_symtab = false, debug = false;
	int rc = collect_syms(e, segs, nsegs, 0, &b, &had_symtab);
	elf_end(e);
	/* stripped (Debian's libc keeps only .dynsym and a .gnu_debuglink):
	 * the exported names alone leave most frames as file+offset */
	if (!rc && !had_symtab && bid && bid_len)
		rc = collect_debug_syms(bid, bid_len, segs, nsegs, &b, &debug);
	if (rc) {
		free(b.syms);
		free(b.names);
		return -1;
	}
	if (stripped && !had_symtab)
		*stripped = debug ? 1 : 2;
	finish_syms(&b, out);
	return 0;
}

int elf_load_symtab(int fd, struct elf_symtab *out)
{
	return elf_load_symtab_debug(fd, NULL, 0, out, NULL);
}

const struct elf_sym *elf_symtab_find(const struct elf_symtab *t, uint64_t offset)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (t->syms[mid].offset <= offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct elf_sym *s = &t->syms[lo - 1];
	return offset < s->offset + s->size ? s : NULL;
}

void elf_symtab_free(struct elf_symtab *t)
{
	free(t->syms);
	free(t->names);
	memset(t, 0, sizeof(*t));
}

int kallsyms_load(const char *path, struct elf_symtab *out)
{
	struct sym_builder b = {0};
	char line[512];
	FILE *f = fopen(path, "re");

	memset(out, 0, sizeof(*out));
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long addr;
		char type, name[256];
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3 || !addr)
			continue;
		if (type != 't' && type != 'T' && type != 'W' && type != 'w')
			continue;
		if (add_sym(&b, addr, 0, name)) {
			fclose(f);
			free(b.syms);
			free(b.names);
			return -1;
		}
	}
	fclose(f);
	finish_syms(&b, out);
	return out->n ? 0 : -1;
}

/* Adds a candidate for names[i]: a default-version or unversioned dynamic
 * symbol beats a hidden (compat) version, which beats a .symtab one. */
static void consider(uint64_t *out, int *rank, size_t i, uint64_t off, int r)
{
	if (r > rank[i]) {
		out[i] = off;
		rank[i] = r;
	}
}

struct wanted {
	const char *name;
	size_t i; /* its index in the caller's names */
};

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct wanted *)a)->name, ((const struct wanted *)b)->name);
}

/* The first of the wanted entries named name (they are sorted, a name may
 * be wanted twice), or NULL. */
static const struct wanted *first_wanted(const struct wanted *w, size_t n, const char *name)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(w[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && !strcmp(w[lo].name, name) ? &w[lo] : NULL;
}

int elf_find_functions(int fd, const char *const *names, size_t n, uint64_t *out,
		       uint8_t (*first_bytes)[8])
{
	struct load_seg segs[32];
	size_t nsegs = 0, nph = 0;
	Elf_Scn *scn = NULL;
	Elf *e;
	int *rank = calloc(n ? n : 1, sizeof(int));
	/* sorted once: a library's symbol table (libtorch's: hundreds of
	 * thousands) is searched per symbol, not compared name by name */
	struct wanted *want = calloc(n ? n : 1, sizeof(*want));
	int found = 0;

	if (!rank || !want) {
		free(rank);
		free(want);
		return -1;
	}
	/* the first bytes the wanted names start with: most of a C++
	 * library's names (_Z...) then cost one test, not a binary search */
	uint64_t first[4] = {0};
	for (size_t i = 0; i < n; i++) {
		want[i] = (struct wanted){names[i], i};
		unsigned char c = (unsigned char)names[i][0];
		first[c >> 6] |= 1ull << (c & 63);
	}
	if (n)
		qsort(want, n, sizeof(*want), by_name);
	for (size_t i = 0; i < n; i++)
		out[i] = 0;
	if (!(e = elf_open_native(fd))) {
		free(rank);
		free(want);
		return -1;
	}
	if (elf_getphdrnum(e, &nph) != 0) {
		elf_end(e);
		free(rank);
		free(want);
		return -1;
	}
	for (size_t i = 0; i < nph && nsegs < 32; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD)
			segs[nsegs++] = (struct load_seg){ph.p_vaddr, ph.p_filesz, ph.p_offset};
	}
	Elf_Data *versym = NULL;
	while (!versym && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_GNU_versym)
			versym = elf_getdata(scn, NULL);
	}
	scn = NULL;
	bool seen_symtab = false, seen_dynsym = false; /* one of each (see sym_count) */
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize)
			continue;
		bool *seen = sh.sh_type == SHT_SYMTAB ? &seen_symtab : &seen_dynsym;
		if (*seen)
			continue;
		*seen = true;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		bool dynamic = sh.sh_type == SHT_DYNSYM;
		size_t count = sym_count(e, &sh, d);
		for (size_t k = 0; k < count; k++) {
			GElf_Sym s;
			if (!gelf_getsym(d, (int)k, &s))
				continue;
			int type = GELF_ST_TYPE(s.st_info);
			if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF ||
			    !s.st_value)
				continue;
			const char *name = elf_strptr(e, sh.sh_link, s.st_name);
			if (!name)
				continue;
			unsigned char c0 = (unsigned char)name[0];
			if (!(first[c0 >> 6] & (1ull << (c0 & 63))))
				continue;
			const struct wanted *w = first_wanted(want, n, name);
			for (; w && w < want + n && !strcmp(w->name, name); w++) {
				size_t i = w->i;
				int r = 1; /* .symtab */
				if (dynamic) {
					GElf_Versym vs = 0;
					r = 3;
					if (versym && gelf_getversym(versym, (int)k, &vs) && (vs & 0x8000))
						r = 2; /* hidden: a compat version */
				}
				for (size_t g = 0; g < nsegs; g++) {
					if (s.st_value >= segs[g].vaddr &&
					    s.st_value < segs[g].vaddr + segs[g].filesz) {
						consider(out, rank, i,
							 s.st_value - segs[g].vaddr + segs[g].offset, r);
						break;
					}
				}
			}
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (!out[i])
			continue;
		found++;
		if (first_bytes) {
			/* read, not from libelf's mapping: while another tracer has a
			 * uprobe on this file the kernel puts its int3 into every
			 * private mapping of it, ours too, and the bytes there would
			 * say "single-stepped" of every probed function.  The page
			 * cache holds the file's own bytes.  out[i] comes from the
			 * file: an offset past off_t's range is not read. */
			memset(first_bytes[i], 0, 8);
			if (out[i] <= (uint64_t)INT64_MAX - 8 &&
			    pread(fd, first_bytes[i], 8, (off_t)out[i]) != 8)
				memset(first_bytes[i], 0, 8);
		}
	}
	elf_end(e);
	free(rank);
	free(want);
	return found;
}

int uprobe_insn_emulated(const uint8_t c[8])
{
	/* push %rbp / %rbx ... (0x50-0x57), push %r8-%r15 (0x41 0x50-0x57) */
	if (c[0] >= 0x50 && c[0] <= 0x57)
		return 1;
	if (c[0] == 0x41 && c[1] >= 0x50 && c[1] <= 0x57)
		return 1;
	/* call/jmp rel32, jmp rel8, jcc rel8, jcc rel32 */
	if (c[0] == 0xe8 || c[0] == 0xe9 || c[0] == 0xeb || (c[0] >= 0x70 && c[0] <= 0x7f))
		return 1;
	if (c[0] == 0x0f && c[1] >= 0x80 && c[1] <= 0x8f)
		return 1;
	/* the 5-byte nop that patchable entries start with */
	if (c[0] == 0x0f && c[1] == 0x1f && c[2] == 0x44 && c[3] == 0x00 && c[4] == 0x00)
		return 1;
	return 0;
}
