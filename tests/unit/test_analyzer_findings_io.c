/* The findings model's kinds read from system calls and memory, on a
 * synthetic trace built for exact answers: dataloader (a read that a
 * loader process's write ends, so the worker is named), sync_checkpoint
 * (open, writes, fsync, close, rename and CPU in serialize_state, the last
 * save after the last synchronize: idle to the process's exit), host_sync
 * of small synchronous copies to the host (.item()), memory_leak and oom.
 *
 * pid 600 ("iojob"), one thread; pid 601 ("loader") writes to it.  IO_STEPS
 * steps of 10 ms from base (t = base + k x 10 ms, all times below in ms
 * after t):
 *   0.0   cudaLaunchKernel (10 us)
 *   0.1   tensor_item: cudaMemcpy 4 bytes device to host, 0.9 ms: returns
 *         at 1.0 (the device is empty: an idle interval opens)
 *   1.2   CPU sample in tensor_item
 *   1.5   cudaLaunchKernel: the interval [1.0, 1.5) is host_sync after a
 *         read-back, 0.5 ms
 *   1.6   grow_cache: cudaMalloc 1 MiB (10 us), never freed
 *   2.0   cudaDeviceSynchronize, 1 ms: returns at 3.0, an interval opens
 *   3.5   next_batch: read(5) for 2 ms, 64 KiB; pid 601 write(7) enters at
 *         5.4 (50 us): it ended the wait
 *   5.7   CPU sample: serialize_state in a save step, else train_step
 *   in steps 5 and 10 (k = 4, 9) save_checkpoint:
 *   6.0   openat -> fd 9, 0.1 ms, named /ckpt/step_N.pt.tmp (fsync'd and
 *         >= 1 MiB: a checkpoint, whatever its name)
 *   6.2   write(9) 2 MiB, 0.5 ms;  6.8  write(9) 2 MiB, 0.5 ms
 *   7.4   fsync(9), 1 ms;  8.5  close(9), 0.1 ms;  8.7  rename, 0.2 ms
 *   9.5   CPU sample in train_step
 *  10.0   the next step's launch; after the last step the process exits
 *         (FR_EV_PROC_EXIT at base + 100 ms), closing the last interval
 * and in the last step a cudaMalloc of 8 GiB at 1.7 fails (out of memory).
 *
 * So each interval [3.0, 10.0) is 7 ms: dataloader 2 ms (the read); in a
 * save step sync_checkpoint the open, writes, fsync, close and rename
 * (2.4 ms), the 0.5 ms between them that no call covers (no sample there
 * says otherwise), and half the 2.1 ms left (one of its two samples
 * outside the save's span is in serialize_state): 3.95 ms, host_sync the
 * other 1.05 ms; in another step host_sync the 5 ms left.  Totals:
 * dataloader 20 ms, sync_checkpoint 7.9 ms (2 saves), host_sync
 * 10 x 0.5 + 8 x 5 + 2 x 1.05 = 47.1 ms in 20 gaps, 10 of them (5 ms)
 * after a 4-byte copy; idle 10 x 7.5 = 75 ms; wall
 * 100 ms (the first launch to the exit).  memory_leak: 10 MiB in 10
 * allocations of grow_cache; oom: the failed 8 GiB with 10 MiB in use.
 * Steps: the synchronize, once a step (the copies are inside): 10. */
#include "check.h"
#include "test_analyzer_common.h"

#include "commands.h"

#define IO_PID 600
#define LOADER_PID 601
#define IO_STEPS 10
#define MS 1000000ull

static char *findings_of(const char *trace, int json)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	char *argv[] = { "findings", (char *)trace, json ? "--json" : NULL, NULL };
	CHECK_EQ_U64(cmd_findings(json ? 3 : 2, argv, mem, stderr), 0);
	fclose(mem);
	return buf;
}

#define HAS(text, needle) CHECK((text) && strstr((text), (needle)) != NULL)

static void cuda(struct synth *s, uint16_t func, uint64_t ts, uint64_t dur, uint32_t stack,
		 uint64_t ptr, uint64_t bytes, uint32_t kind, int64_t result)
{
	synth_cuda(s, (struct fr_ev_cuda){ .c = { .ts_ns = ts, .pid = IO_PID, .tid = IO_PID },
					   .func = func, .duration_ns = dur, .stack_id = stack,
					   .ptr = ptr, .bytes = bytes, .kind = kind,
					   .result = result, .device = 0 });
}

static void sys(struct synth *s, uint32_t pid, uint32_t nr, uint64_t ts, uint64_t dur,
		int64_t fd, int64_t ret, uint32_t stack)
{
	struct fr_ev_syscall ev = { .c = { .ts_ns = ts, .pid = pid, .tid = pid }, .nr = nr,
				    .stack_id = stack, .ret = ret, .duration_ns = dur, .fd = fd,
				    .sc_flags = fd >= 0 ? FR_SYSCALL_HAS_FD : 0 };
	synth_raw(s->ev, &ev, sizeof(ev), FR_EV_SYSCALL, ts);
}

static void sample(struct synth *s, uint64_t ts, uint32_t stack)
{
	struct fr_ev_cpu_sample ev = { .c = { .ts_ns = ts, .pid = IO_PID, .tid = IO_PID },
				       .stack_id = stack };
	synth_raw(s->ev, &ev, sizeof(ev), FR_EV_CPU_SAMPLE, ts);
}

static void io_trace(struct synth *s, uint64_t base)
{
	synth_process(s, IO_PID, 1, "iojob", "python iojob.py");
	synth_thread(s, IO_PID, IO_PID, "iojob");
	synth_process(s, LOADER_PID, IO_PID, "loader", "python iojob.py");
	synth_thread(s, LOADER_PID, LOADER_PID, "loader");
	synth_mapping(s, IO_PID, 0x800000, 0x900000, 0, 30, "/usr/bin/iojob");
	synth_mapping(s, LOADER_PID, 0x800000, 0x900000, 0, 30, "/usr/bin/iojob");
	static const struct synth_sym syms[] = {
		{ 0x1000, 0x100, "main" }, { 0x2000, 0x100, "train_step" },
		{ 0x3000, 0x100, "next_batch" }, { 0x4000, 0x100, "save_checkpoint" },
		{ 0x5000, 0x100, "serialize_state" }, { 0x6000, 0x100, "tensor_item" },
		{ 0x7000, 0x100, "grow_cache" }, { 0x8000, 0x100, "loader_worker" },
	};
	synth_dso(s, 30, 0, "/usr/bin/iojob", syms, 8);
	const uint64_t m = 0x801010, step = 0x802010;
	const uint64_t st80[] = { step, m }, st81[] = { 0x803010, step, m },
		       st82[] = { 0x804010, step, m }, st83[] = { 0x805010, 0x804010, step, m },
		       st84[] = { 0x806010, step, m }, st85[] = { 0x807010, step, m },
		       st86[] = { 0x808010, m };
	synth_stack(s, 80, IO_PID, st80, 0, 2);
	synth_stack(s, 81, IO_PID, st81, 0, 3);
	synth_stack(s, 82, IO_PID, st82, 0, 3);
	synth_stack(s, 83, IO_PID, st83, 0, 4);
	synth_stack(s, 84, IO_PID, st84, 0, 3);
	synth_stack(s, 85, IO_PID, st85, 0, 3);
	synth_stack(s, 86, LOADER_PID, st86, 0, 2);
	const uint64_t us = 1000;
	for (int k = 0; k < IO_STEPS; k++) {
		uint64_t t = base + (uint64_t)k * 10 * MS;
		int save = k % 5 == 4;
		cuda(s, FR_CUDA_LAUNCH_KERNEL, t, 10 * us, 80, 0, 0, 0, 0);
		cuda(s, FR_CUDA_MEMCPY, t + 100 * us, 900 * us, 84, 0x5000, 4, FR_COPY_D2H, 0);
		sample(s, t + 1200 * us, 84);
		cuda(s, FR_CUDA_LAUNCH_KERNEL, t + 1500 * us, 10 * us, 80, 0, 0, 0, 0);
		cuda(s, FR_CUDA_MALLOC, t + 1600 * us, 10 * us, 85, 0x700000000ull + (uint64_t)k * MS,
		     1 << 20, 0, 0);
		if (k == IO_STEPS - 1)
			cuda(s, FR_CUDA_MALLOC, t + 1700 * us, 10 * us, 85, 0, 8ull << 30, 0, 2);
		cuda(s, FR_CUDA_DEVICE_SYNC, t + 2 * MS, MS, 80, 0, 0, 0, 0);
		sys(s, IO_PID, 0, t + 3500 * us, 2 * MS, 5, 65536, 81);
		sys(s, LOADER_PID, 1, t + 5400 * us, 50 * us, 7, 65536, 86);
		sample(s, t + 5700 * us, save ? 83 : 80);
		if (save) {
			struct fr_ev_fd_path fp = { .c = { .ts_ns = t + 6 * MS, .pid = IO_PID,
							   .tid = IO_PID },
						    .fd = 9, .open_flags = 01 | 0100 | 01000 };
			int n = snprintf(fp.path, sizeof(fp.path), "/ckpt/step_%d.pt.tmp", k + 1);
			fp.path_len = (uint16_t)n;
			synth_raw(s->ev, &fp, sizeof(fp), FR_EV_FD_PATH, fp.c.ts_ns);
			sys(s, IO_PID, 257, t + 6 * MS, 100 * us, -1, 9, 82);
			sys(s, IO_PID, 1, t + 6200 * us, 500 * us, 9, 2 << 20, 82);
			sys(s, IO_PID, 1, t + 6800 * us, 500 * us, 9, 2 << 20, 82);
			sys(s, IO_PID, 74, t + 7400 * us, MS, 9, 0, 82);
			sys(s, IO_PID, 3, t + 8500 * us, 100 * us, 9, 0, 82);
			sys(s, IO_PID, 82, t + 8700 * us, 200 * us, -1, 0, 82);
		}
		sample(s, t + 9500 * us, 80);
	}
	struct fr_ev_proc ex = { .c = { .ts_ns = base + IO_STEPS * 10 * MS, .pid = IO_PID,
					.tid = IO_PID }, .ppid = 1, .comm = "iojob" };
	synth_raw(s->ev, &ex, sizeof(ex), FR_EV_PROC_EXIT, ex.c.ts_ns);
	if (ex.c.ts_ns > s->ts_ns)
		s->ts_ns = ex.c.ts_ns;
}

int main(void)
{
	char path[512];
	synth_path("analyzer_findings_io.frec", path, sizeof(path));
	struct synth s;
	CHECK_EQ_U64(synth_open(&s, path), 0);
	io_trace(&s, 2000000000ull);
	CHECK_EQ_U64(synth_close(&s, 0, 0), 0);
	char *json = findings_of(path, 1), *text = findings_of(path, 0);
	HAS(json, "{\"steps\":10,\"steps_from\":\"sync_period\",\"step_ms\":10.000,"
		  "\"steps_regular\":1.000,\"step_site\":\"cudaDeviceSynchronize\",\"wall_ms\":100.000,");
	HAS(json, "\"gpu_idle_ms\":{\"600\":75.000},\"unexplained_ms\":{\"600\":0.000}");
	/* host_sync first, then dataloader, then sync_checkpoint, then the
	 * kinds without an idle cost */
	HAS(json, "\"findings\":[{\"kind\":\"host_sync\",\"cost_ms\":47.100,"
		  "\"cost_ms_per_step\":4.710,\"share\":0.4710,\"pids\":[600],\"ranks\":[],"
		  "\"where\":[\"main\",\"train_step\",\"cudaDeviceSynchronize\"],"
		  "\"evidence\":\"20 gaps between a synchronize\\u0027s return and the next launch "
		  "with only the host\\u0027s own work on the thread (2.0 per step, 2.355 ms on average, "
		  "longest 5.000 ms); 10 of them (1.0 per step, 5.0 ms) after a synchronous copy to "
		  "the host of 4 bytes on average: a value read back each time, as .item() does\"");
	HAS(json, "{\"kind\":\"dataloader\",\"cost_ms\":20.000,\"cost_ms_per_step\":2.000,"
		  "\"share\":0.2000,\"pids\":[600],\"ranks\":[],"
		  "\"where\":[\"main\",\"train_step\",\"next_batch\"],"
		  "\"evidence\":\"the training thread waited for its loader worker process (pid 601, "
		  "thread 601): 10 waits of at least 0.2 ms, 2.0 ms per step, 10 of them ended right "
		  "after that process wrote to it; while the GPU had no work the training thread "
		  "read input 10 times (640.0 KiB, 20.0 ms)");
	HAS(json, "\"fix\":\"the job already loads off the training thread, and its loader "
		  "process 601 cannot keep up:");
	HAS(json, "{\"kind\":\"sync_checkpoint\",\"cost_ms\":7.900,\"cost_ms_per_step\":0.790,"
		  "\"share\":0.0790,\"pids\":[600],\"ranks\":[],"
		  "\"where\":[\"main\",\"train_step\",\"save_checkpoint\"],"
		  "\"evidence\":\"2 saves on the training thread while the GPU had no work: 4 writes "
		  "(8.0 MiB, 2.0 ms), 2 fsync/fdatasync (2.0 ms), open, close and rename of those "
		  "files 0.8 ms, 1.0 ms between those calls, 2.1 ms on CPU in *save*/*checkpoint* code; "
		  "written to "
		  "/ckpt/step_5.pt.tmp, /ckpt/step_10.pt.tmp\"");
	HAS(json, "{\"kind\":\"oom\",\"cost_ms\":null,\"cost_ms_per_step\":null,\"share\":null,"
		  "\"pids\":[600],\"ranks\":[],"
		  "\"where\":[\"main\",\"train_step\",\"grow_cache\",\"cudaMalloc\"],"
		  "\"evidence\":\"1 failed allocation; the first asked for 8.0 GiB "
		  "(cudaErrorMemoryAllocation) with 10.0 MiB in use on device 0");
	HAS(json, "{\"kind\":\"memory_leak\",\"cost_ms\":null,\"cost_ms_per_step\":null,"
		  "\"share\":null,\"pids\":[600],\"ranks\":[],"
		  "\"where\":[\"main\",\"train_step\",\"grow_cache\"],"
		  "\"evidence\":\"pid 600 still holds 10.0 MiB at the end in 10 allocations made by "
		  "one stack (10.0 MiB in all never freed) over 10 steps\"");
	HAS(text, "findings: 1 process driving a GPU, 10 steps (from the period of the "
		  "synchronizing calls: cudaDeviceSynchronize once a step, median 10.0 ms, 100% of "
		  "steps within 25% of it), wall 100.0 ms");
	HAS(text, "1. host_sync: 47.1 ms of GPU idle");
	HAS(text, "2. dataloader: 20.0 ms of GPU idle");
	HAS(text, "3. sync_checkpoint: 7.9 ms of GPU idle");
	free(json);
	free(text);
	return check_finish();
}
