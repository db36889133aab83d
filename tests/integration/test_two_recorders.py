"""Two recorders on one library: while one recording has its uprobes on
the stand-in libcudart, the kernel writes their int3 into every private
mapping of that file, the second recorder's own reading of it too.  The
second recorder must still read the functions' first instructions as the
file holds them (a push, emulated by the kernel), not the other's
breakpoints: no note that they single-step, and its recording is
complete (every CUDA call of its job, nothing lost)."""
import os
import subprocess
import frtest


class TwoRecorders(frtest.Case):
    def test_second_recorder_reads_the_file_not_the_breakpoints(self):
        d = frtest.workdir("two_recorders")
        first = subprocess.Popen(
            [frtest.FLIGHTREC, "record", "-o", os.path.join(d, "long.frec"), "--probes", "cuda",
             "--", frtest.sample("cuda_train"), "--steps", "100000", "--step-ms", "1"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "long.err"), "w"))
        try:
            frtest.wait_file_line(os.path.join(d, "long.err"), "cuda: attached", first)
            p = frtest.record(os.path.join(d, "short.frec"), ["--probes", "cuda"],
                              ["--", frtest.sample("cuda_train"), "--steps", "2"])
        finally:
            first.terminate()
            first.wait(timeout=frtest.HANG_GUARD_S)
        self.assertIn("cuda: attached 30 functions", p.stderr)
        self.assertNotIn("single-steps", p.stderr)
        self.assertRegex(p.stderr, r"wrote \S+: \d+ events \(proc \d+, cuda 40[,)].*, 0 dropped")


if __name__ == "__main__":
    frtest.main()
