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
library is an error that says where it looked."""
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


if __name__ == "__main__":
    frtest.main()
