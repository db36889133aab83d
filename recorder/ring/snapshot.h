/* Flight-recorder snapshots (flightrec record --ring): the file a trigger
 * writes — named after FILE with -N before the extension, N one more than
 * the highest there, never replacing anything — and what goes in it: the
 * ring's chunks after the drain and tracking threads have sealed theirs,
 * the allocations live at the window's start, the calls in flight, and the
 * counters so far.  Caps (count, total bytes) and a rate limit decide
 * whether a trigger is written; what is not is said and counted. */
#ifndef FLIGHTREC_SNAPSHOT_H
#define FLIGHTREC_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drain/drain.h"
#include "frec_writer.h"
#include "ring/live_allocs.h"
#include "track/proc_track.h"
#include "ring/triggers.h"

/* The recorder's CPU once a second, so a snapshot's END gives the CPU of
 * its window, not of the whole run divided by the window (an hour kept;
 * an older window gets the CPU since the oldest sample). */
#define CPU_HISTORY 4096
struct cpu_history {
	uint64_t mono_ns[CPU_HISTORY], user_ns[CPU_HISTORY], sys_ns[CPU_HISTORY];
	unsigned n, next;
};
void cpu_history_add(struct cpu_history *h, uint64_t mono_ns, uint64_t user_ns, uint64_t sys_ns);
/* The latest sample at or before mono_ns (else the oldest), its time in
 * *at_ns; false: none. */
bool cpu_history_at(const struct cpu_history *h, uint64_t mono_ns, uint64_t *at_ns,
		    uint64_t *user_ns, uint64_t *sys_ns);

struct snapshots {
	const char *output;          /* FILE of -o: names the snapshots */
	unsigned max_count;          /* --max-snapshots */
	uint64_t max_bytes;          /* --max-snapshot-bytes, all snapshots together */
	uint64_t interval_ns;        /* --snapshot-interval: same trigger again */
	bool set_owner;
	unsigned owner_uid, owner_gid;
	bool quiet;
	/* what a snapshot needs from the recording */
	struct frec_writer *writer;
	struct drain *drain;
	struct proc_track *track;
	struct live_allocs *live;
	const struct frec_file_info *info;
	track_stats_fn stats_fn;
	void *stats_ctx;
	/* extra META records for the snapshot (in-flight calls); may be NULL */
	size_t (*extra_meta)(void *ctx, uint8_t **out, uint32_t *count);
	void *extra_ctx;
	uint64_t file_start_ns;      /* times in messages count from here */
	struct cpu_history *cpu;     /* NULL: END has the whole run's CPU */
	/* so far */
	unsigned written;
	uint64_t bytes_written;
	uint32_t suppressed;         /* since the last snapshot written */
	uint32_t suppressed_total;
	uint32_t suppressed_unsaid;  /* since the last line that said them */
	uint64_t suppressed_said_ns;
	char unsaid_why[200], unsaid_kind[32]; /* the latest suppressed */
	double unsaid_at;
	uint64_t last_ns[8];         /* by trigger kind: the last written */
	char last_path[4096];        /* the last snapshot written */
};

/* Writes one snapshot for hit (or says why not).  Returns 1 written, 0 not
 * written (caps, rate limit), -1 failed (said on stderr). */
int snapshot_take(struct snapshots *s, const struct trigger_hit *hit, uint32_t merged,
		  uint16_t oom_retry);
/* The suppressed triggers not said yet, in one line (at the end). */
void snapshot_say_suppressed(struct snapshots *s);

/* The next snapshot's path for output ("run.frec" -> "run-N.frec", "run" ->
 * "run-N"), created empty (O_EXCL, never through a symbolic link); the fd
 * or -errno.  Exposed for the tests of the naming. */
int snapshot_create(const char *output, uint32_t *number, char *path, size_t len);

#endif
