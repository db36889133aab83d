/* --stack dwarf: what a stack-carrying event sends instead of frame-pointer
 * ips.  The user registers, the top fr_ustack_bytes of the user stack and
 * the Python frames of the thread follow the event's fixed part in the same
 * ring record (an fr_ring_ustack trailer), so an event can never lose its
 * stack to another record.  The analyzer unwinds the copy offline (libdw),
 * so stacks are complete without frame pointers.  Python frames are walked
 * here, at the event: later, from user space, the process may be gone. */
#ifndef FLIGHTREC_USTACK_BPF_H
#define FLIGHTREC_USTACK_BPF_H

#include "python_abi.h"

#define FR_STACK_MODE_FP 0
#define FR_STACK_MODE_DWARF 1
#define FR_USTACK_MAX 32768  /* largest copy; --stack-size is clamped to it */

const volatile __u32 fr_stack_mode = FR_STACK_MODE_FP;
const volatile __u32 fr_ustack_bytes = 16384;

/* The trailer's parts follow hdr in tail, each only as long as it is: the
 * kernel ips, the Python frames, the stack bytes.  The record sent is the
 * event, hdr and the used part of tail: fixed-size regions made every
 * event copy 1.5 KiB of mostly unused arrays. */
#define FR_USTACK_PY_AT_MAX (8 * FR_MAX_KERNEL_FRAMES)
#define FR_USTACK_STACK_AT_MAX (FR_USTACK_PY_AT_MAX + 16 * FR_MAX_PY_FRAMES)
/* Offsets into tail are masked with FR_USTACK_AT_MASK where the verifier
 * must see their bound (a compiler may check one register and index with
 * another). */
#define FR_USTACK_AT_MASK 2047
_Static_assert(FR_USTACK_STACK_AT_MAX <= FR_USTACK_AT_MASK, "ustack offsets");

/* The part of a CPython frame the walk reads, at most: the fields it needs
 * all lie in the first 128 bytes from 3.10 to 3.13. */
#define FR_PY_FRAME_READ 128

/* Return probes and a copied stack.  A uretprobe replaces the return
 * address of the call it watches, on the user stack, with the address of
 * the kernel's trampoline in the process's [uprobes] page, and keeps the
 * real one in the thread's return instances.  A stack copied while such a
 * call runs (a CPU sample inside cudaStreamSynchronize, a system call
 * inside cudaMemcpy, the gpu family's probe inside cudaLaunchKernel) would
 * lose that call's caller: the unwinder finds no code at the trampoline.
 * So the copy gets the real addresses back, as the kernel's own stack walk
 * does (fixup_uretprobe_trampoline_entries): a slot inside the copy that
 * still holds the trampoline takes its instance's orig_ret_vaddr. */
#define FR_RET_FIXUPS 8

struct ret_fixups {
	__u64 tramp;                /* the trampoline's address, 0: none */
	__u32 n;
	__u32 _pad;
	__u64 slot[FR_RET_FIXUPS];  /* where a replaced return address is */
	__u64 ra[FR_RET_FIXUPS];    /* what it was */
};

struct fr_ustack_scratch {
	__u32 busy;                 /* claimed by a running program */
	__u32 _pad;
	struct ret_fixups fix;
	__u8 pyframe[FR_PY_FRAME_READ + 8]; /* the frame being walked */
	__u8 ev[FR_RING_EV_MAX];    /* the event's fixed part, ending at hdr */
	struct fr_ring_ustack hdr;
	__u8 tail[FR_USTACK_AT_MASK + 1 + FR_USTACK_MAX + 4096];
};

/* FR_USTACK_SLOTS slots per CPU (an ARRAY indexed by cpu * FR_USTACK_SLOTS
 * + slot: a per-CPU map value is limited to 32 KiB).  Programs run with
 * migration disabled, so a CPU's slots are only contended by nesting. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 512 * FR_USTACK_SLOTS); /* set to CPUs x slots before load */
	__type(key, __u32);
	__type(value, struct fr_ustack_scratch);
} fr_ustack_scratch SEC(".maps");

/* A free slot of this CPU in scratch map (fr_ustack_scratch or
 * fr_fp_scratch: each slot starts with its __u32 busy), claimed; NULL when
 * all are in use. */
static __always_inline void *fr_slot_claim(void *map)
{
	__u32 base = bpf_get_smp_processor_id() * FR_USTACK_SLOTS;

#pragma unroll
	for (int i = 0; i < FR_USTACK_SLOTS; i++) {
		__u32 k = base + i;
		__u32 *busy = bpf_map_lookup_elem(map, &k);
		if (busy && __sync_val_compare_and_swap(busy, 0, 1) == 0)
			return busy;
	}
	return NULL;
}

/* Gives back a claimed slot of either scratch map: busy is first in both. */
static __always_inline void fr_scratch_release(void *slot)
{
	*(volatile __u32 *)slot = 0;
}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tgid */
	__type(value, struct py_proc);
} fr_py_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);   /* tid */
	__type(value, __u64); /* its PyThreadState */
} fr_py_tstate SEC(".maps");

static __always_inline __u64 rd64(__u64 addr)
{
	__u64 v = 0;
	bpf_probe_read_user(&v, sizeof(v), (void *)addr);
	return v;
}

static __always_inline __u32 rd32(__u64 addr)
{
	__u32 v = 0;
	bpf_probe_read_user(&v, sizeof(v), (void *)addr);
	return v;
}

/* The loops below run through bpf_loop: each callback is verified once,
 * where an unrolled loop made the verifier walk 600 k instructions. */

struct tstate_search {
	const struct py_offsets *o;
	__u64 want;   /* native tid or pthread self */
	__u64 interp;
	__u64 ts;
	__u64 found;
	int started;
};

static long tstate_step(__u64 i, void *arg)
{
	struct tstate_search *c = arg;
	const struct py_offsets *o = c->o;

	if (!c->started) {
		c->ts = c->interp ? rd64(c->interp + o->threads_head) : 0;
		c->started = 1;
	}
	if (!c->ts) {
		/* end of this interpreter's threads: the next interpreter */
		c->interp = c->interp ? rd64(c->interp + o->interp_next) : 0;
		if (!c->interp)
			return 1;
		c->ts = rd64(c->interp + o->threads_head);
		return 0;
	}
	__u64 id = o->thread_match == PY_MATCH_PTHREAD ? rd64(c->ts + o->ts_thread_id) :
							 rd32(c->ts + o->ts_thread_id);
	if (id == c->want) {
		c->found = c->ts;
		return 1;
	}
	c->ts = rd64(c->ts + o->ts_next);
	return 0;
}

/* The thread's PyThreadState, from the cache or by walking the runtime's
 * interpreters and their threads; 0 when the thread has none. */
static __always_inline __u64 py_find_tstate(const struct py_proc *pp, __u32 tid,
					    __u64 fsbase)
{
	const struct py_offsets *o = &pp->off;
	__u64 want = o->thread_match == PY_MATCH_PTHREAD ? fsbase : tid;
	__u64 *cached = bpf_map_lookup_elem(&fr_py_tstate, &tid);

	if (cached && *cached) {
		__u64 id = o->thread_match == PY_MATCH_PTHREAD ? rd64(*cached + o->ts_thread_id) :
								 rd32(*cached + o->ts_thread_id);
		if (id == want) /* tstate memory is reused: check it is still ours */
			return *cached;
	}
	struct tstate_search c = {
		.o = o, .want = want, .interp = rd64(pp->runtime_addr + o->interp_head),
	};
	bpf_loop(256, tstate_step, &c, 0);
	if (c.found)
		bpf_map_update_elem(&fr_py_tstate, &tid, &c.found, BPF_ANY);
	return c.found;
}

/* The frames walked so far are counted in s->hdr.n_py, in map memory, not
 * here: a count on the BPF stack is a constant to the verifier, which then
 * sees each of bpf_loop's rounds as a new state and walks all 64 (kernels
 * from 6.8 verify a callback round by round), 0.2 s per program that
 * takes a stack. */
struct frame_walk {
	const struct py_offsets *o;
	struct fr_ustack_scratch *s;
	__u64 frame;
	__u32 at;  /* where the frames start in s->tail: after the kernel ips */
	__u32 len; /* bytes of each frame to read */
};

/* A field of the frame read into w->s->pyframe. */
static __always_inline __u64 pf_u64(struct frame_walk *w, __u32 off)
{
	__u64 v;
	__builtin_memcpy(&v, &w->s->pyframe[off & (FR_PY_FRAME_READ - 1)], 8);
	return v;
}

/* How many frames back code_fingerprint looks for the same code. */
#define FR_PY_SEEN 8

/* The fingerprint (first line number) of code object code: from a frame
 * of this walk with the same code when one of the last FR_PY_SEEN has it
 * (recursion, and PyTorch's module calls alternating forward and
 * _call_impl, repeat code objects within a few frames; the same object at
 * the same moment has the same first line), else read from the object at
 * firstlineno_off.  A global function: verified once, where inlined into
 * frame_step its eight exits multiplied the states of every path before
 * it (each stack-taking program cost the verifier 0.2 s). */
__attribute__((noinline)) int fr_py_code_fingerprint(struct fr_ustack_scratch *s, __u32 at, __u32 n,
						     __u64 code, __u64 firstlineno_off)
{
	__u32 base = at & FR_USTACK_AT_MASK;

	if (!s)
		return 0;
	for (__u32 k = 1; k <= FR_PY_SEEN; k++) {
		if (n < k)
			break;
		struct fr_py_frame *q = (void *)&s->tail[base + 16 * ((n - k) & (FR_MAX_PY_FRAMES - 1))];
		if (q->code == code && !(q->flags & FR_PYF_SHIM))
			return q->fingerprint;
	}
	return (__u16)rd32(code + firstlineno_off);
}

/* One Python frame.  Its fields come from one read of the frame's first
 * w->len bytes: a user-memory read has a high fixed cost (about 140 ns on
 * this project's VMs), and a read per field made five per frame. */
static long frame_step(__u64 i, void *arg)
{
	struct frame_walk *w = arg;
	const struct py_offsets *o = w->o;
	__u64 frame = w->frame, code;
	__u32 instr_off, len = w->len;
	__u8 flags = 0;

	if (!frame)
		return 1;
	if (len == 0 || len > FR_PY_FRAME_READ ||
	    bpf_probe_read_user(w->s->pyframe, len, (void *)frame)) {
		w->s->hdr.flags |= FR_USTACK_PY_ERROR;
		return 1;
	}
	code = pf_u64(w, o->fr_code);
	if (o->instr_kind == PY_INSTR_LASTI) {
		instr_off = (__u32)pf_u64(w, o->fr_instr) * 2;
	} else {
		__u64 instr = pf_u64(w, o->fr_instr);
		instr_off = (__u32)(instr - (code + o->code_adaptive));
	}
	if (o->entry_kind == PY_ENTRY_EVERY_FRAME) {
		flags = FR_PYF_ENTRY;
	} else {
		__u8 b = w->s->pyframe[o->fr_entry & (FR_PY_FRAME_READ - 1)];
		if (o->entry_kind == PY_ENTRY_IS_ENTRY && b)
			flags = FR_PYF_ENTRY;
		else if (o->entry_kind == PY_ENTRY_OWNER && b == PY_OWNER_CSTACK)
			flags = FR_PYF_SHIM;
	}
	if (!code && !(flags & FR_PYF_SHIM)) {
		w->s->hdr.flags |= FR_USTACK_PY_ERROR;
		return 1;
	}
	__u64 previous = pf_u64(w, o->fr_previous);
	__u32 at = w->at, n = w->s->hdr.n_py;
	if (n >= FR_MAX_PY_FRAMES)
		return 1;
	struct fr_py_frame *pf = (void *)&w->s->tail[(at & FR_USTACK_AT_MASK) +
						    16 * (n & (FR_MAX_PY_FRAMES - 1))];
	pf->code = code;
	pf->instr_off = instr_off;
	pf->flags = flags;
	pf->_pad = 0;
	pf->fingerprint = (flags & FR_PYF_SHIM) ? 0 :
		(__u16)fr_py_code_fingerprint(w->s, at, n, code, w->o->code_firstlineno);
	w->s->hdr.n_py = (__u16)(n + 1);
	w->frame = previous;
	return n + 1 >= FR_MAX_PY_FRAMES;
}

static __always_inline __u32 max_u32(__u32 a, __u32 b)
{
	return a > b ? a : b;
}

static __always_inline void py_walk(struct fr_ustack_scratch *s, __u32 pid, __u32 tid, __u32 at)
{
	struct py_proc *pp = bpf_map_lookup_elem(&fr_py_procs, &pid);
	struct task_struct *task;
	__u64 tstate;

	if (!pp || !pp->runtime_addr)
		return;
	const struct py_offsets *o = &pp->off;
	s->hdr.py_version = (__u16)o->version;
	task = bpf_get_current_task_btf();
	tstate = py_find_tstate(pp, tid, BPF_CORE_READ(task, thread.fsbase));
	if (!tstate) {
		s->hdr.flags |= FR_USTACK_PY_NO_THREAD;
		return;
	}
	/* the bytes of a frame that hold every field read (an offset past
	 * FR_PY_FRAME_READ makes the walk stop with FR_USTACK_PY_ERROR) */
	__u32 len = max_u32(max_u32(o->fr_code, o->fr_previous), o->fr_instr) + 8;
	if (o->entry_kind != PY_ENTRY_EVERY_FRAME)
		len = max_u32(len, o->fr_entry + 1);
	struct frame_walk w = {
		.o = o, .s = s, .at = at, .len = len,
		.frame = o->ts_cframe ? rd64(rd64(tstate + o->ts_cframe) + o->ts_frame) :
					rd64(tstate + o->ts_frame),
	};
	s->hdr.n_py = 0;
	bpf_loop(FR_MAX_PY_FRAMES, frame_step, &w, 0);
	if (w.frame && s->hdr.n_py >= FR_MAX_PY_FRAMES)
		s->hdr.flags |= FR_USTACK_PY_TRUNCATED;
}

struct stack_copy {
	struct fr_ustack_scratch *s;
	__u64 sp;
	__u32 want;
	__u32 off;
	__u32 at; /* where the bytes start in s->tail */
};

/* Each thread's stack top: the address past the last byte the recorder's
 * unwind of one of its copies read, when that unwind reached the outermost
 * frame (recorder/drain/drain.c writes it).  The outermost frames of a
 * thread never move, so a later stack of the thread needs no byte above it:
 * its copy stops there (FR_USTACK_BOUNDED) instead of taking --stack-size
 * bytes, and a call from a shallow stack copies a few hundred bytes, not
 * 16 KiB.  A bounded copy whose unwind then falls short makes the recorder
 * forget the top (counted): the thread's next copies are whole again. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);   /* pid_tgid */
	__type(value, __u64); /* the stack top */
} fr_ustack_tops SEC(".maps");

/* The bytes to copy from sp: want, or less where the thread's top is known
 * (the copy then flagged FR_USTACK_BOUNDED). */
static __always_inline __u32 ustack_bound(struct fr_ustack_scratch *s, __u64 pid_tgid, __u32 want)
{
	__u64 *top = bpf_map_lookup_elem(&fr_ustack_tops, &pid_tgid);
	__u64 sp = s->hdr.regs[7];
	if (!top || *top <= sp || *top - sp >= want)
		return want;
	s->hdr.flags |= FR_USTACK_BOUNDED;
	return (__u32)(*top - sp);
}

/* One page (or the part of one up to a page boundary) of the user stack: a
 * read that faults fails whole, so the copy stops at the first unmapped page
 * (the stack's end) and keeps what it read. */
static long copy_step(__u64 i, void *arg)
{
	struct stack_copy *c = arg;
	__u64 off = c->off, chunk;
	__u32 at = c->at;

	if (off >= c->want || off >= FR_USTACK_MAX)
		return 1;
	chunk = 4096 - ((c->sp + off) & 4095);
	if (chunk > c->want - off)
		chunk = c->want - off;
	/* keep the bounds visible to the verifier: 1..4096 bytes, inside tail[] */
	chunk &= 0x1fff;
	if (chunk == 0 || chunk > 4096)
		return 1;
	off &= FR_USTACK_MAX - 1;
	if (bpf_probe_read_user(&c->s->tail[(at & FR_USTACK_AT_MASK) + off], chunk,
				(void *)(c->sp + off))) {
		c->s->hdr.flags |= FR_USTACK_TRUNCATED;
		return 1;
	}
	c->off = (__u32)(off + chunk);
	return 0;
}

struct vma_end {
	__u64 end;
};

static long vma_end_of(struct task_struct *task, struct vm_area_struct *vma, void *arg)
{
	((struct vma_end *)arg)->end = vma->vm_end;
	return 0;
}

/* Copies the top c->want bytes of the user stack to s->tail at c->at.
 * A user-memory read has a high fixed cost (a page at a time took four or
 * five for 16 KiB) and one that faults costs more: so one read of what
 * the stack's mapping holds, when its end can be known, else page by page
 * up to the first unmapped page. */
static __always_inline void copy_stack(struct stack_copy *c)
{
	struct vma_end v = { 0 };
	__u32 at = c->at, want = c->want;

	if (bpf_find_vma(bpf_get_current_task_btf(), c->sp, vma_end_of, &v, 0) == 0 &&
	    v.end > c->sp) {
		if (v.end - c->sp < want) {
			want = v.end - c->sp;
			c->s->hdr.flags |= FR_USTACK_TRUNCATED;
		}
		if (want > 0 && want <= FR_USTACK_MAX &&
		    !bpf_probe_read_user(&c->s->tail[at & FR_USTACK_AT_MASK],
					 want & (2 * FR_USTACK_MAX - 1), (void *)c->sp)) {
			c->off = want;
			return;
		}
	}
	bpf_loop(FR_USTACK_MAX / 4096 + 1, copy_step, c, 0);
}

/* The current thread's replaced return addresses, innermost first, into
 * s->fix (n = 0 when it is inside no watched call).  A global function:
 * verified once. */
__attribute__((noinline)) int fr_ret_fixups_collect(struct fr_ustack_scratch *s)
{
	struct task_struct *task = bpf_get_current_task_btf();

	if (!s)
		return 0;
	s->fix.n = 0;
	s->fix.tramp = 0;
	struct uprobe_task *ut = task->utask;
	if (!ut)
		return 0;
	struct return_instance *ri = ut->return_instances;
	struct mm_struct *mm = task->mm;
	if (!ri || !mm)
		return 0;
	struct xol_area *xa = mm->uprobes_state.xol_area;
	if (!xa)
		return 0;
	s->fix.tramp = xa->vaddr;
	__u32 n = 0;
	for (int i = 0; i < FR_RET_FIXUPS; i++) {
		if (!ri)
			break;
		s->fix.slot[i] = ri->stack;
		s->fix.ra[i] = ri->orig_ret_vaddr;
		n = i + 1;
		ri = ri->next;
	}
	s->fix.n = n;
	return (int)n;
}

/* s->fix applied to the len stack bytes copied to s->tail at `at`. */
__attribute__((noinline)) int fr_ret_fixups_apply(struct fr_ustack_scratch *s, __u32 at, __u32 len)
{
	if (!s || !s->fix.tramp)
		return 0;
	__u64 sp = s->hdr.regs[7], tramp = s->fix.tramp;
	__u32 n = s->fix.n, done = 0;
	for (int i = 0; i < FR_RET_FIXUPS; i++) {
		if (i >= n)
			break;
		__u64 slot = s->fix.slot[i];
		if (slot < sp || slot - sp + 8 > len || slot - sp >= FR_USTACK_MAX)
			continue;
		__u32 idx = (at & FR_USTACK_AT_MASK) + ((__u32)(slot - sp) & (FR_USTACK_MAX - 1));
		__u64 v;
		__builtin_memcpy(&v, &s->tail[idx], 8);
		if (v == tramp) {
			__builtin_memcpy(&s->tail[idx], &s->fix.ra[i], 8);
			done++;
		}
	}
	return (int)done;
}

/* Fills the head of slot s's fr_ring_ustack trailer for the current
 * thread (registers, Python frames after the n_kernel kernel ips already in
 * s->tail; stack_len 0) and returns where the stack bytes go in s->tail.
 * Inlined into the global functions below: one more call level would pass
 * the verifier's 512-byte bound on the stack of a call chain. */
static __always_inline int ustack_head(struct fr_ustack_scratch *s, __u64 pid_tgid,
				       __u32 n_kernel)
{
	struct task_struct *task = bpf_get_current_task_btf();
	/* the user registers, read straight from the task (a BTF pointer):
	 * one helper call each cost about 20 ns apiece */
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

	if (!s)
		return 0;
	s->hdr.h.type = FR_RING_USTACK;
	s->hdr.h.flags = 0;
	s->hdr._unused = 0;
	s->hdr.pid = pid_tgid >> 32;
	s->hdr.tid = (__u32)pid_tgid;
	s->hdr.flags = 0;
	s->hdr.py_version = 0;
	s->hdr.n_py = 0;
	s->hdr.n_kernel = n_kernel;
	s->hdr.stack_len = 0;
	s->hdr.regs[0] = regs->ax;
	s->hdr.regs[1] = regs->dx;
	s->hdr.regs[2] = regs->cx;
	s->hdr.regs[3] = regs->bx;
	s->hdr.regs[4] = regs->si;
	s->hdr.regs[5] = regs->di;
	s->hdr.regs[6] = regs->bp;
	s->hdr.regs[7] = regs->sp;
	s->hdr.regs[8] = regs->r8;
	s->hdr.regs[9] = regs->r9;
	s->hdr.regs[10] = regs->r10;
	s->hdr.regs[11] = regs->r11;
	s->hdr.regs[12] = regs->r12;
	s->hdr.regs[13] = regs->r13;
	s->hdr.regs[14] = regs->r14;
	s->hdr.regs[15] = regs->r15;
	s->hdr.regs[16] = regs->ip;
	/* A CPU sample that interrupted the kernel (it has kernel frames)
	 * between a uprobe's int3 and the kernel's handling of it finds the
	 * user ip one past the breakpoint, while the probed instruction has
	 * not run: unwound with the rules of the next byte (after a push, say)
	 * the frame took its caller's data for a return address, and such an
	 * unwind could end "at the outermost frame" inside the stack and cut
	 * the thread's later copies there (fr_ustack_tops).  The kernel takes
	 * the breakpoint's address the same way (uprobe_get_swbp_addr).  A
	 * uprobe's own programs see the ip already moved back, so only here. */
	if (n_kernel) {
		__u8 op = 0;
		if (!bpf_probe_read_user(&op, 1, (void *)(regs->ip - 1)) && op == 0xcc)
			s->hdr.regs[16] = regs->ip - 1;
	}
	__u32 at = 8 * (n_kernel & (FR_MAX_KERNEL_FRAMES * 2 - 1));
	py_walk(s, pid_tgid >> 32, (__u32)pid_tgid, at);
	at += 16 * s->hdr.n_py;
	if (at > FR_USTACK_STACK_AT_MAX)
		at = FR_USTACK_STACK_AT_MAX;
	s->hdr.h.size = (__u32)sizeof(struct fr_ring_ustack) + at;
	return at;
}

/* Fills the fr_ring_ustack trailer of slot s for the current thread, its
 * n_kernel kernel ips already in s->tail, the stack bytes copied into the
 * slot, and returns its size.  A global function: the verifier checks it
 * once per program instead of once for every path of the program that
 * reaches it. */
__attribute__((noinline)) int fr_fill_ustack_user(struct fr_ustack_scratch *s, __u64 pid_tgid,
						  __u32 n_kernel)
{
	if (!s)
		return 0;
	__u32 at = (__u32)ustack_head(s, pid_tgid, n_kernel) & FR_USTACK_AT_MASK;
	if (at > FR_USTACK_STACK_AT_MAX)
		at = FR_USTACK_STACK_AT_MAX;
	struct stack_copy c = {
		.s = s, .sp = s->hdr.regs[7], .at = at,
		.want = ustack_bound(s, pid_tgid, fr_ustack_bytes > FR_USTACK_MAX ? FR_USTACK_MAX
									  : fr_ustack_bytes),
	};
	copy_stack(&c);
	__u32 off = c.off;
	if (off > FR_USTACK_MAX)
		off = FR_USTACK_MAX;
	if (fr_ret_fixups_collect(s))
		fr_ret_fixups_apply(s, at, off);
	s->hdr.stack_len = off;
	__u32 size = (__u32)sizeof(struct fr_ring_ustack) + at + off;
	s->hdr.h.size = size;
	return size;
}

#ifdef FR_USTACK_DYNPTR
/* The kernel's copy of user memory into a dynptr (6.16 on): the stack goes
 * from the user's pages straight into its ring record, instead of into the
 * slot and then the slot into the ring.  This object variant is only
 * loaded where the kernel has it (attach/bpf_objects.c). */
extern int bpf_probe_read_user_dynptr(struct bpf_dynptr *dptr, __u32 off, __u32 size,
				      const void *unsafe_ptr__ign) __ksym;

/* The trailer's head without the stack bytes (global, as
 * fr_fill_ustack_user). */
__attribute__((noinline)) int fr_ustack_head(struct fr_ustack_scratch *s, __u64 pid_tgid,
					     __u32 n_kernel)
{
	return s ? ustack_head(s, pid_tgid, n_kernel) : 0;
}

/* How many bytes of the user stack at sp its mapping holds, up to the
 * copy's size (FR_USTACK_TRUNCATED in s->hdr when the mapping ends first);
 * 0 when the mapping cannot be looked up (the caller copies page by page). */
__attribute__((noinline)) int fr_ustack_want(struct fr_ustack_scratch *s)
{
	struct vma_end v = { 0 };

	if (!s)
		return 0;
	__u64 sp = s->hdr.regs[7];
	__u32 want = ustack_bound(s, bpf_get_current_pid_tgid(),
				  fr_ustack_bytes > FR_USTACK_MAX ? FR_USTACK_MAX : fr_ustack_bytes);
	if (bpf_find_vma(bpf_get_current_task_btf(), sp, vma_end_of, &v, 0) || v.end <= sp)
		return 0;
	if (v.end - sp < want) {
		want = v.end - sp;
		s->hdr.flags |= FR_USTACK_TRUNCATED;
	}
	return want;
}
#endif

/* Fills the fr_ring_ustack trailer of slot s for the current thread and
 * returns its size.  kernel: also record the kernel stack (CPU samples). */
static __always_inline __u32 fr_fill_ustack(void *ctx, struct fr_ustack_scratch *s,
					    __u64 pid_tgid, bool kernel)
{
	__u32 nk = 0;

	if (kernel) {
		long n = bpf_get_stack(ctx, s->tail, 8 * FR_MAX_KERNEL_FRAMES, 0);
		nk = n > 0 ? (__u64)n >> 3 : 0;
		if (nk > FR_MAX_KERNEL_FRAMES)
			nk = FR_MAX_KERNEL_FRAMES;
	}
	int size = fr_fill_ustack_user(s, pid_tgid, nk);
	/* bounds the verifier can see for the ring output */
	return size > 0 && size <= (int)(sizeof(struct fr_ring_ustack) + FR_USTACK_STACK_AT_MAX +
					 FR_USTACK_MAX) ? size : 0;
}

#endif
