/* Finding the libraries the library probe families (cuda ...) belong in,
 * attaching to them, and telling the user what attached and what did not:
 * on stderr and as FR_REC_ATTACH records in the trace.  Called for every
 * new file a traced process maps (so libraries loaded with dlopen are
 * picked up; the gap between the mapping and the attach is measured) and,
 * before `-- COMMAND` runs, for the command's DT_NEEDED closure and --lib. */
#ifndef FLIGHTREC_LIB_ATTACH_H
#define FLIGHTREC_LIB_ATTACH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attach/bpf_probes.h"
#include "attach/lib_opt.h"
#include "hmap.h"
#include "symbols/dso_table.h"
#include "frec_writer.h"

struct lib_attach {
	struct bpf_probes *probes;
	bool quiet;
	atomic_uint files_attached[FR_PROBE_MAX]; /* per probe id */
	uint64_t gap_max_ns;      /* slowest mapping -> attached, this run */
	/* Files looked at once for every family's functions together, by
	 * (dev, inode): most files a job maps (314 for an import torch) hold
	 * none, and each family opening and scanning them in turn tripled
	 * the recorder's work at every new mapping */
	pthread_mutex_t scanned_lock;
	struct hmap scanned;          /* (dev, inode) -> holds one (1) or not (0) */
	const char **all_names;       /* every family's function names */
	size_t n_all_names;
};

void lib_attach_init(struct lib_attach *la, struct bpf_probes *probes, bool quiet);
void lib_attach_destroy(struct lib_attach *la);

/* Tries every library family on the file m names: as mapped by m->pid, or
 * (pid 0) a path of this system that flightrec's user chose (--lib, the
 * command's libraries: a trusted name, its links followed).  A mapped file
 * is opened as the kernel mapped it (dso_open_mapped), so the probes go to
 * the file the process runs, whatever file its name leads to by now.
 * mapped_ns: when the mapping was seen (CLOCK_MONOTONIC), 0 when not
 * mapped.  only_bit: restrict to one family (--lib), 0 for all.  Attach
 * records go to b. */
void lib_attach_try(struct lib_attach *la, struct frec_builder *b,
		    const struct mapped_file *m, uint64_t mapped_ns, unsigned only_bit);

/* Before `-- COMMAND` runs: the --lib files, and the closure of the
 * libraries of command[0] and of the programs among its arguments
 * (command NULL: no command). */
void lib_attach_prepare(struct lib_attach *la, struct frec_builder *b,
			const struct lib_opt *libs, int n_libs, char *const *command,
			int command_argc);

#endif
