/* Processes that make their GPU wait, for the findings tests (the model's,
 * report, sqlite, timeline, the browser's).  Not a test itself.
 *
 * pid 500 ("gpujob"), one thread, FINDINGS_STEPS steps of 5 ms from base:
 * a launch, a cudaDeviceSynchronize returning 1 ms in (the device is empty:
 * an idle interval opens), a 1 ms cudaMemcpy H2D from pageable memory
 * (pageable_copy), a 0.4 ms getpid (no rule: unexplained), CPU samples in
 * train_step (host_sync), and the next launch at 5 ms closes the interval.
 * So each interval is 4 ms: 1 pageable_copy, 0.4 unexplained, 2.6
 * host_sync. */
#ifndef FLIGHTREC_TEST_ANALYZER_FINDINGS_TRACE_H
#define FLIGHTREC_TEST_ANALYZER_FINDINGS_TRACE_H

#include "test_analyzer_common.h"

#define FINDINGS_STEPS 10
#define FINDINGS_PID 500

static inline void findings_cuda(struct synth *s, uint16_t func, uint64_t ts, uint64_t dur,
				 uint32_t stack, uint64_t dst, uint64_t src, uint64_t bytes,
				 uint32_t kind)
{
	struct fr_ev_cuda ev = { .c = { .ts_ns = ts, .pid = FINDINGS_PID, .tid = FINDINGS_PID },
				 .func = func, .duration_ns = dur, .stack_id = stack, .ptr = dst,
				 .src = src, .bytes = bytes, .kind = kind };
	synth_raw(s->ev, &ev, sizeof(ev), FR_EV_CUDA, ts);
}

static inline void findings_trace_body(struct synth *s, uint64_t base)
{
	synth_process(s, FINDINGS_PID, 1, "gpujob", "python gpujob.py");
	synth_thread(s, FINDINGS_PID, FINDINGS_PID, "gpujob");
	synth_mapping(s, FINDINGS_PID, 0x800000, 0x900000, 0, 20, "/usr/bin/gpujob");
	uint64_t step[] = { 0x802010, 0x801010 }, copy[] = { 0x803010, 0x801010 };
	synth_stack(s, 70, FINDINGS_PID, step, 0, 2);
	synth_stack(s, 71, FINDINGS_PID, copy, 0, 2);
	static const struct synth_sym syms[] = {
		{ 0x1000, 0x100, "main" }, { 0x2000, 0x100, "train_step" }, { 0x3000, 0x100, "to_device" },
	};
	synth_dso(s, 20, 0, "/usr/bin/gpujob", syms, 3);
	const uint64_t ms = 1000000;
	findings_cuda(s, FR_CUDA_MALLOC, base - ms, 5000, 70, 0x700000000ull, 0, 1 << 20, 0);
	for (int i = 0; i <= FINDINGS_STEPS; i++) {
		uint64_t t = base + (uint64_t)i * 5 * ms;
		findings_cuda(s, FR_CUDA_LAUNCH_KERNEL, t, 10000, 70, 0, 0, 0, 0);
		if (i == FINDINGS_STEPS)
			break;
		findings_cuda(s, FR_CUDA_DEVICE_SYNC, t + 20000, ms - 20000, 70, 0, 0, 0, 0);
		findings_cuda(s, FR_CUDA_MEMCPY, t + ms, ms, 71, 0x700000000ull, 0x5000, 1 << 20,
			      FR_COPY_H2D);
		struct fr_ev_syscall sc = { .c = { .ts_ns = t + 2 * ms + 100000, .pid = FINDINGS_PID,
						   .tid = FINDINGS_PID },
					    .nr = 39, .ret = FINDINGS_PID, .duration_ns = 400000,
					    .stack_id = 70 };
		synth_raw(s->ev, &sc, sizeof(sc), FR_EV_SYSCALL, sc.c.ts_ns);
		for (int k = 0; k < 3; k++) {
			struct fr_ev_cpu_sample cs = {
				.c = { .ts_ns = t + 2 * ms + 600000 + (uint64_t)k * 800000,
				       .pid = FINDINGS_PID, .tid = FINDINGS_PID },
				.stack_id = 70 };
			synth_raw(s->ev, &cs, sizeof(cs), FR_EV_CPU_SAMPLE, cs.c.ts_ns);
		}
	}
	uint64_t end = base + (uint64_t)FINDINGS_STEPS * 5 * ms + 10000;
	if (end > s->ts_ns)
		s->ts_ns = end;
}

/* A process that issues many small kernels (findings_launch_body), pid
 * LAUNCH_PID ("smallops"), LAUNCH_STEPS steps from base, on one thread.
 * Before the first step a cudaDeviceSynchronize returns 90 us before base
 * (an idle interval of 90 us, host_sync: no sample in it).  Each step k,
 * from t = base + k * step:
 *   20 cudaLaunchKernel 100 us apart (5 us each; the 11th carries stack
 *   main;train_step;run_small_ops, the others none, as unsampled launches
 *   do), a CPU sample in dispatch_op 50 us after each launch;
 *   cudaStreamSynchronize 10 us after the last launch, then an idle
 *   interval to the next step's first launch (a CPU sample in train_step
 *   in its middle: host_sync); a last launch after the last step.
 * LAUNCH_BOUND: steps of 3 ms, the synchronize waits 15 us (less than the
 *   100 us between launches: the host set the pace), so the last kernel
 *   ran within 25 us; replayed at 25 us each, every one of the 19 gaps
 *   leaves 75 us idle: launch_bound 1.425 ms a step, 14.25 ms in all;
 *   host_sync 0.09 + 10 x 1.075 = 10.84 ms; wall 30.1 ms.
 * LAUNCH_GPU_BOUND (a healthy run): steps of 5 ms, the synchronize waits
 *   3 ms (the GPU was behind): no launch_bound; host_sync 0.09 + 10 x 0.09
 *   = 0.99 ms of 50.1 ms wall (2%: under the threshold).
 * Without samples (samples = 0) the idle is the same and unexplained: no
 *   CPU sample says the host was working rather than waiting.
 * LAUNCH_TWO_STREAMS: LAUNCH_BOUND's times, but every other launch goes to
 *   a second stream and the synchronize waits for the first only: no
 *   launch_bound (the synchronize says nothing of the other stream's
 *   kernels), and the process counts 2 streams.
 * LAUNCH_NESTED: LAUNCH_BOUND with a cuLaunchKernel inside each
 *   cudaLaunchKernel (1 us in, 3 us long) naming the stream in another
 *   form, as a runtime calling the probed driver does: the same answers
 *   (one launch each, one stream). */
#define LAUNCH_PID 510
#define LAUNCH_STEPS 10
enum launch_mode { LAUNCH_BOUND, LAUNCH_GPU_BOUND, LAUNCH_TWO_STREAMS, LAUNCH_NESTED };

static inline void launch_cuda(struct synth *s, uint16_t func, uint64_t ts, uint64_t dur,
			       uint32_t stack, uint64_t stream, uint64_t ptr)
{
	int launch = func == FR_CUDA_LAUNCH_KERNEL || func == FR_CU_LAUNCH_KERNEL;
	struct fr_ev_cuda ev = { .c = { .ts_ns = ts, .pid = LAUNCH_PID, .tid = LAUNCH_PID },
				 .func = func, .duration_ns = dur, .stack_id = stack,
				 .flags = launch && !stack ? FR_CUDAF_UNSAMPLED : 0,
				 .ptr = ptr, .stream = stream, .device = -1 };
	synth_raw(s->ev, &ev, sizeof(ev), FR_EV_CUDA, ts);
}

static inline void launch_sample(struct synth *s, uint64_t ts, uint32_t stack)
{
	struct fr_ev_cpu_sample cs = { .c = { .ts_ns = ts, .pid = LAUNCH_PID, .tid = LAUNCH_PID },
				       .stack_id = stack };
	synth_raw(s->ev, &cs, sizeof(cs), FR_EV_CPU_SAMPLE, ts);
}

/* samples: 0 leaves the CPU samples out (a recording without the cpu probe). */
static inline void findings_launch_body(struct synth *s, uint64_t base, enum launch_mode mode,
					int samples)
{
	synth_process(s, LAUNCH_PID, 1, "smallops", "python smallops.py");
	synth_thread(s, LAUNCH_PID, LAUNCH_PID, "smallops");
	synth_mapping(s, LAUNCH_PID, 0xa00000, 0xb00000, 0, 21, "/usr/bin/smallops");
	uint64_t launch[] = { 0xa03010, 0xa02010, 0xa01010 };
	uint64_t dispatch[] = { 0xa04010, 0xa03010, 0xa02010, 0xa01010 };
	uint64_t step[] = { 0xa02010, 0xa01010 };
	synth_stack(s, 80, LAUNCH_PID, launch, 0, 3);
	synth_stack(s, 81, LAUNCH_PID, dispatch, 0, 4);
	synth_stack(s, 82, LAUNCH_PID, step, 0, 2);
	static const struct synth_sym syms[] = {
		{ 0x1000, 0x100, "main" }, { 0x2000, 0x100, "train_step" },
		{ 0x3000, 0x100, "run_small_ops" }, { 0x4000, 0x100, "dispatch_op" },
	};
	synth_dso(s, 21, 0, "/usr/bin/smallops", syms, 4);
	const uint64_t us = 1000, stream_a = 0x7100, stream_b = 0x7200;
	const uint64_t step_ns = (mode == LAUNCH_GPU_BOUND ? 5000 : 3000) * us;
	const uint64_t wait_ns = (mode == LAUNCH_GPU_BOUND ? 3000 : 15) * us;
	launch_cuda(s, FR_CUDA_DEVICE_SYNC, base - 100 * us, 10 * us, 82, 0, 0);
	for (int k = 0; k <= LAUNCH_STEPS; k++) {
		uint64_t t = base + (uint64_t)k * step_ns;
		if (k == LAUNCH_STEPS) {
			launch_cuda(s, FR_CUDA_LAUNCH_KERNEL, t, 5 * us, 0, stream_a, 0x401000);
			break;
		}
		for (int i = 0; i < 20; i++) {
			uint64_t l = t + (uint64_t)i * 100 * us;
			uint64_t stream = mode == LAUNCH_TWO_STREAMS && i % 2 ? stream_b : stream_a;
			launch_cuda(s, FR_CUDA_LAUNCH_KERNEL, l, 5 * us, i == 10 ? 80 : 0, stream,
				    0x401000 + 0x100 * (uint64_t)(i % 4));
			if (mode == LAUNCH_NESTED)
				launch_cuda(s, FR_CU_LAUNCH_KERNEL, l + us, 3 * us, 0, 0x7f00, 0x401000);
			if (i < 19 && samples)
				launch_sample(s, l + 50 * us, 81);
		}
		uint64_t sync = t + 1910 * us;
		launch_cuda(s, FR_CUDA_STREAM_SYNC, sync, wait_ns, 82, 0, stream_a);
		if (samples)
			launch_sample(s, (sync + wait_ns + t + step_ns) / 2, 82);
	}
	uint64_t end = base + (uint64_t)LAUNCH_STEPS * step_ns + 5 * us;
	if (end > s->ts_ns)
		s->ts_ns = end;
}

/* A data-parallel job of DDP_RANKS processes in one trace (findings_nccl_body),
 * pids DDP_PID + r with RANK=r, one thread each, DDP_STEPS steps; every
 * rank joins one communicator (ncclCommInitRank 1 ms before base).  Step
 * k starts at T (base for the first); rank r computes compute_ms[r]
 * (CPU samples every ms in compute, or in slow_loader for the first
 * compute_ms[r] - 10 ms of a slower rank), then enters ncclAllReduce at
 * T + compute_ms[r]; the last to enter does at L = T + max compute_ms;
 * every rank leaves at L + exchange_ms, and the next step starts then.
 * So each rank's time in the call is its wait (L - its entry) and the
 * exchange, exactly.  The NCCL period (one collective a step) gives 10
 * steps (the stragglers model's 9 begin at a collective's exit: the first
 * collective ends none of them).
 *   DDP_STRAGGLER     compute 10, 10.5, 16, 11 ms, exchange 0.2 ms (steps
 *                     of 16.2 ms): rank 2 is the straggler, 5 ms later
 *                     than the second latest in every collective.  The
 *                     stragglers model charges 5 ms of the 9 collectives
 *                     of its steps to each other rank: straggler 135 ms;
 *                     nccl_exchange 10 x 4 x 0.2 = 8 ms (1.2% of 162.8 ms
 *                     wall x 4: under the threshold); unexplained the rest
 *                     of the waits: the first collective's (6 + 5.5 + 5)
 *                     and 9 x (1 + 0.5) = 30 ms.  Idle per pid 62, 57, 2,
 *                     52 ms; unexplained 15, 10, 0, 5.
 *   DDP_STRAGGLER_ASYNC  the same job with NCCL's own behaviour: the call
 *                     returns after 20 us (enqueued) and a
 *                     cudaStreamSynchronize of its stream 10 us later
 *                     returns at L + exchange: the same answers.
 *   DDP_EXCHANGE      compute 10, 10.1, 10.2, 10.3 ms on the GPU: a
 *                     cudaLaunchKernel at T and a cudaStreamSynchronize of
 *                     the compute stream returning at T + compute_ms[r]
 *                     (an idle interval opens), then the blocking
 *                     collective, exchange 4 ms, a CPU sample in
 *                     train_step and the next step's launch 0.1 ms after
 *                     the collective's return (steps of 14.4 ms; a last
 *                     launch after the last step).  No straggler (rank 3
 *                     is latest by 0.1 ms, under the verdict's threshold):
 *                     nccl_exchange 10 x 4 x 4 = 160 ms of 145 ms wall x 4
 *                     (27.6%); host_sync 10 x 4 x 0.1 = 4 ms; unexplained
 *                     10 x (0.3 + 0.2 + 0.1) = 6 ms; idle per pid 44, 43,
 *                     42, 41 ms.
 *   DDP_HEALTHY       compute 10, 10.1, 10.2, 10.3 ms (CPU), exchange
 *                     0.2 ms, and in the last step rank 1 returns 0.5 ms
 *                     after the others (its thread was not running): the
 *                     collective completed when the first rank returned,
 *                     so nccl_exchange stays 8 ms of 105.8 ms wall x 4
 *                     (1.9%): no finding; unexplained 6 + 0.5 ms; idle per
 *                     pid 5, 4.5, 3, 2 ms. */
#define DDP_PID 600
#define DDP_RANKS 4
#define DDP_STEPS 10
enum ddp_mode { DDP_STRAGGLER, DDP_STRAGGLER_ASYNC, DDP_EXCHANGE, DDP_HEALTHY };

static inline void ddp_env(struct synth *s, uint32_t pid, int rank)
{
	char env[128];
	int n = snprintf(env, sizeof(env), "RANK=%d%cLOCAL_RANK=%d%cWORLD_SIZE=%d", rank, 0, rank,
			 0, DDP_RANKS);
	uint32_t len = (uint32_t)n + 1;
	uint8_t buf[256] = { 0 };
	struct fr_rec_proc_env r = { .ts_ns = s->ts_ns, .pid = pid, .len = len };
	memcpy(buf, &r, sizeof(r));
	memcpy(buf + sizeof(r), env, len);
	synth_raw(s->meta, buf, FR_ALIGN8((uint32_t)sizeof(r) + len), FR_REC_PROC_ENV, s->ts_ns);
}

static inline void ddp_nccl(struct synth *s, int r, uint16_t func, uint64_t ts, uint64_t dur,
			    uint32_t seq, uint32_t stack)
{
	struct fr_ev_nccl ev = { .c = { .ts_ns = ts, .pid = DDP_PID + (uint32_t)r,
					.tid = DDP_PID + (uint32_t)r },
				 .func = func, .stack_id = stack, .duration_ns = dur,
				 .comm = 0x66000000ull + (uint64_t)r, .count = 1u << 20,
				 .datatype = 7 /* ncclFloat32 */, .peer = -1,
				 .rank = func == FR_NCCL_COMM_INIT_RANK ? r : -1,
				 .nranks = func == FR_NCCL_COMM_INIT_RANK ? DDP_RANKS : -1,
				 .uid_hash = func == FR_NCCL_COMM_INIT_RANK ? 0xddb0000000000001ull : 0,
				 .seq = seq, .stream = 0x8800ull + (uint64_t)r };
	synth_raw(s->ev, &ev, sizeof(ev), FR_EV_NCCL, ts);
	if (ts + dur > s->ts_ns)
		s->ts_ns = ts + dur;
}

static inline void ddp_cuda(struct synth *s, int r, uint16_t func, uint64_t ts, uint64_t dur,
			    uint64_t stream, uint32_t stack)
{
	struct fr_ev_cuda ev = { .c = { .ts_ns = ts, .pid = DDP_PID + (uint32_t)r },
				 .func = func, .duration_ns = dur, .stack_id = stack,
				 .ptr = func == FR_CUDA_STREAM_SYNC ? stream : 0x401000,
				 .stream = func == FR_CUDA_STREAM_SYNC ? 0 : stream, .device = r };
	synth_cuda(s, ev);
}

static inline void ddp_sample(struct synth *s, int r, uint64_t ts, uint32_t stack)
{
	struct fr_ev_cpu_sample cs = { .c = { .ts_ns = ts, .pid = DDP_PID + (uint32_t)r,
					      .tid = DDP_PID + (uint32_t)r },
				       .stack_id = stack };
	synth_raw(s->ev, &cs, sizeof(cs), FR_EV_CPU_SAMPLE, ts);
}

static inline void findings_nccl_body(struct synth *s, uint64_t base, enum ddp_mode mode)
{
	static const struct synth_sym syms[] = {
		{ 0x1000, 0x100, "main" }, { 0x2000, 0x100, "train_step" },
		{ 0x3000, 0x100, "compute" }, { 0x4000, 0x100, "allreduce_grads" },
		{ 0x5000, 0x100, "slow_loader" },
	};
	synth_dso(s, 22, 0, "/usr/bin/ddpjob", syms, 5);
	/* stacks per rank: 100 + 4r compute, +1 allreduce_grads, +2 train_step, +3 slow_loader */
	for (int r = 0; r < DDP_RANKS; r++) {
		uint32_t pid = DDP_PID + (uint32_t)r, id = 100 + 4 * (uint32_t)r;
		synth_process(s, pid, 1, "ddpjob", "python ddpjob.py");
		synth_thread(s, pid, pid, "ddpjob");
		synth_mapping(s, pid, 0xc00000, 0xd00000, 0, 22, "/usr/bin/ddpjob");
		ddp_env(s, pid, r);
		uint64_t compute[] = { 0xc03010, 0xc02010, 0xc01010 };
		uint64_t allreduce[] = { 0xc04010, 0xc02010, 0xc01010 };
		uint64_t step[] = { 0xc02010, 0xc01010 };
		uint64_t slow[] = { 0xc05010, 0xc02010, 0xc01010 };
		synth_stack(s, id, pid, compute, 0, 3);
		synth_stack(s, id + 1, pid, allreduce, 0, 3);
		synth_stack(s, id + 2, pid, step, 0, 2);
		synth_stack(s, id + 3, pid, slow, 0, 3);
	}
	const uint64_t us = 1000, ms = 1000000;
	static const uint64_t straggler_us[DDP_RANKS] = { 10000, 10500, 16000, 11000 };
	static const uint64_t even_us[DDP_RANKS] = { 10000, 10100, 10200, 10300 };
	const uint64_t *compute_us = mode <= DDP_STRAGGLER_ASYNC ? straggler_us : even_us;
	const uint64_t exchange = mode == DDP_EXCHANGE ? 4 * ms : 200 * us;
	int gpu = mode == DDP_EXCHANGE;
	for (int r = 0; r < DDP_RANKS; r++)
		ddp_nccl(s, r, FR_NCCL_COMM_INIT_RANK, base - ms, 100 * us, 0, 0);
	uint64_t t = base, last = 0;
	for (int r = 0; r < DDP_RANKS; r++)
		if (compute_us[r] > last)
			last = compute_us[r];
	for (int k = 0; k <= DDP_STEPS; k++) {
		if (k == DDP_STEPS) {
			if (gpu) /* the launch that ends the last interval */
				for (int r = 0; r < DDP_RANKS; r++)
					ddp_cuda(s, r, FR_CUDA_LAUNCH_KERNEL, t, 5 * us, 0x9900 + (uint64_t)r,
						 100 + 4 * (uint32_t)r);
			break;
		}
		uint64_t all_ready = t + last * us, done = all_ready + exchange;
		for (int r = 0; r < DDP_RANKS; r++) {
			uint32_t id = 100 + 4 * (uint32_t)r;
			uint64_t entry = t + compute_us[r] * us;
			if (gpu) {
				ddp_cuda(s, r, FR_CUDA_LAUNCH_KERNEL, t, 5 * us, 0x9900 + (uint64_t)r, id);
				ddp_cuda(s, r, FR_CUDA_STREAM_SYNC, t + 10 * us, entry - t - 10 * us,
					 0x9900 + (uint64_t)r, id + 2);
				ddp_sample(s, r, done + 50 * us, id + 2);
			} else {
				uint64_t slow_us = compute_us[r] > 11000 ? compute_us[r] - 10000 : 0;
				for (uint64_t x = 500; x < compute_us[r]; x += 1000)
					ddp_sample(s, r, t + x * us, x < slow_us ? id + 3 : id);
			}
			if (mode == DDP_STRAGGLER_ASYNC) {
				ddp_nccl(s, r, FR_NCCL_ALL_REDUCE, entry, 20 * us, (uint32_t)k + 1, id + 1);
				ddp_cuda(s, r, FR_CUDA_STREAM_SYNC, entry + 30 * us, done - entry - 30 * us,
					 0x8800 + (uint64_t)r, id + 1);
			} else {
				uint64_t late = mode == DDP_HEALTHY && r == 1 && k == DDP_STEPS - 1 ? 500 * us : 0;
				ddp_nccl(s, r, FR_NCCL_ALL_REDUCE, entry, done + late - entry, (uint32_t)k + 1,
					 id + 1);
			}
		}
		t = done + (gpu ? 100 * us : 0);
	}
	if (t > s->ts_ns)
		s->ts_ns = t;
}

#endif
