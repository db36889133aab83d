/* A model's second look at the events (model_ops.revisit_*): after its
 * finish, the EVENTS chunks the events pass read are read again, file by
 * file, and the records of the model's revisit_types go to it alone, with
 * the stack ids the events pass gave them.  What the events pass found
 * damaged is damaged here too (the reader says so again, and the record is
 * not fed twice: the chunk is skipped as it was); a file whose read failed
 * in the events pass is read up to where it failed.  The cost is one more
 * decompression of the EVENTS chunks, paid only by a model that asked and
 * only when it wants it.  Not for the models' own logic. */
#include "trace_set_impl.h"
#include "fr_family.h"
#include "ts_progress.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int revisit_file(struct trace_set *ts, struct ts_prefetch *pf, uint32_t file_index,
			const struct model_ops *ops, void *state)
{
	struct trace_file *f = &ts->files[file_index];
	const struct ts_pass *ps = f->pass;
	int rc = 0;
	for (size_t i = 0; !rc && ps && i < ps->n_read; i++) {
		if (ps->refs[i].late_only)
			continue;
		struct frec_chunk c;
		struct frec_error io_err = { 0 };
		/* the prefetcher's queue follows the refs: asked for each one */
		if (ts_prefetch_get(pf, file_index, i, &c) != 1 &&
		    (ps->refs[i].damaged ||
		     frec_read_chunk_at(f->reader, ps->refs[i].offset, &c, &io_err) != 1))
			continue;
		size_t cursor = 0;
		const struct fr_rec_hdr *rec;
		while (!rc && frec_chunk_next_record(f->reader, &c, &cursor, &rec) == 1) {
			struct fr_rec_hdr h;
			memcpy(&h, rec, sizeof(h));
			if (h.type >= 0x100 || !ts_type_in(ops->revisit_types, h.type))
				continue;
			const struct frec_schema_entry *known = fr_schema_find(h.type);
			if (!known || h.size < known->fixed_size)
				continue;
			const struct fr_rec_hdr *fed = ts_event_as_fed(ts, f, (const uint8_t *)rec,
								       h.type, h.size);
			if (!fed || ops->revisit_feed(state, file_index, fed))
				rc = -1;
		}
	}
	ts_prefetch_file_done(pf, file_index);
	frec_release_buffers(f->reader);
	return rc;
}

int trace_set_revisit(struct trace_set *ts, size_t model_index, struct ts_progress *pg,
		      struct frec_error *err)
{
	const struct model_ops *ops = ts->models[model_index].ops;
	void *state = ts->models[model_index].state;
	if (!ops->revisit_types || !ops->revisit_wanted(state))
		return 0;
	struct ts_prefetch *pf = ts_prefetch_start(ts, 1);
	int rc = 0;
	for (size_t i = 0; !rc && i < ts->n_files; i++) {
		if (revisit_file(ts, pf, (uint32_t)i, ops, state)) {
			frec_error_set(err, "flightrec-analyze", -1, ENOMEM,
				       "out of memory in the %s model's second look at the events",
				       ops->name);
			rc = -1;
		}
		ts_progress_step(pg, ops->name, i + 1, ts->n_files, "files");
	}
	ts_prefetch_stop(pf);
	free(ts->scratch);
	ts->scratch = NULL;
	ts->scratch_cap = 0;
	return rc ? rc : ops->revisit_finish(state, ts, err);
}
