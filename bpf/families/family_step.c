/* The step family: calls of the --step-marker function, one per training
 * step (bpf/step.bpf.c).  Its one symbol is the user's. */
#include "fr_family.h"

static const struct fr_family_record records[] = {
	{ FR_EV_STEP, 1, sizeof(struct fr_ev_step), "step",
	  FR_COMMON_FIELDS ",_pad:u32,stack_id:u32", true },
};

static const char *const knobs[] = {
	"fr_filter_mode", "fr_target_cgroup_id", "fr_stack_mode", "fr_ustack_bytes", NULL,
};

const struct fr_family fr_family_step = {
	.id = FR_PROBE_STEP,
	.name = "step",
	.attach = FR_ATTACH_SYMBOL,
	.records = records,
	.n_records = sizeof(records) / sizeof(records[0]),
	.entry_progs = { "fr_step_enter" },
	.knobs = knobs,
};
