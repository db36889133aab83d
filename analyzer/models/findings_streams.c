/* How many streams and devices a process's CUDA calls used
 * (fx_streams_of, findings_private.h): what the output says of the idle
 * rule's limits (findings_idle.c). */
#include "findings_private.h"

/* The events are sorted by entry (fx_sort_events).  A driver call
 * inside a runtime call of the same thread is the same work: only the
 * outer one counts, so a handle the runtime hands the driver in another
 * form cannot make a second stream. */
int fx_streams_of(struct fx_proc *p)
{
	struct hmap streams, devices, outer_end; /* outer_end: tid -> the outer call's return */
	hmap_init(&streams);
	hmap_init(&devices);
	hmap_init(&outer_end);
	int rc = 0;
	for (size_t i = 0; i < p->n && !rc; i++) {
		const struct fx_ev *e = &p->ev[i];
		if (e->type > FXE_WORK)
			continue; /* not a CUDA call */
		uint64_t *end = hmap_slot(&outer_end, e->tid, 0, NULL);
		if (!end || !hmap_slot(&devices, (uint64_t)(int64_t)e->device, 0, NULL)) {
			rc = -1;
			break;
		}
		if (e->t0 < *end)
			continue; /* nested */
		*end = e->t1;
		if ((e->type == FXE_WORK || (e->type == FXE_COPY && e->async)) &&
		    !hmap_slot(&streams, (uint64_t)(int64_t)e->device, e->stream, NULL))
			rc = -1;
	}
	p->streams = (uint32_t)streams.count;
	p->devices = (uint32_t)devices.count;
	hmap_free(&streams);
	hmap_free(&devices);
	hmap_free(&outer_end);
	return rc;
}
