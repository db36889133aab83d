/* Library discovery and attach reporting (see lib_attach.h). */
#include "attach/lib_attach.h"
#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attach/needed_libs.h"
#include "hmap.h"
#include "inspect/elf_info.h"
#include "inspect/safe_open.h"

void lib_attach_init(struct lib_attach *la, struct bpf_probes *probes, bool quiet)
{
	memset(la, 0, sizeof(*la));
	la->probes = probes;
	la->quiet = quiet;
	hmap_init(&la->scanned);
	pthread_mutex_init(&la->scanned_lock, NULL);
}

void lib_attach_destroy(struct lib_attach *la)
{
	if (!la->probes)
		return; /* never initialized */
	hmap_free(&la->scanned);
	free(la->all_names);
	la->all_names = NULL;
	la->n_all_names = 0;
	pthread_mutex_destroy(&la->scanned_lock);
	la->probes = NULL;
}

/* Under scanned_lock: every loaded family's names, gathered once. */
static bool gather_names(struct lib_attach *la)
{
	if (la->all_names)
		return true;
	size_t n = 0;
	for (int i = 0; i < la->probes->n_families; i++)
		n += la->probes->families[i]->n_symbols;
	const char **names = calloc(n ? n : 1, sizeof(*names));
	if (!names)
		return false;
	n = 0;
	for (int i = 0; i < la->probes->n_families; i++) {
		const struct uprobe_family *f = la->probes->families[i];
		for (size_t k = 0; k < f->n_symbols; k++)
			names[n++] = f->symbols[k].symbol;
	}
	la->all_names = names;
	la->n_all_names = n;
	return true;
}

/* Whether the file open at fd may hold a function of some family: false
 * only when one scan for all of them found none (now or at an earlier
 * mapping of the same file).  Any doubt (no memory, not an ELF file the
 * scan could read) is true: the families then look for themselves. */
static bool may_hold_functions(struct lib_attach *la, int fd, const struct stat *st)
{
	bool has = true;
	uint64_t seen;
	pthread_mutex_lock(&la->scanned_lock);
	if (hmap_get(&la->scanned, (uint64_t)st->st_dev, (uint64_t)st->st_ino, &seen)) {
		has = seen != 0;
	} else if (gather_names(la)) {
		uint64_t *offsets = calloc(la->n_all_names ? la->n_all_names : 1, sizeof(*offsets));
		int found = offsets ? elf_find_functions(fd, la->all_names, la->n_all_names,
							 offsets, NULL) : -1;
		free(offsets);
		if (found >= 0) {
			/* out of memory only forgets: scanned again at its next mapping */
			has = found > 0;
			hmap_put(&la->scanned, (uint64_t)st->st_dev, (uint64_t)st->st_ino, has);
		}
	}
	pthread_mutex_unlock(&la->scanned_lock);
	return has;
}

static void write_attach(struct frec_builder *b, uint32_t pid, uint16_t probe,
			 uint16_t status, const char *symbol, uint64_t gap_ns,
			 const char *text)
{
	size_t text_len = strnlen(text, 1024);
	uint32_t size = FR_ALIGN8(sizeof(struct fr_rec_attach) + text_len);
	uint64_t now = mono_ns();
	struct fr_rec_attach *r = frec_builder_reserve(b, size);

	if (!r)
		return;
	memset(r, 0, size);
	r->h.size = size;
	r->h.type = FR_REC_ATTACH;
	r->ts_ns = now;
	r->pid = pid;
	r->probe = probe;
	r->status = status;
	snprintf(r->symbol, sizeof(r->symbol), "%s", symbol ? symbol : "");
	r->gap_ns = gap_ns;
	r->text_len = (uint32_t)text_len;
	memcpy(r + 1, text, text_len);
	frec_builder_commit(b, now);
}

void lib_attach_try(struct lib_attach *la, struct frec_builder *b,
		    const struct mapped_file *m, uint64_t mapped_ns, unsigned only_bit)
{
	const char *path = m->path;
	uint32_t pid = m->pid;
	char text[600], when[96] = "";
	struct stat st;
	int fd;

	if (!path || path[0] != '/' || !la->probes->n_families)
		return;
	/* a regular file only, also by a trusted name: a FIFO would block
	 * this thread in open(2), a device's open can act */
	fd = pid ? dso_open_mapped(m, &st) : safe_open_regular(AT_FDCWD, path, 0, &st);
	if (fd < 0 && !only_bit)
		return; /* gone, or no longer the mapped file */
	int open_errno = errno;
	/* a file with none of the functions is opened and scanned once, not
	 * once per family; --lib names a file to be told about, every family */
	if (fd >= 0 && !only_bit && la->probes->n_families > 1 && !may_hold_functions(la, fd, &st)) {
		close(fd);
		return;
	}
	for (int i = 0; i < la->probes->n_families; i++) {
		struct uprobe_family *f = la->probes->families[i];
		const char *name = f->family->name;
		uint16_t probe = (uint16_t)f->family->id;
		struct attach_result res;
		bool already;

		if (only_bit && PROBE_BIT(f->family->id) != only_bit)
			continue;
		if (fd < 0) {
			memset(&res, 0, sizeof(res));
			snprintf(res.error, sizeof(res.error), "cannot open it: %s", strerror(open_errno));
		}
		if (fd < 0 || uprobe_family_attach_file(f, fd, &res, &already) < 0) {
			if (only_bit) { /* --lib named this file: say why it failed */
				snprintf(text, sizeof(text), "%s: %s", path, res.error[0] ? res.error : "not an ELF file");
				write_attach(b, pid, probe, FR_ATTACH_FAILED, "", 0, text);
				fprintf(stderr, "flightrec: %s: cannot attach to %s\n", name, text);
			}
			continue;
		}
		if (already || (!res.found && !only_bit))
			continue;
		uint64_t gap = mapped_ns ? mono_ns() - mapped_ns : 0;
		if (gap > la->gap_max_ns)
			la->gap_max_ns = gap;
		if (mapped_ns)
			snprintf(when, sizeof(when), " (pid %u, %.1f ms after it was mapped)", pid,
				 gap / 1e6);
		else
			snprintf(when, sizeof(when), " (before the command started)");
		if (!res.found) {
			snprintf(text, sizeof(text), "%s: none of the %s functions are in this file "
				 "(stripped? a different library?)", path, name);
			write_attach(b, pid, probe, FR_ATTACH_FAILED, "", gap, text);
			fprintf(stderr, "flightrec: %s: cannot attach to %s\n", name, text);
			continue;
		}
		if (res.attached)
			atomic_fetch_add(&la->files_attached[probe], 1);
		snprintf(text, sizeof(text), "%s: %d of %d functions attached%s%s", path,
			 res.attached, res.found, res.error[0] ? "; " : "", res.error);
		write_attach(b, pid, probe, res.attached ? FR_ATTACH_OK : FR_ATTACH_FAILED,
			     "", gap, text);
		if (!la->quiet || !res.attached)
			fprintf(stderr, "flightrec: %s: attached %d functions in %s%s\n", name,
				res.attached, path, when);
		if (res.error[0])
			fprintf(stderr, "flightrec: %s: in %s: %s\n", name, path, res.error);
		if (res.single_stepped) {
			snprintf(text, sizeof(text), "%s: %d functions start with an instruction the "
				 "kernel single-steps (about 15x the probe cost per call): %s", path,
				 res.single_stepped, res.slow);
			write_attach(b, pid, probe, FR_ATTACH_SINGLE_STEPPED, "", gap, text);
			fprintf(stderr, "flightrec: %s: note: %s\n", name, text);
		}
	}
	if (fd >= 0)
		close(fd);
}

struct prepare_ctx {
	struct lib_attach *la;
	struct frec_builder *b;
};

static void prepare_one(const char *path, void *ctx)
{
	struct prepare_ctx *p = ctx;
	lib_attach_try(p->la, p->b, &(struct mapped_file){.path = path}, 0, 0);
}

void lib_attach_prepare(struct lib_attach *la, struct frec_builder *b,
			const struct lib_opt *libs, int n_libs, char *const *command,
			int command_argc)
{
	struct prepare_ctx ctx = {la, b};

	for (int i = 0; i < n_libs; i++)
		lib_attach_try(la, b, &(struct mapped_file){.path = libs[i].path}, 0,
			       libs[i].probe);
	if (!command || !la->probes->n_families)
		return;
	needed_libs_walk(command[0], prepare_one, &ctx);
	/* a launcher's workers: `launch -- ./worker` or `mpirun ./worker`
	 * (paths among the arguments that are programs); Python workers load
	 * their libraries later with dlopen, found from the mappings */
	for (int i = 1; i < command_argc; i++)
		if (strchr(command[i], '/') && access(command[i], X_OK) == 0)
			needed_libs_walk(command[i], prepare_one, &ctx);
}
