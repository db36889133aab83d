"""SIGKILL the recorder at named moments of a recording (before the BPF
load, after attach, after the first sealed chunk, after the job's end),
each checked to be the moment it names, and at random ones: every file
that exists is an incomplete trace that `check` reads (exit 1) or, killed
before its header was whole, one `check` calls unusable; no flightrec BPF program survives; and the job never
notices: once released it runs to its end.  Two recorders recording two jobs
at once both write complete, exact traces.

FLIGHTREC_KILL_ROUNDS sets the number of kills (5 here, so CI stays short;
scripts/stress-kills runs 50); FLIGHTREC_KILL_SEED replays a run's moments."""
import os
import random
import signal
import subprocess
import time
import frtest

ROUNDS = int(os.environ.get("FLIGHTREC_KILL_ROUNDS", "5"))
SEED = int(os.environ.get("FLIGHTREC_KILL_SEED", str(random.randrange(1 << 30))))
STEPS = 6
MiB = 1 << 20
AT_PEAK = {"init_weights": 805_306_368, "alloc_io_buffers": 67_108_864,
           "forward": 1_073_741_824, "leaky_cache": STEPS * MiB}


no_programs_left = frtest.no_programs_left


def sealed_samples(trace):
    """CPU samples that the file's sealed chunks hold (0 before any)."""
    if not os.path.exists(trace):
        return 0
    p = frtest.analyze("flame", trace, "--kind", "cpu", "--format", "folded", check=False)
    return sum(int(line.rpartition(" ")[2]) for line in p.stdout.splitlines()
               if p.returncode == 0 and line.strip())


class KillAnywhere(frtest.Case):
    def start(self, trace):
        """A recording of a 2 s job; its stderr in a file beside the trace
        (read for the "recording" line), the job's output on its stdout."""
        errf = open(trace + ".stderr", "w")
        rec = subprocess.Popen([frtest.FLIGHTREC, "record", "-o", trace, "--freq", "499",
                                "--", frtest.sample("cpu_split"), "2"],
                               stdout=subprocess.PIPE, stderr=errf, text=True)
        errf.close()
        return rec

    def kill_and_check(self, what, trace, rec, out=""):
        """SIGKILLs rec and checks what any kill must leave: no program nor
        link, a file that is either absent, unusable while its header was
        written, or a trace check reads; a job released before the kill ran
        to its end.  Returns (the file's check exit or None, job released)."""
        rec.send_signal(signal.SIGKILL)
        # the job writes to the recorder's stdout: EOF when it is gone too
        rest, _ = rec.communicate(timeout=60)
        out += rest
        self.assertTrue(no_programs_left(), f"{what}: left behind (programs, links): "
                        f"{frtest.left_behind()}")
        if not os.path.exists(trace):
            return None, False  # killed before the file was created
        chk = frtest.analyze("check", trace, check=False)
        if chk.returncode == 2:
            # killed while the file header was being written
            self.assertLess(os.path.getsize(trace), 4096, (what, chk.stdout))
            self.assertIn("unusable", chk.stdout, what)
            return 2, False
        self.assertIn(chk.returncode, (0, 1), (what, chk.stdout, chk.stderr))
        if chk.returncode == 1:
            self.assertIn("incomplete", chk.stdout, what)
            # at most the chunk that was being written when the kill came
            self.assertNotRegex(chk.stdout, r"\b([2-9]|\d\d+) damaged regions", what)
        released = any(e["type"] == "proc_exec" for e in frtest.dump(trace))
        if released:
            # the job was released before the kill: it ran to its end
            self.assertIn("cpu_split:", out, what)
        return chk.returncode, released

    def wait_for(self, what, ready):
        deadline = time.monotonic() + frtest.HANG_GUARD_S
        while not ready():
            self.assertLess(time.monotonic(), deadline, f"never reached: {what}")
            time.sleep(0.05)

    def test_kill_at_named_moments(self):
        """One kill at each named moment of a recording, each checked to be
        the moment it names."""
        d = frtest.workdir("kill_named")
        self.assertTrue(no_programs_left(), "flightrec programs were left behind before the "
                        f"test: {frtest.left_behind()}")

        # before the BPF load: the recorder has only just exec'd (Popen
        # returns once it has); loading and verifying the programs takes it
        # far longer than a signal does to arrive
        trace = os.path.join(d, "before_load.frec")
        rec = self.start(trace)
        rc, released = self.kill_and_check("before the BPF load", trace, rec)
        self.assertFalse(released, "before the BPF load: the job was already released")
        with open(trace + ".stderr") as f:
            self.assertNotIn("recording", f.read(), "before the BPF load: it was recording")

        # after attach: the recorder says "recording" once the probes are in,
        # just before it releases the job
        trace = os.path.join(d, "attached.frec")
        rec = self.start(trace)
        frtest.wait_file_line(trace + ".stderr", "recording", rec)
        rc, _ = self.kill_and_check("after attach", trace, rec)
        self.assertIn(rc, (0, 1), "after attach: no readable file")

        # after the first sealed chunk (they are sealed every second)
        trace = os.path.join(d, "sealed.frec")
        rec = self.start(trace)
        frtest.wait_file_line(trace + ".stderr", "recording", rec)
        self.wait_for("a sealed chunk with samples", lambda: sealed_samples(trace) > 0)
        before = sealed_samples(trace)
        rc, released = self.kill_and_check("after the first sealed chunk", trace, rec)
        self.assertEqual(rc, 1, "after the first sealed chunk: not an incomplete trace")
        self.assertTrue(released)
        self.assertGreaterEqual(sealed_samples(trace), before, "sealed samples were lost")

        # after the job's end: its output comes at its exit (a pipe: one
        # write), while the recorder still closes the file or has just done so
        trace = os.path.join(d, "job_ended.frec")
        rec = self.start(trace)
        out = ""
        while "cpu_split:" not in out:
            line = rec.stdout.readline()
            self.assertTrue(line, f"the job ended without its line: {out}")
            out += line
        rc, released = self.kill_and_check("after the job's end", trace, rec, out)
        self.assertIn(rc, (0, 1), "after the job's end: no readable file")
        self.assertTrue(released)
        self.assertGreater(sealed_samples(trace), 0, "after the job's end: no samples")

    def test_kill_at_random_moments(self):
        rnd = random.Random(SEED)
        d = frtest.workdir("kill_anywhere")
        self.assertTrue(no_programs_left(), "flightrec programs were left behind before the "
                        f"test: {frtest.left_behind()}")
        for i in range(ROUNDS):
            what = f"round {i} of seed {SEED}"
            trace = os.path.join(d, f"k{i}.frec")
            rec = self.start(trace)
            # anywhere from before the BPF load to after the job's end (the
            # named moments above are each certain; these fall in between)
            time.sleep(rnd.uniform(0.0, 4.0))
            self.kill_and_check(what, trace, rec)

    def test_two_recorders_at_once(self):
        d = frtest.workdir("two_recorders")
        recs = []
        for i in range(2):
            trace = os.path.join(d, f"r{i}.frec")
            recs.append((trace, subprocess.Popen(
                [frtest.FLIGHTREC, "record", "-o", trace, "--probes", "cuda,cpu", "--freq", "499",
                 "--", frtest.sample("cuda_train"), "--steps", str(STEPS)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
        for trace, p in recs:
            out, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, err)
            self.assertNotIn("WARNING", err)
            chk = frtest.analyze("check", trace)
            self.assertIn("intact", chk.stdout)
            peak = frtest.analyze("flame", trace, "--kind", "mem-inuse", "--at", "peak").stdout
            got = {}
            for line in peak.splitlines():
                frames, _, v = line.rpartition(" ")
                caller = frames.split(";")[-2]
                got[caller] = got.get(caller, 0) + int(v)
            self.assertEqual(got, AT_PEAK, trace)


if __name__ == "__main__":
    frtest.main()
