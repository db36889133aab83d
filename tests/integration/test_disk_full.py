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
        # cpu_split spins for 6 s of its own CPU time: at 999 Hz with dwarf
        # stacks that is far more than 256 KiB whatever the machine's load
        job = f"{frtest.sample('cpu_split')} 6 >/dev/null; exit 3"
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


if __name__ == "__main__":
    frtest.main()
