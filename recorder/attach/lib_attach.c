/* Library discovery and attach reporting (see lib_attach.h). */
#include "attach/lib_attach.h"
#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attach/needed_libs.h"
#include "inspect/safe_open.h"

void lib_attach_init(struct lib_attach *la, struct bpf_probes *probes, bool quiet)
{
	memset(la, 0, sizeof(*la));
	la->probes = probes;
	la->quiet = quiet;
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
