/* CPython facts from bytes (see python_parse.h).  The offsets below come
 * from CPython's headers (x86-64, release builds; see python.c). */
#include "inspect/python_parse.h"

#include <ctype.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

unsigned py_version_from_name(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (!strncmp(base, "lib", 3))
		base += 3;
	if (strncmp(base, "python3", 7))
		return 0;
	const char *p = base + 7;
	if (*p == 0)
		return 300;
	if (*p != '.' || !isdigit((unsigned char)p[1]))
		return 0;
	/* "python3.99999999999": a minor no CPython has, not a wrapped one */
	unsigned long minor = strtoul(p + 1, NULL, 10);
	return minor < 100 ? 300 + (unsigned)minor : 0;
}

/* The file offset of vaddr, 0 when no PT_LOAD holds it in the file. */
static uint64_t vaddr_to_offset(Elf *e, uint64_t vaddr)
{
	size_t n = 0;
	if (elf_getphdrnum(e, &n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		/* vaddr - p_vaddr < p_filesz: no sum that could wrap */
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < ph.p_filesz)
			return vaddr - ph.p_vaddr + ph.p_offset;
	}
	return 0;
}

int py_elf_facts_read(Elf *e, uint64_t pgoff, struct py_elf_facts *f)
{
	Elf_Scn *scn = NULL;
	size_t nph = 0;

	memset(f, 0, sizeof(*f));
	if (!e || elf_kind(e) != ELF_K_ELF)
		return -1;
	if (elf_getphdrnum(e, &nph) == 0) {
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    pgoff >= ph.p_offset && pgoff - ph.p_offset < ph.p_filesz) {
				f->exec_seg_vaddr = ph.p_vaddr + (pgoff - ph.p_offset);
				f->found_seg = 1;
				break;
			}
		}
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) ||
		    !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		/* libelf checks each index against the data it read */
		size_t n = d ? d->d_size / sh.sh_entsize : 0;
		for (size_t i = 0; i < n && i <= (size_t)INT32_MAX; i++) {
			GElf_Sym s;
			if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF)
				continue;
			const char *name = elf_strptr(e, sh.sh_link, s.st_name);
			if (!name)
				continue;
			if (!strcmp(name, "_PyRuntime")) {
				f->runtime_vaddr = s.st_value;
				f->runtime_off = vaddr_to_offset(e, s.st_value);
			} else if (!strcmp(name, "Py_Version")) {
				f->py_version_off = vaddr_to_offset(e, s.st_value);
			}
		}
	}
	return 0;
}

unsigned py_version_from_hex(const uint8_t *bytes, size_t len, unsigned by_name)
{
	uint32_t hex;
	if (len < 4)
		return by_name;
	memcpy(&hex, bytes, 4);
	return (hex >> 24) == 3 ? 300 + ((hex >> 16) & 0xff) : by_name;
}

int py_debug_offsets_parse(const uint8_t *buf, size_t len, struct py_offsets *o)
{
	/* where _Py_DebugOffsets (3.13) keeps each field the walker needs */
	static const struct { size_t at; size_t field; } fields[] = {
		{40, offsetof(struct py_offsets, interp_head)},
		{72, offsetof(struct py_offsets, threads_head)},
		{168, offsetof(struct py_offsets, ts_next)},
		{184, offsetof(struct py_offsets, ts_frame)},
		{200, offsetof(struct py_offsets, ts_thread_id)},
		{232, offsetof(struct py_offsets, fr_previous)},
		{240, offsetof(struct py_offsets, fr_code)},
		{248, offsetof(struct py_offsets, fr_instr)},
		{264, offsetof(struct py_offsets, fr_entry)},
		{344, offsetof(struct py_offsets, code_adaptive)},
		{312, offsetof(struct py_offsets, code_firstlineno)},
	};
	uint32_t got[sizeof(fields) / sizeof(fields[0])];

	if (len < PY_DEBUG_OFFSETS_LEN || memcmp(buf, "xdebugpy", 8))
		return -1;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		uint64_t v;
		memcpy(&v, buf + fields[i].at, 8);
		/* a 64-bit value cut to 32 bits would walk other fields */
		if (v >= PY_OFFSET_MAX)
			return -1;
		got[i] = (uint32_t)v;
	}
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		memcpy((uint8_t *)o + fields[i].field, &got[i], sizeof(got[i]));
	o->ts_cframe = 0;
	return 0;
}

static const struct py_code_offsets code_310 = {40, 104, 112, 112, 120, 48, 72};
static const struct py_code_offsets code_311 = {72, 112, 120, 128, 136, 48, 72};
static const struct py_code_offsets code_312 = {68, 112, 120, 128, 136, 40, 56};

const struct py_code_offsets *py_code_offsets(unsigned version)
{
	return version == 310 ? &code_310 : version == 311 ? &code_311 : &code_312;
}

int py_code_fields_parse(const uint8_t *obj, size_t len, const struct py_code_offsets *co,
			 struct py_code_fields *out)
{
	if ((size_t)co->firstlineno + 4 > len || (size_t)co->filename + 8 > len ||
	    (size_t)co->qualname + 8 > len || (size_t)co->linetable + 8 > len)
		return -1;
	memcpy(&out->firstlineno, obj + co->firstlineno, 4);
	memcpy(&out->filename, obj + co->filename, 8);
	memcpy(&out->qualname, obj + co->qualname, 8);
	memcpy(&out->linetable, obj + co->linetable, 8);
	return 0;
}

int py_str_layout_parse(const uint8_t *hdr, size_t len, const struct py_code_offsets *co,
			struct py_str_layout *out)
{
	int64_t length;
	uint32_t state;

	if (len < PY_STR_HEADER_LEN)
		return -1;
	memcpy(&length, hdr + 16, 8);
	memcpy(&state, hdr + 32, 4);
	if (length <= 0 || length > PY_STR_MAX_CHARS || !((state >> 5) & 1))
		return -1; /* not compact: not an identifier or a path */
	unsigned kind = (state >> 2) & 7;
	bool ascii = (state >> 6) & 1;
	unsigned width = ascii ? 1 : kind;
	if (width != 1 && width != 2 && width != 4)
		return -1;
	out->data_off = ascii ? co->ascii_data : co->compact_data;
	out->length = (size_t)length;
	out->width = width;
	return 0;
}

/* One code point as UTF-8 when the whole sequence fits; its length, or 0. */
static size_t put_utf8(char *out, size_t cap, uint32_t c)
{
	if ((c >= 0xd800 && c < 0xe000) || c > 0x10ffff)
		c = 0xfffd; /* not a character: UTF-8 has no bytes for it */
	if (c < 0x80 && cap >= 1) {
		out[0] = (char)c;
		return 1;
	}
	if (c >= 0x80 && c < 0x800 && cap >= 2) {
		out[0] = (char)(0xc0 | (c >> 6));
		out[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c >= 0x800 && c < 0x10000 && cap >= 3) {
		out[0] = (char)(0xe0 | (c >> 12));
		out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	if (c >= 0x10000 && cap >= 4) {
		out[0] = (char)(0xf0 | (c >> 18));
		out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
		out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[3] = (char)(0x80 | (c & 0x3f));
		return 4;
	}
	return 0;
}

size_t py_str_to_utf8(const uint8_t *raw, size_t raw_len, unsigned width, char *out,
		      size_t cap)
{
	size_t n = 0;

	if (width != 1 && width != 2 && width != 4)
		return 0;
	for (size_t i = 0; i + width <= raw_len; i += width) {
		uint32_t c;
		if (width == 1) {
			c = raw[i];
		} else if (width == 2) {
			uint16_t u;
			memcpy(&u, raw + i, 2);
			c = u;
		} else {
			memcpy(&c, raw + i, 4);
		}
		size_t w = put_utf8(out + n, cap - n, c);
		if (!w)
			break; /* the next character does not fit whole */
		n += w;
	}
	return n;
}
