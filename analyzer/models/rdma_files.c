/* What the RDMA model reports from the trace set rather than from events:
 * the labels of a connection's ends (host, rank, command), one row per
 * file with its event counts and the recorder's idle poll counter, and the
 * port counters.  Not for summing the port counter records (trace_set.c
 * does, this only copies and sorts) nor for the connection rows
 * (rdma_replay.c).
 *
 * Idle polls: the recorder's "rdma_idle_polls" counter, poll_cq calls that
 * returned nothing, counted in the kernel for the whole recording, not per
 * process. */
#include "rdma_private.h"
#include "trace_set.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The process's rank (RANK of its launcher environment), -1 when unknown. */
static int64_t process_rank(const struct ts_process *p)
{
	return p->rank >= 0 ? p->rank : -1;
}

void rdma_label(struct trace_set *ts, struct rdma_endpoint *ep)
{
	const struct trace_file *f = trace_set_file(ts, ep->file);
	const struct ts_process *p = f ? trace_file_process(f, ep->pid) : NULL;
	ep->host = f ? f->hdr.host : "";
	ep->rank = p ? process_rank(p) : -1;
	snprintf(ep->comm, sizeof(ep->comm), "%s", p ? p->comm : "");
}

static int counter_cmp(const void *x, const void *y)
{
	const struct rdma_counter_row *a = x, *b = y;
	if (a->file != b->file)
		return a->file < b->file ? -1 : 1;
	return strcmp(a->name, b->name);
}

int rdma_files_and_counters(struct model_rdma *m, struct trace_set *ts)
{
	struct rdma_result *r = &m->result;
	size_t n_files = trace_set_count(ts), n_counters = 0;
	for (size_t i = 0; i < n_files; i++)
		n_counters += trace_set_file(ts, i)->n_rdma_counters;
	r->files = calloc(n_files ? n_files : 1, sizeof(*r->files));
	r->counters = calloc(n_counters ? n_counters : 1, sizeof(*r->counters));
	if (!r->files || !r->counters)
		return -1;
	for (size_t i = 0; i < n_files; i++) {
		const struct trace_file *f = trace_set_file(ts, i);
		struct rdma_file_row *fr = &r->files[r->n_files++];
		fr->file = (uint32_t)i;
		fr->host = f->hdr.host;
		fr->path = f->path;
		if (i < m->n_per_file) {
			fr->posts = m->per_file[i].posts;
			fr->completions = m->per_file[i].completions;
			fr->ctrl_calls = m->per_file[i].ctrl_calls;
		}
		/* the END record's counters, else the latest STATS record's */
		uint32_t n_end = 0;
		const struct fr_probe_stats *end = f->reader ? frec_end_probes(f->reader, &n_end) : NULL;
		for (uint32_t k = 0; end && k < n_end; k++) {
			if (!strncmp(end[k].name, "rdma_idle_polls", sizeof(end[k].name))) {
				fr->has_idle_polls = 1;
				fr->idle_polls = end[k].events;
			}
		}
		for (uint32_t k = 0; !end && k < f->n_stats_probes; k++) {
			if (!strcmp(f->stats_probes[k].name, "rdma_idle_polls")) {
				fr->has_idle_polls = 1;
				fr->idle_polls = f->stats_probes[k].events;
			}
		}
		for (size_t k = 0; k < f->n_rdma_counters; k++) {
			const struct ts_rdma_counter *tc = &f->rdma_counters[k];
			struct rdma_counter_row *cr = &r->counters[r->n_counters++];
			cr->file = (uint32_t)i;
			cr->host = f->hdr.host;
			memcpy(cr->name, tc->name, sizeof(cr->name));
			cr->total = tc->total;
			cr->max_delta = tc->max_delta;
			cr->max_per_s = tc->max_per_s;
			cr->samples = tc->samples;
		}
	}
	if (r->n_counters)
		qsort(r->counters, r->n_counters, sizeof(*r->counters), counter_cmp);
	return 0;
}
