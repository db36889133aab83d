"""SIGKILL the recorder mid-run: the trace still yields its intact chunks
(`check` says incomplete, exit 1, and lists what it recovered), every
analysis still works on it, and no flightrec probe stays attached."""
import os
import signal
import subprocess
import time
import frtest


class Sigkill(frtest.Case):
    def test_killed_recorder(self):
        d = frtest.workdir("sigkill")
        trace = os.path.join(d, "killed.frec")
        self.assertEqual(frtest.attached_flightrec_programs(), [],
                         "flightrec programs were loaded before the test")
        rec = subprocess.Popen([frtest.FLIGHTREC, "record", "-q", "-o", trace, "--probes",
                                "cpu,syscalls", "--", frtest.sample("cpu_split"), "6"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # chunks are sealed every second; let a few reach the file
        time.sleep(3.5)
        self.assertNotEqual(frtest.attached_flightrec_programs(), [])
        rec.send_signal(signal.SIGKILL)
        rec.wait()
        # the workload is released and keeps running; wait for it
        time.sleep(3)
        self.assertEqual(frtest.attached_flightrec_programs(), [],
                         "probes still attached after the recorder was killed")

        chk = frtest.analyze("check", trace, check=False)
        self.assertEqual(chk.returncode, 1, chk.stdout + chk.stderr)
        self.assertIn("incomplete", chk.stdout)

        stacks = frtest.folded(trace)
        samples = sum(n for f, n in stacks.items() if "run_rounds" in f)
        # about 3 s of 99 Hz sampling were sealed before the kill
        self.assertGreaterEqual(samples, 99, stacks)


if __name__ == "__main__":
    frtest.main()
