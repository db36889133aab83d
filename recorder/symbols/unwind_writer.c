/* Unwind data and full symbol tables for dwarf-mode traces (see
 * unwind_writer.h). */
#include "symbols/unwind_writer.h"

#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inspect/elf_info.h"
#include "events.h"

static const char *const wanted[] = {".eh_frame_hdr", ".eh_frame", ".debug_frame"};
#define N_WANTED (sizeof(wanted) / sizeof(wanted[0]))
#define MAX_LOADS 256

uint8_t *unwind_reduced_image(int fd, size_t *len)
{
	Elf *in = NULL, *out = NULL;
	Elf_Scn *scn = NULL;
	GElf_Ehdr ieh, oeh;
	size_t shstrndx, nph = 0, nload = 0;
	Elf_Scn *src[N_WANTED] = {0};
	char shstr[64];
	size_t name_off[N_WANTED + 1];
	uint8_t *image = NULL;
	int mfd = -1, found = 0;

	*len = 0;
	if (elf_version(EV_CURRENT) == EV_NONE || !(in = elf_begin(fd, ELF_C_READ_MMAP, NULL)) ||
	    !gelf_getehdr(in, &ieh) || elf_getshdrstrndx(in, &shstrndx) || elf_getphdrnum(in, &nph))
		goto out;
	while ((scn = elf_nextscn(in, scn))) {
		GElf_Shdr sh;
		const char *name;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(in, shstrndx, sh.sh_name)))
			continue;
		for (size_t i = 0; i < N_WANTED; i++)
			if (!strcmp(name, wanted[i]) && !src[i]) {
				src[i] = scn;
				found++;
			}
	}
	if (!src[1] && !src[2]) /* neither .eh_frame nor .debug_frame */
		goto out;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(in, (int)i, &ph) && ph.p_type == PT_LOAD)
			nload++;
	}
	/* e_phnum below is 16 bits; files have a handful of PT_LOADs, and
	 * more than MAX_LOADS is a crafted file, not one to unwind through */
	if (nload > MAX_LOADS)
		goto out;

	mfd = memfd_create("flightrec-unwind", MFD_CLOEXEC);
	if (mfd < 0 || !(out = elf_begin(mfd, ELF_C_WRITE, NULL)) ||
	    !gelf_newehdr(out, gelf_getclass(in)) || !gelf_getehdr(out, &oeh))
		goto out;
	memcpy(oeh.e_ident, ieh.e_ident, EI_NIDENT);
	oeh.e_type = ieh.e_type;
	oeh.e_machine = ieh.e_machine;
	oeh.e_version = ieh.e_version;
	oeh.e_entry = ieh.e_entry;
	oeh.e_flags = ieh.e_flags;
	/* section names: "\0.shstrtab\0" then the wanted names */
	size_t pos = 0;
	shstr[pos++] = 0;
	memcpy(shstr + pos, ".shstrtab", 10);
	size_t shstrtab_name = pos;
	pos += 10;
	for (size_t i = 0; i < N_WANTED; i++) {
		name_off[i] = pos;
		memcpy(shstr + pos, wanted[i], strlen(wanted[i]) + 1);
		pos += strlen(wanted[i]) + 1;
	}
	if (nload && !gelf_newphdr(out, nload))
		goto out;
	for (size_t i = 0, k = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(in, (int)i, &ph) && ph.p_type == PT_LOAD)
			gelf_update_phdr(out, (int)k++, &ph); /* addresses matter, offsets do not */
	}
	for (size_t i = 0; i < N_WANTED; i++) {
		GElf_Shdr ish, osh;
		Elf_Data *idata;
		if (!src[i] || !gelf_getshdr(src[i], &ish) || !(idata = elf_rawdata(src[i], NULL)))
			continue;
		Elf_Scn *os = elf_newscn(out);
		Elf_Data *od = os ? elf_newdata(os) : NULL;
		if (!od || !gelf_getshdr(os, &osh))
			goto out;
		od->d_buf = idata->d_buf;
		od->d_size = idata->d_size;
		od->d_type = ELF_T_BYTE;
		/* libelf lays the image out by these alignments: a crafted
		 * 2^40 had it write a terabyte of padding into the memfd (a
		 * hang, and memory).  Unwind sections ask for 4 or 8; offsets
		 * in the image do not matter, addresses do. */
		uint64_t align = ish.sh_addralign;
		if (align > 4096 || (align & (align - 1)))
			align = 8;
		od->d_align = align ? align : 1;
		osh.sh_name = (GElf_Word)name_off[i];
		osh.sh_type = ish.sh_type;
		osh.sh_flags = ish.sh_flags;
		osh.sh_addr = ish.sh_addr;
		osh.sh_addralign = align;
		osh.sh_entsize = ish.sh_entsize;
		gelf_update_shdr(os, &osh);
	}
	Elf_Scn *ss = elf_newscn(out);
	Elf_Data *sd = ss ? elf_newdata(ss) : NULL;
	GElf_Shdr ssh;
	if (!sd || !gelf_getshdr(ss, &ssh))
		goto out;
	sd->d_buf = shstr;
	sd->d_size = pos;
	sd->d_type = ELF_T_BYTE;
	sd->d_align = 1;
	ssh.sh_name = (GElf_Word)shstrtab_name;
	ssh.sh_type = SHT_STRTAB;
	gelf_update_shdr(ss, &ssh);
	oeh.e_shstrndx = (GElf_Half)elf_ndxscn(ss);
	oeh.e_phnum = (GElf_Half)nload; /* oeh predates gelf_newphdr */
	gelf_update_ehdr(out, &oeh);
	if (elf_update(out, ELF_C_WRITE) < 0)
		goto out;
	elf_end(out);
	out = NULL;
	struct stat st;
	if (fstat(mfd, &st) || st.st_size <= 0 || st.st_size > (1 << 30))
		goto out;
	image = malloc((size_t)st.st_size);
	if (image && pread(mfd, image, (size_t)st.st_size, 0) != st.st_size) {
		free(image);
		image = NULL;
	}
	if (image)
		*len = (size_t)st.st_size;
out:
	(void)found;
	if (out)
		elf_end(out);
	if (in)
		elf_end(in);
	if (mfd >= 0)
		close(mfd);
	return image;
}

void unwind_file_data_free(struct unwind_file_data *d)
{
	for (size_t i = 0; i < sizeof(d->owned) / sizeof(d->owned[0]); i++)
		free(d->owned[i]);
	memset(d, 0, sizeof(*d));
}

/* The symbol table as FR_REC_DSO lays it out (sizes clamped to u32, names
 * concatenated in symbol order), so a cached copy is the record's bytes.
 * A table whose record would reach 1 GiB is not written at all. */
static void lay_out_symbols(const struct elf_symtab *tab, struct unwind_file_data *d)
{
	size_t strtab_len = 0;
	for (size_t i = 0; i < tab->n; i++)
		strtab_len += strlen(tab->syms[i].name) + 1;
	if (tab->n >= (1u << 26) || strtab_len >= (1u << 30))
		return;
	struct fr_dso_sym *syms = malloc(tab->n ? tab->n * sizeof(*syms) : 1);
	char *strtab = malloc(strtab_len ? strtab_len : 1);
	if (!syms || !strtab) {
		free(syms);
		free(strtab);
		return;
	}
	size_t off = 0;
	for (size_t i = 0; i < tab->n; i++) {
		size_t l = strlen(tab->syms[i].name) + 1;
		syms[i].offset = tab->syms[i].offset;
		syms[i].size = tab->syms[i].size > UINT32_MAX ? UINT32_MAX : (uint32_t)tab->syms[i].size;
		syms[i].name_off = (uint32_t)off;
		memcpy(strtab + off, tab->syms[i].name, l);
		off += l;
	}
	d->has_symbols = true;
	d->nsyms = (uint32_t)tab->n;
	d->syms = syms;
	d->strtab = strtab;
	d->strtab_len = (uint32_t)strtab_len;
	d->owned[0] = syms;
	d->owned[1] = strtab;
}

int unwind_file_read(int fd, const uint8_t *bid, uint8_t bid_len, struct unwind_file_data *out)
{
	struct elf_symtab tab;
	int stripped = 0;
	size_t len;

	memset(out, 0, sizeof(*out));
	if (fd < 0)
		return -1;
	if (elf_load_symtab_debug(fd, bid, bid_len, &tab, &stripped) == 0) {
		lay_out_symbols(&tab, out);
		elf_symtab_free(&tab);
	}
	out->stripped = (uint8_t)stripped;
	uint8_t *image = unwind_reduced_image(fd, &len);
	if (image && len < (1u << 30)) {
		out->image = image;
		out->image_len = (uint32_t)len;
		out->owned[2] = image;
	} else {
		free(image);
	}
	return 0;
}

static void write_symbols(struct frec_builder *b, uint32_t dso_id, const char *path,
			  const uint8_t *bid, uint8_t bid_len, const struct unwind_file_data *fd,
			  struct unwind_writer_stats *st)
{
	size_t path_len = strnlen(path, 4096);
	size_t syms_at = FR_ALIGN8(sizeof(struct fr_rec_dso) + path_len);
	size_t str_at = syms_at + (size_t)fd->nsyms * sizeof(struct fr_dso_sym);
	size_t size = FR_ALIGN8(str_at + fd->strtab_len);
	if (size >= (1u << 30))
		return;
	uint8_t *rec = frec_builder_reserve(b, (uint32_t)size);
	if (!rec)
		return;
	memset(rec, 0, size);
	struct fr_rec_dso *d = (struct fr_rec_dso *)rec;
	d->h.size = (uint32_t)size;
	d->h.type = FR_REC_DSO;
	d->dso_id = dso_id;
	d->nsyms = fd->nsyms;
	d->strtab_len = fd->strtab_len;
	d->path_len = (uint16_t)path_len;
	d->build_id_len = bid_len > 20 ? 20 : bid_len;
	memcpy(d->build_id, bid, d->build_id_len);
	memcpy(rec + sizeof(*d), path, path_len);
	if (fd->nsyms)
		memcpy(rec + syms_at, fd->syms, (size_t)fd->nsyms * sizeof(struct fr_dso_sym));
	if (fd->strtab_len)
		memcpy(rec + str_at, fd->strtab, fd->strtab_len);
	frec_builder_commit(b, 0);
	st->symbols += fd->nsyms;
}

void unwind_file_emit(struct frec_builder *b, uint32_t dso_id, const char *path,
		      const uint8_t *bid, uint8_t bid_len, const struct unwind_file_data *fd,
		      struct unwind_writer_stats *st)
{
	if (fd->has_symbols)
		write_symbols(b, dso_id, path, bid, bid_len, fd, st);
	if (fd->stripped == 1)
		st->debug_files++;
	if (fd->stripped == 2 && st->stripped++ < UNWIND_STRIPPED_NAMED) {
		const char *base = strrchr(path, '/');
		snprintf(st->stripped_names[st->stripped - 1], sizeof(st->stripped_names[0]), "%s",
			 base ? base + 1 : path);
	}
	if (!fd->image)
		return;
	size_t len = fd->image_len;
	uint32_t size = FR_ALIGN8(sizeof(struct fr_rec_unwind) + len);
	struct fr_rec_unwind *r = len < (1u << 30) ? frec_builder_reserve(b, size) : NULL;
	if (r) {
		memset(r, 0, size);
		r->h.size = size;
		r->h.type = FR_REC_UNWIND;
		r->dso_id = dso_id;
		r->image_len = (uint32_t)len;
		r->build_id_len = bid_len > 20 ? 20 : bid_len;
		memcpy(r->build_id, bid, r->build_id_len);
		memcpy(r + 1, fd->image, len);
		frec_builder_commit(b, 0);
		st->files++;
		st->image_bytes += len;
	}
}

void unwind_write_file(struct frec_builder *b, uint32_t dso_id, int fd, const char *path,
		       const uint8_t *bid, uint8_t bid_len, struct unwind_writer_stats *st)
{
	struct unwind_file_data d;

	if (unwind_file_read(fd, bid, bid_len, &d))
		return;
	unwind_file_emit(b, dso_id, path, bid, bid_len, &d, st);
	unwind_file_data_free(&d);
}
