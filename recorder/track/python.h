/* CPython support in the recorder: recognise an interpreter among a
 * process's mappings (python3.X executable or libpython3.X.so), find
 * _PyRuntime and the version's offsets, and give them to the BPF frame
 * walker (fr_py_procs); later, name each code object the walker reports,
 * once, by reading it from the live process (FR_REC_PYCODE).  Versions:
 * 3.10-3.12 from built-in offset tables, 3.13+ from _Py_DebugOffsets in the
 * binary; any other version gets native-only stacks and a named warning.
 * An interpreter file's facts are read once, and said once on stderr, for
 * all the processes that run it. */
#ifndef FLIGHTREC_PYTHON_H
#define FLIGHTREC_PYTHON_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "hmap.h"
#include "symbols/dso_table.h"
#include "frec_writer.h"
#include "python_abi.h"

struct py_table; /* pid -> interpreter */

struct py_code_seen { uint32_t pid; uint16_t fingerprint; uint64_t code; };

struct py_file; /* an interpreter file's facts, read once */

struct python_state {
	int procs_map_fd;        /* fr_py_procs */
	bool quiet;
	/* the live processes running CPython (forgotten when they exit) */
	struct py_known { uint32_t pid; uint64_t since_ns; struct py_proc proc; } *known;
	size_t n_known, cap_known;
	/* every interpreter file seen: a process of a known one costs a lookup */
	struct py_file *files;
	size_t n_files, cap_files;
	/* Drain thread: (code, pid << 16 | fingerprint) of code objects seen,
	 * pruned of exited processes' entries in batches */
	struct hmap seen;
	pthread_mutex_t lock;    /* the queue and dead list: between the threads */
	struct py_code_seen *queue;
	size_t n_queue, cap_queue;
	uint32_t *dead;          /* exited Python processes not pruned from seen yet */
	size_t n_dead, cap_dead;
	atomic_size_t dead_waiting;
	uint64_t codes_resolved, codes_failed;
	uint64_t processes, facts_read; /* interpreter processes; files whose facts were read */
};

void python_init(struct python_state *ps, int procs_map_fd, bool quiet);
void python_destroy(struct python_state *ps);

/* Tracking thread: a mapping of m->pid at file offset pgoff.  When it is an
 * interpreter, configure the walker for the pid and write FR_REC_PYTHON.
 * The facts come from the file mapped (dso_open_mapped), never from what
 * its name leads to by now. */
void python_on_mapping(struct python_state *ps, struct frec_builder *b,
		       const struct mapped_file *m, uint64_t pgoff, uint64_t ts_ns);
/* Tracking thread: a forked child runs its parent's interpreter. */
void python_on_fork(struct python_state *ps, uint32_t ppid, uint32_t pid, uint64_t ts_ns);
/* Tracking thread: these processes exited; what is held of them goes. */
void python_forget_pids(struct python_state *ps, const uint32_t *pids, size_t n);

/* Drain thread: a code object seen in a stack (cheap when already seen). */
void python_note_code(struct python_state *ps, uint32_t pid, uint64_t code,
		      uint16_t fingerprint);
/* Tracking thread: resolve the queued code objects into FR_REC_PYCODE. */
void python_resolve_pending(struct python_state *ps, struct frec_builder *b);

#endif
