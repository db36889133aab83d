/* The sched family: off-CPU intervals of the traced threads with the stack
 * they blocked in and who woke them (bpf/sched.bpf.c). */
#include "fr_family.h"

static const struct fr_family_record records[] = {
	{ FR_EV_SCHED, 1, sizeof(struct fr_ev_sched), "sched",
	  FR_COMMON_FIELDS ",cpu:u32,stack_id:u32,duration_ns:u64,waker_pid:u32,"
	  "waker_tid:u32,nr:s32,state:u16,waker_flags:u16,blocks:u32,_pad:u32,"
	  "waker_comm:char[16]", true },
};

static const char *const knobs[] = {
	"fr_filter_mode", "fr_target_cgroup_id", "fr_stack_mode", "fr_ustack_bytes",
	"fr_sched_min_ns", NULL,
};

const struct fr_family fr_family_sched = {
	.id = FR_PROBE_SCHED,
	.name = "sched",
	.selectable = true,
	.help = "off-CPU time: each system call in which a\n"
		"traced thread blocked for --sched-min-us or\n"
		"more, with its stack and the task that woke\n"
		"it.  Every context switch and system call\n"
		"return on the node runs a map lookup while\n"
		"attached.",
	.attach = FR_ATTACH_AUTO,
	.records = records,
	.n_records = sizeof(records) / sizeof(records[0]),
	.knobs = knobs,
};
