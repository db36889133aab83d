/* The proc family: process fork, exec and exit in the kernel (bpf/proc.bpf.c).
 * Always loaded: its object owns the maps every family shares. */
#include "fr_family.h"

#define PROC_FIELDS FR_COMMON_FIELDS ",ppid:u32,exit_code:s32,comm:char[16]"

static const struct fr_family_record records[] = {
	{ FR_EV_PROC_FORK, 1, sizeof(struct fr_ev_proc), "proc_fork", PROC_FIELDS, false },
	{ FR_EV_PROC_EXEC, 1, sizeof(struct fr_ev_proc), "proc_exec", PROC_FIELDS, false },
	{ FR_EV_PROC_EXIT, 1, sizeof(struct fr_ev_proc), "proc_exit", PROC_FIELDS, false },
};

static const char *const knobs[] = { "fr_filter_mode", "fr_target_cgroup_id", NULL };

const struct fr_family fr_family_proc = {
	.id = FR_PROBE_PROC,
	.name = "proc",
	.attach = FR_ATTACH_AUTO,
	.records = records,
	.n_records = sizeof(records) / sizeof(records[0]),
	.knobs = knobs,
};
