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

/* An interpreter file, as identified by its mapping (build-id, else device
 * and inode), and what reading it said. */
struct py_file {
	uint8_t build_id[20];
	uint8_t build_id_len;
	uint64_t dev, ino, pgoff;
	int status;            /* 1 walkable, 0 not its interpreter, -1 unsupported version */
	unsigned version;
	uint64_t runtime_delta; /* _PyRuntime - the mapping's start */
	struct py_offsets off;
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
	free(ps->files);
	hmap_free(&ps->seen);
	free(ps->queue);
	free(ps->dead);
	pthread_mutex_destroy(&ps->lock);
}

static struct py_known *known_of(struct python_state *ps, uint32_t pid)
{
	for (size_t i = 0; i < ps->n_known; i++)
		if (ps->known[i].pid == pid)
			return &ps->known[i];
	return NULL;
}

static void remember(struct python_state *ps, uint32_t pid, const struct py_proc *pp,
		     uint64_t since_ns)
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
	k->since_ns = since_ns;
	k->proc = *pp;
	if (ps->procs_map_fd >= 0)
		bpf_map_update_elem(ps->procs_map_fd, &pid, pp, BPF_ANY);
}

static void drop_known(struct python_state *ps, struct py_known *k)
{
	if (ps->procs_map_fd >= 0)
		bpf_map_delete_elem(ps->procs_map_fd, &k->pid);
	*k = ps->known[--ps->n_known];
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

/* What the file m maps says about its interpreter: read from the file (the
 * file mapped, not what its name leads to now: the job may have put a
 * link, a FIFO or another interpreter under that name). */
static void read_file_facts(const struct mapped_file *m, uint64_t pgoff, unsigned version,
			    struct py_file *pf)
{
	struct py_elf_facts f;
	struct stat st;
	int fd = dso_open_mapped(m, &st);

	pf->status = 0;
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
	pf->version = version;
	if (!f.runtime_vaddr || !f.found_seg) {
		/* a python3 launcher without the interpreter linked in: the
		 * libpython mapping that follows will be the one */
		close(fd);
		return;
	}
	pf->runtime_delta = f.runtime_vaddr - f.exec_seg_vaddr;
	pf->status = 1;
	switch (version) {
	case 310: pf->off = frames_310; break;
	case 311: pf->off = frames_311; break;
	case 312: pf->off = frames_312; break;
	default:
		pf->off = frames_313;
		pf->off.version = version;
		if (version < 313 || debug_offsets(fd, f.runtime_off, &pf->off))
			pf->status = -1;
	}
	close(fd);
}

/* The facts of the interpreter file m maps: read the first time, then
 * looked up (a worker pool re-created every epoch runs one file). */
static const struct py_file *file_of(struct python_state *ps, const struct mapped_file *m,
				     uint64_t pgoff, unsigned version, bool *first)
{
	uint8_t bid_len = m->build_id ? m->build_id_len : 0;
	*first = false;
	for (size_t i = 0; i < ps->n_files; i++) {
		struct py_file *pf = &ps->files[i];
		if (pf->pgoff != pgoff)
			continue;
		if (bid_len ? pf->build_id_len == bid_len && !memcmp(pf->build_id, m->build_id, bid_len)
			    : m->has_inode && !pf->build_id_len && pf->dev == m->dev && pf->ino == m->ino)
			return pf;
	}
	static struct py_file scratch; /* an anonymous identity is read every time */
	struct py_file *pf = &scratch;
	if ((bid_len || m->has_inode) && ps->n_files < 4096) {
		if (ps->n_files == ps->cap_files) {
			size_t cap = ps->cap_files ? ps->cap_files * 2 : 8;
			struct py_file *n = realloc(ps->files, cap * sizeof(*n));
			if (n) {
				ps->files = n;
				ps->cap_files = cap;
			}
		}
		if (ps->n_files < ps->cap_files)
			pf = &ps->files[ps->n_files++];
	}
	memset(pf, 0, sizeof(*pf));
	pf->build_id_len = bid_len > 20 ? 20 : bid_len;
	memcpy(pf->build_id, m->build_id ? m->build_id : pf->build_id, pf->build_id_len);
	pf->dev = m->dev;
	pf->ino = m->ino;
	pf->pgoff = pgoff;
	read_file_facts(m, pgoff, version, pf);
	ps->facts_read++;
	*first = true;
	return pf;
}

void python_on_mapping(struct python_state *ps, struct frec_builder *b,
		       const struct mapped_file *m, uint64_t pgoff, uint64_t ts_ns)
{
	uint32_t pid = m->pid;
	unsigned version = py_version_from_name(m->path);
	struct py_known *k;
	bool first;

	if (!version)
		return;
	/* one interpreter per image: a later one means the process exec'd
	 * (its exec event may reach this thread after the new mappings) */
	if ((k = known_of(ps, pid)) && k->since_ns >= ts_ns)
		return;
	const struct py_file *pf = file_of(ps, m, pgoff, version, &first);
	if (pf->status == 0)
		return;
	struct py_proc pp = {.runtime_addr = m->start + pf->runtime_delta, .off = pf->off};
	ps->processes++;
	if (pf->status < 0) {
		write_python(b, pid, pf->version, FR_PYTHON_UNSUPPORTED, pp.runtime_addr);
		if (first)
			fprintf(stderr, "flightrec: python: pid %u runs CPython %u.%u (%s), which "
				"flightrec cannot walk: its stacks stay native-only (said once for "
				"this interpreter)\n", pid, pf->version / 100, pf->version % 100,
				m->path);
		struct py_proc none = {0};
		remember(ps, pid, &none, ts_ns); /* do not try again */
		if (ps->procs_map_fd >= 0) /* the BPF map gets no runtime */
			bpf_map_delete_elem(ps->procs_map_fd, &pid);
		return;
	}
	remember(ps, pid, &pp, ts_ns);
	write_python(b, pid, pf->version, FR_PYTHON_OK, pp.runtime_addr);
	if (first && !ps->quiet)
		fprintf(stderr, "flightrec: python: walking CPython %u.%u frames of pid %u (%s), and "
			"of every later process of this interpreter\n", pf->version / 100,
			pf->version % 100, pid, m->path);
}

void python_on_fork(struct python_state *ps, uint32_t ppid, uint32_t pid, uint64_t ts_ns)
{
	struct py_known *k = known_of(ps, ppid);
	if (k && k->proc.runtime_addr && !known_of(ps, pid)) {
		struct py_proc copy = k->proc;
		remember(ps, pid, &copy, ts_ns);
	}
}


void python_forget_pids(struct python_state *ps, const uint32_t *pids, size_t n)
{
	size_t dead = 0;
	pthread_mutex_lock(&ps->lock);
	for (size_t i = 0; i < n; i++) {
		struct py_known *k = known_of(ps, pids[i]);
		if (!k)
			continue; /* not Python: no code objects to prune */
		drop_known(ps, k);
		if (ps->n_dead == ps->cap_dead) {
			size_t cap = ps->cap_dead ? ps->cap_dead * 2 : 64;
			uint32_t *v = realloc(ps->dead, cap * sizeof(*v));
			if (!v)
				continue;
			ps->dead = v;
			ps->cap_dead = cap;
		}
		ps->dead[ps->n_dead++] = pids[i];
		dead = ps->n_dead;
	}
	pthread_mutex_unlock(&ps->lock);
	if (dead)
		atomic_store(&ps->dead_waiting, dead);
}

/* ---- code objects ------------------------------------------------------- */

/* true when (pid, code, fingerprint) was new (and is now marked seen) */
static bool mark_seen(struct python_state *ps, uint32_t pid, uint64_t code, uint16_t fp)
{
	int created = 0;
	return hmap_slot(&ps->seen, code, (uint64_t)pid << 16 | fp, &created) && created;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Drain thread: the seen set without the exited processes' entries, built
 * anew (the map has no deletion).  In batches of exits at least 1/64 of
 * the set, so each entry is copied a bounded number of times per exit. */
static void prune_seen(struct python_state *ps)
{
	uint32_t *dead;
	size_t n;
	pthread_mutex_lock(&ps->lock);
	dead = ps->dead;
	n = ps->n_dead;
	ps->dead = NULL;
	ps->n_dead = ps->cap_dead = 0;
	atomic_store(&ps->dead_waiting, 0);
	pthread_mutex_unlock(&ps->lock);
	qsort(dead, n, sizeof(*dead), cmp_u32);
	struct hmap fresh;
	hmap_init(&fresh);
	for (size_t i = 0; i < ps->seen.cap; i++) {
		const struct hmap_slot *sl = &ps->seen.slots[i];
		uint32_t pid = (uint32_t)(sl->key_b >> 16);
		if (sl->used && !bsearch(&pid, dead, n, sizeof(*dead), cmp_u32) &&
		    hmap_put(&fresh, sl->key_a, sl->key_b, sl->value)) {
			hmap_free(&fresh); /* out of memory: the old set stays */
			free(dead);
			return;
		}
	}
	hmap_free(&ps->seen);
	ps->seen = fresh;
	free(dead);
}

void python_note_code(struct python_state *ps, uint32_t pid, uint64_t code,
		      uint16_t fingerprint)
{
	size_t dead = atomic_load_explicit(&ps->dead_waiting, memory_order_relaxed);
	if (dead && dead >= 8 + ps->seen.count / 64)
		prune_seen(ps);
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
