/* The cpu family: stack samples at --freq from a CPU-clock perf event
 * (bpf/cpu.bpf.c). */
#include "fr_family.h"

static const struct fr_family_record records[] = {
	{ FR_EV_CPU_SAMPLE, 1, sizeof(struct fr_ev_cpu_sample), "cpu_sample",
	  FR_COMMON_FIELDS ",cpu:u32,stack_id:u32", true },
};

static const char *const knobs[] = {
	"fr_filter_mode", "fr_target_cgroup_id", "fr_stack_mode", "fr_ustack_bytes", NULL,
};

const struct fr_family fr_family_cpu = {
	.id = FR_PROBE_CPU,
	.name = "cpu",
	.selectable = true,
	.help = "stack samples at --freq",
	.attach = FR_ATTACH_PERF,
	.records = records,
	.n_records = sizeof(records) / sizeof(records[0]),
	.entry_progs = { "fr_cpu_sample" },
	.knobs = knobs,
};
