/* The NCCL calls as the GPU-idle analysis reads them: for every collective
 * and send/recv of the NCCL model's ranks, the stretch of host time that
 * holds its wait (its span) and how that wait divides.  Not the
 * attribution itself (findings_idle.c: which span lies in which idle
 * interval, and what each part is charged to) nor the matching of
 * collectives across ranks or the straggler verdict (model_nccl.h,
 * model_stragglers.h): this file reads their results.
 *
 * The span runs from the call's entry to the collective's completion as
 * the host saw it:
 *   blocking   the call returns when the collective is complete (the
 *              stand-in's default; NCCL when the host call itself waits):
 *              completion is the call's return.  A job's calls are taken to
 *              block when, over its complete instances, at least 90% of the
 *              members that were not the last to enter returned after the
 *              last one entered (no collective completes before that; an
 *              enqueue returns before it).  Then, as a synchronize's, the
 *              return of a call leaves the device empty (findings_idle.c
 *              opens an idle interval there).
 *   enqueued   otherwise (NCCL's own behaviour: the call returns once the
 *              collective is queued on its stream) the wait shows as the
 *              synchronize that follows it: the first synchronize (of its
 *              stream, of the device, or of an event, taken to be recorded
 *              after it) or event query that finds its event complete, of
 *              the same thread after the call's return, with no launch,
 *              copy, implicit synchronize or other NCCL call of that thread
 *              in between; completion is that call's return.  A
 *              synchronize of another stream ends the search, as does the
 *              next device work: without such a wait the span is the call
 *              itself (the collective ran on the GPU while the host went
 *              on, and what the host did next is read as usual).
 *
 * The split of a span, for a collective whose instance is complete (every
 * rank of its communicator in these traces, nccl_instance_complete), on
 * the file's clock:
 *   all_ready     the latest member's entry (nccl_member_ready_ns): no rank
 *                 can move data before every rank has entered
 *   done          the instance's earliest completion over its members (the
 *                 common timeline): a collective completes at one instant
 *                 for all (the NCCL model aligns the nodes' clocks on it);
 *                 a member whose call returns later was not running then
 *                 (the host's CPU contention, not the transfer)
 *   exchange      from all_ready (or the entry, when later: the last rank
 *                 itself) to done: the transfer on the critical path
 *   late          from done to the member's own completion: unexplained
 *   wait          from the entry to all_ready: waiting for slower ranks;
 *                 its last straggler_ns (the stragglers model's
 *                 charged_lost_ns of the instance: the straggler's lead over
 *                 the second latest rank) is the straggler's, on every
 *                 member but the straggler itself; the rest is waiting for
 *                 ranks no verdict names (scheduling noise, imbalance below
 *                 the verdict's threshold)
 * Send/recv and collectives of incomplete instances (a node's trace
 * missing) are not split: when the last rank entered is not known.
 *
 * A span is GPU idle only where an idle interval holds it: a process whose
 * device was empty at the call's entry (a synchronize returned since its
 * last launch), or that queued no device work at all (each span then an
 * interval of its own).  When kernels were still queued at the entry, how
 * long the GPU ran them inside the span is not known and the span is not
 * counted (as a synchronize's own time is not): its wait, the straggler's
 * part too, is then missing from the idle, and the straggler finding says
 * how much of the stragglers model's wait that left out.
 *
 * Not read: grouped calls' waits in ncclGroupEnd (its calls return at once
 * and the group's end is not a call of the model's), and an enqueued
 * collective waited for with stream-ordered work after it (cudaStreamWaitEvent
 * then kernels) rather than by the host.  A wait by polling an event ends
 * at the first query that finds it complete (the poll's period late at
 * most). */
#include "findings_private.h"
#include "fr_family.h"
#include "model_stragglers.h"

#include <stdlib.h>

/* ncclDataType_t's sizes: ncclInt8, ncclUint8, ncclInt32, ncclUint32,
 * ncclInt64, ncclUint64, ncclFloat16, ncclFloat32, ncclFloat64,
 * ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2; 0 unknown. */
static uint64_t dtype_bytes(uint16_t datatype)
{
	static const uint8_t size[] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };
	return datatype < sizeof(size) ? size[datatype] : 0;
}

/* Time `common` on the common timeline as the file of a call that entered
 * at entry_ns (its file's clock), entry_common_ns (common) reads it; 0 when
 * it does not fit (hostile times). */
static uint64_t file_ns(uint64_t entry_ns, int64_t entry_common_ns, int64_t common)
{
	int64_t d;
	if (__builtin_sub_overflow(common, entry_common_ns, &d))
		return 0;
	if (d >= 0)
		return entry_ns + (uint64_t)d >= entry_ns ? entry_ns + (uint64_t)d : 0;
	uint64_t back = (uint64_t)(-(d + 1)) + 1;
	return back <= entry_ns ? entry_ns - back : 0;
}

/* Whether the job's calls block (the rule at the top). */
static int job_blocks(const struct nccl_result *nc)
{
	uint64_t after = 0, before = 0;
	for (size_t i = 0; i < nc->n_instances; i++) {
		const struct nccl_instance *in = &nc->instances[i];
		if (!nccl_instance_complete(nc, in))
			continue;
		const struct nccl_member *mem = &nc->members[in->first_member];
		uint32_t latest = 0;
		for (uint32_t k = 1; k < in->n_members; k++)
			if (nccl_member_ready_ns(nc, &mem[k]) > nccl_member_ready_ns(nc, &mem[latest]))
				latest = k;
		int64_t all_ready = nccl_member_ready_ns(nc, &mem[latest]);
		for (uint32_t k = 0; k < in->n_members; k++) {
			if (k == latest)
				continue;
			const struct nccl_rank *rk = &nc->ranks[mem[k].rank_index];
			if (nccl_call_exit_common(rk, &rk->calls[mem[k].call_index]) >= all_ready)
				after++;
			else
				before++;
		}
	}
	return after && (double)after >= 0.9 * (double)(after + before);
}

static int push_nccl(struct fx_proc *p, const struct fx_nccl *x)
{
	if (p->n_nccl == p->cap_nccl) {
		size_t cap = p->cap_nccl ? p->cap_nccl * 2 : 64;
		struct fx_nccl *grown = realloc(p->nccl, cap * sizeof(*grown));
		if (!grown)
			return -1;
		p->nccl = grown;
		p->cap_nccl = cap;
	}
	p->nccl[p->n_nccl++] = *x;
	return 0;
}

int fx_nccl_events(struct fx_state *m)
{
	const struct stragglers_result *s = m->strag ? model_stragglers_result(m->strag) : NULL;
	const struct nccl_result *nc = s ? s->nccl : NULL;
	if (!nc)
		return 0;
	int blocks = job_blocks(nc);
	const struct straggler_verdict *v = &s->verdict;
	/* each instance's latest ready time, once: every member reads it */
	int64_t *all_ready_of = malloc((nc->n_instances ? nc->n_instances : 1) * sizeof(int64_t));
	if (!all_ready_of)
		return -1;
	for (size_t i = 0; i < nc->n_instances; i++) {
		const struct nccl_instance *in = &nc->instances[i];
		const struct nccl_member *mem = &nc->members[in->first_member];
		all_ready_of[i] = INT64_MIN;
		for (uint32_t k = 0; k < in->n_members; k++)
			if (nccl_member_ready_ns(nc, &mem[k]) > all_ready_of[i])
				all_ready_of[i] = nccl_member_ready_ns(nc, &mem[k]);
	}
	int rc = -1;
	for (size_t ri = 0; ri < nc->n_ranks; ri++) {
		const struct nccl_rank *rk = &nc->ranks[ri];
		if (!rk->n_calls || (m->opts.filter_pid && rk->pid != m->opts.pid))
			continue;
		struct fx_proc *p = fx_proc_get(m, rk->file_index, rk->pid);
		if (!p)
			goto out;
		for (size_t c = 0; c < rk->n_calls; c++) {
			const struct nccl_call *call = &rk->calls[c];
			if (call->exit_ns < call->entry_ns)
				continue; /* hostile */
			struct fx_nccl x = { .exit_ns = call->exit_ns,
					     .entry_common_ns = nccl_call_entry_common(rk, call),
					     .instance = NCCL_NONE,
					     .bytes = call->count * dtype_bytes(call->datatype) };
			const struct nccl_instance *in =
				call->instance != NCCL_NONE && call->instance < nc->n_instances
					? &nc->instances[call->instance] : NULL;
			if (in && nccl_instance_complete(nc, in)) {
				int64_t all_ready = all_ready_of[call->instance];
				x.all_ready_ns = file_ns(call->entry_ns, x.entry_common_ns, all_ready);
				x.instance = call->instance;
				if (v->found && ri != v->rank_index && s->charged_lost_ns &&
				    s->charged_lost_ns[call->instance] > 0)
					x.straggler_ns = (uint64_t)s->charged_lost_ns[call->instance];
			}
			struct fx_ev e = {
				.t0 = call->entry_ns, .t1 = call->exit_ns, .bytes = p->n_nccl,
				.stream = fx_stream_key(call->stream, 0), .tid = call->tid,
				.stack_id = call->stack_id, .type = FXE_NCCL, .what = call->func,
				.async = !blocks, .device = -1,
			};
			if (push_nccl(p, &x) || fx_push(p, &e))
				goto out;
		}
	}
	rc = 0;
out:
	free(all_ready_of);
	return rc;
}

int fx_nccl_first_done(struct fx_state *m)
{
	const struct stragglers_result *s = m->strag ? model_stragglers_result(m->strag) : NULL;
	size_t n = s && s->nccl ? s->nccl->n_instances : 0;
	if (!n)
		return 0;
	int64_t *first = malloc(n * sizeof(*first));
	if (!first)
		return -1;
	for (size_t i = 0; i < n; i++)
		first[i] = INT64_MAX;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < m->n_procs; i++) {
			struct fx_proc *p = &m->procs[i];
			for (size_t k = 0; k < p->n; k++) {
				const struct fx_ev *e = &p->ev[k];
				if (e->type != FXE_NCCL)
					continue;
				struct fx_nccl *x = &p->nccl[e->bytes];
				if (x->instance == NCCL_NONE || x->instance >= n)
					continue;
				int64_t done;
				if (e->t1 - e->t0 > INT64_MAX ||
				    __builtin_add_overflow(x->entry_common_ns, (int64_t)(e->t1 - e->t0), &done))
					continue; /* hostile */
				if (!pass && done < first[x->instance])
					first[x->instance] = done;
				else if (pass && first[x->instance] != INT64_MAX)
					x->done_ns = file_ns(e->t0, x->entry_common_ns, first[x->instance]);
			}
		}
	}
	free(first);
	return 0;
}

/* Whether synchronize `sync` waits for work on `stream` (an event's stream
 * is not known here: taken to). */
static int waits_for(const struct fx_ev *sync, uint64_t stream)
{
	if (sync->what == FR_CUDA_STREAM_SYNC)
		return sync->stream == stream;
	return 1; /* device, context or event synchronize */
}

void fx_nccl_prepare(struct fx_proc *p)
{
	/* NCCL launches its kernels from inside the call (real NCCL does;
	 * cudaLaunchKernel or cuLaunchKernelEx): that work is the collective,
	 * whose time the span holds; it must not end an idle interval as the
	 * next compute kernel would */
	for (size_t i = 0; i < p->n; i++) {
		const struct fx_ev *e = &p->ev[i];
		if (e->type != FXE_NCCL)
			continue;
		for (size_t j = i + 1; j < p->n && p->ev[j].t0 < e->t1; j++)
			if (p->ev[j].tid == e->tid && p->ev[j].type == FXE_WORK)
				p->ev[j].type = FXE_NCCL_WORK;
	}
	for (size_t i = 0; i < p->n; i++) {
		struct fx_ev *e = &p->ev[i];
		if (e->type != FXE_NCCL || !e->async)
			continue;
		for (size_t j = i + 1; j < p->n; j++) {
			const struct fx_ev *w = &p->ev[j];
			if (w->tid != e->tid || w->t0 < e->t1)
				continue; /* another thread's, or inside the call */
			if (w->type == FXE_SYSCALL || w->type == FXE_FDPATH ||
			    w->type == FXE_NCCL_WORK)
				continue;
			if (((w->type == FXE_SYNC && waits_for(w, e->stream)) || w->type == FXE_QUERY) &&
			    w->t1 > e->t1)
				e->t1 = w->t1;
			break; /* work queued, another NCCL call, or another stream's synchronize */
		}
	}
}
