/* BPF object lifecycle (see bpf_probes.h). */
#include "bpf_probes.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <assert.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cpu.skel.h"
#include "cuda.skel.h"
#include "nccl.skel.h"
#include "step.skel.h"
#include "rdma.skel.h"
#include "probe_families.h"
#include "proc.skel.h"
#include "syscalls.skel.h"

#define FR_PID_TRACED 1

static int bit_index(unsigned bit)
{
	return __builtin_ctz(bit);
}

static const char *probe_name(unsigned bit)
{
	return probe_bit_name(bit);
}

/* Every uprobe program of obj becomes a uprobe_multi program when the
 * kernel has them (see uprobe_multi_supported). */
static void prepare_uprobes(struct bpf_object *obj)
{
	struct bpf_program *prog;
	if (!uprobe_multi_supported())
		return;
	bpf_object__for_each_program(prog, obj) {
		const char *sec = bpf_program__section_name(prog);
		if (!strncmp(sec, "uprobe", 6) || !strncmp(sec, "uretprobe", 9))
			uprobe_multi_prepare(prog);
	}
}

static void add_family(struct bpf_probes *p, struct uprobe_family *f, const char *name,
		       unsigned bit, uint16_t probe, const struct uprobe_spec *specs, size_t n)
{
	uprobe_family_init(f);
	f->name = name;
	f->bit = bit;
	f->probe = probe;
	f->specs = specs;
	f->n_specs = n;
	f->multi = uprobe_multi_supported();
	/* one family per probe id: a second one is a programming error */
	assert(p->n_families < FR_PROBE_MAX);
	p->families[p->n_families++] = f;
}

/* Maps every object shares: created by the proc object, handed to the
 * others before they load. */
static const char *const shared_maps[] = {
	"fr_events", "fr_pids", "fr_drops", "fr_ustack_scratch", "fr_py_procs", "fr_py_tstate",
};

static int reuse_shared_maps(struct bpf_probes *p, struct bpf_object *obj)
{
	for (size_t i = 0; i < sizeof(shared_maps) / sizeof(shared_maps[0]); i++) {
		struct bpf_map *mine = bpf_object__find_map_by_name(obj, shared_maps[i]);
		struct bpf_map *theirs = bpf_object__find_map_by_name(p->proc->obj, shared_maps[i]);
		if (!mine || !theirs)
			continue;
		int err = bpf_map__reuse_fd(mine, bpf_map__fd(theirs));
		if (err)
			return err;
	}
	return 0;
}

/* Records why a family is missing; returns -1 when that is fatal. */
static int family_failed(struct bpf_probes *p, const struct record_opts *o,
			 unsigned bit, int err, const char *step, char *msg, size_t len)
{
	snprintf(p->why_not[bit_index(bit)], sizeof(p->why_not[0]), "%s failed: %s",
		 step, strerror(-err > 0 ? -err : EINVAL));
	if (o->probes_given) {
		snprintf(msg, len, "cannot %s probe family '%s': %s", step, probe_name(bit),
			 strerror(-err > 0 ? -err : EINVAL));
		return -1;
	}
	return 0;
}

int bpf_probes_load(struct bpf_probes *p, const struct record_opts *o,
		    uint64_t cgroup_id, char *msg, size_t len)
{
	int err;

	memset(p, 0, sizeof(*p));
	p->proc = fr_proc_bpf__open();
	if (!p->proc) {
		snprintf(msg, len, "cannot open the BPF objects: %s", strerror(errno));
		return -1;
	}
	p->proc->rodata->fr_filter_mode = cgroup_id ? 1 : 0;
	p->proc->rodata->fr_target_cgroup_id = cgroup_id;
	bpf_map__set_max_entries(p->proc->maps.fr_events, o->ring_mib << 20);
	/* FR_USTACK_SLOTS raw-stack scratch slots per CPU in dwarf mode (~36 KiB
	 * each): one per level of programs nesting on a CPU */
	bpf_map__set_max_entries(p->proc->maps.fr_ustack_scratch,
				 o->stack_dwarf ? (uint32_t)libbpf_num_possible_cpus() *
							  FR_USTACK_SLOTS : 1);
	err = fr_proc_bpf__load(p->proc);
	if (err) {
		snprintf(msg, len, "cannot load the BPF process tracker: %s (run with -v "
			 "for the verifier log)", strerror(-err));
		return -1;
	}

	if (o->probes & PROBE_CPU) {
		p->cpu = fr_cpu_bpf__open();
		err = p->cpu ? 0 : -errno;
		if (!err) {
			p->cpu->rodata->fr_filter_mode = cgroup_id ? 1 : 0;
			p->cpu->rodata->fr_target_cgroup_id = cgroup_id;
			p->cpu->rodata->fr_stack_mode = o->stack_dwarf;
			p->cpu->rodata->fr_ustack_bytes = o->stack_kib * 1024;
			err = reuse_shared_maps(p, p->cpu->obj);
		}
		if (!err)
			err = fr_cpu_bpf__load(p->cpu);
		if (err) {
			fr_cpu_bpf__destroy(p->cpu);
			p->cpu = NULL;
			if (family_failed(p, o, PROBE_CPU, err, "load", msg, len))
				return -1;
		} else {
			p->loaded |= PROBE_CPU;
		}
	}
	if (o->probes & PROBE_SYSCALLS) {
		p->sys = fr_syscalls_bpf__open();
		err = p->sys ? 0 : -errno;
		if (!err) {
			p->sys->rodata->fr_filter_mode = cgroup_id ? 1 : 0;
			p->sys->rodata->fr_target_cgroup_id = cgroup_id;
			p->sys->rodata->fr_syscall_min_ns = o->syscall_min_ns;
			p->sys->rodata->fr_syscall_stacks = o->syscall_stacks;
			p->sys->rodata->fr_stack_mode = o->stack_dwarf;
			p->sys->rodata->fr_ustack_bytes = o->stack_kib * 1024;
			err = reuse_shared_maps(p, p->sys->obj);
		}
		if (!err)
			err = fr_syscalls_bpf__load(p->sys);
		if (err) {
			fr_syscalls_bpf__destroy(p->sys);
			p->sys = NULL;
			if (family_failed(p, o, PROBE_SYSCALLS, err, "load", msg, len))
				return -1;
		} else {
			p->loaded |= PROBE_SYSCALLS;
		}
	}
	if (o->probes & PROBE_CUDA) {
		p->cuda = fr_cuda_bpf__open();
		err = p->cuda ? 0 : -errno;
		if (!err) {
			p->cuda->rodata->fr_filter_mode = cgroup_id ? 1 : 0;
			p->cuda->rodata->fr_target_cgroup_id = cgroup_id;
			p->cuda->rodata->fr_launch_stack_every = o->launch_stack_every;
			p->cuda->rodata->fr_stack_mode = o->stack_dwarf;
			p->cuda->rodata->fr_ustack_bytes = o->stack_kib * 1024;
			err = reuse_shared_maps(p, p->cuda->obj);
			prepare_uprobes(p->cuda->obj);
		}
		if (!err)
			err = fr_cuda_bpf__load(p->cuda);
		if (err) {
			fr_cuda_bpf__destroy(p->cuda);
			p->cuda = NULL;
			if (family_failed(p, o, PROBE_CUDA, err, "load", msg, len))
				return -1;
		} else {
			struct uprobe_family *f = &p->cuda_family;
			add_family(p, f, "cuda", PROBE_CUDA, FR_PROBE_CUDA, cuda_specs, n_cuda_specs);
			f->entry_progs[0] = p->cuda->progs.fr_cuda_enter;
			f->entry_progs[1] = p->cuda->progs.fr_cuda_enter_launch;
			f->exit_prog = p->cuda->progs.fr_cuda_exit;
			p->loaded |= PROBE_CUDA;
		}
	}
	if (o->probes & PROBE_NCCL) {
		p->nccl = fr_nccl_bpf__open();
		err = p->nccl ? 0 : -errno;
		if (!err) {
			p->nccl->rodata->fr_filter_mode = cgroup_id ? 1 : 0;
			p->nccl->rodata->fr_target_cgroup_id = cgroup_id;
			p->nccl->rodata->fr_stack_mode = o->stack_dwarf;
			p->nccl->rodata->fr_ustack_bytes = o->stack_kib * 1024;
			err = reuse_shared_maps(p, p->nccl->obj);
			prepare_uprobes(p->nccl->obj);
		}
		if (!err)
			err = fr_nccl_bpf__load(p->nccl);
		if (err) {
			fr_nccl_bpf__destroy(p->nccl);
			p->nccl = NULL;
			if (family_failed(p, o, PROBE_NCCL, err, "load", msg, len))
				return -1;
		} else {
			struct uprobe_family *f = &p->nccl_family;
			add_family(p, f, "nccl", PROBE_NCCL, FR_PROBE_NCCL, nccl_specs, n_nccl_specs);
			f->entry_progs[0] = p->nccl->progs.fr_nccl_enter;
			f->entry_progs[1] = p->nccl->progs.fr_nccl_enter_init;
			f->exit_prog = p->nccl->progs.fr_nccl_exit;
			p->loaded |= PROBE_NCCL;
		}
	}
	if (o->probes & PROBE_RDMA) {
		p->rdma = fr_rdma_bpf__open();
		err = p->rdma ? 0 : -errno;
		if (!err) {
			p->rdma->rodata->fr_filter_mode = cgroup_id ? 1 : 0;
			p->rdma->rodata->fr_target_cgroup_id = cgroup_id;
			p->rdma->rodata->fr_stack_mode = o->stack_dwarf;
			p->rdma->rodata->fr_ustack_bytes = o->stack_kib * 1024;
			err = reuse_shared_maps(p, p->rdma->obj);
			prepare_uprobes(p->rdma->obj);
		}
		if (!err)
			err = fr_rdma_bpf__load(p->rdma);
		if (err) {
			fr_rdma_bpf__destroy(p->rdma);
			p->rdma = NULL;
			if (family_failed(p, o, PROBE_RDMA, err, "load", msg, len))
				return -1;
		} else {
			struct uprobe_family *f = &p->rdma_family;
			add_family(p, f, "rdma", PROBE_RDMA, FR_PROBE_RDMA, rdma_specs, n_rdma_specs);
			f->entry_progs[0] = p->rdma->progs.fr_rdma_enter;
			f->entry_progs[1] = p->rdma->progs.fr_rdma_enter_modify;
			f->entry_progs[2] = p->rdma->progs.fr_rdma_enter_release;
			f->exit_prog = p->rdma->progs.fr_rdma_exit;
			f = &p->rdma_dp_family;
			uprobe_family_init(f);
			f->name = "rdma";
			f->bit = PROBE_RDMA;
			f->probe = FR_PROBE_RDMA;
			f->multi = uprobe_multi_supported();
			f->entry_progs[0] = p->rdma->progs.fr_rdma_dp_enter;
			f->exit_prog = p->rdma->progs.fr_rdma_dp_exit;
			p->loaded |= PROBE_RDMA;
		}
	}
	if (o->step_marker) {
		p->step = fr_step_bpf__open();
		err = p->step ? 0 : -errno;
		if (!err) {
			p->step->rodata->fr_filter_mode = cgroup_id ? 1 : 0;
			p->step->rodata->fr_target_cgroup_id = cgroup_id;
			p->step->rodata->fr_stack_mode = o->stack_dwarf;
			p->step->rodata->fr_ustack_bytes = o->stack_kib * 1024;
			err = reuse_shared_maps(p, p->step->obj);
			prepare_uprobes(p->step->obj);
		}
		if (!err)
			err = fr_step_bpf__load(p->step);
		if (err) {
			snprintf(msg, len, "cannot load the step marker probe: %s", strerror(-err));
			return -1;
		}
		p->step_spec = (struct uprobe_spec){o->step_marker, 0, 0, 0, 0, true};
		add_family(p, &p->step_family, "step", 0, FR_PROBE_STEP, &p->step_spec, 1);
		p->step_family.entry_progs[0] = p->step->progs.fr_step_enter;
	}
	return 0;
}

static int open_cpu_clock(unsigned freq_hz, int cpu)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_freq = freq_hz,
		.freq = 1,
	};
	return (int)syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static int attach_cpu(struct bpf_probes *p, const struct record_opts *o)
{
	int n = libbpf_num_possible_cpus();
	int last_err = 0;

	if (n <= 0)
		return -EINVAL;
	p->cpu_links = calloc((size_t)n, sizeof(*p->cpu_links));
	if (!p->cpu_links)
		return -ENOMEM;
	for (int cpu = 0; cpu < n; cpu++) {
		int fd = open_cpu_clock(o->freq_hz, cpu);
		if (fd < 0) {
			if (errno != ENODEV) /* ENODEV: CPU offline */
				last_err = -errno;
			continue;
		}
		struct bpf_link *l = bpf_program__attach_perf_event(p->cpu->progs.fr_cpu_sample, fd);
		if (!l) {
			last_err = -errno;
			close(fd);
			continue;
		}
		p->cpu_links[p->n_cpu_links++] = l;
	}
	return p->n_cpu_links ? 0 : (last_err ? last_err : -ENODEV);
}

int bpf_probes_attach(struct bpf_probes *p, const struct record_opts *o,
		      char *msg, size_t len)
{
	int err = fr_proc_bpf__attach(p->proc);
	if (err) {
		snprintf(msg, len, "cannot attach the process tracker (sched tracepoints): %s",
			 strerror(-err));
		return -1;
	}
	if (p->cpu) {
		err = attach_cpu(p, o);
		if (err) {
			if (family_failed(p, o, PROBE_CPU, err, "attach", msg, len))
				return -1;
		} else {
			p->attached |= PROBE_CPU;
		}
	}
	/* library families attach when their libraries are found */
	p->attached |= p->loaded & (PROBE_CUDA | PROBE_NCCL | PROBE_RDMA);
	if (p->sys) {
		err = fr_syscalls_bpf__attach(p->sys);
		if (err) {
			if (family_failed(p, o, PROBE_SYSCALLS, err, "attach", msg, len))
				return -1;
		} else {
			p->attached |= PROBE_SYSCALLS;
		}
	}
	return 0;
}

void bpf_probes_destroy(struct bpf_probes *p)
{
	for (int i = 0; i < p->n_cpu_links; i++)
		bpf_link__destroy(p->cpu_links[i]);
	free(p->cpu_links);
	p->cpu_links = NULL;
	p->n_cpu_links = 0;
	for (int i = 0; i < p->n_families; i++)
		uprobe_family_destroy(p->families[i]);
	p->n_families = 0;
	fr_cuda_bpf__destroy(p->cuda);
	p->cuda = NULL;
	fr_nccl_bpf__destroy(p->nccl);
	p->nccl = NULL;
	fr_step_bpf__destroy(p->step);
	p->step = NULL;
	if (p->rdma) {
		uprobe_family_destroy(&p->rdma_dp_family);
		fr_rdma_bpf__destroy(p->rdma);
		p->rdma = NULL;
	}
	fr_syscalls_bpf__destroy(p->sys);
	fr_cpu_bpf__destroy(p->cpu);
	fr_proc_bpf__destroy(p->proc);
	p->sys = NULL;
	p->cpu = NULL;
	p->proc = NULL;
}

int bpf_probes_ring_fd(const struct bpf_probes *p)
{
	return bpf_map__fd(p->proc->maps.fr_events);
}

int bpf_probes_add_pid(struct bpf_probes *p, uint32_t pid)
{
	uint32_t v = FR_PID_TRACED;
	return bpf_map_update_elem(bpf_map__fd(p->proc->maps.fr_pids), &pid, &v, BPF_ANY);
}

uint32_t bpf_probes_pid_state(const struct bpf_probes *p, uint32_t pid)
{
	uint32_t v = 0;
	if (bpf_map_lookup_elem(bpf_map__fd(p->proc->maps.fr_pids), &pid, &v))
		return 0;
	return v;
}

void bpf_probes_forget_pid(struct bpf_probes *p, uint32_t pid)
{
	uint32_t v = 0;
	/* only forget processes that exited; a reused pid may be traced again */
	if (!bpf_map_lookup_elem(bpf_map__fd(p->proc->maps.fr_pids), &pid, &v) &&
	    v != FR_PID_TRACED)
		bpf_map_delete_elem(bpf_map__fd(p->proc->maps.fr_pids), &pid);
}

void bpf_probes_drops(const struct bpf_probes *p,
		      struct fr_drop_slot out[FR_PROBE_MAX][FR_DROP_REASON_MAX])
{
	int ncpu = libbpf_num_possible_cpus();
	struct fr_drop_slot *vals;

	memset(out, 0, sizeof(struct fr_drop_slot) * FR_PROBE_MAX * FR_DROP_REASON_MAX);
	if (ncpu <= 0 || !(vals = calloc((size_t)ncpu, sizeof(*vals))))
		return;
	for (uint32_t k = 0; k < FR_PROBE_MAX * FR_DROP_REASON_MAX; k++) {
		struct fr_drop_slot *o = &out[k / FR_DROP_REASON_MAX][k % FR_DROP_REASON_MAX];
		if (bpf_map_lookup_elem(bpf_map__fd(p->proc->maps.fr_drops), &k, vals))
			continue;
		for (int c = 0; c < ncpu; c++) {
			if (!vals[c].count)
				continue;
			if (!o->count || vals[c].first_ns < o->first_ns)
				o->first_ns = vals[c].first_ns;
			if (vals[c].last_ns > o->last_ns)
				o->last_ns = vals[c].last_ns;
			o->count += vals[c].count;
		}
	}
	free(vals);
}

uint64_t bpf_probes_rdma_empty_polls(const struct bpf_probes *p)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals, total = 0;
	uint32_t zero = 0;

	if (!p->rdma || ncpu <= 0 || !(vals = calloc((size_t)ncpu, sizeof(*vals))))
		return 0;
	if (!bpf_map_lookup_elem(bpf_map__fd(p->rdma->maps.fr_rdma_empty_polls), &zero, vals))
		for (int c = 0; c < ncpu; c++)
			total += vals[c];
	free(vals);
	return total;
}

int bpf_probes_py_procs_fd(const struct bpf_probes *p)
{
	return bpf_map__fd(p->proc->maps.fr_py_procs);
}
