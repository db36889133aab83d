/* The syscalls family: every system call of the traced processes, from the
 * raw sys_enter/sys_exit tracepoints (bpf/syscalls.bpf.c). */
#include "fr_family.h"

static const struct fr_family_record records[] = {
	{ FR_EV_SYSCALL, 1, sizeof(struct fr_ev_syscall), "syscall",
	  FR_COMMON_FIELDS ",nr:u32,stack_id:u32,ret:s64,duration_ns:u64,fd:s64,"
	  "count:u64,sc_flags:u32,_pad:u32", true },
	{ FR_EV_FD_PATH, 1, sizeof(struct fr_ev_fd_path), "fd_path",
	  FR_COMMON_FIELDS ",fd:s32,open_flags:u32,path_len:u16,source:u16,_pad:u32,"
	  "path:char[256]", false },
};

static const char *const knobs[] = {
	"fr_filter_mode", "fr_target_cgroup_id", "fr_stack_mode", "fr_ustack_bytes",
	"fr_syscall_min_ns", "fr_syscall_stacks", NULL,
};

const struct fr_family fr_family_syscalls = {
	.id = FR_PROBE_SYSCALLS,
	.name = "syscalls",
	.selectable = true,
	.help = "every system call with duration, fd, bytes\n"
		"and user stack, and the file each opened fd\n"
		"names.  While attached, EVERY\n"
		"process on the node pays about 140 ns per\n"
		"system call (the kernel's tracepoint slow\n"
		"path), traced or not.",
	.attach = FR_ATTACH_AUTO,
	.records = records,
	.n_records = sizeof(records) / sizeof(records[0]),
	.knobs = knobs,
};
