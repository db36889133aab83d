/* The end of a trace (format/SPEC.md sections 4.4, 4.5 and 8): drain the
 * writer thread, then write the INDEX (one entry per chunk written) and the
 * END (the caller's times, probe stats with the writer's own "writer"
 * entry, drop counts per probe and reason, and the STOP trailer when
 * writing stopped early), fsync and close.  After a failed chunk write the
 * file ends at the last whole chunk: no INDEX (readers scan), and the END
 * goes into the room writer.c kept allocated past the end of the file.
 * Also the crash path tests use (abandon: no INDEX, no END).  This file
 * does not write events: writer.c and writer_builder.c do. */
#include "writer_impl.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

/* ---- drain --------------------------------------------------------------- */

/* Let the thread write what is queued, then end it. */
static void stop_thread(struct frec_writer *w)
{
	if (!w->thread_started)
		return;
	pthread_mutex_lock(&w->mu);
	w->stopping = 1;
	w->hold = 0;
	pthread_mutex_unlock(&w->mu);
	pthread_cond_broadcast(&w->cv);
	pthread_join(w->thread, NULL);
	w->thread_started = 0;
}

void frec_writer_set_stopped(struct frec_writer *w, int error, uint64_t at_mono_ns)
{
	pthread_mutex_lock(&w->mu);
	w->copy_stopped = 1;
	w->stop_error = w->st.stop_error = error ? error : EIO;
	w->stop_mono_ns = w->st.stop_mono_ns = at_mono_ns;
	pthread_mutex_unlock(&w->mu);
}

void frec_writer_drain(struct frec_writer *w)
{
	if (w)
		stop_thread(w);
}

/* ---- INDEX and END ------------------------------------------------------- */

static int write_index(struct frec_writer *w)
{
	uint64_t first = 0, last = 0;
	for (size_t i = 0; i < w->index_n; i++) {
		const struct fr_index_entry *e = &w->index[i];
		if (e->first_ts_ns && (!first || e->first_ts_ns < first))
			first = e->first_ts_ns;
		if (e->last_ts_ns > last)
			last = e->last_ts_ns;
	}
	return wr_write_chunk(w, FR_CHUNK_INDEX, FR_CODEC_NONE,
			      (const uint8_t *)w->index,
			      w->index_n * sizeof(*w->index), (uint32_t)w->index_n,
			      first, last);
}

static int write_end(struct frec_writer *w, const struct fr_end *end_in,
		     uint64_t index_offset, const struct fr_probe_stats *probes,
		     uint32_t n_probes)
{
	struct fr_end e;
	if (end_in)
		e = *end_in;
	else
		memset(&e, 0, sizeof(e));
	if (!probes)
		n_probes = 0;
	int have_writer = 0;
	for (uint32_t i = 0; i < n_probes; i++)
		if (strncmp(probes[i].name, "writer", sizeof(probes[i].name)) == 0)
			have_writer = 1;
	uint32_t n = n_probes + (have_writer ? 0 : 1);
	/* without the caller's "writer" entry, the writer reports its own loss */
	int own_loss = !have_writer && w->st.records_dropped;
	uint32_t nd = w->n_drops + (own_loss ? 1 : 0);

	size_t len = sizeof(e) + (size_t)n * sizeof(struct fr_probe_stats) +
		     (size_t)nd * sizeof(struct fr_drop_count) +
		     (w->stop_error ? sizeof(struct fr_end_stop) : 0);
	uint8_t *buf = calloc(1, len);
	if (!buf) {
		wr_fail_io(w, "cannot build END chunk", ENOMEM);
		return -1;
	}
	struct fr_probe_stats *ps = (struct fr_probe_stats *)(buf + sizeof(e));
	if (n_probes)
		memcpy(ps, probes, (size_t)n_probes * sizeof(*ps));
	if (!have_writer) {
		struct fr_probe_stats *wp = &ps[n_probes];
		memcpy(wp->name, "writer", 7);
		wp->events = w->st.records_written;
		wp->drops = w->st.records_dropped;
	}
	struct fr_drop_count *dc = (struct fr_drop_count *)(ps + n);
	struct fr_end_stop stop = { FR_END_STOP_MAGIC, w->stop_error, w->stop_mono_ns };
	if (w->n_drops)
		memcpy(dc, w->drops, (size_t)w->n_drops * sizeof(*dc));
	if (own_loss) {
		struct fr_drop_count *d = &dc[w->n_drops];
		memcpy(d->probe, "writer", 7);
		d->reason = FR_DROP_CHUNK_LOST;
		d->count = w->st.records_dropped;
	}

	e.index_offset = index_offset;
	e.total_chunks = w->index_n;
	e.total_records = 0;
	for (size_t i = 0; i < w->index_n; i++)
		e.total_records += w->index[i].record_count;
	e.total_drops = 0;
	for (uint32_t i = 0; i < n; i++)
		e.total_drops += ps[i].drops;
	if (!e.end_mono_ns)
		e.end_mono_ns = clock_ns(CLOCK_MONOTONIC);
	if (!e.end_real_ns)
		e.end_real_ns = clock_ns(CLOCK_REALTIME);
	e.n_probes = n;
	e.n_drops = nd;
	memcpy(buf, &e, sizeof(e));
	if (w->stop_error)
		memcpy(dc + nd, &stop, sizeof(stop));

	int rc = wr_write_chunk(w, FR_CHUNK_END, FR_CODEC_NONE, buf, len, 0,
				e.end_mono_ns, e.end_mono_ns);
	free(buf);
	return rc;
}

/* ---- drop counts, close, abandon ----------------------------------------- */

int frec_writer_set_drops(struct frec_writer *w, const struct fr_drop_count *drops, uint32_t n)
{
	struct fr_drop_count *copy = NULL;
	if (n) {
		copy = malloc((size_t)n * sizeof(*copy));
		if (!copy)
			return -1;
		memcpy(copy, drops, (size_t)n * sizeof(*copy));
	}
	free(w->drops);
	w->drops = copy;
	w->n_drops = n;
	return 0;
}

int frec_writer_close(struct frec_writer *w, const struct fr_end *end,
		      const struct fr_probe_stats *probes, uint32_t n_probes,
		      struct frec_error *err)
{
	if (!w) {
		frec_error_set(err, "", -1, EINVAL, "no writer to close");
		return -1;
	}
	stop_thread(w);
	if (w->ring) { /* nothing was written but snapshots, each sealed already */
		wr_free_writer(w);
		return 0;
	}
	int rc = 0;
	if (!w->io_failed) {
		uint64_t index_offset = 0;
		/* stopped early: no INDEX (readers scan), the END in the kept room */
		if (!w->index_broken && !w->stop_error) {
			index_offset = w->file_off;
			if (write_index(w) < 0)
				rc = -1;
		}
		if (rc == 0)
			rc = write_end(w, end, index_offset, probes, n_probes);
		/* the END's room is no longer needed: give its blocks back */
		if (rc == 0)
			(void)ftruncate(w->fd, (off_t)w->file_off);
		if (rc == 0 && fsync(w->fd) < 0) {
			wr_fail_io(w, "fsync failed", errno);
			rc = -1;
		}
	}
	if (w->fd >= 0 && close(w->fd) < 0 && !w->io_failed)
		wr_fail_io(w, "close failed", errno);
	w->fd = -1;
	if (w->io_failed) {
		if (err)
			*err = w->io_err;
		rc = -1;
	}
	wr_free_writer(w);
	return rc;
}

void frec_writer_abandon(struct frec_writer *w)
{
	if (!w)
		return;
	stop_thread(w);
	wr_free_writer(w);
}
