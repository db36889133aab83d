"""Where a process ran: a job recorded inside a cgroup made by the test and
shaped like a container's (docker-<64 hex>.scope, and a Kubernetes pod's
cri-containerd one), with SLURM_JOB_ID and SLURM_STEP_ID in its
environment, shows exactly that container id, pod UID, job and step, and
the cgroup path, in info --json, info's text, SQLite, summary, the
archive's manifest and pprof labels; and archive --redact leaves none of
those strings in the archive's bytes, or in what the analyzer reads from
it."""
import gzip
import io
import json
import os
import sqlite3
import subprocess
import tarfile
import frtest

CONTAINER = "3f" * 32
POD = "5d3c2a10-7b4e-4c2a-9e1f-0a1b2c3d4e5f"
POD_CONTAINER = "9c" * 32
JOB, STEP = "918273", "4"


def run_in_cgroup(trace, rel, extra_env=None):
    """Records samples/cpu_split moved into ROOT/rel (made here, removed
    after); returns the cgroup path as the kernel names it."""
    root = frtest.cgroup2_root()
    if root is None:
        raise AssertionError("no cgroup2 mount on this machine")
    cg = os.path.join(root, rel)
    os.makedirs(cg, exist_ok=True)
    try:
        env = dict(os.environ, **(extra_env or {}))
        cmd = [frtest.FLIGHTREC, "record", "-o", trace, "--probes", "cpu", "--",
               "sh", "-c", f"echo $$ > {cg}/cgroup.procs && exec {frtest.sample('cpu_split')} 1"]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        if p.returncode:
            raise AssertionError(p.stderr)
    finally:
        # the job has exited: the directory is empty and goes
        for d in (cg, os.path.dirname(cg)):
            try:
                os.rmdir(d)
            except OSError:
                pass
    return "/" + rel


def job_process(info):
    return next(p for p in info["files"][0]["processes"] if p["comm"] == "cpu_split")


class Identity(frtest.Case):
    @classmethod
    def setUpClass(cls):
        frtest.require_root()
        cls.dir = frtest.workdir("identity")
        cls.trace = os.path.join(cls.dir, "docker.frec")
        cls.cgroup = run_in_cgroup(cls.trace, f"flightrec-test.slice/docker-{CONTAINER}.scope",
                                   {"SLURM_JOB_ID": JOB, "SLURM_STEP_ID": STEP})
        cls.info = json.loads(frtest.analyze("info", "--json", cls.trace).stdout)

    def test_info(self):
        p = job_process(self.info)
        self.assertEqual(p["cgroup"], self.cgroup)
        self.assertEqual(p["container_id"], CONTAINER)
        self.assertEqual(p["container_runtime"], "docker")
        self.assertEqual((p["slurm_job"], p["slurm_step"]), (JOB, STEP))
        self.assertIsNone(p["pod_uid"])
        text = frtest.analyze("info", self.trace).stdout
        self.assertIn(f"ran in container docker {CONTAINER[:12]}, slurm job {JOB} step {STEP}",
                      text)

    def test_sqlite_summary_pprof(self):
        db = os.path.join(self.dir, "d.db")
        frtest.analyze("sqlite", self.trace, "-o", db, "--force")
        row = sqlite3.connect(db).execute(
            "SELECT cgroup, container_id, container_runtime, slurm_job, slurm_step, pod_uid "
            "FROM processes WHERE comm = 'cpu_split'").fetchone()
        self.assertEqual(row, (self.cgroup, CONTAINER, "docker", JOB, STEP, None))
        summary = json.loads(frtest.analyze("summary", self.trace, "--format", "json").stdout)
        self.assertIn(f"container docker {CONTAINER[:12]}",
                      summary["recording"]["files"][0]["ran_in"])
        pb = os.path.join(self.dir, "cpu.pb.gz")
        frtest.analyze("flame", self.trace, "--format", "pprof", "-o", pb)
        with gzip.open(pb) as f:
            blob = f.read()
        # the label strings are in the profile's string table
        for s in (b"container_id", CONTAINER.encode(), b"slurm_job", JOB.encode()):
            self.assertIn(s, blob)

    def test_manifest_and_redact(self):
        plain = os.path.join(self.dir, "plain.tar.zst")
        frtest.analyze("archive", self.trace, "-o", plain, "--force")
        manifest = json.loads(subprocess.run(["tar", "-xOf", plain, "MANIFEST.json"],
                                             capture_output=True, check=True).stdout)
        t = manifest["traces"][0]
        self.assertEqual((t["containers"], t["pods"], t["slurm_jobs"]), ([CONTAINER], [], [JOB]))
        red = os.path.join(self.dir, "redacted.tar.zst")
        frtest.analyze("archive", self.trace, "-o", red, "--redact", "--force")
        raw = subprocess.run(["zstd", "-dc", red], capture_output=True, check=True).stdout
        for secret in (CONTAINER, self.cgroup, "flightrec-test.slice"):
            self.assertNotIn(secret.encode(), raw, secret)
        # and not in any member's decompressed chunks (the redacted trace
        # read back by the analyzer itself)
        with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
            names = tar.getnames()
            manifest = json.load(tar.extractfile("MANIFEST.json"))
        self.assertEqual(manifest["traces"][0]["containers"], [])
        self.assertEqual(manifest["traces"][0]["slurm_jobs"], [])
        self.assertIn("docker.frec", names)
        info = json.loads(frtest.analyze("info", "--json", red).stdout)
        p = job_process(info)
        self.assertIsNone(p["container_id"])
        self.assertIsNone(p["slurm_job"])
        self.assertNotIn(CONTAINER, json.dumps(info))
        self.assertTrue(p["cgroup"].startswith("<h:"), p["cgroup"])

    def test_pod(self):
        trace = os.path.join(self.dir, "pod.frec")
        rel = (f"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
               f"{POD.replace('-', '_')}.slice/cri-containerd-{POD_CONTAINER}.scope")
        root = frtest.cgroup2_root()
        os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
        try:
            cg = run_in_cgroup(trace, rel, {"POD_NAMESPACE": "training"})
        finally:
            for d in ("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
                      f"{POD.replace('-', '_')}.slice", "kubepods.slice/kubepods-burstable.slice",
                      "kubepods.slice"):
                try:
                    os.rmdir(os.path.join(root, d))
                except OSError:
                    pass
        p = job_process(json.loads(frtest.analyze("info", "--json", trace).stdout))
        self.assertEqual(p["cgroup"], cg)
        self.assertEqual((p["pod_uid"], p["pod_namespace"]), (POD, "training"))
        self.assertEqual((p["container_id"], p["container_runtime"]), (POD_CONTAINER, "containerd"))
        self.assertIsNone(p["slurm_job"])


if __name__ == "__main__":
    frtest.main()
