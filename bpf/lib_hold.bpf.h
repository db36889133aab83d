/* The dlopen hold, part of the proc object: a library of a library family
 * (libcudart, libcuda, libnccl ...) loaded with dlopen is mapped while the
 * process runs, and the recorder attaches its probes milliseconds after the
 * mapping (more on a busy node): calls made right after dlopen returns
 * would go unseen and uncounted.  So the process is stopped at dlopen's
 * return (bpf/hold.bpf.h) when that dlopen brought in such a library that
 * the recorder has not handled yet, and the recorder continues it once the
 * mapping is handled (recorder/attach/lib_hold.c): one stop per dlopen that newly
 * maps one, nothing otherwise.
 *
 * How the libraries a dlopen brought in are known: dlopen returns its
 * object's struct link_map (the public part of <link.h>: l_addr, l_name,
 * l_ld, l_next), and the loader appends every object it loads to the end of
 * that list, the dependencies after the object: the objects from the
 * returned one to the end are those it loaded (or, for an object loaded
 * before, ones loaded after it).  Each is named by the file mapped at its
 * dynamic section (bpf_find_vma), matched against the family file names
 * (fr_lib_names) and the files the recorder has handled (fr_lib_ready).
 * (The kernel's mmap path is not used: kernels without BPF trampolines or
 * kprobes, like this project's CI, have no hook there but the syscall
 * tracepoints, which every system call would pay for.)  What could not be
 * held (a debugger's process, a terminal's foreground job, a process the
 * recorder is behind on) is counted, once per dlopen and family, as a
 * not_attached drop of that family: its calls until the attach are not
 * seen, so they cannot be counted one by one. */
#ifndef FLIGHTREC_LIB_HOLD_BPF_H
#define FLIGHTREC_LIB_HOLD_BPF_H

#include "hold.bpf.h"

#define LINK_MAP_LD 16   /* offsets in struct link_map (<link.h>) */
#define LINK_MAP_NEXT 24
#define LIB_HOLD_WALK 64 /* objects looked at after the returned one */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* tgid */
	__type(value, struct fr_held);
} fr_lib_held SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct lib_ready_key);
	__type(value, __u8);
} fr_lib_ready SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fr_hold_cfg);
} fr_lib_hold_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LIB_HOLD_NAMES);
	__type(key, __u32);
	__type(value, struct lib_hold_name);
} fr_lib_names SEC(".maps");

/* the tracking thread's own wakeup: a held process waits on it */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16384);
} fr_lib_notes SEC(".maps");

struct name_match {
	char name[LIB_HOLD_NAME_LEN + 1];
	int probe;
};

struct prefix_cmp {
	const char *prefix; /* a family file name, NUL-terminated */
	const char *name;   /* the mapped file's name */
	int k;              /* characters equal so far */
};

/* One character of a prefix comparison (bpf_loop, as below). */
static long cmp_char(__u64 i, void *data)
{
	struct prefix_cmp *c = data;
	__u32 k = (__u32)i & 31;

	if (k >= LIB_HOLD_NAME_LEN || !c->prefix[k] || c->prefix[k] != c->name[k])
		return 1;
	c->k = k + 1;
	return 0;
}

/* One family file name against the mapped file's name (bpf_loop: loops
 * over names and characters, unrolled or bounded, took the verifier
 * seconds, then a quarter of a second per program load). */
static long match_one(__u64 i, void *data)
{
	struct name_match *m = data;
	__u32 key = (__u32)i;
	struct lib_hold_name *n = bpf_map_lookup_elem(&fr_lib_names, &key);

	if (!n || !n->prefix[0])
		return 1;
	struct prefix_cmp c = {.prefix = n->prefix, .name = m->name};
	bpf_loop(LIB_HOLD_NAME_LEN, cmp_char, &c, 0);
	if (c.k < LIB_HOLD_NAME_LEN && c.k >= 0 && !n->prefix[c.k & 31]) {
		m->probe = n->probe;
		return 1;
	}
	return 0;
}

/* what the walk found so far */
struct lib_walk_found {
	__u32 probes; /* PROBE_BIT of the families whose files were found */
	__u32 n_keys;
	struct lib_ready_key keys[LIB_HOLD_KEYS];
};

/* The walk's findings live in map memory, one entry per thread in dlopen's
 * return, not on the BPF stack: there the verifier knows the count of keys
 * found as a constant, and each of the 64 rounds of the walk with another
 * count was a new state (the proc object took 0.2 s to load).  A plain
 * hash: every path out of the program deletes its entry, and an LRU could
 * hand an entry in use to another thread's insert. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* tid */
	__type(value, struct lib_walk_found);
} fr_lib_walk SEC(".maps");

struct lib_walk {
	__u64 map;  /* the struct link_map to look at next; 0: the end */
	__u64 addr; /* an address of its object (its dynamic section) */
	struct lib_walk_found *found;
};

static long check_object_vma(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct lib_walk *w = data;
	struct lib_walk_found *found = w->found;
	struct file *f = BPF_CORE_READ(vma, vm_file);
	struct lib_ready_key key = {};
	struct name_match m = {.probe = -1};
	const unsigned char *dname;
	int probe;

	if (!f || !found)
		return 0;
	key.ino = BPF_CORE_READ(f, f_inode, i_ino);
	key.dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev);
	if (bpf_map_lookup_elem(&fr_lib_ready, &key))
		return 0;
	dname = BPF_CORE_READ(f, f_path.dentry, d_name.name);
	if (bpf_probe_read_kernel_str(m.name, sizeof(m.name), dname) <= 0)
		return 0;
	bpf_loop(LIB_HOLD_NAMES, match_one, &m, 0);
	probe = m.probe;
	if (probe < 0 || probe >= FR_PROBE_MAX)
		return 0;
	found->probes |= 1u << probe;
	for (__u32 i = 0; i < LIB_HOLD_KEYS; i++) {
		if (i == found->n_keys) {
			found->keys[i] = key;
			found->n_keys = i + 1;
			break;
		}
		if (found->keys[i].ino == key.ino && found->keys[i].dev == key.dev)
			break;
	}
	return 0;
}

/* One object of the list (bpf_loop: the verifier checks it once, not once
 * per object). */
static long walk_one(__u64 i, void *data)
{
	struct lib_walk *w = data;
	__u64 next = 0;

	if (!w->map)
		return 1;
	w->addr = 0;
	bpf_probe_read_user(&w->addr, sizeof(w->addr), (void *)(w->map + LINK_MAP_LD));
	if (w->addr)
		bpf_find_vma(bpf_get_current_task_btf(), w->addr, check_object_vma, w, 0);
	if (bpf_probe_read_user(&next, sizeof(next), (void *)(w->map + LINK_MAP_NEXT)))
		next = 0;
	w->map = next;
	return 0;
}

/* uprobe_family attaches an entry program with every return program on
 * kernels without uprobe_multi links; the decision is all at the return */
SEC("uprobe")
int BPF_KPROBE(fr_dlopen_enter)
{
	return 0;
}

static long count_one(__u64 p, void *data)
{
	if (*(__u32 *)data & (1u << (p & 31)))
		fr_count_drop((__u32)p, FR_DROP_NOT_ATTACHED);
	return 0;
}

static __always_inline void count_unheld(__u32 probes)
{
	bpf_loop(FR_PROBE_MAX, count_one, &probes, 0);
}

SEC("uretprobe")
int BPF_KRETPROBE(fr_dlopen_exit, void *handle)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct lib_walk w = {.map = (__u64)handle};
	struct lib_walk_found none = {};
	struct lib_hold_note *n;
	__u64 held;
	__u32 probes;

	if (!w.map || !fr_is_traced(id >> 32))
		return 0;
	bpf_map_update_elem(&fr_lib_walk, &tid, &none, BPF_ANY);
	w.found = bpf_map_lookup_elem(&fr_lib_walk, &tid);
	if (!w.found)
		return 0;
	bpf_loop(LIB_HOLD_WALK, walk_one, &w, 0);
	probes = w.found->probes;
	if (!probes) {
		bpf_map_delete_elem(&fr_lib_walk, &tid);
		return 0;
	}
	/* the note first: a process is never stopped for a note the recorder
	 * will not get */
	n = bpf_ringbuf_reserve(&fr_lib_notes, sizeof(*n), 0);
	held = n ? fr_hold_process(&fr_lib_held, &fr_lib_hold_cfg, id >> 32) : 0;
	if (!held) {
		if (n)
			bpf_ringbuf_discard(n, BPF_RB_NO_WAKEUP);
		bpf_map_delete_elem(&fr_lib_walk, &tid);
		count_unheld(probes);
		return 0;
	}
	n->held_ns = held;
	n->tgid = id >> 32;
	n->probes = probes;
	n->n_keys = w.found->n_keys < LIB_HOLD_KEYS ? w.found->n_keys : LIB_HOLD_KEYS;
	n->_pad = 0;
	__builtin_memcpy(n->keys, w.found->keys, sizeof(n->keys));
	bpf_map_delete_elem(&fr_lib_walk, &tid);
	bpf_ringbuf_submit(n, BPF_RB_FORCE_WAKEUP);
	return 0;
}

#endif
