"""Straggler analysis on a real 4-rank job recorded as two "nodes": two
launchers (ranks 0-1 and 2-3) under two recorders writing two files, the
stand-in libnccl's collectives being real barriers over loopback TCP.

  straggler      rank 2 slowed x1.5: named, cost per step within 25% of the
                 injected delay (0.5 x compute-ms), evidence names
                 slow_data_loader; every rank appears with its launcher rank
  no straggler   the same job without the slow rank: "straggler": null
  clock offset   one recorder's realtime anchors shifted by 250 ms: the
                 right rank is still named and that node's skew is 250 ms
                 within SKEW_TOLERANCE_MS

Not a test of the stand-in (samples/nccl/test_nccl_train.sh) nor of the
verdict's arithmetic (tests/unit/test_analyzer_stragglers.c)."""
import json
import os
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frtest  # noqa: E402

COMPUTE_MS = 100     # the injected delay is half of it: well above the
STEPS = 20           # scheduling noise of a small, oversubscribed VM
SKEW_TOLERANCE_MS = 10.0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def record_two_nodes(d, slow, offset_b=None):
    """Records ranks 0-1 into nodeA.frec and 2-3 into nodeB.frec at once."""
    port = free_port()
    train = [frtest.sample("nccl_train"), "--steps", str(STEPS), "--compute-ms", str(COMPUTE_MS)]
    if slow:
        train += ["--slow-rank", "2", "--slow-factor", "1.5"]
    procs = []
    for name, first, extra in (("nodeA", 0, []),
                               ("nodeB", 2, [] if offset_b is None
                                else ["--test-realtime-offset", str(offset_b)])):
        cmd = [frtest.FLIGHTREC, "record", "-o", os.path.join(d, name + ".frec"),
               "--probes", "cpu,syscalls,nccl"] + extra + [
               "--", frtest.sample("launch_ranks"), "--ranks", "4", "--first-rank", str(first),
               "--local-ranks", "2", "--master", f"127.0.0.1:{port}", "--"] + train
        env = dict(os.environ, FLIGHTREC_FAKE_NCCL_TIMEOUT_S="60")
        procs.append((cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                            text=True, env=env)))
    for cmd, p in procs:
        out, err = p.communicate(timeout=150)
        if p.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} exited {p.returncode}:\n{out}\n{err}")
    return [os.path.join(d, "nodeA.frec"), os.path.join(d, "nodeB.frec")]


def stragglers(files):
    p = frtest.analyze("stragglers", "--json", *files)
    return json.loads(p.stdout)


class Stragglers(frtest.Case):
    def check_ranks(self, result):
        ranks = sorted((r["rank"], r["rank_source"]) for r in result["ranks"])
        self.assertEqual(ranks, [(0, "env"), (1, "env"), (2, "env"), (3, "env")], result["ranks"])
        for r in result["ranks"]:
            self.assertGreaterEqual(r["steps"], STEPS - 2, r)
            self.assertIsNotNone(r["straggler_score"], r)
            self.assertEqual(r["file"], 0 if r["rank"] < 2 else 1, r)

    def check_straggler(self, result):
        s = result["straggler"]
        self.assertIsNotNone(s, result.get("no_straggler_reason"))
        self.assertEqual(s["rank"], 2, s)
        injected = 0.5 * COMPUTE_MS
        self.assertLess(abs(s["cost_ms_per_step"] - injected), 0.25 * injected, s)
        self.assertIn("slow_data_loader", s["evidence"])
        self.assertGreater(s["confidence"], 0)

    def test_straggler(self):
        d = frtest.workdir("stragglers_slow")
        files = record_two_nodes(d, slow=True)
        result = stragglers(files)
        self.check_ranks(result)
        self.check_straggler(result)
        text = frtest.analyze("stragglers", *files).stdout
        self.assertIn("straggler: rank 2", text)

    def test_no_straggler(self):
        d = frtest.workdir("stragglers_none")
        result = stragglers(record_two_nodes(d, slow=False))
        self.check_ranks(result)
        self.assertIsNone(result["straggler"], result)
        self.assertTrue(result["no_straggler_reason"])

    def test_clock_offset(self):
        d = frtest.workdir("stragglers_offset")
        result = stragglers(record_two_nodes(d, slow=True, offset_b=0.250))
        self.check_ranks(result)
        self.check_straggler(result)
        nodes = {os.path.basename(n["file"]): n for n in result["nodes"]}
        self.assertTrue(nodes["nodeA.frec"]["reference"], nodes)
        b = nodes["nodeB.frec"]
        self.assertTrue(b["refined"], b)
        self.assertLess(abs(b["skew_ms"] - 250.0), SKEW_TOLERANCE_MS, b)
        self.assertIsNotNone(b["uncertainty_ms"])
        self.assertLess(b["uncertainty_ms"], SKEW_TOLERANCE_MS, b)


if __name__ == "__main__":
    frtest.main()
