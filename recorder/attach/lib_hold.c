/* The dlopen hold of the library families (see lib_hold.h).
 *
 * Which files are held for: those whose name starts like a library the
 * families probe (below).  The BPF side cannot read symbol tables, and a
 * hold for every library a dlopen maps would stop a PyTorch import
 * hundreds of times; a file of another name that holds CUDA functions is
 * still attached when mapped, without a hold.
 *
 * When a held process is let go: after every mapping made before its note
 * arrived is handled, since the kernel writes a mapping's perf record when
 * the mapping is made, before dlopen returns, and the note is sent at the
 * return: the caller drains the perf rings between lib_hold_collect and
 * lib_hold_release.  Files are marked handled (fr_lib_ready) then, whether
 * the family found its functions in them or not: holding again for them
 * would not change what is attached. */
#include "attach/lib_hold.h"
#include "clock.h"
#include "inspect/safe_open.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const struct {
	const char *prefix;
	enum fr_probe_id probe;
} names[] = {
	{"libcudart", FR_PROBE_CUDA},  /* libcudart.so.12, a wheel's libcudart-HASH.so */
	{"libcuda.so", FR_PROBE_CUDA}, /* the driver's API */
	{"libnccl", FR_PROBE_NCCL},
	/* the CUDA injection library: the driver dlopens it at cuInit, and its
	 * first launch is right after */
	{"libflightrec_cupti", FR_PROBE_GPU},
};

static const struct fr_family_symbol dlopen_symbols[] = {
	{"dlopen", 0, 0, 0, 0, false},
	{"dlmopen", 1, 0, 0, 0, false},
};

void lib_hold_init(struct lib_hold *lh)
{
	memset(lh, 0, sizeof(*lh));
	attach_hold_init(&lh->hold);
	uprobe_family_init(&lh->dlopen);
}

static int on_note(void *ctx, void *data, size_t size)
{
	struct lib_hold *lh = ctx;
	if (size < sizeof(struct lib_hold_note))
		return 0;
	if (lh->n_pending == (int)(sizeof(lh->pending) / sizeof(lh->pending[0])))
		lib_hold_release(lh); /* never leave a process stopped for want of a slot */
	memcpy(&lh->pending[lh->n_pending++], data, sizeof(struct lib_hold_note));
	return 0;
}

/* The file names of the loaded families, for the BPF side. */
static int fill_names(struct lib_hold *lh, struct bpf_object *obj)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, "fr_lib_names");
	uint32_t k = 0;

	if (!m)
		return -1;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct lib_hold_name n;
		if (!bpf_probes_uprobes(lh->probes, names[i].probe))
			continue;
		memset(&n, 0, sizeof(n));
		snprintf(n.prefix, sizeof(n.prefix), "%s", names[i].prefix);
		n.probe = (uint8_t)names[i].probe;
		if (bpf_map_update_elem(bpf_map__fd(m), &k, &n, BPF_ANY))
			return -1;
		k++;
	}
	return k ? 0 : 1;
}

/* The C library the command will most likely run with: the recorder's own;
 * a static recorder has none, and then the first libc.so.6 found in the
 * usual places.  NULL when there is none. */
static const char *recorder_libc(Dl_info *self)
{
	static const char *const usual[] = {
		"/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6",
		"/lib64/libc.so.6", "/usr/lib64/libc.so.6", "/usr/lib/libc.so.6",
	};

	/* a libc function nobody interposes (unlike malloc) */
	if (dladdr((void *)gnu_get_libc_version, self) && self->dli_fname &&
	    self->dli_fname[0] == '/')
		return self->dli_fname;
	for (size_t i = 0; i < sizeof(usual) / sizeof(usual[0]); i++)
		if (access(usual[i], R_OK) == 0)
			return usual[i];
	return NULL;
}

int lib_hold_start(struct lib_hold *lh, struct bpf_probes *p, bool quiet, char *err,
		   size_t errlen)
{
	struct bpf_object *obj = p->objs[FR_PROBE_PROC];
	struct bpf_program *enter, *exit_prog;
	Dl_info self;

	lh->probes = p;
	lh->quiet = quiet;
	if (!p->lib_hold_loaded) {
		if (p->lib_hold_why[0]) {
			snprintf(err, errlen, "%s", p->lib_hold_why);
			return -1;
		}
		return 0; /* no library family recorded */
	}
	enter = bpf_object__find_program_by_name(obj, "fr_dlopen_enter");
	exit_prog = bpf_object__find_program_by_name(obj, "fr_dlopen_exit");
	struct bpf_map *notes = bpf_object__find_map_by_name(obj, "fr_lib_notes");
	if (!enter || !exit_prog || !notes) {
		snprintf(err, errlen, "the process tracker has no dlopen hold programs");
		return -1;
	}
	int rc = fill_names(lh, obj);
	if (rc)
		return rc < 0 ? (snprintf(err, errlen, "cannot set the library names"), -1) : 0;
	lh->notes = ring_buffer__new(bpf_map__fd(notes), on_note, lh, NULL);
	if (!lh->notes) {
		snprintf(err, errlen, "cannot read the hold's notes: %s", strerror(errno));
		return -1;
	}
	lh->dlopen.family = fr_family_by_id(FR_PROBE_PROC);
	lh->dlopen.symbols = dlopen_symbols;
	lh->dlopen.n_symbols = sizeof(dlopen_symbols) / sizeof(dlopen_symbols[0]);
	lh->dlopen.entry_progs[0] = enter;
	lh->dlopen.exit_prog = exit_prog;
	lh->dlopen.multi = uprobe_multi_supported();
	if (attach_hold_start(&lh->hold, exit_prog, "fr_lib", err, errlen))
		return -1;
	lh->on = true;
	/* the command starts from the recorder's libc (a fork of it) and
	 * almost always maps the same file after its exec: probed before it
	 * runs.  Other libcs are probed when mapped. */
	const char *libc = recorder_libc(&self);
	if (libc) {
		int fd = safe_open_regular(AT_FDCWD, libc, 0, NULL);
		lib_hold_on_file(lh, libc, fd);
		if (fd >= 0)
			close(fd);
	}
	if (!lh->dlopen.functions_attached) {
		snprintf(err, errlen, "cannot attach to dlopen in %s", libc ? libc : "the C library");
		lib_hold_stop(lh);
		return -1;
	}
	return 0;
}

int lib_hold_fd(const struct lib_hold *lh)
{
	return lh->on && lh->notes ? ring_buffer__epoll_fd(lh->notes) : -1;
}

void lib_hold_on_file(struct lib_hold *lh, const char *name, int fd)
{
	const char *base = strrchr(name, '/');
	struct attach_result res;
	bool already;

	base = base ? base + 1 : name;
	if (!lh->on || fd < 0 || strncmp(base, "libc.so", 7))
		return;
	if (uprobe_family_attach_file(&lh->dlopen, fd, &res, &already) == 0 && !already &&
	    !res.attached && !lh->quiet)
		fprintf(stderr, "flightrec: cannot attach to dlopen in %s%s%s: libraries it "
			"loads are attached after they are mapped\n", name,
			res.error[0] ? ": " : "", res.error);
}

int lib_hold_collect(struct lib_hold *lh)
{
	if (lh->notes)
		ring_buffer__consume(lh->notes);
	return lh->n_pending;
}

void lib_hold_release(struct lib_hold *lh)
{
	uint64_t now = mono_ns();

	for (int i = 0; i < lh->n_pending; i++) {
		const struct lib_hold_note *n = &lh->pending[i];
		bool in_time;
		for (uint32_t k = 0; k < n->n_keys && k < LIB_HOLD_KEYS; k++)
			attach_hold_mark_ready(&lh->hold, &n->keys[k]);
		in_time = attach_hold_release(&lh->hold, n->tgid, n->held_ns);
		uint64_t held = now > n->held_ns ? now - n->held_ns : 0;
		if (held > lh->held_ns_max)
			lh->held_ns_max = held;
		lh->holds++;
		if (!in_time) {
			/* it ran before its library was attached */
			lh->late++;
			for (int p = 0; p < FR_PROBE_MAX; p++)
				if (n->probes & (1u << p))
					bpf_probes_count_drop(lh->probes, (enum fr_probe_id)p,
							      FR_DROP_NOT_ATTACHED, now);
		}
		if (!lh->quiet)
			fprintf(stderr, "flightrec: pid %u %s %.2f ms at dlopen's return while a "
				"library it mapped was attached\n", n->tgid,
				in_time ? "held" : "let go late (past the hold's bound), after",
				held / 1e6);
	}
	lh->n_pending = 0;
}

void lib_hold_stop(struct lib_hold *lh)
{
	if (!lh->probes)
		return; /* stopped already, or never started */
	lib_hold_collect(lh);
	lib_hold_release(lh);
	attach_hold_stop(&lh->hold);
	uprobe_family_destroy(&lh->dlopen);
	if (lh->notes)
		ring_buffer__free(lh->notes);
	lh->notes = NULL;
	lh->on = false;
	lh->probes = NULL;
}
