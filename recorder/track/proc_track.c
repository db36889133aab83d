/* Process, thread and mapping tracking (see proc_track.h). */
#include "track/proc_track.h"
#include "attach/lib_hold.h"
#include "clock.h"
#include "inspect/proc_maps.h"
#include "inspect/proc_text.h"
#include "attach/rdma_datapath.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#define TRACK_RING_PAGES 64 /* data pages per CPU (256 KiB) */
#define FORGET_DELAY_NS (2ull * 1000000000ull)

struct perf_ring {
	int fd;
	void *base;
	size_t map_len;
	uint8_t *data;
	uint64_t data_size;
};

struct pending_pid {
	uint16_t type; /* FR_EV_PROC_* */
	uint32_t pid;
	uint32_t ppid;
	uint64_t ts_ns;  /* of the event */
	uint64_t addrs[3]; /* FR_EV_RDMA_CTRL (ops table): post_send, post_recv, poll_cq */
	uint64_t due_ns; /* for forgetting exited pids */
	int32_t exit_code; /* FR_EV_PROC_EXIT */
};

struct proc_track {
	struct bpf_probes *probes;
	struct dso_table *dsos;
	struct sym_collector *syms;
	struct frec_builder *builder;
	track_stats_fn stats_fn;
	void *stats_ctx;
	track_new_file_fn new_file_fn;
	void *new_file_ctx;
	struct uprobe_family *rdma_dp;
	struct rdma_counters *rdma_counters;
	struct python_state *python;
	struct job_pids *job;
	bool dwarf;
	struct unwind_cache *unwind_cache;
	struct ustack_sparse *sparse;
	struct unwind_writer_stats unwind;
	bool quiet;
	int64_t realtime_offset_ns;
	const char *cgroup_v2_path;

	struct perf_ring *rings;
	int n_rings;
	/* processes held at dlopen's return until the libraries it mapped are
	 * handled here (lib_hold.h) */
	struct lib_hold lib_hold;

	pthread_mutex_t lock;
	struct pending_pid *pending;
	size_t n_pending, cap_pending;
	struct pending_pid *forget;
	size_t n_forget, cap_forget;

	pthread_t thread;
	bool running; /* the thread was made and not yet joined */
	atomic_int stop;
	atomic_uint_fast64_t mmap_lost;    /* perf mmap records the kernel lost */
	atomic_uint_fast64_t mappings;     /* mapping records written */
	uint64_t mappings_again;           /* not written: the same mapping was there */
	/* ring mode: the exited processes handed to frec_writer_ring_retire
	 * once their metadata is sealed (NULL writer: file mode, nothing is
	 * retired from a file) */
	struct frec_writer *ring_writer;
	struct frec_retired *retiring;
	size_t n_retiring, cap_retiring;
	atomic_uint_fast64_t processes_seen, processes_exited; /* read by the main thread */
	uint64_t last_tick_ns;
	uint64_t last_meta_flush_ns;
	/* proc_track_flush_sync: requests and the last one done */
	atomic_uint flush_req, flush_done;
};

static int open_tracking_event(int cpu)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_DUMMY,
		.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
		.mmap = 1,
		.mmap2 = 1,
		.build_id = 1,
		.sample_id_all = 1,
		.use_clockid = 1,
		.clockid = CLOCK_MONOTONIC,
		/* wake the tracking thread at every mapping (1 byte of data):
		 * probes on a new library attach sooner, and mappings are rare */
		.watermark = 1,
		.wakeup_watermark = 1,
	};
	int fd = (int)syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 && errno == EINVAL) {
		attr.build_id = 0; /* kernels before 5.12 */
		fd = (int)syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	}
	return fd;
}

int proc_track_open(const struct proc_track_config *cfg, struct proc_track **out,
		    struct frec_error *err)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct proc_track *t = calloc(1, sizeof(*t));
	int rc = -ENOMEM;

	*out = NULL;
	if (!t) {
		frec_error_set(err, "tracking", -1, ENOMEM, "out of memory");
		return -ENOMEM;
	}
	pthread_mutex_init(&t->lock, NULL);
	lib_hold_init(&t->lib_hold);
	t->probes = cfg->probes;
	t->dsos = cfg->dsos;
	t->syms = cfg->syms;
	t->stats_fn = cfg->stats_fn;
	t->stats_ctx = cfg->stats_ctx;
	t->new_file_fn = cfg->new_file_fn;
	t->new_file_ctx = cfg->new_file_ctx;
	t->rdma_dp = cfg->rdma_dp;
	t->rdma_counters = cfg->rdma_counters;
	t->python = cfg->python;
	t->job = cfg->job;
	t->dwarf = cfg->dwarf;
	t->unwind_cache = cfg->unwind_cache;
	t->sparse = cfg->sparse;
	t->quiet = cfg->quiet;
	t->realtime_offset_ns = cfg->realtime_offset_ns;
	t->cgroup_v2_path = cfg->cgroup_v2_path;
	t->ring_writer = cfg->ring ? cfg->writer : NULL;
	t->builder = frec_builder_new(cfg->writer, FR_CHUNK_META);
	if (ncpu > 0)
		t->rings = calloc((size_t)ncpu, sizeof(*t->rings));
	if (!t->builder || !t->rings) {
		frec_error_set(err, "tracking", -1, ENOMEM, "out of memory");
		goto fail;
	}
	for (int cpu = 0; cpu < ncpu; cpu++) {
		int fd = open_tracking_event(cpu);
		if (fd < 0) {
			if (errno == ENODEV)
				continue;
			rc = -errno;
			frec_error_set(err, "tracking", -1, errno,
				       "cannot open the mmap tracking event on CPU %d: %s", cpu,
				       strerror(errno));
			goto fail;
		}
		struct perf_ring *r = &t->rings[t->n_rings];
		r->fd = fd;
		r->map_len = (1 + TRACK_RING_PAGES) * page;
		r->base = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (r->base == MAP_FAILED) {
			rc = -errno;
			frec_error_set(err, "tracking", -1, errno,
				       "cannot map the mmap tracking buffer: %s", strerror(errno));
			close(fd);
			goto fail;
		}
		r->data = (uint8_t *)r->base + page;
		r->data_size = TRACK_RING_PAGES * page;
		t->n_rings++;
	}
	*out = t;
	return 0;
fail:
	proc_track_close(t);
	return rc;
}

struct frec_builder *proc_track_builder(struct proc_track *t)
{
	return t->builder;
}

struct proc_track_counts proc_track_counts(const struct proc_track *t)
{
	/* the atomics are read through a cast: C11's atomic_load takes no
	 * pointer to const */
	struct proc_track *m = (struct proc_track *)t;
	return (struct proc_track_counts){
		.mappings = atomic_load(&m->mappings),
		.mmap_lost = atomic_load(&m->mmap_lost),
		.processes_seen = atomic_load(&m->processes_seen),
		.processes_exited = atomic_load(&m->processes_exited),
	};
}

const struct unwind_writer_stats *proc_track_unwind(const struct proc_track *t)
{
	return &t->unwind;
}

/* ---- records ----------------------------------------------------------- */

/* mf: the mapping as the kernel reported it (path, range, identity). */
static void write_mapping(struct proc_track *t, const struct mapped_file *mf, uint64_t ts_ns,
			  uint64_t pgoff)
{
	bool is_new;
	uint32_t pid = mf->pid;
	uint64_t start = mf->start, len = mf->end - mf->start;
	const char *path = mf->path;
	const uint8_t *bid = mf->build_id;
	uint8_t bid_len = bid ? mf->build_id_len : 0;
	size_t path_len = strnlen(path, 4096);
	uint32_t dso_id = dso_table_lookup_or_add(t->dsos, mf, &is_new);
	const struct dso *d = dso_table_get(t->dsos, dso_id);
	/* the dso table only grows on this thread: d stays valid below */
	uint32_t size = FR_ALIGN8(sizeof(struct fr_rec_mapping) + path_len);
	struct fr_rec_mapping *m;

	if (d && !bid_len) {
		bid = d->build_id;
		bid_len = d->build_id_len;
	}
	struct mapping rec = {.pid = pid, .dso_id = dso_id, .start = start, .end = start + len,
			      .pgoff = pgoff, .ts_ns = ts_ns};
	/* a library mapped again where it was (dlopen after dlclose, every
	 * epoch): the record there says it already */
	bool again = dso_id && !is_new && dso_table_has_mapping(t->dsos, &rec);
	if (again)
		t->mappings_again++;
	else
		dso_table_add_mapping(t->dsos, &rec);
	m = again ? NULL : frec_builder_reserve(t->builder, size);
	if (m) {
		memset(m, 0, size);
		m->h.size = size;
		m->h.type = FR_REC_MAPPING;
		m->ts_ns = ts_ns;
		m->pid = pid;
		m->dso_id = dso_id;
		m->start = start;
		m->end = start + len;
		m->pgoff = pgoff;
		m->build_id_len = bid_len > 20 ? 20 : bid_len;
		if (bid_len)
			memcpy(m->build_id, bid, m->build_id_len);
		m->path_len = (uint16_t)path_len;
		memcpy(m + 1, path, path_len);
		frec_builder_commit(t->builder, ts_ns);
		atomic_fetch_add(&t->mappings, 1);
	}
	if (is_new && dso_id && t->dwarf && d) {
		uint8_t *image = NULL;
		size_t image_len = 0;
		unwind_cache_write_file(t->unwind_cache, t->builder, dso_id, d->fd, d->path,
					d->build_id, d->build_id_len, &t->unwind,
					t->sparse ? &image : NULL, &image_len);
		if (image) /* the bytes just written: the planner unwinds as the analyzer will */
			ustack_sparse_add_image(t->sparse, dso_id, image, image_len);
	}
	if (t->python)
		python_on_mapping(t->python, t->builder, mf, pgoff, ts_ns);
	if (t->job && dso_id && job_pids_is_job_library(path))
		job_pids_mark(t->job, pid, JOB_LIB, ts_ns, 0);
	/* after the mapping record, so the attach records follow it */
	if (is_new && dso_id && t->new_file_fn)
		t->new_file_fn(t->new_file_ctx, t->builder, mf, ts_ns);
	if (is_new && dso_id && t->lib_hold.on && d)
		lib_hold_on_file(&t->lib_hold, path, d->fd); /* a libc: its dlopen is probed */
}

static ssize_t read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, total = 0;
	if (fd < 0)
		return -1;
	while ((size_t)total < len && (n = read(fd, buf + total, len - (size_t)total)) > 0)
		total += n;
	close(fd);
	return total;
}

static void write_threads(struct proc_track *t, uint32_t pid, uint64_t now)
{
	char path[64];
	DIR *dir;
	struct dirent *de;

	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	if (!(dir = opendir(path)))
		return;
	while ((de = readdir(dir))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		char cpath[320], comm[32] = {0};
		snprintf(cpath, sizeof(cpath), "/proc/%u/task/%s/comm", pid, de->d_name);
		ssize_t n = read_file(cpath, comm, sizeof(comm) - 1);
		if (n <= 0)
			continue;
		comm[strcspn(comm, "\n")] = 0;
		struct fr_rec_thread r = {
			.h = {.size = sizeof(r), .type = FR_REC_THREAD},
			.ts_ns = now,
			.pid = pid,
			.tid = (uint32_t)strtoul(de->d_name, NULL, 10),
		};
		memcpy(r.comm, comm, strnlen(comm, sizeof(r.comm) - 1));
		frec_builder_append(t->builder, &r, sizeof(r), now);
	}
	closedir(dir);
}

/* FR_REC_PROC_ENV from /proc/PID/environ (as the process started). */
static void write_env(struct proc_track *t, uint32_t pid, uint32_t ppid, uint64_t now)
{
	static char env[65536];
	char path[64], out[4096];
	size_t out_len;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%u/environ", pid);
	n = read_file(path, env, sizeof(env));
	if (n <= 0)
		return;
	if (t->job) {
		/* a rank is the job; its helpers, which inherit its variables, are not */
		uint64_t rank = job_pids_env_rank(env, (size_t)n);
		if (rank)
			job_pids_mark(t->job, pid, job_pids_rank(t->job, ppid) == rank ? 0 : JOB_RANK,
				      now, rank);
	}
	out_len = proc_env_keep(env, (size_t)n, out, sizeof(out));
	if (!out_len)
		return;
	uint32_t size = FR_ALIGN8(sizeof(struct fr_rec_proc_env) + out_len);
	struct fr_rec_proc_env *r = frec_builder_reserve(t->builder, size);
	if (!r)
		return;
	memset(r, 0, size);
	r->h.size = size;
	r->h.type = FR_REC_PROC_ENV;
	r->ts_ns = now;
	r->pid = pid;
	r->len = (uint32_t)out_len;
	memcpy(r + 1, out, out_len);
	frec_builder_commit(t->builder, now);
}

/* FR_REC_PROC_CGROUP from /proc/PID/cgroup. */
static void write_cgroup(struct proc_track *t, uint32_t pid, uint64_t now)
{
	char path[64], text[8192], cg[FR_CGROUP_PATH_MAX + 1];
	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	ssize_t n = read_file(path, text, sizeof(text));
	size_t len = n > 0 ? proc_cgroup_path(text, (size_t)n, cg, sizeof(cg)) : 0;
	if (!len)
		return;
	uint32_t size = FR_ALIGN8(sizeof(struct fr_rec_proc_cgroup) + len);
	struct fr_rec_proc_cgroup *r = frec_builder_reserve(t->builder, size);
	if (!r)
		return;
	memset(r, 0, size);
	r->h.size = size;
	r->h.type = FR_REC_PROC_CGROUP;
	r->ts_ns = now;
	r->pid = pid;
	r->len = (uint32_t)len;
	memcpy(r + 1, cg, len);
	frec_builder_commit(t->builder, now);
}

/* Process record from /proc; false when the process is already gone. */
static bool write_process(struct proc_track *t, uint32_t pid, const char *fallback_comm)
{
	char path[64], stat[1024], status[4096];
	static char cmdline[65536];
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	struct fr_rec_process p = {.h = {.type = FR_REC_PROCESS}, .ts_ns = now, .pid = pid};
	ssize_t n, cmd_len;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	n = read_file(path, stat, sizeof(stat) - 1);
	if (n <= 0) {
		if (!fallback_comm)
			return false;
		memcpy(p.comm, fallback_comm, strnlen(fallback_comm, sizeof(p.comm) - 1));
		cmd_len = 0;
	} else {
		struct proc_stat_fields sf;
		if (proc_stat_parse(stat, (size_t)n, &sf) == 0) {
			memcpy(p.comm, sf.comm, strnlen(sf.comm, sizeof(p.comm) - 1));
			if (sf.has_ppid)
				p.ppid = sf.ppid;
			if (sf.has_start) {
				long hz = sysconf(_SC_CLK_TCK);
				uint64_t since_boot = sf.start_ticks * (1000000000ull / (uint64_t)(hz > 0 ? hz : 100));
				uint64_t boot_minus_mono = clock_ns(CLOCK_BOOTTIME) - now;
				p.start_time_ns = since_boot > boot_minus_mono ? since_boot - boot_minus_mono : 0;
			}
		}
		snprintf(path, sizeof(path), "/proc/%u/status", pid);
		n = read_file(path, status, sizeof(status));
		if (n > 0)
			p.ns_pid = proc_status_nspid(status, (size_t)n);
		snprintf(path, sizeof(path), "/proc/%u/cmdline", pid);
		cmd_len = read_file(path, cmdline, sizeof(cmdline));
		if (cmd_len < 0)
			cmd_len = 0;
	}
	p.cmdline_len = (uint32_t)cmd_len;
	p.h.size = FR_ALIGN8(sizeof(p) + (uint32_t)cmd_len);
	uint8_t *out = frec_builder_reserve(t->builder, p.h.size);
	if (out) {
		memset(out, 0, p.h.size);
		memcpy(out, &p, sizeof(p));
		memcpy(out + sizeof(p), cmdline, (size_t)cmd_len);
		frec_builder_commit(t->builder, now);
	}
	if (n > 0) {
		write_threads(t, pid, now);
		write_env(t, pid, p.ppid, now);
		write_cgroup(t, pid, now);
	}
	return true;
}

/* Mappings of a process that already runs, from /proc/PID/maps.  Whole
 * lines (getline): a fixed buffer would cut a long path, and the rest of a
 * crafted name would then parse as a mapping of another file. */
static void write_existing_maps(struct proc_track *t, uint32_t pid)
{
	char path[64], name[PROC_MAPS_PATH_MAX + 1];
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f;
	uint64_t now = clock_ns(CLOCK_MONOTONIC);

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	if (!(f = fopen(path, "r")))
		return;
	while ((n = getline(&line, &cap, f)) > 0) {
		struct proc_maps_entry e;
		if (proc_maps_parse_line(line, (size_t)n, &e) || !strchr(e.perms, 'x'))
			continue;
		memcpy(name, e.path, e.path_len);
		name[e.path_len] = 0;
		write_mapping(t, &(struct mapped_file){
			.pid = pid, .path = e.path_len ? name : "//anon", .start = e.start,
			.end = e.end, .has_inode = e.ino != 0,
			.dev = makedev(e.dev_major, e.dev_minor), .ino = e.ino}, now, e.offset);
	}
	free(line);
	fclose(f);
}

/* The files a process already had open when the recorder attached
 * (FR_EV_FD_PATH, source FR_FD_PATH_AT_ATTACH): opens before the attach
 * are not seen, and findings name a checkpoint or data file by its fd. */
static void write_existing_fds(struct proc_track *t, uint32_t pid)
{
	char dir_path[64];
	DIR *dir;
	struct dirent *de;
	uint64_t now = clock_ns(CLOCK_MONOTONIC);

	snprintf(dir_path, sizeof(dir_path), "/proc/%u/fd", pid);
	if (!(dir = opendir(dir_path)))
		return;
	while ((de = readdir(dir))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		char link[64 + sizeof(de->d_name)];
		struct fr_ev_fd_path e = {
			.c = {.h = {.size = sizeof(e), .type = FR_EV_FD_PATH}, .ts_ns = now,
			      .pid = pid, .tid = pid},
			.fd = (int32_t)strtol(de->d_name, NULL, 10),
			.source = FR_FD_PATH_AT_ATTACH,
		};
		snprintf(link, sizeof(link), "%s/%s", dir_path, de->d_name);
		ssize_t n = readlink(link, e.path, sizeof(e.path) - 1);
		if (n <= 0)
			continue;
		e.path[n] = 0;
		e.path_len = (uint16_t)n;
		frec_builder_append(t->builder, &e, sizeof(e), now);
	}
	closedir(dir);
}

void proc_track_add_existing(struct proc_track *t, uint32_t pid)
{
	write_process(t, pid, NULL);
	write_existing_maps(t, pid);
	write_existing_fds(t, pid);
}

/* A forked child shares its parent's mappings without any mmap: write them
 * again under the child's pid, timestamped at the fork, so the child's
 * stacks resolve even when it exits before /proc could be read. */
static void inherit_mappings(struct proc_track *t, uint32_t ppid, uint32_t pid, uint64_t ts)
{
	struct mapping *copy = NULL;
	size_t n = 0;

	pthread_mutex_lock(&t->dsos->lock);
	for (size_t i = 0; i < t->dsos->n_maps; i++)
		if (t->dsos->maps[i].pid == ppid)
			n++;
	if (n && (copy = malloc(n * sizeof(*copy)))) {
		n = 0;
		for (size_t i = 0; i < t->dsos->n_maps; i++)
			if (t->dsos->maps[i].pid == ppid)
				copy[n++] = t->dsos->maps[i];
	}
	pthread_mutex_unlock(&t->dsos->lock);
	for (size_t i = 0; copy && i < n; i++) {
		const struct dso *d = dso_table_get(t->dsos, copy[i].dso_id);
		uint8_t bid[20], bid_len = d ? d->build_id_len : 0;
		const char *path = d ? d->path : "//anon"; /* strings never move */
		if (bid_len)
			memcpy(bid, d->build_id, bid_len);
		/* the parent's identity of the file: the child maps the same one */
		write_mapping(t, &(struct mapped_file){
			.pid = pid, .path = path, .start = copy[i].start, .end = copy[i].end,
			.build_id = bid_len ? bid : NULL, .build_id_len = bid_len,
			.has_inode = d && d->has_inode, .dev = d ? d->dev : 0,
			.ino = d ? d->ino : 0}, ts, copy[i].pgoff);
	}
	free(copy);
}

/* ---- cgroup mode membership ------------------------------------------ */

static bool pid_in_cgroup(const char *cg_path, uint32_t pid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	ssize_t n = read_file(path, buf, sizeof(buf) - 1);
	if (n <= 0)
		return false;
	buf[n] = 0;
	char *l = strstr(buf, "0::");
	if (!l || (l != buf && l[-1] != '\n'))
		return false;
	l += 3;
	l[strcspn(l, "\n")] = 0;
	size_t len = strlen(cg_path);
	return !strncmp(l, cg_path, len) && (l[len] == 0 || l[len] == '/');
}

static bool pid_is_traced(struct proc_track *t, uint32_t pid)
{
	if (t->cgroup_v2_path)
		return pid_in_cgroup(t->cgroup_v2_path, pid);
	return bpf_probes_pid_state(t->probes, pid) != 0;
}

/* ---- perf mmap records -------------------------------------------------- */

struct mmap2_rec {
	struct perf_event_header header;
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	union {
		struct {
			uint32_t maj, min;
			uint64_t ino, ino_generation;
		};
		struct {
			uint8_t build_id_size;
			uint8_t reserved1;
			uint16_t reserved2;
			uint8_t build_id[20];
		};
	};
	uint32_t prot, flags;
	char filename[];
};

static void handle_perf_record(struct proc_track *t, const uint8_t *rec, size_t size)
{
	const struct perf_event_header *h = (const void *)rec;

	if (h->type == PERF_RECORD_LOST && size >= sizeof(*h) + 16) {
		uint64_t lost;
		memcpy(&lost, rec + sizeof(*h) + 8, 8);
		atomic_fetch_add(&t->mmap_lost, lost);
		return;
	}
	if (h->type != PERF_RECORD_MMAP2 || size < sizeof(struct mmap2_rec) + 16)
		return;
	const struct mmap2_rec *m = (const void *)rec;
	if (!pid_is_traced(t, m->pid))
		return;
	/* sample_id (pid, tid, time) closes the record: time is the last u64 */
	uint64_t ts;
	memcpy(&ts, rec + size - 8, 8);
	size_t name_max = size - sizeof(*m) - 16;
	char name[4096];
	size_t nlen = strnlen(m->filename, name_max < sizeof(name) - 1 ? name_max : sizeof(name) - 1);
	memcpy(name, m->filename, nlen);
	name[nlen] = 0;
	/* the record names the file by build-id when the kernel could read
	 * one, else by device and inode: either tells the mapped file from
	 * what its name points to later */
	bool has_bid = h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID;
	write_mapping(t, &(struct mapped_file){
		.pid = m->pid, .path = name, .start = m->addr, .end = m->addr + m->len,
		.build_id = has_bid ? m->build_id : NULL,
		.build_id_len = has_bid ? m->build_id_size : 0, .has_inode = !has_bid,
		.dev = has_bid ? 0 : makedev(m->maj, m->min), .ino = has_bid ? 0 : m->ino},
		ts, m->pgoff);
}

static void drain_ring(struct proc_track *t, struct perf_ring *r)
{
	struct perf_event_mmap_page *meta = r->base;
	uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = meta->data_tail;
	uint8_t buf[8192];

	while (tail < head) {
		struct perf_event_header h;
		uint64_t off = tail % r->data_size;
		/* a record may wrap around the end of the buffer */
		for (size_t i = 0; i < sizeof(h); i++)
			((uint8_t *)&h)[i] = r->data[(off + i) % r->data_size];
		if (h.size < sizeof(h) || h.size > head - tail)
			break;
		if (h.size <= sizeof(buf)) {
			for (size_t i = 0; i < h.size; i++)
				buf[i] = r->data[(off + i) % r->data_size];
			handle_perf_record(t, buf, h.size);
		}
		tail += h.size;
	}
	__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

/* ---- periodic records ---------------------------------------------------- */

void proc_track_write_clock(struct proc_track *t)
{
	/* read realtime between two monotonic reads and take the midpoint */
	uint64_t m0 = clock_ns(CLOCK_MONOTONIC);
	uint64_t real = clock_ns(CLOCK_REALTIME);
	uint64_t m1 = clock_ns(CLOCK_MONOTONIC);
	struct fr_rec_clock c = {
		.h = {.size = sizeof(c), .type = FR_REC_CLOCK},
		.mono_ns = m0 + (m1 - m0) / 2,
		.real_ns = real + (uint64_t)t->realtime_offset_ns,
	};
	frec_builder_append(t->builder, &c, sizeof(c), c.mono_ns);
}

static void write_stats(struct proc_track *t)
{
	struct recorder_stats st;
	uint64_t now = clock_ns(CLOCK_MONOTONIC);

	if (!t->stats_fn)
		return;
	t->stats_fn(t->stats_ctx, &st);
	uint32_t size = sizeof(struct fr_rec_stats) + st.n_probes * sizeof(st.probes[0]) +
			st.n_drops * sizeof(st.drops[0]);
	struct fr_rec_stats *s = frec_builder_reserve(t->builder, size);
	if (!s)
		return;
	memset(s, 0, sizeof(*s));
	s->h.size = size;
	s->h.type = FR_REC_STATS;
	s->ts_ns = now;
	s->cpu_user_ns = st.cpu_user_ns;
	s->cpu_sys_ns = st.cpu_sys_ns;
	s->n_probes = st.n_probes;
	s->n_drops = st.n_drops;
	memcpy(s + 1, st.probes, st.n_probes * sizeof(st.probes[0]));
	memcpy((uint8_t *)(s + 1) + st.n_probes * sizeof(st.probes[0]), st.drops,
	       st.n_drops * sizeof(st.drops[0]));
	frec_builder_commit(t->builder, now);
}

/* ---- pending process events --------------------------------------------- */

void proc_track_notify(void *ctx, const struct fr_ev_common *c)
{
	struct proc_track *t = ctx;
	struct pending_pid p = {.type = c->h.type, .pid = c->pid, .ts_ns = c->ts_ns};

	if (c->h.type == FR_EV_RDMA_CTRL) {
		const struct fr_ev_rdma_ctrl *r = (const void *)c;
		p.addrs[0] = r->addr;
		p.addrs[1] = r->length;
		p.addrs[2] = r->obj;
	} else {
		p.ppid = ((const struct fr_ev_proc *)c)->ppid;
		p.exit_code = ((const struct fr_ev_proc *)c)->exit_code;
	}
	pthread_mutex_lock(&t->lock);
	if (t->n_pending == t->cap_pending) {
		size_t cap = t->cap_pending ? t->cap_pending * 2 : 64;
		struct pending_pid *p = realloc(t->pending, cap * sizeof(*p));
		if (!p) {
			pthread_mutex_unlock(&t->lock);
			return;
		}
		t->pending = p;
		t->cap_pending = cap;
	}
	t->pending[t->n_pending++] = p;
	pthread_mutex_unlock(&t->lock);
}

/* What the recorder holds of exited processes goes: their mappings (the
 * files stay), their interpreters and code objects, their place in the
 * exit trigger's job. */
static void forget_pids(struct proc_track *t, uint32_t *pids, size_t n)
{
	if (!n)
		return;
	if (t->python)
		python_forget_pids(t->python, pids, n);
	dso_table_forget_pids(t->dsos, pids, n);
}

static void note_retiring(struct proc_track *t, uint32_t pid, uint64_t exit_ns)
{
	if (t->n_retiring == t->cap_retiring) {
		size_t cap = t->cap_retiring ? t->cap_retiring * 2 : 64;
		struct frec_retired *v = realloc(t->retiring, cap * sizeof(*v));
		if (!v)
			return; /* its metadata stays in the ring */
		t->retiring = v;
		t->cap_retiring = cap;
	}
	t->retiring[t->n_retiring++] = (struct frec_retired){.pid = pid, .exit_ns = exit_ns};
}

/* After a flush: everything written about the exited processes is sealed,
 * so the ring may drop it once their exits have left it. */
static void hand_retiring(struct proc_track *t)
{
	if (!t->n_retiring || frec_builder_bytes(t->builder))
		return;
	if (frec_writer_ring_retire(t->ring_writer, t->retiring, t->n_retiring) == 0)
		t->n_retiring = 0;
}

static void handle_pending(struct proc_track *t)
{
	struct pending_pid *batch;
	size_t n;
	uint64_t now = clock_ns(CLOCK_MONOTONIC);

	pthread_mutex_lock(&t->lock);
	batch = t->pending;
	n = t->n_pending;
	t->pending = NULL;
	t->n_pending = t->cap_pending = 0;
	pthread_mutex_unlock(&t->lock);

	for (size_t i = 0; i < n; i++) {
		struct pending_pid *p = &batch[i];
		if (p->type == FR_EV_RDMA_CTRL) {
			if (t->rdma_dp)
				rdma_datapath_attach(t->rdma_dp, t->dsos, t->builder, p->pid, p->addrs,
						     t->quiet, true);
		} else if (p->type == FR_EV_PROC_EXIT) {
			t->processes_exited++;
			/* a failed one is dropped once the main thread decided it */
			if (t->job && !p->exit_code)
				job_pids_forget(t->job, p->pid);
			if (t->ring_writer)
				note_retiring(t, p->pid, p->ts_ns);

			if (t->n_forget == t->cap_forget) {
				size_t cap = t->cap_forget ? t->cap_forget * 2 : 64;
				struct pending_pid *f = realloc(t->forget, cap * sizeof(*f));
				if (!f)
					continue;
				t->forget = f;
				t->cap_forget = cap;
			}
			t->forget[t->n_forget++] = (struct pending_pid){
				.type = p->type, .pid = p->pid, .due_ns = now + FORGET_DELAY_NS};
		} else {
			if (t->job)
				job_pids_reset(t->job, p->pid, p->ts_ns);
			if (p->type == FR_EV_PROC_FORK) {
				t->processes_seen++;
				inherit_mappings(t, p->ppid, p->pid, p->ts_ns);
				if (t->python)
					python_on_fork(t->python, p->ppid, p->pid, p->ts_ns);
			}
			/* no Python forgetting at an exec: the kernel maps the new
			 * image (a statically linked python's interpreter) inside
			 * execve, before the exec event, so that event comes after
			 * the mapping it would undo; a later interpreter mapping
			 * replaces the entry instead (python_on_mapping) */
			write_process(t, p->pid, NULL);
		}
	}
	free(batch);

	/* late events of an exited pid are still told apart for a while; then
	 * what the recorder holds of it goes */
	size_t w = 0, n_gone = 0;
	uint32_t *gone = t->n_forget ? malloc(t->n_forget * sizeof(*gone)) : NULL;
	for (size_t i = 0; i < t->n_forget; i++) {
		if (t->forget[i].due_ns <= now) {
			if (!t->cgroup_v2_path) /* cgroup mode keeps no pid set */
				bpf_probes_forget_pid(t->probes, t->forget[i].pid);
			if (gone)
				gone[n_gone++] = t->forget[i].pid;
		} else {
			t->forget[w++] = t->forget[i];
		}
	}
	t->n_forget = w;
	forget_pids(t, gone, n_gone);
	free(gone);
}

static void *track_main(void *arg)
{
	struct proc_track *t = arg;
	/* ahead of a job that keeps every CPU busy (see drain_main) */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), -10);

	struct pollfd pfds[1025];
	nfds_t n_pfds = 0;
	for (int i = 0; i < t->n_rings && i < 1024; i++)
		pfds[n_pfds++] = (struct pollfd){.fd = t->rings[i].fd, .events = POLLIN};
	/* a process held at dlopen's return wakes us through this one */
	if (lib_hold_fd(&t->lib_hold) >= 0)
		pfds[n_pfds++] = (struct pollfd){.fd = lib_hold_fd(&t->lib_hold), .events = POLLIN};
	t->last_tick_ns = clock_ns(CLOCK_MONOTONIC);
	while (!atomic_load(&t->stop)) {
		/* the held first, the mappings after: each held process's new
		 * mappings were recorded before it was held, so they are handled
		 * (attached) before it is let go */
		bool held = lib_hold_collect(&t->lib_hold) > 0;
		for (int i = 0; i < t->n_rings; i++)
			drain_ring(t, &t->rings[i]);
		if (held)
			lib_hold_release(&t->lib_hold);
		handle_pending(t);
		if (t->python)
			python_resolve_pending(t->python, t->builder);
		uint64_t now = clock_ns(CLOCK_MONOTONIC);
		/* New processes, mappings, unwind data and symbols reach the file
		 * within 100 ms, ahead of the events that need them: a recording
		 * cut short (disk full, SIGKILL) keeps its events readable. */
		if (frec_builder_bytes(t->builder) && now - t->last_meta_flush_ns >= 100000000ull) {
			frec_builder_flush(t->builder);
			t->last_meta_flush_ns = now;
		}
		hand_retiring(t);
		unsigned req = atomic_load(&t->flush_req);
		bool asked = req != atomic_load(&t->flush_done);
		if (asked || now - t->last_tick_ns >= 1000000000ull) {
			sym_collector_flush(t->syms, t->builder, false);
			if (t->rdma_counters)
				rdma_counters_sample(t->rdma_counters, t->builder);
			proc_track_write_clock(t);
			write_stats(t);
			frec_builder_flush(t->builder);
			t->last_tick_ns = now;
			if (asked)
				atomic_store(&t->flush_done, req);
		}
		poll(pfds, n_pfds, 10);
	}
	lib_hold_collect(&t->lib_hold);
	for (int i = 0; i < t->n_rings; i++)
		drain_ring(t, &t->rings[i]);
	lib_hold_release(&t->lib_hold);
	handle_pending(t);
	return NULL;
}

int proc_track_flush_sync(struct proc_track *t, uint64_t timeout_ns)
{
	unsigned req = atomic_fetch_add(&t->flush_req, 1) + 1;
	uint64_t give_up = clock_ns(CLOCK_MONOTONIC) + timeout_ns;
	struct timespec nap = {0, 1000000};
	while (atomic_load(&t->flush_done) != req) {
		if (clock_ns(CLOCK_MONOTONIC) >= give_up)
			return -1;
		nanosleep(&nap, NULL);
	}
	return 0;
}

int proc_track_start(struct proc_track *t)
{
	char why[400];
	/* before the command runs: it may dlopen at once */
	if (lib_hold_start(&t->lib_hold, t->probes, t->quiet, why, sizeof(why)))
		fprintf(stderr, "flightrec: %s: libraries loaded with dlopen are attached after "
			"they are mapped, and calls made before that are not seen\n", why);
	int err = pthread_create(&t->thread, NULL, track_main, t);
	t->running = err == 0;
	return -err;
}

static void join(struct proc_track *t)
{
	if (!t->running)
		return;
	atomic_store(&t->stop, 1);
	pthread_join(t->thread, NULL);
	t->running = false;
}

struct uprobe_family *proc_track_hold_probes(struct proc_track *t)
{
	return t && t->lib_hold.probes ? &t->lib_hold.dlopen : NULL;
}

void proc_track_stop(struct proc_track *t)
{
	join(t);
	/* every held process goes on; the recording ends */
	lib_hold_stop(&t->lib_hold);
	if (t->python)
		python_resolve_pending(t->python, t->builder);
	sym_collector_flush(t->syms, t->builder, true);
	proc_track_write_clock(t);
	write_stats(t);
	frec_builder_flush(t->builder);
	hand_retiring(t);
	frec_builder_free(t->builder);
	t->builder = NULL;
}

void proc_track_close(struct proc_track *t)
{
	if (!t)
		return;
	join(t);
	lib_hold_stop(&t->lib_hold);
	for (int i = 0; i < t->n_rings; i++) {
		munmap(t->rings[i].base, t->rings[i].map_len);
		close(t->rings[i].fd);
	}
	free(t->rings);
	free(t->pending);
	free(t->forget);
	free(t->retiring);
	if (t->builder)
		frec_builder_free(t->builder);
	pthread_mutex_destroy(&t->lock);
	free(t);
}
