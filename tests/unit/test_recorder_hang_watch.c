/* The recorder's asynchronous hang watch (recorder/ring/hang_watch.c) fed with
 * synthetic events: the first not-ready query since an event's latest
 * record, reset by a query or synchronize that sees it complete and by a
 * new record; the oldest over processes and events; events no longer
 * polled; process exits; a full table; records it must ignore; a reader on
 * another thread.  Not a test of the drain that feeds it. */
#include "check.h"
#include "ring/hang_watch.h"

#include <pthread.h>

static struct fr_ev_cuda cuda(uint32_t pid, uint16_t func, uint64_t ts, uint64_t event,
			      uint64_t stream, int64_t result)
{
	struct fr_ev_cuda e = {
		.c = { .h = { .size = sizeof(e), .type = FR_EV_CUDA }, .ts_ns = ts, .pid = pid,
		       .tid = pid + 1 },
		.func = func, .result = result, .ptr = event, .stream = stream,
	};
	return e;
}

static void feed(struct hang_watch *hw, uint32_t pid, uint16_t func, uint64_t ts, uint64_t event,
		 uint64_t stream, int64_t result)
{
	struct fr_ev_cuda e = cuda(pid, func, ts, event, stream, result);
	hang_watch_event(hw, &e.c);
}

static void test_one_event(void)
{
	struct hang_watch hw;
	struct hang_watch_stuck who;
	CHECK(hang_watch_init(&hw, 16) == 0);
	CHECK_EQ_U64(hang_watch_stuck_since(&hw, 1000, 0, NULL), 0);
	feed(&hw, 10, FR_CUDA_EVENT_RECORD, 100, 0xe1, 0x51, 0);
	CHECK_EQ_U64(hang_watch_stuck_since(&hw, 1000, 0, NULL), 0); /* recorded, not waited on */
	feed(&hw, 10, FR_CUDA_EVENT_QUERY, 110, 0xe1, 0, 600);
	feed(&hw, 10, FR_CUDA_EVENT_QUERY, 120, 0xe1, 0, 600);
	CHECK_EQ_U64(hang_watch_stuck_since(&hw, 1000, 0, &who), 110);
	CHECK(who.pid == 10 && who.tid == 11 && who.event == 0xe1 && who.stream == 0x51);
	CHECK_EQ_U64(who.recorded_ns, 100);
	CHECK_EQ_U64(who.last_query_ns, 120);
	/* complete: nothing waits */
	feed(&hw, 10, FR_CUDA_EVENT_QUERY, 130, 0xe1, 0, 0);
	CHECK_EQ_U64(hang_watch_stuck_since(&hw, 1000, 0, NULL), 0);
	/* recorded again: a new wait from its first not-ready query */
	feed(&hw, 10, FR_CUDA_EVENT_RECORD, 140, 0xe1, 0x51, 0);
	feed(&hw, 10, FR_CUDA_EVENT_QUERY, 150, 0xe1, 0, 600);
	CHECK_EQ_U64(hang_watch_stuck_since(&hw, 1000, 0, NULL), 150);
	/* a record resets a wait that never completed */
	feed(&hw, 10, FR_CUDA_EVENT_RECORD, 160, 0xe1, 0x51, 0);
	CHECK_EQ_U64(hang_watch_stuck_since(&hw, 1000, 0, NULL), 0);
	feed(&hw, 10, FR_CUDA_EVENT_QUERY, 170, 0xe1, 0, 600);
	CHECK_EQ_U64(hang_watch_stuck_since(&hw, 1000, 0, NULL), 170);
	/* an event synchronize that returned saw it complete */
	feed(&hw, 10, FR_CUDA_EVENT_SYNC, 180, 0xe1, 0, 0);
	CHECK_EQ_U64(hang_watch_stuck_since(&hw, 1000, 0, NULL), 0);
	/* the driver API's names for the same */
	feed(&hw, 10, FR_CU_EVENT_RECORD, 190, 0xe1, 0x52, 0);
	feed(&hw, 10, FR_CU_EVENT_QUERY, 200, 0xe1, 0, 600);
	CHECK_EQ_U64(hang_watch_stuck_since(&hw, 1000, 0, &who), 200);
	CHECK(who.stream == 0x52);
	feed(&hw, 10, FR_CU_EVENT_SYNC, 210, 0xe1, 0, 0);
	CHECK_EQ_U64(hang_watch_stuck_since(&hw, 1000, 0, NULL), 0);
	hang_watch_destroy(&hw);
}

static void test_many(void)
{
	struct hang_watch hw;
	struct hang_watch_stuck who;
	CHECK(hang_watch_init(&hw, 16) == 0);
	feed(&hw, 11, FR_CUDA_EVENT_QUERY, 200, 0xe2, 0, 600); /* its record came before the recorder */
	feed(&hw, 12, FR_CUDA_EVENT_RECORD, 150, 0xe2, 0x53, 0);  /* same handle, another process */
	feed(&hw, 12, FR_CUDA_EVENT_QUERY, 190, 0xe2, 0, 600);
	CHECK_EQ_U64(hang_watch_stuck_since(&hw, 1000, 0, &who), 190);
	CHECK(who.pid == 12);
	/* pid 12 stopped polling long ago; pid 11 polls on */
	feed(&hw, 11, FR_CUDA_EVENT_QUERY, 9500, 0xe2, 0, 600);
	CHECK_EQ_U64(hang_watch_stuck_since(&hw, 10000, 1000, &who), 200);
	CHECK(who.pid == 11 && who.recorded_ns == 0);
	/* pid 12 exits: its events are forgotten */
	struct fr_ev_proc exit_ev = { .c = { .h = { .size = sizeof(exit_ev), .type = FR_EV_PROC_EXIT },
					     .pid = 12, .tid = 12 } };
	hang_watch_event(&hw, &exit_ev.c);
	CHECK_EQ_U64(hang_watch_stuck_since(&hw, 10000, 0, &who), 200);
	CHECK(who.pid == 11);
	hang_watch_destroy(&hw);
}

static void test_ignored(void)
{
	struct hang_watch hw;
	CHECK(hang_watch_init(&hw, 16) == 0);
	/* a failed record, other functions, a record cut short, other types */
	feed(&hw, 10, FR_CUDA_EVENT_RECORD, 100, 0xe1, 0x51, 400);
	feed(&hw, 10, FR_CUDA_STREAM_SYNC, 110, 0x51, 0, 0);
	feed(&hw, 10, FR_CUDA_LAUNCH_KERNEL, 120, 0x1234, 0x51, 0);
	struct fr_ev_cuda e = cuda(10, FR_CUDA_EVENT_QUERY, 130, 0xe1, 0, 600);
	e.c.h.size = sizeof(struct fr_ev_common);
	hang_watch_event(&hw, &e.c);
	e = cuda(10, FR_CUDA_EVENT_QUERY, 130, 0xe1, 0, 600);
	e.c.h.type = FR_EV_NCCL;
	hang_watch_event(&hw, &e.c);
	CHECK_EQ_U64(hang_watch_stuck_since(&hw, 1000, 0, NULL), 0);
	/* a query that fails otherwise (invalid handle) is no wait */
	feed(&hw, 10, FR_CUDA_EVENT_QUERY, 140, 0xe1, 0, 400);
	CHECK_EQ_U64(hang_watch_stuck_since(&hw, 1000, 0, NULL), 0);
	hang_watch_destroy(&hw);
}

/* A full table keeps the events being waited on and makes room by
 * dropping the others; waits it has no room for are counted. */
static void test_full(void)
{
	struct hang_watch hw;
	CHECK(hang_watch_init(&hw, 4) == 0);
	size_t cap = hw.cap;
	feed(&hw, 10, FR_CUDA_EVENT_QUERY, 50, 0x999, 0, 600);
	for (uint64_t i = 0; i < 4 * cap; i++)
		feed(&hw, 10, FR_CUDA_EVENT_RECORD, 100 + i, 0x1000 + i, 0x51, 0);
	CHECK_EQ_U64(hang_watch_stuck_since(&hw, 100000, 0, NULL), 50);
	CHECK_EQ_U64(hw.untracked, 0);
	for (uint64_t i = 0; i < 4 * cap; i++)
		feed(&hw, 10, FR_CUDA_EVENT_QUERY, 1000 + i, 0x5000 + i, 0, 600);
	CHECK(hw.untracked > 0);
	CHECK(hw.used < hw.cap);
	CHECK_EQ_U64(hang_watch_stuck_since(&hw, 100000, 0, NULL), 50);
	hang_watch_destroy(&hw);
}

/* The drain feeds while a trigger thread reads. */
struct reader {
	struct hang_watch *hw;
	int stop;
	uint64_t reads;
};

static void *read_loop(void *arg)
{
	struct reader *r = arg;
	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		hang_watch_stuck_since(r->hw, 1u << 30, 0, NULL);
		r->reads++;
	}
	return NULL;
}

static void test_threads(void)
{
	struct hang_watch hw;
	CHECK(hang_watch_init(&hw, 64) == 0);
	struct reader r = { &hw, 0, 0 };
	pthread_t t;
	CHECK(pthread_create(&t, NULL, read_loop, &r) == 0);
	for (uint64_t i = 0; i < 200000; i++)
		feed(&hw, 10 + (uint32_t)(i % 7), (i & 1) ? FR_CUDA_EVENT_QUERY : FR_CUDA_EVENT_RECORD,
		     1000 + i, i % 50, 0x51, (i & 1) ? 600 : 0);
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	CHECK(r.reads > 0);
	CHECK(hang_watch_stuck_since(&hw, 1u << 30, 0, NULL) >= 1000);
	hang_watch_destroy(&hw);
}

int main(void)
{
	test_one_event();
	test_many();
	test_ignored();
	test_full();
	test_threads();
	return check_finish();
}
