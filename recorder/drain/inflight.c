/* Calls entered and not returned (see inflight.h): a walk over the nccl and
 * cuda families' per-call entry maps.  The maps are LRU hashes keyed by
 * (thread, cookie), written by the entry programs and emptied by the
 * return programs; what a walk finds there is a call in progress, or the
 * leftover of a thread that died inside a call (dropped here: its thread
 * is gone from /proc).  The arguments are decoded the way the return
 * programs decode them (bpf/nccl_args.h), so an in-flight collective reads
 * like its event would. */
#include "drain/inflight.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach/bpf_probes.h"
#include "call_state.h"
#include "fr_family.h"
#include "frec_writer.h"
#include "nccl_args.h"

/* Whether an entry of family id for func is a call that blocks its thread
 * on other ranks or on the device. */
static int blocking(uint16_t probe, uint16_t func)
{
	enum fr_func_class cls = fr_func_class_of((enum fr_probe_id)probe, func);
	if (probe == FR_PROBE_NCCL)
		return cls == FR_FN_COLLECTIVE || cls == FR_FN_P2P || cls == FR_FN_COMM_INIT ||
		       func == FR_NCCL_GROUP_END;
	if (probe == FR_PROBE_CUDA)
		return cls == FR_FN_SYNC;
	return 0;
}

static int thread_alive(uint32_t pid, uint32_t tid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%u/task/%u", pid, tid);
	return access(path, F_OK) == 0;
}

static void describe(struct fr_inflight_call *c, uint16_t probe, uint16_t func,
		     const struct call_key *k, const struct call_state *st)
{
	memset(c, 0, sizeof(*c));
	c->entry_ns = st->ts_ns;
	c->pid = st->pid;
	c->tid = k->tid;
	c->probe = probe;
	c->func = func;
	c->named_func = func;
	c->peer = -1;
	if (probe == FR_PROBE_CUDA) {
		/* stream and event synchronizes take their handle first */
		c->handle = func == FR_CUDA_DEVICE_SYNC ? 0 : st->arg[0];
		return;
	}
	c->seq = st->seq;
	if (func == FR_NCCL_COMM_INIT_RANK || func == FR_NCCL_COMM_INIT_RANK_CONFIG) {
		/* (comm*, nranks, uniqueId, rank): the new communicator is not
		 * known before the return; who is waiting for whom is */
		c->count = st->arg[1];
		c->peer = (int32_t)st->arg[2];
		return;
	}
	struct fr_ev_nccl e;
	memset(&e, 0, sizeof(e));
	e.peer = -1;
	nccl_args_fill(&e, st, func);
	c->comm = e.comm;
	c->count = e.count;
	c->datatype = e.datatype;
	c->op = e.op;
	c->peer = e.peer;
	c->handle = e.stream;
	c->named_func = nccl_args_named_func(st, func);
}

static int seen_before(const struct fr_inflight_call *out, size_t n,
		       const struct fr_inflight_call *c)
{
	for (size_t i = 0; i < n; i++)
		if (out[i].tid == c->tid && out[i].probe == c->probe && out[i].func == c->func &&
		    out[i].entry_ns == c->entry_ns)
			return 1;
	return 0;
}

/* The entries of one family's map into out[*n..max). */
static int scan_family(int fd, uint16_t probe, struct fr_inflight_call *out, size_t *n,
		       size_t max)
{
	struct call_key key, next;
	struct call_state st;
	const void *prev = NULL;
	/* Keys deleted while we walk make the kernel start over from the
	 * first key: bound the walk (the maps hold 16384 entries) and drop
	 * what is seen twice. */
	for (unsigned steps = 0; steps < 4 * 16384 && *n < max; steps++) {
		if (bpf_map_get_next_key(fd, prev, &next)) {
			if (errno == ENOENT)
				return 0;
			return -errno;
		}
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &st))
			continue; /* returned meanwhile */
		uint16_t func = CALL_COOKIE_FUNC(key.cookie_lo);
		if (!st.pid || !blocking(probe, func) || !thread_alive(st.pid, key.tid))
			continue;
		struct fr_inflight_call c;
		describe(&c, probe, func, &key, &st);
		if (!seen_before(out, *n, &c))
			out[(*n)++] = c;
	}
	return 0;
}

static int by_entry(const void *a, const void *b)
{
	const struct fr_inflight_call *x = a, *y = b;
	if (x->entry_ns != y->entry_ns)
		return x->entry_ns < y->entry_ns ? -1 : 1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

int inflight_scan(struct bpf_probes *p, struct fr_inflight_call *out, size_t max)
{
	static const uint16_t families[] = { FR_PROBE_NCCL, FR_PROBE_CUDA };
	size_t n = 0;
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		int fd = bpf_probes_calls_fd(p, (enum fr_probe_id)families[i]);
		if (fd < 0)
			continue;
		int err = scan_family(fd, families[i], out, &n, max);
		if (err)
			return err;
	}
	if (n > 1)
		qsort(out, n, sizeof(*out), by_entry);
	return (int)n;
}

int inflight_write(struct frec_builder *b, const struct fr_inflight_call *c, size_t n,
		   uint64_t seen_mono_ns)
{
	if (n > INFLIGHT_MAX)
		n = INFLIGHT_MAX;
	uint32_t size = (uint32_t)(sizeof(struct fr_rec_inflight) + n * sizeof(*c));
	uint8_t *rec = frec_builder_reserve(b, size);
	if (!rec)
		return -1;
	struct fr_rec_inflight h = {
		.h = { .size = size, .type = FR_REC_INFLIGHT },
		.seen_ns = seen_mono_ns,
		.n = (uint32_t)n,
	};
	memcpy(rec, &h, sizeof(h));
	if (n)
		memcpy(rec + sizeof(h), c, n * sizeof(*c));
	frec_builder_commit(b, seen_mono_ns);
	return 0;
}

uint64_t inflight_oldest_blocking(const struct fr_inflight_call *c, size_t n)
{
	uint64_t oldest = 0;
	for (size_t i = 0; i < n; i++)
		if (blocking(c[i].probe, c[i].func) && (!oldest || c[i].entry_ns < oldest))
			oldest = c[i].entry_ns;
	return oldest;
}
