/* Merged Python + native stacks for dwarf-mode traces: each native
 * interpreter frame (_PyEval_EvalFrameDefault, or its .cold part) is
 * replaced by the Python frames it was executing, and sm_resolve runs the
 * whole dwarf pipeline on each raw stack as the decode pass reads it:
 * unwind (unwind.c) -> name native frames (symbolize.c) -> name Python
 * frames (pyframes.c) -> merge.
 *
 * Which Python frames belong to one interpreter activation (a "segment"):
 *   3.10   one frame per activation (every frame carries FR_PYF_ENTRY);
 *   3.11   the frames from the current one down to and including the next
 *          FR_PYF_ENTRY frame (is_entry);
 *   3.12+  the frames above the next FR_PYF_SHIM frame (the shim itself is
 *          not a Python function and is not shown).
 *
 * When the counts do not reconcile, nothing is guessed:
 *   exact           N native interpreter frames, N segments: interleaved.
 *   one extra       N + 1 interpreter frames, N segments (py-spy's
 *                   tolerance: sampled between entering the loop and pushing
 *                   the frame, or after popping it): the leaf-most
 *                   interpreter frame stays as its native name.
 *   native short    fewer interpreter frames than segments and the native
 *                   unwind stopped early (copy too small, no unwind data,
 *                   no interpreter frame at all): the leaf-most segments
 *                   replace the interpreter frames found, and the remaining
 *                   Python frames go at the root, above a "[lost]" frame
 *                   that stands for the native frames between them.
 *   python short    the Python walk was cut (FR_USTACK_PY_TRUNCATED or
 *                   _ERROR): segments replace interpreter frames leaf first,
 *                   every interpreter frame left over becomes "[lost]".
 *   mismatch        anything else: every Python frame at the root, then
 *                   "[lost]", then the native frames without their
 *                   interpreter frames.
 * Other libpython frames (vectorcall, PyObject_Call ...) are kept.
 *
 * Not for unwinding, symbol lookup or line numbers. */
#ifndef FLIGHTREC_STACK_MERGE_H
#define FLIGHTREC_STACK_MERGE_H

#include <stddef.h>
#include <stdint.h>
#include "frec_error.h"

#define SM_LOST "[lost]"

/* One Python frame, leaf first, as the BPF walker reported it. */
struct sm_py {
	const char *name;  /* ignored for shims */
	uint8_t flags;     /* FR_PYF_ENTRY, FR_PYF_SHIM */
};

enum sm_outcome {
	SM_NATIVE_ONLY,   /* no Python frames */
	SM_EXACT,
	SM_ONE_EXTRA,
	SM_NATIVE_SHORT,
	SM_PYTHON_SHORT,
	SM_MISMATCH,
};

/* Is name the interpreter loop (_PyEval_EvalFrameDefault[.cold...])? */
int sm_is_eval_frame(const char *name);

/* Merges native (names, leaf first; native_complete: the unwind reached
 * the outermost frame) with py (leaf first; py_cut: the walk was truncated
 * or failed).  Writes the merged frames ROOT FIRST into out (room for
 * n_native + n_py + 1 always suffices; with less, root frames are left
 * out: the leaf end is what a flame graph cannot do without) and
 * returns how many.  lost is the "[lost]" string to use (interned). */
size_t stack_merge(const char *const *native, size_t n_native, int native_complete,
		   const struct sm_py *py, size_t n_py, int py_cut, const char *lost,
		   const char **out, size_t cap, enum sm_outcome *outcome);

/* Resolution of dwarf-mode stacks during the decode pass (trace_set.c), one
 * resolver per file, made once every file's metadata is read: unwind
 * (unwind.c) -> name native frames (the symbolizer) -> name Python frames
 * (pyframes.c) -> merge.  Names are copied into `names`, a pool that
 * outlives the resolver and the symbolizer it used. */
struct symbolizer;
struct strpool;
struct trace_file;
struct uw_raw;
struct sm_resolver;
struct sm_resolver *sm_resolver_new(struct symbolizer *sym, struct strpool *names,
				    struct trace_file *f, uint32_t file_index);
void sm_resolver_free(struct sm_resolver *c);

/* One FR_REC_USTACK: r gives pid, tid, flags, n_py (at most
 * FR_MAX_PY_FRAMES), stack_len, seq and regs; py holds n_py packed struct
 * fr_py_frame (unaligned), stack stack_len bytes.  Sets *names to the
 * merged user frames, ROOT FIRST (the array is valid until the next call;
 * the strings live as long as the pool) and returns how many; -1 when
 * memory runs out.  Counts stopped unwinds and lossy merges in the file's
 * dwarf_stats. */
int64_t sm_resolve(struct sm_resolver *c, const struct uw_raw *r, const uint8_t *py,
		   const uint8_t *stack, const char *const **names);

#endif
