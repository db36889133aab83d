/* CPython support in the recorder: recognise an interpreter among a
 * process's mappings (python3.X executable or libpython3.X.so), find
 * _PyRuntime and the version's offsets, and give them to the BPF frame
 * walker (fr_py_procs); later, name each code object the walker reports,
 * once, by reading it from the live process (FR_REC_PYCODE).  Versions:
 * 3.10-3.12 from built-in offset tables, 3.13+ from _Py_DebugOffsets in the
 * binary; any other version gets native-only stacks and a named warning. */
#ifndef FLIGHTREC_PYTHON_H
#define FLIGHTREC_PYTHON_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "hmap.h"
#include "symbols/dso_table.h"
#include "frec_writer.h"
#include "python_abi.h"

struct py_table; /* pid -> interpreter */

struct py_code_seen { uint32_t pid; uint16_t fingerprint; uint64_t code; };

struct python_state {
	int procs_map_fd;        /* fr_py_procs */
	bool quiet;
	struct py_known { uint32_t pid; struct py_proc proc; } *known;
	size_t n_known, cap_known;
	struct hmap seen;   /* (code, pid << 16 | fingerprint) of code objects seen */
	pthread_mutex_t lock;    /* the queue below: drain thread -> tracking thread */
	struct py_code_seen *queue;
	size_t n_queue, cap_queue;
	uint64_t codes_resolved, codes_failed;
};

void python_init(struct python_state *ps, int procs_map_fd, bool quiet);
void python_destroy(struct python_state *ps);

/* Tracking thread: a mapping of m->pid at file offset pgoff.  When it is an
 * interpreter, configure the walker for the pid and write FR_REC_PYTHON.
 * The facts come from the file mapped (dso_open_mapped), never from what
 * its name leads to by now. */
void python_on_mapping(struct python_state *ps, struct frec_builder *b,
		       const struct mapped_file *m, uint64_t pgoff);
/* Tracking thread: a forked child runs its parent's interpreter. */
void python_on_fork(struct python_state *ps, uint32_t ppid, uint32_t pid);

/* Drain thread: a code object seen in a stack (cheap when already seen). */
void python_note_code(struct python_state *ps, uint32_t pid, uint64_t code,
		      uint16_t fingerprint);
/* Tracking thread: resolve the queued code objects into FR_REC_PYCODE. */
void python_resolve_pending(struct python_state *ps, struct frec_builder *b);

#endif
