"""`export clickhouse` into Debian's clickhouse-server 18.16, started here as
nobody on 127.0.0.1 (a free port, a temporary config and data directory),
with three sets of real recordings:

  stragglers   a 4-rank job as two "nodes" (ranks 0-1 and 2-3, rank 2
               slowed x1.5), exported together as one job
  oom          a ring-mode snapshot written by an OOM (cuda_train's 16 GiB
               try_huge_alloc)
  rdma         rdma_pingpong, saved under a file name holding a tab, a line
               break, quotes and a backslash: the name must come back as is

The queries of analyzer/CLICKHOUSE.md (read from it, so the page is what is
tested) are compared with the analyzer's own answers: the straggler rank
and cost with `stragglers --json` (both the verdict's rows and the SQL
over the collectives), mean step and wait per rank, findings per kind with
`findings --json`, the OOM's top holder with `memory --json`, every folded
stack and total with `flame --format folded`, connections with `rdma
--json`.  Exporting everything again changes no count.  A wrong port, a
missing database without --create, and the stopped server each give one
line naming the URL and a non-zero exit.

Not a test of the analyses themselves (test_stragglers, test_ring,
test_rdma do that)."""
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import frtest

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(HERE, "..", "..", "analyzer", "CLICKHOUSE.md")
PING_BOUND_S = 90          # liveness bound, not a timing window
WEIRD = "rdma\tq'uo\"te\\back\nslash.frec"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def doc_queries():
    with open(DOC) as f:
        text = f.read()
    return {m.group(1): m.group(2).strip()
            for m in re.finditer(r"```sql\n-- query: (\w+)\n(.*?)```", text, re.S)}


class Server:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="frec-ch-")
        self.http = free_port()
        self.tcp = free_port()
        d = self.dir
        for sub in ("data", "tmp", "log", "user_files"):
            os.makedirs(os.path.join(d, sub))
        with open(os.path.join(d, "config.xml"), "w") as f:
            f.write(f"""<yandex>
  <logger><level>warning</level><log>{d}/log/server.log</log><errorlog>{d}/log/err.log</errorlog></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>{self.http}</http_port><tcp_port>{self.tcp}</tcp_port>
  <path>{d}/data/</path><tmp_path>{d}/tmp/</tmp_path><user_files_path>{d}/user_files/</user_files_path>
  <users_config>users.xml</users_config>
  <default_profile>default</default_profile><default_database>default</default_database>
  <mark_cache_size>268435456</mark_cache_size><uncompressed_cache_size>0</uncompressed_cache_size>
  <max_concurrent_queries>20</max_concurrent_queries>
  <timezone>UTC</timezone>
</yandex>
""")
        with open(os.path.join(d, "users.xml"), "w") as f:
            f.write("<yandex><profiles><default/></profiles><users><default><password/>"
                    "<networks><ip>127.0.0.1</ip></networks><profile>default</profile>"
                    "<quota>default</quota></default></users><quotas><default/></quotas></yandex>")
        subprocess.run(["chown", "-R", "nobody:nogroup", d], check=True)
        self.out = open(os.path.join(d, "console.log"), "w")
        self.proc = subprocess.Popen(
            ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
             "clickhouse-server", f"--config-file={d}/config.xml", f"--pid-file={d}/pid"],
            stdout=self.out, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{self.http}"
        deadline = time.monotonic() + PING_BOUND_S
        while True:
            try:
                with urllib.request.urlopen(self.url + "/ping", timeout=5) as r:
                    if r.read().strip() == b"Ok.":
                        break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                log = open(os.path.join(d, "console.log")).read()[-2000:]
                self.stop()
                raise AssertionError(f"clickhouse-server never answered /ping: {log}")
            time.sleep(0.2)

    def query(self, sql):
        """Rows of sql as dicts (JSONEachRow)."""
        data = (sql + "\nFORMAT JSONEachRow").encode()
        req = urllib.request.Request(self.url + "/", data=data)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                body = r.read().decode()
        except urllib.error.HTTPError as e:
            raise AssertionError(f"{sql}\n-> {e.read().decode()[:500]}")
        return [json.loads(line) for line in body.splitlines() if line]

    def count(self, table):
        return int(self.query(f"SELECT count() AS n FROM flightrec.{table}")[0]["n"])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.out.close()


def record_two_nodes(d):
    port = free_port()
    train = [frtest.sample("nccl_train"), "--steps", "16", "--compute-ms", "60",
             "--slow-rank", "2", "--slow-factor", "1.5"]
    procs = []
    for name, first in (("nodeA", 0), ("nodeB", 2)):
        cmd = [frtest.FLIGHTREC, "record", "-o", os.path.join(d, name + ".frec"),
               "--probes", "cpu,syscalls,nccl", "--",
               frtest.sample("launch_ranks"), "--ranks", "4", "--first-rank", str(first),
               "--local-ranks", "2", "--master", f"127.0.0.1:{port}", "--"] + train
        env = dict(os.environ, FLIGHTREC_FAKE_NCCL_TIMEOUT_S="60")
        procs.append((cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                            text=True, env=env)))
    for cmd, p in procs:
        out, err = p.communicate(timeout=150)
        if p.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} exited {p.returncode}:\n{out}\n{err}")
    return [os.path.join(d, "nodeA.frec"), os.path.join(d, "nodeB.frec")]


def record_oom(d):
    out = os.path.join(d, "job.frec")
    p = frtest.record(out, ["--ring", "64K", "--chunk-kib", "64", "--probes", "cuda,cpu",
                            "--freq", "999"],
                      ["--", frtest.sample("cuda_train"), "--steps", "400", "--step-ms", "2"])
    snap = os.path.join(d, "job-1.frec")
    assert f"snapshot {snap} (oom at " in p.stderr, p.stderr
    return snap


def record_rdma(d):
    trace = os.path.join(d, "pp.frec")
    env = dict(os.environ, FLIGHTREC_FAKE_RDMA_SHM=f"flightrec-fakerdma-ch-{os.getpid()}")
    cmd = [frtest.FLIGHTREC, "record", "-o", trace, "--probes", "rdma,cpu", "--",
           frtest.sample("rdma_pingpong")]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    weird = os.path.join(d, WEIRD)
    shutil.copyfile(trace, weird)
    return weird


def export(url, files, *extra, check=True):
    return frtest.analyze("export", "clickhouse", *files, "--url", url, *extra, check=check)


def folded_lines(trace, kind):
    out = frtest.analyze("flame", trace, "--kind", kind, "--format", "folded").stdout
    rows = []
    for line in out.splitlines():
        stack, _, value = line.rpartition(" ")
        rows.append((stack, int(value)))
    return sorted(rows)


def sql_str(s):
    """s as a ClickHouse string literal"""
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def r3(x):
    return None if x is None else round(float(x), 3)


class ExportClickhouse(frtest.Case):
    @classmethod
    def setUpClass(cls):
        if not shutil.which("clickhouse-server") or not shutil.which("setpriv"):
            raise AssertionError("clickhouse-server (and setpriv) are needed: scripts/install-deps "
                                 "installs Debian's clickhouse-server")
        d = frtest.workdir("export_clickhouse")
        os.makedirs(os.path.join(d, "s"))
        cls.strag = record_two_nodes(os.path.join(d, "s"))
        os.makedirs(os.path.join(d, "o"))
        cls.oom = record_oom(os.path.join(d, "o"))
        os.makedirs(os.path.join(d, "r"))
        cls.rdma = record_rdma(os.path.join(d, "r"))
        cls.sets = [cls.strag, [cls.oom], [cls.rdma]]
        cls.server = Server()
        cls.queries = doc_queries()

    @classmethod
    def tearDownClass(cls):
        server = getattr(cls, "server", None)
        if server:
            server.stop()
            shutil.rmtree(server.dir, ignore_errors=True)

    def export_all(self, sets=None):
        for files in sets or self.sets:
            p = export(self.server.url, files, "--create")
            self.assertIn(" rows of ", p.stderr)

    def counts(self):
        return {t: self.server.count(t) for t in
                ("recordings", "job_recordings", "findings", "stragglers", "collectives",
                 "rank_steps", "stacks", "failed_allocations", "rdma_connections")}

    def job_of(self, trace):
        """(job id, recording id) of a trace: its id as CLICKHOUSE.md defines
        it, the SHA-256 of the 128-byte file header"""
        with open(trace, "rb") as f:
            rid = hashlib.sha256(f.read(128)).hexdigest()[:32]
        rows = self.server.query(f"SELECT job_id, file FROM flightrec.recordings "
                                 f"WHERE recording_id = '{rid}'")
        self.assertEqual(len(rows), 1, (trace, rows))
        return rows[0]["job_id"], rid

    def test_1_export_and_queries(self):
        srv = self.server
        # no table yet and no --create: refused, one line, nothing written
        p = export(srv.url, [self.oom], check=False)
        self.assertNotEqual(p.returncode, 0)
        lines = p.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn(srv.url, lines[0])
        self.assertIn("--create", lines[0])

        self.export_all()
        before = self.counts()
        self.assertEqual(before["recordings"], 4)
        self.assertEqual(before["job_recordings"], 4)  # one row per recording of a job
        for t, n in before.items():
            if t != "failed_allocations":
                self.assertGreater(n, 0, t)
        # again, the two nodes now as one archive of them: the same
        # recordings (ids from the file headers), so the same counts
        archive = os.path.join(os.path.dirname(self.strag[0]), "job.tar.zst")
        frtest.analyze("archive", *self.strag, "-o", archive)
        self.export_all([[archive], [self.oom], [self.rdma]])
        self.assertEqual(self.counts(), before)

        # an insert the server refuses (a table of another shape): one line,
        # non-zero, and the recording is not listed; fixed and exported
        # again, every count is back
        srv.query("DROP TABLE flightrec.rdma_connections")
        srv.query("CREATE TABLE flightrec.rdma_connections (recording_id String, "
                  "start DateTime, other UInt8) ENGINE = MergeTree() "
                  "PARTITION BY toYYYYMM(start) ORDER BY recording_id")
        p = export(srv.url, [self.rdma], "--create", check=False)
        self.assertNotEqual(p.returncode, 0)
        lines = p.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn(srv.url, lines[0])
        self.assertIn("rdma_connections", lines[0])
        self.assertEqual(self.counts()["recordings"], 3)
        srv.query("DROP TABLE flightrec.rdma_connections")
        self.export_all([[self.rdma]])
        self.assertEqual(self.counts(), before)

        # the file name with a tab, a line break, quotes and a backslash
        rows = srv.query("SELECT file FROM flightrec.recordings WHERE has(probes, 'rdma')")
        self.assertEqual([r["file"] for r in rows], [WEIRD])

        q = self.queries
        self.assertEqual(set(q), {"oom_by_top_holder", "straggler_per_run", "findings_by_kind",
                                  "straggler_cross_rank", "steps_per_rank", "hot_cpu_stacks"})
        for name in sorted(q):
            print(f"--- {name}\n" + "\n".join(json.dumps(r) for r in srv.query(q[name])), flush=True)

        # stragglers: the verdict, the SQL over collectives, steps per rank
        sj = json.loads(frtest.analyze("stragglers", "--json", *self.strag).stdout)
        self.assertIsNotNone(sj["straggler"], sj)
        job, _ = self.job_of(self.strag[0])
        per_run = srv.query(q["straggler_per_run"])
        self.assertEqual([(r["job_id"], int(r["rank"]), r3(r["cost_ms_per_step"]),
                           r3(r["confidence"])) for r in per_run],
                         [(job, sj["straggler"]["rank"], r3(sj["straggler"]["cost_ms_per_step"]),
                           r3(sj["straggler"]["confidence"]))])
        cross = srv.query(q["straggler_cross_rank"])
        self.assertEqual([(r["job_id"], int(r["straggler_rank"])) for r in cross],
                         [(job, sj["straggler"]["rank"])])
        steps = srv.query(q["steps_per_rank"])
        self.assertEqual(sorted((int(r["rank"]), int(r["steps"]), r3(r["mean_step_ms"]),
                                 r3(r["mean_wait_ms"])) for r in steps if r["job_id"] == job),
                         sorted((r["rank"], r["steps"], r3(r["mean_step_ms"]), r3(r["mean_wait_ms"]))
                                for r in sj["ranks"]))

        # findings by kind: the sum over the three jobs of `findings --json`
        want = {}
        for files in self.sets:
            fj = json.loads(frtest.analyze("findings", "--json", *files).stdout)
            for f in fj["findings"]:
                w = want.setdefault(f["kind"], [0, 0.0])
                w[0] += 1
                w[1] += f["cost_ms"] or 0.0
        got = {r["kind"]: (int(r["findings"]), float(r["cost_ms"]))
               for r in srv.query(q["findings_by_kind"])}
        self.assertEqual(set(got), set(want))
        for kind, (n, cost) in want.items():
            self.assertEqual(got[kind][0], n, kind)
            self.assertAlmostEqual(got[kind][1], cost, delta=0.002, msg=kind)
        self.assertIn("oom", got)
        # each finding's where and evidence, strings as the analyzer wrote them
        for files in self.sets:
            fj = json.loads(frtest.analyze("findings", "--json", *files).stdout)
            job, _ = self.job_of(files[0])
            rows = srv.query(f"SELECT kind, frames, evidence FROM flightrec.findings "
                             f"WHERE job_id = '{job}' AND listed = 1 ORDER BY position")
            self.assertEqual([(r["kind"], r["frames"], r["evidence"]) for r in rows],
                             [(f["kind"], f["where"], f["evidence"]) for f in fj["findings"]])

        # the OOM: its top holder and bytes as `memory --json` says
        mj = json.loads(frtest.analyze("memory", "--json", self.oom).stdout)
        fail = mj["failed_allocations"][0]
        top = fail["top_holders"][0]
        oom = srv.query(q["oom_by_top_holder"])
        self.assertEqual([(r["top_holder"], int(r["snapshots"]), int(r["top_holder_bytes"]),
                           int(r["largest_request_bytes"])) for r in oom],
                         [(";".join(top["stack"]), 1, top["bytes"], fail["bytes"])])
        rec = srv.query("SELECT trigger FROM flightrec.recordings WHERE trigger != ''")
        self.assertEqual(rec, [{"trigger": "oom"}])

        # stacks: exactly the folded lines of each trace alone
        for trace in self.strag + [self.oom, self.rdma]:
            _, rid = self.job_of(trace)
            for kind in ("cpu", "mem-inuse"):
                rows = srv.query(f"SELECT stack, value FROM flightrec.stacks "
                                 f"WHERE recording_id = '{rid}' AND kind = '{kind}'")
                got = sorted((r["stack"], int(r["value"])) for r in rows)
                if kind == "mem-inuse" and trace != self.oom:
                    self.assertEqual(got, [])
                    continue
                self.assertEqual(got, folded_lines(trace, kind), (trace, kind))
                self.assertGreater(len(got), 0, (trace, kind))

        # rdma: per connection as `rdma --json`
        rj = json.loads(frtest.analyze("rdma", "--json", self.rdma).stdout)
        rows = srv.query("SELECT local_qp, ops, bytes, completions, errors, p99_ns "
                         "FROM flightrec.rdma_connections")
        self.assertEqual(sorted((int(r["local_qp"]), int(r["ops"]), int(r["bytes"]),
                                 int(r["completions"]), int(r["errors"]),
                                 r3(int(r["p99_ns"]) / 1e3)) for r in rows),
                         sorted((c["local_qp"], c["ops"], c["bytes"], c["completions"], c["errors"],
                                 r3(c["latency_us"]["p99"])) for c in rj["connections"]))

    def test_1b_many_recordings(self):
        """640 one-rank nodes from samples/gen_ranks: the delete that makes a
        second export replace the first names every recording, about 23 KB of
        SQL, which in the URL passed the server's limit on a request line
        (HTTP 400, no message, nothing exported) from about 450 files on"""
        srv = self.server
        d = os.path.join(frtest.workdir("export_many"), "nodes")
        subprocess.run([frtest.sample("gen_ranks"), "--ranks", "640", "--ranks-per-node", "1",
                        "--steps", "6", "--straggler", "401", "--late-ms", "10", "--out", d],
                       check=True, stdout=subprocess.DEVNULL)
        files = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".frec"))
        self.assertEqual(len(files), 640)
        for _ in range(2):  # the second replaces the first
            p = export(srv.url, files, "--create", "--database", "many")
            self.assertIn(" rows of 640 recordings", p.stderr)
            counts = {t: int(srv.query(f"SELECT count() AS n FROM many.{t}")[0]["n"])
                      for t in ("recordings", "job_recordings", "stragglers", "collectives")}
            self.assertEqual(counts, {"recordings": 640, "job_recordings": 640,
                                      "stragglers": 640, "collectives": 640 * 6}, counts)
        rows = srv.query("SELECT rank FROM many.stragglers WHERE is_straggler = 1")
        self.assertEqual([int(r["rank"]) for r in rows], [401], rows)

    def test_2_refused(self):
        srv = self.server
        wrong = f"http://127.0.0.1:{free_port()}"
        p = export(wrong, [self.oom], "--create", check=False)
        self.assertNotEqual(p.returncode, 0)
        lines = p.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn(wrong, lines[0])
        srv.stop()
        p = export(srv.url, [self.oom], "--create", check=False)
        self.assertNotEqual(p.returncode, 0)
        lines = p.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn(srv.url, lines[0])
        self.assertNotIn(" rows of ", p.stderr)


if __name__ == "__main__":
    frtest.main()
