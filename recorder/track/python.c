/* CPython interpreters and code objects (see python.h).  The offsets below
 * come from CPython's headers per minor version (x86-64, release builds;
 * the 3.11 column was checked with gdb on 3.11.7 DWARF; 3.10 and 3.12 are
 * from the same headers through other tools' tables, 3.13 reads
 * _Py_DebugOffsets from the binary).  They are checked at run time by the
 * walk itself: a wrong table gives no Python frames, never wrong ones,
 * because each tstate is matched by thread id first. */
#include "track/python.h"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "events.h"
#include "hmap.h"
#include "inspect/python_parse.h"

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

void python_init(struct python_state *ps, int procs_map_fd, bool quiet)
{
	memset(ps, 0, sizeof(*ps));
	ps->procs_map_fd = procs_map_fd;
	ps->quiet = quiet;
	hmap_init(&ps->seen);
	pthread_mutex_init(&ps->lock, NULL);
}

void python_destroy(struct python_state *ps)
{
	free(ps->known);
	hmap_free(&ps->seen);
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

/* The interpreter's facts from its file (fd: the mapped file itself). */
static int read_facts(int fd, uint64_t pgoff, struct py_elf_facts *f)
{
	Elf *e;

	if (elf_version(EV_CURRENT) == EV_NONE || !(e = elf_begin(fd, ELF_C_READ_MMAP, NULL)))
		return -1;
	int rc = py_elf_facts_read(e, pgoff, f);
	elf_end(e);
	return rc;
}

/* 3.13+: offsets from the _Py_DebugOffsets at the start of _PyRuntime. */
static int debug_offsets(int fd, uint64_t runtime_off, struct py_offsets *o)
{
	uint8_t buf[PY_DEBUG_OFFSETS_LEN];

	if (!runtime_off || pread(fd, buf, sizeof(buf), (off_t)runtime_off) != (ssize_t)sizeof(buf))
		return -1;
	return py_debug_offsets_parse(buf, sizeof(buf), o);
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

void python_on_mapping(struct python_state *ps, struct frec_builder *b,
		       const struct mapped_file *m, uint64_t pgoff)
{
	uint32_t pid = m->pid;
	const char *path = m->path;
	uint64_t start = m->start;
	unsigned version = py_version_from_name(path);
	struct py_elf_facts f;
	struct py_proc pp;
	struct stat st;
	int fd;

	if (!version || known_of(ps, pid))
		return;
	/* the file mapped, not what its name leads to now: the job may have
	 * put a link, a FIFO or another interpreter under that name */
	fd = dso_open_mapped(m, &st);
	if (fd < 0 || read_facts(fd, pgoff, &f)) {
		if (fd >= 0)
			close(fd);
		return;
	}
	if (f.py_version_off) {
		uint8_t hex[4];
		if (pread(fd, hex, sizeof(hex), (off_t)f.py_version_off) == (ssize_t)sizeof(hex))
			version = py_version_from_hex(hex, sizeof(hex), version);
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

/* true when (pid, code, fingerprint) was new (and is now marked seen) */
static bool mark_seen(struct python_state *ps, uint32_t pid, uint64_t code, uint16_t fp)
{
	int created = 0;
	return hmap_slot(&ps->seen, code, (uint64_t)pid << 16 | fp, &created) && created;
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

/* A str object as UTF-8 (compact strings: every identifier and file name). */
static size_t read_str(uint32_t pid, uint64_t obj, const struct py_code_offsets *co,
		       char *out, size_t cap)
{
	uint8_t hdr[PY_STR_HEADER_LEN];
	uint8_t raw[PY_STR_MAX_CHARS * 4];
	struct py_str_layout l;

	if (!obj || peek(pid, obj, hdr, sizeof(hdr)) ||
	    py_str_layout_parse(hdr, sizeof(hdr), co, &l) ||
	    peek(pid, obj + l.data_off, raw, l.length * l.width))
		return 0;
	return py_str_to_utf8(raw, l.length * l.width, l.width, out, cap);
}

static void resolve_one(struct python_state *ps, struct frec_builder *b, uint32_t pid,
			uint64_t code, uint16_t fingerprint)
{
	struct py_known *k = known_of(ps, pid);
	const struct py_code_offsets *co;
	static char qual[4096], file[4096];
	static uint8_t lines[65536];
	uint8_t obj[PY_CODE_READ_LEN];
	struct py_code_fields cf;
	int64_t lines_len = 0;

	if (!k || !k->proc.runtime_addr)
		return;
	co = py_code_offsets(k->proc.off.version);
	if (peek(pid, code, obj, sizeof(obj)) || py_code_fields_parse(obj, sizeof(obj), co, &cf)) {
		ps->codes_failed++;
		return;
	}
	uint32_t first = cf.firstlineno;
	if ((uint16_t)first != fingerprint) {
		/* freed and reused since the event: naming it would lie */
		ps->codes_failed++;
		return;
	}
	size_t qlen = read_str(pid, cf.qualname, co, qual, sizeof(qual));
	size_t flen = read_str(pid, cf.filename, co, file, sizeof(file));
	if (cf.linetable && peek(pid, cf.linetable + PY_BYTES_SIZE_OFF, &lines_len, 8) == 0 &&
	    lines_len > 0 && lines_len <= (int64_t)sizeof(lines)) {
		if (peek(pid, cf.linetable + PY_BYTES_DATA_OFF, lines, (size_t)lines_len))
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
