/* Symbol tables for the trace (see symbol_writer.h).  Return addresses point
 * after the call, so for every ip both ip and ip-1 are covered: whichever
 * the analyzer looks up resolves. */
#include "symbol_writer.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf_info.h"
#include "events.h"

struct offsets {
	uint64_t *v;
	size_t n, cap;
};

static void push(struct offsets *o, uint64_t off)
{
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 64;
		uint64_t *v = realloc(o->v, cap * sizeof(*v));
		if (!v)
			return;
		o->v = v;
		o->cap = cap;
	}
	o->v[o->n++] = off;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void emit_dso(struct frec_builder *b, uint32_t dso_id, uint8_t kind,
		     const char *path, const uint8_t *bid, uint8_t bid_len,
		     const struct elf_symtab *tab, struct offsets *offs,
		     struct symbol_writer_stats *st)
{
	const struct elf_sym **used = NULL;
	size_t n_used = 0, strtab_len = 0, path_len = strnlen(path, 4096);

	qsort(offs->v, offs->n, sizeof(uint64_t), cmp_u64);
	if (tab && tab->n && offs->n)
		used = malloc(offs->n * sizeof(*used));
	for (size_t i = 0; used && i < offs->n; i++) {
		const struct elf_sym *s = elf_symtab_find(tab, offs->v[i]);
		if (s && (!n_used || used[n_used - 1] != s)) {
			used[n_used++] = s;
			strtab_len += strlen(s->name) + 1;
		}
	}
	size_t syms_at = FR_ALIGN8(sizeof(struct fr_rec_dso) + path_len);
	size_t str_at = syms_at + n_used * sizeof(struct fr_dso_sym);
	size_t size = FR_ALIGN8(str_at + strtab_len);
	if (size > UINT32_MAX / 2) {
		free(used);
		return;
	}
	uint8_t *rec = frec_builder_reserve(b, (uint32_t)size);
	if (!rec) {
		free(used);
		return;
	}
	memset(rec, 0, size);
	struct fr_rec_dso *d = (struct fr_rec_dso *)rec;
	d->h.size = (uint32_t)size;
	d->h.type = FR_REC_DSO;
	d->dso_id = dso_id;
	d->nsyms = (uint32_t)n_used;
	d->strtab_len = (uint32_t)strtab_len;
	d->path_len = (uint16_t)path_len;
	d->kind = kind;
	d->build_id_len = bid_len > 20 ? 20 : bid_len;
	if (bid_len)
		memcpy(d->build_id, bid, d->build_id_len);
	memcpy(rec + sizeof(*d), path, path_len);
	struct fr_dso_sym *syms = (struct fr_dso_sym *)(rec + syms_at);
	char *strtab = (char *)rec + str_at;
	size_t name_off = 0;
	for (size_t i = 0; i < n_used; i++) {
		size_t len = strlen(used[i]->name) + 1;
		syms[i].offset = used[i]->offset;
		syms[i].size = used[i]->size > UINT32_MAX ? UINT32_MAX : (uint32_t)used[i]->size;
		syms[i].name_off = (uint32_t)name_off;
		memcpy(strtab + name_off, used[i]->name, len);
		name_off += len;
	}
	frec_builder_commit(b, 0);
	st->dsos_written++;
	st->symbols_written += n_used;
	free(used);
}

void write_symbols(struct frec_builder *b, const struct stack_table *stacks,
		   struct dso_table *dsos, struct symbol_writer_stats *st)
{
	struct offsets *per_dso = calloc(dsos->n_dsos + 1, sizeof(*per_dso));
	struct offsets kernel = {0};
	size_t n = stack_table_count(stacks);

	memset(st, 0, sizeof(*st));
	if (!per_dso)
		return;
	dso_table_finish(dsos);
	for (uint32_t id = 1; id <= n; id++) {
		struct stack_entry e;
		if (!stack_table_get(stacks, id, &e))
			continue;
		for (uint16_t i = 0; i < e.n_kernel; i++) {
			push(&kernel, e.ips[i]);
			push(&kernel, e.ips[i] - 1);
		}
		for (uint16_t i = 0; i < e.n_user; i++) {
			uint64_t ip = e.ips[e.n_kernel + i];
			const struct mapping *m = dso_table_find_mapping(dsos, e.pid, ip);
			if (!m || !m->dso_id || m->dso_id > dsos->n_dsos)
				continue;
			push(&per_dso[m->dso_id], ip - m->start + m->pgoff);
			if (ip > m->start)
				push(&per_dso[m->dso_id], ip - 1 - m->start + m->pgoff);
		}
	}
	for (uint32_t id = 1; id <= dsos->n_dsos; id++) {
		struct offsets *o = &per_dso[id];
		if (!o->n)
			continue;
		const struct dso *d = dso_table_get(dsos, id);
		struct elf_symtab tab;
		int fd = d->fd >= 0 ? d->fd : open(d->path, O_RDONLY | O_CLOEXEC);
		int ok = fd >= 0 && elf_load_symtab(fd, &tab) == 0;
		if (!ok)
			st->dsos_unreadable++;
		emit_dso(b, id, 0, d->path, d->build_id, d->build_id_len, ok ? &tab : NULL, o, st);
		if (ok)
			elf_symtab_free(&tab);
		if (fd >= 0 && fd != d->fd)
			close(fd);
		free(o->v);
	}
	if (kernel.n) {
		struct elf_symtab tab;
		int ok = kallsyms_load("/proc/kallsyms", &tab) == 0;
		emit_dso(b, KERNEL_DSO_ID, 1, "[kernel.kallsyms]", NULL, 0, ok ? &tab : NULL,
			 &kernel, st);
		if (ok)
			elf_symtab_free(&tab);
	}
	free(kernel.v);
	free(per_dso);
}
