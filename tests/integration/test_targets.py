"""Other ways to pick what to record: --pid on a running process, --cgroup
on a cgroup v2 directory (filtered in the kernel by cgroup id), and
--duration."""
import os
import subprocess
import time
import frtest


def cgroup2_root():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            if right.split()[0] == "cgroup2":
                return left.split()[4]
    return None


class Targets(frtest.Case):
    def test_pid(self):
        d = frtest.workdir("target_pid")
        trace = os.path.join(d, "pid.frec")
        work = subprocess.Popen([frtest.sample("cpu_split"), "4"], stdout=subprocess.DEVNULL)
        try:
            time.sleep(0.3)
            t0 = time.monotonic()
            frtest.record(trace, ["--probes", "cpu", "--duration", "1.5"], ["--pid", str(work.pid)])
            self.assertLess(time.monotonic() - t0, 3.5, "--duration did not stop the recording")
        finally:
            work.wait()
        stacks = frtest.folded(trace, "--pid", str(work.pid))
        n = sum(v for f, v in stacks.items() if "run_rounds" in f)
        # 1.5 s of a busy process: at least a third of 99 Hz even on a loaded machine
        self.assertGreaterEqual(n, 50, stacks)

    def test_cgroup(self):
        root = cgroup2_root()
        if not root:
            self.skipTest("no cgroup2 mount on this machine")
        cg = os.path.join(root, f"flightrec-test-{os.getpid()}")
        os.mkdir(cg)
        inside = outside = None
        try:
            inside = subprocess.Popen(["sh", "-c", f"echo $$ > {cg}/cgroup.procs && exec {frtest.sample('cpu_split')} 3"],
                                      stdout=subprocess.DEVNULL)
            outside = subprocess.Popen([frtest.sample("forker"), "3"], stdout=subprocess.DEVNULL)
            time.sleep(0.3)
            d = frtest.workdir("target_cgroup")
            trace = os.path.join(d, "cg.frec")
            frtest.record(trace, ["--probes", "cpu", "--duration", "1.5"], ["--cgroup", cg])
            stacks = frtest.folded(trace)
            # the point is the filter: samples of the process inside, none outside
            self.assertGreaterEqual(sum(v for f, v in stacks.items() if "run_rounds" in f), 10, stacks)
            self.assertFalse(any("burn" in f for f in stacks), "a process outside the cgroup was sampled")
        finally:
            for p in (inside, outside):
                if p:
                    p.wait()
            os.rmdir(cg)


if __name__ == "__main__":
    frtest.main()
