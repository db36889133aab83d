/* Per-family uprobe attachment (see uprobe_family.h). */
#include "uprobe_family.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_info.h"

void uprobe_family_init(struct uprobe_family *f)
{
	pthread_mutex_init(&f->lock, NULL);
	f->files = NULL;
	f->n_files = f->cap_files = 0;
	f->links = NULL;
	f->n_links = f->cap_links = 0;
	f->functions_attached = 0;
}

static int keep_link(struct uprobe_family *f, struct bpf_link *l)
{
	if (f->n_links == f->cap_links) {
		size_t cap = f->cap_links ? f->cap_links * 2 : 64;
		struct bpf_link **n = realloc(f->links, cap * sizeof(*n));
		if (!n)
			return -1;
		f->links = n;
		f->cap_links = cap;
	}
	f->links[f->n_links++] = l;
	return 0;
}

static bool seen_file(struct uprobe_family *f, uint64_t dev, uint64_t ino, uint64_t offset)
{
	for (size_t i = 0; i < f->n_files; i++)
		if (f->files[i].dev == dev && f->files[i].ino == ino && f->files[i].offset == offset)
			return true;
	if (f->n_files == f->cap_files) {
		size_t cap = f->cap_files ? f->cap_files * 2 : 16;
		struct attached_file *n = realloc(f->files, cap * sizeof(*n));
		if (!n)
			return false;
		f->files = n;
		f->cap_files = cap;
	}
	f->files[f->n_files++] = (struct attached_file){dev, ino, offset};
	return false;
}

static struct bpf_link *attach_one(struct bpf_program *prog, const char *path,
				   uint64_t offset, uint64_t cookie, bool retprobe)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = cookie, .retprobe = retprobe);
	return bpf_program__attach_uprobe_opts(prog, -1, path, (size_t)offset, &opts);
}

static void append_name(char *buf, size_t len, const char *name)
{
	size_t used = strlen(buf);
	if (used + strlen(name) + 3 < len)
		snprintf(buf + used, len - used, "%s%s", used ? ", " : "", name);
}

int uprobe_family_attach_file(struct uprobe_family *f, const char *path,
			      struct attach_result *res, bool *already)
{
	struct stat st;
	const char **names;
	uint64_t *offsets;
	uint8_t (*code)[8];
	int fd, found;

	memset(res, 0, sizeof(*res));
	*already = false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		snprintf(res->error, sizeof(res->error), "cannot open %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	pthread_mutex_lock(&f->lock);
	if (seen_file(f, st.st_dev, st.st_ino, 0)) {
		pthread_mutex_unlock(&f->lock);
		close(fd);
		*already = true;
		return 0;
	}
	names = calloc(f->n_specs, sizeof(*names));
	offsets = calloc(f->n_specs, sizeof(*offsets));
	code = calloc(f->n_specs, sizeof(*code));
	if (!names || !offsets || !code) {
		pthread_mutex_unlock(&f->lock);
		free(names);
		free(offsets);
		free(code);
		close(fd);
		return -1;
	}
	for (size_t i = 0; i < f->n_specs; i++)
		names[i] = f->specs[i].symbol;
	found = elf_find_functions(fd, names, f->n_specs, offsets, code);
	close(fd);
	if (found < 0) {
		pthread_mutex_unlock(&f->lock);
		free(names);
		free(offsets);
		free(code);
		return -1;
	}
	for (size_t i = 0; i < f->n_specs; i++) {
		const struct uprobe_spec *s = &f->specs[i];
		if (!offsets[i])
			continue;
		bool dup = false;
		for (size_t j = 0; j < i; j++)
			if (offsets[j] == offsets[i])
				dup = true; /* an alias: attached under its first name */
		if (dup)
			continue;
		res->found++;
		uint64_t cookie = (uint64_t)s->func | (uint64_t)s->flags << 16 | (uint64_t)s->extra << 32;
		struct bpf_link *in = attach_one(f->entry_progs[s->entry], path, offsets[i], cookie, false);
		if (!in) {
			if (!res->error[0])
				snprintf(res->error, sizeof(res->error), "cannot attach %s: %s",
					 s->symbol, strerror(errno));
			continue;
		}
		keep_link(f, in);
		if (!s->no_return && f->exit_prog) {
			struct bpf_link *out = attach_one(f->exit_prog, path, offsets[i], cookie, true);
			if (!out) {
				if (!res->error[0])
					snprintf(res->error, sizeof(res->error),
						 "cannot attach the return of %s: %s", s->symbol,
						 strerror(errno));
				continue;
			}
			keep_link(f, out);
		}
		res->attached++;
		f->functions_attached++;
		if (!uprobe_insn_emulated(code[i])) {
			res->single_stepped++;
			append_name(res->slow, sizeof(res->slow), s->symbol);
		}
	}
	pthread_mutex_unlock(&f->lock);
	free(names);
	free(offsets);
	free(code);
	return 0;
}

int uprobe_family_attach_offset(struct uprobe_family *f, const char *path, uint64_t offset,
				uint64_t cookie, int entry, struct attach_result *res)
{
	struct stat st;
	uint8_t code[8] = {0};
	int fd, ret = 0;

	memset(res, 0, sizeof(*res));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		snprintf(res->error, sizeof(res->error), "cannot open %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (pread(fd, code, sizeof(code), (off_t)offset) != (ssize_t)sizeof(code))
		memset(code, 0, sizeof(code));
	close(fd);
	pthread_mutex_lock(&f->lock);
	if (seen_file(f, st.st_dev, st.st_ino, offset + 1)) {
		pthread_mutex_unlock(&f->lock);
		return 1;
	}
	res->found = 1;
	struct bpf_link *in = attach_one(f->entry_progs[entry], path, offset, cookie, false);
	struct bpf_link *out = in && f->exit_prog ?
		attach_one(f->exit_prog, path, offset, cookie, true) : NULL;
	if (!in || (f->exit_prog && !out)) {
		snprintf(res->error, sizeof(res->error), "cannot attach at offset 0x%llx: %s",
			 (unsigned long long)offset, strerror(errno));
		ret = -1;
	} else {
		res->attached = 1;
		f->functions_attached++;
		if (!uprobe_insn_emulated(code))
			res->single_stepped = 1;
	}
	if (in)
		keep_link(f, in);
	if (out)
		keep_link(f, out);
	pthread_mutex_unlock(&f->lock);
	return ret;
}

void uprobe_family_detach(struct uprobe_family *f)
{
	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < f->n_links; i++)
		bpf_link__destroy(f->links[i]);
	f->n_links = 0;
	pthread_mutex_unlock(&f->lock);
}

void uprobe_family_destroy(struct uprobe_family *f)
{
	uprobe_family_detach(f);
	free(f->links);
	free(f->files);
	f->links = NULL;
	f->files = NULL;
	pthread_mutex_destroy(&f->lock);
}
