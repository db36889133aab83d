"""Other ways to pick what to record: --pid on a running process, --cgroup
on a cgroup v2 directory (filtered in the kernel by cgroup id), and
--duration."""
import json
import os
import signal
import subprocess
import frtest


class Targets(frtest.Case):
    def test_pid(self):
        d = frtest.workdir("target_pid")
        trace = os.path.join(d, "pid.frec")
        # runs until killed: only --duration can end this recording (no
        # signal is sent to the recorder, and the target does not exit)
        work = subprocess.Popen([frtest.sample("cpu_split"), "3600"], stdout=subprocess.DEVNULL)
        try:
            # (Popen returns once cpu_split is exec'd: nothing to wait for)
            frtest.record(trace, ["--probes", "cpu", "--duration", "1.5"], ["--pid", str(work.pid)])
            self.assertIsNone(work.poll(), "the target ended: --duration was not what stopped "
                                           "the recording")
        finally:
            work.kill()
            work.wait()
        info = json.loads(frtest.analyze("info", trace, "--json").stdout)["files"][0]
        # closed cleanly, and not before the duration (measured on the
        # trace's own clock; how much later depends on the machine's load)
        self.assertTrue(info["complete"], info)
        self.assertGreaterEqual(info["duration_ns"], 1_500_000_000, info)
        stacks = frtest.folded(trace, "--pid", str(work.pid))
        n = sum(v for f, v in stacks.items() if "run_rounds" in f)
        # how many samples depends on the CPU the machine gave it; that they
        # are this process's rounds does not
        self.assertGreater(n, 0, stacks)
        self.assertGreaterEqual(n, 0.9 * sum(stacks.values()), stacks)

    def test_cgroup(self):
        root = frtest.cgroup2_root()
        if not root:
            self.skipTest("no cgroup2 mount on this machine")
        cg = os.path.join(root, f"flightrec-test-{os.getpid()}")
        os.mkdir(cg)
        inside = outside = None
        try:
            # both run until killed: the recording, however late its start on
            # a loaded machine, sees them for its whole --duration
            inside = subprocess.Popen(["sh", "-c", f"echo $$ > {cg}/cgroup.procs && exec {frtest.sample('cpu_split')} 3600"],
                                      stdout=subprocess.DEVNULL)
            # its own process group: the kill below reaches its child too
            outside = subprocess.Popen([frtest.sample("forker"), "3600"], stdout=subprocess.DEVNULL,
                                       start_new_session=True)
            # in the cgroup and running cpu_split (the shell moved itself in,
            # then exec'd)
            frtest.wait_comm(inside.pid, "cpu_split")
            d = frtest.workdir("target_cgroup")
            trace = os.path.join(d, "cg.frec")
            frtest.record(trace, ["--probes", "cpu", "--duration", "1.5"], ["--cgroup", cg])
            self.assertIsNone(inside.poll(), "the job inside ended before the recording did")
            stacks = frtest.folded(trace)
            # the point is the filter: samples of the process inside (how many
            # depends on the CPU a loaded machine gives it), none outside
            self.assertGreater(sum(v for f, v in stacks.items() if "run_rounds" in f), 0, stacks)
            self.assertFalse(any("burn" in f for f in stacks), "a process outside the cgroup was sampled")
        finally:
            if outside:
                os.killpg(outside.pid, signal.SIGKILL)
            for p in (inside, outside):
                if p:
                    p.kill()
                    p.wait()
            os.rmdir(cg)

if __name__ == "__main__":
    frtest.main()
