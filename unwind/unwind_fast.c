/* The unwinder's fast path: how to step out of each pc, asked of libdw's
 * CFI once and cached by pc as a plain rule (CFA = register + offset,
 * registers saved at CFA + offset), then walked with a few lookups and
 * loads per frame.  Most stacks of a trace repeat the same pcs, and libdw's
 * own unwinder redoes the CFI lookup and allocates per frame.
 *
 * Not for anything else: a pc whose CFI is not a plain rule (an
 * expression, a signal frame, none) makes the whole stack go to libdw
 * (uw_unwind in unwind.c decides): a stack is walked one way or the
 * other, never half of each. */
#include "unwind_private.h"

#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

void uw_rule_cache_init(struct uw_rule_cache *c)
{
	hmap_init(&c->rule_by_pc);
}

void uw_rule_cache_free(struct uw_rule_cache *c)
{
	free(c->rules);
	hmap_free(&c->rule_by_pc);
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

/* The cached rule for addr, made on first use; *out = NULL when libdw must
 * walk.  -1 when memory runs out. */
static int get_rule(struct uw_process *p, uint64_t addr, const struct uw_rule **out)
{
	struct uw_rule_cache *c = &p->cache;
	uint64_t at;
	if (!hmap_get(&c->rule_by_pc, addr, 0, &at)) {
		if (c->n_rules == c->cap_rules) {
			size_t cap = c->cap_rules ? 2 * c->cap_rules : 256;
			struct uw_rule *grown = realloc(c->rules, cap * sizeof(*grown));
			if (!grown)
				return -1;
			c->rules = grown;
			c->cap_rules = cap;
		}
		make_rule(p, addr, &c->rules[c->n_rules]);
		at = c->rules[c->n_rules].simple ? ++c->n_rules : 0;
		if (hmap_put(&c->rule_by_pc, addr, 0, at))
			return -1;
	}
	*out = at ? &c->rules[at - 1] : NULL;
	return 0;
}

/* uw_unwind_traced's bookkeeping (struct uw_dep): only values the walk
 * uses (each step's CFA base register and each frame's pc) are marked,
 * with what they were made from: a saved register nobody uses costs
 * nothing. */
static void mark(struct uw_process *p, uint8_t *map, int32_t i)
{
	while (i >= 0 && !p->deps[i].marked) {
		struct uw_dep *d = &p->deps[i];
		d->marked = 1;
		if (d->slot >= 0)
			memset(map + d->slot, 1, 8);
		if (d->reg >= 0)
			p->regs_used |= 1u << d->reg;
		i = d->parent;
	}
}

static int32_t new_dep(struct uw_process *p, int32_t *n, int32_t parent, int32_t slot, int reg)
{
	p->deps[*n] = (struct uw_dep){ parent, slot, (int8_t)reg, 0 };
	return (*n)++;
}

/* Frame 0 is the pc itself (an activation), each step one caller; the
 * registers not yet lost are tracked in known. */
size_t uw_fast_unwind(struct uw_process *p, struct uw_frame *out, size_t max,
		      enum uw_end *end)
{
	uint64_t regs[UW_NREGS];
	uint32_t known = (1u << UW_NREGS) - 1;
	memcpy(regs, p->regs, sizeof(regs));
	/* tracing: the walk's own reads are not what it depends on */
	uint8_t *map = p->deps ? p->read_map : NULL;
	int32_t dep[UW_NREGS], n_deps = 0;
	if (map) {
		p->read_map = NULL;
		p->regs_used = 1u << 7 | 1u << 16; /* the copy's address, the leaf */
		for (int reg = 0; reg < UW_NREGS; reg++)
			dep[reg] = new_dep(p, &n_deps, -1, -1, reg);
	}
	size_t n = 0;
	out[n++] = (struct uw_frame){ regs[16], 1 };
	for (;;) {
		if (n >= max) {
			*end = UW_END_LIMIT;
			break;
		}
		const struct uw_rule *r;
		uint64_t pc = regs[16], addr = n == 1 ? pc : pc - 1;
		if (get_rule(p, addr, &r) || !r || !(known & 1u << r->cfa_reg)) {
			n = 0;
			break;
		}
		if (r->kind[16] == UW_UNDEF) {
			*end = UW_END_OUTERMOST;
			p->end_by_cfi = 1;
			break;
		}
		uint64_t cfa = regs[r->cfa_reg] + (uint64_t)r->cfa_off, next[UW_NREGS];
		uint32_t next_known = 0;
		int32_t cfa_dep = -1, next_dep[UW_NREGS];
		if (map) {
			cfa_dep = new_dep(p, &n_deps, dep[r->cfa_reg], -1, -1);
			memcpy(next_dep, dep, sizeof(dep));
		}
		int stopped = 0;
		for (int reg = 0; reg < UW_NREGS; reg++) {
			next[reg] = regs[reg];
			if (r->kind[reg] == UW_SAME && (known & 1u << reg)) {
				next_known |= 1u << reg;
			} else if (r->kind[reg] == UW_AT_CFA) {
				uint64_t at = cfa + (uint64_t)r->off[reg];
				if (uw_read_copied_stack(p, at, &next[reg])) {
					if (reg == 16) {
						stopped = 1;
						break;
					}
					continue; /* unknown from here on */
				}
				next_known |= 1u << reg;
				if (map)
					next_dep[reg] = new_dep(p, &n_deps, cfa_dep,
								(int32_t)(at - p->regs[7]), -1);
			}
		}
		if (stopped) {
			/* where the copy ran out depends on the CFA */
			if (map)
				mark(p, map, cfa_dep);
			p->ran_off_copy = 1;
			*end = UW_END_STOPPED;
			break;
		}
		next[7] = cfa;
		next_known |= 1u << 7;
		if (!(next_known & 1u << 16)) {
			n = 0;
			break;
		}
		memcpy(regs, next, sizeof(regs));
		known = next_known;
		if (map) {
			next_dep[7] = cfa_dep;
			memcpy(dep, next_dep, sizeof(dep));
			mark(p, map, dep[16]); /* a frame's pc, or the 0 that ends the walk */
		}
		if (!regs[16]) {
			*end = UW_END_OUTERMOST;
			break;
		}
		out[n++] = (struct uw_frame){ regs[16], 0 };
	}
	if (map)
		p->read_map = map;
	return n;
}

void uw_process_fast_path(struct uw_process *p, int on, uint64_t *fast, uint64_t *slow)
{
	p->no_fast = !on;
	if (fast)
		*fast = p->fast;
	if (slow)
		*slow = p->slow;
}
