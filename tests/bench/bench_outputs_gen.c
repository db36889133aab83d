/* Writes a large synthetic trace for tests/bench/bench_outputs.py with the
 * writer API: N events (default 10 M) of CPU samples over a few thousand
 * distinct stacks, system calls, and CUDA calls (allocations, frees,
 * copies, launches), 4 processes x 4 threads.  Not a test; no assertions.
 *
 * usage: bench_outputs_gen OUT.frec [EVENTS] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_analyzer_synth.h"

#define N_FUNCS 200
#define N_STACKS 4000
#define DEPTH 12

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_outputs_gen OUT.frec [EVENTS]\n");
		return 2;
	}
	uint64_t events = argc > 2 ? strtoull(argv[2], NULL, 10) : 10000000ull;
	struct synth s;
	if (synth_open(&s, argv[1]))
		return 1;
	uint64_t rng = 88172645463325252ull;
#define RND() (rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17, rng)
	for (uint32_t p = 0; p < 4; p++) {
		char comm[16], cmd[64];
		snprintf(comm, sizeof(comm), "worker%u", p);
		snprintf(cmd, sizeof(cmd), "python train.py --rank %u", p);
		synth_process(&s, 1000 + p, 1, comm, cmd);
		synth_mapping(&s, 1000 + p, 0x400000, 0x400000 + 0x1000 * (N_FUNCS + 1), 0, 1, "/usr/bin/python3");
		for (uint32_t t = 0; t < 4; t++)
			synth_thread(&s, 1000 + p, 1000 + p + t * 10000, comm);
	}
	/* stacks: shared prefixes, random tails */
	for (uint32_t id = 1; id <= N_STACKS; id++) {
		uint64_t ips[DEPTH];
		uint32_t depth = 4 + (uint32_t)(RND() % (DEPTH - 4));
		for (uint32_t d = 0; d < depth; d++) {
			uint32_t fn = d < 3 ? d : (uint32_t)(RND() % N_FUNCS);
			ips[depth - 1 - d] = 0x400000 + 0x1000ull * fn + 0x10; /* leaf first */
		}
		synth_stack(&s, id, 1000 + (id % 4), ips, 0, (uint16_t)depth);
	}
	uint64_t ptrs[4][64] = { { 0 } };
	for (uint64_t i = 0; i < events; i++) {
		s.ts_ns += 1000;
		uint32_t p = (uint32_t)(i % 4), pid = 1000 + p, tid = pid + (uint32_t)((i / 4) % 4) * 10000;
		uint64_t r = RND();
		uint32_t stack = 1 + (uint32_t)(r % N_STACKS);
		stack = stack - (stack % 4) + (p == 0 ? 4 : p); /* the stack's owner */
		if (stack > N_STACKS)
			stack -= 4;
		unsigned kind = (unsigned)(r >> 40) % 10;
		if (kind < 6) {
			struct fr_ev_cpu_sample ev = { .c = { .ts_ns = s.ts_ns, .pid = pid, .tid = tid },
						       .cpu = (uint32_t)(i % 8), .stack_id = stack };
			synth_raw(s.ev, &ev, sizeof(ev), FR_EV_CPU_SAMPLE, s.ts_ns);
		} else if (kind < 8) {
			struct fr_ev_syscall ev = { .c = { .ts_ns = s.ts_ns, .pid = pid, .tid = tid },
						    .nr = (uint32_t)(r >> 20) % 20, .stack_id = stack,
						    .duration_ns = 200 + (r >> 50) % 700, .ret = 0 };
			synth_raw(s.ev, &ev, sizeof(ev), FR_EV_SYSCALL, s.ts_ns);
		} else {
			unsigned slot = (unsigned)(r >> 24) % 64;
			struct fr_ev_cuda ev = { .c = { .ts_ns = s.ts_ns, .pid = pid, .tid = tid },
						 .stack_id = stack, .duration_ns = 300 + (r >> 52) % 600 };
			if (!ptrs[p][slot]) {
				ev.func = FR_CUDA_MALLOC;
				ev.ptr = ptrs[p][slot] = 0x7f0000000000ull + ((uint64_t)p << 32) + ((uint64_t)slot << 20) + (i & 0xff0);
				ev.bytes = 1 << (10 + (r >> 56) % 12);
			} else if ((r >> 33) & 1) {
				ev.func = FR_CUDA_FREE;
				ev.ptr = ptrs[p][slot];
				ptrs[p][slot] = 0;
			} else {
				ev.func = (r >> 34) & 1 ? FR_CUDA_MEMCPY : FR_CUDA_LAUNCH_KERNEL;
				ev.bytes = 4096;
				ev.kind = FR_COPY_H2D;
			}
			synth_raw(s.ev, &ev, sizeof(ev), FR_EV_CUDA, s.ts_ns);
		}
	}
	struct synth_sym syms[N_FUNCS];
	static char names[N_FUNCS][32];
	for (uint32_t f = 0; f < N_FUNCS; f++) {
		snprintf(names[f], sizeof(names[f]), f == 0 ? "main" : "function_%u", f);
		syms[f] = (struct synth_sym){ 0x1000ull * f, 0x1000, names[f] };
	}
	synth_dso(&s, 1, 0, "/usr/bin/python3", syms, N_FUNCS);
	return synth_close(&s, events, 0) ? 1 : 0;
}
