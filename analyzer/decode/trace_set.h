/* The decode stage: one or many trace files (one per node), each read in
 * two streaming passes.  Pass 1 (every file first) decodes the metadata
 * chunks (SCHEMA, META) and skips EVENTS chunks without reading their
 * payload; pass 2 reads the EVENTS chunks: fp stacks, dwarf-mode stacks
 * (FR_REC_USTACK: unwound, named and merged with their Python frames right
 * away, since every mapping, unwind image and code object is known from
 * pass 1, then interned by content into a canonical stack and the raw bytes
 * dropped) and events, handed to the registered models with their stack_id
 * rewritten to the canonical id.  Metadata (processes, threads, mappings,
 * DSOs with their symbol tables, distinct stacks, clock anchors, stats,
 * per-type counts, damage) is kept in memory; events are never stored, so
 * memory grows with distinct stacks and metadata, not with the length of
 * the recording (a dwarf-mode raw stack costs ~12 bytes: its id's entry in
 * ustack_ids).  Each file keeps its own id namespaces (stack ids, dso ids
 * are only meaningful within their file).
 *
 * Not for symbolization (symbolize.c) nor for analyses (model_*.c).
 * Everything read from a file is hostile: every count, length and id is
 * checked against what remains; a bad record becomes a ts_problem, never a
 * crash. */
#ifndef FLIGHTREC_TRACE_SET_H
#define FLIGHTREC_TRACE_SET_H

#include <stddef.h>
#include <stdint.h>
#include "frec_error.h"
#include "frec_reader.h"
#include "hmap.h"
#include "model.h"

struct ts_process {
	uint32_t pid;
	uint32_t ppid;
	uint64_t start_time_ns;
	char comm[17];
	char *cmdline;      /* argv joined by spaces, printable; never NULL */
	uint32_t threads;   /* distinct tids named by THREAD records */
	/* launcher environment (FR_REC_PROC_ENV: RANK, LOCAL_RANK, WORLD_SIZE);
	 * -1 when unknown */
	int32_t rank;
	int32_t local_rank;
	int32_t world_size;
};

/* One clock anchor: the same instant on both clocks of the node. */
struct ts_clock {
	uint64_t mono_ns;
	uint64_t real_ns;
};
#define TS_MAX_CLOCK_PAIRS (1u << 20) /* one per second: 12 days */

/* The per-file correction align.c derives from events that must be
 * simultaneous across nodes (see align.h); zero until it runs. */
struct ts_align {
	int refined;                  /* correction_ns is an estimate */
	int reference;                /* the file the others are aligned to */
	int64_t correction_ns;        /* added on top of the realtime anchors */
	int64_t uncertainty_ns;
	uint64_t n_sync;              /* simultaneous events it rests on */
};

struct ts_mapping {
	uint32_t pid;
	uint32_t dso_id;    /* 0: no symbols for this file */
	uint64_t start;     /* [start, end) virtual addresses */
	uint64_t end;
	uint64_t pgoff;     /* file offset of start */
	uint64_t seq;       /* file order: later records win on overlap */
	char *path;         /* never NULL, may be "" */
};

struct ts_symbol {
	uint64_t offset;    /* file offset (ELF) or address (kernel) */
	uint32_t size;      /* 0: extends to the next symbol */
	uint32_t name_off;  /* into the dso's strtab, checked */
};

struct ts_dso {
	uint32_t dso_id;
	uint8_t kind;       /* 0 ELF file, 1 kernel */
	uint8_t build_id_len;
	uint8_t build_id[20];
	char *path;
	struct ts_symbol *syms; /* sorted by offset */
	uint32_t nsyms;
	char *strtab;       /* NUL-terminated past strtab_len */
	uint32_t strtab_len;
};

struct uw_store;
struct py_table;
struct ts_pass;

struct ts_stack {
	uint32_t stack_id;
	uint32_t pid;
	uint16_t n_kernel;
	uint16_t n_user;
	size_t ips_at;      /* index into trace_file.ips: kernel leaf first, then user leaf first */
	/* dwarf mode: nonzero for a canonical stack (stack_id has
	 * TS_CANON_STACK_BIT; one per distinct (pid, kernel ips, merged user
	 * frames) of the file's FR_REC_USTACK records), 0 for a frame-pointer
	 * stack.  Its user frames are names, not ips: n_user of them at
	 * trace_file.ustack_names + names_at, root first. */
	uint32_t ustack;
	size_t names_at;
};

/* Canonical dwarf-mode stack ids: this bit set, never a raw FR_REC_USTACK
 * id (the recorder sets bit 31 on those) nor, in recorder-written files, an
 * fp stack id; an fp STACK record already using one is skipped over. */
#define TS_CANON_STACK_BIT 0x40000000u

/* Raw FR_REC_USTACK id -> canonical stack id: open addressing, one 8-byte
 * slot (key << 32 | value, key 0 = empty) per id at <= 3/4 load. */
struct ts_idmap {
	uint64_t *slots;
	size_t cap;   /* power of two, or 0 */
	size_t count;
};

/* Dwarf-mode stacks of one file (stack_merge.c and trace_set.c count them). */
struct ts_dwarf_stats {
	uint64_t records;       /* FR_REC_USTACK records resolved */
	uint64_t distinct;      /* canonical stacks they collapsed to */
	uint64_t stopped_early; /* records whose unwind did not reach the outermost frame */
	uint64_t merge_lost;    /* records whose merge has a "[lost]" frame */
	uint64_t images;        /* FR_REC_UNWIND images accepted */
	uint64_t resolve_ns;    /* time spent unwinding, naming, merging and interning */
};

/* A record the pass could not use: reported by info/check, never fatal. */
struct ts_problem {
	uint64_t chunk_offset; /* file offset of the chunk header */
	uint64_t rec_offset;   /* offset of the record in the decompressed payload */
	char what[160];
};
#define TS_MAX_PROBLEMS_KEPT 64

struct ts_probe {
	char name[17];
	uint64_t events;
	uint64_t drops;
};

/* One RDMA port counter over the recording (FR_REC_RDMA_COUNTERS records,
 * one sample a second of every counter's increase). */
struct ts_rdma_counter {
	char name[41];      /* "device/port/counter", as the recorder wrote it */
	uint64_t total;     /* sum of the increases */
	uint64_t max_delta; /* largest increase in one sample */
	double max_per_s;   /* largest increase per second (delta / interval) */
	uint64_t samples;
};

/* Chunk types counted separately in info. */
enum ts_chunk_kind {
	TS_CHUNK_SCHEMA, TS_CHUNK_EVENTS, TS_CHUNK_META, TS_CHUNK_INDEX,
	TS_CHUNK_END, TS_CHUNK_UNKNOWN, TS_CHUNK_KINDS
};

struct trace_file {
	char *path;                   /* what messages call it: the path given, or
					 ARCHIVE:MEMBER for a member of an archive */
	size_t member_at;             /* where MEMBER starts in path; 0: not a member */
	int member_fd;                /* the member's anonymous copy (ts_archive.h), or -1 */
	struct frec_reader *reader;   /* kept open: damage list lives there */
	struct fr_file_hdr hdr;
	char *cmdline;                /* never NULL */
	uint64_t size_bytes;

	/* chunks */
	uint64_t chunks;
	uint64_t chunks_by_kind[TS_CHUNK_KINDS];
	uint64_t chunks_by_codec[4];  /* none, zstd, zlib, other */
	uint64_t raw_bytes;
	uint64_t stored_bytes;
	int io_failed;                /* the pass stopped early on an I/O error */
	struct frec_error io_err;

	/* records */
	uint64_t records;
	/* per type: the counters of types hi << 8 .. hi << 8 | 0xff in
	 * records_by_type[hi], NULL while none was seen (a trace uses a few
	 * of the 65,536 types; thousands of files stay open at once) */
	uint64_t *records_by_type[256];
	uint64_t events;              /* kernel events fed to models */
	uint64_t events_by_type[0x100]; /* the same, per type */
	uint64_t first_event_ns;      /* CLOCK_MONOTONIC; 0 when no events */
	uint64_t first_chunk_event_ns; /* the earliest first_ts_ns of its EVENTS
					  chunk headers (known after pass 1: the
					  recorder stamps a chunk with its events'
					  times only); 0 when none */
	uint64_t last_event_ns;

	/* metadata */
	struct ts_process *procs;     /* one per pid, latest record wins */
	size_t n_procs, cap_procs;
	struct hmap proc_by_pid;      /* pid -> index */
	struct hmap thread_seen;      /* (pid, tid) -> index into thread_names + 1 */
	char (*thread_names)[17];     /* latest THREAD record's name per thread */
	size_t n_thread_names;
	struct ts_mapping *maps;
	size_t n_maps, cap_maps;
	struct ts_dso *dsos;
	size_t n_dsos, cap_dsos;
	struct hmap dso_by_id;        /* dso_id -> index (latest record wins) */
	struct ts_stack *stacks;
	size_t n_stacks, cap_stacks;
	struct hmap stack_by_id;      /* stack_id -> index (first record wins) */
	uint64_t *ips;
	size_t n_ips, cap_ips;
	uint64_t clocks;              /* CLOCK records */
	uint64_t last_clock_mono_ns, last_clock_real_ns;
	struct ts_clock *clock_pairs; /* every CLOCK record in file order, capped */
	size_t n_clock_pairs;
	struct ts_align align;        /* owned by align.c */
	struct hmap env_by_pid;       /* (pid, 0|1) -> packed ranks, until the pass ends */
	/* where each process ran (ts_identity.c, trace_file_identity) */
	struct ts_ident {
		uint32_t pid;
		char *cgroup;         /* FR_REC_PROC_CGROUP, printable; NULL none */
		char *env;            /* SLURM_* and POD_NAMESPACE, NUL-separated */
		size_t env_len;
	} *idents;
	size_t n_idents, cap_idents;
	struct hmap ident_by_pid;     /* pid -> index */
	char **schema_names;          /* 65536 slots, lazily filled, may be NULL */

	/* a flight-recorder snapshot's record (FR_REC_SNAPSHOT): why it was
	 * written and what window it holds; has_snapshot 0 for a recording */
	int has_snapshot;
	struct fr_rec_snapshot snapshot;
	char *snapshot_detail;        /* printable; NULL when none */

	/* FR_REC_INFLIGHT: the calls the recorder found entered and not
	 * returned when it last looked (the record with the latest seen_ns
	 * wins: later looks supersede earlier ones), and when it looked */
	struct fr_inflight_call *inflight;
	uint32_t n_inflight;
	uint64_t inflight_seen_ns;    /* CLOCK_MONOTONIC; 0: no INFLIGHT record */

	/* the latest STATS record (used when there is no END) */
	int has_stats;
	uint64_t stats_ts_ns, stats_cpu_user_ns, stats_cpu_sys_ns;
	struct ts_probe *stats_probes;
	uint32_t n_stats_probes;
	struct fr_drop_count *stats_drops; /* losses per (probe, reason) */
	uint32_t n_stats_drops;

	/* FR_REC_SYSCALL_DROPS: the syscalls family's ring-full losses per call
	 * number (the latest record), in nr order; has_ 0 when none */
	int has_syscall_drops;
	uint64_t syscall_drops_ts_ns;
	struct fr_syscall_drop *syscall_drops;
	uint32_t n_syscall_drops;

	/* RDMA port counters, summed per name (model_rdma.c reports them) */
	struct ts_rdma_counter *rdma_counters;
	size_t n_rdma_counters;
	struct hmap rdma_counter_by_name; /* (name hash, length) -> index */
	uint64_t rdma_counter_records;

	/* dwarf mode: unwind images (unwind.h; the store keeps no raw stacks),
	 * Python code objects (pyframes.h), interpreter versions by pid
	 * (FR_REC_PYTHON: pid -> py_version | status << 16), the user frames of
	 * the canonical stacks, and which canonical stack each raw id became */
	struct uw_store *ustacks;     /* NULL until the first UNWIND */
	struct py_table *pycodes;     /* NULL until the first PYCODE */
	struct hmap python_by_pid;
	const char **ustack_names;    /* pooled by the set; valid until trace_set_free */
	size_t n_ustack_names, cap_ustack_names;
	struct ts_idmap ustack_ids;   /* raw USTACK id -> canonical stack id */
	struct hmap canon_by_hash;    /* (content hash + probe, pid) -> index into stacks */
	uint32_t next_canon;          /* canonical ids handed out */
	struct ts_dwarf_stats dwarf_stats;
	struct ts_pass *pass;         /* trace_set.c's, during trace_set_run only */

	struct ts_problem problems[TS_MAX_PROBLEMS_KEPT];
	uint64_t n_problems;          /* may exceed the kept ones */
};

/* The records of type t that f held (0 none). */
static inline uint64_t trace_file_records_of_type(const struct trace_file *f, uint16_t t)
{
	const uint64_t *row = f->records_by_type[t >> 8];
	return row ? row[t & 0xff] : 0;
}

struct trace_set;

/* Opens every file (headers validated).  A trace archive (.tar, .tar.gz,
 * .tar.zst: ts_archive.h) stands for its .frec members, in archive order,
 * each copied into an anonymous file and named ARCHIVE:MEMBER.  Fails on
 * the first file that cannot be opened, with err naming it. */
int trace_set_open(const char *const *paths, size_t n, struct trace_set **out,
		   struct frec_error *err);
/* The same files as src opened again for a second pass (the report's
 * memory snapshots): trace files by path, archive members from their
 * anonymous copies (never by expanding the archive again). */
int trace_set_reopen(const struct trace_set *src, struct trace_set **out,
		     struct frec_error *err);
/* Opens n open files (fds[i], not taken: the set keeps a copy) named
 * names[i] in messages, as members of no archive (the archive command's
 * redacted copies). */
int trace_set_open_fds(const int *fds, const char *const *names, size_t n,
		       struct trace_set **out, struct frec_error *err);
void trace_set_free(struct trace_set *ts);

/* What opening the set skipped, one line each ("ARCHIVE: MEMBER: skipped:
 * a symbolic link ..."), for the caller to print as warnings. */
size_t trace_set_warning_count(const struct trace_set *ts);
const char *trace_set_warning(const struct trace_set *ts, size_t i);

/* A new descriptor on the file's bytes, for a command's own second pass
 * (dump's events, the archive command's copy): the trace file opened
 * again, or the member's anonymous copy.  -1 with errno set. */
int trace_file_fd(const struct trace_file *f);

/* Registers a model to be fed during the pass; the returned state is owned by
 * the set (freed by trace_set_free) and is what the model's result accessor
 * takes.  NULL when memory runs out. */
void *trace_set_add_model(struct trace_set *ts, const struct model_ops *ops,
			  const struct model_opts *opts);

/* The model named name (analyzer_models[]), registered with the models it
 * needs before it, or the state it already has when an earlier request
 * registered it (then opts of that request apply).  NULL when the name is
 * unknown or memory runs out. */
void *trace_set_use_model(struct trace_set *ts, const char *name,
			  const struct model_opts *opts);

/* The pass over every file, then finish() of every model.  Damage is not an
 * error, nor is an I/O error in one file (that file is marked io_failed, keeps
 * what was read before it, and the other files are still read); -1 only when
 * memory runs out or a model fails. */
int trace_set_run(struct trace_set *ts, struct frec_error *err);

/* Threads that read and decompress chunks ahead of the passes, one file
 * each at a time (`--jobs N`); <= 1 (the default): none.  The models are
 * fed in the same order either way, so every result is the same. */
void trace_set_set_jobs(struct trace_set *ts, unsigned jobs);

size_t trace_set_count(const struct trace_set *ts);
/* Kernel events of one type fed to the models, over every file. */
uint64_t trace_set_events_of(struct trace_set *ts, uint16_t type);
struct trace_file *trace_set_file(struct trace_set *ts, size_t i);

/* Lookups within one file; NULL when absent.  trace_file_stack takes a
 * canonical id (what models are fed) or a raw FR_REC_USTACK id (what the
 * file holds: cmd_dump reads events itself) alike. */
const struct ts_stack *trace_file_stack(const struct trace_file *f, uint32_t stack_id);
const struct ts_dso *trace_file_dso(const struct trace_file *f, uint32_t dso_id);
const struct ts_process *trace_file_process(const struct trace_file *f, uint32_t pid);
/* The thread's name from its latest THREAD record; NULL when none. */
const char *trace_file_thread_name(const struct trace_file *f, uint32_t pid, uint32_t tid);
/* Where process pid ran: its container, pod and Slurm job/step/task from
 * its cgroup path (FR_REC_PROC_CGROUP) and launcher environment
 * (proc_identity.h); *cgroup the path, or NULL.  0 (out zeroed) when the
 * file says nothing of it. */
struct proc_identity;
int trace_file_identity(const struct trace_file *f, uint32_t pid, struct proc_identity *out,
			const char **cgroup);

/* True when the file is damaged (reader damage, missing chunks, malformed
 * records, I/O error) or incomplete (no END). */
/* Losses per (probe, reason): END's, else the latest STATS record's; NULL
 * (n = 0) when the file has neither, or predates format 1.1. */
const struct fr_drop_count *trace_file_drops(const struct trace_file *f, uint32_t *n);
/* When the losses of d happened, in seconds from the recording's start:
 * 1, or 0 when the recorder could not tell. */
int trace_file_drop_window(const struct trace_file *f, const struct fr_drop_count *d,
			   double *first_s, double *last_s);
/* The syscalls family's ring-full losses per call number, in nr order;
 * NULL (n = 0) when the file has no FR_REC_SYSCALL_DROPS record (an older
 * recorder, a killed one, a snapshot, no syscalls probe) or it lists none. */
const struct fr_syscall_drop *trace_file_syscall_drops(const struct trace_file *f, uint32_t *n);
int trace_file_damaged(const struct trace_file *f);
/* "stopped early: disk full at 12.345 s ..." when the recorder could not
 * write the whole recording (the file is valid up to there), else NULL. */
const char *trace_file_stopped(const struct trace_file *f, char *buf, size_t len);
int trace_file_complete(const struct trace_file *f);
/* The verdict `check` gives: "intact", "incomplete", "damaged", "stopped
 * early" or "unusable" (a read error). */
const char *trace_file_verdict(const struct trace_file *f);
/* The recording's length: END's end time, else (incomplete: *exact 0) the
 * last event or stats record, from the header's start. */
uint64_t trace_file_duration_ns(const struct trace_file *f, int *exact);

/* A one-line summary of what is wrong, for warnings: "incomplete: no end
 * record (recorder killed?); 1 damaged region". "" when intact. */
const char *trace_file_trouble(const struct trace_file *f, char *buf, size_t len);

/* Name of a record type ("cpu_sample", "mapping" ...), from the built-in
 * table, else from the file's SCHEMA chunk, else NULL. */
const char *trace_file_type_name(const struct trace_file *f, uint16_t type);
const char *rec_type_name(uint16_t type);

/* Objects a later stage hangs on the set, freed with it by the free
 * function that stage gives: the decode stage needs nothing of the stages
 * above it (the symbolizer, the dwarf-mode resolver). */
enum ts_slot {
	TS_SLOT_SYMBOLIZER,         /* the set's symbolizer (symbolize.h) */
	TS_SLOT_RESOLVE_SYMBOLIZER, /* pass 2's own, for dwarf-mode stacks */
	TS_SLOT_RESOLVER,           /* the dwarf-mode resolver of the file being read */
	TS_SLOT_FRAME_OWNERS,       /* which frame names the job's own binaries define (frame_pick.h) */
	TS_SLOTS,
};
void *trace_set_slot(const struct trace_set *ts, enum ts_slot k);
/* Frees what slot k held, then holds p (NULL: empty). */
void trace_set_put_slot(struct trace_set *ts, enum ts_slot k, void *p, void (*free_fn)(void *));

#endif
