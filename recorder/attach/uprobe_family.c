/* Per-family uprobe attachment (see uprobe_family.h). */
#include "attach/uprobe_family.h"

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "call_state.h"
#include "inspect/elf_info.h"

/* The kernel attaches uprobes by path, not by fd.  /proc/self/fd/N names
 * the inode the fd holds: the probes go to the file whose symbols were read,
 * whatever its name leads to by now. */
static void fd_path(int fd, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/self/fd/%d", fd);
}

#define ATTACH_UPROBE_MULTI 48     /* BPF_TRACE_UPROBE_MULTI (kernel 6.6) */
#define UPROBE_MULTI_RETURN 1      /* BPF_F_UPROBE_MULTI_RETURN */

bool uprobe_multi_supported(void)
{
	static int known; /* 0 unknown, 1 yes, -1 no */
	if (!known) {
		struct btf *btf = btf__load_vmlinux_btf();
		known = -1;
		if (btf) {
			int id = btf__find_by_name_kind(btf, "bpf_attach_type", BTF_KIND_ENUM);
			const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;
			const struct btf_enum *e = t ? btf_enum(t) : NULL;
			for (int i = 0; t && i < btf_vlen(t); i++)
				if (!strcmp(btf__name_by_offset(btf, e[i].name_off), "BPF_TRACE_UPROBE_MULTI"))
					known = 1;
			btf__free(btf);
		}
	}
	return known > 0;
}

void uprobe_multi_prepare(struct bpf_program *prog)
{
	bpf_program__set_expected_attach_type(prog, (enum bpf_attach_type)ATTACH_UPROBE_MULTI);
}

/* link_create for uprobe_multi, spelled out: libbpf 1.1 predates it. */
static int multi_link(struct bpf_program *prog, const char *path, const uint64_t *offsets,
		      const uint64_t *cookies, uint32_t cnt, bool retprobe)
{
	union {
		uint8_t raw[128];
		struct {
			uint32_t prog_fd, target_fd, attach_type, flags;
			uint64_t path, offsets, ref_ctr_offsets, cookies;
			uint32_t cnt, multi_flags, pid;
		} lc;
	} attr;
	memset(&attr, 0, sizeof(attr));
	attr.lc.prog_fd = (uint32_t)bpf_program__fd(prog);
	attr.lc.attach_type = ATTACH_UPROBE_MULTI;
	attr.lc.path = (uint64_t)(uintptr_t)path;
	attr.lc.offsets = (uint64_t)(uintptr_t)offsets;
	attr.lc.cookies = (uint64_t)(uintptr_t)cookies;
	attr.lc.cnt = cnt;
	attr.lc.multi_flags = retprobe ? UPROBE_MULTI_RETURN : 0;
	return (int)syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
}

static int keep_fd(struct uprobe_family *f, int fd)
{
	if (f->n_link_fds == f->cap_link_fds) {
		size_t cap = f->cap_link_fds ? f->cap_link_fds * 2 : 16;
		int *n = realloc(f->link_fds, cap * sizeof(*n));
		if (!n)
			return -1;
		f->link_fds = n;
		f->cap_link_fds = cap;
	}
	f->link_fds[f->n_link_fds++] = fd;
	return 0;
}

void uprobe_family_init(struct uprobe_family *f)
{
	pthread_mutex_init(&f->lock, NULL);
	f->files = NULL;
	f->n_files = f->cap_files = 0;
	f->links = NULL;
	f->n_links = f->cap_links = 0;
	f->functions_attached = 0;
	f->multi = false;
	f->link_fds = NULL;
	f->n_link_fds = f->cap_link_fds = 0;
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

/* The BPF cookie of a symbol's probes (fr_family.h). */
static uint64_t symbol_cookie(const struct fr_family_symbol *s)
{
	return FR_COOKIE(s->func, s->flags, s->extra);
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

/* Multi mode: one link per entry program (its functions) and one return
 * link, each a single system call. */
static void attach_file_multi(struct uprobe_family *f, const char *path, const uint64_t *offsets,
			      uint8_t (*code)[8], struct attach_result *res)
{
	uint64_t *offs = calloc(f->n_symbols, sizeof(*offs));
	uint64_t *cookies = calloc(f->n_symbols, sizeof(*cookies));
	uint64_t *roffs = calloc(f->n_symbols, sizeof(*roffs));
	uint64_t *rcookies = calloc(f->n_symbols, sizeof(*rcookies));
	bool *take = calloc(f->n_symbols, sizeof(*take));
	uint32_t n_ret = 0;

	if (!offs || !cookies || !roffs || !rcookies || !take)
		goto out;
	for (size_t i = 0; i < f->n_symbols; i++) {
		bool dup = false;
		for (size_t j = 0; j < i && !dup; j++)
			dup = offsets[j] == offsets[i]; /* an alias: attached under its first name */
		take[i] = offsets[i] && !dup;
		if (take[i])
			res->found++;
	}
	for (int prog = 0; prog < FR_FAMILY_MAX_ENTRY_PROGS; prog++) {
		uint32_t n = 0;
		if (!f->entry_progs[prog])
			continue;
		for (size_t i = 0; i < f->n_symbols; i++) {
			const struct fr_family_symbol *s = &f->symbols[i];
			if (!take[i] || s->entry != prog)
				continue;
			offs[n] = offsets[i];
			cookies[n++] = symbol_cookie(s);
		}
		if (!n)
			continue;
		int fd = multi_link(f->entry_progs[prog], path, offs, cookies, n, false);
		if (fd < 0) {
			if (!res->error[0])
				snprintf(res->error, sizeof(res->error), "cannot attach %u functions: %s",
					 n, strerror(errno));
			for (size_t i = 0; i < f->n_symbols; i++)
				if (take[i] && f->symbols[i].entry == prog)
					take[i] = false;
			continue;
		}
		keep_fd(f, fd);
	}
	for (size_t i = 0; i < f->n_symbols; i++) {
		const struct fr_family_symbol *s = &f->symbols[i];
		if (!take[i] || s->no_return || !f->exit_prog)
			continue;
		roffs[n_ret] = offsets[i];
		rcookies[n_ret++] = symbol_cookie(s);
	}
	if (n_ret) {
		int fd = multi_link(f->exit_prog, path, roffs, rcookies, n_ret, true);
		if (fd < 0) {
			if (!res->error[0])
				snprintf(res->error, sizeof(res->error), "cannot attach the returns of %u "
					 "functions: %s", n_ret, strerror(errno));
			for (size_t i = 0; i < f->n_symbols; i++)
				if (!f->symbols[i].no_return)
					take[i] = false;
		} else {
			keep_fd(f, fd);
		}
	}
	for (size_t i = 0; i < f->n_symbols; i++) {
		if (!take[i])
			continue;
		res->attached++;
		f->functions_attached++;
		if (!uprobe_insn_emulated(code[i])) {
			res->single_stepped++;
			append_name(res->slow, sizeof(res->slow), f->symbols[i].symbol);
		}
	}
out:
	free(offs);
	free(cookies);
	free(roffs);
	free(rcookies);
	free(take);
}

int uprobe_family_attach_file(struct uprobe_family *f, int fd,
			      struct attach_result *res, bool *already)
{
	struct stat st;
	const char **names;
	uint64_t *offsets;
	uint8_t (*code)[8];
	char path[64];
	int found;

	memset(res, 0, sizeof(*res));
	*already = false;
	if (fstat(fd, &st)) {
		snprintf(res->error, sizeof(res->error), "cannot stat the file: %s", strerror(errno));
		return -1;
	}
	fd_path(fd, path, sizeof(path));
	pthread_mutex_lock(&f->lock);
	if (seen_file(f, st.st_dev, st.st_ino, 0)) {
		pthread_mutex_unlock(&f->lock);
		*already = true;
		return 0;
	}
	names = calloc(f->n_symbols, sizeof(*names));
	offsets = calloc(f->n_symbols, sizeof(*offsets));
	code = calloc(f->n_symbols, sizeof(*code));
	if (!names || !offsets || !code) {
		pthread_mutex_unlock(&f->lock);
		free(names);
		free(offsets);
		free(code);
		return -1;
	}
	for (size_t i = 0; i < f->n_symbols; i++)
		names[i] = f->symbols[i].symbol;
	found = elf_find_functions(fd, names, f->n_symbols, offsets, code);
	if (found < 0) {
		pthread_mutex_unlock(&f->lock);
		free(names);
		free(offsets);
		free(code);
		return -1;
	}
	if (f->multi) {
		attach_file_multi(f, path, offsets, code, res);
	} else {
		for (size_t i = 0; i < f->n_symbols; i++) {
			const struct fr_family_symbol *s = &f->symbols[i];
			if (!offsets[i])
				continue;
			bool dup = false;
			for (size_t j = 0; j < i; j++)
				if (offsets[j] == offsets[i])
					dup = true; /* an alias: attached under its first name */
			if (dup)
				continue;
			res->found++;
			uint64_t cookie = symbol_cookie(s);
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
	}
	pthread_mutex_unlock(&f->lock);
	free(names);
	free(offsets);
	free(code);
	return 0;
}

int uprobe_family_attach_offset(struct uprobe_family *f, int fd, uint64_t offset,
				uint64_t cookie, int entry, struct attach_result *res)
{
	struct stat st;
	uint8_t code[8] = {0};
	char path[64];
	int ret = 0;

	memset(res, 0, sizeof(*res));
	if (fstat(fd, &st)) {
		snprintf(res->error, sizeof(res->error), "cannot stat the file: %s", strerror(errno));
		return -1;
	}
	fd_path(fd, path, sizeof(path));
	if (pread(fd, code, sizeof(code), (off_t)offset) != (ssize_t)sizeof(code))
		memset(code, 0, sizeof(code));
	pthread_mutex_lock(&f->lock);
	if (seen_file(f, st.st_dev, st.st_ino, offset + 1)) {
		pthread_mutex_unlock(&f->lock);
		return 1;
	}
	res->found = 1;
	if (f->multi) {
		int in_fd = multi_link(f->entry_progs[entry], path, &offset, &cookie, 1, false);
		int out_fd = in_fd >= 0 && f->exit_prog ?
			multi_link(f->exit_prog, path, &offset, &cookie, 1, true) : -1;
		if (in_fd < 0 || (f->exit_prog && out_fd < 0)) {
			snprintf(res->error, sizeof(res->error), "cannot attach at offset 0x%llx: %s",
				 (unsigned long long)offset, strerror(errno));
			ret = -1;
		} else {
			res->attached = 1;
			f->functions_attached++;
			if (!uprobe_insn_emulated(code))
				res->single_stepped = 1;
		}
		if (in_fd >= 0)
			keep_fd(f, in_fd);
		if (out_fd >= 0)
			keep_fd(f, out_fd);
		pthread_mutex_unlock(&f->lock);
		return ret;
	}
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

struct destroy_slice {
	struct bpf_link **links;
	size_t n;
	int *fds; /* or uprobe_multi links' fds */
};

static void *destroy_links(void *arg)
{
	struct destroy_slice *s = arg;
	for (size_t i = 0; i < s->n; i++) {
		if (s->fds)
			close(s->fds[i]);
		else
			bpf_link__destroy(s->links[i]);
	}
	return NULL;
}

/* Removing a uprobe waits for an RCU grace period (~0.1 s each on this kind
 * of VM): one after another, 100 probes keep the recorder 10 s in its exit.
 * The waits overlap when the removals run side by side. */
int uprobe_family_attach_offsets(struct uprobe_family *f, int fd,
				 const uint64_t *offsets, const uint64_t *cookies, int n,
				 bool *attached, struct attach_result *res)
{
	uint64_t offs[8], cks[8];
	struct stat st;
	char path[64];
	int m = 0;

	memset(res, 0, sizeof(*res));
	for (int i = 0; i < n; i++)
		attached[i] = false;
	if (!f->multi || n > 8) {
		/* one at a time */
		int ret = 0;
		for (int i = 0; i < n; i++) {
			struct attach_result one;
			int rc = uprobe_family_attach_offset(f, fd, offsets[i], cookies[i], 0, &one);
			attached[i] = rc == 0;
			res->attached += rc == 0;
			res->single_stepped += one.single_stepped;
			if (rc < 0) {
				snprintf(res->error, sizeof(res->error), "%s", one.error);
				ret = -1;
			}
		}
		return ret;
	}
	if (fstat(fd, &st)) {
		snprintf(res->error, sizeof(res->error), "cannot stat the file: %s", strerror(errno));
		return -1;
	}
	fd_path(fd, path, sizeof(path));
	pthread_mutex_lock(&f->lock);
	for (int i = 0; i < n; i++) {
		bool dup = false;
		for (int j = 0; j < i; j++)
			dup = dup || offsets[j] == offsets[i];
		if (dup || seen_file(f, st.st_dev, st.st_ino, offsets[i] + 1))
			continue;
		uint8_t code[8] = {0};
		if (pread(fd, code, sizeof(code), (off_t)offsets[i]) == (ssize_t)sizeof(code) &&
		    !uprobe_insn_emulated(code))
			res->single_stepped++;
		offs[m] = offsets[i];
		cks[m] = cookies[i];
		attached[i] = true;
		m++;
	}
	int ret = 0;
	if (m) {
		int in_fd = multi_link(f->entry_progs[0], path, offs, cks, (uint32_t)m, false);
		int out_fd = in_fd >= 0 && f->exit_prog ?
			multi_link(f->exit_prog, path, offs, cks, (uint32_t)m, true) : -1;
		if (in_fd < 0 || (f->exit_prog && out_fd < 0)) {
			snprintf(res->error, sizeof(res->error), "cannot attach %d functions: %s", m,
				 strerror(errno));
			for (int i = 0; i < n; i++)
				attached[i] = false;
			ret = -1;
		} else {
			res->attached = m;
			f->functions_attached += (uint32_t)m;
		}
		if (in_fd >= 0)
			keep_fd(f, in_fd);
		if (out_fd >= 0)
			keep_fd(f, out_fd);
	}
	pthread_mutex_unlock(&f->lock);
	return ret;
}

void uprobe_family_detach(struct uprobe_family *f)
{
	enum { MAX_THREADS = 32 };
	pthread_t threads[MAX_THREADS];
	struct destroy_slice slices[MAX_THREADS];
	size_t n_threads = 0;

	pthread_mutex_lock(&f->lock);
	/* the links, then the uprobe_multi links' fds (each close is one
	 * grace period too: 0.17 s for the rdma family's two, one after the
	 * other), shared out among the threads */
	size_t total = f->n_links + f->n_link_fds;
	size_t per = (total + MAX_THREADS - 1) / MAX_THREADS;
	for (size_t at = 0; per && at < total && n_threads < MAX_THREADS;) {
		struct destroy_slice *sl = &slices[n_threads];
		if (at < f->n_links) {
			size_t n = f->n_links - at < per ? f->n_links - at : per;
			*sl = (struct destroy_slice){f->links + at, n, NULL};
			at += n;
		} else {
			size_t k = at - f->n_links;
			size_t n = f->n_link_fds - k < per ? f->n_link_fds - k : per;
			*sl = (struct destroy_slice){NULL, n, f->link_fds + k};
			at += n;
		}
		if (pthread_create(&threads[n_threads], NULL, destroy_links, sl))
			destroy_links(sl); /* no thread: do it here */
		else
			n_threads++;
	}
	for (size_t i = 0; i < n_threads; i++)
		pthread_join(threads[i], NULL);
	f->n_links = 0;
	f->n_link_fds = 0;
	pthread_mutex_unlock(&f->lock);
}

void uprobe_family_destroy(struct uprobe_family *f)
{
	uprobe_family_detach(f);
	free(f->links);
	free(f->files);
	free(f->link_fds);
	f->link_fds = NULL;
	f->links = NULL;
	f->files = NULL;
	pthread_mutex_destroy(&f->lock);
}
