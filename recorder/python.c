/* CPython interpreters and code objects (see python.h).  The offsets below
 * come from CPython's headers per minor version (x86-64, release builds;
 * the 3.11 column was checked with gdb on 3.11.7 DWARF; 3.10 and 3.12 are
 * from the same headers through other tools' tables, 3.13 reads
 * _Py_DebugOffsets from the binary).  They are checked at run time by the
 * walk itself: a wrong table gives no Python frames, never wrong ones,
 * because each tstate is matched by thread id first. */
#include "python.h"

#include <bpf/bpf.h>
#include <ctype.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "events.h"
#include "safe_open.h"

/* Code-object fields the resolver reads. */
struct py_code_offsets {
	uint32_t firstlineno, filename, name, qualname, linetable;
	uint32_t ascii_data;   /* data of a compact ASCII str */
	uint32_t compact_data; /* data of a compact non-ASCII str */
};

static const struct py_offsets frames_310 = {
	.version = 310, .interp_head = 40, .interp_next = 0, .threads_head = 8, .ts_next = 8,
	.ts_thread_id = 176, .thread_match = PY_MATCH_PTHREAD, .ts_cframe = 0, .ts_frame = 24,
	.fr_code = 32, .fr_previous = 24, .fr_instr = 96, .instr_kind = PY_INSTR_LASTI,
	.entry_kind = PY_ENTRY_EVERY_FRAME, .fr_entry = 0, .code_adaptive = 0,
	.code_firstlineno = 40,
};
static const struct py_offsets frames_311 = {
	.version = 311, .interp_head = 40, .interp_next = 0, .threads_head = 16, .ts_next = 8,
	.ts_thread_id = 160, .thread_match = PY_MATCH_NATIVE_TID, .ts_cframe = 56, .ts_frame = 8,
	.fr_code = 32, .fr_previous = 48, .fr_instr = 56, .instr_kind = PY_INSTR_POINTER,
	.entry_kind = PY_ENTRY_IS_ENTRY, .fr_entry = 68, .code_adaptive = 184,
	.code_firstlineno = 72,
};
static const struct py_offsets frames_312 = {
	.version = 312, .interp_head = 40, .interp_next = 0, .threads_head = 72, .ts_next = 8,
	.ts_thread_id = 144, .thread_match = PY_MATCH_NATIVE_TID, .ts_cframe = 56, .ts_frame = 0,
	.fr_code = 0, .fr_previous = 8, .fr_instr = 56, .instr_kind = PY_INSTR_POINTER,
	.entry_kind = PY_ENTRY_OWNER, .fr_entry = 70, .code_adaptive = 192,
	.code_firstlineno = 68,
};
static const struct py_offsets frames_313 = {
	.version = 313, .interp_head = 40, .interp_next = 0, .threads_head = 72, .ts_next = 8,
	.ts_thread_id = 160, .thread_match = PY_MATCH_NATIVE_TID, .ts_cframe = 0, .ts_frame = 72,
	.fr_code = 0, .fr_previous = 8, .fr_instr = 56, .instr_kind = PY_INSTR_POINTER,
	.entry_kind = PY_ENTRY_OWNER, .fr_entry = 70, .code_adaptive = 200,
	.code_firstlineno = 68,
};

static const struct py_code_offsets code_310 = {40, 104, 112, 112, 120, 48, 72};
static const struct py_code_offsets code_311 = {72, 112, 120, 128, 136, 48, 72};
static const struct py_code_offsets code_312 = {68, 112, 120, 128, 136, 40, 56};

static const struct py_code_offsets *code_offsets(unsigned version)
{
	return version == 310 ? &code_310 : version == 311 ? &code_311 : &code_312;
}

void python_init(struct python_state *ps, int procs_map_fd, bool quiet)
{
	memset(ps, 0, sizeof(*ps));
	ps->procs_map_fd = procs_map_fd;
	ps->quiet = quiet;
	pthread_mutex_init(&ps->lock, NULL);
}

void python_destroy(struct python_state *ps)
{
	free(ps->known);
	free(ps->seen);
	free(ps->queue);
	pthread_mutex_destroy(&ps->lock);
}

static struct py_known *known_of(struct python_state *ps, uint32_t pid)
{
	for (size_t i = 0; i < ps->n_known; i++)
		if (ps->known[i].pid == pid)
			return &ps->known[i];
	return NULL;
}

static void remember(struct python_state *ps, uint32_t pid, const struct py_proc *pp)
{
	struct py_known *k = known_of(ps, pid);
	if (!k) {
		if (ps->n_known == ps->cap_known) {
			size_t cap = ps->cap_known ? ps->cap_known * 2 : 16;
			struct py_known *n = realloc(ps->known, cap * sizeof(*n));
			if (!n)
				return;
			ps->known = n;
			ps->cap_known = cap;
		}
		k = &ps->known[ps->n_known++];
	}
	k->pid = pid;
	k->proc = *pp;
	if (ps->procs_map_fd >= 0)
		bpf_map_update_elem(ps->procs_map_fd, &pid, pp, BPF_ANY);
}

/* "python3.11", "libpython3.11.so.1.0" -> 311; "python3" -> 300 (read the
 * version from the binary); 0 when the name is not an interpreter's. */
static unsigned version_from_name(const char *path)
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
	unsigned minor = (unsigned)strtoul(p + 1, NULL, 10);
	return 300 + minor;
}

struct elf_facts {
	uint64_t runtime_vaddr;
	uint64_t py_version_off;  /* file offset of Py_Version, 0 when absent */
	uint64_t runtime_off;     /* file offset of _PyRuntime's initial bytes */
	uint64_t exec_seg_vaddr;  /* vaddr of the PT_LOAD holding file offset pgoff */
	int found_seg;
};

static uint64_t vaddr_to_offset(Elf *e, uint64_t vaddr)
{
	size_t n = 0;
	if (elf_getphdrnum(e, &n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz)
			return vaddr - ph.p_vaddr + ph.p_offset;
	}
	return 0;
}

static int read_facts(int fd, uint64_t pgoff, struct elf_facts *f)
{
	Elf *e;
	Elf_Scn *scn = NULL;
	size_t nph = 0;

	memset(f, 0, sizeof(*f));
	if (elf_version(EV_CURRENT) == EV_NONE || !(e = elf_begin(fd, ELF_C_READ_MMAP, NULL)))
		return -1;
	if (elf_getphdrnum(e, &nph) == 0) {
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    pgoff >= ph.p_offset && pgoff < ph.p_offset + ph.p_filesz) {
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
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
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
	elf_end(e);
	return 0;
}

/* 3.13+: offsets from the _Py_DebugOffsets at the start of _PyRuntime. */
static int debug_offsets(int fd, uint64_t runtime_off, struct py_offsets *o)
{
	uint8_t buf[352];
	uint64_t v;

	if (!runtime_off || pread(fd, buf, sizeof(buf), (off_t)runtime_off) != (ssize_t)sizeof(buf) ||
	    memcmp(buf, "xdebugpy", 8))
		return -1;
#define AT(off) (memcpy(&v, buf + (off), 8), (uint32_t)v)
	o->interp_head = AT(40);
	o->threads_head = AT(72);
	o->ts_next = AT(168);
	o->ts_frame = AT(184);
	o->ts_thread_id = AT(200);
	o->fr_previous = AT(232);
	o->fr_code = AT(240);
	o->fr_instr = AT(248);
	o->fr_entry = AT(264);
	o->code_adaptive = AT(344);
	o->code_firstlineno = AT(312);
#undef AT
	o->ts_cframe = 0;
	return 0;
}

static void write_python(struct frec_builder *b, uint32_t pid, unsigned version,
			 uint16_t status, uint64_t runtime)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	struct fr_rec_python r = {
		.h = {.size = sizeof(r), .type = FR_REC_PYTHON},
		.ts_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec,
		.pid = pid,
		.py_version = (uint16_t)version,
		.status = status,
		.runtime_addr = runtime,
	};
	frec_builder_append(b, &r, sizeof(r), r.ts_ns);
}

void python_on_mapping(struct python_state *ps, struct frec_builder *b, uint32_t pid,
		       const char *path, uint64_t start, uint64_t pgoff)
{
	unsigned version = version_from_name(path);
	char kpath[4352];
	struct elf_facts f;
	struct py_proc pp;
	int fd;

	if (!version || known_of(ps, pid))
		return;
	snprintf(kpath, sizeof(kpath), "/proc/%u/root%s", pid, path);
	/* the process names the file: refuse a FIFO (open(2) would block the
	 * tracking thread) or a device put under that name */
	fd = safe_open_regular(AT_FDCWD, kpath, 0, NULL);
	if (fd < 0)
		fd = safe_open_regular(AT_FDCWD, path, 0, NULL);
	if (fd < 0 || read_facts(fd, pgoff, &f)) {
		if (fd >= 0)
			close(fd);
		return;
	}
	if (f.py_version_off) {
		uint32_t hex = 0;
		if (pread(fd, &hex, 4, (off_t)f.py_version_off) == 4 && (hex >> 24) == 3)
			version = 300 + ((hex >> 16) & 0xff);
	}
	if (!f.runtime_vaddr || !f.found_seg) {
		/* a python3 launcher without the interpreter linked in: the
		 * libpython mapping that follows will be the one */
		close(fd);
		return;
	}
	memset(&pp, 0, sizeof(pp));
	pp.runtime_addr = start - f.exec_seg_vaddr + f.runtime_vaddr;
	switch (version) {
	case 310: pp.off = frames_310; break;
	case 311: pp.off = frames_311; break;
	case 312: pp.off = frames_312; break;
	default:
		if (version >= 313) {
			pp.off = frames_313;
			pp.off.version = version;
			if (debug_offsets(fd, f.runtime_off, &pp.off) == 0)
				break;
		}
		close(fd);
		write_python(b, pid, version, FR_PYTHON_UNSUPPORTED, pp.runtime_addr);
		fprintf(stderr, "flightrec: python: pid %u runs CPython %u.%u (%s), which flightrec "
			"cannot walk: its stacks stay native-only\n", pid, version / 100,
			version % 100, path);
		struct py_proc none = {0};
		remember(ps, pid, &none); /* do not try again; the BPF map gets a null runtime */
		if (ps->procs_map_fd >= 0)
			bpf_map_delete_elem(ps->procs_map_fd, &pid);
		return;
	}
	close(fd);
	remember(ps, pid, &pp);
	write_python(b, pid, version, FR_PYTHON_OK, pp.runtime_addr);
	if (!ps->quiet)
		fprintf(stderr, "flightrec: python: walking CPython %u.%u frames of pid %u\n",
			version / 100, version % 100, pid);
}

void python_on_fork(struct python_state *ps, uint32_t ppid, uint32_t pid)
{
	struct py_known *k = known_of(ps, ppid);
	if (k && k->proc.runtime_addr && !known_of(ps, pid)) {
		struct py_proc copy = k->proc;
		remember(ps, pid, &copy);
	}
}

/* ---- code objects ------------------------------------------------------- */

static uint64_t seen_hash(uint32_t pid, uint64_t code, uint16_t fp)
{
	uint64_t h = (code ^ ((uint64_t)pid << 40) ^ ((uint64_t)fp << 24)) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

/* true when (pid, code, fingerprint) was new (and is now marked seen) */
static bool mark_seen(struct python_state *ps, uint32_t pid, uint64_t code, uint16_t fp)
{
	if (ps->n_seen * 2 >= ps->cap_seen) {
		size_t cap = ps->cap_seen ? ps->cap_seen * 2 : 1024;
		struct py_code_seen *n = calloc(cap, sizeof(*n));
		if (!n)
			return false;
		for (size_t i = 0; i < ps->cap_seen; i++) {
			if (!ps->seen[i].code)
				continue;
			size_t s = seen_hash(ps->seen[i].pid, ps->seen[i].code,
					     ps->seen[i].fingerprint) & (cap - 1);
			while (n[s].code)
				s = (s + 1) & (cap - 1);
			n[s] = ps->seen[i];
		}
		free(ps->seen);
		ps->seen = n;
		ps->cap_seen = cap;
	}
	size_t s = seen_hash(pid, code, fp) & (ps->cap_seen - 1);
	while (ps->seen[s].code) {
		if (ps->seen[s].code == code && ps->seen[s].pid == pid && ps->seen[s].fingerprint == fp)
			return false;
		s = (s + 1) & (ps->cap_seen - 1);
	}
	ps->seen[s] = (struct py_code_seen){pid, fp, code};
	ps->n_seen++;
	return true;
}

void python_note_code(struct python_state *ps, uint32_t pid, uint64_t code,
		      uint16_t fingerprint)
{
	if (!code || !mark_seen(ps, pid, code, fingerprint))
		return;
	pthread_mutex_lock(&ps->lock);
	if (ps->n_queue == ps->cap_queue) {
		size_t cap = ps->cap_queue ? ps->cap_queue * 2 : 256;
		struct py_code_seen *n = realloc(ps->queue, cap * sizeof(*n));
		if (!n) {
			pthread_mutex_unlock(&ps->lock);
			return;
		}
		ps->queue = n;
		ps->cap_queue = cap;
	}
	ps->queue[ps->n_queue++] = (struct py_code_seen){pid, fingerprint, code};
	pthread_mutex_unlock(&ps->lock);
}

static int peek(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
	return process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

static void put_utf8(char *out, size_t *n, size_t cap, uint32_t c)
{
	if (c < 0x80 && *n + 1 <= cap) {
		out[(*n)++] = (char)c;
	} else if (c < 0x800 && *n + 2 <= cap) {
		out[(*n)++] = (char)(0xc0 | (c >> 6));
		out[(*n)++] = (char)(0x80 | (c & 0x3f));
	} else if (c < 0x10000 && *n + 3 <= cap) {
		out[(*n)++] = (char)(0xe0 | (c >> 12));
		out[(*n)++] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[(*n)++] = (char)(0x80 | (c & 0x3f));
	} else if (*n + 4 <= cap) {
		out[(*n)++] = (char)(0xf0 | (c >> 18));
		out[(*n)++] = (char)(0x80 | ((c >> 12) & 0x3f));
		out[(*n)++] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[(*n)++] = (char)(0x80 | (c & 0x3f));
	}
}

/* A str object as UTF-8 (compact strings: every identifier and file name). */
static size_t read_str(uint32_t pid, uint64_t obj, const struct py_code_offsets *co,
		       char *out, size_t cap)
{
	uint8_t hdr[40];
	int64_t length;
	uint32_t state;
	size_t n = 0;

	if (!obj || peek(pid, obj, hdr, sizeof(hdr)))
		return 0;
	memcpy(&length, hdr + 16, 8);
	memcpy(&state, hdr + 32, 4);
	if (length <= 0 || length > 4096 || !((state >> 5) & 1))
		return 0; /* not compact: not an identifier or a path */
	unsigned kind = (state >> 2) & 7;
	bool ascii = (state >> 6) & 1;
	uint8_t raw[4096 * 4];
	size_t width = ascii ? 1 : kind;
	if (width != 1 && width != 2 && width != 4)
		return 0;
	if (peek(pid, obj + (ascii ? co->ascii_data : co->compact_data), raw,
		 (size_t)length * width))
		return 0;
	for (int64_t i = 0; i < length; i++) {
		uint32_t c = width == 1 ? raw[i] : width == 2 ? ((uint16_t *)raw)[i] : ((uint32_t *)raw)[i];
		put_utf8(out, &n, cap, c);
	}
	return n;
}

static void resolve_one(struct python_state *ps, struct frec_builder *b, uint32_t pid,
			uint64_t code, uint16_t fingerprint)
{
	struct py_known *k = known_of(ps, pid);
	const struct py_code_offsets *co;
	static char qual[4096], file[4096];
	static uint8_t lines[65536];
	uint8_t obj[160];
	uint64_t p_file, p_qual, p_lines;
	uint32_t first = 0;
	int64_t lines_len = 0;

	if (!k || !k->proc.runtime_addr)
		return;
	co = code_offsets(k->proc.off.version);
	if (peek(pid, code, obj, sizeof(obj))) {
		ps->codes_failed++;
		return;
	}
	memcpy(&first, obj + co->firstlineno, 4);
	if ((uint16_t)first != fingerprint) {
		/* freed and reused since the event: naming it would lie */
		ps->codes_failed++;
		return;
	}
	memcpy(&p_file, obj + co->filename, 8);
	memcpy(&p_qual, obj + co->qualname, 8);
	memcpy(&p_lines, obj + co->linetable, 8);
	size_t qlen = read_str(pid, p_qual, co, qual, sizeof(qual));
	size_t flen = read_str(pid, p_file, co, file, sizeof(file));
	if (p_lines && peek(pid, p_lines + 16, &lines_len, 8) == 0 && lines_len > 0 &&
	    lines_len <= (int64_t)sizeof(lines)) {
		if (peek(pid, p_lines + 32, lines, (size_t)lines_len))
			lines_len = 0;
	} else {
		lines_len = 0;
	}
	uint32_t size = FR_ALIGN8(sizeof(struct fr_rec_pycode) + qlen + flen + (size_t)lines_len);
	struct fr_rec_pycode *r = frec_builder_reserve(b, size);
	if (!r)
		return;
	memset(r, 0, size);
	r->h.size = size;
	r->h.type = FR_REC_PYCODE;
	r->code = code;
	r->pid = pid;
	r->firstlineno = first;
	r->py_version = (uint16_t)k->proc.off.version;
	r->qualname_len = (uint16_t)qlen;
	r->filename_len = (uint16_t)flen;
	r->linetable_len = (uint32_t)lines_len;
	char *p = (char *)(r + 1);
	memcpy(p, qual, qlen);
	memcpy(p + qlen, file, flen);
	memcpy(p + qlen + flen, lines, (size_t)lines_len);
	frec_builder_commit(b, 0);
	ps->codes_resolved++;
}

void python_resolve_pending(struct python_state *ps, struct frec_builder *b)
{
	struct py_code_seen *batch;
	size_t n;

	pthread_mutex_lock(&ps->lock);
	batch = ps->queue;
	n = ps->n_queue;
	ps->queue = NULL;
	ps->n_queue = ps->cap_queue = 0;
	pthread_mutex_unlock(&ps->lock);
	for (size_t i = 0; i < n; i++)
		resolve_one(ps, b, batch[i].pid, batch[i].code, batch[i].fingerprint);
	free(batch);
}
