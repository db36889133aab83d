/* What the parts of the unwinder share, and nothing the rest of the
 * analyzer may use (that is unwind.h).  The parts, one job each:
 *
 *   unwind_image.c  what an unwind image's program headers say: whether it
 *                   is usable and where a mapping puts it
 *   unwind.c        one process: its Dwfl, the libdw callbacks over the
 *                   copied stack, and uw_unwind (fast path, else libdw)
 *   unwind_fast.c   the fast path: step rules cached by pc, walked without
 *                   libdw
 *   unwind_store.c  the records of one trace file: images, raw stacks
 *   (the analyzer's analyzer/stacks/unwind_trace.c makes a process per pid
 *   of a trace file on first use, over unwind.h alone)
 *
 * struct uw_process is here because unwind.c (libdw) and unwind_fast.c
 * (the cached rules) both read the stack being unwound. */
#ifndef FLIGHTREC_UNWIND_PRIVATE_H
#define FLIGHTREC_UNWIND_PRIVATE_H

#include "unwind.h"
#include "hmap.h"

#include <elfutils/libdwfl.h>
#include <string.h>

/* ---- images (unwind_image.c) ----------------------------------------------- */

struct uw_load { uint64_t offset, vaddr, filesz, memsz, align; };

/* What the program headers say, once per image. */
struct uw_layout {
	struct uw_load loads[16];
	size_t n_loads;
	uint64_t low;  /* first PT_LOAD's vaddr, aligned down as libdwfl does */
	uint64_t high; /* end of the highest PT_LOAD */
};

/* elf_version once; 0 when libelf is unusable. */
int uw_elf_init(void);

/* Fills lay from image's program headers; -1 with why filled when the image
 * is not a 64-bit x86-64 ELF executable or shared object with a PT_LOAD. */
int uw_read_layout(const uint8_t *image, size_t len, struct uw_layout *lay, char *why,
		   size_t why_len);

/* The load base of a mapping of file offset pgoff at start, or -1. */
int uw_load_base(const struct uw_layout *lay, uint64_t start, uint64_t pgoff, uint64_t *base);

/* ---- one process (unwind.c, unwind_fast.c) ------------------------------------ */

/* How to step out of one pc, reduced from libdw's CFI (dwarf_cfi_addrframe)
 * to the forms compilers emit for ordinary code: CFA = register + offset,
 * each register the same, undefined, or saved at CFA + offset. */
enum { UW_SAME, UW_UNDEF, UW_AT_CFA };
struct uw_rule {
	uint8_t simple;       /* 0: an expression, a signal frame...: libdw walks */
	uint8_t cfa_reg;
	uint8_t kind[UW_NREGS];
	int64_t cfa_off;
	int64_t off[UW_NREGS];
};

/* Step rules by lookup address, owned by unwind_fast.c. */
struct uw_rule_cache {
	struct hmap rule_by_pc;       /* address -> 1 + index into rules, or 0: none */
	struct uw_rule *rules;
	size_t n_rules, cap_rules;
};

struct uw_modinfo {
	const uint8_t *image;
	size_t len;
};

struct uw_process {
	Dwfl *dwfl;
	Elf *machine;          /* a bare x86-64 ELF header: tells libdw the ABI */
	uint32_t pid;
	struct uw_modinfo *mods;
	size_t n_mods;
	struct uw_rule_cache cache;   /* the fast path's, see uw_fast_unwind */
	uint64_t fast, slow;          /* unwinds done each way (for tests) */
	int no_fast;
	/* the stack being unwound */
	uint32_t tid;
	const uint64_t *regs;
	const uint8_t *stack;
	size_t stack_len;
	struct uw_frame *out;
	size_t max, n;
	int read_failed;       /* memory_read refused an address */
	/* uw_unwind_traced: what the unwind depended on, else NULL */
	uint8_t *read_map;     /* one byte per byte of the copy, set when used */
	uint32_t regs_used;    /* registers of the record whose value was used */
	struct uw_dep *deps;   /* UW_DEPS_MAX, the fast path's (unwind_fast.c) */
	int ran_off_copy;      /* the fast path stopped at a return address
				  past the copy's end */
	int end_by_cfi;        /* the fast path ended where the CFI leaves
				  the return address undefined */
};

/* The 8 bytes at addr in the copied stack, or -1 when the copy does not
 * hold them: the process is gone, and file-backed memory the CFI might read
 * (read-only data) is not in the images.  Inline: both unwinders call it
 * for every saved register. */
static inline int uw_read_copied_stack(const struct uw_process *p, uint64_t addr, uint64_t *v)
{
	uint64_t sp = p->regs[7];
	if (!p->stack || p->stack_len < 8 || addr < sp || addr - sp > p->stack_len - 8)
		return -1;
	memcpy(v, p->stack + (addr - sp), 8);
	if (p->read_map)
		memset(p->read_map + (addr - sp), 1, 8);
	return 0;
}

/* What a value of the fast path's walk was made from (uw_unwind_traced):
 * a register of the record, or a stack slot loaded at a CFA that was
 * itself computed from a value. */
struct uw_dep {
	int32_t parent; /* the value this one was computed from, or -1 */
	int32_t slot;   /* loaded from the copy at this offset, or -1 */
	int8_t reg;     /* a register of the record, or -1 */
	uint8_t marked;
};

/* What uw_fast_unwind may record while tracing: each register of the
 * record, then per step the CFA and each register loaded. */
#define UW_DEPS_MAX (UW_NREGS + UW_MAX_FRAMES * (UW_NREGS + 1))

void uw_rule_cache_init(struct uw_rule_cache *c);
void uw_rule_cache_free(struct uw_rule_cache *c);

/* The fast path over p's current stack: steps with cached rules, no
 * allocation.  Returns the frame count, or 0 when a pc needs libdw's full
 * unwinder (no rule, a register the CFA needs is unknown): the caller then
 * starts over with it.  A value the copy does not hold ends the walk, as it
 * would with libdw. */
size_t uw_fast_unwind(struct uw_process *p, struct uw_frame *out, size_t max,
		      enum uw_end *end);

#endif
