/* The flight recorder's decisions that need no kernel: which events raise a
 * snapshot trigger (an out-of-memory allocation, an NCCL error or the one
 * ncclCommGetAsyncError reports, a process dying badly), when a pending one
 * is due, what the allocator's retry did, how later triggers fold into a
 * pending one; and the allocations live at the ring window's start, as
 * chunks leave the ring (pairing, the runtime-around-driver pair, a stack
 * that names its event, the order carried). */
#include "check.h"

#include <stdlib.h>
#include <string.h>

#include "ring/live_allocs.h"
#include "ring/triggers.h"

#define MS 1000000ull

static struct fr_ev_cuda cuda(uint16_t func, uint32_t tid, uint64_t ts, uint64_t dur,
			      int64_t result, uint64_t ptr, uint64_t bytes)
{
	struct fr_ev_cuda e;
	memset(&e, 0, sizeof(e));
	e.c.h = (struct fr_rec_hdr){ sizeof(e), FR_EV_CUDA, 0 };
	e.c.ts_ns = ts;
	e.c.pid = 100;
	e.c.tid = tid;
	e.func = func;
	e.duration_ns = dur;
	e.result = result;
	e.ptr = ptr;
	e.bytes = bytes;
	return e;
}

static void feed(struct triggers *t, const void *ev)
{
	triggers_on_event(t, ev);
}

static void test_oom_and_retry(void)
{
	struct triggers t;
	triggers_init(&t, TRIGGER_BIT(FR_TRIGGER_OOM), 500 * MS);
	struct trigger_hit hit;
	uint32_t merged;
	uint16_t retry;
	/* the driver call fails inside the runtime's: one OOM, not a retry */
	struct fr_ev_cuda inner = cuda(FR_CU_MEM_ALLOC, 7, 1000 * MS + 10, 5, 2, 0, 1 << 30);
	struct fr_ev_cuda outer = cuda(FR_CUDA_MALLOC, 7, 1000 * MS, 100, 2, 0, 1 << 30);
	feed(&t, &inner);
	feed(&t, &outer);
	CHECK(!triggers_take_due(&t, 1000 * MS + 400 * MS, &hit, &merged, &retry));
	/* a smaller allocation is not the retry; the same size after the
	 * cache was freed is, and it worked */
	struct fr_ev_cuda small = cuda(FR_CUDA_MALLOC, 7, 1001 * MS, 10, 0, 0x1000, 4096);
	struct fr_ev_cuda again = cuda(FR_CUDA_MALLOC, 7, 1002 * MS, 10, 0, 0x2000, 1 << 30);
	struct fr_ev_cuda other = cuda(FR_CUDA_MALLOC, 8, 1003 * MS, 10, 2, 0, 1 << 30);
	feed(&t, &small);
	feed(&t, &again);
	feed(&t, &other); /* another thread's OOM folds into the pending one */
	CHECK(triggers_take_due(&t, 1000 * MS + 10 + 5 + 500 * MS, &hit, &merged, &retry));
	CHECK_EQ_U64(hit.kind, FR_TRIGGER_OOM);
	CHECK_EQ_U64(hit.at_ns, 1000 * MS + 10);
	CHECK_EQ_U64(hit.tid, 7);
	CHECK_EQ_U64(retry, FR_OOM_RETRY_OK);
	CHECK_EQ_U64(merged, 1);
	CHECK(strstr(hit.detail, "cuMemAlloc") && strstr(hit.detail, "1073741824 bytes"));
	CHECK(!triggers_take_due(&t, UINT64_MAX, &hit, &merged, &retry));

	/* a retry that fails too */
	struct fr_ev_cuda fail = cuda(FR_CUDA_MALLOC, 9, 2000 * MS, 10, 2, 0, 1 << 20);
	struct fr_ev_cuda fail2 = cuda(FR_CUDA_MALLOC, 9, 2001 * MS, 10, 2, 0, 1 << 20);
	feed(&t, &fail);
	feed(&t, &fail2);
	CHECK(triggers_take_due(&t, UINT64_MAX, &hit, &merged, &retry));
	CHECK_EQ_U64(retry, FR_OOM_RETRY_FAILED);
	CHECK_EQ_U64(merged, 0);
	/* not armed: nothing */
	struct triggers off;
	triggers_init(&off, 0, 0);
	feed(&off, &fail);
	CHECK(!triggers_take_due(&off, UINT64_MAX, &hit, &merged, &retry));
	triggers_destroy(&off);
	triggers_destroy(&t);
}

static void test_nccl_and_exit(void)
{
	struct triggers t;
	unsigned armed;
	const char *bad;
	CHECK(triggers_parse("nccl-error,exit", &armed, &bad) == 0);
	CHECK(armed & TRIGGER_BIT(FR_TRIGGER_HANG)); /* part of nccl-error */
	CHECK(!(armed & TRIGGER_BIT(FR_TRIGGER_OOM)));
	CHECK(triggers_parse("oom,bogus", &armed, &bad) == -1);
	CHECK_STR(bad, "bogus");
	CHECK(triggers_parse("nccl-error,exit", &armed, &bad) == 0);
	triggers_init(&t, armed, 0);
	struct trigger_hit hit;
	uint32_t merged;
	uint16_t retry;

	struct fr_ev_nccl n;
	memset(&n, 0, sizeof(n));
	n.c.h = (struct fr_rec_hdr){ sizeof(n), FR_EV_NCCL, 0 };
	n.c.pid = 5;
	n.c.ts_ns = 10;
	n.func = FR_NCCL_ALL_REDUCE;
	n.result = 7; /* ncclInProgress: not an error */
	feed(&t, &n);
	CHECK(!triggers_take_due(&t, UINT64_MAX, &hit, &merged, &retry));
	n.func = FR_NCCL_COMM_GET_ASYNC_ERROR;
	n.result = 0;
	n.count = 6; /* the asynchronous error it reported */
	feed(&t, &n);
	CHECK(triggers_take_due(&t, UINT64_MAX, &hit, &merged, &retry));
	CHECK_EQ_U64(hit.kind, FR_TRIGGER_NCCL_ERROR);
	CHECK(strstr(hit.detail, "reported error 6") != NULL);
	CHECK_EQ_U64(retry, FR_OOM_RETRY_NONE);

	struct fr_ev_proc p;
	memset(&p, 0, sizeof(p));
	p.c.h = (struct fr_rec_hdr){ sizeof(p), FR_EV_PROC_EXIT, 0 };
	p.c.pid = 42;
	memcpy(p.comm, "train", 6);
	p.exit_code = 0;
	feed(&t, &p);
	CHECK(!triggers_take_due(&t, UINT64_MAX, &hit, &merged, &retry));
	/* exit (not exit=all): a failure waits for the main thread to decide
	 * whether the process is the job's (ring_mode.c, job_pids.h) */
	p.exit_code = 9; /* killed by SIGKILL */
	feed(&t, &p);
	CHECK(!triggers_take_due(&t, UINT64_MAX, &hit, &merged, &retry));
	struct trigger_hit *exits;
	size_t n_exits = triggers_take_exits(&t, &exits);
	CHECK_EQ_U64(n_exits, 1);
	CHECK_EQ_U64(exits[0].kind, FR_TRIGGER_EXIT);
	CHECK_EQ_U64(exits[0].pid, 42);
	CHECK(strstr(exits[0].detail, "died on signal 9") != NULL);
	free(exits);
	CHECK_EQ_U64(triggers_take_exits(&t, &exits), 0);
	triggers_destroy(&t);

	/* exit=all: every failure raises at once, as before */
	CHECK(triggers_parse("exit=all", &armed, &bad) == 0);
	CHECK(armed & TRIGGER_BIT(FR_TRIGGER_EXIT));
	CHECK(armed & TRIGGER_EXIT_ALL);
	triggers_init(&t, armed, 0);
	p.exit_code = 9;
	feed(&t, &p);
	CHECK(triggers_take_due(&t, UINT64_MAX, &hit, &merged, &retry));
	CHECK_EQ_U64(hit.kind, FR_TRIGGER_EXIT);
	CHECK(strstr(hit.detail, "died on signal 9") != NULL);
	p.exit_code = 3 << 8;
	feed(&t, &p);
	CHECK(triggers_take_due(&t, UINT64_MAX, &hit, &merged, &retry));
	CHECK(strstr(hit.detail, "exited with status 3") != NULL);
	CHECK_EQ_U64(triggers_take_exits(&t, &exits), 0);
	triggers_destroy(&t);
}

/* Which processes are the job: the rules of job_pids.h, and the drain's
 * CUDA calls marking their callers through the trigger hook. */
static void test_job_pids(void)
{
	struct job_pids j;
	unsigned why;
	job_pids_init(&j);
	job_pids_mark(&j, 100, JOB_ROOT, 0, 0);
	CHECK(job_pids_is_job(&j, 100, &why));
	CHECK_EQ_U64(why, JOB_ROOT);
	job_pids_reset(&j, 100, 50); /* the command execs: still the job */
	CHECK(job_pids_is_job(&j, 100, &why));

	/* a CUDA user forks a worker (inherited mappings, at the fork's time):
	 * the job until it execs something else */
	job_pids_mark(&j, 200, JOB_LIB, 10, 0);
	job_pids_reset(&j, 201, 20);
	job_pids_mark(&j, 201, JOB_LIB, 20, 0);
	CHECK(job_pids_is_job(&j, 201, &why));
	job_pids_reset(&j, 201, 30); /* exec of readlink */
	CHECK(!job_pids_is_job(&j, 201, &why));
	/* an exec whose new mappings were handled before its exec event */
	job_pids_mark(&j, 202, JOB_LIB, 45, 0);
	job_pids_reset(&j, 202, 40);
	CHECK(job_pids_is_job(&j, 202, &why));
	CHECK_EQ_U64(why, JOB_LIB);

	/* ranks: the launcher's child names rank 3; its helper inherits it */
	char env[] = "PATH=/bin\0RANK=3\0LOCAL_RANK=3";
	uint64_t rank = job_pids_env_rank(env, sizeof(env) - 1);
	CHECK_EQ_U64(rank, 4);
	char none[] = "PATH=/bin\0RANKS=2\0RANK=x";
	CHECK_EQ_U64(job_pids_env_rank(none, sizeof(none) - 1), 0);
	char slurm[] = "SLURM_PROCID=0";
	CHECK_EQ_U64(job_pids_env_rank(slurm, sizeof(slurm) - 1), 1);
	job_pids_mark(&j, 300, job_pids_rank(&j, 1) == rank ? 0 : JOB_RANK, 1, rank);
	CHECK(job_pids_is_job(&j, 300, &why));
	CHECK_EQ_U64(why, JOB_RANK);
	job_pids_mark(&j, 301, job_pids_rank(&j, 300) == rank ? 0 : JOB_RANK, 1, rank);
	CHECK(!job_pids_is_job(&j, 301, &why));
	/* the helper's own child: the same rank as its parent, not a rank */
	job_pids_mark(&j, 302, job_pids_rank(&j, 301) == rank ? 0 : JOB_RANK, 1, rank);
	CHECK(!job_pids_is_job(&j, 302, &why));

	CHECK(job_pids_is_job_library("/usr/lib/x86_64-linux-gnu/libcuda.so.1"));
	CHECK(job_pids_is_job_library("/opt/build/samples/cudart/libcudart.so.12.0"));
	CHECK(job_pids_is_job_library("libnccl.so.2"));
	CHECK(job_pids_is_job_library("/usr/lib/libibverbs.so.1.14"));
	CHECK(!job_pids_is_job_library("/usr/lib/libc.so.6"));
	CHECK(!job_pids_is_job_library("/usr/lib/libcudaxx.so"));

	/* forgetting empties the table: it holds the live job only */
	size_t before = job_pids_count(&j);
	job_pids_forget(&j, 300);
	job_pids_forget(&j, 300);
	CHECK_EQ_U64(job_pids_count(&j), before - 1);

	/* the drain's calls: the caller is marked once, again after a reset */
	struct triggers t;
	unsigned armed;
	const char *bad;
	CHECK(triggers_parse("exit", &armed, &bad) == 0);
	triggers_init(&t, armed, 0);
	t.job = &j;
	struct fr_ev_cuda c;
	memset(&c, 0, sizeof(c));
	c.c.h = (struct fr_rec_hdr){ sizeof(c), FR_EV_CUDA, 0 };
	c.c.pid = 400;
	c.c.ts_ns = 70;
	feed(&t, &c);
	CHECK(job_pids_is_job(&j, 400, &why));
	CHECK_EQ_U64(why, JOB_EVENTS);
	job_pids_reset(&j, 400, 90); /* exec */
	CHECK(!job_pids_is_job(&j, 400, &why));
	c.c.ts_ns = 100;
	feed(&t, &c);
	CHECK(job_pids_is_job(&j, 400, &why));
	triggers_destroy(&t);
	job_pids_destroy(&j);
}

/* A raw chunk of records, as the ring hands an evicted one over. */
struct chunk {
	uint8_t buf[8192];
	size_t len;
};

static void add(struct chunk *c, const void *rec, size_t size)
{
	memcpy(c->buf + c->len, rec, size);
	c->len += size;
}

static void add_ustack(struct chunk *c, uint32_t id, uint32_t tid)
{
	uint8_t rec[sizeof(struct fr_rec_ustack) + 64];
	memset(rec, 0, sizeof(rec));
	struct fr_rec_ustack u;
	memset(&u, 0, sizeof(u));
	u.h = (struct fr_rec_hdr){ sizeof(rec), FR_REC_USTACK, 0 };
	u.stack_id = id;
	u.pid = 100;
	u.tid = tid;
	u.stack_len = 64;
	memcpy(rec, &u, sizeof(u));
	add(c, rec, sizeof(rec));
}

static void test_live_allocs(void)
{
	struct live_allocs l;
	memset(&l, 0, sizeof(l));
	struct chunk c1 = { .len = 0 }, c2 = { .len = 0 };
	/* c1: A (with its stack), B inside a runtime-around-driver pair, C freed */
	struct fr_ev_cuda a = cuda(FR_CUDA_MALLOC, 1, 10, 1, 0, 0xa000, 1000);
	a.stack_id = 0x80000001u;
	add_ustack(&c1, 0x80000001u, 1);
	add(&c1, &a, sizeof(a));
	struct fr_ev_cuda b_in = cuda(FR_CU_MEM_ALLOC, 1, 21, 1, 0, 0xb000, 2000);
	struct fr_ev_cuda b_out = cuda(FR_CUDA_MALLOC, 1, 20, 5, 0, 0xb000, 2000);
	add(&c1, &b_in, sizeof(b_in));
	add(&c1, &b_out, sizeof(b_out));
	struct fr_ev_cuda cc = cuda(FR_CUDA_MALLOC, 1, 30, 1, 0, 0xc000, 3000);
	struct fr_ev_cuda cf = cuda(FR_CUDA_FREE, 1, 31, 1, 0, 0xc000, 0);
	add(&c1, &cc, sizeof(cc));
	add(&c1, &cf, sizeof(cf));
	struct fr_ev_cuda failed = cuda(FR_CUDA_MALLOC, 1, 32, 1, 2, 0, 1 << 30);
	struct fr_ev_cuda empty = cuda(FR_CUDA_MALLOC, 1, 33, 1, 0, 0, 0);
	add(&c1, &failed, sizeof(failed));
	add(&c1, &empty, sizeof(empty));
	/* a pinned host buffer: carried, not device bytes */
	struct fr_ev_cuda h = cuda(FR_CUDA_MALLOC_HOST, 1, 34, 1, 0, 0x7000, 4096);
	add(&c1, &h, sizeof(h));
	/* a stack at the very end: its event (D) opens the next chunk */
	add_ustack(&c1, 0x80000002u, 1);
	live_allocs_evicted(&l, c1.buf, c1.len);
	struct fr_ev_cuda d = cuda(FR_CUDA_MALLOC, 1, 40, 1, 0, 0xd000, 4000);
	d.stack_id = 0x80000002u;
	add(&c2, &d, sizeof(d));
	live_allocs_evicted(&l, c2.buf, c2.len);

	struct frec_carried out;
	CHECK(live_allocs_carry(&l, &out) == 0);
	CHECK_EQ_U64(out.allocs, 4);           /* A, B (once), host, D */
	CHECK_EQ_U64(out.alloc_bytes, 7000);   /* device bytes: A + B + D */
	CHECK_EQ_U64(out.count, 6);            /* A and D with their stacks */
	CHECK_EQ_U64(out.first_ts_ns, 10);
	/* in time order, each stack right before its event; B as the outer call */
	uint16_t types[8];
	uint64_t ts[8];
	size_t n = 0;
	for (size_t off = 0; off < out.len && n < 8; n++) {
		struct fr_rec_hdr hh;
		memcpy(&hh, out.raw + off, sizeof(hh));
		types[n] = hh.type;
		ts[n] = 0;
		if (hh.type == FR_EV_CUDA) {
			struct fr_ev_cuda e;
			memcpy(&e, out.raw + off, sizeof(e));
			ts[n] = e.c.ts_ns;
			if (e.ptr == 0xb000)
				CHECK_EQ_U64(e.func, FR_CUDA_MALLOC);
		}
		off += hh.size;
	}
	CHECK_EQ_U64(n, 6);
	CHECK_EQ_U64(types[0], FR_REC_USTACK);
	CHECK_EQ_U64(ts[1], 10);
	CHECK_EQ_U64(ts[2], 20);
	CHECK_EQ_U64(ts[3], 34);
	CHECK_EQ_U64(types[4], FR_REC_USTACK);
	CHECK_EQ_U64(ts[5], 40);

	/* frees in a later chunk release them; a free of B's inner half too */
	struct chunk c3 = { .len = 0 };
	struct fr_ev_cuda fa = cuda(FR_CUDA_FREE, 1, 50, 1, 0, 0xa000, 0);
	struct fr_ev_cuda fb = cuda(FR_CU_MEM_FREE, 1, 51, 1, 0, 0xb000, 0);
	struct fr_ev_cuda fb2 = cuda(FR_CUDA_FREE, 1, 50, 5, 0, 0xb000, 0);
	add(&c3, &fa, sizeof(fa));
	add(&c3, &fb, sizeof(fb));
	add(&c3, &fb2, sizeof(fb2));
	live_allocs_evicted(&l, c3.buf, c3.len);
	CHECK(live_allocs_carry(&l, &out) == 0);
	CHECK_EQ_U64(out.allocs, 2);
	CHECK_EQ_U64(out.alloc_bytes, 4000);
	live_allocs_free(&l);
}

int main(void)
{
	test_oom_and_retry();
	test_nccl_and_exit();
	test_job_pids();
	test_live_allocs();
	return check_finish();
}
