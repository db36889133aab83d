"""SIGKILL the recorder at random moments of a recording (start-up, attach,
steady state, the end): every file that exists is an incomplete trace that
`check` reads (exit 1) or, killed before its header was whole, one `check`
calls unusable; no flightrec BPF program survives; and the job never
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


def no_programs_left(bound_s=120.0):
    """No flightrec program and no link to one, as `bpftool prog show` and
    `bpftool link show` list them (uprobe_multi and perf-event uprobes are
    links).  The kernel frees a dead process's programs after an RCU grace
    period: wait for that.  The bound is not a measurement: it is far past
    any grace period, and only turns a leaked program into a failure with a
    message instead of a ctest timeout."""
    end = time.monotonic() + bound_s
    while any(frtest.bpf_objects()):
        if time.monotonic() > end:
            return False
        time.sleep(0.1)
    return True


class KillAnywhere(frtest.Case):
    def test_kill_at_random_moments(self):
        rnd = random.Random(SEED)
        d = frtest.workdir("kill_anywhere")
        self.assertTrue(no_programs_left(), "flightrec programs were loaded before the test")
        for i in range(ROUNDS):
            what = f"round {i} of seed {SEED}"
            trace = os.path.join(d, f"k{i}.frec")
            rec = subprocess.Popen([frtest.FLIGHTREC, "record", "-q", "-o", trace, "--freq", "499",
                                    "--", frtest.sample("cpu_split"), "2"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            # anywhere from before the BPF load to after the job's end
            time.sleep(rnd.uniform(0.0, 4.0))
            rec.send_signal(signal.SIGKILL)
            # the job writes to the recorder's stdout: EOF when it is gone too
            out, _ = rec.communicate(timeout=60)
            self.assertTrue(no_programs_left(), f"{what}: left behind (programs, links): "
                            f"{frtest.bpf_objects()}")
            if not os.path.exists(trace):
                continue  # killed before the file was created
            chk = frtest.analyze("check", trace, check=False)
            if chk.returncode == 2:
                # killed while the file header was being written
                self.assertLess(os.path.getsize(trace), 4096, (what, chk.stdout))
                self.assertIn("unusable", chk.stdout, what)
                continue
            self.assertIn(chk.returncode, (0, 1), (what, chk.stdout, chk.stderr))
            if chk.returncode == 1:
                self.assertIn("incomplete", chk.stdout, what)
                # at most the chunk that was being written when the kill came
                self.assertNotRegex(chk.stdout, r"\b([2-9]|\d\d+) damaged regions", what)
            events = [e for e in frtest.dump(trace) if e["type"] == "proc_exec"]
            if events:
                # the job was released before the kill: it ran to its end
                self.assertIn("cpu_split:", out, what)

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
