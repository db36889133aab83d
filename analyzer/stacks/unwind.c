/* Offline CFI unwinding with libdw over captured stacks; see unwind.h.
 *
 * The pattern is perf's (tools/perf/util/unwind-libdw.c): one Dwfl per
 * process, its files reported with dwfl_report_module and handed to libdw
 * as in-memory ELF images by the find_elf callback, dwfl_attach_state with
 * thread callbacks whose memory_read serves only the copied stack, and
 * dwfl_getthread_frames per stack with set_initial_registers taking the
 * record's registers.  Not for symbol names: dwfl_module_addrinfo per frame
 * costs ~50x the unwind itself, so frames leave as pcs and the trace's own
 * symbol tables name them (symbolize.c). */
#include "unwind.h"
#include "hmap.h"
#include "trace_set.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- images ------------------------------------------------------------- */

struct uw_load { uint64_t offset, vaddr, filesz, memsz, align; };

/* What the program headers say, once per image. */
struct uw_layout {
	struct uw_load loads[16];
	size_t n_loads;
	uint64_t low;  /* first PT_LOAD's vaddr, aligned down as libdwfl does */
	uint64_t high; /* end of the highest PT_LOAD */
};

static int elf_ok = -1;

static int uw_elf_init(void)
{
	if (elf_ok < 0)
		elf_ok = elf_version(EV_CURRENT) != EV_NONE;
	return elf_ok;
}

static int read_layout(const uint8_t *image, size_t len, struct uw_layout *lay, char *why,
		       size_t why_len)
{
	memset(lay, 0, sizeof(*lay));
	if (!uw_elf_init()) {
		snprintf(why, why_len, "libelf unusable");
		return -1;
	}
	if (len < 64 || memcmp(image, ELFMAG, SELFMAG) || image[EI_CLASS] != ELFCLASS64 ||
	    image[EI_DATA] != ELFDATA2LSB) {
		snprintf(why, why_len, "not a 64-bit little-endian ELF image");
		return -1;
	}
	Elf *elf = elf_memory((char *)(uintptr_t)image, len);
	GElf_Ehdr eh;
	size_t phnum = 0;
	if (!elf || !gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &phnum)) {
		snprintf(why, why_len, "unreadable ELF header: %s", elf_errmsg(-1));
		elf_end(elf);
		return -1;
	}
	if (eh.e_machine != EM_X86_64 || (eh.e_type != ET_DYN && eh.e_type != ET_EXEC)) {
		snprintf(why, why_len, "not an x86-64 executable or shared object (machine %u, type %u)",
			 eh.e_machine, eh.e_type);
		elf_end(elf);
		return -1;
	}
	for (size_t i = 0; i < phnum && lay->n_loads < 16; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (ph.p_vaddr + ph.p_memsz < ph.p_vaddr || ph.p_offset + ph.p_filesz < ph.p_offset)
			continue;
		struct uw_load *l = &lay->loads[lay->n_loads++];
		*l = (struct uw_load){ ph.p_offset, ph.p_vaddr, ph.p_filesz, ph.p_memsz, ph.p_align };
		if (lay->n_loads == 1) {
			uint64_t align = ph.p_align && !(ph.p_align & (ph.p_align - 1)) ? ph.p_align : 1;
			lay->low = ph.p_vaddr & ~(align - 1);
		}
		if (ph.p_vaddr + ph.p_memsz > lay->high)
			lay->high = ph.p_vaddr + ph.p_memsz;
	}
	elf_end(elf);
	if (!lay->n_loads || lay->high <= lay->low) {
		snprintf(why, why_len, "no PT_LOAD program header");
		return -1;
	}
	return 0;
}

/* The load base of a mapping of file offset pgoff at start, or -1. */
static int load_base(const struct uw_layout *lay, uint64_t start, uint64_t pgoff, uint64_t *base)
{
	for (size_t i = 0; i < lay->n_loads; i++) {
		const struct uw_load *l = &lay->loads[i];
		uint64_t first_page = l->offset & ~0xfffull;
		if (pgoff < first_page || pgoff >= l->offset + (l->filesz ? l->filesz : 1))
			continue;
		uint64_t vaddr = l->vaddr - l->offset + pgoff; /* where pgoff lives */
		*base = start - vaddr;
		return 0;
	}
	return -1;
}

/* ---- libdw callbacks ----------------------------------------------------- */

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
	/* step rules by lookup address (fast path, see fast_unwind) */
	struct hmap rule_by_pc;       /* address -> 1 + index into rules, or 0: none */
	struct uw_rule *rules;
	size_t n_rules, cap_rules;
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
};

static int get_rule(struct uw_process *p, uint64_t addr, const struct uw_rule **out);

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

/* Only the copied stack is readable: the process is gone, and file-backed
 * memory the CFI might read (read-only data) is not in the images. */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *dwfl_arg)
{
	(void)dwfl;
	struct uw_process *p = dwfl_arg;
	uint64_t sp = p->regs[7];
	if (!p->stack || p->stack_len < 8 || addr < sp || addr - sp > p->stack_len - 8) {
		p->read_failed = 1;
		return false;
	}
	memcpy(result, p->stack + (addr - sp), 8);
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
	hmap_init(&p->rule_by_pc);
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
		if (!m->image || read_layout(m->image, m->image_len, &lay, ignored, sizeof(ignored)) ||
		    load_base(&lay, m->start, m->pgoff, &base)) {
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
	free(p->rules);
	hmap_free(&p->rule_by_pc);
	free(p);
}

/* Fills r from libdw's CFI for addr; r->simple = 0 when it is not one of
 * the plain forms (or there is no CFI). */
static void make_rule(struct uw_process *p, uint64_t addr, struct uw_rule *r)
{
	memset(r, 0, sizeof(*r));
	Dwfl_Module *mod = dwfl_addrmodule(p->dwfl, addr);
	Dwarf_Addr bias;
	Dwarf_CFI *cfi = mod ? dwfl_module_eh_cfi(mod, &bias) : NULL;
	Dwarf_Frame *frame = NULL;
	if (!cfi || dwarf_cfi_addrframe(cfi, addr - bias, &frame) || !frame)
		return;
	bool signal = false;
	Dwarf_Op *ops;
	size_t nops;
	if (dwarf_frame_info(frame, NULL, NULL, &signal) != 16 || signal ||
	    dwarf_frame_cfa(frame, &ops, &nops) || nops != 1 || ops[0].atom != DW_OP_bregx ||
	    ops[0].number >= UW_NREGS)
		goto out;
	r->cfa_reg = (uint8_t)ops[0].number;
	r->cfa_off = (int64_t)ops[0].number2;
	for (int reg = 0; reg < UW_NREGS; reg++) {
		Dwarf_Op mem[3];
		if (reg == 7)
			continue; /* rsp = CFA */
		if (dwarf_frame_register(frame, reg, mem, &ops, &nops))
			goto out;
		if (nops == 0) {
			r->kind[reg] = ops ? UW_UNDEF : UW_SAME;
		} else if (nops == 1 && ops[0].atom == DW_OP_call_frame_cfa) {
			r->kind[reg] = UW_AT_CFA;
		} else if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
			   ops[1].atom == DW_OP_plus_uconst) {
			r->kind[reg] = UW_AT_CFA;
			r->off[reg] = (int64_t)ops[1].number;
		} else {
			goto out;
		}
	}
	r->simple = 1;
out:
	free(frame);
}

static int get_rule(struct uw_process *p, uint64_t addr, const struct uw_rule **out)
{
	uint64_t at;
	if (!hmap_get(&p->rule_by_pc, addr, 0, &at)) {
		if (p->n_rules == p->cap_rules) {
			size_t cap = p->cap_rules ? 2 * p->cap_rules : 256;
			struct uw_rule *grown = realloc(p->rules, cap * sizeof(*grown));
			if (!grown)
				return -1;
			p->rules = grown;
			p->cap_rules = cap;
		}
		make_rule(p, addr, &p->rules[p->n_rules]);
		at = p->rules[p->n_rules].simple ? ++p->n_rules : 0;
		if (hmap_put(&p->rule_by_pc, addr, 0, at))
			return -1;
	}
	*out = at ? &p->rules[at - 1] : NULL;
	return 0;
}

static int read_stack(const struct uw_process *p, uint64_t addr, uint64_t *v)
{
	uint64_t sp = p->regs[7];
	if (!p->stack || p->stack_len < 8 || addr < sp || addr - sp > p->stack_len - 8)
		return -1;
	memcpy(v, p->stack + (addr - sp), 8);
	return 0;
}

/* The fast path: steps with cached rules, no allocation.  Returns the
 * frame count, or 0 when a pc needs libdw's full unwinder (no rule, a
 * register the CFA needs is unknown): the caller then starts over with it.
 * A value the copy does not hold ends the walk, as it would with libdw. */
static size_t fast_unwind(struct uw_process *p, struct uw_frame *out, size_t max,
			  enum uw_end *end)
{
	uint64_t regs[UW_NREGS];
	uint32_t known = (1u << UW_NREGS) - 1;
	memcpy(regs, p->regs, sizeof(regs));
	size_t n = 0;
	out[n++] = (struct uw_frame){ regs[16], 1 };
	for (;;) {
		if (n >= max) {
			*end = UW_END_LIMIT;
			return n;
		}
		const struct uw_rule *r;
		uint64_t pc = regs[16], addr = n == 1 ? pc : pc - 1;
		if (get_rule(p, addr, &r) || !r || !(known & 1u << r->cfa_reg))
			return 0;
		if (r->kind[16] == UW_UNDEF) {
			*end = UW_END_OUTERMOST;
			return n;
		}
		uint64_t cfa = regs[r->cfa_reg] + (uint64_t)r->cfa_off, next[UW_NREGS];
		uint32_t next_known = 0;
		for (int reg = 0; reg < UW_NREGS; reg++) {
			next[reg] = regs[reg];
			if (r->kind[reg] == UW_SAME && (known & 1u << reg)) {
				next_known |= 1u << reg;
			} else if (r->kind[reg] == UW_AT_CFA) {
				if (read_stack(p, cfa + (uint64_t)r->off[reg], &next[reg])) {
					if (reg == 16) {
						*end = UW_END_STOPPED;
						return n;
					}
					continue; /* unknown from here on */
				}
				next_known |= 1u << reg;
			}
		}
		next[7] = cfa;
		next_known |= 1u << 7;
		if (!(next_known & 1u << 16))
			return 0;
		memcpy(regs, next, sizeof(regs));
		known = next_known;
		if (!regs[16]) {
			*end = UW_END_OUTERMOST;
			return n;
		}
		out[n++] = (struct uw_frame){ regs[16], 0 };
	}
}

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
	size_t fast = p->no_fast ? 0 : fast_unwind(p, out, p->max, end);
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

void uw_process_fast_path(struct uw_process *p, int on, uint64_t *fast, uint64_t *slow)
{
	p->no_fast = !on;
	if (fast)
		*fast = p->fast;
	if (slow)
		*slow = p->slow;
}

/* ---- the records of one trace file ------------------------------------------ */

struct uw_store {
	struct uw_image *images;
	size_t n_images;
	struct hmap image_by_dso;   /* dso_id -> index */
	struct uw_raw *raws;
	size_t n_raws, cap_raws;
	struct hmap raw_by_hash;    /* (hash, pid) -> index */
	struct fr_py_frame *py;
	size_t n_py, cap_py;
	uint8_t *stack;
	size_t n_stack, cap_stack;
};

struct uw_store *uw_store_new(void)
{
	struct uw_store *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	hmap_init(&s->image_by_dso);
	hmap_init(&s->raw_by_hash);
	return s;
}

void uw_store_free(struct uw_store *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_images; i++)
		if (s->images[i].owner)
			free(s->images[i].bytes);
	free(s->images);
	hmap_free(&s->image_by_dso);
	free(s->raws);
	hmap_free(&s->raw_by_hash);
	free(s->py);
	free(s->stack);
	free(s);
}

int uw_store_add_image(struct uw_store *s, uint32_t dso_id, const uint8_t *build_id,
		       size_t build_id_len, const uint8_t *image, size_t len, char *why,
		       size_t why_len)
{
	struct uw_layout lay;
	if (read_layout(image, len, &lay, why, why_len))
		return 1;
	if (build_id_len > 20)
		build_id_len = 20;
	struct uw_image img = { .dso_id = dso_id, .build_id_len = (uint8_t)build_id_len, .len = len };
	memcpy(img.build_id, build_id, build_id_len);
	/* the same file under another dso id (another mount, another pid's
	 * view): share the bytes */
	for (size_t i = 0; build_id_len && i < s->n_images; i++)
		if (s->images[i].build_id_len == build_id_len && s->images[i].len == len &&
		    !memcmp(s->images[i].build_id, build_id, build_id_len) &&
		    !memcmp(s->images[i].bytes, image, len))
			img.bytes = s->images[i].bytes;
	if (!img.bytes) {
		if (!(img.bytes = malloc(len)))
			return -1;
		memcpy(img.bytes, image, len);
		img.owner = 1;
	}
	struct uw_image *grown = realloc(s->images, (s->n_images + 1) * sizeof(*grown));
	if (!grown || hmap_put(&s->image_by_dso, dso_id, 0, s->n_images)) {
		if (grown)
			s->images = grown;
		if (img.owner)
			free(img.bytes);
		return -1;
	}
	s->images = grown;
	s->images[s->n_images++] = img; /* a replaced image stays owned here */
	return 0;
}

const struct uw_image *uw_store_image(const struct uw_store *s, uint32_t dso_id)
{
	uint64_t i;
	if (!s || !hmap_get(&s->image_by_dso, dso_id, 0, &i) || i >= s->n_images)
		return NULL;
	return &s->images[i];
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v;
	h *= 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

/* Four independent multiply lanes over 32-byte blocks: the stack copy is
 * most of a record, and this runs once per record. */
static uint64_t content_hash(uint32_t pid, uint16_t flags, uint16_t py_version,
			     const uint64_t regs[UW_NREGS], const uint8_t *py, size_t py_bytes,
			     const uint8_t *stack, size_t stack_len)
{
	const uint64_t k = 0x9e3779b97f4a7c15ull;
	uint64_t h = mix(0x243f6a8885a308d3ull, (uint64_t)pid << 32 | (uint64_t)flags << 16 | py_version);
	for (int i = 0; i < UW_NREGS; i++)
		h = mix(h, regs[i]);
	h = mix(h, py_bytes);
	for (size_t i = 0; i + 8 <= py_bytes; i += 8) {
		uint64_t v;
		memcpy(&v, py + i, 8);
		h = mix(h, v);
	}
	uint64_t lane[4] = { h, h ^ 1, h ^ 2, h ^ 3 };
	size_t i = 0;
	for (; i + 32 <= stack_len; i += 32) {
		uint64_t v[4];
		memcpy(v, stack + i, 32);
		for (int l = 0; l < 4; l++)
			lane[l] = (lane[l] ^ v[l]) * k + (lane[l] >> 31);
	}
	for (int l = 0; l < 4; l++)
		h = mix(h, lane[l]);
	h = mix(h, stack_len);
	for (; i < stack_len; i++)
		h = mix(h, stack[i]);
	return h;
}

static int same_content(const struct uw_store *s, const struct uw_raw *r, uint32_t pid,
			uint16_t flags, uint16_t py_version, const uint64_t regs[UW_NREGS],
			const uint8_t *py, uint16_t n_py, const uint8_t *stack, uint32_t stack_len)
{
	return r->pid == pid && r->flags == flags && r->py_version == py_version &&
	       r->n_py == n_py && r->stack_len == stack_len &&
	       !memcmp(r->regs, regs, sizeof(r->regs)) &&
	       (!n_py || !memcmp(s->py + r->py_at, py, (size_t)n_py * sizeof(struct fr_py_frame))) &&
	       s->stack && (!stack_len || !memcmp(s->stack + r->stack_at, stack, stack_len));
}

static int grow(void **buf, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t cap2 = *cap ? *cap : 16;
	while (cap2 < need)
		cap2 *= 2;
	void *grown = realloc(*buf, cap2 * elem);
	if (!grown)
		return -1;
	*buf = grown;
	*cap = cap2;
	return 0;
}

int64_t uw_store_add_stack(struct uw_store *s, uint32_t pid, uint32_t tid, uint16_t flags,
			   uint16_t py_version, uint64_t seq, const uint64_t regs[UW_NREGS],
			   const uint8_t *py, uint16_t n_py, const uint8_t *stack,
			   uint32_t stack_len)
{
	size_t py_bytes = (size_t)n_py * sizeof(struct fr_py_frame);
	uint64_t hash = content_hash(pid, flags, py_version, regs, py, py_bytes, stack, stack_len);
	/* probe (hash + k, pid) until the same content or a free key */
	for (uint64_t k = 0;; k++) {
		uint64_t at;
		if (!hmap_get(&s->raw_by_hash, hash + k, pid, &at))
			break;
		if (at < s->n_raws && same_content(s, &s->raws[at], pid, flags, py_version, regs, py,
						    n_py, stack, stack_len))
			return (int64_t)at;
		if (k > 64)
			break; /* hostile: stop probing, store a copy */
	}
	if (grow((void **)&s->raws, &s->cap_raws, s->n_raws + 1, sizeof(*s->raws)) ||
	    grow((void **)&s->py, &s->cap_py, s->n_py + n_py + 1, sizeof(*s->py)) ||
	    grow((void **)&s->stack, &s->cap_stack, s->n_stack + stack_len + 1, 1))
		return -1;
	struct uw_raw *r = &s->raws[s->n_raws];
	memset(r, 0, sizeof(*r));
	r->pid = pid;
	r->tid = tid;
	r->flags = flags;
	r->py_version = py_version;
	r->n_py = n_py;
	r->stack_len = stack_len;
	r->seq = seq;
	r->hash = hash;
	memcpy(r->regs, regs, sizeof(r->regs));
	r->py_at = s->n_py;
	if (py_bytes)
		memcpy(s->py + s->n_py, py, py_bytes);
	s->n_py += n_py;
	r->stack_at = s->n_stack;
	if (stack_len)
		memcpy(s->stack + s->n_stack, stack, stack_len);
	s->n_stack += stack_len;
	for (uint64_t k = 0; k <= 65; k++) {
		int created;
		uint64_t *slot = hmap_slot(&s->raw_by_hash, hash + k, pid, &created);
		if (!slot)
			return -1;
		if (created) {
			*slot = s->n_raws;
			break;
		}
	}
	return (int64_t)s->n_raws++;
}

size_t uw_store_count(const struct uw_store *s)
{
	return s ? s->n_raws : 0;
}

struct uw_raw *uw_store_raw(struct uw_store *s, size_t i)
{
	return s && i < s->n_raws ? &s->raws[i] : NULL;
}

struct fr_py_frame uw_store_py(const struct uw_store *s, const struct uw_raw *r, size_t k)
{
	struct fr_py_frame f = { 0 };
	if (k < r->n_py)
		f = s->py[r->py_at + k];
	return f;
}

const uint8_t *uw_store_stack(const struct uw_store *s, const struct uw_raw *r)
{
	return s->stack ? s->stack + r->stack_at : NULL;
}

void uw_store_drop_stacks(struct uw_store *s)
{
	free(s->stack);
	s->stack = NULL;
	s->n_stack = s->cap_stack = 0;
}

size_t uw_store_stack_bytes(const struct uw_store *s)
{
	return s ? s->cap_stack : 0;
}

/* ---- every process of one trace file ------------------------------------------ */

struct uw_trace {
	const struct trace_file *f;
	struct uw_store *s;
	struct hmap proc_by_pid;      /* pid -> 1 + index, 0 = could not be set up */
	struct uw_process **procs;
	size_t n_procs;
};

struct uw_trace *uw_trace_new(const struct trace_file *f, struct uw_store *s)
{
	struct uw_trace *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->f = f;
	t->s = s;
	hmap_init(&t->proc_by_pid);
	return t;
}

void uw_trace_free(struct uw_trace *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n_procs; i++)
		uw_process_free(t->procs[i]);
	free(t->procs);
	hmap_free(&t->proc_by_pid);
	free(t);
}

static int mapping_seq_order(const void *a, const void *b)
{
	const struct ts_mapping *x = *(const struct ts_mapping *const *)a;
	const struct ts_mapping *y = *(const struct ts_mapping *const *)b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static struct uw_process *process_of(struct uw_trace *t, uint32_t pid)
{
	uint64_t at;
	if (hmap_get(&t->proc_by_pid, pid, 0, &at))
		return at ? t->procs[at - 1] : NULL;
	/* the pid's mappings that have unwind data, in record order */
	const struct ts_mapping **maps = malloc((t->f->n_maps ? t->f->n_maps : 1) * sizeof(*maps));
	struct uw_module *mods = malloc((t->f->n_maps ? t->f->n_maps : 1) * sizeof(*mods));
	struct uw_process **grown = realloc(t->procs, (t->n_procs + 1) * sizeof(*grown));
	if (grown)
		t->procs = grown;
	struct uw_process *p = NULL;
	if (maps && mods && grown) {
		size_t n = 0;
		for (size_t i = 0; i < t->f->n_maps; i++)
			if (t->f->maps[i].pid == pid && t->f->maps[i].dso_id &&
			    uw_store_image(t->s, t->f->maps[i].dso_id))
				maps[n++] = &t->f->maps[i];
		qsort(maps, n, sizeof(*maps), mapping_seq_order);
		for (size_t i = 0; i < n; i++) {
			const struct uw_image *img = uw_store_image(t->s, maps[i]->dso_id);
			mods[i] = (struct uw_module){ maps[i]->start, maps[i]->end, maps[i]->pgoff,
						      img->bytes, img->len, maps[i]->path };
		}
		char why[160];
		p = uw_process_new(pid, mods, n, NULL, why, sizeof(why));
	}
	free(maps);
	free(mods);
	if (p && grown)
		t->procs[t->n_procs++] = p;
	hmap_put(&t->proc_by_pid, pid, 0, p ? t->n_procs : 0);
	return p;
}

size_t uw_trace_unwind_raw(struct uw_trace *t, const struct uw_raw *r, const uint8_t *stack,
			   struct uw_frame *out, size_t max, enum uw_end *end)
{
	*end = UW_END_STOPPED;
	if (!r || !max)
		return 0;
	struct uw_process *p = process_of(t, r->pid);
	if (!p) {
		out[0] = (struct uw_frame){ r->regs[16], 1 };
		return 1;
	}
	return uw_unwind(p, r->tid, r->regs, stack, stack ? r->stack_len : 0, out, max, end);
}

size_t uw_trace_unwind(struct uw_trace *t, size_t raw_index, struct uw_frame *out,
		       size_t max, enum uw_end *end)
{
	struct uw_raw *r = uw_store_raw(t->s, raw_index);
	*end = UW_END_STOPPED;
	if (!r)
		return 0;
	return uw_trace_unwind_raw(t, r, uw_store_stack(t->s, r), out, max, end);
}
