/* The probe families `flightrec record` knows, one entry each: the number
 * (enum fr_probe_id of bpf/events.h, also the family's option bit 1 << id
 * and its index in the drop counters), the name --probes, --lib, the
 * statistics and every message use, whether it is chosen with --probes and
 * attached to the libraries it finds, and its line of --help.  Options,
 * statistics and messages iterate this table; a new family adds one entry.
 * Not for the BPF objects and their loading (bpf_probes.c). */
#ifndef FLIGHTREC_PROBE_CATALOG_H
#define FLIGHTREC_PROBE_CATALOG_H

#include <stdbool.h>
#include <stddef.h>

#include "events.h"

#define PROBE_BIT(id) (1u << (id))

struct probe_family_desc {
	enum fr_probe_id id;
	const char *name;
	bool selectable; /* named in --probes (process tracking and the step
			    marker are not: they exist when needed) */
	bool library;    /* attached to each library a process maps (--lib NAME=PATH) */
	const char *help; /* --probes help, lines after the first indented */
};

/* Every family, in id order. */
const struct probe_family_desc *probe_catalog(size_t *n);
/* The family of id, or NULL. */
const struct probe_family_desc *probe_family(unsigned id);
/* The selectable family named name, or NULL. */
const struct probe_family_desc *probe_family_named(const char *name);

#endif
