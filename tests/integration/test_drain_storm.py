"""Nothing the drain does to make records smaller (sparse raw stacks) costs
an event that writing every copy whole would have kept.

1. samples/cuda_storm 100000 (200,000 cudaMalloc/cudaFree calls, linked at
   build time so every call is probed) recorded with the defaults, in both
   stack modes, several times, some with another process keeping a CPU
   busy: every call the program made is in the file and nothing was lost.
   Whatever happened, recorded + counted as lost == made.
2. The recorder stopped (SIGSTOP) for the whole storm, so its ring is full
   when it goes on: the drain is behind and writes copies whole, unplanned,
   counting them (the trace's "ustack_behind" entry, the end-of-run line)
   until it has caught up, then asks the sparse planner again.  Every call
   is recorded or counted as lost, exactly, and every recorded call's
   stack, from a whole copy or a sparse one, still runs from the program's
   entry to main.

FLIGHTREC_DRAIN_STORM_RUNS sets the recordings of part 1 (4: each stack
mode quiet and busy)."""
import json
import os
import re
import signal
import struct
import subprocess
import sys
import frtest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
import bench_sample_bytes  # noqa: E402  (the trace's EVENTS chunks, record by record)

PAIRS = 100000
RUNS = int(os.environ.get("FLIGHTREC_DRAIN_STORM_RUNS", "4"))
# (stack mode, another process keeping a CPU busy), in turn
VARIANTS = [("dwarf", False), ("fp", True), ("dwarf", True), ("fp", False)]
FR_REC_USTACK = 0x10B
FR_USTACK_SPARSE = 16


def ustack_flags(trace):
    """flags of every FR_REC_USTACK in the trace's EVENTS chunks"""
    return [struct.unpack_from("<H", rec, 28)[0]
            for pay in bench_sample_bytes.events_chunks(trace)
            for typ, rec in bench_sample_bytes.records(pay) if typ == FR_REC_USTACK]


def info_of(trace):
    return json.loads(frtest.analyze("info", trace, "--json").stdout)["files"][0]


def probe(info, name):
    return next((x for x in info["probes"] if x["name"] == name), None)


def cuda_in_file(info):
    return sum(x["count"] for x in info["records_by_type"] if x["name"] == "cuda")


class DrainStorm(frtest.Case):
    def test_storm_loses_nothing_with_the_defaults(self):
        d = frtest.workdir("drain_storm")
        for run in range(RUNS):
            stack, busy = VARIANTS[run % len(VARIANTS)]
            what = f"run {run}: --stack {stack}, {'busy' if busy else 'quiet'}"
            trace = os.path.join(d, f"storm{run}.frec")
            with frtest.cpu_burners(1 if busy else 0):
                p = frtest.record(trace, ["--stack", stack],
                                  ["--", frtest.sample("cuda_storm"), str(PAIRS)], timeout=300)
            made = int(re.search(r"cuda_storm: (\d+) calls", p.stdout).group(1))
            self.assertEqual(made, 2 * PAIRS, what)
            info = info_of(trace)
            cuda = probe(info, "cuda")
            # recorded or counted, exactly, whatever the load did
            self.assertEqual(cuda["events"] + cuda["drops"], made, (what, cuda, info["losses"]))
            self.assertEqual(cuda_in_file(info), cuda["events"], what)
            # and nothing counted: every call is in the file
            self.assertEqual(info["losses"], [], (what, p.stderr[-1500:]))
            self.assertEqual(info["drops"], 0, what)
            self.assertEqual(cuda["events"], made, what)
            self.assertNotIn("WARNING", p.stderr, what)
            behind = probe(info, "ustack_behind")
            if stack == "dwarf":
                m = re.search(r"(\d+) copies whole because the drain was behind", p.stderr)
                self.assertIsNotNone(behind, what)
                self.assertEqual(behind["events"], int(m.group(1)), what)
            else:
                self.assertIsNone(behind, what)
            os.unlink(trace)

    def test_behind_drain_writes_whole_copies_and_counts_them(self):
        d = frtest.workdir("drain_storm_behind")
        trace = os.path.join(d, "stopped.frec")
        cmd = [frtest.FLIGHTREC, "record", "-o", trace, "--probes", "cuda", "--stack", "dwarf",
               "--", frtest.sample("cuda_storm"), str(PAIRS), "--wait-usr1"]
        rec = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = rec.stdout.readline()
            self.assertIn("waiting for SIGUSR1", line)
            job = frtest.child_of(rec.pid)
            os.kill(rec.pid, signal.SIGSTOP)
            try:
                frtest.wait_all_threads_stopped(rec.pid, "the recorder stopped before the storm")
                os.kill(job, signal.SIGUSR1)
                frtest.wait_state(job, ("Z", None), "the storm ends while the recorder is stopped")
            finally:
                os.kill(rec.pid, signal.SIGCONT)
            out, err = rec.communicate(timeout=120)
        except BaseException:
            rec.kill()
            rec.wait()
            raise
        self.assertEqual(rec.returncode, 0, err)
        made = int(re.search(r"cuda_storm: (\d+) calls", out).group(1))
        info = info_of(trace)
        cuda = probe(info, "cuda")
        self.assertEqual(cuda["events"] + cuda["drops"], made, (cuda, info["losses"]))
        self.assertEqual(cuda_in_file(info), cuda["events"])
        self.assertGreater(cuda["drops"], 0, "the ring never filled")
        # (perf's mmap ring, node-wide, may overflow too while stopped)
        for x in info["losses"]:
            if x["probe"] == "cuda":
                self.assertEqual(x["reason"], "ring_full", x)
        # the ring was full when the drain went on: its first copies were
        # written whole without the planner, its last (the ring under 1/16,
        # nothing more coming) given to the planner again, which made them
        # sparse or, without the images yet, kept them whole itself
        behind = probe(info, "ustack_behind")["events"]
        m = re.search(r"(\d+) copies sparse, (\d+) whole, .*; (\d+) copies whole because "
                      r"the drain was behind", err)
        planned_sparse, planned_whole = int(m.group(1)), int(m.group(2))
        self.assertEqual(behind, int(m.group(3)))
        flags = ustack_flags(trace)
        self.assertEqual(len(flags), cuda["events"])
        self.assertEqual(sum(1 for f in flags if f & FR_USTACK_SPARSE), planned_sparse)
        self.assertEqual(planned_sparse + planned_whole + behind, len(flags))
        self.assertGreater(behind, 0)
        self.assertGreater(planned_sparse + planned_whole, 0)
        # and every stack, whole or sparse, is the program's own
        calls = [e for e in frtest.dump(trace, "--type", "cuda") if e["type"] == "cuda"]
        self.assertEqual(len(calls), cuda["events"])
        for e in calls:
            # the caller's stack: main, called from the program's entry
            stack = e.get("stack") or []
            self.assertEqual(stack[-1:], ["main"], e)
            self.assertEqual(stack[:1], ["_start"], e)


if __name__ == "__main__":
    frtest.main()
