/* The table of models: adding an analysis means adding its line here. */
#include "model.h"
#include "model_call_time.h"
#include "model_cpu.h"
#include "model_cuda.h"
#include "model_events.h"
#include "model_findings.h"
#include "model_gpu.h"
#include "model_mem.h"
#include "model_nccl.h"
#include "model_rdma.h"
#include "model_stack_calls.h"
#include "model_stragglers.h"
#include "model_syscalls.h"

#include <string.h>

const struct model_ops *const analyzer_models[] = {
	&model_cpu_ops,
	&model_syscalls_ops,
	&model_mem_ops,
	&model_cuda_ops,
	&model_cuda_time_ops,
	&model_gpu_ops,
	&model_syscall_time_ops,
	&model_offcpu_time_ops,
	&model_rdma_ops,
	&model_nccl_ops,
	&model_stragglers_ops,
	&model_events_ops,
	&model_findings_ops,
	&model_stack_calls_ops,
	NULL,
};

const struct model_ops *model_find(const char *name)
{
	for (size_t i = 0; analyzer_models[i]; i++)
		if (strcmp(analyzer_models[i]->name, name) == 0)
			return analyzer_models[i];
	return NULL;
}
