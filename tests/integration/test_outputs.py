"""Records samples/cpu_split (cpu and syscalls probes) and checks the three
outputs users open directly against the analyzer's own text outputs:
sqlite (the documented example queries: top stack by samples == the first
line of `flame` folded sorted by value, syscall counts == `info --json`),
timeline (parses, required fields, X slices nest per thread, counters
monotonic), report (self-contained, the CPU section holds the workload)."""
import json
import os
import re
import sqlite3
import frtest

SECONDS = 2
DOC = os.path.join(os.path.dirname(__file__), "..", "..", "analyzer", "SQLITE_SCHEMA.md")


def doc_query(name):
    with open(DOC) as f:
        text = f.read()
    m = re.search(r"-- query: " + re.escape(name) + r"\n(.*?)```", text, re.S)
    assert m, name
    return m.group(1)


class Outputs(frtest.Case):
    @classmethod
    def setUpClass(cls):
        frtest.require_root()
        d = frtest.workdir("outputs")
        cls.dir = d
        cls.trace = os.path.join(d, "cpu.frec")
        frtest.record(cls.trace, ["--probes", "cpu,syscalls"],
                      ["--", frtest.sample("cpu_split"), str(SECONDS)])
        cls.db = os.path.join(d, "cpu.db")
        frtest.analyze("sqlite", cls.trace, "-o", cls.db, "--force")

    def test_top_stack_equals_flame(self):
        stacks = frtest.folded(self.trace)
        top_stack, top_n = max(stacks.items(), key=lambda kv: (kv[1], kv[0]))
        con = sqlite3.connect(self.db)
        rows = con.execute(doc_query("top_stacks_by_samples")).fetchall()
        self.assertEqual(rows[0][1], top_n, rows[:3])
        self.assertEqual(tuple(rows[0][0].split(";")), top_stack)
        self.assertEqual(con.execute("SELECT count(*) FROM cpu_samples").fetchone()[0],
                         sum(stacks.values()))

    def test_sqlite_holds_the_samples_split(self):
        """A truth, not only agreement: cpu_split does 3 units of work in
        compute_heavy for 1 in compute_light, so 75% of their samples in the
        database are compute_heavy's (the band of test_cpu_profile.py)."""
        con = sqlite3.connect(self.db)
        heavy = light = 0
        for stack, n in con.execute(doc_query("top_stacks_by_samples")).fetchall():
            frames = stack.split(";")
            heavy += n if "compute_heavy" in frames else 0
            light += n if "compute_light" in frames else 0
        self.assertGreater(heavy + light, 0)
        self.assertAlmostEqual(heavy / (heavy + light), 0.75, delta=0.10,
                               msg=f"heavy {heavy} light {light}")

    def test_syscall_counts_equal_info(self):
        info = json.loads(frtest.analyze("info", "--json", self.trace).stdout)
        top = {s["name"]: s for s in info["files"][0]["top_syscalls"]}
        con = sqlite3.connect(self.db)
        rows = {r[0]: r for r in con.execute(doc_query("syscalls_by_time")).fetchall()}
        self.assertTrue(top, info["files"][0])
        for name, s in top.items():
            self.assertIn(name, rows)
            self.assertEqual(rows[name][1], s["count"], name)
            self.assertEqual(rows[name][2], s["total_ns"], name)
            self.assertEqual(rows[name][4], s["failed"], name)

    def test_every_documented_query_runs(self):
        con = sqlite3.connect(self.db)
        with open(DOC) as f:
            names = re.findall(r"-- query: (\w+)", f.read())
        self.assertGreaterEqual(len(names), 8)
        rows = {name: con.execute(doc_query(name)).fetchall() for name in names}
        # not only runs: a CPU and syscalls recording has rows where it must,
        # and none from probes it did not record
        for name in ("top_stacks_by_samples", "syscalls_by_time"):
            self.assertTrue(rows[name], name)
        for name in ("cuda_api_summary", "memory_peaks", "leaks", "failed_allocations",
                     "slowest_collectives_per_rank", "rdma_latency_percentiles"):
            self.assertEqual(rows.get(name, []), [], name)
        self.assertEqual(con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0], "4")

    def test_timeline(self):
        out = os.path.join(self.dir, "cpu.json")
        frtest.analyze("timeline", self.trace, "-o", out)
        with open(out) as f:
            doc = json.load(f)
        events = doc["traceEvents"]
        self.assertTrue(any(e["ph"] == "X" for e in events))
        per_thread = {}
        for e in events:
            for k in ("ph", "ts", "pid", "tid", "name"):
                self.assertIn(k, e, e)
            if e["ph"] == "X":
                self.assertGreaterEqual(e["dur"], 0, e)
                per_thread.setdefault((e["pid"], e["tid"]), []).append((e["ts"], -e["dur"]))
        for slices in per_thread.values():
            slices.sort()
            open_ends = []
            for ts, neg in slices:
                end = ts - neg
                while open_ends and open_ends[-1] <= ts + 1e-9:
                    open_ends.pop()
                if open_ends:
                    self.assertLessEqual(end, open_ends[-1] + 1e-9, "crossing slices")
                open_ends.append(end)
        counters = {}
        for e in events:
            if e["ph"] == "C":
                key = (e["pid"], e["name"])
                self.assertGreaterEqual(e["ts"], counters.get(key, e["ts"]))
                counters[key] = e["ts"]
        names = [e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"]
        self.assertTrue(any("cpu_split" in n for n in names), names)

    def test_report(self):
        out = os.path.join(self.dir, "cpu.html")
        frtest.analyze("report", self.trace, "-o", out)
        with open(out) as f:
            html = f.read()
        self.assertIn("Content-Security-Policy", html)
        self.assertNotIn("<script src", html)
        self.assertIn("compute_heavy", html)
        self.assertIn('"syscalls":{"calls":', html)


class CudaOutputs(frtest.Case):
    """The GPU memory numbers of samples/cuda_train (exact by construction)
    reach the database and the report."""
    STEPS = 3
    PEAK = 1_946_157_056 + STEPS * (1 << 20)

    def test_peak_in_sqlite_and_report(self):
        d = frtest.workdir("outputs_cuda")
        trace = os.path.join(d, "train.frec")
        frtest.record(trace, ["--probes", "cuda"],
                      ["--", frtest.sample("cuda_train"), "--steps", str(self.STEPS)])
        db = os.path.join(d, "train.db")
        frtest.analyze("sqlite", trace, "-o", db)
        con = sqlite3.connect(db)
        peak = con.execute("SELECT max(peak_bytes) FROM memory_series WHERE mem_kind='device'").fetchone()[0]
        self.assertEqual(peak, self.PEAK)
        failed = con.execute("SELECT count(*) FROM allocations WHERE failed=1").fetchone()[0]
        self.assertEqual(failed, 1)
        html = os.path.join(d, "train.html")
        frtest.analyze("report", trace, "-o", html)
        with open(html) as f:
            page = f.read()
        self.assertIn(str(self.PEAK), page)


if __name__ == "__main__":
    frtest.main()
