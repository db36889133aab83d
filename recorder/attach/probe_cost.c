/* --probe-cost (see probe_cost.h). */
#include "attach/probe_cost.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int probe_cost_enable(void)
{
	int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	return fd >= 0 ? fd : -errno;
}

struct prog_cost {
	char name[64];
	uint64_t calls, ns;
};

static int by_total_desc(const void *a, const void *b)
{
	const struct prog_cost *x = a, *y = b;
	return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : strcmp(x->name, y->name);
}

void probe_cost_print(const struct bpf_probes *p, FILE *out)
{
	/* a few dozen programs in all: far fewer than this */
	static struct prog_cost costs[256];
	size_t n = 0;

	for (int f = 0; f < FR_PROBE_MAX; f++) {
		struct bpf_program *prog;
		if (!p->objs[f])
			continue;
		bpf_object__for_each_program(prog, p->objs[f]) {
			struct bpf_prog_info info;
			uint32_t len = sizeof(info);
			int fd = bpf_program__fd(prog);
			memset(&info, 0, sizeof(info));
			if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) || !info.run_cnt)
				continue;
			if (n == sizeof(costs) / sizeof(costs[0]))
				break;
			/* the program's own name: the kernel keeps 15 characters */
			snprintf(costs[n].name, sizeof(costs[n].name), "%s", bpf_program__name(prog));
			costs[n].calls = info.run_cnt;
			costs[n].ns = info.run_time_ns;
			n++;
		}
	}
	if (!n) {
		fprintf(out, "flightrec: probe cost: no program ran (or the kernel kept no "
			"run-time statistics)\n");
		return;
	}
	qsort(costs, n, sizeof(*costs), by_total_desc);
	fprintf(out, "flightrec: probe cost, each BPF program's own run time (the trap into "
		"the kernel and back comes on top):\n");
	fprintf(out, "  %-24s %12s %10s %12s\n", "program", "calls", "ns/call", "total ms");
	for (size_t i = 0; i < n; i++)
		fprintf(out, "  %-24s %12" PRIu64 " %10.0f %12.2f\n", costs[i].name, costs[i].calls,
			(double)costs[i].ns / (double)costs[i].calls, costs[i].ns / 1e6);
}
