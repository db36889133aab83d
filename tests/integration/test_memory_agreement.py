"""One allocation ledger: `memory --json`, the SQLite tables (allocations,
memory_inuse, memory_series) and the report's data agree exactly on every
trace with CUDA memory calls: samples/cuda_train and samples/cuda_hold
recorded with real probes (cuda_hold attached with --pid after it
allocated), the committed sample traces, and a synthetic trace with every
case the ledger knows (tests/unit/make_memory_trace.c: runtime calls around
driver calls, cuMemCreate/cuMemRelease, cudaHostRegister, managed memory, a
missed free, failed allocations and frees, frees of memory allocated before
the recording, two devices, a caching allocator)."""
import glob
import json
import os
import re
import signal
import sqlite3
import subprocess
import frtest

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = sorted(glob.glob(os.path.join(HERE, "..", "fuzz", "corpus", "analyzer", "*-none.frec")))
MAKE_TRACE = os.environ.get("FLIGHTREC_MAKE_MEMORY_TRACE",
                            os.path.join(os.path.dirname(frtest.SAMPLES), "tests", "unit",
                                         "make_memory_trace"))


def key(file, pid, device, space):
    """one series: `memory --json` and the report say pinned_host and device
    -1 (pinned or unknown), SQLite host_pinned and device NULL"""
    pinned = space in ("host_pinned", "pinned_host")
    unknown = device is None or device < 0
    return (file, pid, None if pinned or unknown else device, "host_pinned" if pinned else space)


class MemoryAgreement(frtest.Case):
    @classmethod
    def setUpClass(cls):
        cls.dir = frtest.workdir("memory_agreement")
        cls.traces = []
        synth = os.path.join(cls.dir, "cases.frec")
        subprocess.run([MAKE_TRACE, synth], check=True)
        cls.traces.append(synth)
        train = os.path.join(cls.dir, "train.frec")
        frtest.record(train, ["--probes", "cuda,cpu"],
                      ["--", frtest.sample("cuda_train"), "--steps", "4"])
        cls.traces.append(train)
        cls.traces.append(cls.record_hold())
        cls.traces += FIXTURES

    @classmethod
    def record_hold(cls):
        hold = subprocess.Popen([frtest.sample("cuda_hold"), "60"], stdout=subprocess.PIPE,
                                text=True)
        try:
            line = hold.stdout.readline()
            assert "ready" in line, line
            trace = os.path.join(cls.dir, "hold.frec")
            rec = subprocess.Popen([frtest.FLIGHTREC, "record", "-o", trace, "--probes", "cuda",
                                    "--pid", str(hold.pid)],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            # attached: the recorder says so before it records
            for err in rec.stderr:
                if "recording" in err:
                    break
            hold.send_signal(signal.SIGUSR1)
            out, _ = hold.communicate(timeout=60)
            assert hold.returncode == 0 and "done" in out, out
            rec.send_signal(signal.SIGINT)
            rec.communicate(timeout=60)
            return trace
        finally:
            if hold.poll() is None:
                hold.kill()

    def outputs(self, trace):
        p = frtest.analyze("memory", trace, "--json", check=False)
        if p.returncode == 1 and "no CUDA memory events" in p.stderr:
            mem = {"series": [], "files": []}
        else:
            self.assertEqual(p.returncode, 0, p.stderr)
            mem = json.loads(p.stdout)
        db = os.path.join(self.dir, os.path.basename(trace) + ".db")
        if os.path.exists(db):
            os.unlink(db)
        frtest.analyze("sqlite", trace, "-o", db)
        html = os.path.join(self.dir, os.path.basename(trace) + ".html")
        frtest.analyze("report", trace, "-o", html)
        with open(html) as f:
            m = re.search(r'<script type="application/json" id="fr-data">(.*?)</script>',
                          f.read(), re.S)
        report = json.loads(m.group(1))["mem"] or {"series": []}  # null: no memory events
        return mem, sqlite3.connect(db), report

    def check_trace(self, trace):
        mem, con, report = self.outputs(trace)
        name = os.path.basename(trace)
        series = {key(s["file"], s["pid"], s["device"], s["space"]): s for s in mem["series"]}
        # memory_series: the model's own table
        rows = con.execute("SELECT file_id, pid, device, mem_kind, allocs, alloc_bytes, frees,"
                           " failed, before_frees, peak_bytes, end_bytes, end_count"
                           " FROM memory_series").fetchall()
        self.assertEqual(len(rows), len(series), name)
        for f, pid, dev, kind, allocs, abytes, frees, failed, before, peak, end, endn in rows:
            s = series[key(f, pid, dev, kind)]
            self.assertEqual((allocs, abytes, frees, failed, before, peak, end, endn),
                             (s["allocations"], s["allocated_bytes"], s["frees"],
                              s["failed_allocations"], s["before_recording_frees"],
                              s["peak_bytes"], s["end_bytes"], s["end_allocations"]),
                             (name, s))
        for k, s in series.items():
            f, pid, dev, kind = k
            where = ("file_id=? AND pid=? AND mem_kind" + (" IN ('device','managed')"
                     if kind == "device" else "='host_pinned'") + " AND device IS ?")
            args = (f, pid, dev)
            # allocations: one row per allocation of the ledger
            ok, okb = con.execute("SELECT count(*), coalesce(sum(size_bytes),0) FROM allocations"
                                  f" WHERE failed=0 AND {where}", args).fetchone()
            self.assertEqual((ok, okb), (s["allocations"], s["allocated_bytes"]), (name, k))
            bad = con.execute(f"SELECT count(*) FROM allocations WHERE failed=1 AND {where}",
                              args).fetchone()[0]
            self.assertEqual(bad, s["failed_allocations"], (name, k))
            freed, fbytes = con.execute(
                "SELECT count(*), coalesce(sum(size_bytes),0) FROM allocations WHERE failed=0"
                f" AND free_ns IS NOT NULL AND free_tid IS NOT NULL AND {where}", args).fetchone()
            self.assertEqual((freed, fbytes), (s["frees"], s["freed_bytes"]), (name, k))
            missed = con.execute("SELECT count(*) FROM allocations WHERE failed=0 AND free_ns IS"
                                 f" NOT NULL AND free_tid IS NULL AND {where}", args).fetchone()[0]
            self.assertEqual(missed, s["missed_frees"], (name, k))
            live, lbytes = con.execute(
                "SELECT count(*), coalesce(sum(size_bytes),0) FROM allocations WHERE failed=0"
                f" AND free_ns IS NULL AND {where}", args).fetchone()
            self.assertEqual((live, lbytes), (s["end_allocations"], s["end_bytes"]), (name, k))
            # memory_inuse: the series' curve, its maximum the peak, its last value the end
            w2 = "file_id=? AND pid=? AND device IS ? AND mem_kind=?"
            a2 = (f, pid, dev, kind)
            peak, n = con.execute(f"SELECT coalesce(max(inuse_bytes),0), count(*) FROM memory_inuse"
                                  f" WHERE {w2}", a2).fetchone()
            self.assertEqual(peak, s["peak_bytes"], (name, k))
            self.assertEqual(n, s["allocations"] + s["frees"] + s["missed_frees"], (name, k))
            last = con.execute(f"SELECT inuse_bytes FROM memory_inuse WHERE {w2}"
                               " ORDER BY rowid DESC LIMIT 1", a2).fetchone()
            self.assertEqual(last[0] if last else 0, s["end_bytes"], (name, k))
            total = con.execute(f"SELECT coalesce(sum(delta_bytes),0) FROM memory_inuse"
                                f" WHERE {w2}", a2).fetchone()[0]
            self.assertEqual(total, s["end_bytes"], (name, k))
        # the report's data: the same series, the same numbers
        rs = {key(s["file"], s["pid"], s["device"], s["space"]): s for s in report["series"]}
        self.assertEqual(set(rs), set(series), name)
        for k, s in series.items():
            r = rs[k]
            self.assertEqual((r["allocs"], r["alloc_bytes"], r["frees"], r["failed"],
                              r["before_frees"], r["peak_bytes"], r["end_bytes"], r["end_count"]),
                             (s["allocations"], s["allocated_bytes"], s["frees"],
                              s["failed_allocations"], s["before_recording_frees"],
                              s["peak_bytes"], s["end_bytes"], s["end_allocations"]), (name, k))
        if not mem["series"]:
            for table in ("allocations", "memory_inuse", "memory_series"):
                self.assertEqual(con.execute(f"SELECT count(*) FROM {table}").fetchone()[0], 0,
                                 (name, table))
        device = [s for s in mem["series"] if s["space"] == "device"]
        if device:
            self.assertEqual(report["peak_bytes"], max(f["peak_bytes"] for f in mem["files"]), name)
        con.close()
        return mem

    def test_every_trace_agrees(self):
        self.assertGreaterEqual(len(FIXTURES), 4, FIXTURES)
        with_memory = 0
        for t in self.traces:
            mem = self.check_trace(t)
            with_memory += bool(mem["series"])
        self.assertGreaterEqual(with_memory, 4)

    def test_synthetic_cases_counted_once(self):
        mem, con, _ = self.outputs(self.traces[0])
        dev0 = next(s for s in mem["series"] if s["pid"] == 100 and s["device"] == 0
                    and s["space"] == "device")
        # cudaMalloc around cuMemAlloc_v2: one allocation each, with the inner call's name
        funcs = [r[0] for r in con.execute(
            "SELECT e.name FROM allocations a JOIN enum_cuda_funcs e USING (func)"
            " WHERE a.pid=100 AND a.address IN (40960, 45056)")]
        self.assertEqual(funcs, ["cuMemAlloc_v2", "cuMemAlloc_v2"])
        # 0xA000, 0xB000, managed, cuMemCreate, 0xD000 twice
        self.assertEqual(dev0["allocations"], 6)
        self.assertEqual(dev0["peak_bytes"], 3000 + 700 + (1 << 20) + 2500)  # after the missed free
        pinned = next(s for s in mem["series"] if s["space"] == "pinned_host")
        self.assertEqual((pinned["allocations"], pinned["frees"], pinned["end_bytes"]),
                         (2, 2, 0))
        kinds = dict(con.execute("SELECT mem_kind, count(*) FROM allocations GROUP BY mem_kind"))
        self.assertEqual(kinds, {"device": 14, "managed": 1, "host_pinned": 2})
        con.close()


if __name__ == "__main__":
    frtest.main()
