/* Checks that must pass before anything runs: privileges, BTF, targets,
 * output file.  Each failure is one line naming the thing and the fix. */
#ifndef FLIGHTREC_PREFLIGHT_H
#define FLIGHTREC_PREFLIGHT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frec_error.h"
#include "options.h"

struct preflight_out {
	uint64_t cgroup_id;         /* --cgroup's cgroup v2 id, 0 without it */
	const char *cgroup_rel;     /* its path under the cgroup v2 root (static) */
	bool command_unrunnable;    /* the failure is `-- COMMAND`'s: not found
				       (-ENOENT) or not runnable (-EACCES) */
};

/* 0, or -errno with fe->what filled (one line). */
int preflight(const struct record_opts *o, struct preflight_out *out, struct frec_error *fe);

#endif
