/* The model interface: what every analysis (cpu profile, syscalls, memory,
 * cuda, nccl, stragglers, rdma) implements so the decoder can feed it
 * without knowing it.  A new analysis is a new model_*.c file plus one line
 * in analyzer_models[] (models.c).  Commands ask for models by name
 * (trace_set_use_model); a model names the models it reads (`needs`), which
 * are registered before it, so they are fed the same events and finished
 * first, and handed to it (`bind`) before the pass.  Not for output
 * formats: writers read a model's result, or subscribe to a model's stream
 * (model_events.h: every event once; model_mem_on_change: the ledger's
 * changes); no output registers itself with the decoder. */
#ifndef FLIGHTREC_MODEL_H
#define FLIGHTREC_MODEL_H

#include <stddef.h> /* frec_error.h needs size_t */
#include <stdint.h>
#include "frec_error.h"
#include "events.h"

struct trace_set;

/* Options every model may read; each ignores what does not concern it. */
struct model_opts {
	int filter_pid;     /* nonzero: only events of pid */
	uint32_t pid;
	unsigned per_process; /* cpu: also one tree for each of this many
				 busiest processes (0: none) */
	int profile;        /* cpu, mem, cuda_time, syscall_time: also a
			       stack_profile (per thread, with stack ids) for
			       the profile formats */
	int idle_intervals; /* findings: keep every process's GPU-idle
			       intervals (the timeline draws them); 0: only
			       their sums, the intervals freed as each
			       process is done (they are most of its memory
			       at thousands of ranks) */
	int align_only;     /* the align pass's private instance (align_pass.c):
			       only what the alignment needs, then adopted */
};

struct model_ops {
	const char *name; /* "cpu", "syscalls" */
	void *(*create)(const struct model_opts *opts);
	/* One kernel event (type < 0x100) of file file_index.  The decoder has
	 * checked that rec->size covers the fixed part of every type it knows;
	 * the record may be longer (newer writer) and may be unaligned, so
	 * models memcpy it into a local struct.  Returns 0, or -1 when memory
	 * runs out. */
	int (*feed)(void *state, uint32_t file_index, const struct fr_rec_hdr *rec);
	/* After the pass over every file: resolve and build the result. */
	int (*finish)(void *state, struct trace_set *ts, struct frec_error *err);
	void (*destroy)(void *state);
	/* The models this one reads at finish, by name, NULL-terminated (NULL:
	 * none); bind receives each one's state before the pass. */
	const char *const *needs;
	void (*bind)(void *state, const char *name, void *dep_state);
	/* A model that puts the files on one clock (model_nccl): the event
	 * types it needs for that, 0-terminated.  Before the events pass of a
	 * set of two or more files, the decoder runs a private instance of it
	 * over those records alone (align_pass.c), so every model and output
	 * sees the final clock from the first event. */
	const uint16_t *align_types;
	/* The align pass's instance, finished (created with align_only), is
	 * handed to each instance of the same model the set runs before the
	 * events pass: what it built (model_nccl: the ranks, their calls,
	 * the matched instances) moves into state, which then neither keeps
	 * the align_types records again nor builds it again.  NULL: the
	 * align pass's instance is only destroyed. */
	void (*adopt)(void *state, void *aligned);
	/* A second look (revisit_pass.c): a model that can tell which events
	 * matter only once every file is read (the stragglers evidence counts
	 * the straggler's CPU samples, and no other's one by one) keeps none
	 * of them in the events pass.  Right after its finish, when
	 * revisit_wanted says so, the decoder feeds it the revisit_types
	 * records again, file by file in file order as the events pass did
	 * (stack ids as feed got them), then calls revisit_finish, before any
	 * model that reads this one finishes.  Its memory then follows what it
	 * counts, not the events. */
	const uint16_t *revisit_types;
	int (*revisit_wanted)(void *state);
	int (*revisit_feed)(void *state, uint32_t file_index, const struct fr_rec_hdr *rec);
	int (*revisit_finish)(void *state, struct trace_set *ts, struct frec_error *err);
};

/* Every model the analyzer knows, NULL-terminated. */
extern const struct model_ops *const analyzer_models[];
const struct model_ops *model_find(const char *name);

#endif
