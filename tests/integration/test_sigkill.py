"""SIGKILL the recorder mid-run: the trace still yields its intact chunks
(`check` says incomplete, exit 1, and lists what it recovered), every
analysis still works on it, everything sealed before the kill is still
there, no flightrec probe stays attached (none that no live process holds,
none the job holds: other recorders on the machine keep theirs), and the
released job runs on.
Every wait is for an outcome (the recorder's "recording" line, samples in
the file's sealed chunks, the kernel freeing the programs); the bounds only
turn a hang into a message."""
import os
import signal
import subprocess
import time
import frtest


def run_rounds_samples(trace):
    """Samples in cpu_split's rounds that the file's sealed chunks hold."""
    p = frtest.analyze("flame", trace, "--kind", "cpu", "--format", "folded", check=False)
    if p.returncode != 0:
        return 0
    n = 0
    for line in p.stdout.splitlines():
        frames, _, value = line.rpartition(" ")
        if "run_rounds" in frames:
            n += int(value)
    return n


class Sigkill(frtest.Case):
    def test_killed_recorder(self):
        d = frtest.workdir("sigkill")
        trace = os.path.join(d, "killed.frec")
        self.assertTrue(frtest.no_programs_left(), "flightrec programs were left behind "
                        f"before the test: {frtest.left_behind()}")
        errf = open(os.path.join(d, "stderr"), "w")
        # the job outlives any recording here: only the kill ends it
        rec = subprocess.Popen([frtest.FLIGHTREC, "record", "-o", trace, "--probes",
                                "cpu,syscalls", "--", frtest.sample("cpu_split"), "3600"],
                               stdout=subprocess.DEVNULL, stderr=errf, text=True)
        job = frtest.child_of(rec.pid)
        try:
            frtest.wait_file_line(errf.name, "recording", rec)
            # (other recorders may run on this machine: this one's own)
            self.assertNotEqual(frtest.held_bpf_ids([rec.pid])[0], set(), "no program loaded")
            # chunks are sealed every second: wait until sealed ones hold
            # samples of the job's rounds
            deadline = time.monotonic() + frtest.HANG_GUARD_S
            while (before := run_rounds_samples(trace)) == 0:
                self.assertLess(time.monotonic(), deadline, "no sealed chunk with samples")
                time.sleep(0.2)
            rec.send_signal(signal.SIGKILL)
            rec.wait()
            self.assertTrue(frtest.no_programs_left(also=[job]), "probes still attached after "
                            f"the recorder was killed: {frtest.left_behind([job])}")
            # released, not stopped nor killed: the job runs on
            self.assertIn(frtest.proc_state(job), {"R", "S"}, "the job did not survive")
        finally:
            if rec.poll() is None:
                rec.kill()
                rec.wait()
            os.kill(job, signal.SIGKILL)
            frtest.wait_state(job, {None, "Z"}, "killed")
            errf.close()

        chk = frtest.analyze("check", trace, check=False)
        self.assertEqual(chk.returncode, 1, chk.stdout + chk.stderr)
        self.assertIn("incomplete", chk.stdout)
        # what was sealed before the kill is all still there
        self.assertGreaterEqual(run_rounds_samples(trace), before)


if __name__ == "__main__":
    frtest.main()
