/* Writes the traces tests/browser/report.test.js turns into reports:
 * OUTDIR/report.frec (the standard synthetic trace of the unit tests plus
 * CUDA copies and drops), OUTDIR/hostile.frec (a process whose function,
 * command line and library path are markup), OUTDIR/models.frec (every
 * model section), OUTDIR/findings.frec (the findings trace's pid 500 and
 * the launch-bound pid 510 of test_analyzer_findings_trace.h: host_sync
 * 26 + 10.84 ms, launch_bound 14.25 ms, pageable_copy 10 ms) and
 * OUTDIR/healthy.frec (pid 510 with the GPU behind: no finding above the
 * threshold, host_sync under it).  Not a test itself. */
#include <stdio.h>

#include "test_analyzer_common.h"
#include "test_analyzer_models_trace.h"
#include "test_analyzer_findings_trace.h"

#define HOSTILE "<img src=x onerror=alert(1)>"

static void cuda_copies(struct synth *s)
{
	for (int i = 0; i < 5; i++) {
		s->ts_ns += 1000;
		struct fr_ev_cuda ev = { .c = { .ts_ns = s->ts_ns, .pid = 100, .tid = 100 },
					 .func = i < 3 ? FR_CUDA_MEMCPY : FR_CUDA_LAUNCH_KERNEL,
					 .duration_ns = 1000 * (uint64_t)(i + 1), .bytes = 1 << 20,
					 .kind = FR_COPY_H2D };
		synth_raw(s->ev, &ev, sizeof(ev), FR_EV_CUDA, s->ts_ns);
	}
}

static void hostile(struct synth *s)
{
	synth_process(s, 300, 1, "evil</script>", "evil " HOSTILE);
	synth_mapping(s, 300, 0x600000, 0x700000, 0, 9, "/opt/<b>evil</b>/" HOSTILE);
	uint64_t ips[] = { 0x600010, 0x601010 };
	synth_stack(s, 50, 300, ips, 0, 2);
	synth_samples(s, 300, 300, 50, 600);
	struct synth_sym syms[2] = { { 0x0, 0x100, HOSTILE }, { 0x1000, 0x100, "</script><script>alert(2)</script>" } };
	synth_dso(s, 9, 0, "/opt/<b>evil</b>/" HOSTILE, syms, 2);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: make_report_trace OUTDIR\n");
		return 2;
	}
	char path[1024];
	struct synth s;
	snprintf(path, sizeof(path), "%s/report.frec", argv[1]);
	if (synth_open(&s, path))
		return 1;
	std_trace_body(&s);
	cuda_copies(&s);
	if (synth_close(&s, 522, 3))
		return 1;
	snprintf(path, sizeof(path), "%s/hostile.frec", argv[1]);
	if (synth_open(&s, path))
		return 1;
	std_trace_body(&s);
	hostile(&s);
	if (synth_close(&s, 0, 0))
		return 1;
	/* every model section: GPU memory, CUDA, stragglers, RDMA */
	snprintf(path, sizeof(path), "%s/models.frec", argv[1]);
	if (synth_open(&s, path))
		return 1;
	std_trace_body(&s);
	models_trace_body(&s);
	if (synth_close(&s, 0, 0))
		return 1;
	/* what to fix first: three findings, in cost order */
	snprintf(path, sizeof(path), "%s/findings.frec", argv[1]);
	if (synth_open(&s, path))
		return 1;
	findings_trace_body(&s, 2000000000ull);
	findings_launch_body(&s, 2000000000ull, LAUNCH_BOUND, 1);
	if (synth_close(&s, 0, 0))
		return 1;
	/* and none */
	snprintf(path, sizeof(path), "%s/healthy.frec", argv[1]);
	if (synth_open(&s, path))
		return 1;
	findings_launch_body(&s, 2000000000ull, LAUNCH_GPU_BOUND, 1);
	return synth_close(&s, 0, 0) ? 1 : 0;
}
