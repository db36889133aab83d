"""Recording onto a filesystem that fills up (a 256 KiB tmpfs): the job's
exit status stays the job's, one line says the disk filled and when, and
the file is valid: the chunk that did not fit is cut away, an end record
says why the recording stopped, `check` reports "stopped early: disk full"
(exit 1) with no damaged region, and the events before are there and
symbolized (the recorder writes processes, mappings and unwind data ahead
of the events that need them)."""
import os
import re
import subprocess
import frtest


class DiskFull(frtest.Case):
    def setUp(self):
        self.dir = frtest.workdir("disk_full")
        self.mnt = os.path.join(self.dir, "small")
        os.makedirs(self.mnt)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", self.mnt], check=True)

    def tearDown(self):
        subprocess.run(["umount", self.mnt], check=False)

    def test_disk_full(self):
        trace = os.path.join(self.mnt, "run.frec")
        # a fixed amount of work, not of time (about 6.6 s of CPU: 1.1 ms a
        # round here): at 999 Hz that is far more than 256 KiB however little
        # CPU a loaded machine gives it per second (`cpu_split 6` spun 6 s of
        # wall time, 1.2 s of CPU under a load of 16, and fitted in 180 KiB)
        job = f"{frtest.sample('cpu_split')} --rounds 6000 >/dev/null; exit 3"
        p = frtest.record(trace, ["--freq", "999"], ["--", "sh", "-c", job], check=False)
        self.assertEqual(p.returncode, 3, p.stderr)  # the job's own status
        full = [l for l in p.stderr.splitlines() if "disk full" in l]
        self.assertEqual(len(full), 1, p.stderr)
        self.assertRegex(full[0], r"^flightrec: disk full at [\d.]+ s writing .*run\.frec "
                                  r"\(No space left on device\): recording stopped")
        c = frtest.analyze("check", trace, check=False)
        self.assertEqual(c.returncode, 1, c.stdout + c.stderr)
        self.assertIn("stopped early: disk full at", c.stdout)
        self.assertNotIn("damaged", c.stdout)
        self.assertNotIn("incomplete", c.stdout)
        # what was sealed before is readable and symbolized
        stacks = frtest.folded(trace)
        heavy = sum(v for k, v in stacks.items() if "compute_heavy" in k)
        light = sum(v for k, v in stacks.items() if "compute_light" in k)
        self.assertGreater(heavy, 100, stacks)
        self.assertGreater(light, 30, stacks)
        unknown = sum(v for k, v in stacks.items() if k[0] == "[unknown]")
        self.assertLess(unknown, (heavy + light) / 20, stacks)
        # the analyzer says so wherever it reads the file
        info = frtest.analyze("info", trace)
        self.assertRegex(info.stdout, r"status: +stopped early: disk full at")
        self.assertIn("stopped early: disk full", info.stderr)


class RingSnapshotDiskFull(frtest.Case):
    """A flight-recorder snapshot (--ring, OOM trigger) written onto a
    100 KiB tmpfs: the END's 64 KiB reserve leaves room for a few of the
    snapshot's chunks only (a whole one is about 180 KiB).  The job's status
    stays the job's, one line says the snapshot is incomplete and why, the
    closing line counts no snapshot written, and the file is a valid prefix
    that `check` calls stopped early by a full disk."""

    def setUp(self):
        self.dir = frtest.workdir("disk_full_ring")
        self.mnt = os.path.join(self.dir, "small")
        os.makedirs(self.mnt)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=100k", "tmpfs", self.mnt],
                       check=True)

    def tearDown(self):
        subprocess.run(["umount", self.mnt], check=False)

    def test_snapshot_onto_a_full_disk(self):
        out = os.path.join(self.mnt, "job.frec")
        # cuda_train's huge cudaMalloc fails: the OOM trigger
        p = frtest.record(out, ["--ring", "64K", "--chunk-kib", "64", "--probes", "cuda,cpu",
                                "--freq", "999"],
                          ["--", frtest.sample("cuda_train"), "--steps", "40", "--step-ms", "2"],
                          check=False)
        self.assertEqual(p.returncode, 0, p.stderr)  # cuda_train's own status
        snap = os.path.join(self.mnt, "job-1.frec")
        lines = [l for l in p.stderr.splitlines() if "is incomplete" in l]
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertRegex(lines[0], r"^flightrec: snapshot " + re.escape(snap) + r" is incomplete: "
                         r".*offset \d+: writing stopped: No space left on device")
        self.assertIn("ring mode: 0 snapshots written", p.stderr)
        self.assertFalse(os.path.exists(out), "ring mode wrote FILE itself")
        c = frtest.analyze("check", snap, check=False)
        self.assertEqual(c.returncode, 1, c.stdout + c.stderr)
        self.assertIn("stopped early: disk full at", c.stdout)
        self.assertNotIn("damaged", c.stdout)


if __name__ == "__main__":
    frtest.main()
