/* The probe-family descriptors (bpf/families/): every record layout they and
 * the metadata table describe matches the structs of bpf/events.h and
 * format/frec_records.h, every function and symbol is consistent, and the
 * field parser the dump printer uses reads them right. */
#include "check.h"
#include "fr_family.h"
#include "fr_fields.h"
#include "cuda_funcs.h"

#include <stddef.h>

/* Size in bytes of one schema field type, 0 for var, -1 when unknown. */
static long type_size(const char *t, size_t n)
{
	static const struct { const char *name; long size; } base[] = {
		{ "u8", 1 }, { "u16", 2 }, { "u32", 4 }, { "u64", 8 },
		{ "s32", 4 }, { "s64", 8 }, { "var", 0 },
	};
	for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
		if (strlen(base[i].name) == n && strncmp(t, base[i].name, n) == 0)
			return base[i].size;
	const char *br = memchr(t, '[', n);
	if (br && t[n - 1] == ']') {
		long elem = (br - t == 4 && strncmp(t, "char", 4) == 0) ? 1
			    : type_size(t, (size_t)(br - t));
		long count = strtol(br + 1, NULL, 10);
		return elem > 0 && count > 0 ? elem * count : -1;
	}
	return -1;
}

static void test_schema(void)
{
	size_t n;
	const struct frec_schema_entry *t = fr_schema_table(&n);
	static const uint16_t every_type[] = {
		FR_EV_CPU_SAMPLE, FR_EV_SYSCALL, FR_EV_PROC_FORK, FR_EV_PROC_EXEC,
		FR_EV_PROC_EXIT, FR_EV_CUDA, FR_EV_NCCL, FR_EV_RDMA_CTRL,
		FR_EV_RDMA_POST, FR_EV_RDMA_CQE, FR_EV_STEP, FR_EV_FD_PATH, FR_EV_SCHED,
		FR_EV_GPU_KERNEL, FR_EV_GPU_LAUNCH,
		FR_REC_PROCESS, FR_REC_MAPPING, FR_REC_STACK, FR_REC_DSO,
		FR_REC_CLOCK, FR_REC_STATS, FR_REC_SCHEMA, FR_REC_THREAD,
		FR_REC_PROC_ENV, FR_REC_ATTACH, FR_REC_RDMA_COUNTERS,
		FR_REC_USTACK, FR_REC_UNWIND, FR_REC_PYCODE, FR_REC_PYTHON,
		FR_REC_INFLIGHT, FR_REC_SNAPSHOT, FR_REC_SYSCALL_DROPS, FR_REC_PROC_CGROUP,
	};
	CHECK_EQ_U64(n, sizeof(every_type) / sizeof(every_type[0]));
	for (size_t i = 0; i < sizeof(every_type) / sizeof(every_type[0]); i++)
		CHECK(fr_schema_find(every_type[i]) != NULL);
	CHECK(fr_schema_find(0x7777) == NULL);
	for (size_t i = 0; i < n; i++) {
		CHECK(strlen(t[i].name) < 24);
		CHECK(t[i].fixed_size % 8 == 0);
		if (i)
			CHECK(t[i].rec_type > t[i - 1].rec_type);
		/* the fields cover the fixed part exactly, var part last */
		long sum = 8;
		int bad = 0, var_seen = 0;
		const char *p = t[i].desc;
		while (*p) {
			const char *colon = strchr(p, ':');
			const char *end = strchr(p, ',');
			if (!end)
				end = p + strlen(p);
			if (!colon || colon > end || var_seen) {
				bad = 1;
				break;
			}
			long sz = type_size(colon + 1, (size_t)(end - colon - 1));
			if (sz < 0)
				bad = 1;
			if (sz == 0)
				var_seen = 1;
			sum += sz > 0 ? sz : 0;
			p = *end ? end + 1 : end;
		}
		if (bad || sum != (long)t[i].fixed_size)
			fprintf(stderr, "  schema %s: fields sum to %ld, fixed_size %u\n",
				t[i].name, sum, t[i].fixed_size);
		CHECK(!bad && sum == (long)t[i].fixed_size);
	}
}

/* Spot checks of parsed offsets against the structs, one or more fields of
 * every event record and a few metadata records. */
static void test_field_offsets(void)
{
	static const struct { uint16_t type; const char *field; size_t off; } want[] = {
		{ FR_EV_CPU_SAMPLE, "cpu", offsetof(struct fr_ev_cpu_sample, cpu) },
		{ FR_EV_SYSCALL, "sc_flags", offsetof(struct fr_ev_syscall, sc_flags) },
		{ FR_EV_SYSCALL, "count", offsetof(struct fr_ev_syscall, count) },
		{ FR_EV_PROC_EXIT, "comm", offsetof(struct fr_ev_proc, comm) },
		{ FR_EV_CUDA, "device", offsetof(struct fr_ev_cuda, device) },
		{ FR_EV_CUDA, "stream", offsetof(struct fr_ev_cuda, stream) },
		{ FR_EV_NCCL, "uid_hash", offsetof(struct fr_ev_nccl, uid_hash) },
		{ FR_EV_NCCL, "nranks", offsetof(struct fr_ev_nccl, nranks) },
		{ FR_EV_NCCL, "seq", offsetof(struct fr_ev_nccl, seq) },
		{ FR_REC_INFLIGHT, "n", offsetof(struct fr_rec_inflight, n) },
		{ FR_REC_SYSCALL_DROPS, "n", offsetof(struct fr_rec_syscall_drops, n) },
		{ FR_REC_SNAPSHOT, "oom_retry", offsetof(struct fr_rec_snapshot, oom_retry) },
		{ FR_REC_SNAPSHOT, "detail_len", offsetof(struct fr_rec_snapshot, detail_len) },
		{ FR_EV_RDMA_CTRL, "gid", offsetof(struct fr_ev_rdma_ctrl, gid) },
		{ FR_EV_RDMA_CTRL, "access", offsetof(struct fr_ev_rdma_ctrl, access) },
		{ FR_EV_RDMA_POST, "result", offsetof(struct fr_ev_rdma_post, result) },
		{ FR_EV_RDMA_CQE, "cq", offsetof(struct fr_ev_rdma_cqe, cq) },
		{ FR_EV_STEP, "stack_id", offsetof(struct fr_ev_step, stack_id) },
		{ FR_EV_FD_PATH, "path", offsetof(struct fr_ev_fd_path, path) },
		{ FR_EV_FD_PATH, "source", offsetof(struct fr_ev_fd_path, source) },
		{ FR_REC_MAPPING, "path_len", offsetof(struct fr_rec_mapping, path_len) },
		{ FR_REC_USTACK, "regs", offsetof(struct fr_rec_ustack, regs) },
		{ FR_REC_ATTACH, "gap_ns", offsetof(struct fr_rec_attach, gap_ns) },
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct fr_field f[FR_FIELDS_MAX];
		const struct frec_schema_entry *e = fr_schema_find(want[i].type);
		int n = e ? fr_fields_parse(e->desc, f, FR_FIELDS_MAX) : -1;
		const struct fr_field *x = n > 0 ? fr_field_find(f, n, want[i].field) : NULL;
		if (!x || x->offset != want[i].off)
			fprintf(stderr, "  %s.%s: offset %d, struct says %zu\n", e ? e->name : "?",
				want[i].field, x ? (int)x->offset : -1, want[i].off);
		CHECK(x && x->offset == want[i].off);
	}
}

/* Every family: its records parse and cover their struct, stack_id sits
 * where the drain patches it exactly when the record carries a stack;
 * functions and symbols agree; ids and names are unique. */
static void test_families(void)
{
	size_t n;
	const struct fr_family *const *fams = fr_families(&n);
	CHECK_EQ_U64(n, 9);
	for (size_t i = 0; i < n; i++) {
		const struct fr_family *f = fams[i];
		CHECK(fr_family_by_id(f->id) == f);
		CHECK(fr_family_named(f->name) == f);
		CHECK(!f->selectable || f->help);
		CHECK(f->knobs && f->knobs[0]);
		for (size_t j = 0; j < i; j++)
			CHECK(fams[j]->id != f->id && strcmp(fams[j]->name, f->name));
		for (size_t r = 0; r < f->n_records; r++) {
			const struct fr_family_record *rec = &f->records[r];
			struct fr_field fl[FR_FIELDS_MAX];
			int nf = fr_fields_parse(rec->desc, fl, FR_FIELDS_MAX);
			CHECK(nf > 3);
			if (nf <= 3)
				continue;
			CHECK_EQ_U64(fl[nf - 1].offset + fl[nf - 1].size, rec->size);
			CHECK(rec->type < 0x100);
			CHECK(fr_family_of_record(rec->type) == f);
			CHECK(fr_family_record(rec->type) == rec);
			const struct fr_field *sid = fr_field_find(fl, nf, "stack_id");
			CHECK(rec->stack == (sid != NULL));
			if (sid)
				CHECK_EQ_U64(sid->offset, FR_EV_STACK_ID_OFFSET);
			CHECK(strcmp(fl[0].name, "ts_ns") == 0 && fl[0].offset == 8);
		}
		int n_entry = 0;
		while (n_entry < FR_FAMILY_MAX_ENTRY_PROGS && f->entry_progs[n_entry])
			n_entry++;
		for (size_t k = 0; k < f->n_funcs; k++) {
			CHECK(f->funcs[k].name && f->funcs[k].name[0]);
			CHECK(fr_family_func(f, f->funcs[k].id) == &f->funcs[k]);
			if (f->id == FR_PROBE_CUDA)
				CHECK(f->funcs[k].id < CUDA_FUNC_LIMIT);
		}
		for (size_t k = 0; k < f->n_symbols; k++) {
			CHECK(fr_family_func(f, f->symbols[k].func) != NULL);
			CHECK(f->symbols[k].entry < n_entry);
		}
		if (f->attach == FR_ATTACH_LIBRARY) {
			/* a return program unless no symbol is probed at its return
			 * (gpu: the injection library's probe functions) */
			int returns = 0;
			for (size_t k = 0; k < f->n_symbols; k++)
				returns |= !f->symbols[k].no_return;
			CHECK(f->n_symbols && n_entry && (f->exit_prog || !returns));
		}
	}
	CHECK(fr_family_by_id(FR_PROBE_MAX - 1) == NULL);
	CHECK(fr_family_named("cublas") == NULL);
	CHECK(fr_family_of_record(FR_REC_PROCESS) == NULL);
	CHECK_STR(fr_func_name(FR_PROBE_CUDA, FR_CU_MEM_ALLOC), "cuMemAlloc_v2");
	CHECK_STR(fr_func_name(FR_PROBE_NCCL, FR_NCCL_ALL_GATHER), "ncclAllGather");
	CHECK(fr_func_name(FR_PROBE_NCCL, 999) == NULL);
	CHECK(fr_func_class_of(FR_PROBE_NCCL, FR_NCCL_SEND) == FR_FN_P2P);
	CHECK(fr_func_class_of(FR_PROBE_CUDA, FR_CU_MEM_CREATE) == FR_FN_PHYS_ALLOC);
	CHECK(mem_func_class(FR_CUDA_HOST_REGISTER) == MEM_HOST_ALLOC);
	CHECK(mem_func_class(FR_CU_MEM_MAP) == MEM_NONE);
}

/* The field parser refuses what it cannot lay out. */
static void test_fields_parse(void)
{
	struct fr_field f[4];
	CHECK(fr_fields_parse("a:u32,b:s64,c:char[5],d:var", f, 4) == 4);
	CHECK_EQ_U64(f[1].offset, 12);
	CHECK(f[2].kind == FR_FIELD_CHARS && f[2].size == 5);
	CHECK(f[3].kind == FR_FIELD_VAR && f[3].offset == 25);
	CHECK(fr_fields_parse("a:u32,b:f32", f, 4) == -1);
	CHECK(fr_fields_parse("a:var,b:u8", f, 4) == -1);
	CHECK(fr_fields_parse("a:u8[0]", f, 4) == -1);
	CHECK(fr_fields_parse("a:u8[4", f, 4) == -1);
	CHECK(fr_fields_parse("a:char", f, 4) == -1);
	CHECK(fr_fields_parse(":u8", f, 4) == -1);
	CHECK(fr_fields_parse("a:u8,b:u8,c:u8,d:u8,e:u8", f, 4) == -1);
	CHECK(fr_fields_parse("", f, 4) == 0);
	uint8_t rec[16] = {0};
	rec[8] = 0xfe; rec[9] = 0xff;
	CHECK(fr_fields_parse("x:s16", f, 4) == 1);
	CHECK(fr_field_s64(rec, &f[0]) == -2);
	CHECK_EQ_U64(fr_field_u64(rec, &f[0]), 0xfffe);
}

int main(void)
{
	test_schema();
	test_field_offsets();
	test_families();
	test_fields_parse();
	return check_finish();
}
