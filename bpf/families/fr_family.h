/* A probe family is one descriptor: its number, its name and help, the
 * records its BPF program writes (layout, size, whether they carry a
 * stack), the API functions it probes (id, display name, class) and the
 * exported symbols each is found by, the BPF programs and the read-only
 * knobs they read.  The recorder (options, help, loader, attach, drain
 * sizes), the trace schema (records.c), the dump printer, SQLite's name
 * tables and the analyzer's name lookups all iterate these descriptors;
 * a new family adds its BPF program, one family_*.c file here, its model
 * if it needs analysis, its SPEC section and its tests.
 *
 * Pure data, no I/O: linked by the recorder, the analyzer and the tests. */
#ifndef FLIGHTREC_FR_FAMILY_H
#define FLIGHTREC_FR_FAMILY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events.h"
#include "frec_schema.h"

/* The option bit of a family: 1 << enum fr_probe_id, the one numbering
 * (also the index of its drop counters). */
#define PROBE_BIT(id) (1u << (id))

/* The fields of struct fr_ev_common after its header, in schema form. */
#define FR_COMMON_FIELDS "ts_ns:u64,pid:u32,tid:u32"

/* One record type a family's program writes. */
struct fr_family_record {
	uint16_t type;    /* enum fr_rec_type */
	uint16_t version; /* bumped when fields are appended */
	uint32_t size;    /* sizeof the struct, fr_rec_hdr included */
	const char *name; /* < 24 chars */
	const char *desc; /* "field:type,..." after the fr_rec_hdr (SPEC.md 6) */
	bool stack;       /* stack_id at FR_EV_STACK_ID_OFFSET */
};

/* What an API function does, for the models that classify calls. */
enum fr_func_class {
	FR_FN_OTHER = 0,
	FR_FN_ALLOC,         /* device memory (cudaMalloc, cuMemAlloc, ...) */
	FR_FN_FREE,
	FR_FN_PHYS_ALLOC,    /* physical memory behind a handle (cuMemCreate) */
	FR_FN_PHYS_FREE,     /* cuMemRelease */
	FR_FN_HOST_ALLOC,    /* pinned host memory (cudaMallocHost, cudaHostRegister) */
	FR_FN_HOST_FREE,
	FR_FN_MAP,           /* cuMemMap */
	FR_FN_UNMAP,
	FR_FN_COPY,
	FR_FN_LAUNCH,
	FR_FN_SYNC,          /* the host waits for the device */
	FR_FN_DEVICE,        /* selects the thread's device */
	FR_FN_COLLECTIVE,    /* every rank of a communicator takes part */
	FR_FN_P2P,           /* send/recv between two ranks */
	FR_FN_GROUP,         /* group start/end */
	FR_FN_COMM_INIT,     /* creates a communicator */
	FR_FN_COMM_DESTROY,
	FR_FN_OPEN,          /* opens a device (verbs) */
	FR_FN_CREATE,        /* creates a queue pair or completion queue */
	FR_FN_MODIFY,
	FR_FN_DESTROY,
	FR_FN_REGISTER,      /* registers memory with the NIC */
	FR_FN_DEREGISTER,
	FR_FN_OPS,           /* pseudo-call: a context's provider functions */
	/* appended for CUDA events and graphs (values above never change) */
	FR_FN_EVENT,         /* orders device work by an event, the host never waits:
				records one on a stream, or makes a stream wait
				for one (cudaEventRecord, cudaStreamWaitEvent) */
	FR_FN_QUERY,         /* asks whether device work is done, never blocks
				(cudaEventQuery: 0 done, 600 not ready) */
	FR_FN_GRAPH_LAUNCH,  /* launches a captured graph (many kernels) on a stream */
};

/* One API function of a family (the `func` field of its events). */
struct fr_family_func {
	uint16_t id;
	const char *name;    /* as every output shows it */
	enum fr_func_class cls;
};

/* One exported symbol a family's probes attach to.  The BPF cookie is
 * func | flags << 16 | extra << 32. */
struct fr_family_symbol {
	const char *symbol;
	uint16_t func;   /* the family's function id */
	uint16_t flags;  /* event flags (e.g. FR_CUDAF_PTSZ) */
	uint32_t extra;  /* e.g. a copy direction */
	uint8_t entry;   /* which of the family's entry programs */
	bool no_return;  /* entry only */
};

/* How a family's programs are attached. */
enum fr_family_attach {
	FR_ATTACH_AUTO,     /* the programs' own tracepoints (proc, syscalls) */
	FR_ATTACH_PERF,     /* a CPU-clock perf event on every CPU (cpu) */
	FR_ATTACH_LIBRARY,  /* uprobes on every library a traced process maps */
	FR_ATTACH_SYMBOL,   /* a uprobe on one symbol the user names (step) */
};

#define FR_FAMILY_MAX_ENTRY_PROGS 4

struct fr_family {
	enum fr_probe_id id;
	const char *name;       /* --probes, --lib, statistics and messages */
	bool selectable;        /* named in --probes (proc and step are not:
				   they exist when needed) */
	const char *help;       /* --probes help; lines after the first indented */
	enum fr_family_attach attach;
	const struct fr_family_record *records;
	size_t n_records;
	const struct fr_family_func *funcs;
	size_t n_funcs;
	const struct fr_family_symbol *symbols;
	size_t n_symbols;
	/* BPF programs by name: a uprobe family's entry programs (a symbol's
	 * `entry` indexes them) and return program; a perf family's program
	 * in entry_progs[0]; none for FR_ATTACH_AUTO (every program attaches
	 * to its own tracepoint).  The object is bpf/NAME.bpf.c's. */
	const char *entry_progs[FR_FAMILY_MAX_ENTRY_PROGS];
	const char *exit_prog;
	/* read-only variables of the BPF object the recorder sets from its
	 * options before loading (recorder/attach/bpf_knobs.c), NULL-terminated */
	const char *const *knobs;
};

/* Every family, in id order. */
const struct fr_family *const *fr_families(size_t *n);
/* The family of id, or NULL. */
const struct fr_family *fr_family_by_id(unsigned id);
/* The family named name (selectable or not), or NULL. */
const struct fr_family *fr_family_named(const char *name);
/* The family whose program writes record type, or NULL (metadata). */
const struct fr_family *fr_family_of_record(uint16_t type);
/* The family record of type, or NULL. */
const struct fr_family_record *fr_family_record(uint16_t type);
/* One function of a family, or NULL. */
const struct fr_family_func *fr_family_func(const struct fr_family *f, uint16_t func);
/* The display name of func in the family of id, or NULL. */
const char *fr_func_name(enum fr_probe_id id, uint16_t func);
/* The class of func in the family of id (FR_FN_OTHER when unknown). */
enum fr_func_class fr_func_class_of(enum fr_probe_id id, uint16_t func);

/* The schema of every record type this build knows, events and metadata,
 * in type order: what the writer puts in a trace's SCHEMA chunk and what
 * the reader checks record sizes against. */
const struct frec_schema_entry *fr_schema_table(size_t *n);
/* NULL when the type is unknown to this build. */
const struct frec_schema_entry *fr_schema_find(uint16_t rec_type);

/* The families, one descriptor each (family_*.c). */
extern const struct fr_family fr_family_proc;
extern const struct fr_family fr_family_cpu;
extern const struct fr_family fr_family_syscalls;
extern const struct fr_family fr_family_cuda;
extern const struct fr_family fr_family_nccl;
extern const struct fr_family fr_family_rdma;
extern const struct fr_family fr_family_step;
extern const struct fr_family fr_family_sched;
extern const struct fr_family fr_family_gpu;

#endif
