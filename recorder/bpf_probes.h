/* Loading and attaching the BPF probe families.  The proc family is always
 * loaded and owns the shared maps (ring buffer, pid set, drop counters); the
 * others reuse them.  Every attachment is an fd-based link owned by this
 * process, so the kernel removes all of them whenever the recorder exits,
 * crash or SIGKILL included; nothing is pinned. */
#ifndef FLIGHTREC_BPF_PROBES_H
#define FLIGHTREC_BPF_PROBES_H

#include <stdbool.h>
#include <stdint.h>

#include "events.h"
#include "options.h"
#include "uprobe_family.h"

struct fr_proc_bpf;
struct fr_cpu_bpf;
struct fr_syscalls_bpf;
struct fr_cuda_bpf;
struct fr_nccl_bpf;
struct fr_step_bpf;
struct fr_rdma_bpf;
struct bpf_link;

struct bpf_probes {
	struct fr_proc_bpf *proc;
	struct fr_cpu_bpf *cpu;
	struct fr_syscalls_bpf *sys;
	struct fr_cuda_bpf *cuda;
	struct fr_nccl_bpf *nccl;
	struct fr_step_bpf *step;
	struct fr_rdma_bpf *rdma;
	struct bpf_link **cpu_links;
	int n_cpu_links;
	/* library families: attached to files as they are found (at most one
	 * per probe id) */
	struct uprobe_family *families[FR_PROBE_MAX];
	int n_families;
	struct uprobe_family cuda_family;
	struct uprobe_family nccl_family;
	struct uprobe_family step_family;
	struct uprobe_family rdma_family;
	struct uprobe_family rdma_dp_family; /* data path: attached by offset */
	struct uprobe_spec step_spec;
	unsigned loaded;   /* enum probe_bits that loaded */
	unsigned attached; /* enum probe_bits that attached (or wait for a library) */
	char why_not[FR_PROBE_MAX][256]; /* per probe id: why it is missing */
};



/* Opens and loads every requested family.  Families that fail are skipped
 * with a reason when the user did not name them; when named, or for the
 * proc family, failure is an error (message in err).  filter_cgroup_id != 0
 * selects cgroup filtering. */
int bpf_probes_load(struct bpf_probes *p, const struct record_opts *o,
		    uint64_t filter_cgroup_id, char *err, size_t errlen);
int bpf_probes_attach(struct bpf_probes *p, const struct record_opts *o,
		      char *err, size_t errlen);
void bpf_probes_destroy(struct bpf_probes *p);

int bpf_probes_ring_fd(const struct bpf_probes *p);
int bpf_probes_add_pid(struct bpf_probes *p, uint32_t pid);
/* FR_PID_* state of pid in the kernel's pid set, 0 when absent. */
uint32_t bpf_probes_pid_state(const struct bpf_probes *p, uint32_t pid);
void bpf_probes_forget_pid(struct bpf_probes *p, uint32_t pid);
/* The kernel's loss counters, summed over CPUs, per probe and reason. */
void bpf_probes_drops(const struct bpf_probes *p,
		      struct fr_drop_slot out[FR_PROBE_MAX][FR_DROP_REASON_MAX]);
/* The map the Python frame walker reads per-process settings from. */
int bpf_probes_py_procs_fd(const struct bpf_probes *p);
/* poll_cq calls that returned no completion (counted in the kernel). */
uint64_t bpf_probes_rdma_empty_polls(const struct bpf_probes *p);

#endif
