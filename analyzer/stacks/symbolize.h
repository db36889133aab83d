/* The symbolize stage: (file, pid, ip) -> frame name, from the mappings and
 * symbol tables carried in the trace (the node's files are never read).
 * Not for unwinding (fp stacks arrive as ip lists; dwarf-mode stacks arrive
 * unwound and merged with their Python frames by stack_merge.c, and
 * symbolize_stack copies their names) nor for line info.
 *
 * Names follow the flamegraph conventions:
 *   user ip with a symbol       "foo::bar()"  (C++ demangled)
 *   user ip without a symbol    "libfoo.so+0x1a2b"  (mapping basename, FILE offset)
 *   user ip outside any mapping "[unknown]"
 *   kernel ip                   "schedule_[k]", "[unknown]_[k]" */
#ifndef FLIGHTREC_SYMBOLIZE_H
#define FLIGHTREC_SYMBOLIZE_H

#include <stddef.h> /* frec_error.h needs size_t */
#include <stdint.h>
#include "frec_error.h"

/* Addresses at or above this are kernel addresses on x86-64. */
#define SYM_KERNEL_MIN 0xffff800000000000ull

struct trace_set;
struct symbolizer;

/* Indexes the mappings of every file of ts (after trace_set_run). */
struct symbolizer *symbolizer_new(struct trace_set *ts, struct frec_error *err);
void symbolizer_free(struct symbolizer *s);
/* symbolizer_free for a trace set slot (trace_set_put_slot). */
void symbolizer_free_slot(void *p);
/* The symbolizer of the set, built on first use after trace_set_run and
 * freed with the set. */
struct symbolizer *trace_set_symbolizer(struct trace_set *ts, struct frec_error *err);

/* The frame name, interned: valid until the symbolizer is freed.  NULL only
 * when memory runs out.  A symbol's shown name (demangled, suffixed) is made
 * once and reused; the cost per ip is two binary searches. */
const char *symbolize_ip(struct symbolizer *s, uint32_t file_index, uint32_t pid,
			 uint64_t ip);

/* Where a user ip lies, so a reader can open the code: its mapping's
 * path, the ip's file offset in it, and (*has_sym) the file offset where
 * its symbol starts.  0 when no mapping holds it (or it is a kernel ip). */
int symbolize_ip_where(struct symbolizer *s, uint32_t file_index, uint32_t pid, uint64_t ip,
		       const char **path, uint64_t *file_off, int *has_sym, uint64_t *sym_off);

/* Names of one stack of file f into frames (room for n_kernel + n_user),
 * root first: user frames outermost first, then kernel frames.  Every frame
 * but the innermost holds a return address, which points after the call and
 * may already be in the next function, so those look up ip - 1, as perf
 * does.  A NULL entry means memory ran out. */
struct trace_file;
struct ts_stack;
void symbolize_stack(struct symbolizer *s, const struct trace_file *f,
		     uint32_t file_index, const struct ts_stack *st, const char **frames);

/* The pooled copy of a name the caller makes up ("[no stack]"), so callers
 * can mix it with symbolized frames. */
const char *symbolizer_intern(struct symbolizer *s, const char *name);

/* How a stack id resolved (symbolize_frames). */
enum stack_found { STACK_FRAMES, STACK_NONE /* id 0 or no frames */,
		   STACK_MISSING /* an id the file does not define */ };

/* The frames of stack_id of file f, root first, as every flame graph and
 * table names them, into *frames (grown as needed, with room for one more
 * frame the caller may add as the leaf): the symbolized frames, or the one
 * frame "[no stack]" / "[missing stack]".  Returns the number of frames, or
 * SIZE_MAX when memory runs out; *found (may be NULL) says which. */
size_t symbolize_frames(struct symbolizer *s, const struct trace_file *f, uint32_t file_index,
			uint32_t stack_id, const char ***frames, size_t *cap,
			enum stack_found *found);

/* Where each frame of symbolize_frames is, for the formats that keep
 * addresses (pprof): the same names in the same order, with the address
 * looked up (ip, or ip - 1 for a return address) and the mapping that
 * holds it.  map is NULL for kernel frames, frames outside any mapping,
 * dwarf-mode user frames (names, no ips: ip 0) and the made-up frames. */
struct ts_mapping;
struct sym_loc {
	const char *name;
	uint64_t ip;
	const struct ts_mapping *map;
	uint32_t map_index;  /* into the file's maps when map is set */
	int kernel;
};
size_t symbolize_locs(struct symbolizer *s, const struct trace_file *f, uint32_t file_index,
		      uint32_t stack_id, struct sym_loc **locs, size_t *cap);

#endif
