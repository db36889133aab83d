/* The metadata records of a trace: processes, threads, mappings,
 * frame-pointer stacks, symbols, unwind images, Python code objects, clock
 * anchors, statistics, launcher environment, port counters and the schema,
 * each checked against its record's size (see trace_set_impl.h).  Not for
 * events or dwarf-mode stacks. */
#include "trace_set_impl.h"
#include "py_codes.h"
#include "unwind.h"
#include "grow.h"

#include <stdlib.h>
#include <string.h>

static int decode_process(const struct ts_where *w, const uint8_t *p, uint32_t size,
			  struct frec_error *err)
{
	struct trace_file *f = w->f;
	struct fr_rec_process r;
	memcpy(&r, p, sizeof(r));
	if (r.cmdline_len > size - sizeof(r)) {
		PROBLEM(w, "process %u: cmdline_len %u exceeds the record (%u bytes)",
			r.pid, r.cmdline_len, size);
		return 0;
	}
	char *cmdline = ts_strndup_printable((const char *)p + sizeof(r), r.cmdline_len, ' ');
	if (!cmdline)
		return ts_oom(err, w);
	int created;
	uint64_t *slot = hmap_slot(&f->proc_by_pid, r.pid, 0, &created);
	if (!slot) {
		free(cmdline);
		return ts_oom(err, w);
	}
	if (created) {
		if (grow_array((void **)&f->procs, &f->cap_procs, f->n_procs + 1, sizeof(*f->procs),
			       64)) {
			free(cmdline);
			return ts_oom(err, w);
		}
		*slot = f->n_procs++;
		memset(&f->procs[*slot], 0, sizeof(f->procs[*slot]));
	}
	struct ts_process *proc = &f->procs[*slot];
	free(proc->cmdline);
	proc->pid = r.pid;
	proc->ppid = r.ppid;
	proc->start_time_ns = r.start_time_ns;
	ts_copy_comm(proc->comm, r.comm);
	proc->cmdline = cmdline;
	return 0;
}

static int decode_thread(const struct ts_where *w, const uint8_t *p, struct frec_error *err)
{
	struct fr_rec_thread r;
	memcpy(&r, p, sizeof(r));
	struct trace_file *f = w->f;
	uint64_t *slot = hmap_slot(&f->thread_seen, r.pid, r.tid, NULL);
	if (!slot)
		return ts_oom(err, w);
	if (!*slot) {
		size_t n = f->n_thread_names;
		if ((n & (n - 1)) == 0) { /* capacity doubles at powers of two */
			void *grown = realloc(f->thread_names, (n ? 2 * n : 1) * sizeof(*f->thread_names));
			if (!grown)
				return ts_oom(err, w);
			f->thread_names = grown;
		}
		*slot = ++f->n_thread_names;
	}
	ts_copy_comm(f->thread_names[*slot - 1], r.comm);
	return 0;
}

const char *trace_file_thread_name(const struct trace_file *f, uint32_t pid, uint32_t tid)
{
	uint64_t v = 0;
	if (!hmap_get(&f->thread_seen, pid, tid, &v) || !v || v > f->n_thread_names)
		return NULL;
	return f->thread_names[v - 1];
}

static int decode_mapping(const struct ts_where *w, const uint8_t *p, uint32_t size,
			  struct frec_error *err)
{
	struct trace_file *f = w->f;
	struct fr_rec_mapping r;
	memcpy(&r, p, sizeof(r));
	if (r.path_len > size - sizeof(r)) {
		PROBLEM(w, "mapping of pid %u: path_len %u exceeds the record (%u bytes)",
			r.pid, r.path_len, size);
		return 0;
	}
	if (r.end <= r.start) {
		PROBLEM(w, "mapping of pid %u: empty or inverted range [0x%llx, 0x%llx)",
			r.pid, (unsigned long long)r.start, (unsigned long long)r.end);
		return 0;
	}
	if (grow_array((void **)&f->maps, &f->cap_maps, f->n_maps + 1, sizeof(*f->maps), 256))
		return ts_oom(err, w);
	struct ts_mapping *maps = f->maps;
	char *path = ts_strndup_printable((const char *)p + sizeof(r), r.path_len, '?');
	if (!path)
		return ts_oom(err, w);
	maps[f->n_maps++] = (struct ts_mapping){
		.pid = r.pid, .dso_id = r.dso_id, .start = r.start, .end = r.end,
		.pgoff = r.pgoff, .seq = w->seq, .path = path,
	};
	return 0;
}

static int decode_stack(const struct ts_where *w, const uint8_t *p, uint32_t size,
			struct frec_error *err)
{
	struct trace_file *f = w->f;
	struct fr_rec_stack r;
	memcpy(&r, p, sizeof(r));
	uint64_t n_frames = (uint64_t)r.n_kernel + r.n_user;
	if (n_frames * 8 > size - sizeof(r)) {
		PROBLEM(w, "stack %u: %u kernel + %u user frames do not fit in the record (%u bytes)",
			r.stack_id, r.n_kernel, r.n_user, size);
		return 0;
	}
	if (r.stack_id == FR_STACK_NONE) {
		PROBLEM(w, "stack record with id 0 (reserved for \"no stack\")");
		return 0;
	}
	if (ts_idmap_get(&f->ustack_ids, r.stack_id, NULL)) {
		PROBLEM(w, "stack %u defined twice; keeping the first definition", r.stack_id);
		return 0;
	}
	int created;
	uint64_t *slot = hmap_slot(&f->stack_by_id, r.stack_id, 0, &created);
	if (!slot)
		return ts_oom(err, w);
	if (!created) {
		PROBLEM(w, "stack %u defined twice; keeping the first definition", r.stack_id);
		return 0;
	}
	/* doubling: one record at a time, a growth by one would copy the
	 * whole array per stack (quadratic; minutes under ASan at 100k).
	 * Small first sizes: every file of the set keeps its own until the
	 * end, and a rank with a few stacks would hold 168 KiB of room */
	if (grow_array((void **)&f->stacks, &f->cap_stacks, f->n_stacks + 1, sizeof(*f->stacks),
		       64) ||
	    grow_array((void **)&f->ips, &f->cap_ips, f->n_ips + n_frames + 1, sizeof(*f->ips),
		       1024))
		return ts_oom(err, w);
	struct ts_stack *stacks = f->stacks;
	uint64_t *ips = f->ips;
	memcpy(ips + f->n_ips, p + sizeof(r), n_frames * 8);
	*slot = f->n_stacks;
	stacks[f->n_stacks++] = (struct ts_stack){
		.stack_id = r.stack_id, .pid = r.pid, .n_kernel = r.n_kernel,
		.n_user = r.n_user, .ips_at = f->n_ips,
	};
	f->n_ips += n_frames;
	return 0;
}

/* Unwind tables of one file: a reduced ELF image. */
static int decode_unwind(const struct ts_where *w, const uint8_t *p, uint32_t size,
			 struct frec_error *err)
{
	struct trace_file *f = w->f;
	struct fr_rec_unwind r;
	memcpy(&r, p, sizeof(r));
	if (r.image_len > size - sizeof(r)) {
		PROBLEM(w, "unwind data of dso %u: image_len %u exceeds the record (%u bytes)",
			r.dso_id, r.image_len, size);
		return 0;
	}
	if (!f->ustacks && !(f->ustacks = uw_store_new()))
		return ts_oom(err, w);
	char why[120];
	int rc = uw_store_add_image(f->ustacks, r.dso_id, r.build_id,
				    r.build_id_len < sizeof(r.build_id) ? r.build_id_len : sizeof(r.build_id),
				    p + sizeof(r), r.image_len, why, sizeof(why));
	if (rc < 0)
		return ts_oom(err, w);
	if (rc > 0)
		PROBLEM(w, "unwind data of dso %u refused: %s; stacks stop at its frames", r.dso_id, why);
	else
		f->dwarf_stats.images++;
	return 0;
}

static int decode_pycode(const struct ts_where *w, const uint8_t *p, uint32_t size,
			 struct frec_error *err)
{
	struct trace_file *f = w->f;
	struct fr_rec_pycode r;
	memcpy(&r, p, sizeof(r));
	if ((uint64_t)r.qualname_len + r.filename_len + r.linetable_len > size - sizeof(r)) {
		PROBLEM(w, "pycode 0x%llx of pid %u: %u + %u + %u name and table bytes exceed the record (%u bytes)",
			(unsigned long long)r.code, r.pid, r.qualname_len, r.filename_len,
			r.linetable_len, size);
		return 0;
	}
	if (!f->pycodes && !(f->pycodes = py_table_new()))
		return ts_oom(err, w);
	const char *qual = (const char *)p + sizeof(r);
	const char *file = qual + r.qualname_len;
	const uint8_t *table = (const uint8_t *)file + r.filename_len;
	if (py_table_add(f->pycodes, r.pid, r.code, w->seq, r.py_version, r.firstlineno, qual,
			 r.qualname_len, file, r.filename_len, table, r.linetable_len))
		return ts_oom(err, w);
	return 0;
}

static int decode_python(const struct ts_where *w, const uint8_t *p, struct frec_error *err)
{
	struct fr_rec_python r;
	memcpy(&r, p, sizeof(r));
	if (hmap_put(&w->f->python_by_pid, r.pid, 0, r.py_version | (uint64_t)r.status << 16))
		return ts_oom(err, w);
	return 0;
}

/* The snapshot record; a second one (a damaged or crafted file) replaces
 * the first, as the latest PROCESS record does. */
static int decode_snapshot(const struct ts_where *w, const uint8_t *p, uint32_t size,
			   struct frec_error *err)
{
	struct trace_file *f = w->f;
	struct fr_rec_snapshot r;
	memcpy(&r, p, sizeof(r));
	if (r.detail_len > size - sizeof(r)) {
		PROBLEM(w, "snapshot: detail_len %u exceeds the record (%u bytes)", r.detail_len, size);
		return 0;
	}
	char *detail = ts_strndup_printable((const char *)p + sizeof(r), r.detail_len, '?');
	if (!detail)
		return ts_oom(err, w);
	free(f->snapshot_detail);
	f->snapshot_detail = detail;
	f->snapshot = r;
	f->has_snapshot = 1;
	return 0;
}

/* The calls in flight when the recorder looked; only the latest look is
 * kept (a snapshot's, or the end of the recording's). */
static int decode_inflight(const struct ts_where *w, const uint8_t *p, uint32_t size,
			   struct frec_error *err)
{
	struct trace_file *f = w->f;
	struct fr_rec_inflight r;
	memcpy(&r, p, sizeof(r));
	if ((uint64_t)r.n * sizeof(struct fr_inflight_call) > size - sizeof(r)) {
		PROBLEM(w, "inflight: %u calls do not fit in the record (%u bytes)", r.n, size);
		return 0;
	}
	if (f->inflight_seen_ns && r.seen_ns < f->inflight_seen_ns)
		return 0; /* an older look */
	struct fr_inflight_call *calls = NULL;
	if (r.n) {
		if (!(calls = malloc((size_t)r.n * sizeof(*calls))))
			return ts_oom(err, w);
		memcpy(calls, p + sizeof(r), (size_t)r.n * sizeof(*calls));
	}
	free(f->inflight);
	f->inflight = calls;
	f->n_inflight = r.n;
	f->inflight_seen_ns = r.seen_ns ? r.seen_ns : 1; /* 0 means "no record" */
	return 0;
}

static int by_nr(const void *a, const void *b)
{
	const struct fr_syscall_drop *x = a, *y = b;
	return (x->nr > y->nr) - (x->nr < y->nr);
}

/* The syscalls family's losses per call number: the latest record wins
 * (the counts are cumulative).  A number listed twice, or one the kernel
 * never counts, is damage, not a count to add up. */
static int decode_syscall_drops(const struct ts_where *w, const uint8_t *p, uint32_t size,
				struct frec_error *err)
{
	struct trace_file *f = w->f;
	struct fr_rec_syscall_drops r;
	memcpy(&r, p, sizeof(r));
	if ((uint64_t)r.n * sizeof(struct fr_syscall_drop) > size - sizeof(r)) {
		PROBLEM(w, "syscall_drops: %u counts do not fit in the record (%u bytes)", r.n, size);
		return 0;
	}
	if (f->has_syscall_drops && r.ts_ns < f->syscall_drops_ts_ns)
		return 0; /* an older reading */
	struct fr_syscall_drop *counts = NULL;
	if (r.n) {
		if (!(counts = malloc((size_t)r.n * sizeof(*counts))))
			return ts_oom(err, w);
		memcpy(counts, p + sizeof(r), (size_t)r.n * sizeof(*counts));
		qsort(counts, r.n, sizeof(*counts), by_nr);
		for (uint32_t i = 0; i < r.n; i++) {
			if (counts[i].nr >= FR_SYSCALL_DROP_NRS || (i && counts[i].nr == counts[i - 1].nr)) {
				PROBLEM(w, "syscall_drops: call number %u is %s", counts[i].nr,
					counts[i].nr >= FR_SYSCALL_DROP_NRS ? "out of range" : "listed twice");
				free(counts);
				return 0;
			}
		}
	}
	free(f->syscall_drops);
	f->syscall_drops = counts;
	f->n_syscall_drops = r.n;
	f->syscall_drops_ts_ns = r.ts_ns;
	f->has_syscall_drops = 1;
	return 0;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct ts_symbol *x = a, *y = b;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return x->size < y->size ? -1 : x->size > y->size;
}

/* Appends the symbols of `add` (a later record of the same dso) to `into`;
 * frees `add`'s storage either way. */
static int merge_dso(const struct ts_where *w, struct ts_dso *into, struct ts_dso *add,
		     struct frec_error *err)
{
	uint64_t strtab_len = (uint64_t)into->strtab_len + add->strtab_len;
	uint64_t nsyms = (uint64_t)into->nsyms + add->nsyms;
	char *strtab = NULL;
	struct ts_symbol *syms = NULL;

	if (strtab_len < UINT32_MAX && nsyms < UINT32_MAX) {
		strtab = realloc(into->strtab, (size_t)strtab_len + 1);
		if (strtab)
			into->strtab = strtab;
		syms = realloc(into->syms, ((size_t)nsyms ? (size_t)nsyms : 1) * sizeof(*syms));
		if (syms)
			into->syms = syms;
	}
	if (!strtab || !syms) {
		free(add->path);
		free(add->strtab);
		free(add->syms);
		return strtab_len < UINT32_MAX && nsyms < UINT32_MAX ? ts_oom(err, w) : 0;
	}
	memcpy(into->strtab + into->strtab_len, add->strtab, add->strtab_len);
	into->strtab[strtab_len] = '\0';
	for (uint32_t i = 0; i < add->nsyms; i++) {
		struct ts_symbol s = add->syms[i];
		s.name_off += into->strtab_len;
		into->syms[into->nsyms++] = s;
	}
	into->strtab_len = (uint32_t)strtab_len;
	qsort(into->syms, into->nsyms, sizeof(*into->syms), sym_cmp);
	free(add->path);
	free(add->strtab);
	free(add->syms);
	return 0;
}

static int decode_dso(const struct ts_where *w, const uint8_t *p, uint32_t size,
		      struct frec_error *err)
{
	struct trace_file *f = w->f;
	struct fr_rec_dso r;
	memcpy(&r, p, sizeof(r));
	uint64_t off = sizeof(r);
	if (r.path_len > size - off) {
		PROBLEM(w, "dso %u: path_len %u exceeds the record (%u bytes)", r.dso_id,
			r.path_len, size);
		return 0;
	}
	const char *path = (const char *)p + off;
	off += FR_ALIGN8((uint64_t)r.path_len);
	uint64_t syms_bytes = (uint64_t)r.nsyms * sizeof(struct fr_dso_sym);
	if (off > size || syms_bytes > size - off) {
		PROBLEM(w, "dso %u: %u symbols do not fit in the record (%u bytes)", r.dso_id,
			r.nsyms, size);
		return 0;
	}
	const uint8_t *syms_at = p + off;
	off += syms_bytes;
	if (r.strtab_len > size - off) {
		PROBLEM(w, "dso %u: strtab_len %u exceeds the record (%u bytes)", r.dso_id,
			r.strtab_len, size);
		return 0;
	}
	if (r.kind > 1) {
		PROBLEM(w, "dso %u: unknown kind %u; its symbols are not used", r.dso_id, r.kind);
		return 0;
	}
	struct ts_dso d = { .dso_id = r.dso_id, .kind = r.kind };
	d.build_id_len = r.build_id_len <= sizeof(d.build_id) ? r.build_id_len : sizeof(d.build_id);
	memcpy(d.build_id, r.build_id, d.build_id_len);
	d.path = ts_strndup_printable(path, r.path_len, '?');
	d.strtab = malloc((size_t)r.strtab_len + 1);
	d.syms = malloc(((size_t)r.nsyms ? r.nsyms : 1) * sizeof(*d.syms));
	if (!d.path || !d.strtab || !d.syms) {
		free(d.path);
		free(d.strtab);
		free(d.syms);
		return ts_oom(err, w);
	}
	memcpy(d.strtab, p + off, r.strtab_len);
	d.strtab[r.strtab_len] = '\0'; /* every name ends, even the last one */
	/* names are printed as they are (summary, findings, folded stacks):
	 * no control character reaches a terminal (found by fuzz_outputs) */
	for (uint32_t i = 0; i < r.strtab_len; i++)
		if ((d.strtab[i] > 0 && d.strtab[i] < 0x20) || d.strtab[i] == 0x7f)
			d.strtab[i] = '?';
	d.strtab_len = r.strtab_len;
	uint32_t bad_names = 0;
	int sorted = 1;
	for (uint32_t i = 0; i < r.nsyms; i++) {
		struct fr_dso_sym s;
		memcpy(&s, syms_at + (size_t)i * sizeof(s), sizeof(s));
		if (s.name_off >= r.strtab_len) {
			bad_names++;
			continue;
		}
		if (d.nsyms && s.offset < d.syms[d.nsyms - 1].offset)
			sorted = 0;
		d.syms[d.nsyms++] = (struct ts_symbol){ s.offset, s.size, s.name_off };
	}
	if (bad_names)
		PROBLEM(w, "dso %u (%s): %u of %u symbols have name offsets beyond its %u-byte strtab; dropped",
			r.dso_id, d.path, bad_names, r.nsyms, r.strtab_len);
	if (!sorted)
		qsort(d.syms, d.nsyms, sizeof(*d.syms), sym_cmp);

	/* The recorder writes a file's symbols as they are first needed, so
	 * several records may describe one dso_id: their symbols add up. */
	size_t prev;
	if (hmap_get(&f->dso_by_id, r.dso_id, 0, &prev) && prev < f->n_dsos &&
	    f->dsos[prev].kind == d.kind)
		return merge_dso(w, &f->dsos[prev], &d, err);

	if (grow_array((void **)&f->dsos, &f->cap_dsos, f->n_dsos + 1, sizeof(*f->dsos), 64)) {
		free(d.path);
		free(d.strtab);
		free(d.syms);
		return ts_oom(err, w);
	}
	f->dsos[f->n_dsos] = d;
	if (hmap_put(&f->dso_by_id, r.dso_id, 0, f->n_dsos))
		return ts_oom(err, w); /* the dso is stored: freed with the file */
	f->n_dsos++;
	return 0;
}

static int decode_stats(const struct ts_where *w, const uint8_t *p, uint32_t size,
			struct frec_error *err)
{
	struct trace_file *f = w->f;
	struct fr_rec_stats r;
	memcpy(&r, p, sizeof(r));
	if ((uint64_t)r.n_probes * sizeof(struct fr_probe_stats) > size - sizeof(r)) {
		PROBLEM(w, "stats: %u probes do not fit in the record (%u bytes)", r.n_probes, size);
		return 0;
	}
	struct ts_probe *probes = calloc(r.n_probes ? r.n_probes : 1, sizeof(*probes));
	if (!probes)
		return ts_oom(err, w);
	for (uint32_t i = 0; i < r.n_probes; i++) {
		struct fr_probe_stats s;
		memcpy(&s, p + sizeof(r) + (size_t)i * sizeof(s), sizeof(s));
		ts_copy_comm(probes[i].name, s.name);
		probes[i].events = s.events;
		probes[i].drops = s.drops;
	}
	size_t drops_at = sizeof(r) + (size_t)r.n_probes * sizeof(struct fr_probe_stats);
	uint32_t nd = r.n_drops;
	if ((uint64_t)nd * sizeof(struct fr_drop_count) > size - drops_at) {
		PROBLEM(w, "stats: %u drop counts do not fit in the record (%u bytes)", nd, size);
		nd = 0;
	}
	struct fr_drop_count *drops = NULL;
	if (nd) {
		drops = malloc((size_t)nd * sizeof(*drops));
		if (!drops) {
			free(probes);
			return ts_oom(err, w);
		}
		memcpy(drops, p + drops_at, (size_t)nd * sizeof(*drops));
	}
	free(f->stats_probes);
	f->stats_probes = probes;
	f->n_stats_probes = r.n_probes;
	free(f->stats_drops);
	f->stats_drops = drops;
	f->n_stats_drops = nd;
	f->has_stats = 1;
	f->stats_ts_ns = r.ts_ns;
	f->stats_cpu_user_ns = r.cpu_user_ns;
	f->stats_cpu_sys_ns = r.cpu_sys_ns;
	return 0;
}

/* One sample of every RDMA port counter: add each increase to its name. */
static int decode_rdma_counters(const struct ts_where *w, const uint8_t *p, uint32_t size,
				struct frec_error *err)
{
	struct trace_file *f = w->f;
	struct fr_rec_rdma_counters r;
	memcpy(&r, p, sizeof(r));
	if ((uint64_t)r.n * sizeof(struct fr_rdma_counter) > size - sizeof(r)) {
		PROBLEM(w, "rdma counters: %u counters do not fit in the record (%u bytes)", r.n, size);
		return 0;
	}
	f->rdma_counter_records++;
	for (uint32_t i = 0; i < r.n; i++) {
		struct fr_rdma_counter c;
		memcpy(&c, p + sizeof(r) + (size_t)i * sizeof(c), sizeof(c));
		char name[41];
		memcpy(name, c.name, sizeof(c.name));
		name[40] = '\0';
		size_t len = strlen(name);
		for (size_t k = 0; k < len; k++)
			if ((unsigned char)name[k] < 0x20 || name[k] == 0x7f)
				name[k] = '?';
		uint64_t hash = 0xcbf29ce484222325ull; /* FNV-1a */
		for (size_t k = 0; k < len; k++)
			hash = (hash ^ (unsigned char)name[k]) * 0x100000001b3ull;
		uint64_t at;
		int found = hmap_get(&f->rdma_counter_by_name, hash, len, &at) &&
			    at < f->n_rdma_counters && !strcmp(f->rdma_counters[at].name, name);
		for (size_t k = 0; !found && k < f->n_rdma_counters; k++) /* hash collision */
			if (!strcmp(f->rdma_counters[k].name, name)) {
				at = k;
				found = 1;
			}
		if (!found) {
			struct ts_rdma_counter *grown = realloc(f->rdma_counters,
				(f->n_rdma_counters + 1) * sizeof(*grown));
			if (!grown)
				return ts_oom(err, w);
			f->rdma_counters = grown;
			at = f->n_rdma_counters++;
			memset(&grown[at], 0, sizeof(grown[at]));
			memcpy(grown[at].name, name, len + 1);
			uint64_t other;
			if (!hmap_get(&f->rdma_counter_by_name, hash, len, &other) &&
			    hmap_put(&f->rdma_counter_by_name, hash, len, at))
				return ts_oom(err, w);
		}
		struct ts_rdma_counter *t = &f->rdma_counters[at];
		t->total += c.delta;
		t->samples++;
		if (c.delta > t->max_delta)
			t->max_delta = c.delta;
		double per_s = r.interval_ns ? (double)c.delta * 1e9 / (double)r.interval_ns
					     : (double)c.delta;
		if (per_s > t->max_per_s)
			t->max_per_s = per_s;
	}
	return 0;
}

/* RANK, LOCAL_RANK and WORLD_SIZE of a process, kept by pid until the pass
 * ends (the PROCESS record may come later): (pid, 0) -> rank | local_rank
 * << 32, (pid, 1) -> world_size, each stored + 1 so 0 means unknown. */
static int64_t env_int(const char *kv, size_t len, const char *key)
{
	size_t klen = strlen(key);
	if (len <= klen + 1 || memcmp(kv, key, klen) || kv[klen] != '=')
		return -1;
	int64_t v = 0;
	for (size_t i = klen + 1; i < len; i++) {
		if (kv[i] < '0' || kv[i] > '9' || v > 100000000)
			return -1;
		v = v * 10 + (kv[i] - '0');
	}
	return v;
}

static int decode_proc_env(const struct ts_where *w, const uint8_t *p, uint32_t size,
			   struct frec_error *err)
{
	struct fr_rec_proc_env r;
	memcpy(&r, p, sizeof(r));
	if (r.len > size - sizeof(r)) {
		PROBLEM(w, "proc_env of pid %u: len %u exceeds the record (%u bytes)", r.pid, r.len,
			size);
		return 0;
	}
	const char *env = (const char *)p + sizeof(r);
	int64_t rank = -1, local_rank = -1, world_size = -1;
	for (size_t at = 0; at < r.len;) {
		const char *end = memchr(env + at, '\0', r.len - at);
		size_t len = end ? (size_t)(end - (env + at)) : r.len - at;
		int64_t v;
		if ((v = env_int(env + at, len, "RANK")) >= 0)
			rank = v;
		else if ((v = env_int(env + at, len, "LOCAL_RANK")) >= 0)
			local_rank = v;
		else if ((v = env_int(env + at, len, "WORLD_SIZE")) >= 0)
			world_size = v;
		at += len + 1;
	}
	uint64_t packed = (uint64_t)(rank + 1) | (uint64_t)(local_rank + 1) << 32;
	if (hmap_put(&w->f->env_by_pid, r.pid, 0, packed) ||
	    hmap_put(&w->f->env_by_pid, r.pid, 1, (uint64_t)(world_size + 1)) ||
	    ts_identity_note_env(w->f, r.pid, env, r.len))
		return ts_oom(err, w);
	return 0;
}

static int decode_proc_cgroup(const struct ts_where *w, const uint8_t *p, uint32_t size,
			      struct frec_error *err)
{
	struct fr_rec_proc_cgroup r;
	memcpy(&r, p, sizeof(r));
	if (r.len > size - sizeof(r) || r.len > FR_CGROUP_PATH_MAX) {
		PROBLEM(w, "proc_cgroup of pid %u: len %u exceeds the record (%u bytes) or %u",
			r.pid, r.len, size, FR_CGROUP_PATH_MAX);
		return 0;
	}
	if (ts_identity_note_cgroup(w->f, r.pid, (const char *)p + sizeof(r), r.len))
		return ts_oom(err, w);
	return 0;
}

static int decode_schema(const struct ts_where *w, const uint8_t *p, struct frec_error *err)
{
	struct trace_file *f = w->f;
	struct fr_rec_schema r;
	memcpy(&r, p, sizeof(r));
	if (rec_type_name(r.rec_type))
		return 0; /* the built-in name wins */
	if (!f->schema_names && !(f->schema_names = calloc(TS_N_TYPES, sizeof(char *))))
		return ts_oom(err, w);
	char name[25];
	memcpy(name, r.name, sizeof(r.name));
	name[24] = '\0';
	char *copy = ts_strndup_printable(name, strlen(name), '?');
	if (!copy)
		return ts_oom(err, w);
	free(f->schema_names[r.rec_type]);
	f->schema_names[r.rec_type] = copy;
	return 0;
}

int ts_decode_meta(const struct ts_where *w, uint16_t type, const uint8_t *p, uint32_t size,
		   struct frec_error *err)
{
	switch (type) {
	case FR_REC_PROCESS:
		return decode_process(w, p, size, err);
	case FR_REC_THREAD:
		return decode_thread(w, p, err);
	case FR_REC_MAPPING:
		return decode_mapping(w, p, size, err);
	case FR_REC_STACK:
		return decode_stack(w, p, size, err);
	case FR_REC_DSO:
		return decode_dso(w, p, size, err);
	case FR_REC_CLOCK: {
		struct trace_file *f = w->f;
		struct fr_rec_clock r;
		memcpy(&r, p, sizeof(r));
		f->clocks++;
		f->last_clock_mono_ns = r.mono_ns;
		f->last_clock_real_ns = r.real_ns;
		size_t n = f->n_clock_pairs;
		if (n < TS_MAX_CLOCK_PAIRS) {
			if (n >= 8 && (n & (n - 1)) == 0) { /* capacity doubles at powers of two */
				struct ts_clock *grown = realloc(f->clock_pairs, 2 * n * sizeof(*grown));
				if (!grown)
					return ts_oom(err, w);
				f->clock_pairs = grown;
			} else if (!f->clock_pairs &&
				   !(f->clock_pairs = malloc(8 * sizeof(*f->clock_pairs)))) {
				return ts_oom(err, w);
			}
			f->clock_pairs[f->n_clock_pairs++] = (struct ts_clock){ r.mono_ns, r.real_ns };
		}
		return 0;
	}
	case FR_REC_PROC_ENV:
		return decode_proc_env(w, p, size, err);
	case FR_REC_PROC_CGROUP:
		return decode_proc_cgroup(w, p, size, err);
	case FR_REC_STATS:
		return decode_stats(w, p, size, err);
	case FR_REC_SCHEMA:
		return decode_schema(w, p, err);
	case FR_REC_RDMA_COUNTERS:
		return decode_rdma_counters(w, p, size, err);
	case FR_REC_UNWIND:
		return decode_unwind(w, p, size, err);
	case FR_REC_PYCODE:
		return decode_pycode(w, p, size, err);
	case FR_REC_PYTHON:
		return decode_python(w, p, err);
	case FR_REC_INFLIGHT:
		return decode_inflight(w, p, size, err);
	case FR_REC_SYSCALL_DROPS:
		return decode_syscall_drops(w, p, size, err);
	case FR_REC_SNAPSHOT:
		return decode_snapshot(w, p, size, err);
	}
	return 0;
	return 0;
}
