/* One process's unwinder: a Dwfl over its mapped files' unwind images, the
 * libdw callbacks that serve the copied stack and the record's registers,
 * and uw_unwind, which tries the cached-rule fast path (unwind_fast.c) and
 * falls back to libdw's own unwinder.
 *
 * The pattern is perf's (tools/perf/util/unwind-libdw.c): one Dwfl per
 * process, its files reported with dwfl_report_module and handed to libdw
 * as in-memory ELF images by the find_elf callback, dwfl_attach_state with
 * thread callbacks whose memory_read serves only the copied stack, and
 * dwfl_getthread_frames per stack with set_initial_registers taking the
 * record's registers.  Not for symbol names: dwfl_module_addrinfo per frame
 * costs ~50x the unwind itself, so frames leave as pcs and the trace's own
 * symbol tables name them (symbolize.c).  Not for keeping images or stacks
 * (unwind_store.c) nor for choosing a file's processes (unwind_trace.c). */
#include "unwind_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- libdw callbacks ----------------------------------------------------- */

static int find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		    char **file_name, Elf **elfp)
{
	(void)mod, (void)modname, (void)base;
	const struct uw_modinfo *mi = *userdata;
	*file_name = NULL;
	*elfp = mi ? elf_memory((char *)(uintptr_t)mi->image, mi->len) : NULL;
	return -1; /* no fd: libdw owns *elfp and ends it with the Dwfl */
}

static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			  Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name;
	(void)debuglink_file, (void)debuglink_crc;
	*debuginfo_file_name = NULL;
	return -1; /* only what the trace carries */
}

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = find_elf,
	.find_debuginfo = find_debuginfo,
};

static pid_t next_thread(Dwfl *dwfl, void *dwfl_arg, void **thread_argp)
{
	(void)dwfl;
	struct uw_process *p = dwfl_arg;
	if (*thread_argp)
		return 0;
	*thread_argp = p;
	return (pid_t)(p->tid ? p->tid : 1);
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *dwfl_arg, void **thread_argp)
{
	(void)dwfl, (void)tid;
	*thread_argp = dwfl_arg;
	return true;
}

/* Only the copied stack is readable (see uw_read_copied_stack); a refusal
 * is remembered for uw_unwind, which reads how libdw ended by it. */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *dwfl_arg)
{
	(void)dwfl;
	struct uw_process *p = dwfl_arg;
	uint64_t word;
	if (uw_read_copied_stack(p, addr, &word)) {
		p->read_failed = 1;
		return false;
	}
	*result = word;
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	const struct uw_process *p = thread_arg;
	Dwarf_Word regs[UW_NREGS];
	for (int i = 0; i < UW_NREGS; i++)
		regs[i] = p->regs[i];
	dwfl_thread_state_register_pc(thread, regs[16]);
	return dwfl_thread_state_registers(thread, 0, UW_NREGS, regs);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct uw_process *p = arg;
	Dwarf_Addr pc;
	bool activation = false;
	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	/* no progress check: recursion repeats pcs legitimately; max bounds
	 * a walk that loops on garbage */
	p->out[p->n].pc = pc;
	p->out[p->n].activation = activation;
	return ++p->n < p->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/* ---- one process ---------------------------------------------------------- */

static const unsigned char bare_x86_64_ehdr[64] = {
	0x7f, 'E', 'L', 'F', ELFCLASS64, ELFDATA2LSB, EV_CURRENT, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	ET_CORE, 0, EM_X86_64, 0, EV_CURRENT, 0, 0, 0,
	[52] = 64, 0, 56, 0, 0, 0, 64, 0,
};

struct uw_pending { uint64_t low, high; const struct uw_module *m; };

static int pending_order(const void *a, const void *b)
{
	const struct uw_pending *x = a, *y = b;
	return x->low < y->low ? -1 : x->low > y->low;
}

struct uw_process *uw_process_new(uint32_t pid, const struct uw_module *mods, size_t n,
				  size_t *skipped, char *why, size_t why_len)
{
	size_t skip = 0;
	struct uw_process *p = calloc(1, sizeof(*p));
	struct uw_pending *pend = calloc(n ? n : 1, sizeof(*pend));
	if (!p || !pend || !uw_elf_init()) {
		snprintf(why, why_len, "out of memory");
		goto fail;
	}
	p->pid = pid;
	uw_rule_cache_init(&p->cache);
	p->mods = calloc(n ? n : 1, sizeof(*p->mods));
	p->machine = elf_memory((char *)(uintptr_t)bare_x86_64_ehdr, sizeof(bare_x86_64_ehdr));
	p->dwfl = dwfl_begin(&dwfl_callbacks);
	if (!p->mods || !p->machine || !p->dwfl) {
		snprintf(why, why_len, "libdw: %s", dwfl_errmsg(-1));
		goto fail;
	}
	/* Each mapping gives its image's load base and full range; mappings of
	 * one image at one base are one module.  Later mappings win overlaps
	 * (the same rule as the symbolizer's). */
	size_t n_pend = 0;
	for (size_t i = n; i-- > 0;) {
		const struct uw_module *m = &mods[i];
		struct uw_layout lay;
		char ignored[128];
		uint64_t base;
		if (!m->image || uw_read_layout(m->image, m->image_len, &lay, ignored, sizeof(ignored)) ||
		    uw_load_base(&lay, m->start, m->pgoff, &base)) {
			skip++;
			continue;
		}
		uint64_t low = base + lay.low, high = base + lay.high;
		int dup = 0, overlap = 0;
		for (size_t k = 0; k < n_pend; k++) {
			if (pend[k].low == low && pend[k].high == high &&
			    pend[k].m->image == m->image)
				dup = 1;
			else if (low < pend[k].high && pend[k].low < high)
				overlap = 1;
		}
		if (dup)
			continue;
		if (overlap || high <= low) {
			skip++;
			continue;
		}
		pend[n_pend++] = (struct uw_pending){ low, high, m };
	}
	qsort(pend, n_pend, sizeof(*pend), pending_order);
	dwfl_report_begin(p->dwfl);
	for (size_t k = 0; k < n_pend; k++) {
		const struct uw_module *m = pend[k].m;
		char name[64];
		if (!m->name)
			snprintf(name, sizeof(name), "module-%zu", k);
		Dwfl_Module *dm = dwfl_report_module(p->dwfl, m->name ? m->name : name,
						     pend[k].low, pend[k].high);
		void **userdata = NULL;
		if (!dm || !dwfl_module_info(dm, &userdata, NULL, NULL, NULL, NULL, NULL, NULL) ||
		    !userdata) {
			skip++;
			continue;
		}
		p->mods[p->n_mods] = (struct uw_modinfo){ m->image, m->image_len };
		*userdata = &p->mods[p->n_mods++];
	}
	if (dwfl_report_end(p->dwfl, NULL, NULL)) {
		snprintf(why, why_len, "libdw: %s", dwfl_errmsg(-1));
		goto fail;
	}
	if (!dwfl_attach_state(p->dwfl, p->machine, (pid_t)(pid ? pid : 1), &thread_callbacks, p)) {
		snprintf(why, why_len, "libdw attach: %s", dwfl_errmsg(-1));
		goto fail;
	}
	free(pend);
	if (skipped)
		*skipped = skip;
	return p;
fail:
	free(pend);
	uw_process_free(p);
	return NULL;
}

void uw_process_free(struct uw_process *p)
{
	if (!p)
		return;
	if (p->dwfl)
		dwfl_end(p->dwfl);
	if (p->machine)
		elf_end(p->machine);
	free(p->mods);
	free(p->deps);
	uw_rule_cache_free(&p->cache);
	free(p);
}

/* ---- one stack ------------------------------------------------------------ */

/* The fast path first; when it gives up on any pc, libdw walks the whole
 * stack again from the record's registers. */
size_t uw_unwind(struct uw_process *p, uint32_t tid, const uint64_t regs[UW_NREGS],
		 const uint8_t *stack, size_t stack_len, struct uw_frame *out, size_t max,
		 enum uw_end *end)
{
	*end = UW_END_STOPPED;
	if (!max)
		return 0;
	p->tid = tid ? tid : (p->pid ? p->pid : 1);
	p->regs = regs;
	p->stack = stack;
	p->stack_len = stack_len;
	p->out = out;
	p->max = max < UW_MAX_FRAMES ? max : UW_MAX_FRAMES;
	p->n = 0;
	p->read_failed = 0;
	size_t fast = p->no_fast ? 0 : uw_fast_unwind(p, out, p->max, end);
	if (fast) {
		p->fast++;
		p->regs = NULL;
		p->stack = NULL;
		return fast;
	}
	p->slow++;
	*end = UW_END_STOPPED;
	int rc = dwfl_getthread_frames(p->dwfl, (pid_t)p->tid, frame_cb, p);
	/* libdw also ends "at the outermost frame" when the return address
	 * could not be read: only an unwind that read nothing outside the copy
	 * really reached it */
	if (rc == 0 && !p->read_failed)
		*end = UW_END_OUTERMOST;
	else if (p->n >= p->max)
		*end = UW_END_LIMIT;
	if (!p->n) { /* not even the pc: report it, so the stack is not empty */
		out[0] = (struct uw_frame){ regs[16], 1 };
		p->n = 1;
	}
	p->regs = NULL;
	p->stack = NULL;
	return p->n;
}

size_t uw_unwind_traced(struct uw_process *p, uint32_t tid, const uint64_t regs[UW_NREGS],
			const uint8_t *stack, size_t stack_len, struct uw_use *use,
			struct uw_frame *out, size_t max, enum uw_end *end)
{
	memset(use->read_map, 0, stack_len);
	p->read_map = use->read_map;
	p->ran_off_copy = 0;
	p->end_by_cfi = 0;
	if (!p->deps) /* without it the fast path marks every byte it reads */
		p->deps = malloc(UW_DEPS_MAX * sizeof(*p->deps));
	uint64_t slow = p->slow;
	size_t n = uw_unwind(p, tid, regs, stack, stack_len, out, max, end);
	int fast = p->slow == slow;
	/* libdw is handed every register: the walk may have used any */
	use->regs_used = !fast || !p->deps ? (1u << UW_NREGS) - 1 : p->regs_used;
	use->complete = *end == UW_END_OUTERMOST ||
			(fast && *end == UW_END_STOPPED && p->ran_off_copy);
	use->end_by_cfi = fast && *end == UW_END_OUTERMOST && p->end_by_cfi;
	use->ran_off = *end == UW_END_STOPPED && (fast ? p->ran_off_copy : p->read_failed);
	p->read_map = NULL;
	return n;
}
