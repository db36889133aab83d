/* How findings counts steps from the synchronizing calls when the step is
 * not as tidy as the loops the rule was made on: a step of per-op .item()
 * reads (synchronous 4-byte copies to the host) whose number varies from
 * step to step (36, 38 or 40: a data-dependent count), a few of which in
 * three steps unwound to another stack (5 reads each in steps 3, 4 and 8
 * carry tensor_item alone, as a copy whose unwind stopped early does),
 * ended by one cudaDeviceSynchronize a step.  12 steps, counted at the
 * synchronize: neither the uneven count nor the odd stacks make each
 * .item() a step of its own.  Both with the uneven counts alone and with
 * the odd stacks besides (each broke the count before: every .item() was
 * read as a step). */
#include "check.h"
#include "test_analyzer_common.h"

#include "commands.h"

#define PID 520
#define STEPS 12

static void cuda(struct synth *s, uint16_t func, uint64_t ts, uint64_t dur, uint32_t stack,
		 uint64_t bytes, uint32_t kind)
{
	int launch = func == FR_CUDA_LAUNCH_KERNEL;
	struct fr_ev_cuda ev = { .c = { .ts_ns = ts, .pid = PID, .tid = PID },
				 .func = func, .duration_ns = dur, .stack_id = stack,
				 .flags = launch && !stack ? FR_CUDAF_UNSAMPLED : 0,
				 .ptr = 0x7ffd0000, .src = 0x600000000000, .bytes = bytes,
				 .kind = kind, .stream = 0, .device = -1 };
	synth_raw(s->ev, &ev, sizeof(ev), FR_EV_CUDA, ts);
}

static char *steps_trace(const char *name, int odd_stacks)
{
	char path[512];
	synth_path(name, path, sizeof(path));
	struct synth s;
	CHECK_EQ_U64(synth_open(&s, path), 0);
	synth_process(&s, PID, 1, "itemloop", "python itemloop.py");
	synth_thread(&s, PID, PID, "itemloop");
	synth_mapping(&s, PID, 0xa00000, 0xb00000, 0, 31, "/usr/bin/itemloop");
	uint64_t item[] = { 0xa03010, 0xa02010, 0xa01010 };
	uint64_t item_alone[] = { 0xa03010 };
	uint64_t finish[] = { 0xa04010, 0xa02010, 0xa01010 };
	synth_stack(&s, 90, PID, item, 0, 3);
	synth_stack(&s, 91, PID, item_alone, 0, 1);
	synth_stack(&s, 92, PID, finish, 0, 3);
	static const struct synth_sym syms[] = {
		{ 0x1000, 0x100, "main" }, { 0x2000, 0x100, "train_step" },
		{ 0x3000, 0x100, "tensor_item" }, { 0x4000, 0x100, "finish_step" },
	};
	synth_dso(&s, 31, 0, "/usr/bin/itemloop", syms, 4);
	const uint64_t us = 1000, base = 2000000000ull, step_ns = 4000 * us;
	for (int k = 0; k <= STEPS; k++) {
		uint64_t t = base + (uint64_t)k * step_ns;
		cuda(&s, FR_CUDA_LAUNCH_KERNEL, t, 5 * us, 0, 0, 0);
		if (k == STEPS)
			break;
		int reads = 36 + 2 * (k % 3);
		for (int i = 0; i < reads; i++) {
			uint64_t l = t + 10 * us + (uint64_t)i * 80 * us;
			int odd = odd_stacks && (k == 3 || k == 4 || k == 8) && i < 5;
			cuda(&s, FR_CUDA_MEMCPY, l + 10 * us, 20 * us, odd ? 91 : 90, 4, 2);
			cuda(&s, FR_CUDA_LAUNCH_KERNEL, l + 40 * us, 5 * us, 0, 0, 0);
		}
		cuda(&s, FR_CUDA_DEVICE_SYNC, t + 3500 * us, 50 * us, 92, 0, 0);
	}
	s.ts_ns = base + (uint64_t)STEPS * step_ns + 10 * us;
	CHECK_EQ_U64(synth_close(&s, 0, 0), 0);

	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	char *argv[] = { "findings", path, "--json", NULL };
	CHECK_EQ_U64(cmd_findings(3, argv, mem, stderr), 0);
	fclose(mem);
	return buf;
}

#define HAS(text, needle) CHECK((text) && strstr((text), (needle)) != NULL)

int main(void)
{
	for (int odd = 0; odd < 2; odd++) {
		char *json = steps_trace(odd ? "analyzer_steps_odd.frec" : "analyzer_steps.frec", odd);
		HAS(json, "{\"steps\":12,\"steps_from\":\"sync_period\",\"step_ms\":4.000,");
		HAS(json, "\"step_site\":\"cudaDeviceSynchronize\"");
		if (json && !strstr(json, "\"steps\":12,"))
			fprintf(stderr, "%.300s\n", json);
		free(json);
	}
	return check_finish();
}
