"""Flight-recorder mode left on a churning job (issue 25).

- `exit` fires for the job's processes, not for every helper a shell runs:
  six `readlink` helpers and a `sh -c "exit 7"` fail, then a process of the
  stand-in CUDA runtime (cuda_hold, which maps libcudart) exits 2; exactly
  one snapshot is written, for it, and the seven others are counted on
  stderr (the first at once, then at most one line per --status-interval).
  `--trigger exit=all`
  keeps the old behaviour: the first helper's failure writes the snapshot.
- Metadata kept is bounded by a count: N short processes run through a small
  ring; the metadata of those whose events have left it is retired, so the
  processes whose metadata the ring keeps at the end stay under a bound that
  does not grow with N.
- Quiet logs: three processes of one interpreter are each walked (their
  Python frames are in the profile: its facts, read once, serve all three),
  and stderr says so once, not once per process."""
import sys
import json
import os
import re
import frtest

HELPERS = "for i in 1 2 3 4 5 6; do readlink /nonexistent/x; done; sh -c 'exit 7'; "


def not_job_total(stderr):
    return sum(int(n) for n in re.findall(
        r"flightrec: exit: (\d+) process(?:es)? that (?:is|are) not the job failed", stderr))


def kept(stderr):
    m = re.search(r"metadata kept: (\d+) records, of (\d+) processes; (\d+) exited processes "
                  r"retired \((\d+) records\), (\d+) waiting", stderr)
    if not m:
        raise AssertionError("no metadata line in:\n" + stderr)
    return {k: int(v) for k, v in zip(("records", "processes", "retired", "retired_records",
                                        "waiting"), m.groups())}


class RingChurn(frtest.Case):
    def test_exit_fires_for_the_job_not_its_helpers(self):
        d = frtest.workdir("ring_exit_job")
        out = os.path.join(d, "job.frec")
        p = frtest.record(out, ["--ring", "1M", "--probes", "cuda,cpu"],
                          ["--", "sh", "-c", HELPERS + frtest.sample("cuda_hold") + " 0; exit 0"])
        self.assertEqual(sorted(os.listdir(d)), ["job-1.frec"], p.stderr)
        s = json.loads(frtest.analyze("info", "--json", os.path.join(d, "job-1.frec"))
                       .stdout)["files"][0]["snapshot"]
        self.assertEqual(s["trigger"], "exit")
        self.assertIn("(cuda_hold) exited with status 2", s["detail"])
        self.assertIn("the job: it maps a CUDA, NCCL or RDMA library", s["detail"])
        self.assertEqual(not_job_total(p.stderr), 7, p.stderr)
        self.assertNotIn("readlink) exited with status 1; the job", p.stderr)

    def test_exit_all_takes_every_process(self):
        d = frtest.workdir("ring_exit_all")
        out = os.path.join(d, "job.frec")
        p = frtest.record(out, ["--ring", "1M", "--probes", "cpu", "--trigger", "exit=all"],
                          ["--", "sh", "-c", HELPERS + "exit 0"])
        self.assertEqual(sorted(os.listdir(d)), ["job-1.frec"], p.stderr)
        s = json.loads(frtest.analyze("info", "--json", os.path.join(d, "job-1.frec"))
                       .stdout)["files"][0]["snapshot"]
        self.assertEqual(s["trigger"], "exit")
        self.assertIn("(readlink) exited with status 1", s["detail"])
        self.assertEqual(not_job_total(p.stderr), 0, p.stderr)

    def churn(self, name, n):
        d = frtest.workdir("ring_churn_" + name)
        # stored bytes = raw bytes, and every process makes the same system
        # calls: the ring holds a known number of processes' events
        p = frtest.record(os.path.join(d, "job.frec"),
                          ["--ring", "64K", "--codec", "none", "--chunk-kib", "64",
                           "--probes", "syscalls"],
                          ["--", "sh", "-c", f"for i in $(seq {n}); do /bin/true; done"])
        return kept(p.stderr)

    def test_churn_metadata_is_bounded_by_a_count(self):
        small, large = self.churn("small", 100), self.churn("large", 400)
        for k, n in ((small, 100), (large, 400)):
            # what stays: the shell, and the processes whose events are in the
            # last 64 KiB (a /bin/true makes tens of system calls)
            self.assertLessEqual(k["processes"], 40, k)
            self.assertLessEqual(k["waiting"], 40, k)
            self.assertGreaterEqual(k["retired"], n - 40, k)
            self.assertGreater(k["retired_records"], k["retired"], k)
        # four times the processes, not four times the metadata
        self.assertLess(large["records"], 2 * small["records"] + 200, (small, large))


    def test_one_line_per_interpreter(self):
        d = frtest.workdir("ring_python_once")
        scripts = []
        for i in range(3):
            path = os.path.join(d, f"busy{i}.py")
            with open(path, "w") as f:
                f.write("import time\n"
                        "def spin():\n"
                        "    while time.process_time() < 0.3:\n"
                        "        pass\n"
                        "spin()\n")
            scripts.append(f"{sys.executable} {path}")
        out = os.path.join(d, "py.frec")
        p = frtest.record(out, ["--probes", "cpu", "--freq", "499"],
                          ["--", "sh", "-c", "; ".join(scripts)])
        self.assertEqual(p.stderr.count("flightrec: python: walking CPython"), 1, p.stderr)
        stacks = frtest.folded(out)
        for i in range(3):
            named = sum(n for st, n in stacks.items() if any(f"(busy{i}.py:" in f for f in st))
            self.assertGreater(named, 0, (i, stacks))


if __name__ == "__main__":
    frtest.main()
