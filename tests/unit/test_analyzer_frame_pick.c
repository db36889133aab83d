/* Frames an agent can act on (frame_pick.h): a PyTorch-shaped stack (the
 * frames of a real recording of tests/bench/torch_loop.py) keeps its
 * Python frames and sgemm_, interpreter internals, libtorch frames and
 * unnamed offsets counted as [+N], the interpreter's start at the root
 * dropped; a native job (a synthetic trace whose binary lies outside the
 * system's places, a C++ method demangled) keeps its own functions and the
 * innermost named native frame, not the library frames between; a job
 * of system binaries only keeps its named frames as before; a kernel part
 * shows its innermost frame; and summary's CPU section shows the picked
 * frames of the native job. */
#include "check.h"
#include "test_analyzer_common.h"
#include "test_analyzer_run.h"

#include "commands.h"
#include "frame_pick.h"
#include "trace_set.h"

static const char *const torch[] = {
	"_start", "__libc_start_main", "__libc_start_call_main", "Py_BytesMain", "Py_RunMain",
	"_PyRun_AnyFileObject", "_PyRun_SimpleFileObject", "python3.11+0x25176f",
	"python3.11+0x2456ee", "python3.11+0x247d96", "PyEval_EvalCode",
	"<module> (torch_loop.py:27)", "main (torch_loop.py:20)", "_PyObject_MakeTpCall",
	"python3.11+0x1e4901", "_PyObject_Call_Prepend", "_PyObject_FastCallDictTstate",
	"Module._call_impl (module.py:1194)", "python3.11+0x183b2d", "python3.11+0x184b23",
	"Linear.forward (linear.py:114)", "_PyObject_MakeTpCall", "python3.11+0x147b95",
	"libtorch_python.so.1.13.0+0x4ff6cf", "at::_ops::linear::call(at::Tensor const&)",
	"libtorch_cpu.so.1.13.0+0x2112a45", "at::native::linear(at::Tensor const&)",
	"libtorch_cpu.so.1.13.0+0x108edef", "sgemm_",
};
#define N_TORCH (sizeof(torch) / sizeof(torch[0]))

int main(void)
{
	char buf[2048];
	/* classes by name alone */
	CHECK_EQ_U64(frame_classify(NULL, "main (torch_loop.py:20)"), FC_PYTHON);
	CHECK_EQ_U64(frame_classify(NULL, "_find_and_load (<frozen importlib._bootstrap>:1178)"),
		     FC_PYTHON);
	CHECK_EQ_U64(frame_classify(NULL, "_PyObject_MakeTpCall"), FC_INTERP);
	CHECK_EQ_U64(frame_classify(NULL, "PyEval_EvalCode"), FC_INTERP);
	CHECK_EQ_U64(frame_classify(NULL, "python3.11+0x1e4901"), FC_INTERP);
	CHECK_EQ_U64(frame_classify(NULL, "libtorch_cpu.so.1.13.0+0x2112a45"), FC_UNNAMED);
	CHECK_EQ_U64(frame_classify(NULL, "[unknown]"), FC_UNNAMED);
	CHECK_EQ_U64(frame_classify(NULL, "sgemm_"), FC_LIB);
	CHECK_EQ_U64(frame_classify(NULL, "Python_helper"), FC_LIB); /* Py + lowercase: not the C API */
	CHECK_EQ_U64(frame_classify(NULL, "schedule_[k]"), FC_KERNEL);
	CHECK_EQ_U64(frame_classify(NULL, "__libc_start_main"), FC_STARTUP);
	CHECK(frame_system_path("/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13"));
	CHECK(frame_system_path("/home/u/venv/lib/python3.11/site-packages/torch/lib/libc10.so"));
	CHECK(frame_system_path("[vdso]"));
	CHECK(!frame_system_path("/home/u/job/build/trainer"));

	/* PyTorch: Python frames and the innermost named native */
	CHECK_STR(frame_pick_text(NULL, torch, N_TORCH, 6, buf, sizeof(buf)),
		  "<module> (torch_loop.py:27);main (torch_loop.py:20);[+4];"
		  "Module._call_impl (module.py:1194);[+2];Linear.forward (linear.py:114);[+7];sgemm_");
	CHECK_STR(frame_pick_text(NULL, torch, N_TORCH, 2, buf, sizeof(buf)),
		  "...;[+2];Linear.forward (linear.py:114);[+7];sgemm_");
	CHECK_STR(frame_pick_text(NULL, torch, N_TORCH, 3, buf, sizeof(buf)),
		  "...;[+4];Module._call_impl (module.py:1194);[+2];Linear.forward (linear.py:114);"
		  "[+7];sgemm_");
	/* with a kernel part */
	const char *const irq[] = { "main (t.py:3)", "_PyObject_MakeTpCall", "sgemm_",
				    "asm_sysvec_apic_timer_interrupt_[k]", "irqentry_exit_[k]" };
	CHECK_STR(frame_pick_text(NULL, irq, 5, 6, buf, sizeof(buf)),
		  "main (t.py:3);[+1];sgemm_;...;irqentry_exit_[k]");
	/* system binaries only (no Python, no own frame): the named frames stay */
	const char *const sys[] = { "_start", "__libc_start_main", "main", "[unknown]",
				    "libx.so+0x1900", "work_a" };
	CHECK_STR(frame_pick_text(NULL, sys, 6, 6, buf, sizeof(buf)), "main;[+2];work_a");

	/* a native job: /work/job/app (own) calls into /usr/lib/libblas.so */
	char path[512];
	synth_path("analyzer_frame_pick.frec", path, sizeof(path));
	struct synth s;
	CHECK_EQ_U64(synth_open(&s, path), 0);
	synth_process(&s, 300, 1, "app", "/work/job/app");
	synth_mapping(&s, 300, 0x400000, 0x500000, 0, 1, "/work/job/app");
	synth_mapping(&s, 300, 0x7f0000000000ull, 0x7f0000100000ull, 0, 2, "/usr/lib/libblas.so");
	/* main -> Trainer::step() -> blas_dispatch -> (unnamed) -> dgemm_kernel */
	uint64_t st[] = { 0x7f0000003010ull, 0x7f0000009900ull, 0x7f0000002010ull, 0x402010, 0x401010 };
	synth_stack(&s, 1, 300, st, 0, 5);
	synth_samples(&s, 300, 300, 1, 10);
	static const struct synth_sym app[] = { { 0x1000, 0x100, "main" },
						 { 0x2000, 0x100, "_ZN7Trainer4stepEv" } };
	static const struct synth_sym blas[] = { { 0x2000, 0x100, "blas_dispatch" },
						  { 0x3000, 0x100, "dgemm_kernel" } };
	synth_dso(&s, 1, 0, "/work/job/app", app, 2);
	synth_dso(&s, 2, 0, "/usr/lib/libblas.so", blas, 2);
	CHECK_EQ_U64(synth_close(&s, 10, 0), 0);
	struct trace_set *ts;
	struct frec_error err;
	const char *files[] = { path };
	CHECK_EQ_U64(trace_set_open(files, 1, &ts, &err), 0);
	CHECK_EQ_U64(trace_set_run(ts, &err), 0);
	const struct frame_owners *own = frame_owners_of(ts);
	CHECK(own != NULL);
	CHECK(frame_owners_of(ts) == own); /* built once */
	CHECK_EQ_U64(frame_classify(own, "Trainer::step()"), FC_OWN);
	CHECK_EQ_U64(frame_classify(own, "main"), FC_OWN);
	CHECK_EQ_U64(frame_classify(own, "blas_dispatch"), FC_LIB);
	const char *const job[] = { "_start", "main", "Trainer::step()", "blas_dispatch",
				    "libblas.so+0x9900", "dgemm_kernel" };
	CHECK_STR(frame_pick_text(own, job, 6, 6, buf, sizeof(buf)),
		  "main;Trainer::step();[+2];dgemm_kernel");
	trace_set_free(ts);
	struct cmd_run r = CMD_RUN(cmd_summary, "summary", path);
	CHECK_EQ_U64(r.rc, 0);
	CHECK(strstr(r.out, "- 100.0% (10): main;Trainer::step();[+2];dgemm_kernel\n") != NULL);
	if (!strstr(r.out, "main;Trainer::step();[+2];dgemm_kernel"))
		fprintf(stderr, "%s", r.out);
	cmd_run_free(&r);
	return check_finish();
}
