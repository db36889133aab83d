/* `flightrec-analyze sqlite`: one SQLite database from any number of trace
 * files (schema: analyzer/SQLITE_SCHEMA.md).  Parses options and connects
 * the decoder to the writer (out_sqlite.c); the database is written under a
 * temporary name and renamed into place only when complete, so a failure
 * never leaves a half-written OUT.db behind. */
#include "cli.h"
#include "cli_jobs.h"
#include "commands.h"
#include "align.h"
#include "model_findings.h"
#include "model_mem.h"
#include "model_nccl.h"
#include "model_rdma.h"
#include "model_stragglers.h"
#include "out_common.h"
#include "out_sqlite.h"
#include "trace_set.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char sqlite_help[] =
	"usage: " CLI_PROG " sqlite FILE... -o OUT.db [--force] [--jobs N]\n"
	"\n"
	"Write every event of the traces (one file per node) into one SQLite\n"
	"database: processes with host and rank, threads, stacks and frames, CPU\n"
	"samples, system calls, CUDA calls and allocations, memory in use over\n"
	"time, NCCL calls, RDMA work requests and completions, step marks, drops\n"
	"per probe and damaged regions; and what the models derive: collectives\n"
	"matched across ranks, steps, RDMA connections with latency percentiles,\n"
	"GPU memory peaks with their top stacks, findings (as 'findings').  Times are nanoseconds on a\n"
	"common clock (UTC since the epoch; nodes aligned on collective exits).  The schema is documented in SQLITE_SCHEMA.md\n"
	"and versioned in the meta table.\n"
	"\n"
	"options:\n"
	"  -o, --output OUT.db  the database to create\n"
	"  --force              replace OUT.db when it exists\n"
	CLI_JOBS_HELP
	"\n"
	"examples:\n"
	"  " CLI_PROG " sqlite run.frec -o run.db\n"
	"  " CLI_PROG " sqlite node*.frec -o job.db\n"
	"  sqlite3 run.db \"SELECT e.name, count(*), sum(duration_ns)/1e6 AS ms FROM syscalls\n"
	"      JOIN enum_syscalls e USING(nr) GROUP BY nr ORDER BY ms DESC LIMIT 10\"\n";

/* ncclDataType_t sizes: int8, uint8, int32, uint32, int64, uint64, float16,
 * float32, float64, bfloat16, fp8 e4m3, fp8 e5m2; 0 unknown. */
static uint64_t nccl_type_size(uint16_t t)
{
	static const uint8_t sz[] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };
	return t < sizeof(sz) ? sz[t] : 0;
}

/* A file's time on the common clock, wrapping instead of overflowing a
 * signed add (undefined behaviour on a hostile file's times; found by
 * fuzz_outputs). */
static int64_t common_ns(uint64_t ts_ns, int64_t offset_ns)
{
	return (int64_t)(ts_ns + (uint64_t)offset_ns);
}

static int put_nccl(struct out_sqlite *db, struct trace_set *ts, const struct nccl_result *nc)
{
	/* per instance: the latest ready time (what the others wait for) */
	int64_t *latest = calloc(nc->n_instances ? nc->n_instances : 1, sizeof(*latest));
	if (!latest)
		return -1;
	for (size_t k = 0; k < nc->n_instances; k++) {
		const struct nccl_instance *in = &nc->instances[k];
		latest[k] = INT64_MIN;
		for (uint32_t m = 0; m < in->n_members; m++) {
			int64_t r = nccl_member_ready_ns(nc, &nc->members[in->first_member + m]);
			if (r > latest[k])
				latest[k] = r;
		}
	}
	int rc = 0;
	for (size_t i = 0; !rc && i < nc->n_ranks; i++) {
		const struct nccl_rank *rk = &nc->ranks[i];
		int64_t off = out_clock_offset_ns(ts, rk->file_index);
		/* time inside NCCL calls per step */
		int64_t *wait = calloc(rk->n_steps ? rk->n_steps : 1, sizeof(*wait));
		if (!wait) {
			rc = -1;
			break;
		}
		for (size_t c = 0; !rc && c < rk->n_calls; c++) {
			const struct nccl_call *call = &rk->calls[c];
			if (call->step >= 0 && (size_t)call->step < rk->n_steps)
				wait[call->step] += (int64_t)(call->exit_ns - call->entry_ns);
			if (!nccl_is_collective(call->func))
				continue;
			int64_t w = -1;
			if (call->instance != NCCL_NONE && call->instance < nc->n_instances) {
				struct nccl_member me = { .rank_index = (uint32_t)i, .call_index = (uint32_t)c };
				int64_t mine = nccl_member_ready_ns(nc, &me);
				w = latest[call->instance] > mine ? latest[call->instance] - mine : 0;
			}
			struct out_sqlite_collective row = {
				.file_index = rk->file_index, .pid = rk->pid, .rank = rk->rank,
				.comm_uid_hash = call->comm_index != NCCL_NONE && call->comm_index < nc->n_comms
						 ? nc->comms[call->comm_index].uid_hash : 0,
				.collective_seq = call->seq, .func = call->func, .count = call->count,
				.bytes = call->count * nccl_type_size(call->datatype), .datatype = call->datatype,
				.start_ns = nccl_call_entry_common(rk, call), .end_ns = nccl_call_exit_common(rk, call),
				.wait_ns = w, .step = call->step,
			};
			rc = out_sqlite_put_collective(db, &row);
		}
		for (size_t s = 0; !rc && s < rk->n_steps; s++) {
			int64_t dur = (int64_t)(rk->step_end_ns[s] - rk->step_begin_ns[s]);
			struct out_sqlite_step row = {
				.file_index = rk->file_index, .pid = rk->pid, .rank = rk->rank, .step = s,
				.start_ns = common_ns(rk->step_begin_ns[s], off),
				.end_ns = common_ns(rk->step_end_ns[s], off),
				.wait_ns = wait[s], .compute_ns = dur > wait[s] ? dur - wait[s] : 0,
			};
			rc = out_sqlite_put_step(db, &row);
		}
		free(wait);
	}
	free(latest);
	return rc;
}

static struct out_sqlite_latency latency_of(const struct rdma_latency *l)
{
	struct out_sqlite_latency o = { .count = l->count, .p50_ns = l->p50_ns, .p99_ns = l->p99_ns,
					.min_ns = l->min_ns, .max_ns = l->max_ns,
					.mean_ns = l->count ? l->sum_ns / l->count : 0 };
	return o;
}

static int put_rdma(struct out_sqlite *db, struct trace_set *ts, const struct rdma_result *r)
{
	for (size_t i = 0; i < r->n_conns; i++) {
		const struct rdma_conn *c = &r->conns[i];
		int64_t off = out_clock_offset_ns(ts, c->local.file);
		struct out_sqlite_rdma_conn row = {
			.conn_id = i + 1, .file_index = c->local.file, .pid = c->local.pid,
			.local_qp = c->qp_num, .rank = c->local.rank,
			.remote_qp_known = c->remote_qp_known, .remote_qp = c->remote_qp,
			.remote_conn_id = c->joined ? c->remote_conn + 1 : 0,
			.remote_file_index = c->remote.file, .remote_pid = c->remote.pid,
			.remote_rank = c->joined ? c->remote.rank : -1,
			.ops = c->ops, .bytes = c->bytes, .send_ops = c->send_ops, .recv_ops = c->recv_ops,
			.errors = c->errors, .flush_errors = c->flush_errors,
			.retry_exhausted = c->by_class[RDMA_ERR_RETRY_EXHAUSTED],
			.rnr_retry_exhausted = c->by_class[RDMA_ERR_RNR_RETRY_EXHAUSTED],
			.remote_nak = c->by_class[RDMA_ERR_REMOTE_NAK],
			.local_errors = c->by_class[RDMA_ERR_LOCAL],
			.other_errors = c->by_class[RDMA_ERR_OTHER],
			.outstanding = c->outstanding, .latency = latency_of(&c->latency),
			.first_ns = c->first_ns ? common_ns(c->first_ns, off) : 0,
			.last_ns = c->last_ns ? common_ns(c->last_ns, off) : 0,
		};
		if (out_sqlite_put_rdma_conn(db, &row))
			return -1;
		for (size_t k = 0; k < c->n_rows; k++) {
			const struct rdma_op_row *o = &c->rows[k];
			char buf[32];
			struct out_sqlite_rdma_op op = {
				.conn_id = i + 1, .file_index = c->local.file, .pid = c->local.pid,
				.qp_num = c->qp_num, .is_recv = o->recv, .opcode = o->opcode,
				.opcode_name = rdma_opcode_name(o->recv, o->opcode, buf, sizeof(buf)),
				.size_bucket = rdma_size_bucket_name(o->bucket), .ops = o->ops,
				.bytes = o->bytes, .latency = latency_of(&o->latency),
			};
			if (out_sqlite_put_rdma_op(db, &op))
				return -1;
		}
	}
	return 0;
}

static int put_mem(struct out_sqlite *db, struct trace_set *ts, const struct mem_result *r)
{
	for (size_t i = 0; i < r->n_series; i++) {
		const struct mem_series *se = &r->series[i];
		const struct trace_file *f = trace_set_file(ts, se->file);
		const char *kind = se->space == MEM_SPACE_DEVICE ? "device" : "host_pinned";
		int caching = 0;
		for (size_t k = 0; k < r->n_procs; k++)
			if (r->procs[k].file == se->file && r->procs[k].pid == se->pid)
				caching = r->procs[k].caching_allocator;
		struct out_sqlite_mem_series row = {
			.file_index = se->file, .pid = se->pid, .device = se->device, .mem_kind = kind,
			.allocs = se->allocs, .alloc_bytes = se->alloc_bytes, .frees = se->frees,
			.failed = se->failed_allocs, .before_frees = se->before_frees,
			.peak_bytes = se->peak_bytes,
			.peak_ns = f ? common_ns(f->hdr.start_mono_ns + se->peak_t_ns,
						 out_clock_offset_ns(ts, se->file)) : 0,
			.end_bytes = se->end_bytes, .end_count = se->end_count,
			.caching_allocator = caching,
		};
		if (out_sqlite_put_mem_series(db, &row))
			return -1;
		for (int which = 0; which < 2; which++) {
			const struct mem_stack_bytes *sb = which ? se->top_leaks : se->top_at_peak;
			size_t n = which ? se->n_top_leaks : se->n_top_at_peak;
			for (size_t k = 0; k < n; k++) {
				struct out_sqlite_mem_stack st = {
					.file_index = se->file, .pid = se->pid, .device = se->device,
					.mem_kind = kind, .kind = which ? "leak" : "peak",
					.position = (int)k + 1, .stack_id = sb[k].stack_id,
					.bytes = sb[k].bytes, .allocations = sb[k].count,
				};
				if (out_sqlite_put_mem_stack(db, &st))
					return -1;
			}
		}
	}
	return 0;
}

/* findings: the listed ones in the findings command's order, then those
 * under the threshold. */
static int put_findings(struct out_sqlite *db, const struct findings_result *r)
{
	for (size_t i = 0; i < r->n_findings; i++)
		if (out_sqlite_put_finding(db, &r->findings[i], (int)i + 1, 1))
			return -1;
	for (size_t i = 0; i < r->n_below; i++)
		if (out_sqlite_put_finding(db, &r->below[i], (int)i + 1, 0))
			return -1;
	return 0;
}

/* A failure during the pass or the models' rows: SQLite's own message when
 * the database failed (naming the file it writes), else err's. */
static void print_failure(FILE *errout, struct out_sqlite *db, const char *tmp,
			  const struct frec_error *err)
{
	if (out_sqlite_error(db))
		fprintf(errout, CLI_PROG ": %s: %s\n", tmp, out_sqlite_error(db));
	else
		cli_print_error(errout, err);
}

int cmd_sqlite(int argc, char **argv, FILE *out, FILE *errout)
{
	struct cli_file_output fo;
	unsigned jobs;
	if (cli_take_jobs(&argc, argv, "sqlite", &jobs, errout))
		return CLI_USAGE;
	int rc = cli_parse_file_output(argc, argv, "sqlite", sqlite_help, "OUT.db", 1, &fo, out, errout);
	if (rc)
		return rc < 0 ? CLI_OK : rc;
	const char **files = fo.files;
	size_t n_files = fo.n_files;
	const char *output = fo.output;
	int force = fo.force;
	if (!force && access(output, F_OK) == 0) {
		fprintf(errout, CLI_PROG ": %s: exists; pass --force to replace it\n", output);
		free(files);
		return CLI_FAIL;
	}
	struct trace_set *ts = cli_open(files, n_files, errout);
	free(files);
	if (!ts)
		return CLI_FAIL;
	trace_set_set_jobs(ts, jobs);
	struct frec_error err = { .offset = -1 };
	size_t tlen = strlen(output) + 32;
	char *tmp = malloc(tlen);
	if (!tmp) {
		fprintf(errout, CLI_PROG " sqlite: out of memory\n");
		trace_set_free(ts);
		return CLI_FAIL;
	}
	snprintf(tmp, tlen, "%s.tmp-%ld", output, (long)getpid());
	unlink(tmp);
	struct out_sqlite *db = NULL;
	rc = CLI_FAIL;
	if (out_sqlite_open(tmp, &db, &err) || out_sqlite_attach(db, ts, &err)) {
		cli_print_error(errout, &err);
		goto out;
	}
	/* the models that fill collectives, steps, rdma_*, memory_*; the nccl
	 * model inside stragglers also aligns the files' clocks */
	void *mem = trace_set_use_model(ts, "mem", NULL);
	if (mem)
		model_mem_on_change(mem, out_sqlite_mem_change, db);
	void *strag = mem ? trace_set_use_model(ts, "stragglers", NULL) : NULL;
	void *rdma = strag ? trace_set_use_model(ts, "rdma", NULL) : NULL;
	/* fills findings; reads the cuda, mem, stragglers and rdma states */
	void *findings = rdma ? trace_set_use_model(ts, "findings", NULL) : NULL;
	if (!findings) {
		fprintf(errout, CLI_PROG " sqlite: out of memory\n");
		goto out;
	}
	if (trace_set_run(ts, &err)) {
		print_failure(errout, db, tmp, &err);
		goto out;
	}
	cli_warn_troubled(ts, errout);
	const struct stragglers_result *sr = model_stragglers_result(strag);
	if ((sr && sr->nccl && put_nccl(db, ts, sr->nccl)) ||
	    put_rdma(db, ts, model_rdma_result(rdma)) || put_mem(db, ts, model_mem_result(mem)) ||
	    put_findings(db, model_findings_result(findings))) {
		print_failure(errout, db, tmp, &err);
		goto out;
	}
	if (out_sqlite_finish(db, ts, &err)) {
		cli_print_error(errout, &err);
		goto out;
	}
	uint64_t rows = out_sqlite_rows(db);
	out_sqlite_close(db);
	db = NULL;
	if (rename(tmp, output)) {
		fprintf(errout, CLI_PROG ": %s: cannot create: %s\n", output, strerror(errno));
		goto out;
	}
	fprintf(errout, CLI_PROG ": %s: %" PRIu64 " rows from %zu file%s\n", output, rows,
		trace_set_count(ts), trace_set_count(ts) == 1 ? "" : "s");
	rc = CLI_OK;
out:
	out_sqlite_close(db);
	if (rc != CLI_OK)
		unlink(tmp);
	free(tmp);
	trace_set_free(ts);
	return rc;
}
