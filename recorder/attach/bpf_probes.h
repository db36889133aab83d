/* Loading and attaching the BPF probe families, one generic loader over the
 * family descriptors (fr_family.h): each family's object is opened from the
 * ELF its skeleton embeds (bpf_objects.c), its knobs set from the
 * recording's probes_config (bpf_knobs.c), then loaded and attached the
 * way its descriptor says.  The proc family is always loaded and owns the shared maps (ring buffer,
 * pid set, drop counters, stack scratch, Python state); the others reuse
 * them.  Every attachment is an fd-based link owned by this process, so the
 * kernel removes all of them whenever the recorder exits, crash or SIGKILL
 * included; nothing is pinned. */
#ifndef FLIGHTREC_BPF_PROBES_H
#define FLIGHTREC_BPF_PROBES_H

#include <stdatomic.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>

#include "events.h"
#include "fr_family.h"
#include "frec_error.h"
#include "attach/probes_config.h"
#include "attach/uprobe_family.h"

struct bpf_object;
struct bpf_link;

struct bpf_probes {
	/* per family id: its object, NULL when not loaded */
	struct bpf_object *objs[FR_PROBE_MAX];
	/* per family id: the links of FR_ATTACH_AUTO (one per program) and
	 * FR_ATTACH_PERF (one per CPU) families */
	struct bpf_link **links[FR_PROBE_MAX];
	int n_links[FR_PROBE_MAX];
	/* per family id: the uprobes of FR_ATTACH_LIBRARY and FR_ATTACH_SYMBOL
	 * families, attached to files as they are found; families[] lists the
	 * loaded ones */
	struct uprobe_family uprobes[FR_PROBE_MAX];
	struct uprobe_family *families[FR_PROBE_MAX];
	int n_families;
	/* rdma only: the data path, attached by offset (rdma_datapath.c) */
	struct uprobe_family rdma_dp_family;
	struct fr_family_symbol marker_symbol; /* --step-marker's */
	/* the proc object's shared maps */
	int events_fd, pids_fd, drops_fd, py_procs_fd;
	unsigned loaded;   /* PROBE_BIT of the families that loaded */
	uint64_t load_ns[FR_PROBE_MAX]; /* per family id: its object's load (verification) */
	unsigned attached; /* PROBE_BIT of the families attached (or waiting for a file) */
	char why_not[FR_PROBE_MAX][256]; /* per probe id: why it is missing */
	/* --stack dwarf: PROBE_BIT of the families loaded as their one-copy
	 * (dynptr) variant, and why one that should have was not */
	unsigned ustack_dynptr;
	char ustack_fallback[FR_PROBE_MAX][96];
	/* the dlopen hold's programs in the proc object (bpf/lib_hold.bpf.h):
	 * loaded with the cuda or nccl family; attached by lib_hold.c */
	bool lib_hold_loaded;
	char lib_hold_why[256]; /* why they are not, when they were wanted */
	/* losses the recorder counts itself, added to the kernel's */
	struct user_drop {
		atomic_uint_fast64_t count, first_ns, last_ns;
	} user_drops[FR_PROBE_MAX][FR_DROP_REASON_MAX];
};

/* One line per loaded family on out: its load time and each program's
 * instructions the verifier processed (what start-up costs, -v). */
void bpf_probes_print_load(const struct bpf_probes *p, FILE *out);

/* Opens and loads every requested family.  Families that fail are skipped
 * with a reason when the user did not name them; when named, or for the
 * proc family and the step marker, failure is an error: -errno, fe->what
 * filled.
 * filter_cgroup_id != 0 selects cgroup filtering. */
int bpf_probes_load(struct bpf_probes *p, const struct probes_config *o,
		    uint64_t filter_cgroup_id, struct frec_error *fe);
int bpf_probes_attach(struct bpf_probes *p, const struct probes_config *o,
		      struct frec_error *fe);
/* Removes every attachment, the process tracker's last: the uprobe
 * families (the rdma data path's included) side by side, with also (the
 * dlopen hold's probes, or NULL) among them. */
void bpf_probes_detach(struct bpf_probes *p, struct uprobe_family *also);
void bpf_probes_destroy(struct bpf_probes *p);

/* The uprobe family of id, NULL when not loaded or not a uprobe family. */
struct uprobe_family *bpf_probes_uprobes(struct bpf_probes *p, enum fr_probe_id id);

int bpf_probes_ring_fd(const struct bpf_probes *p);
int bpf_probes_add_pid(struct bpf_probes *p, uint32_t pid);
/* FR_PID_* state of pid in the kernel's pid set, 0 when absent. */
uint32_t bpf_probes_pid_state(const struct bpf_probes *p, uint32_t pid);
void bpf_probes_forget_pid(struct bpf_probes *p, uint32_t pid);
/* The kernel's loss counters, summed over CPUs, per probe and reason. */
void bpf_probes_drops(const struct bpf_probes *p,
		      struct fr_drop_slot out[FR_PROBE_MAX][FR_DROP_REASON_MAX]);
/* A loss the recorder saw itself (at CLOCK_MONOTONIC at_ns), reported
 * with the kernel's by bpf_probes_drops.  Any thread. */
void bpf_probes_count_drop(struct bpf_probes *p, enum fr_probe_id probe,
			   enum fr_drop_reason reason, uint64_t at_ns);
/* The map the Python frame walker reads per-process settings from. */
int bpf_probes_py_procs_fd(const struct bpf_probes *p);
/* The map of each thread's stack top that bounds --stack dwarf copies
 * (bpf/ustack.bpf.h: fr_ustack_tops), -1 when not loaded. */
int bpf_probes_ustack_tops_fd(const struct bpf_probes *p);
/* The per-call entry map (fr_<family>_calls: struct call_key ->
 * struct call_state, bpf/call_state.h) of a loaded uprobe family, for
 * reading the calls in flight (inflight.c); -1 when the family is not
 * loaded or has none. */
int bpf_probes_calls_fd(const struct bpf_probes *p, enum fr_probe_id id);
/* poll_cq calls that returned no completion (counted in the kernel). */
uint64_t bpf_probes_rdma_empty_polls(const struct bpf_probes *p);

#endif
