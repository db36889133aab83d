/* A process that makes its GPU wait, for the outputs' findings tests
 * (report, sqlite, timeline).  Not a test itself.
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

#endif
