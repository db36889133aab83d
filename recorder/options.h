/* Command-line options of `flightrec record`. */
#ifndef FLIGHTREC_OPTIONS_H
#define FLIGHTREC_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "fr_family.h"
#include "attach/lib_opt.h"

#define MAX_TARGET_PIDS 64

#define MAX_LIBS 16


struct record_opts {
	const char *output;
	unsigned freq_hz;          /* CPU sampling frequency */
	double duration_s;         /* 0: until the command ends or a signal */
	unsigned probes;           /* PROBE_BIT of each family chosen (fr_family.h) */
	bool probes_given;
	uint64_t syscall_min_ns;
	uint64_t sched_min_ns;     /* --sched-min-us: shortest off-CPU block recorded */
	bool gpu_kernels;          /* --gpu-kernels: the job's CUDA_INJECTION64_PATH */
	bool syscall_stacks;
	bool stack_dwarf;          /* --stack dwarf */
	unsigned stack_kib;        /* --stack-size: bytes of user stack copied */
	bool python;               /* walk CPython frames (default on) */
	/* dwarf mode's build-id cache of symbols and unwind data (unwind_cache.h) */
	bool cache;                /* --no-cache clears it */
	const char *cache_dir;     /* --cache-dir, else $FLIGHTREC_CACHE_DIR, else
				      UNWIND_CACHE_DEFAULT_DIR */
	uint64_t cache_max_bytes;  /* --cache-max */
	unsigned buffer_mib;       /* --buffer-mib: the BPF ring buffer's size */
	/* flight-recorder mode (--ring): 0 records into FILE as usual */
	uint64_t ring_bytes;       /* compressed events kept in memory */
	unsigned triggers;         /* TRIGGER_BIT()s of --trigger (triggers.h) */
	double hang_timeout_s;     /* --hang-timeout */
	double trigger_delay_s;    /* --trigger-delay: aftermath in an OOM snapshot */
	unsigned max_snapshots;
	uint64_t max_snapshot_bytes;
	double snapshot_interval_s;
	double status_interval_s;  /* --status-interval: a running summary line (0: none) */
	const char *on_snapshot;   /* --on-snapshot CMD: run after each snapshot a
				      trigger other than SIGUSR2 wrote */
	int codec;                 /* enum fr_codec */
	int level;
	unsigned chunk_kib;
	unsigned launch_stack_every; /* cuda: one launch in N takes a stack */
	struct lib_opt libs[MAX_LIBS];
	int n_libs;
	const char *step_marker;   /* --step-marker SYMBOL */
	const char *rdma_counters_dir; /* --rdma-counters DIR */
	bool verbose;
	bool quiet;
	bool force;                /* --force: replace an existing file that is not a trace */
	bool probe_cost;           /* --probe-cost: print each BPF program's ns per call */
	/* targets: exactly one of these */
	char **command;            /* argv after `--` */
	int command_argc;
	uint32_t pids[MAX_TARGET_PIDS];
	int n_pids;
	const char *cgroup_path;
	/* test hook: seconds added to the realtime clock anchors */
	double realtime_offset_s;
};

/* Parses argv of `flightrec record ...` (argv[0] is "record").  Returns 0,
 * or 1 after printing help (exit 0), or -1 after printing one error line. */
int record_opts_parse(int argc, char **argv, struct record_opts *o);
void record_usage(FILE *out);

#endif
