/* make_sparse_trace IN OUT [none] [bound]: a copy of a --stack dwarf trace whose raw stacks
 * (FR_REC_USTACK) are rewritten sparse by the recorder's own planner
 * (recorder/symbols/ustack_sparse.c), given the trace's unwind images and every
 * mapping it records, as the analyzer sees them.  Every other record is
 * copied as it is.  For tests/integration/test_ustack_sparse.py: the copy
 * must decode to the same stacks as the original.  Prints how many copies
 * became sparse, stayed whole, and their stack bytes before and after.
 * "none" writes the chunks uncompressed (the fuzz corpus's form).  "bound"
 * also cuts each copy at its thread's stack top as the planner found it in
 * earlier copies, as the kernel does with the recorder's hints
 * (fr_ustack_tops, bpf/ustack.bpf.h), trusting and forgetting tops as the
 * recorder does (recorder/drain/stack_tops.h); it prints how many copies
 * it cut and how many of those fell short. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fr_family.h"
#include "frec_reader.h"
#include "frec_writer.h"
#include "drain/stack_tops.h"
#include "symbols/ustack_sparse.h"

#define CHUNK_TYPES 4

/* "bound": the tops the recorder would hand the kernel (drain/stack_tops.h) */
#define MAX_TOPS 4096
static struct { uint32_t pid, tid; uint64_t top; } tops[MAX_TOPS];
static size_t n_tops;
static struct stack_tops policy;
static int bound;
static unsigned long long bounded, bounded_short;

static uint64_t *top_of(uint32_t pid, uint32_t tid, int add)
{
	for (size_t i = 0; i < n_tops; i++)
		if (tops[i].pid == pid && tops[i].tid == tid)
			return &tops[i].top;
	if (!add || n_tops == MAX_TOPS)
		return NULL;
	tops[n_tops].pid = pid;
	tops[n_tops].tid = tid;
	tops[n_tops].top = 0;
	return &tops[n_tops++].top;
}

static int fail(const char *what)
{
	fprintf(stderr, "make_sparse_trace: %s\n", what);
	return 1;
}

/* Pass 1: the trace's mappings and unwind images. */
static int learn(struct frec_reader *r, struct dso_table *dsos, struct ustack_sparse *sp)
{
	struct frec_chunk ch;
	struct frec_error err;
	while (frec_next_chunk(r, &ch, &err) == 1) {
		size_t cursor = 0;
		const struct fr_rec_hdr *rec;
		if (ch.hdr.chunk_type != FR_CHUNK_EVENTS && ch.hdr.chunk_type != FR_CHUNK_META)
			continue;
		while (frec_chunk_next_record(r, &ch, &cursor, &rec) == 1) {
			if (rec->type == FR_REC_MAPPING && rec->size >= sizeof(struct fr_rec_mapping)) {
				struct fr_rec_mapping m;
				memcpy(&m, rec, sizeof(m));
				dso_table_add_mapping(dsos, &(struct mapping){
					.pid = m.pid, .dso_id = m.dso_id, .start = m.start,
					.end = m.end, .pgoff = m.pgoff, .ts_ns = m.ts_ns });
			} else if (rec->type == FR_REC_UNWIND &&
				   rec->size >= sizeof(struct fr_rec_unwind)) {
				struct fr_rec_unwind u;
				memcpy(&u, rec, sizeof(u));
				if (u.image_len > rec->size - sizeof(u))
					continue;
				uint8_t *image = malloc(u.image_len ? u.image_len : 1);
				if (!image)
					return -1;
				memcpy(image, (const uint8_t *)rec + sizeof(u), u.image_len);
				if (ustack_sparse_add_image(sp, u.dso_id, image, u.image_len))
					return -1;
			}
		}
	}
	return 0;
}

/* One USTACK, sparse when the planner can: appended to b. */
static int rewrite_ustack(struct ustack_sparse *sp, struct frec_builder *b,
			  const struct fr_rec_hdr *rec, uint64_t ts)
{
	struct fr_rec_ustack u;
	memcpy(&u, rec, sizeof(u));
	size_t head = sizeof(u) + (size_t)u.n_kernel * 8 + (size_t)u.n_py * 16;
	const uint8_t *p = (const uint8_t *)rec;
	uint32_t keep_len, regs_used;
	const uint8_t *keep;
	bool ran_off;
	uint64_t top = 0, *known = bound ? top_of(u.pid, u.tid, 0) : NULL;
	if (head > rec->size || u.stack_len > rec->size - head || (u.flags & FR_USTACK_SPARSE))
		return frec_builder_append(b, rec, rec->size, ts);
	if (known && *known > u.regs[7] && *known - u.regs[7] < u.stack_len) {
		u.stack_len = (uint32_t)(*known - u.regs[7]);
		u.flags |= FR_USTACK_BOUNDED;
		bounded++;
	}
	bool planned = ustack_sparse_plan(sp, u.pid, u.tid, u.regs, p + head, u.stack_len,
					  &keep_len, &keep, &regs_used, &top, &ran_off);
	int cut_short = (u.flags & FR_USTACK_BOUNDED) && !top && ran_off;
	bounded_short += cut_short;
	uint64_t set;
	if (bound && (top || cut_short)) {
		/* what the recorder then tells the kernel */
		uint64_t *t = top_of(u.pid, u.tid, 1);
		switch (stack_tops_note(&policy, u.pid, u.tid, top, cut_short, &set)) {
		case STACK_TOP_SET:
			if (t)
				*t = set;
			break;
		case STACK_TOP_FORGET:
			if (t)
				*t = 0;
			break;
		case STACK_TOP_KEEP:
			break;
		}
	}
	if (!planned && !(u.flags & FR_USTACK_BOUNDED))
		return frec_builder_append(b, rec, rec->size, ts);
	if (!planned) { /* written whole, as the kernel cut it */
		keep_len = u.stack_len;
		keep = NULL;
		regs_used = ~0u;
	}
	uint32_t size = (uint32_t)((head + keep_len + 7) & ~(size_t)7);
	uint8_t *out = frec_builder_reserve(b, size);
	if (!out)
		return -1;
	memset(out, 0, size);
	memcpy(out, p, head);
	for (uint32_t i = 0; i < keep_len; i++)
		out[head + i] = !keep || keep[i] ? p[head + i] : 0;
	for (int i = 0; i < FR_USTACK_REGS; i++)
		if (!(regs_used & 1u << i))
			u.regs[i] = 0;
	u.h.size = size;
	u.stack_len = keep_len;
	u.flags |= keep ? FR_USTACK_SPARSE : 0;
	memcpy(out, &u, sizeof(u));
	frec_builder_commit(b, ts);
	return 0;
}

int main(int argc, char **argv)
{
	int none = 0;
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "none"))
			none = 1;
		else if (!strcmp(argv[i], "bound"))
			bound = 1;
		else
			argc = 0;
	}
	if (argc < 3)
		return fail("usage: make_sparse_trace IN OUT [none] [bound]");
	struct frec_error err;
	struct frec_reader *r, *r2;
	if (frec_open(argv[1], &r, &err) || frec_open(argv[1], &r2, &err))
		return fail("cannot open the input");
	struct dso_table dsos;
	dso_table_init(&dsos);
	struct ustack_sparse *sp = ustack_sparse_new(&dsos);
	if (!sp || learn(r, &dsos, sp))
		return fail("out of memory");

	const struct fr_file_hdr *h = frec_file_header(r2);
	struct frec_file_info info = { .host = h->host, .start_mono_ns = h->start_mono_ns,
				       .start_real_ns = h->start_real_ns, .like = h };
	struct frec_writer_opts opts;
	frec_writer_opts_default(&opts);
	opts.schema = fr_schema_table(&opts.n_schema);
	if (none)
		opts.codec = FR_CODEC_NONE;
	struct frec_writer *w;
	if (frec_writer_open(argv[2], &info, &opts, &w, &err))
		return fail("cannot write the output");
	struct frec_builder *b[CHUNK_TYPES] = { 0 };
	struct frec_chunk ch;
	while (frec_next_chunk(r2, &ch, &err) == 1) {
		uint16_t type = ch.hdr.chunk_type;
		if (type != FR_CHUNK_EVENTS && type != FR_CHUNK_META)
			continue; /* the writer makes its own SCHEMA, INDEX and END */
		if (!b[type] && !(b[type] = frec_builder_new(w, type)))
			return fail("out of memory");
		size_t cursor = 0;
		const struct fr_rec_hdr *rec;
		while (frec_chunk_next_record(r2, &ch, &cursor, &rec) == 1) {
			uint64_t ts = 0; /* an event's own time; metadata has none to give */
			if (rec->type < 0x100 && rec->size >= 16)
				memcpy(&ts, (const uint8_t *)rec + 8, sizeof(ts));
			int rc = rec->type == FR_REC_USTACK && rec->size >= sizeof(struct fr_rec_ustack)
					 ? rewrite_ustack(sp, b[type], rec, ts)
					 : frec_builder_append(b[type], rec, rec->size, ts);
			if (rc)
				return fail("out of memory");
		}
		frec_builder_flush(b[type]);
	}
	for (int i = 0; i < CHUNK_TYPES; i++)
		frec_builder_free(b[i]);
	uint32_t n_probes = 0;
	const struct fr_probe_stats *probes = frec_end_probes(r2, &n_probes);
	if (frec_writer_close(w, frec_end(r2), probes, n_probes, &err))
		return fail("cannot close the output");
	struct ustack_sparse_stats st = ustack_sparse_stats(sp);
	printf("sparse %llu whole %llu bytes_in %llu bytes_kept %llu bounded %llu bounded_short %llu\n",
	       (unsigned long long)st.sparse, (unsigned long long)st.whole,
	       (unsigned long long)st.bytes_in, (unsigned long long)st.bytes_kept, bounded,
	       bounded_short);
	ustack_sparse_free(sp);
	dso_table_destroy(&dsos);
	frec_close(r);
	frec_close(r2);
	return 0;
}
