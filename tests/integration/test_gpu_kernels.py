"""GPU kernel times through the CUDA injection library (gpu/): samples/
cuda_train on the stand-in runtime, started with CUDA_INJECTION64_PATH
naming libflightrec_cupti.so and the stand-in libcupti.so.13 on its library
path, its fake GPU running every kernel FLIGHTREC_FAKE_KERNEL_US.  The gpu
family's uprobes on the library's two probe functions record a launch event
(with the launch's stack) per cudaLaunchKernel and a kernel event per
kernel: the counts equal the cuda family's launches, the correlation ids
pair them one to one, every kernel lasts exactly the fake GPU's time and
starts after its launch.  The same with record --gpu-kernels setting the
variable, and with frame-pointer stacks beside a CPU burner.  Without the
variable nothing of the family is recorded; --gpu-kernels without the
library is an error that says where it looked.

The analyzer's join (GpuKernelAnalysis): `cuda` lists cuda_train's four
kernels by name with exactly STEPS runs of KERNEL_US each and its one
stream busy for all of them; `flame --kind gpu` puts each kernel's time
under train_step's launch stack; the timeline has every kernel on a
"GPU 0 stream 1" track; `findings` says its idle is measured from the
kernel records and that no kernel ran inside an interval the host signals
called idle.  The second workload is shaped apart from cuda_train:
samples/train_shapes --compute two-streams (one kernel name launched 40
times a step from run_rounds -> launch_op on a created stream, another
kernel time), recorded with --probes gpu alone and with the cuda family
too (whose return probe on cudaLaunchKernel the launch stack sees through:
test_uretprobe_frames.py).  A job recorded without the library has no
kernel section and says its figures are host-side bounds."""
import json
import os
import subprocess
import frtest

STEPS, KERNEL_US = 3, 250
GPU_LIB = os.path.join(os.path.dirname(frtest.SAMPLES), "gpu", "libflightrec_cupti.so")
CUPTI_DIR = frtest.sample("cupti")


class GpuKernels(frtest.Case):
    def record(self, name, extra=(), inject=True, burners=0):
        """inject: True, the job's environment names the library itself;
        "option", record --gpu-kernels does; False, neither"""
        d = frtest.workdir(name)
        trace = os.path.join(d, "g.frec")
        env = {"FLIGHTREC_FAKE_KERNEL_US": str(KERNEL_US), "LD_LIBRARY_PATH": CUPTI_DIR}
        if inject is True:
            env["CUDA_INJECTION64_PATH"] = GPU_LIB
        if inject == "option":
            extra = list(extra) + ["--gpu-kernels"]
        with frtest.cpu_burners(burners):
            self.stderr = frtest.record(trace, ["--probes", "cuda,gpu"] + list(extra),
                          ["--", "env"] + [f"{k}={v}" for k, v in env.items()] +
                          [frtest.sample("cuda_train"), "--steps", str(STEPS)]).stderr
        events = frtest.dump(trace)
        return ([e for e in events if e["type"] == "gpu_launch"],
                [e for e in events if e["type"] == "gpu_kernel"],
                [e for e in events if e["type"] == "cuda" and e.get("name") == "cudaLaunchKernel"])

    def check(self, launches, kernels, cuda_launches, frame):
        self.assertTrue(cuda_launches)
        self.assertEqual(len(launches), len(cuda_launches))
        self.assertEqual(len(kernels), len(cuda_launches))
        ids = [e["correlation_id"] for e in launches]
        self.assertEqual(len(set(ids)), len(ids))
        self.assertEqual(sorted(ids), sorted(k["correlation_id"] for k in kernels))
        at = {e["correlation_id"]: e for e in launches}
        for k in kernels:
            self.assertEqual(k["end_ns"] - k["start_ns"], KERNEL_US * 1000, k)
            self.assertGreaterEqual(k["start_ns"], at[k["correlation_id"]]["ts_ns"], k)
            self.assertEqual(k["dropped"], 0, k)
            self.assertEqual(k["grid"], [256, 1, 1], k)
        for e in launches:
            self.assertIn(frame, e.get("stack", []), e)

    def test_every_launch_has_its_kernel(self):
        self.check(*self.record("gpu_dwarf"), frame="train_step")

    def test_gpu_kernels_option(self):
        # the recorder finds the library in its build tree and sets the variable
        self.check(*self.record("gpu_option", inject="option"), frame="train_step")

    def test_probe_functions_are_not_single_stepped(self):
        # a probe function starting with an instruction the kernel single-steps
        # (an empty function is a lone ret) costs a trap per launch: ~10x the
        # whole uprobe path of --probes cuda, measured by bench_gpu_launch.py
        self.record("gpu_no_single_step", inject="option")
        self.assertIn("flightrec: gpu: attached 2 functions in " + GPU_LIB, self.stderr)
        self.assertNotIn("single-steps", self.stderr)

    def test_gpu_kernels_without_the_library(self):
        d = frtest.workdir("gpu_nolib")
        p = subprocess.run([frtest.FLIGHTREC, "record", "-o", os.path.join(d, "x.frec"),
                            "--gpu-kernels", "--", "true"], capture_output=True, text=True,
                           env=dict(os.environ, FLIGHTREC_CUPTI_INJECTION="/nonexistent.so"))
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--gpu-kernels: no libflightrec_cupti.so in /nonexistent.so "
                      "(FLIGHTREC_CUPTI_INJECTION)", p.stderr)

    def test_fp_beside_a_burner(self):
        # --stack fp: the walk stops inside the stand-in runtime (a frame
        # without a frame pointer), so only the probe function is sure
        self.check(*self.record("gpu_fp", ["--stack", "fp", "-F", "999"], burners=1),
                   frame="flightrec_cupti_launch")

    def test_not_injected(self):
        launches, kernels, cuda_launches = self.record("gpu_none", inject=False)
        self.assertTrue(cuda_launches)
        self.assertEqual((launches, kernels), ([], []))


SHAPES_STEPS, SHAPES_KERNEL_US, SHAPES_ROUNDS = 3, 300, 40
KERNELS = ["gemm_backward_kernel", "gemm_forward_kernel", "relu_kernel", "sgd_update_kernel"]


def record_job(name, probes, job, kernel_us, inject=True):
    d = frtest.workdir(name)
    trace = os.path.join(d, "g.frec")
    env = ["FLIGHTREC_FAKE_KERNEL_US=%d" % kernel_us, "LD_LIBRARY_PATH=" + CUPTI_DIR]
    if inject:
        env.append("CUDA_INJECTION64_PATH=" + GPU_LIB)
    frtest.record(trace, ["--probes", probes], ["--", "env"] + env + job)
    return trace, d


def folded_lines(trace):
    out = frtest.analyze("flame", trace, "--kind", "gpu").stdout
    return [(ln.rsplit(" ", 1)[0].split(";"), int(ln.rsplit(" ", 1)[1])) for ln in out.splitlines()]


class GpuKernelAnalysis(frtest.Case):
    def test_cuda_train_kernels_streams_flame_timeline_findings(self):
        trace, d = record_job("gpu_analysis", "cpu,cuda,gpu",
                              [frtest.sample("cuda_train"), "--steps", str(STEPS)], KERNEL_US)
        g = json.loads(frtest.analyze("cuda", trace, "--json").stdout)["gpu"]
        n, ns = 4 * STEPS, KERNEL_US * 1000
        self.assertEqual((g["source"], g["kernels"], g["launches"], g["joined"], g["in_api_call"],
                          g["launches_without_kernel"], g["dropped"], g["bad_times"]),
                         ("cupti", n, n, n, n, 0, 0, 0), g)
        self.assertEqual(g["total_ns"], n * ns)
        self.assertEqual(sorted(r["name"] for r in g["by_name"]), KERNELS)
        for r in g["by_name"]:
            self.assertEqual((r["count"], r["total_ns"], r["min_ns"], r["max_ns"]),
                             (STEPS, STEPS * ns, ns, ns), r)
            self.assertLessEqual(abs(r["p50_ns"] - ns), ns * 0.004, r)
        self.assertEqual(len(g["streams"]), 1, g["streams"])
        st = g["streams"][0]
        self.assertEqual((st["device"], st["stream"], st["kernels"], st["busy_ns"]),
                         (0, 1, n, n * ns), st)
        text = frtest.analyze("cuda", trace).stdout
        self.assertIn("GPU kernels (CUPTI): %d, %.1f ms on the GPU; %d joined to their launch "
                      "of %d launches recorded\n" % (n, n * ns / 1e6, n, n), text)

        lines = folded_lines(trace)
        self.assertEqual(sorted(f[-1] for f, _ in lines), KERNELS, lines)
        for frames, value in lines:
            self.assertEqual(value, STEPS * ns, frames)
            self.assertEqual(frames[-2], "cudaLaunchKernel", frames)  # cut below the API
            at = frames.index("main")
            self.assertEqual(frames[at:at + 3], ["main", "run", "train_step"], frames)

        tl = os.path.join(d, "t.json")
        frtest.analyze("timeline", trace, "-o", tl)
        with open(tl) as fh:
            events = json.load(fh)["traceEvents"]
        slices = [e for e in events if e.get("cat") == "gpu"]
        self.assertEqual(len(slices), n)
        self.assertEqual({e["dur"] for e in slices}, {KERNEL_US})
        self.assertEqual(len({(e["pid"], e["tid"]) for e in slices}), 1)
        pid, tid = slices[0]["pid"], slices[0]["tid"]
        names = [e["args"]["name"] for e in events if e.get("ph") == "M" and
                 e.get("name") == "thread_name" and (e["pid"], e["tid"]) == (pid, tid)]
        self.assertEqual(names, ["GPU 0 stream 1"])
        starts = sorted(e["ts"] for e in slices)  # one stream: one after another
        for a, b in zip(starts, starts[1:]):
            self.assertGreaterEqual(b - a, KERNEL_US - 0.002)

        js = json.loads(frtest.analyze("findings", trace, "--json").stdout)
        (p,) = js["gpu_time_from"].keys()
        self.assertEqual((js["gpu_time_from"][p], js["gpu_kernels"][p]), ("kernels", n), js)
        self.assertAlmostEqual(js["gpu_busy_ms"][p], n * ns / 1e6, places=3)
        self.assertEqual(js["busy_in_host_idle_ms"][p], 0, js)  # the host rule agrees
        self.assertIn("; measured: %d kernel records" % n,
                      frtest.analyze("findings", trace).stdout)

    def test_second_workload_two_streams_one_kernel_name(self):
        job = [frtest.sample("train_shapes"), "--compute", "two-streams", "--steps",
               str(SHAPES_STEPS), "--kernel-us", str(SHAPES_KERNEL_US)]
        n, ns = SHAPES_STEPS * SHAPES_ROUNDS, SHAPES_KERNEL_US * 1000
        for probes in ("gpu", "cpu,syscalls,cuda,gpu"):
            with self.subTest(probes=probes):
                name = "gpu_shapes_" + probes.replace(",", "_")
                trace, d = record_job(name, probes, job + ["--dir", frtest.workdir(name + "_dir")],
                                      SHAPES_KERNEL_US)
                g = json.loads(frtest.analyze("cuda", trace, "--json").stdout)["gpu"]
                self.assertEqual((g["kernels"], g["joined"], g["launches_without_kernel"]),
                                 (n, n, 0), g)
                self.assertEqual([(r["name"], r["count"], r["total_ns"], r["min_ns"], r["max_ns"])
                                  for r in g["by_name"]], [("op_kernel", n, n * ns, ns, ns)])
                self.assertEqual([(s["kernels"], s["busy_ns"]) for s in g["streams"]],
                                 [(n, n * ns)])
                lines = folded_lines(trace)
                self.assertEqual(len(lines), 1, lines)
                frames, value = lines[0]
                self.assertEqual(value, n * ns)
                self.assertEqual(frames[-4:], ["run_rounds", "launch_op", "cudaLaunchKernel",
                                               "op_kernel"], frames)
                if "cuda" in probes:
                    js = json.loads(frtest.analyze("findings", trace, "--json").stdout)
                    (p,) = js["gpu_time_from"].keys()
                    self.assertEqual(js["gpu_time_from"][p], "kernels", js)
                    self.assertEqual(js["busy_in_host_idle_ms"][p], 0, js)

    def test_without_kernel_records_figures_are_bounds(self):
        trace, _ = record_job("gpu_bounds", "cpu,cuda",
                              [frtest.sample("cuda_train"), "--steps", str(STEPS)], KERNEL_US,
                              inject=False)
        g = json.loads(frtest.analyze("cuda", trace, "--json").stdout)["gpu"]
        self.assertEqual((g["source"], g["kernels"], g["by_name"]), ("none", 0, []), g)
        self.assertIn("GPU kernels: none recorded.  Kernel times need the job started by "
                      "'flightrec record --gpu-kernels -- COMMAND'",
                      frtest.analyze("cuda", trace).stdout)
        p = frtest.analyze("flame", trace, "--kind", "gpu", check=False)
        self.assertEqual(p.returncode, 1, p)
        self.assertIn("no GPU kernel records in this trace, so --kind gpu has nothing to show",
                      p.stderr)
        js = json.loads(frtest.analyze("findings", trace, "--json").stdout)
        self.assertEqual(set(js["gpu_time_from"].values()), {"host_signals"}, js)
        self.assertIn("from host signals (an upper bound", frtest.analyze("findings", trace).stdout)


if __name__ == "__main__":
    frtest.main()
