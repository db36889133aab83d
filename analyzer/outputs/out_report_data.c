/* The report's data beside the models' sections (see out_report_data.h). */
#include "out_report_data.h"
#include "model_mem.h"
#include "trace_set.h"

#include <string.h>

void report_data_build(struct report_data *d, struct trace_set *ts, const void *cpu,
		       const void *cuda, const void *mem)
{
	memset(d, 0, sizeof(*d));
	const struct model_cpu_result *c = cpu ? model_cpu_result(cpu) : NULL;
	if (c && c->samples) {
		d->cpu_samples = c->samples;
		d->cpu_all = c->tree;
		d->procs = c->procs;
		d->n_procs = c->n_procs;
		d->procs_left_out = c->procs_left_out;
	}
	const struct cuda_result *cu = cuda ? model_cuda_result(cuda) : NULL;
	d->cuda_events = trace_set_events_of(ts, FR_EV_CUDA);
	d->copies = cu ? cu->kinds : NULL;
	const struct mem_result *m = mem ? model_mem_result(mem) : NULL;
	d->cuda_alloc_events = m ? m->mem_events : 0;
	d->nccl_events = trace_set_events_of(ts, FR_EV_NCCL);
	d->rdma_events = trace_set_events_of(ts, FR_EV_RDMA_CTRL) +
			 trace_set_events_of(ts, FR_EV_RDMA_POST) +
			 trace_set_events_of(ts, FR_EV_RDMA_CQE);
	d->step_events = trace_set_events_of(ts, FR_EV_STEP);
}
