/* BPF object lifecycle (see bpf_probes.h): one loader for every family,
 * driven by its descriptor.  Family-specific here: the proc object's map
 * settings (it creates the shared maps), the rdma data path and its
 * empty-poll counter, and the words of the messages for proc and the step
 * marker (they exist when needed, so their failures are fatal). */
#include "attach/bpf_probes.h"
#include "clock.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "attach/bpf_knobs.h"
#include "attach/bpf_objects.h"

#define FR_PID_TRACED 1

/* Maps every object shares: created by the proc object, handed to the
 * others before they load. */
static const char *const shared_maps[] = {
	"fr_events", "fr_pids", "fr_drops", "fr_ustack_scratch", "fr_fp_scratch", "fr_py_procs",
	"fr_py_tstate", "fr_ustack_tops",
};

enum stage { STAGE_OPEN, STAGE_LOAD, STAGE_ATTACH };

/* Records why a family is missing; returns -errno (message in fe) when that
 * is fatal: for proc and the step marker always, for the others when the
 * user named them with --probes. */
static int family_failed(struct bpf_probes *p, const struct fr_family *f,
			 const struct probes_config *o, int err, enum stage stage, struct frec_error *fe)
{
	const int fatal = err < 0 ? err : -EINVAL;
	const char *why = strerror(-fatal);
	const char *verb = stage == STAGE_ATTACH ? "attach" : "load";

	if (f->id == FR_PROBE_PROC) {
		if (stage == STAGE_OPEN)
			snprintf(fe->what, sizeof(fe->what), "cannot open the BPF objects: %s", why);
		else if (stage == STAGE_LOAD)
			snprintf(fe->what, sizeof(fe->what), "cannot load the BPF process tracker: %s (run with -v "
				 "for the verifier log)", why);
		else
			snprintf(fe->what, sizeof(fe->what), "cannot attach the process tracker (sched "
				 "tracepoints): %s", why);
		return fatal;
	}
	if (f->id == FR_PROBE_STEP) {
		snprintf(fe->what, sizeof(fe->what), "cannot %s the step marker probe: %s", verb, why);
		return fatal;
	}
	snprintf(p->why_not[f->id], sizeof(p->why_not[0]), "%s failed: %s", verb, why);
	if (o->probes_given || !f->selectable) {
		snprintf(fe->what, sizeof(fe->what), "cannot %s probe family '%s': %s", verb, f->name, why);
		return fatal;
	}
	return 0;
}

/* Whether the options ask for family f: chosen with --probes (all by
 * default), or, for the families that exist when needed, needed. */
static bool wanted(const struct fr_family *f, const struct probes_config *o)
{
	if (f->selectable)
		return o->probes & PROBE_BIT(f->id);
	if (f->attach == FR_ATTACH_SYMBOL)
		return o->step_marker != NULL;
	return true; /* proc */
}

/* Opens family f's object from its ELF image, under its skeleton's name
 * (so its maps keep the names they always had: fr_cuda_.rodata ...).
 * NULL with errno set on failure. */
static struct bpf_object *open_object(const struct fr_family *f, const void *elf, size_t size)
{
	char name[64];
	snprintf(name, sizeof(name), "fr_%s_bpf", f->name);
	LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = name);
	return bpf_object__open_mem(elf, size, &opts);
}

/* The dlopen hold's programs (bpf/lib_hold.bpf.h): attached by lib_hold.c,
 * not at their sections' hooks; loaded only when wanted. */
static const char *const lib_hold_progs[] = {"fr_dlopen_enter", "fr_dlopen_exit"};

static void set_lib_hold_progs(struct bpf_object *obj, bool load)
{
	for (size_t i = 0; i < sizeof(lib_hold_progs) / sizeof(lib_hold_progs[0]); i++) {
		struct bpf_program *prog = bpf_object__find_program_by_name(obj, lib_hold_progs[i]);
		if (!prog)
			continue;
		bpf_program__set_autoattach(prog, false);
		bpf_program__set_autoload(prog, load);
	}
}

/* The proc object creates the shared maps: their sizes are set here. */
static int size_shared_maps(struct bpf_object *obj, const struct probes_config *o)
{
	struct bpf_map *events = bpf_object__find_map_by_name(obj, "fr_events");
	struct bpf_map *scratch = bpf_object__find_map_by_name(obj, "fr_ustack_scratch");
	struct bpf_map *fp_scratch = bpf_object__find_map_by_name(obj, "fr_fp_scratch");
	if (!events || !scratch || !fp_scratch)
		return -ENOENT;
	bpf_map__set_max_entries(events, o->buffer_mib << 20);
	/* FR_USTACK_SLOTS stack scratch slots per CPU, one per level of
	 * programs nesting on a CPU, in the mode's map only (~36 KiB each in
	 * dwarf mode, 1.7 KiB with frame pointers) */
	uint32_t slots = (uint32_t)libbpf_num_possible_cpus() * FR_USTACK_SLOTS;
	int err = bpf_map__set_max_entries(scratch, o->stack_dwarf ? slots : 1);
	return err ? err : bpf_map__set_max_entries(fp_scratch, o->stack_dwarf ? 1 : slots);
}

static int reuse_shared_maps(struct bpf_probes *p, struct bpf_object *obj)
{
	for (size_t i = 0; i < sizeof(shared_maps) / sizeof(shared_maps[0]); i++) {
		struct bpf_map *mine = bpf_object__find_map_by_name(obj, shared_maps[i]);
		struct bpf_map *theirs =
			bpf_object__find_map_by_name(p->objs[FR_PROBE_PROC], shared_maps[i]);
		if (!mine || !theirs)
			continue;
		int err = bpf_map__reuse_fd(mine, bpf_map__fd(theirs));
		if (err)
			return err;
	}
	return 0;
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

/* The program called name in f's object; NULL with fe filled when missing. */
static struct bpf_program *program(struct bpf_probes *p, const struct fr_family *f,
				   const char *name, struct frec_error *fe)
{
	struct bpf_program *prog = bpf_object__find_program_by_name(p->objs[f->id], name);
	if (!prog)
		snprintf(fe->what, sizeof(fe->what), "probe family '%s': its BPF object has no program %s", f->name,
			 name);
	return prog;
}

/* A loaded uprobe family: what it attaches (the descriptor's symbols, or
 * the one --step-marker names) and with which programs.  -ENOENT with fe
 * filled when the object lacks a program the descriptor names. */
static int add_uprobes(struct bpf_probes *p, const struct fr_family *f,
		       const struct probes_config *o, struct frec_error *fe)
{
	struct uprobe_family *u = &p->uprobes[f->id];

	uprobe_family_init(u);
	u->family = f;
	u->multi = uprobe_multi_supported();
	if (f->attach == FR_ATTACH_SYMBOL) {
		p->marker_symbol = (struct fr_family_symbol){ o->step_marker, 0, 0, 0, 0, true };
		u->symbols = &p->marker_symbol;
		u->n_symbols = 1;
	} else {
		u->symbols = f->symbols;
		u->n_symbols = f->n_symbols;
	}
	/* one family per probe id: a second one is a programming error */
	assert(p->n_families < FR_PROBE_MAX);
	p->families[p->n_families++] = u;
	for (int i = 0; i < FR_FAMILY_MAX_ENTRY_PROGS && f->entry_progs[i]; i++)
		if (!(u->entry_progs[i] = program(p, f, f->entry_progs[i], fe)))
			return -ENOENT;
	if (f->exit_prog && !(u->exit_prog = program(p, f, f->exit_prog, fe)))
		return -ENOENT;

	if (f->id == FR_PROBE_RDMA) {
		/* rdma only: the data path has no exported symbols; rdma_datapath.c
		 * attaches these programs at the provider functions a live
		 * context's ops table names */
		struct uprobe_family *dp = &p->rdma_dp_family;
		uprobe_family_init(dp);
		dp->family = f;
		dp->multi = u->multi;
		if (!(dp->entry_progs[0] = program(p, f, "fr_rdma_dp_enter", fe)) ||
		    !(dp->exit_prog = program(p, f, "fr_rdma_dp_exit", fe)))
			return -ENOENT;
	}
	return 0;
}

/* A family between its opening and its load: opened and configured by
 * open_family, verified by load_pending (any thread: the kernel's
 * verification of one object, beside the others'), taken in or failed by
 * finish_family. */
struct pending_load {
	const struct fr_family *f;
	struct probes_config o;
	struct bpf_object *obj;
	bool dynptr;
	enum stage stage;
	int err;
	uint64_t load_ns;
};

/* 0 with pl ready to load (or holding the error of its opening, for
 * finish_family); -errno with fe filled when that is fatal at once. */
static int open_family(struct bpf_probes *p, const struct fr_family *f,
		       const struct probes_config *o, uint64_t cgroup_id, struct frec_error *fe,
		       struct pending_load *pl)
{
	size_t size = 0;
	memset(pl, 0, sizeof(*pl));
	pl->f = f;
	pl->o = *o;
	pl->stage = STAGE_OPEN;
	pl->dynptr = o->stack_dwarf && o->ustack_dynptr && bpf_object_elf(f->id, true, &size);
	const void *elf = bpf_object_elf(f->id, pl->dynptr, &size);
	if (!elf) {
		snprintf(fe->what, sizeof(fe->what), "probe family '%s': no BPF object in this build "
			 "(recorder/attach/bpf_objects.c)", f->name);
		return -ENOENT;
	}
	pl->obj = open_object(f, elf, size);
	pl->err = pl->obj ? 0 : -errno;
	if (pl->err)
		return 0;
	pl->stage = STAGE_LOAD;
	int rc = bpf_knobs_set(pl->obj, f, o, cgroup_id, fe);
	if (rc) {
		bpf_object__close(pl->obj);
		pl->obj = NULL;
		return rc;
	}
	if (f->id == FR_PROBE_PROC) {
		set_lib_hold_progs(pl->obj, p->lib_hold_loaded);
		pl->err = size_shared_maps(pl->obj, o);
	} else {
		pl->err = reuse_shared_maps(p, pl->obj);
	}
	prepare_uprobes(pl->obj);
	return 0;
}

static void *load_pending(void *arg)
{
	struct pending_load *pl = arg;
	uint64_t t0 = mono_ns();
	if (!pl->err)
		pl->err = bpf_object__load(pl->obj);
	pl->load_ns = mono_ns() - t0;
	return NULL;
}

static int load_family(struct bpf_probes *p, const struct fr_family *f,
		       const struct probes_config *o, uint64_t cgroup_id, struct frec_error *fe);

/* The loaded family taken in (its uprobes prepared), or its failure: 0
 * when loaded or skipped with its reason; -errno with fe filled when that
 * is fatal.  pl->obj is p's or closed afterwards. */
static int finish_family(struct bpf_probes *p, struct pending_load *pl, uint64_t cgroup_id,
			 struct frec_error *fe)
{
	const struct fr_family *f = pl->f;
	const struct probes_config *o = &pl->o;
	struct bpf_object *obj = pl->obj;
	int err = pl->err;

	pl->obj = NULL;
	p->load_ns[f->id] = pl->load_ns;
	if (err && pl->dynptr) {
		/* a kernel whose BTF names the kfunc but whose verifier refuses
		 * this use of it: the two-copy object, as on older kernels */
		bpf_object__close(obj);
		snprintf(p->ustack_fallback[f->id], sizeof(p->ustack_fallback[0]),
			 "the one-copy stack variant did not load (%s)", strerror(err < 0 ? -err : EINVAL));
		struct probes_config two_copies = *o;
		two_copies.ustack_dynptr = false;
		return load_family(p, f, &two_copies, cgroup_id, fe);
	}
	if (err) {
		bpf_object__close(obj);
		return family_failed(p, f, o, err, pl->stage, fe);
	}
	if (pl->dynptr)
		p->ustack_dynptr |= PROBE_BIT(f->id);
	p->objs[f->id] = obj;
	p->loaded |= PROBE_BIT(f->id);
	if (f->attach == FR_ATTACH_LIBRARY || f->attach == FR_ATTACH_SYMBOL)
		return add_uprobes(p, f, o, fe);
	if (f->attach == FR_ATTACH_PERF && !program(p, f, f->entry_progs[0], fe))
		return -ENOENT;
	return 0;
}

/* Opens, configures and loads family f, on this thread.  0 when loaded, or
 * skipped with its reason; -errno with fe filled when that is fatal. */
static int load_family(struct bpf_probes *p, const struct fr_family *f,
		       const struct probes_config *o, uint64_t cgroup_id, struct frec_error *fe)
{
	struct pending_load pl;
	int rc = open_family(p, f, o, cgroup_id, fe, &pl);
	if (rc)
		return rc;
	load_pending(&pl);
	return finish_family(p, &pl, cgroup_id, fe);
}

void bpf_probes_print_load(const struct bpf_probes *p, FILE *out)
{
	size_t n;
	const struct fr_family *const *fams = fr_families(&n);

	for (size_t i = 0; i < n; i++) {
		const struct fr_family *f = fams[i];
		struct bpf_program *prog;
		if (!p->objs[f->id])
			continue;
		fprintf(out, "flightrec: probe family %s loaded in %.1f ms; instructions verified:",
			f->name, p->load_ns[f->id] / 1e6);
		bpf_object__for_each_program(prog, p->objs[f->id]) {
			struct bpf_prog_info info = {0};
			__u32 len = sizeof(info);
			int fd = bpf_program__fd(prog);
			if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
				continue;
			fprintf(out, " %s %u", bpf_program__name(prog), info.verified_insns);
		}
		fputc('\n', out);
	}
}

int bpf_probes_load(struct bpf_probes *p, const struct probes_config *o,
		    uint64_t cgroup_id, struct frec_error *fe)
{
	const struct fr_family *proc = fr_family_by_id(FR_PROBE_PROC);
	size_t n;
	const struct fr_family *const *fams = fr_families(&n);

	memset(p, 0, sizeof(*p));
	p->events_fd = p->pids_fd = p->drops_fd = p->py_procs_fd = -1;
	/* proc first: its object creates the maps the others reuse */
	p->lib_hold_loaded = o->probes & (PROBE_BIT(FR_PROBE_CUDA) | PROBE_BIT(FR_PROBE_NCCL) |
					  PROBE_BIT(FR_PROBE_GPU));
	int rc = load_family(p, proc, o, cgroup_id, fe);
	if (rc) {
		if (!p->lib_hold_loaded)
			return rc;
		/* a kernel that refuses the hold's programs (no BTF for
		 * security_mmap_file ...) still records, without the hold */
		snprintf(p->lib_hold_why, sizeof(p->lib_hold_why), "cannot load the dlopen "
			 "hold's programs (%.200s)", fe->what);
		p->lib_hold_loaded = false;
		if ((rc = load_family(p, proc, o, cgroup_id, fe)))
			return rc;
	}
	struct bpf_object *obj = p->objs[FR_PROBE_PROC];
	p->events_fd = bpf_map__fd(bpf_object__find_map_by_name(obj, "fr_events"));
	p->pids_fd = bpf_map__fd(bpf_object__find_map_by_name(obj, "fr_pids"));
	p->drops_fd = bpf_map__fd(bpf_object__find_map_by_name(obj, "fr_drops"));
	p->py_procs_fd = bpf_map__fd(bpf_object__find_map_by_name(obj, "fr_py_procs"));
	/* the others verified side by side, each on a thread of its own (the
	 * kernel's verification is most of start-up), then taken in in their
	 * order, as one after another would */
	struct pending_load pending[FR_PROBE_MAX];
	pthread_t threads[FR_PROBE_MAX];
	bool threaded[FR_PROBE_MAX] = {false};
	size_t n_pending = 0;
	rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		if (fams[i] == proc || !wanted(fams[i], o) || n_pending == FR_PROBE_MAX)
			continue;
		rc = open_family(p, fams[i], o, cgroup_id, fe, &pending[n_pending]);
		if (!rc)
			n_pending++;
	}
	for (size_t i = 0; i < n_pending; i++)
		threaded[i] = pthread_create(&threads[i], NULL, load_pending, &pending[i]) == 0;
	for (size_t i = 0; i < n_pending; i++) {
		if (threaded[i])
			pthread_join(threads[i], NULL);
		else
			load_pending(&pending[i]);
	}
	for (size_t i = 0; i < n_pending; i++) {
		if (rc) { /* a family before was fatal: the rest only closed */
			bpf_object__close(pending[i].obj);
			continue;
		}
		rc = finish_family(p, &pending[i], cgroup_id, fe);
	}
	return rc;
}

static int keep_link(struct bpf_probes *p, enum fr_probe_id id, struct bpf_link *l)
{
	struct bpf_link **more = realloc(p->links[id], (size_t)(p->n_links[id] + 1) * sizeof(*more));
	if (!more)
		return -ENOMEM;
	p->links[id] = more;
	p->links[id][p->n_links[id]++] = l;
	return 0;
}

static void destroy_links(struct bpf_probes *p, enum fr_probe_id id)
{
	for (int i = 0; i < p->n_links[id]; i++)
		bpf_link__destroy(p->links[id][i]);
	p->n_links[id] = 0;
}

/* FR_ATTACH_AUTO: every program at the hook its section names (what the
 * skeleton's attach did). */
static int attach_programs(struct bpf_probes *p, const struct fr_family *f)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, p->objs[f->id]) {
		if (!bpf_program__autoload(prog) || !bpf_program__autoattach(prog))
			continue; /* attached by its own module (the dlopen hold's) */
		struct bpf_link *l = bpf_program__attach(prog);
		int err = l ? 0 : -errno;
		if (!err && (err = keep_link(p, f->id, l)))
			bpf_link__destroy(l);
		if (err) {
			destroy_links(p, f->id);
			return err;
		}
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

/* FR_ATTACH_PERF: the family's program on a CPU-clock perf event at --freq
 * on every CPU that is online. */
static int attach_perf(struct bpf_probes *p, const struct fr_family *f,
		       const struct probes_config *o)
{
	/* found when loaded (load_family) */
	struct bpf_program *prog = bpf_object__find_program_by_name(p->objs[f->id],
								    f->entry_progs[0]);
	int n = libbpf_num_possible_cpus();
	int last_err = 0;

	if (n <= 0)
		return -EINVAL;
	for (int cpu = 0; cpu < n; cpu++) {
		int fd = open_cpu_clock(o->freq_hz, cpu);
		if (fd < 0) {
			if (errno != ENODEV) /* ENODEV: CPU offline */
				last_err = -errno;
			continue;
		}
		struct bpf_link *l = bpf_program__attach_perf_event(prog, fd); /* owns fd */
		if (!l) {
			last_err = -errno;
			close(fd);
			continue;
		}
		if (keep_link(p, f->id, l)) {
			bpf_link__destroy(l);
			return -ENOMEM;
		}
	}
	return p->n_links[f->id] ? 0 : (last_err ? last_err : -ENODEV);
}

int bpf_probes_attach(struct bpf_probes *p, const struct probes_config *o,
		      struct frec_error *fe)
{
	size_t n;
	const struct fr_family *const *fams = fr_families(&n);

	for (size_t i = 0; i < n; i++) {
		const struct fr_family *f = fams[i];
		int err = 0;
		if (!p->objs[f->id])
			continue;
		switch (f->attach) {
		case FR_ATTACH_AUTO:
			err = attach_programs(p, f);
			break;
		case FR_ATTACH_PERF:
			err = attach_perf(p, f, o);
			break;
		case FR_ATTACH_LIBRARY:
		case FR_ATTACH_SYMBOL:
			break; /* attached to files as they are found (lib_attach.c) */
		}
		if (!err)
			p->attached |= PROBE_BIT(f->id);
		else if ((err = family_failed(p, f, o, err, STAGE_ATTACH, fe)))
			return err;
	}
	return 0;
}

struct uprobe_family *bpf_probes_uprobes(struct bpf_probes *p, enum fr_probe_id id)
{
	for (int i = 0; i < p->n_families; i++)
		if (p->families[i]->family->id == id)
			return p->families[i];
	return NULL;
}

static void *detach_family(void *f)
{
	uprobe_family_detach(f);
	return NULL;
}

void bpf_probes_detach(struct bpf_probes *p, struct uprobe_family *also)
{
	/* side by side: each family's removal waits for grace periods of its
	 * own (about 0.1 s each here), which overlap when they run together */
	pthread_t threads[FR_PROBE_MAX + 2];
	bool started[FR_PROBE_MAX + 2] = {false};
	struct uprobe_family *fams[FR_PROBE_MAX + 2];
	int n = 0;
	for (int i = 0; i < p->n_families && n < FR_PROBE_MAX; i++)
		fams[n++] = p->families[i];
	if (p->rdma_dp_family.family)
		fams[n++] = &p->rdma_dp_family;
	if (also)
		fams[n++] = also;
	for (int i = 0; i < n; i++)
		started[i] = pthread_create(&threads[i], NULL, detach_family, fams[i]) == 0;
	for (int i = 0; i < n; i++) {
		if (started[i])
			pthread_join(threads[i], NULL);
		else
			uprobe_family_detach(fams[i]);
	}
	/* the process tracker last: processes are followed to the end */
	for (int id = FR_PROBE_MAX - 1; id >= 0; id--)
		if (id != FR_PROBE_PROC)
			destroy_links(p, (enum fr_probe_id)id);
	destroy_links(p, FR_PROBE_PROC);
}

void bpf_probes_destroy(struct bpf_probes *p)
{
	for (int i = 0; i < p->n_families; i++)
		uprobe_family_destroy(p->families[i]);
	p->n_families = 0;
	if (p->rdma_dp_family.family)
		uprobe_family_destroy(&p->rdma_dp_family);
	bpf_probes_detach(p, NULL);
	for (int id = FR_PROBE_MAX - 1; id >= 0; id--) {
		free(p->links[id]);
		p->links[id] = NULL;
		bpf_object__close(p->objs[id]); /* proc last: it made the shared maps */
		p->objs[id] = NULL;
	}
}

int bpf_probes_ring_fd(const struct bpf_probes *p)
{
	return p->events_fd;
}

int bpf_probes_add_pid(struct bpf_probes *p, uint32_t pid)
{
	uint32_t v = FR_PID_TRACED;
	return bpf_map_update_elem(p->pids_fd, &pid, &v, BPF_ANY);
}

uint32_t bpf_probes_pid_state(const struct bpf_probes *p, uint32_t pid)
{
	uint32_t v = 0;
	if (bpf_map_lookup_elem(p->pids_fd, &pid, &v))
		return 0;
	return v;
}

void bpf_probes_forget_pid(struct bpf_probes *p, uint32_t pid)
{
	uint32_t v = 0;
	/* only forget processes that exited; a reused pid may be traced again */
	if (!bpf_map_lookup_elem(p->pids_fd, &pid, &v) && v != FR_PID_TRACED)
		bpf_map_delete_elem(p->pids_fd, &pid);
}

void bpf_probes_drops(const struct bpf_probes *p,
		      struct fr_drop_slot out[FR_PROBE_MAX][FR_DROP_REASON_MAX])
{
	int ncpu = libbpf_num_possible_cpus();
	struct fr_drop_slot *vals;

	memset(out, 0, sizeof(struct fr_drop_slot) * FR_PROBE_MAX * FR_DROP_REASON_MAX);
	for (int id = 0; id < FR_PROBE_MAX; id++)
		for (int why = 0; why < FR_DROP_REASON_MAX; why++) {
			const struct user_drop *u = &p->user_drops[id][why];
			out[id][why].count = atomic_load(&u->count);
			out[id][why].first_ns = atomic_load(&u->first_ns);
			out[id][why].last_ns = atomic_load(&u->last_ns);
		}
	if (ncpu <= 0 || !(vals = calloc((size_t)ncpu, sizeof(*vals))))
		return;
	for (uint32_t k = 0; k < FR_PROBE_MAX * FR_DROP_REASON_MAX; k++) {
		struct fr_drop_slot *o = &out[k / FR_DROP_REASON_MAX][k % FR_DROP_REASON_MAX];
		if (bpf_map_lookup_elem(p->drops_fd, &k, vals))
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

void bpf_probes_count_drop(struct bpf_probes *p, enum fr_probe_id probe,
			   enum fr_drop_reason reason, uint64_t at_ns)
{
	struct user_drop *u;
	if ((unsigned)probe >= FR_PROBE_MAX || (unsigned)reason >= FR_DROP_REASON_MAX)
		return;
	u = &p->user_drops[probe][reason];
	/* one thread counts (the tracking thread): first/last need no CAS */
	if (atomic_fetch_add(&u->count, 1) == 0 || at_ns < atomic_load(&u->first_ns))
		atomic_store(&u->first_ns, at_ns);
	if (at_ns > atomic_load(&u->last_ns))
		atomic_store(&u->last_ns, at_ns);
}

int bpf_probes_calls_fd(const struct bpf_probes *p, enum fr_probe_id id)
{
	const struct fr_family *f = fr_family_by_id(id);
	char name[64];
	if (!f || id >= FR_PROBE_MAX || !p->objs[id] || f->attach != FR_ATTACH_LIBRARY)
		return -1;
	/* named after the family, as in every uprobe family's BPF object */
	snprintf(name, sizeof(name), "fr_%s_calls", f->name);
	struct bpf_map *map = bpf_object__find_map_by_name(p->objs[id], name);
	return map ? bpf_map__fd(map) : -1;
}

/* rdma only: poll_cq calls that found nothing are counted in the kernel
 * (a per-CPU counter in the rdma object), not sent as events. */
uint64_t bpf_probes_rdma_empty_polls(const struct bpf_probes *p)
{
	struct bpf_map *map = p->objs[FR_PROBE_RDMA] ?
		bpf_object__find_map_by_name(p->objs[FR_PROBE_RDMA], "fr_rdma_empty_polls") : NULL;
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals, total = 0;
	uint32_t zero = 0;

	if (!map || ncpu <= 0 || !(vals = calloc((size_t)ncpu, sizeof(*vals))))
		return 0;
	if (!bpf_map_lookup_elem(bpf_map__fd(map), &zero, vals))
		for (int c = 0; c < ncpu; c++)
			total += vals[c];
	free(vals);
	return total;
}

int bpf_probes_py_procs_fd(const struct bpf_probes *p)
{
	return p->py_procs_fd;
}

int bpf_probes_ustack_tops_fd(const struct bpf_probes *p)
{
	struct bpf_object *obj = p->objs[FR_PROBE_PROC];
	struct bpf_map *m = obj ? bpf_object__find_map_by_name(obj, "fr_ustack_tops") : NULL;
	return m ? bpf_map__fd(m) : -1;
}
