/* Incremental symbol tables (see sym_collector.h). */
#include "symbols/sym_collector.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inspect/elf_info.h"
#include "events.h"

struct sym_file {
	bool loaded;      /* tried to load the symbol table */
	bool usable;
	struct elf_symtab tab;
	uint8_t *written; /* per symbol: already in the trace */
	uint32_t *pending; /* symbol indices to write at the next flush */
	size_t n_pending, cap_pending;
};

void sym_collector_init(struct sym_collector *c, struct dso_table *dsos)
{
	memset(c, 0, sizeof(*c));
	c->dsos = dsos;
	pthread_mutex_init(&c->lock, NULL);
}

static void free_file(struct sym_file *f)
{
	if (!f)
		return;
	elf_symtab_free(&f->tab);
	free(f->written);
	free(f->pending);
}

static void *load_kernel(void *arg)
{
	struct sym_file *k = arg;
	k->usable = kallsyms_load("/proc/kallsyms", &k->tab) == 0;
	k->loaded = true;
	return NULL;
}

void sym_collector_kernel_preload(struct sym_collector *c)
{
	if (c->kernel || c->kernel_loading || !(c->kernel = calloc(1, sizeof(*c->kernel))))
		return;
	/* without a thread, file_for loads it when first needed */
	c->kernel_loading = pthread_create(&c->kernel_loader, NULL, load_kernel, c->kernel) == 0;
}

void sym_collector_kernel_wait(struct sym_collector *c)
{
	if (!c->kernel_loading)
		return;
	pthread_join(c->kernel_loader, NULL);
	c->kernel_loading = false;
}

void sym_collector_destroy(struct sym_collector *c)
{
	sym_collector_kernel_wait(c);
	for (uint32_t i = 0; i < c->n_files; i++)
		free_file(&c->files[i]);
	free(c->files);
	free_file(c->kernel);
	free(c->kernel);
	for (size_t i = 0; i < c->n_queue; i++)
		free(c->queue[i].ips);
	for (size_t i = 0; i < c->n_retry; i++)
		free(c->retry[i].ips);
	free(c->queue);
	free(c->retry);
	pthread_mutex_destroy(&c->lock);
}

static int append(struct pending_stack **v, size_t *n, size_t *cap, struct pending_stack s)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 256;
		struct pending_stack *p = realloc(*v, nc * sizeof(*p));
		if (!p)
			return -1;
		*v = p;
		*cap = nc;
	}
	(*v)[(*n)++] = s;
	return 0;
}

void sym_collector_push(struct sym_collector *c, uint32_t pid, const uint64_t *k,
			uint16_t nk, const uint64_t *u, uint16_t nu)
{
	struct pending_stack s = {.pid = pid, .n_kernel = nk, .n_user = nu};
	s.ips = malloc(((size_t)nk + nu) * sizeof(uint64_t) + 1);
	if (!s.ips)
		return;
	/* a stack may have no kernel (or no user) part: k or u is then NULL */
	if (nk)
		memcpy(s.ips, k, nk * sizeof(uint64_t));
	if (nu)
		memcpy(s.ips + nk, u, nu * sizeof(uint64_t));
	pthread_mutex_lock(&c->lock);
	if (append(&c->queue, &c->n_queue, &c->cap_queue, s))
		free(s.ips);
	pthread_mutex_unlock(&c->lock);
}

static struct sym_file *file_for(struct sym_collector *c, uint32_t dso_id)
{
	if (dso_id == KERNEL_DSO_ID) {
		sym_collector_kernel_wait(c);
		if (!c->kernel)
			c->kernel = calloc(1, sizeof(*c->kernel));
		if (c->kernel && !c->kernel->loaded) {
			c->kernel->loaded = true;
			c->kernel->usable = kallsyms_load("/proc/kallsyms", &c->kernel->tab) == 0;
		}
		return c->kernel;
	}
	if (dso_id >= c->n_files) {
		uint32_t n = dso_id + 64;
		struct sym_file *f = realloc(c->files, n * sizeof(*f));
		if (!f)
			return NULL;
		memset(f + c->n_files, 0, (n - c->n_files) * sizeof(*f));
		c->files = f;
		c->n_files = n;
	}
	struct sym_file *f = &c->files[dso_id];
	if (!f->loaded) {
		const struct dso *d = dso_table_get(c->dsos, dso_id);
		f->loaded = true;
		if (d) {
			/* never the bare path: it may name another file by now,
			 * one the traced process could not read */
			int fd = d->fd >= 0 ? d->fd : dso_table_reopen(d);
			f->usable = fd >= 0 && elf_load_symtab_debug(fd, d->build_id, d->build_id_len,
								     &f->tab, NULL) == 0;
			if (fd >= 0 && fd != d->fd)
				close(fd);
		}
		if (!f->usable)
			c->files_unreadable++;
	}
	return f;
}

/* Marks the symbol covering offset (and offset-1) as needed. */
static void need(struct sym_collector *c, uint32_t dso_id, uint64_t offset)
{
	struct sym_file *f = file_for(c, dso_id);
	if (!f || !f->usable || !f->tab.n)
		return;
	if (!f->written && !(f->written = calloc(f->tab.n, 1)))
		return;
	for (int back = 0; back < 2; back++) {
		if (back && offset == 0)
			break;
		const struct elf_sym *s = elf_symtab_find(&f->tab, offset - (uint64_t)back);
		if (!s)
			continue;
		size_t idx = (size_t)(s - f->tab.syms);
		if (f->written[idx])
			continue;
		if (f->n_pending == f->cap_pending) {
			size_t cap = f->cap_pending ? f->cap_pending * 2 : 64;
			uint32_t *p = realloc(f->pending, cap * sizeof(*p));
			if (!p)
				return;
			f->pending = p;
			f->cap_pending = cap;
		}
		f->written[idx] = 1;
		f->pending[f->n_pending++] = (uint32_t)idx;
	}
}

/* A stack whose addresses stay unmapped (JIT code) is not retried forever. */
#define MAX_TRIES 3

/* false when a user address has no known mapping yet */
static bool resolve(struct sym_collector *c, struct pending_stack *s, bool final)
{
	bool complete = true;

	for (uint16_t i = 0; i < s->n_user; i++) {
		uint64_t ip = s->ips[s->n_kernel + i];
		struct mapping m;
		if (!dso_table_find_mapping_locked(c->dsos, s->pid, ip, &m)) {
			complete = false;
			continue;
		}
		if (m.dso_id)
			need(c, m.dso_id, ip - m.start + m.pgoff);
	}
	if (!complete && !final && ++s->tries < MAX_TRIES)
		return false;
	for (uint16_t i = 0; i < s->n_kernel; i++)
		need(c, KERNEL_DSO_ID, s->ips[i]);
	return true;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static void emit(struct sym_collector *c, struct frec_builder *b, uint32_t dso_id,
		 struct sym_file *f)
{
	const struct dso *d = dso_id == KERNEL_DSO_ID ? NULL : dso_table_get(c->dsos, dso_id);
	const char *path = d ? d->path : "[kernel.kallsyms]";
	size_t path_len = strnlen(path, 4096), strtab_len = 0;

	qsort(f->pending, f->n_pending, sizeof(uint32_t), cmp_u32);
	for (size_t i = 0; i < f->n_pending; i++)
		strtab_len += strlen(f->tab.syms[f->pending[i]].name) + 1;
	size_t syms_at = FR_ALIGN8(sizeof(struct fr_rec_dso) + path_len);
	size_t str_at = syms_at + f->n_pending * sizeof(struct fr_dso_sym);
	size_t size = FR_ALIGN8(str_at + strtab_len);
	uint8_t *rec = size < (1u << 30) ? frec_builder_reserve(b, (uint32_t)size) : NULL;
	if (!rec)
		return;
	memset(rec, 0, size);
	struct fr_rec_dso *r = (struct fr_rec_dso *)rec;
	r->h.size = (uint32_t)size;
	r->h.type = FR_REC_DSO;
	r->dso_id = dso_id;
	r->nsyms = (uint32_t)f->n_pending;
	r->strtab_len = (uint32_t)strtab_len;
	r->path_len = (uint16_t)path_len;
	r->kind = dso_id == KERNEL_DSO_ID ? 1 : 0;
	if (d && d->build_id_len) {
		r->build_id_len = d->build_id_len;
		memcpy(r->build_id, d->build_id, d->build_id_len);
	}
	memcpy(rec + sizeof(*r), path, path_len);
	struct fr_dso_sym *syms = (struct fr_dso_sym *)(rec + syms_at);
	char *strtab = (char *)rec + str_at;
	size_t name_off = 0;
	for (size_t i = 0; i < f->n_pending; i++) {
		const struct elf_sym *s = &f->tab.syms[f->pending[i]];
		size_t len = strlen(s->name) + 1;
		syms[i].offset = s->offset;
		syms[i].size = s->size > UINT32_MAX ? UINT32_MAX : (uint32_t)s->size;
		syms[i].name_off = (uint32_t)name_off;
		memcpy(strtab + name_off, s->name, len);
		name_off += len;
	}
	frec_builder_commit(b, 0);
	c->dso_records++;
	c->symbols_written += f->n_pending;
	f->n_pending = 0;
}

void sym_collector_flush(struct sym_collector *c, struct frec_builder *b, bool final)
{
	struct pending_stack *batch;
	size_t n;

	pthread_mutex_lock(&c->lock);
	batch = c->queue;
	n = c->n_queue;
	c->queue = NULL;
	c->n_queue = c->cap_queue = 0;
	pthread_mutex_unlock(&c->lock);

	/* earlier misses first: their mappings may have arrived since */
	size_t w = 0;
	for (size_t i = 0; i < c->n_retry; i++) {
		if (resolve(c, &c->retry[i], final))
			free(c->retry[i].ips);
		else
			c->retry[w++] = c->retry[i];
	}
	c->n_retry = w;
	for (size_t i = 0; i < n; i++) {
		if (resolve(c, &batch[i], final) ||
		    append(&c->retry, &c->n_retry, &c->cap_retry, batch[i]))
			free(batch[i].ips);
	}
	free(batch);

	for (uint32_t id = 0; id < c->n_files; id++)
		if (c->files[id].n_pending)
			emit(c, b, id, &c->files[id]);
	if (c->kernel && c->kernel->n_pending)
		emit(c, b, KERNEL_DSO_ID, c->kernel);
}
