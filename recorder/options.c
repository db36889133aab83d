/* Parsing and help text of `flightrec record`.  Only syntax is checked here;
 * whether the system allows the recording is checked in preflight.c. */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fr_family.h"
#include "frec_format.h"
#include "ring/triggers.h"
#include "symbols/unwind_cache.h"

/* The --probes list of the help: one entry per selectable family. */
static void print_probe_help(FILE *out)
{
	size_t n;
	const struct fr_family *const *fams = fr_families(&n);
	for (size_t i = 0; i < n; i++) {
		if (!fams[i]->selectable)
			continue;
		fprintf(out, "                          %-9s ", fams[i]->name);
		for (const char *h = fams[i]->help; *h;) {
			const char *nl = strchr(h, '\n');
			size_t len = nl ? (size_t)(nl - h) : strlen(h);
			fprintf(out, "%.*s\n", (int)len, h);
			h += len + (nl ? 1 : 0);
			if (*h)
				fprintf(out, "%36s", "");
		}
	}
}

void record_usage(FILE *out)
{
	fprintf(out,
"usage: flightrec record -o FILE [options] -- COMMAND [ARGS...]\n"
"       flightrec record -o FILE [options] --pid PID[,PID...]\n"
"       flightrec record -o FILE [options] --cgroup PATH\n"
"\n"
"Record a running job (or a command) with eBPF, without changing or\n"
"restarting it, into one compressed, chunked, crash-safe trace file.\n"
"Analyze the file anywhere with `flightrec-analyze`.\n"
"\n"
"Targets (exactly one):\n"
"  -- COMMAND [ARGS...]  run COMMAND and record it and every process it starts\n"
"                        (children are followed in the kernel from their first\n"
"                        instruction); flightrec exits with COMMAND's status\n"
"  -p, --pid PID[,PID]   record running processes and the children they start\n"
"  -G, --cgroup PATH     record every process in a cgroup v2 directory (e.g. a\n"
"                        Kubernetes pod), filtered in the kernel by cgroup id\n"
"\n"
"Options:\n"
"  -o, --output FILE     trace file to write (required)\n"
"  -F, --freq HZ         CPU sampling frequency (default 99)\n"
"  -d, --duration SEC    stop after SEC seconds (default: when the command\n"
"                        ends, or on SIGINT/SIGTERM)\n"
"  -P, --probes LIST     comma list of probe families (default: all that can\n"
"                        attach):\n"
	);
	print_probe_help(out);
	fprintf(out,

"      --rdma-counters DIR  sample port counters under DIR every second\n"
"                        (default /sys/class/infiniband)\n"
"      --step-marker SYM call of function SYM (in any file the target maps)\n"
"                        marks the start of a training step\n"
"      --lib NAME=PATH   also attach family NAME (cuda) to the library PATH\n"
"                        before the target runs\n"
"      --launch-stack-every N  one kernel launch in N records its stack\n"
"                        (default 64; launches are frequent)\n"
"      --syscall-min-us N  drop (in the kernel) system calls shorter than N us\n"
"      --no-syscall-stacks do not record a user stack with each system call\n"
"      --gpu-kernels     start -- COMMAND with CUDA_INJECTION64_PATH naming\n"
"                        libflightrec_cupti.so, which loads the job's own libcupti\n"
"                        and hands each kernel's GPU start and end to the gpu\n"
"                        family (one CUPTI user per process: another profiler\n"
"                        in the job keeps it, and the library says so once);\n"
"                        an attached job (--pid, --cgroup) must have been\n"
"                        started with that variable set\n"
"      --sched-min-us N  record (sched family) only off-CPU blocks of at least\n"
"                        N us (default 1000: shorter ones are dropped in the\n"
"                        kernel)\n"
"      --stack MODE      how user stacks are taken (default dwarf):\n"
"                          fp     frame-pointer walk in the kernel (cheap; stops\n"
"                                 at code built without frame pointers, such as\n"
"                                 CPython and the PyTorch wheels)\n"
"                          dwarf  copy the registers and the top of the stack\n"
"                                 (--stack-size) and unwind offline with the\n"
"                                 .eh_frame data the trace carries, like perf\n"
"                                 --call-graph dwarf; complete stacks, ~16 KiB\n"
"                                 each.  System calls take one when they last\n"
"                                 1 ms or more, and one call in 64 otherwise\n"
"      --stack-size KIB  user stack bytes copied per event in dwarf mode\n"
"                        (default 16, at most 32)\n"
"      --no-python       do not walk CPython frames (they are walked in the\n"
"                        kernel for CPython 3.10-3.13 and merged into the\n"
"                        native stacks)\n"
"      --cache-dir DIR   where dwarf mode keeps each file's symbols and unwind\n"
"                        data by build-id, so the next recording of the same\n"
"                        files skips reading them (default $FLIGHTREC_CACHE_DIR,\n"
"                        else " UNWIND_CACHE_DEFAULT_DIR "; created with mode 0700,\n"
"                        and a directory others can open is not used).  The\n"
"                        trace is the same with or without it\n"
"      --cache-max SIZE  total size of the cache's entries; past it the least\n"
"                        recently used go (default 2G)\n"
"      --no-cache        read every file's symbols and unwind data from the file\n"
"      --buffer-mib N    BPF ring buffer the kernel writes events into, in MiB\n"
"                        (default 64; formerly --ring-mib, still accepted)\n"
"      --codec C         zstd (default), zlib or none\n"
"      --level N         compression level (default 1)\n"
"      --chunk-kib N     chunk size in KiB (default 4096)\n"
"\n"
"Flight-recorder mode (always on, writes only when something goes wrong):\n"
"      --ring SIZE       keep only the latest SIZE of compressed events in memory\n"
"                        (256M, 1G ...); FILE itself is never written.  A trigger\n"
"                        writes a snapshot FILE-N (run.frec -> run-1.frec, ...,\n"
"                        never replacing one): a complete trace of the events\n"
"                        still held, their metadata, and the allocations live\n"
"                        at its start.  SIGUSR2 always writes one.  Exited\n"
"                        processes' metadata waits for their events to leave;\n"
"                        past SIZE/4096 of them (at least 1,024) the oldest\n"
"                        events leave sooner, so memory stays bounded under\n"
"                        process churn\n"
"      --trigger LIST    what else writes a snapshot, comma list (default: all):\n"
"                          oom         a CUDA allocation returned out of memory\n"
"                          nccl-error  an NCCL call failed, or a collective or\n"
"                                      a synchronize hung (--hang-timeout)\n"
"                          exit        a process of the job died on a signal or\n"
"                                      exited non-zero: the command's own process,\n"
"                                      a process that maps or calls CUDA, NCCL or\n"
"                                      RDMA, or a rank (RANK, OMPI_COMM_WORLD_RANK,\n"
"                                      PMI_RANK, SLURM_PROCID in its environment,\n"
"                                      not inherited from its parent); the failures\n"
"                                      of other helpers are counted and said\n"
"                                      once per --status-interval\n"
"                          exit=all    any traced process's failure\n"
"      --hang-timeout SEC  a collective or synchronize still running after SEC\n"
"                        seconds is a hang (default 60)\n"
"      --trigger-delay SEC  an OOM or NCCL error's snapshot waits SEC seconds\n"
"                        for the aftermath (the allocator's retry; default 1)\n"
"      --max-snapshots N   at most N snapshots per run (default 10)\n"
"      --max-snapshot-bytes SIZE  at most SIZE of snapshots in all (default 16G)\n"
"      --snapshot-interval SEC  the same trigger again within SEC seconds\n"
"                        writes no snapshot (default 30; SIGUSR2 always does)\n"
"                        Suppressed triggers are counted and said at most once\n"
"                        per SEC, with their number.\n"
"      --status-interval SEC  one line on stderr every SEC seconds (default 3600;\n"
"                        0: none): processes seen and exited, snapshots, the\n"
"                        ring's memory and the metadata it keeps, recorder CPU\n"
"      --on-snapshot CMD  run CMD (sh -c, not waited for) after each snapshot a\n"
"                        trigger wrote (not after SIGUSR2's), with FLIGHTREC_SNAPSHOT,\n"
"                        FLIGHTREC_TRIGGER and FLIGHTREC_TRIGGER_PID set: e.g. signal\n"
"                        the recorders of the other nodes, whose ranks may not\n"
"                        trigger themselves (a hang's culprit is in no call):\n"
"                        --on-snapshot 'pdsh -w node[1-8] pkill -USR2 -x flightrec'\n"
"\n"
"      --probe-cost      at the end, print what each BPF program cost per call\n"
"                        on this machine (the kernel's run-time statistics, on\n"
"                        for this recording only; they add two clock reads to\n"
"                        each call)\n"
"  -v, --verbose         print libbpf diagnostics, and each probe family's load\n"
"                        time with its programs' verified instructions\n"
"  -q, --quiet           print only errors\n"
"      --force           replace FILE even when it exists and is not a trace\n"
"                        (a trace is replaced without it; a symbolic link never is)\n"
"  -h, --help            this help\n"
"\n"
"Costs: a CPU sample costs ~15 us of the sampled CPU on this kind of VM\n"
"(~0.15%% of a core at 99 Hz).  Events that cannot be buffered are dropped,\n"
"counted per probe and reported; the recorder never blocks the job.\n"
"\n"
"Examples:\n"
"  sudo flightrec record -o run.frec -- torchrun --nproc 8 train.py\n"
"  sudo flightrec record -o run.frec --duration 60 --pid 4242\n"
"  sudo flightrec record -o pod.frec -d 30 --cgroup /sys/fs/cgroup/kubepods/pod1234\n"
"  sudo flightrec record -o job.frec --ring 512M --pid 4242   # kill -USR2 for a snapshot\n"
"  flightrec-analyze flame run.frec --kind cpu --format svg -o cpu.svg\n");
}

enum {
	OPT_SYSCALL_MIN_US = 256,
	OPT_NO_SYSCALL_STACKS,
	OPT_STACK,
	OPT_RING_MIB,
	OPT_CODEC,
	OPT_LEVEL,
	OPT_CHUNK_KIB,
	OPT_REALTIME_OFFSET,
	OPT_LIB,
	OPT_LAUNCH_STACK_EVERY,
	OPT_STEP_MARKER,
	OPT_RDMA_COUNTERS,
	OPT_STACK_SIZE,
	OPT_NO_PYTHON,
	OPT_PROBE_COST,
	OPT_FORCE,
	OPT_RING,
	OPT_TRIGGER,
	OPT_HANG_TIMEOUT,
	OPT_TRIGGER_DELAY,
	OPT_MAX_SNAPSHOTS,
	OPT_MAX_SNAPSHOT_BYTES,
	OPT_SNAPSHOT_INTERVAL,
	OPT_STATUS_INTERVAL,
	OPT_ON_SNAPSHOT,
	OPT_CACHE_DIR,
	OPT_CACHE_MAX,
	OPT_NO_CACHE,
	OPT_SCHED_MIN_US,
	OPT_GPU_KERNELS,
};

/* A size with a unit: 256M, 1G, 512K, 1048576 (bytes). */
static int parse_size(const char *s, const char *what, uint64_t *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	uint64_t mult = 1;
	if (end != s && *end) {
		switch (*end == 0 ? 0 : end[0] | 0x20) {
		case 'k': mult = 1ull << 10; break;
		case 'm': mult = 1ull << 20; break;
		case 'g': mult = 1ull << 30; break;
		case 't': mult = 1ull << 40; break;
		default: mult = 0;
		}
		end++;
		if (*end == 'i' || *end == 'I')
			end++;
		if (*end == 'b' || *end == 'B')
			end++;
	}
	if (errno || end == s || *end || mult == 0 || v <= 0 || v * (double)mult >= 1e18) {
		fprintf(stderr, "flightrec: invalid %s '%s' (a size such as 256M or 1G)\n", what, s);
		return -1;
	}
	*out = (uint64_t)(v * (double)mult);
	return 0;
}

static int parse_seconds(const char *s, const char *what, bool zero_ok, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || v < 0 || (!zero_ok && v == 0) || v > 1e7) {
		fprintf(stderr, "flightrec: invalid %s '%s' (seconds%s)\n", what, s,
			zero_ok ? "" : " > 0");
		return -1;
	}
	*out = v;
	return 0;
}


static int parse_uint(const char *s, const char *what, unsigned long max,
		      unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > max || s[0] == '-') {
		fprintf(stderr, "flightrec: invalid %s '%s' (expected a number up to %lu)\n",
			what, s, max);
		return -1;
	}
	*out = v;
	return 0;
}

/* The families --probes may name; the default is all of them. */
static const struct fr_family *selectable_named(const char *name)
{
	const struct fr_family *f = fr_family_named(name);
	return f && f->selectable ? f : NULL;
}

static unsigned probes_selectable(void)
{
	size_t n;
	unsigned bits = 0;
	const struct fr_family *const *fams = fr_families(&n);
	for (size_t i = 0; i < n; i++)
		if (fams[i]->selectable)
			bits |= PROBE_BIT(fams[i]->id);
	return bits;
}

/* The names of the selectable families (library ones only when asked),
 * joined by sep, for messages. */
static const char *family_names(bool library_only, const char *sep)
{
	static char text[128];
	size_t n, at = 0;
	const struct fr_family *const *fams = fr_families(&n);
	text[0] = '\0';
	for (size_t i = 0; i < n && at < sizeof(text); i++)
		if (fams[i]->selectable && (fams[i]->attach == FR_ATTACH_LIBRARY || !library_only))
			at += (size_t)snprintf(text + at, sizeof(text) - at, "%s%s", at ? sep : "",
					       fams[i]->name);
	return text;
}

static int parse_probes(const char *list, unsigned *out)
{
	char buf[256];
	unsigned bits = 0;

	snprintf(buf, sizeof(buf), "%s", list);
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		const struct fr_family *d = selectable_named(tok);
		if (!d) {
			fprintf(stderr, "flightrec: unknown probe family '%s' (available: %s)\n", tok,
				family_names(false, ","));
			return -1;
		}
		bits |= PROBE_BIT(d->id);
	}
	if (!bits) {
		fprintf(stderr, "flightrec: --probes needs at least one probe family\n");
		return -1;
	}
	*out = bits;
	return 0;
}

static int parse_lib(const char *arg, struct record_opts *o)
{
	const char *eq = strchr(arg, '=');
	char name[32];
	unsigned bit;

	if (!eq || eq == arg || !eq[1] || (size_t)(eq - arg) >= sizeof(name)) {
		fprintf(stderr, "flightrec: --lib expects NAME=PATH (e.g. --lib cuda=/opt/libcudart.so.12)\n");
		return -1;
	}
	memcpy(name, arg, (size_t)(eq - arg));
	name[eq - arg] = 0;
	const struct fr_family *d = selectable_named(name);
	if (!d || d->attach != FR_ATTACH_LIBRARY) {
		fprintf(stderr, "flightrec: --lib %s: NAME must be a library probe family (%s)\n",
			name, family_names(true, ", "));
		return -1;
	}
	bit = PROBE_BIT(d->id);
	if (o->n_libs == MAX_LIBS) {
		fprintf(stderr, "flightrec: at most %d --lib options\n", MAX_LIBS);
		return -1;
	}
	if (access(eq + 1, R_OK)) {
		fprintf(stderr, "flightrec: --lib %s: cannot read %s: %s\n", name, eq + 1,
			strerror(errno));
		return -1;
	}
	o->libs[o->n_libs++] = (struct lib_opt){bit, eq + 1};
	return 0;
}

static int parse_pids(const char *list, struct record_opts *o)
{
	char buf[1024];
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		unsigned long v = 0;
		if (parse_uint(tok, "pid", 4194304, &v))
			return -1;
		if (v == 0) {
			fprintf(stderr, "flightrec: invalid pid '%s'\n", tok);
			return -1;
		}
		if (o->n_pids == MAX_TARGET_PIDS) {
			fprintf(stderr, "flightrec: at most %d pids\n", MAX_TARGET_PIDS);
			return -1;
		}
		o->pids[o->n_pids++] = (uint32_t)v;
	}
	return 0;
}

int record_opts_parse(int argc, char **argv, struct record_opts *o)
{
	static const struct option longopts[] = {
		{"output", required_argument, 0, 'o'},
		{"freq", required_argument, 0, 'F'},
		{"duration", required_argument, 0, 'd'},
		{"probes", required_argument, 0, 'P'},
		{"pid", required_argument, 0, 'p'},
		{"cgroup", required_argument, 0, 'G'},
		{"syscall-min-us", required_argument, 0, OPT_SYSCALL_MIN_US},
		{"sched-min-us", required_argument, 0, OPT_SCHED_MIN_US},
		{"gpu-kernels", no_argument, 0, OPT_GPU_KERNELS},
		{"no-syscall-stacks", no_argument, 0, OPT_NO_SYSCALL_STACKS},
		{"stack", required_argument, 0, OPT_STACK},
		{"buffer-mib", required_argument, 0, OPT_RING_MIB},
		{"ring-mib", required_argument, 0, OPT_RING_MIB},
		{"ring", required_argument, 0, OPT_RING},
		{"trigger", required_argument, 0, OPT_TRIGGER},
		{"hang-timeout", required_argument, 0, OPT_HANG_TIMEOUT},
		{"trigger-delay", required_argument, 0, OPT_TRIGGER_DELAY},
		{"max-snapshots", required_argument, 0, OPT_MAX_SNAPSHOTS},
		{"max-snapshot-bytes", required_argument, 0, OPT_MAX_SNAPSHOT_BYTES},
		{"snapshot-interval", required_argument, 0, OPT_SNAPSHOT_INTERVAL},
		{"status-interval", required_argument, 0, OPT_STATUS_INTERVAL},
		{"on-snapshot", required_argument, 0, OPT_ON_SNAPSHOT},
		{"codec", required_argument, 0, OPT_CODEC},
		{"level", required_argument, 0, OPT_LEVEL},
		{"chunk-kib", required_argument, 0, OPT_CHUNK_KIB},
		{"test-realtime-offset", required_argument, 0, OPT_REALTIME_OFFSET},
		{"lib", required_argument, 0, OPT_LIB},
		{"launch-stack-every", required_argument, 0, OPT_LAUNCH_STACK_EVERY},
		{"step-marker", required_argument, 0, OPT_STEP_MARKER},
		{"rdma-counters", required_argument, 0, OPT_RDMA_COUNTERS},
		{"stack-size", required_argument, 0, OPT_STACK_SIZE},
		{"no-python", no_argument, 0, OPT_NO_PYTHON},
		{"probe-cost", no_argument, 0, OPT_PROBE_COST},
		{"cache-dir", required_argument, 0, OPT_CACHE_DIR},
		{"cache-max", required_argument, 0, OPT_CACHE_MAX},
		{"no-cache", no_argument, 0, OPT_NO_CACHE},
		{"verbose", no_argument, 0, 'v'},
		{"quiet", no_argument, 0, 'q'},
		{"force", no_argument, 0, OPT_FORCE},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	unsigned long v;
	int c;

	memset(o, 0, sizeof(*o));
	o->freq_hz = 99;
	o->probes = probes_selectable();
	o->launch_stack_every = 64;
	o->sched_min_ns = 1000000;
	o->rdma_counters_dir = "/sys/class/infiniband";
	o->syscall_stacks = true;
	o->stack_kib = 16;
	/* complete stacks through code without frame pointers (CPython, the
	 * PyTorch wheels) need the stack copy; fp stays for the cheap mode */
	o->stack_dwarf = true;
	o->python = true;
	o->cache = true;
	o->cache_max_bytes = UNWIND_CACHE_DEFAULT_MAX;
	o->buffer_mib = 64;
	o->triggers = TRIGGER_BIT(FR_TRIGGER_OOM) | TRIGGER_BIT(FR_TRIGGER_NCCL_ERROR) |
		      TRIGGER_BIT(FR_TRIGGER_HANG) | TRIGGER_BIT(FR_TRIGGER_EXIT);
	o->hang_timeout_s = 60;
	o->trigger_delay_s = 1;
	o->max_snapshots = 10;
	o->max_snapshot_bytes = 16ull << 30;
	o->snapshot_interval_s = 30;
	o->status_interval_s = 3600;
	o->codec = FR_CODEC_ZSTD;
	o->level = 1;
	o->chunk_kib = 4096;

	optind = 1;
	/* '+': stop at the first non-option so COMMAND's own flags stay its own */
	while ((c = getopt_long(argc, argv, "+o:F:d:P:p:G:vqh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->output = optarg;
			break;
		case 'F':
			if (parse_uint(optarg, "--freq", 100000, &v))
				return -1;
			if (v == 0) {
				fprintf(stderr, "flightrec: --freq must be at least 1 Hz\n");
				return -1;
			}
			o->freq_hz = (unsigned)v;
			break;
		case 'd': {
			char *end;
			o->duration_s = strtod(optarg, &end);
			if (end == optarg || *end || o->duration_s <= 0) {
				fprintf(stderr, "flightrec: invalid --duration '%s' (seconds > 0)\n", optarg);
				return -1;
			}
			break;
		}
		case 'P':
			if (parse_probes(optarg, &o->probes))
				return -1;
			o->probes_given = true;
			break;
		case 'p':
			if (parse_pids(optarg, o))
				return -1;
			break;
		case 'G':
			o->cgroup_path = optarg;
			break;
		case OPT_SYSCALL_MIN_US:
			if (parse_uint(optarg, "--syscall-min-us", 3600000000ul, &v))
				return -1;
			o->syscall_min_ns = (uint64_t)v * 1000;
			break;
		case OPT_GPU_KERNELS:
			o->gpu_kernels = true;
			break;
		case OPT_SCHED_MIN_US:
			if (parse_uint(optarg, "--sched-min-us", 3600000000ul, &v))
				return -1;
			o->sched_min_ns = (uint64_t)v * 1000;
			break;
		case OPT_NO_SYSCALL_STACKS:
			o->syscall_stacks = false;
			break;
		case OPT_STACK:
			if (!strcmp(optarg, "fp")) {
				o->stack_dwarf = false;
			} else if (!strcmp(optarg, "dwarf")) {
				o->stack_dwarf = true;
			} else {
				fprintf(stderr, "flightrec: unknown --stack '%s' (fp or dwarf)\n", optarg);
				return -1;
			}
			break;
		case OPT_STACK_SIZE:
			if (parse_uint(optarg, "--stack-size", 32, &v))
				return -1;
			if (v < 1) {
				fprintf(stderr, "flightrec: --stack-size must be 1 to 32 KiB\n");
				return -1;
			}
			o->stack_kib = (unsigned)v;
			break;
		case OPT_NO_PYTHON:
			o->python = false;
			break;
		case OPT_PROBE_COST:
			o->probe_cost = true;
			break;
		case OPT_CACHE_DIR:
			if (!*optarg) {
				fprintf(stderr, "flightrec: --cache-dir needs a directory (or pass "
					"--no-cache)\n");
				return -1;
			}
			o->cache_dir = optarg;
			break;
		case OPT_CACHE_MAX:
			if (parse_size(optarg, "--cache-max", &o->cache_max_bytes))
				return -1;
			break;
		case OPT_NO_CACHE:
			o->cache = false;
			break;
		case OPT_RING_MIB:
			if (parse_uint(optarg, "--buffer-mib", 4096, &v))
				return -1;
			if (v == 0 || (v & (v - 1))) {
				fprintf(stderr, "flightrec: --buffer-mib must be a power of two\n");
				return -1;
			}
			o->buffer_mib = (unsigned)v;
			break;
		case OPT_RING:
			if (parse_size(optarg, "--ring", &o->ring_bytes))
				return -1;
			if (o->ring_bytes < (64u << 10)) {
				fprintf(stderr, "flightrec: --ring %s is too small to hold a chunk "
					"(at least 64K)\n", optarg);
				return -1;
			}
			break;
		case OPT_TRIGGER: {
			const char *bad;
			if (triggers_parse(optarg, &o->triggers, &bad)) {
				fprintf(stderr, "flightrec: unknown trigger '%s' in --trigger (oom, "
					"nccl-error, exit, all; SIGUSR2 is always on)\n", bad);
				return -1;
			}
			break;
		}
		case OPT_HANG_TIMEOUT:
			if (parse_seconds(optarg, "--hang-timeout", false, &o->hang_timeout_s))
				return -1;
			break;
		case OPT_TRIGGER_DELAY:
			if (parse_seconds(optarg, "--trigger-delay", true, &o->trigger_delay_s))
				return -1;
			break;
		case OPT_MAX_SNAPSHOTS:
			if (parse_uint(optarg, "--max-snapshots", 100000, &v))
				return -1;
			o->max_snapshots = (unsigned)v;
			break;
		case OPT_MAX_SNAPSHOT_BYTES:
			if (parse_size(optarg, "--max-snapshot-bytes", &o->max_snapshot_bytes))
				return -1;
			break;
		case OPT_ON_SNAPSHOT:
			o->on_snapshot = optarg;
			break;
		case OPT_SNAPSHOT_INTERVAL:
			if (parse_seconds(optarg, "--snapshot-interval", true, &o->snapshot_interval_s))
				return -1;
			break;
		case OPT_STATUS_INTERVAL:
			if (parse_seconds(optarg, "--status-interval", true, &o->status_interval_s))
				return -1;
			break;
		case OPT_CODEC:
			if (!strcmp(optarg, "zstd"))
				o->codec = FR_CODEC_ZSTD;
			else if (!strcmp(optarg, "zlib"))
				o->codec = FR_CODEC_ZLIB;
			else if (!strcmp(optarg, "none"))
				o->codec = FR_CODEC_NONE;
			else {
				fprintf(stderr, "flightrec: unknown --codec '%s' (zstd, zlib, none)\n", optarg);
				return -1;
			}
			break;
		case OPT_LEVEL:
			if (parse_uint(optarg, "--level", 19, &v))
				return -1;
			o->level = (int)v;
			break;
		case OPT_CHUNK_KIB:
			if (parse_uint(optarg, "--chunk-kib", 65536, &v))
				return -1;
			if (v < 64) {
				fprintf(stderr, "flightrec: --chunk-kib must be at least 64\n");
				return -1;
			}
			o->chunk_kib = (unsigned)v;
			break;
		case OPT_REALTIME_OFFSET: {
			char *end;
			o->realtime_offset_s = strtod(optarg, &end);
			if (end == optarg || *end) {
				fprintf(stderr, "flightrec: invalid --test-realtime-offset '%s'\n", optarg);
				return -1;
			}
			break;
		}
		case OPT_LIB:
			if (parse_lib(optarg, o))
				return -1;
			break;
		case OPT_LAUNCH_STACK_EVERY:
			if (parse_uint(optarg, "--launch-stack-every", 1000000, &v))
				return -1;
			o->launch_stack_every = (unsigned)v;
			break;
		case OPT_STEP_MARKER:
			o->step_marker = optarg;
			break;
		case OPT_RDMA_COUNTERS:
			o->rdma_counters_dir = optarg;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'q':
			o->quiet = true;
			break;
		case OPT_FORCE:
			o->force = true;
			break;
		case 'h':
			record_usage(stdout);
			return 1;
		default:
			fprintf(stderr, "flightrec: see 'flightrec record --help'\n");
			return -1;
		}
	}
	if (optind < argc) {
		if (strcmp(argv[optind - 1], "--") != 0) {
			fprintf(stderr, "flightrec: unexpected argument '%s' (put the command "
				"after '--')\n", argv[optind]);
			return -1;
		}
		o->command = &argv[optind];
		o->command_argc = argc - optind;
	}
	/* The gpu family attaches only to the CUDA injection library, which a
	 * job loads when CUDA_INJECTION64_PATH names it: by default it is
	 * loaded (its programs verified, ~0.4 s here) only when this recording
	 * sets that variable or the command inherits it from here; --probes
	 * gpu asks for it with an attached job started with the variable. */
	const char *inject = getenv("CUDA_INJECTION64_PATH");
	if (o->gpu_kernels)
		o->probes |= PROBE_BIT(FR_PROBE_GPU);
	else if (!o->probes_given && !(o->command && inject && inject[0]))
		o->probes &= ~PROBE_BIT(FR_PROBE_GPU);
	if (!o->cache_dir) {
		const char *env = getenv("FLIGHTREC_CACHE_DIR");
		o->cache_dir = env && *env ? env : UNWIND_CACHE_DEFAULT_DIR;
	}
	if (!o->output) {
		fprintf(stderr, "flightrec: no output file; pass -o FILE\n");
		return -1;
	}
	int targets = (o->command != NULL) + (o->n_pids > 0) + (o->cgroup_path != NULL);
	if (targets != 1) {
		fprintf(stderr, "flightrec: %s; give exactly one of '-- COMMAND', --pid "
			"or --cgroup\n", targets ? "several targets" : "nothing to record");
		return -1;
	}
	return 0;
}
