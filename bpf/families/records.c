/* The schema of every record type (see fr_family.h): the families' event
 * records and the recorder's metadata records, as one table in type order.
 * test_format_schema checks every description against the struct sizes and
 * layouts of bpf/events.h. */
#include "fr_family.h"

#include <pthread.h>
#include <stdlib.h>

static const struct frec_schema_entry metadata[] = {
	{ FR_REC_PROCESS, 1, sizeof(struct fr_rec_process), "process",
	  "ts_ns:u64,start_time_ns:u64,pid:u32,ppid:u32,ns_pid:u32,"
	  "cmdline_len:u32,comm:char[16],cmdline:var" },
	{ FR_REC_MAPPING, 1, sizeof(struct fr_rec_mapping), "mapping",
	  "ts_ns:u64,pid:u32,dso_id:u32,start:u64,end:u64,pgoff:u64,"
	  "build_id:u8[20],build_id_len:u8,_pad:u8[1],path_len:u16,path:var" },
	{ FR_REC_STACK, 1, sizeof(struct fr_rec_stack), "stack",
	  "stack_id:u32,pid:u32,n_kernel:u16,n_user:u16,_pad:u32,ips:var" },
	{ FR_REC_DSO, 1, sizeof(struct fr_rec_dso), "dso",
	  "dso_id:u32,nsyms:u32,strtab_len:u32,path_len:u16,kind:u8,"
	  "build_id_len:u8,build_id:u8[20],_pad:u32,path_syms_strtab:var" },
	{ FR_REC_CLOCK, 1, sizeof(struct fr_rec_clock), "clock",
	  "mono_ns:u64,real_ns:u64" },
	{ FR_REC_STATS, 2, sizeof(struct fr_rec_stats), "stats",
	  "ts_ns:u64,cpu_user_ns:u64,cpu_sys_ns:u64,n_probes:u32,n_drops:u32,"
	  "probes_drops:var" },
	{ FR_REC_SCHEMA, 1, sizeof(struct fr_rec_schema), "schema",
	  "rec_type:u16,version:u16,fixed_size:u32,name:char[24],desc_len:u32,"
	  "_pad:u32,desc:var" },
	{ FR_REC_THREAD, 1, sizeof(struct fr_rec_thread), "thread",
	  "ts_ns:u64,pid:u32,tid:u32,comm:char[16]" },
	{ FR_REC_PROC_ENV, 1, sizeof(struct fr_rec_proc_env), "proc_env",
	  "ts_ns:u64,pid:u32,len:u32,env:var" },
	{ FR_REC_PROC_CGROUP, 1, sizeof(struct fr_rec_proc_cgroup), "proc_cgroup",
	  "ts_ns:u64,pid:u32,len:u32,path:var" },
	{ FR_REC_ATTACH, 1, sizeof(struct fr_rec_attach), "attach",
	  "ts_ns:u64,pid:u32,probe:u16,status:u16,symbol:char[48],gap_ns:u64,"
	  "text_len:u32,_pad:u32,text:var" },
	{ FR_REC_RDMA_COUNTERS, 1, sizeof(struct fr_rec_rdma_counters),
	  "rdma_counters", "ts_ns:u64,interval_ns:u64,n:u32,_pad:u32,counters:var" },
	{ FR_REC_USTACK, 1, sizeof(struct fr_rec_ustack), "ustack",
	  "stack_id:u32,pid:u32,tid:u32,n_kernel:u16,n_py:u16,stack_len:u32,"
	  "flags:u16,py_version:u16,regs:u64[17],kernel_py_stack:var" },
	{ FR_REC_UNWIND, 1, sizeof(struct fr_rec_unwind), "unwind",
	  "dso_id:u32,image_len:u32,build_id_len:u8,build_id:u8[20],_pad:u8[3],"
	  "image:var" },
	{ FR_REC_PYCODE, 1, sizeof(struct fr_rec_pycode), "pycode",
	  "code:u64,pid:u32,firstlineno:u32,py_version:u16,qualname_len:u16,"
	  "filename_len:u16,_pad:u16,linetable_len:u32,_pad2:u32,names_table:var" },
	{ FR_REC_PYTHON, 1, sizeof(struct fr_rec_python), "python",
	  "ts_ns:u64,pid:u32,py_version:u16,status:u16,runtime_addr:u64" },
	{ FR_REC_SNAPSHOT, 1, sizeof(struct fr_rec_snapshot), "snapshot",
	  "trigger_ns:u64,window_first_ns:u64,window_last_ns:u64,evicted_records:u64,"
	  "carried_bytes:u64,carried_allocs:u32,number:u32,trigger:u16,oom_retry:u16,"
	  "suppressed:u32,pid:u32,detail_len:u32,detail:var" },
	{ FR_REC_INFLIGHT, 1, sizeof(struct fr_rec_inflight), "inflight",
	  "seen_ns:u64,n:u32,_pad:u32,calls:var" },
	{ FR_REC_SYSCALL_DROPS, 1, sizeof(struct fr_rec_syscall_drops), "syscall_drops",
	  "ts_ns:u64,n:u32,_pad:u32,counts:var" },
};

#define MAX_RECORDS 64
static struct frec_schema_entry table[MAX_RECORDS];
static size_t n_table;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static int by_type(const void *a, const void *b)
{
	const struct frec_schema_entry *x = a, *y = b;
	return (int)x->rec_type - (int)y->rec_type;
}

static void build_table(void)
{
	size_t n_fam;
	const struct fr_family *const *fams = fr_families(&n_fam);
	for (size_t i = 0; i < n_fam; i++)
		for (size_t r = 0; r < fams[i]->n_records && n_table < MAX_RECORDS; r++) {
			const struct fr_family_record *rec = &fams[i]->records[r];
			table[n_table++] = (struct frec_schema_entry){ rec->type, rec->version,
								       rec->size, rec->name, rec->desc };
		}
	for (size_t i = 0; i < sizeof(metadata) / sizeof(metadata[0]) && n_table < MAX_RECORDS; i++)
		table[n_table++] = metadata[i];
	qsort(table, n_table, sizeof(table[0]), by_type);
}

const struct frec_schema_entry *fr_schema_table(size_t *n)
{
	pthread_once(&table_once, build_table);
	*n = n_table;
	return table;
}

const struct frec_schema_entry *fr_schema_find(uint16_t rec_type)
{
	size_t n;
	const struct frec_schema_entry *t = fr_schema_table(&n);
	for (size_t i = 0; i < n; i++)
		if (t[i].rec_type == rec_type)
			return &t[i];
	return NULL;
}
