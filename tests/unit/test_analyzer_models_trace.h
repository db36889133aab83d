/* The model-rich part of the report traces, shared by the report unit
 * test and the browser test's trace writer.  Not a test itself. */
#ifndef FLIGHTREC_TEST_ANALYZER_MODELS_TRACE_H
#define FLIGHTREC_TEST_ANALYZER_MODELS_TRACE_H

#include "test_analyzer_common.h"

/* GPU memory, a 4-rank NCCL job (rank 2 computes 30 ms longer per step)
 * and an RDMA connection, in the process of the standard trace (pid 100,
 * stacks 1 = main;work_a, 2 = main;work_b) and four rank processes. */
static inline void models_trace_body(struct synth *s)
{
	/* memory: A 1000 (stack 1), B 500 (stack 2), free A, C 3000 (stack 1):
	 * peak 3500 = 3000 on main;work_a + 500 on main;work_b; then a failure */
	static const struct { uint16_t func; uint32_t stack; uint64_t ptr, bytes; int64_t result; } m[] = {
		{ FR_CUDA_MALLOC, 1, 0xa000, 1000, 0 }, { FR_CUDA_MALLOC, 2, 0xb000, 500, 0 },
		{ FR_CUDA_FREE, 1, 0xa000, 0, 0 }, { FR_CUDA_MALLOC, 1, 0xc000, 3000, 0 },
		{ FR_CUDA_MALLOC, 1, 0, 1ull << 40, 2 },
	};
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		s->ts_ns += 1000000;
		struct fr_ev_cuda ev = { .c = { .ts_ns = s->ts_ns, .pid = 100, .tid = 100 }, .func = m[i].func,
					 .stack_id = m[i].stack, .duration_ns = 5000, .result = m[i].result,
					 .ptr = m[i].ptr, .bytes = m[i].bytes, .device = 0 };
		synth_raw(s->ev, &ev, sizeof(ev), FR_EV_CUDA, s->ts_ns);
	}
	/* an async copy followed at once by a synchronize */
	s->ts_ns += 1000000;
	struct fr_ev_cuda cp = { .c = { .ts_ns = s->ts_ns, .pid = 100, .tid = 100 }, .func = FR_CUDA_MEMCPY_ASYNC,
				 .stack_id = 1, .duration_ns = 4000, .ptr = 0xc000, .src = 0x7f0000001000,
				 .bytes = 4096, .kind = FR_COPY_H2D };
	synth_raw(s->ev, &cp, sizeof(cp), FR_EV_CUDA, s->ts_ns);
	struct fr_ev_cuda sy = { .c = { .ts_ns = s->ts_ns + 6000, .pid = 100, .tid = 100 },
				 .func = FR_CUDA_STREAM_SYNC, .stack_id = 1, .duration_ns = 90000 };
	synth_raw(s->ev, &sy, sizeof(sy), FR_EV_CUDA, s->ts_ns + 6000);

	/* the job: 4 ranks, 20 steps, one all-reduce per step */
	enum { RANKS = 4, STEPS = 20 };
	uint64_t uid = 0x1234abcd5678ef01ull, t = s->ts_ns + 10000000;
	for (int r = 0; r < RANKS; r++) {
		uint32_t pid = 2000 + (uint32_t)r;
		char env[128];
		int n = snprintf(env, sizeof(env), "RANK=%d%cLOCAL_RANK=%d%cWORLD_SIZE=%d", r, 0, r, 0, RANKS);
		uint8_t buf[256] = { 0 };
		struct fr_rec_proc_env pe = { .ts_ns = t, .pid = pid, .len = (uint32_t)n + 1 };
		memcpy(buf, &pe, sizeof(pe));
		memcpy(buf + sizeof(pe), env, (size_t)n + 1);
		synth_process(s, pid, 1, "train", "train --ranks 4");
		synth_raw(s->meta, buf, FR_ALIGN8((uint32_t)sizeof(pe) + (uint32_t)n + 1), FR_REC_PROC_ENV, t);
		struct fr_ev_nccl init = { .c = { .ts_ns = t, .pid = pid, .tid = pid },
					   .func = FR_NCCL_COMM_INIT_RANK, .duration_ns = 1000000,
					   .comm = 0x5500 + (uint64_t)r, .rank = r, .nranks = RANKS,
					   .uid_hash = uid, .peer = -1 };
		synth_raw(s->ev, &init, sizeof(init), FR_EV_NCCL, t);
	}
	t += 5000000;
	for (int step = 0; step < STEPS; step++) {
		uint64_t release = 0, entry[RANKS];
		for (int r = 0; r < RANKS; r++) {
			uint32_t pid = 2000 + (uint32_t)r;
			struct fr_ev_step ev = { .c = { .ts_ns = t, .pid = pid, .tid = pid } };
			synth_raw(s->ev, &ev, sizeof(ev), FR_EV_STEP, t);
			entry[r] = t + 50000000ull + (r == 2 ? 30000000ull : 0) + 100000ull * (uint64_t)r;
			if (entry[r] > release)
				release = entry[r];
		}
		release += 300000;
		for (int r = 0; r < RANKS; r++) {
			uint32_t pid = 2000 + (uint32_t)r;
			struct fr_ev_nccl ev = { .c = { .ts_ns = entry[r], .pid = pid, .tid = pid },
						 .func = FR_NCCL_ALL_REDUCE, .duration_ns = release + 10000 * (uint64_t)r - entry[r],
						 .comm = 0x5500 + (uint64_t)r, .count = 1 << 20, .datatype = 7,
						 .peer = -1, .rank = -1, .nranks = -1 };
			synth_raw(s->ev, &ev, sizeof(ev), FR_EV_NCCL, entry[r]);
		}
		t = release + 100000;
	}
	/* RDMA: two RDMA_WRITEs on QP 7 of pid 100, 10 and 30 us */
	for (int i = 0; i < 2; i++) {
		t += 100000;
		struct fr_ev_rdma_post p = { .c = { .ts_ns = t, .pid = 100, .tid = 100 }, .wr_id = (uint64_t)i + 1,
					     .bytes = 4096, .qp_num = 7, .opcode = 0, .num_sge = 1,
					     .flags = FR_RDMA_POST_SIGNALED };
		synth_raw(s->ev, &p, sizeof(p), FR_EV_RDMA_POST, t);
		uint64_t lat = i ? 30000 : 10000;
		struct fr_ev_rdma_cqe c = { .c = { .ts_ns = t + lat, .pid = 100, .tid = 100 }, .wr_id = (uint64_t)i + 1,
					    .qp_num = 7, .byte_len = 4096 };
		synth_raw(s->ev, &c, sizeof(c), FR_EV_RDMA_CQE, t + lat);
	}
	s->ts_ns = t + 1000000;
}

#endif
