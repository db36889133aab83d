/* Model results as rows of the ClickHouse tables; see ch_rows.h. */
#include "out_identity.h"
#include "proc_identity.h"
#include "ch_rows.h"
#include "flame_tree.h"
#include "model_findings.h"
#include "model_mem.h"
#include "model_nccl.h"
#include "model_rdma.h"
#include "model_stragglers.h"
#include "cuda_funcs.h"
#include "model_cuda.h"
#include "out_file_json.h"
#include "sha256.h"
#include "trace_set.h"

#include <stdlib.h>
#include <stddef.h>
#include <string.h>

static void hex_id(const uint8_t *digest, char out[CH_ID_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < CH_ID_LEN / 2; i++) {
		out[2 * i] = hex[digest[i] >> 4];
		out[2 * i + 1] = hex[digest[i] & 15];
	}
	out[CH_ID_LEN] = '\0';
}

void ch_recording_id(const void *hdr, size_t len, char out[CH_ID_LEN + 1])
{
	uint8_t d[32];
	sha256(hdr, len, d);
	hex_id(d, out);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void ch_job_id(const char *const *ids, size_t n, char out[CH_ID_LEN + 1])
{
	/* sorted ids, each CH_ID_LEN hex digits and a comma, hashed as one
	 * stream: the job's id whatever order its traces were given in */
	const char **s = malloc((n ? n : 1) * sizeof(*s));
	struct sha256_ctx c;
	uint8_t d[32];
	sha256_init(&c);
	if (s) {
		memcpy(s, ids, n * sizeof(*s));
		qsort(s, n, sizeof(*s), cmp_str);
	}
	for (size_t i = 0; i < n; i++) {
		sha256_update(&c, s ? s[i] : ids[i], CH_ID_LEN);
		sha256_update(&c, ",", 1);
	}
	sha256_final(&c, d);
	hex_id(d, out);
	free(s);
}

static uint64_t start_s(const struct ch_export *x, uint32_t file)
{
	const struct trace_file *f = file < x->n_files ? trace_set_file(x->ts, file) : NULL;
	return f ? f->hdr.start_real_ns / 1000000000u : 0;
}

static const char *rec_id(const struct ch_export *x, uint32_t file)
{
	return file < x->n_files ? x->rec_ids[file] : "";
}

/* The columns every job-level row starts with. */
static void job_cols(struct ch_batch *b, const struct ch_export *x)
{
	ch_str(b, "job_id", x->job_id);
	ch_u64(b, "start", start_s(x, 0));
}

int ch_put_job_recordings(const struct ch_export *x)
{
	struct ch_batch b;
	if (ch_batch_open(&b, x->t, "job_recordings"))
		return -1;
	for (uint32_t i = 0; i < x->n_files; i++) {
		ch_row_begin(&b);
		job_cols(&b, x);
		ch_str(&b, "recording_id", rec_id(x, i));
		if (ch_row_end(&b)) {
			ch_batch_drop(&b);
			return -1;
		}
	}
	return ch_batch_finish(&b);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* ---- recordings ---------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
	int64_t p = *(const int64_t *)a, q = *(const int64_t *)b;
	return (p > q) - (p < q);
}

/* v sorted, each value once; returns the new count */
static size_t uniq(int64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_i64);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (!k || v[i] != v[k - 1])
			v[k++] = v[i];
	return k;
}

/* The distinct non-empty values of one identity field over f's processes
 * (at: its offset in struct proc_identity), as a column. */
static void identity_column(struct ch_batch *b, const struct trace_file *f, const char *name,
			    size_t at)
{
	enum { MAX = 64 };
	char seen[MAX][PROC_ID_CONTAINER_MAX];
	const char *v[MAX];
	size_t n = out_identity_distinct(f, at, seen, MAX);
	for (size_t i = 0; i < n; i++)
		v[i] = seen[i];
	ch_str_array(b, name, v, n);
}

static int one_recording(struct ch_batch *b, const struct ch_export *x, uint32_t i)
{
	struct trace_file *f = trace_set_file(x->ts, i);
	int exact;
	int64_t *v = calloc(f->n_procs ? f->n_procs : 1, sizeof(*v));
	struct out_file_probes pr;
	out_file_probes_get(f, &pr);
	const char **names = calloc(pr.n ? pr.n : 1, sizeof(*names));
	if (!v || !names) {
		free(v);
		free(names);
		free(pr.probes);
		snprintf(b->t->err, sizeof(b->t->err), "out of memory");
		return -1;
	}
	ch_row_begin(b);
	ch_str(b, "recording_id", x->rec_ids[i]);
	ch_str(b, "job_id", x->job_id);
	ch_str(b, "file", base_name(f->path));
	ch_str(b, "host", f->hdr.host);
	ch_str(b, "command", f->cmdline);
	ch_u64(b, "start", f->hdr.start_real_ns / 1000000000u);
	ch_u64(b, "start_ns", f->hdr.start_real_ns);
	ch_u64(b, "duration_ns", trace_file_duration_ns(f, &exact));
	size_t n = 0;
	for (size_t k = 0; k < f->n_procs; k++)
		if (f->procs[k].rank >= 0)
			v[n++] = f->procs[k].rank;
	ch_i64_array(b, "ranks", v, uniq(v, n));
	for (size_t k = 0; k < f->n_procs; k++)
		v[k] = f->procs[k].pid;
	ch_i64_array(b, "pids", v, uniq(v, f->n_procs));
	uint64_t drops = 0;
	size_t n_names = 0;
	for (uint32_t k = 0; k < pr.n; k++) {
		drops += pr.probes[k].drops;
		if (pr.probes[k].events)
			names[n_names++] = pr.probes[k].name;
	}
	ch_str_array(b, "probes", names, n_names);
	ch_str(b, "status", trace_file_verdict(f));
	ch_u64(b, "drops", drops);
	ch_str(b, "trigger", f->has_snapshot ? out_snapshot_trigger_name(f->snapshot.trigger) : "");
	ch_u64(b, "trigger_ns", f->has_snapshot ? f->snapshot.trigger_ns : 0);
	ch_str(b, "trigger_detail", f->has_snapshot && f->snapshot_detail ? f->snapshot_detail : "");
	ch_u64(b, "exported_at", x->exported_at_s);
	identity_column(b, f, "containers", offsetof(struct proc_identity, container_id));
	identity_column(b, f, "pods", offsetof(struct proc_identity, pod_uid));
	identity_column(b, f, "pod_namespaces", offsetof(struct proc_identity, pod_namespace));
	identity_column(b, f, "slurm_jobs", offsetof(struct proc_identity, slurm_job));
	free(v);
	free(names);
	free(pr.probes);
	return ch_row_end(b);
}

int ch_put_recordings(const struct ch_export *x)
{
	struct ch_batch b;
	if (ch_batch_open(&b, x->t, "recordings"))
		return -1;
	for (uint32_t i = 0; i < x->n_files; i++)
		if (one_recording(&b, x, i)) {
			ch_batch_drop(&b);
			return -1;
		}
	return ch_batch_finish(&b);
}

/* ---- findings ------------------------------------------------------------ */

static int one_finding(struct ch_batch *b, const struct ch_export *x, const struct finding *f,
		       size_t position, int listed)
{
	int64_t *v = calloc(f->n_pids ? f->n_pids : 1, sizeof(*v));
	if (!v) {
		snprintf(b->t->err, sizeof(b->t->err), "out of memory");
		return -1;
	}
	ch_row_begin(b);
	job_cols(b, x);
	ch_u64(b, "position", position);
	ch_u64(b, "listed", (uint64_t)listed);
	ch_str(b, "kind", finding_kind_name(f->kind));
	ch_f64(b, "cost_ms", f->cost_ms, !f->has_cost);
	ch_f64(b, "cost_ms_per_step", f->cost_ms_per_step, !f->has_cost);
	ch_f64(b, "share", f->share, !f->has_cost);
	for (size_t k = 0; k < f->n_pids; k++)
		v[k] = f->pids[k];
	ch_i64_array(b, "pids", v, f->n_pids);
	for (size_t k = 0; k < f->n_pids; k++)
		v[k] = f->ranks ? f->ranks[k] : -1;
	ch_i64_array(b, "ranks", v, f->n_pids);
	ch_str_array(b, "frames", f->where, f->n_where);
	ch_str(b, "evidence", f->evidence);
	ch_str(b, "fix", f->fix);
	free(v);
	return ch_row_end(b);
}

int ch_put_findings(const struct ch_export *x, const struct findings_result *r)
{
	struct ch_batch b;
	if (ch_batch_open(&b, x->t, "findings"))
		return -1;
	int rc = 0;
	for (size_t i = 0; !rc && i < r->n_findings; i++)
		rc = one_finding(&b, x, &r->findings[i], i + 1, 1);
	for (size_t i = 0; !rc && i < r->n_below; i++)
		rc = one_finding(&b, x, &r->below[i], r->n_findings + i + 1, 0);
	if (rc) {
		ch_batch_drop(&b);
		return -1;
	}
	return ch_batch_finish(&b);
}

/* ---- stragglers, collectives, steps -------------------------------------- */

/* A row of one rank: the job's columns, then the rank's recording, rank,
 * host and pid (stragglers, collectives and rank_steps all start so). */
static void rank_row_begin(struct ch_batch *b, const struct ch_export *x,
			   const struct nccl_rank *rk)
{
	ch_row_begin(b);
	job_cols(b, x);
	ch_str(b, "recording_id", rec_id(x, rk->file_index));
	ch_i64(b, "rank", rk->rank);
	ch_str(b, "host", rk->host);
	ch_u64(b, "pid", rk->pid);
}

static int put_ranks(struct ch_batch *b, const struct ch_export *x, const struct stragglers_result *r)
{
	const struct nccl_result *nc = r->nccl;
	for (size_t i = 0; i < r->n_rows; i++) {
		const struct straggler_row *row = &r->rows[i];
		const struct nccl_rank *rk = &nc->ranks[row->rank_index];
		int is = r->verdict.found && r->verdict.rank_index == row->rank_index;
		rank_row_begin(b, x, rk);
		ch_u64(b, "steps", row->steps);
		ch_f64(b, "mean_step_ms", row->mean_step_ms, row->mean_step_ms < 0);
		ch_f64(b, "mean_wait_ms", row->mean_wait_ms, row->steps == 0);
		ch_f64(b, "straggler_score", row->score, row->score < 0);
		ch_u64(b, "latest", row->latest);
		ch_u64(b, "is_straggler", (uint64_t)is);
		ch_f64(b, "confidence", r->verdict.confidence, !is);
		ch_f64(b, "cost_ms_per_step", r->verdict.cost_ms_per_step, !is);
		ch_str(b, "evidence", is ? r->verdict.evidence : "");
		if (ch_row_end(b))
			return -1;
	}
	return 0;
}

/* ncclDataType_t sizes (as the sqlite export counts bytes); 0 unknown */
static uint64_t nccl_type_size(uint16_t t)
{
	static const uint8_t sz[] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };
	return t < sizeof(sz) ? sz[t] : 0;
}

static int put_collectives(struct ch_batch *b, const struct ch_export *x, const struct nccl_result *nc)
{
	/* per instance: the latest ready time, what the others wait for */
	int64_t *latest = calloc(nc->n_instances ? nc->n_instances : 1, sizeof(*latest));
	if (!latest) {
		snprintf(b->t->err, sizeof(b->t->err), "out of memory");
		return -1;
	}
	for (size_t k = 0; k < nc->n_instances; k++) {
		const struct nccl_instance *in = &nc->instances[k];
		latest[k] = INT64_MIN;
		for (uint32_t m = 0; m < in->n_members; m++) {
			int64_t t = nccl_member_ready_ns(nc, &nc->members[in->first_member + m]);
			if (t > latest[k])
				latest[k] = t;
		}
	}
	int rc = 0;
	for (size_t i = 0; !rc && i < nc->n_ranks; i++) {
		const struct nccl_rank *rk = &nc->ranks[i];
		for (size_t c = 0; !rc && c < rk->n_calls; c++) {
			const struct nccl_call *call = &rk->calls[c];
			if (!nccl_is_collective(call->func))
				continue;
			int has = call->instance != NCCL_NONE && call->instance < nc->n_instances;
			struct nccl_member me = { .rank_index = (uint32_t)i, .call_index = (uint32_t)c };
			int64_t ready = nccl_member_ready_ns(nc, &me);
			rank_row_begin(b, x, rk);
			ch_i64(b, "step", call->step);
			ch_u64(b, "seq", call->seq);
			ch_str(b, "op", nccl_op_name(call->func));
			ch_i64(b, "instance", has ? (int64_t)call->instance : -1);
			ch_u64(b, "complete", has && nccl_instance_complete(nc, &nc->instances[call->instance]));
			ch_u64(b, "bytes", call->count * nccl_type_size(call->datatype));
			ch_i64(b, "ready_ns", ready);
			ch_i64(b, "entry_ns", nccl_call_entry_common(rk, call));
			ch_i64(b, "exit_ns", nccl_call_exit_common(rk, call));
			ch_i64(b, "wait_ns", has ? (latest[call->instance] > ready
						     ? latest[call->instance] - ready : 0) : -1);
			rc = ch_row_end(b);
		}
	}
	free(latest);
	return rc;
}

static int put_steps(struct ch_batch *b, const struct ch_export *x, const struct nccl_result *nc)
{
	for (size_t i = 0; i < nc->n_ranks; i++) {
		const struct nccl_rank *rk = &nc->ranks[i];
		int64_t *wait = calloc(rk->n_steps ? rk->n_steps : 1, sizeof(*wait));
		if (!wait) {
			snprintf(b->t->err, sizeof(b->t->err), "out of memory");
			return -1;
		}
		for (size_t c = 0; c < rk->n_calls; c++) {
			const struct nccl_call *call = &rk->calls[c];
			if (call->step >= 0 && (size_t)call->step < rk->n_steps)
				wait[call->step] += (int64_t)(call->exit_ns - call->entry_ns);
		}
		int rc = 0;
		for (size_t s = 0; !rc && s < rk->n_steps; s++) {
			int64_t dur = (int64_t)(rk->step_end_ns[s] - rk->step_begin_ns[s]);
			rank_row_begin(b, x, rk);
			ch_u64(b, "step", s);
			ch_i64(b, "duration_ns", dur);
			ch_i64(b, "wait_ns", wait[s]);
			ch_i64(b, "compute_ns", dur > wait[s] ? dur - wait[s] : 0);
			rc = ch_row_end(b);
		}
		free(wait);
		if (rc)
			return -1;
	}
	return 0;
}

int ch_put_stragglers(const struct ch_export *x, const struct stragglers_result *r)
{
	if (!r || !r->nccl)
		return 0;
	struct ch_batch b[3];
	if (ch_batch_open(&b[0], x->t, "stragglers"))
		return -1;
	if (ch_batch_open(&b[1], x->t, "collectives")) {
		ch_batch_drop(&b[0]);
		return -1;
	}
	if (ch_batch_open(&b[2], x->t, "rank_steps")) {
		ch_batch_drop(&b[0]);
		ch_batch_drop(&b[1]);
		return -1;
	}
	int rc = put_ranks(&b[0], x, r) || put_collectives(&b[1], x, r->nccl) ||
		 put_steps(&b[2], x, r->nccl);
	for (int k = 0; k < 3; k++) {
		if (rc)
			ch_batch_drop(&b[k]);
		else
			rc = ch_batch_finish(&b[k]) ? -1 : 0;
	}
	if (rc)
		for (int k = 0; k < 3; k++)
			ch_batch_drop(&b[k]);
	return rc ? -1 : 0;
}

/* ---- rdma ------------------------------------------------------------------ */

int ch_put_rdma(const struct ch_export *x, const struct rdma_result *r)
{
	struct ch_batch b;
	if (!r || ch_batch_open(&b, x->t, "rdma_connections"))
		return r ? -1 : 0;
	for (size_t i = 0; i < r->n_conns; i++) {
		const struct rdma_conn *c = &r->conns[i];
		const struct rdma_latency *l = &c->latency;
		ch_row_begin(&b);
		ch_str(&b, "recording_id", rec_id(x, c->local.file));
		ch_str(&b, "job_id", x->job_id);
		ch_u64(&b, "start", start_s(x, c->local.file));
		ch_str(&b, "host", c->local.host);
		ch_u64(&b, "pid", c->local.pid);
		ch_i64(&b, "rank", c->local.rank);
		ch_u64(&b, "local_qp", c->qp_num);
		ch_i64(&b, "remote_qp", c->remote_qp_known ? (int64_t)c->remote_qp : -1);
		ch_u64(&b, "ops", c->ops);
		ch_u64(&b, "bytes", c->bytes);
		ch_u64(&b, "completions", c->completions);
		ch_u64(&b, "errors", c->errors);
		ch_u64(&b, "flush_errors", c->flush_errors);
		ch_u64(&b, "latency_count", l->count);
		ch_u64(&b, "p50_ns", l->p50_ns);
		ch_u64(&b, "p99_ns", l->p99_ns);
		ch_u64(&b, "max_ns", l->max_ns);
		const char *names[RDMA_WC_STATUSES + 1];
		uint64_t counts[RDMA_WC_STATUSES + 1];
		size_t n = 0;
		for (uint32_t k = 1; k < RDMA_WC_STATUSES; k++) {
			if (k == RDMA_WC_WR_FLUSH_ERR || !c->by_status[k])
				continue;
			names[n] = rdma_wc_status_name(k);
			counts[n++] = c->by_status[k];
		}
		if (c->other_status) {
			names[n] = "unknown";
			counts[n++] = c->other_status;
		}
		ch_str_array(&b, "error_status", names, n);
		ch_u64_array(&b, "error_status_count", counts, n);
		if (ch_row_end(&b)) {
			ch_batch_drop(&b);
			return -1;
		}
	}
	return ch_batch_finish(&b);
}

/* ---- failed allocations ------------------------------------------------- */

/* frames root first joined by ';' as folded output joins them (';' in a
 * name as ':', line breaks as spaces); malloc'd */
static char *folded_of(const char **frames, size_t n)
{
	size_t len = 1;
	for (size_t k = 0; k < n; k++)
		len += strlen(frames[k] ? frames[k] : "[unknown]") + 1;
	char *s = malloc(len), *p = s;
	if (!s)
		return NULL;
	for (size_t k = 0; k < n; k++) {
		const char *f = frames[k] ? frames[k] : "[unknown]";
		if (k)
			*p++ = ';';
		for (; *f; f++)
			*p++ = *f == ';' ? ':' : (*f == '\n' || *f == '\r') ? ' ' : *f;
	}
	*p = '\0';
	return s;
}

static int one_failure(struct ch_batch *b, const struct ch_export *x, const struct mem_failure *fl)
{
	size_t n;
	const char **frames = mem_stack_frames(x->ts, fl->file, fl->stack_id, &n);
	const char *holders[MEM_TOP];
	char *folded[MEM_TOP] = { 0 };
	uint64_t bytes[MEM_TOP], count[MEM_TOP];
	size_t nh = fl->n_holders < MEM_TOP ? fl->n_holders : MEM_TOP;
	int rc = -1;
	if (!frames)
		goto out;
	for (size_t k = 0; k < nh; k++) {
		size_t hn;
		const char **hf = mem_stack_frames(x->ts, fl->file, fl->holders[k].stack_id, &hn);
		folded[k] = hf ? folded_of(hf, hn) : NULL;
		free(hf);
		if (!folded[k])
			goto out;
		holders[k] = folded[k];
		bytes[k] = fl->holders[k].bytes;
		count[k] = fl->holders[k].count;
	}
	const char *fn = cuda_func_name(fl->func), *err = cuda_error_name(fl->func, fl->error);
	ch_row_begin(b);
	ch_str(b, "recording_id", rec_id(x, fl->file));
	ch_str(b, "job_id", x->job_id);
	ch_u64(b, "start", start_s(x, fl->file));
	ch_u64(b, "t_ns", fl->t_ns);
	ch_u64(b, "pid", fl->pid);
	ch_u64(b, "tid", fl->tid);
	ch_i64(b, "device", fl->device);
	ch_str(b, "function", fn ? fn : "?");
	ch_u64(b, "bytes", fl->bytes);
	ch_i64(b, "error", fl->error);
	ch_str(b, "error_name", err ? err : "");
	ch_u64(b, "in_use_bytes", fl->inuse_bytes);
	ch_str_array(b, "stack", frames, n);
	ch_str_array(b, "holder_stacks", holders, nh);
	ch_u64_array(b, "holder_bytes", bytes, nh);
	ch_u64_array(b, "holder_allocations", count, nh);
	rc = ch_row_end(b);
out:
	if (rc && !b->t->err[0])
		snprintf(b->t->err, sizeof(b->t->err), "out of memory");
	for (size_t k = 0; k < nh; k++)
		free(folded[k]);
	free(frames);
	return rc;
}

int ch_put_failed_allocations(const struct ch_export *x, const struct mem_result *r)
{
	struct ch_batch b;
	if (!r || ch_batch_open(&b, x->t, "failed_allocations"))
		return r ? -1 : 0;
	for (size_t i = 0; i < r->n_failures_kept; i++)
		if (one_failure(&b, x, &r->failures[i])) {
			ch_batch_drop(&b);
			return -1;
		}
	return ch_batch_finish(&b);
}

/* ---- stacks ----------------------------------------------------------------- */

int ch_put_stacks(const struct ch_export *x, uint32_t file, const char *kind, const char *unit,
		  const struct flame_tree *tree)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int wrc = f ? flame_write_folded(tree, f) : -1;
	if (f && fclose(f))
		wrc = -1;
	if (wrc) {
		free(text);
		snprintf(x->t->err, sizeof(x->t->err), "out of memory");
		return -1;
	}
	struct ch_batch b;
	if (ch_batch_open(&b, x->t, "stacks")) {
		free(text);
		return -1;
	}
	/* each line: the stack, a space, the value (folded output never holds
	 * a line break inside a stack) */
	int rc = 0;
	for (char *line = text; !rc && line < text + len;) {
		char *nl = memchr(line, '\n', (size_t)(text + len - line));
		if (!nl)
			break;
		*nl = '\0';
		char *sp = strrchr(line, ' ');
		if (sp) {
			*sp = '\0';
			ch_row_begin(&b);
			ch_str(&b, "recording_id", rec_id(x, file));
			ch_str(&b, "job_id", x->job_id);
			ch_u64(&b, "start", start_s(x, file));
			ch_str(&b, "kind", kind);
			ch_str(&b, "unit", unit);
			ch_str(&b, "stack", line);
			ch_u64(&b, "value", strtoull(sp + 1, NULL, 10));
			rc = ch_row_end(&b);
		}
		line = nl + 1;
	}
	free(text);
	if (rc) {
		ch_batch_drop(&b);
		return -1;
	}
	return ch_batch_finish(&b);
}
