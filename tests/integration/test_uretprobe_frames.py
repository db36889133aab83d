"""A stack taken while a probed call runs keeps that call's caller.  The
cuda family's return probe (a uretprobe) replaces the return address of
cudaMemcpy, cudaFree or cudaLaunchKernel on the user stack with the
kernel's trampoline for as long as the call runs; a dwarf-mode stack
copied meanwhile (the sched family's off-CPU stack inside the stand-in's
sleeping cudaFree, the gpu family's launch probe inside cudaLaunchKernel)
gets the real address back from the thread's return instances, in both
copy paths (straight into the ring, and through the scratch slot with
FLIGHTREC_USTACK_DYNPTR=0), beside a CPU burner at 999 Hz.  Without that
the frame above the CUDA call read [unknown].

Two workloads: samples/cuda_train (off-CPU in backward's cudaFree, which
waits for the fake GPU; launches from launch_kernels, the gpu family
injected) and samples/train_shapes --compute per-op-sync (off-CPU in
tensor_item's 4-byte cudaMemcpy, 40 a step, under run_rounds, each
waiting about 3 ms for its kernel: past the sched family's --sched-min-us)."""
import os
import frtest

GPU_LIB = os.path.join(os.path.dirname(frtest.SAMPLES), "gpu", "libflightrec_cupti.so")


def flame(trace, kind):
    out = frtest.analyze("flame", trace, "--kind", kind).stdout
    return [ln.rsplit(" ", 1)[0].split(";") for ln in out.splitlines()]


def caller_of(frames, name):
    """The frame that called `name` in every stack through it."""
    return {f[f.index(name) - 1] for f in frames if name in f}


class UretprobeFrames(frtest.Case):
    def record(self, name, dynptr, probes, job, env=()):
        d = frtest.workdir(name)
        trace = os.path.join(d, "u.frec")
        with frtest.cpu_burners(1):
            old = os.environ.get("FLIGHTREC_USTACK_DYNPTR")
            if dynptr is not None:
                os.environ["FLIGHTREC_USTACK_DYNPTR"] = dynptr
            try:
                frtest.record(trace, ["--probes", probes, "-F", "999"],
                              ["--", "env"] + list(env) + job)
            finally:
                if old is None:
                    os.environ.pop("FLIGHTREC_USTACK_DYNPTR", None)
                else:
                    os.environ["FLIGHTREC_USTACK_DYNPTR"] = old
        return trace, d

    def test_cuda_train(self):
        for dynptr in (None, "0"):
            with self.subTest(dynptr=dynptr):
                trace, _ = self.record("uret_cuda_train_%s" % dynptr, dynptr, "cpu,cuda,sched,gpu",
                                       [frtest.sample("cuda_train"), "--steps", "3"],
                                       ["FLIGHTREC_FAKE_KERNEL_US=2000",
                                        "LD_LIBRARY_PATH=" + frtest.sample("cupti"),
                                        "CUDA_INJECTION64_PATH=" + GPU_LIB])
                off = flame(trace, "offcpu")
                self.assertEqual(caller_of(off, "cudaFree") - {"free_weights", "free_io_buffers"},
                                 {"backward"}, off)
                # load_batch's copy waits off CPU only when it outlasts --sched-min-us
                self.assertNotIn("[unknown]", caller_of(off, "cudaMemcpy"), off)
                gpu = flame(trace, "gpu")
                self.assertEqual(len(gpu), 4, gpu)
                self.assertEqual(caller_of(gpu, "cudaLaunchKernel"), {"launch_kernels"}, gpu)

    def test_train_shapes_per_op_sync(self):
        for dynptr in (None, "0"):
            with self.subTest(dynptr=dynptr):
                d = frtest.workdir("uret_shapes_%s_dir" % dynptr)
                trace, _ = self.record("uret_shapes_%s" % dynptr, dynptr, "cpu,cuda,sched",
                                       [frtest.sample("train_shapes"), "--compute", "per-op-sync",
                                        "--steps", "1", "--kernel-us", "3000", "--dir", d])
                off = flame(trace, "offcpu")
                through = [f for f in off if "cudaMemcpy" in f]
                self.assertTrue(through, off)
                for f in through:
                    at = f.index("cudaMemcpy")
                    self.assertEqual(f[at - 2:at], ["run_rounds", "tensor_item"], f)


if __name__ == "__main__":
    frtest.main()
