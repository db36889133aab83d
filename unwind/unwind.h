/* Offline unwinding of dwarf-mode stacks (FR_REC_USTACK): the user
 * registers and the copied top of the user stack, unwound with libdw's CFI
 * unwinder against the files' unwind tables (FR_REC_UNWIND: reduced ELF
 * images holding .eh_frame_hdr, .eh_frame, .debug_frame), never the node's
 * files.  Out: the frame pcs, leaf first.
 *
 * Three layers: uw_process (one Dwfl for one process's mapped files, reused
 * for every stack of that process, with a per-pc cache of step rules in
 * front of it: see uw_process_fast_path); uw_store (the
 * records of one trace file: images by dso_id, and optionally raw stacks
 * deduplicated by content; the decode pass keeps none and unwinds each
 * record as it reads it, with the analyzer's uw_trace_unwind_raw).  The
 * analyzer's uw_trace (a uw_process per pid of a trace file) is in
 * analyzer/stacks/unwind_trace.h.
 *
 * Not for symbol names (symbolize.c), Python frames (pyframes.c) nor the
 * merge of both (stack_merge.c).  Images and stacks come from strangers'
 * files: a bad image is refused with a reason, a bad stack unwinds as far
 * as its bytes allow, and memory reads outside the copied stack fail. */
#ifndef FLIGHTREC_UNWIND_H
#define FLIGHTREC_UNWIND_H

#include <stddef.h>
#include <stdint.h>

#include "events.h"

#define UW_NREGS FR_USTACK_REGS /* rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip */
#define UW_MAX_FRAMES 256

struct uw_frame {
	uint64_t pc;
	int activation; /* pc is where the thread was, not a return address
			   (the leaf, or a frame interrupted by a signal):
			   symbolize pc itself rather than pc - 1 */
};

/* How an unwind ended. */
enum uw_end {
	UW_END_OUTERMOST = 0, /* the CFI says this is the outermost frame */
	UW_END_STOPPED = 1,   /* no unwind data or stack bytes for the next frame */
	UW_END_LIMIT = 2,     /* UW_MAX_FRAMES (or the caller's room) reached */
};

/* ---- one process ---------------------------------------------------------- */

/* One mapping of a file whose unwind data is known. */
struct uw_module {
	uint64_t start, end, pgoff; /* as in /proc/pid/maps */
	const uint8_t *image;       /* ELF image: reduced or the whole file; kept
				       by the caller until uw_process_free */
	size_t image_len;
	const char *name;           /* for libdw's messages; may be NULL */
};

struct uw_process;

/* A Dwfl for pid's modules.  Mappings of one image at one load base make
 * one module; mappings whose image is not ELF, or which overlap a module
 * already taken, are skipped (*skipped counts them, may be NULL).  NULL
 * with why filled when libdw cannot be set up. */
struct uw_process *uw_process_new(uint32_t pid, const struct uw_module *mods, size_t n,
				  size_t *skipped, char *why, size_t why_len);
void uw_process_free(struct uw_process *p);

/* Unwinds one stack: regs as the record holds them, stack = the bytes
 * copied from regs[7] (rsp) upward.  Fills at most max frames, leaf first;
 * returns how many and sets *end. */
size_t uw_unwind(struct uw_process *p, uint32_t tid, const uint64_t regs[UW_NREGS],
		 const uint8_t *stack, size_t stack_len, struct uw_frame *out, size_t max,
		 enum uw_end *end);

/* What an unwind's frames depend on (uw_unwind_traced). */
struct uw_use {
	uint8_t *read_map;  /* in: stack_len bytes, not NULL even for 0; out:
			       1 for each byte of the copy the frames depend
			       on, 0 elsewhere */
	uint32_t regs_used; /* bit r: the frames depend on register r's value */
	int complete;       /* the frames depend on nothing else: the walk
			       reached the outermost frame, or the fast path
			       stopped at a return address past the copy's end
			       (a shorter copy stops there too) */
	int end_by_cfi;     /* the walk ended where the unwind tables say the
			       return address is undefined (_start, a
			       thread's first frame), not at a zero read from
			       the copy (which any stale word can be) */
	int ran_off;        /* the walk stopped for a byte past the copy's end */
};

/* uw_unwind, telling what the result depends on.  When use->complete, the
 * same unwind of a copy whose other bytes and registers are changed (made
 * zero, or cut off after the last byte used) gives the same frames and end
 * (the recorder's sparse copies, FR_USTACK_SPARSE). */
size_t uw_unwind_traced(struct uw_process *p, uint32_t tid, const uint64_t regs[UW_NREGS],
			const uint8_t *stack, size_t stack_len, struct uw_use *use,
			struct uw_frame *out, size_t max, enum uw_end *end);

/* Unwinds take a fast path when every frame's CFI is a plain rule (CFA =
 * register + offset, registers saved at CFA + offset): rules are cached by
 * pc, so a stack costs a few lookups and loads per frame.  Anything else
 * (no CFI, CFA expressions, signal frames) is unwound by libdw.  For tests:
 * on = 0 forces libdw; *fast / *slow (may be NULL) count unwinds so far. */
void uw_process_fast_path(struct uw_process *p, int on, uint64_t *fast, uint64_t *slow);

/* ---- the records of one trace file ------------------------------------------ */

/* One distinct FR_REC_USTACK content. */
struct uw_raw {
	uint32_t pid;
	uint32_t tid;
	uint16_t flags;        /* enum fr_ustack_flags */
	uint16_t py_version;
	uint16_t n_py;
	uint32_t stack_len;
	uint64_t seq;          /* file order of the first record with this content */
	uint64_t hash;
	uint64_t regs[UW_NREGS];
	size_t py_at;          /* first of n_py frames: uw_store_py() */
	size_t stack_at;       /* uw_store_stack() */
	/* filled by stack_merge.c when resolved */
	size_t names_at;
	uint32_t n_names;
	int resolved;
};

struct uw_image {
	uint32_t dso_id;
	uint8_t build_id_len;
	uint8_t build_id[20];
	uint8_t *bytes;        /* shared between dso ids with the same build id */
	size_t len;
	int owner;             /* bytes are freed with this entry */
};

struct uw_store;

struct uw_store *uw_store_new(void);
void uw_store_free(struct uw_store *s);

/* FR_REC_UNWIND: keeps a copy of the image.  Returns 0, -1 when memory runs
 * out, or 1 with why filled when the image is refused (not a 64-bit x86-64
 * ELF with sane program headers).  A later image of the same dso_id
 * replaces the earlier one. */
int uw_store_add_image(struct uw_store *s, uint32_t dso_id, const uint8_t *build_id,
		       size_t build_id_len, const uint8_t *image, size_t len, char *why,
		       size_t why_len);
const struct uw_image *uw_store_image(const struct uw_store *s, uint32_t dso_id);

/* FR_REC_USTACK (lengths checked by the caller; py holds n_py packed
 * struct fr_py_frame, unaligned).  Identical content (pid, tid-independent
 * regs, Python frames, stack bytes) shares one raw entry: its index is
 * returned, or -1 when memory runs out. */
int64_t uw_store_add_stack(struct uw_store *s, uint32_t pid, uint32_t tid, uint16_t flags,
			   uint16_t py_version, uint64_t seq, const uint64_t regs[UW_NREGS],
			   const uint8_t *py, uint16_t n_py, const uint8_t *stack,
			   uint32_t stack_len);

size_t uw_store_count(const struct uw_store *s);
struct uw_raw *uw_store_raw(struct uw_store *s, size_t i);
/* Frame k of raw r's Python frames (aligned copy). */
struct fr_py_frame uw_store_py(const struct uw_store *s, const struct uw_raw *r, size_t k);
/* The copied stack of r; NULL after uw_store_drop_stacks. */
const uint8_t *uw_store_stack(const struct uw_store *s, const struct uw_raw *r);
/* Frees the stack copies (after every raw stack is resolved). */
void uw_store_drop_stacks(struct uw_store *s);
/* Bytes held for stack copies (for info/benchmarks). */
size_t uw_store_stack_bytes(const struct uw_store *s);

#endif
