/* Checks that must pass before anything runs: privileges, BTF, targets,
 * output file.  Each failure is one line naming the thing and the fix. */
#ifndef FLIGHTREC_PREFLIGHT_H
#define FLIGHTREC_PREFLIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "options.h"

/* Returns 0, or the exit status to end with and msg filled (1; 127 or 126
 * when the command cannot be run, as a shell would).  On success *cgroup_id holds the cgroup
 * v2 id for --cgroup (0 otherwise) and *cgroup_rel its path relative to the
 * cgroup v2 root (static storage). */
int preflight(const struct record_opts *o, uint64_t *cgroup_id,
	      const char **cgroup_rel, char *msg, size_t len);

#endif
