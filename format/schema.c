/* The event-schema table written into every trace's SCHEMA chunk, and the
 * printable names of chunk types and codecs.  Keep the table in step with
 * bpf/events.h: test_format_schema checks every description against the
 * struct sizes. */
#include "frec_schema.h"
#include "frec_reader.h"

#define COMMON "ts_ns:u64,pid:u32,tid:u32"
#define PROC_FIELDS COMMON ",ppid:u32,exit_code:s32,comm:char[16]"

static const struct frec_schema_entry schema_table[] = {
	{ FR_EV_CPU_SAMPLE, 1, sizeof(struct fr_ev_cpu_sample), "cpu_sample",
	  COMMON ",cpu:u32,stack_id:u32" },
	{ FR_EV_SYSCALL, 1, sizeof(struct fr_ev_syscall), "syscall",
	  COMMON ",nr:u32,stack_id:u32,ret:s64,duration_ns:u64,fd:s64,"
	  "count:u64,sc_flags:u32,_pad:u32" },
	{ FR_EV_PROC_FORK, 1, sizeof(struct fr_ev_proc), "proc_fork", PROC_FIELDS },
	{ FR_EV_PROC_EXEC, 1, sizeof(struct fr_ev_proc), "proc_exec", PROC_FIELDS },
	{ FR_EV_PROC_EXIT, 1, sizeof(struct fr_ev_proc), "proc_exit", PROC_FIELDS },
	{ FR_EV_CUDA, 1, sizeof(struct fr_ev_cuda), "cuda",
	  COMMON ",func:u16,flags:u16,stack_id:u32,duration_ns:u64,result:s64,"
	  "ptr:u64,src:u64,bytes:u64,stream:u64,kind:u32,device:s32" },
	{ FR_EV_NCCL, 1, sizeof(struct fr_ev_nccl), "nccl",
	  COMMON ",func:u16,flags:u16,stack_id:u32,duration_ns:u64,result:s64,"
	  "comm:u64,count:u64,datatype:u32,op:u32,peer:s32,rank:s32,nranks:s32,"
	  "_pad:u32,stream:u64,uid_hash:u64" },
	{ FR_EV_RDMA_CTRL, 1, sizeof(struct fr_ev_rdma_ctrl), "rdma_ctrl",
	  COMMON ",func:u16,flags:u16,stack_id:u32,duration_ns:u64,result:s64,"
	  "ptr:u64,obj:u64,qp_num:u32,dest_qp_num:u32,qp_state:u32,attr_mask:u32,"
	  "path_mtu:u32,dlid:u16,port_num:u8,_pad:u8,gid:u8[16],addr:u64,"
	  "length:u64,lkey:u32,rkey:u32,access:u32,_pad2:u32" },
	{ FR_EV_RDMA_POST, 1, sizeof(struct fr_ev_rdma_post), "rdma_post",
	  COMMON ",wr_id:u64,bytes:u64,qp_num:u32,opcode:u32,num_sge:u16,"
	  "flags:u16,wr_index:u16,_pad:u16,result:s32,_pad2:u32" },
	{ FR_EV_RDMA_CQE, 1, sizeof(struct fr_ev_rdma_cqe), "rdma_cqe",
	  COMMON ",wr_id:u64,status:u32,opcode:u32,byte_len:u32,qp_num:u32,"
	  "src_qp:u32,vendor_err:u32,cq:u64" },
	{ FR_EV_STEP, 1, sizeof(struct fr_ev_step), "step",
	  COMMON ",stack_id:u32,_pad:u32" },
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
};

const struct frec_schema_entry *frec_schema_table(size_t *n)
{
	*n = sizeof(schema_table) / sizeof(schema_table[0]);
	return schema_table;
}

const struct frec_schema_entry *frec_schema_find(uint16_t rec_type)
{
	for (size_t i = 0; i < sizeof(schema_table) / sizeof(schema_table[0]); i++)
		if (schema_table[i].rec_type == rec_type)
			return &schema_table[i];
	return NULL;
}

const char *frec_chunk_type_name(uint16_t type)
{
	switch (type) {
	case FR_CHUNK_SCHEMA: return "schema";
	case FR_CHUNK_EVENTS: return "events";
	case FR_CHUNK_META: return "meta";
	case FR_CHUNK_INDEX: return "index";
	case FR_CHUNK_END: return "end";
	default: return "unknown";
	}
}

const char *frec_codec_name(uint8_t codec)
{
	switch (codec) {
	case FR_CODEC_NONE: return "none";
	case FR_CODEC_ZSTD: return "zstd";
	case FR_CODEC_ZLIB: return "zlib";
	default: return "unknown";
	}
}
