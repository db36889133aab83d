/* The align stage of the decoder: puts a set of trace files on one clock
 * before any model or output sees an event.  The realtime anchors are
 * known after the metadata pass; the cross-node correction needs events
 * that happened at the same instant on every node (the exits of a
 * collective), so a private instance of the model that knows them
 * (model_ops.align_types: model_nccl) is fed those records alone, read
 * from the EVENTS chunks pass 1 noted, and finished: its finish calls
 * align_refine().  No stack is resolved and nothing is counted here (the
 * events pass does both), so the cost is one more decompression of the
 * EVENTS chunks, paid only by sets of two or more files when a command
 * asked for an aligning model.  Then the offsets are final. */
#include "trace_set_impl.h"
#include "align.h"
#include "fr_family.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int trace_set_clocks_final(const struct trace_set *ts)
{
	return ts->clocks_final;
}

/* The noted EVENTS chunks of one file, the aligner's records fed.  A chunk
 * that cannot be read is left to the events pass, which reports it. */
static int feed_file(struct trace_set *ts, struct ts_prefetch *pf, uint32_t file_index,
		     const struct model_ops *ops, void *state)
{
	struct trace_file *f = &ts->files[file_index];
	struct ts_pass *ps = f->pass;
	for (size_t i = 0; ps && i < ps->n_refs; i++) {
		if (ps->refs[i].late_only)
			continue;
		struct frec_chunk c;
		struct frec_error io_err = { 0 };
		if (ts_prefetch_get(pf, file_index, i, &c) != 1) {
			int rc = frec_read_chunk_at(f->reader, ps->refs[i].offset, &c, &io_err);
			/* damage is recorded by the reader at this read: the
			 * events pass does not read (and record) it again */
			if (rc == 0)
				ps->refs[i].damaged = 1;
			if (rc != 1)
				continue;
		}
		size_t cursor = 0;
		const struct fr_rec_hdr *rec;
		while (frec_chunk_next_record(f->reader, &c, &cursor, &rec) == 1) {
			struct fr_rec_hdr h;
			memcpy(&h, rec, sizeof(h));
			if (!ts_type_in(ops->align_types, h.type))
				continue;
			const struct frec_schema_entry *known = fr_schema_find(h.type);
			if (!known || h.size < known->fixed_size)
				continue;
			if (ops->feed(state, file_index, rec)) {
				ts_prefetch_file_done(pf, file_index);
				return -1;
			}
		}
	}
	ts_prefetch_file_done(pf, file_index);
	frec_release_buffers(f->reader);
	return 0;
}

int trace_set_align_pass(struct trace_set *ts, struct frec_error *err)
{
	const struct model_ops *ops = NULL;
	for (size_t i = 0; i < ts->n_models && !ops; i++)
		if (ts->models[i].ops->align_types)
			ops = ts->models[i].ops;
	int rc = 0;
	if (ops && ts->n_files >= 2) {
		struct model_opts align = { .align_only = 1 };
		void *state = ops->create(&align);
		if (!state) {
			frec_error_set(err, "flightrec-analyze", -1, ENOMEM,
				       "out of memory aligning clocks");
			return -1;
		}
		struct ts_prefetch *pf = ts_prefetch_start(ts, 1);
		for (size_t i = 0; !rc && i < ts->n_files; i++)
			if (feed_file(ts, pf, (uint32_t)i, ops, state)) {
				frec_error_set(err, "flightrec-analyze", -1, ENOMEM,
					       "out of memory aligning clocks");
				rc = -1;
			}
		ts_prefetch_stop(pf);
		if (!rc)
			rc = ops->finish(state, ts, err);
		for (size_t i = 0; !rc && ops->adopt && i < ts->n_models; i++)
			if (ts->models[i].ops == ops)
				ops->adopt(ts->models[i].state, state);
		ops->destroy(state);
	}
	ts->clocks_final = 1;
	return rc;
}
