#!/usr/bin/env python3
"""How close `flightrec-analyze findings` comes to the truth (root).  Records
samples/train_causes with each cause alone and two together, every shape
of samples/train_shapes (alone, two at a time, and clean), and a 4-rank
samples/nccl_train job (blocking NCCL with a slow rank, asynchronous NCCL
whose ranks poll cudaEventQuery like a watchdog, with and without a slow
rank: the truth is the delay injected, (factor - 1) x compute-ms a step on
each of the 3 other ranks), and prints each
finding's cost against the time the sample itself measured spending in the
cause (its "truth" line), the spread of cost/truth over the runs, and for
the shapes the first finding and the steps counted.  Prints a table, writes
build/bench/findings.json, never fails on a number: the band
tests/integration/test_findings.py asserts (cost within 30% of the truth)
is read from this spread.

usage: sudo tests/bench/bench_findings.py [--build build] [--runs 3] [--steps 40]
"""
import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile

NCCL_STEPS, NCCL_COMPUTE_MS, NCCL_FACTOR = 12, 100, 1.5
# (name, slow rank, asynchronous NCCL with a watchdog's event polls)
NCCL_CASES = [("nccl blocking straggler", True, False), ("nccl watchdog straggler", True, True),
              ("nccl watchdog clean", False, True)]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nccl_run(build, d, slow, watchdog):
    rec = os.path.join(build, "recorder", "flightrec")
    trace = os.path.join(d, "nccl.frec")
    train = [os.path.join(build, "samples", "nccl_train"), "--steps", str(NCCL_STEPS),
             "--compute-ms", str(NCCL_COMPUTE_MS)]
    if slow:
        train += ["--slow-rank", "2", "--slow-factor", str(NCCL_FACTOR)]
    env = dict(os.environ, FLIGHTREC_FAKE_NCCL_TIMEOUT_S="60")
    probes = "cpu,syscalls,nccl"
    if watchdog:
        env["FLIGHTREC_FAKE_NCCL_ASYNC"] = "1"
        train += ["--wait", "query"]
        probes += ",cuda"
    p = subprocess.run([rec, "record", "-q", "-o", trace, "--force", "--probes", probes, "--",
                        os.path.join(build, "samples", "launch_ranks"), "--ranks", "4",
                        "--master", f"127.0.0.1:{free_port()}", "--"] + train,
                       capture_output=True, text=True, timeout=300, env=env)
    if p.returncode:
        sys.exit(f"bench_findings: nccl record failed:\n{p.stderr}")
    return trace

KIND_OF = {"dataloader": "dataloader", "pageable": "pageable_copy",
           "checkpoint": "sync_checkpoint", "host_sync": "host_sync",
           "launch_bound": "launch_bound"}
CASES = [["dataloader"], ["pageable"], ["checkpoint"], ["host_sync"], ["launch_bound"],
         ["dataloader", "pageable"], ["checkpoint", "host_sync"], ["launch_bound", "dataloader"]]
# samples/train_shapes, written apart from the loop the rules were developed
# on: (name, its arguments, the kinds it causes); the clean shapes cause none
SHAPE_KIND_OF = {"host_sync": "host_sync", "checkpoint": "sync_checkpoint",
                 "dataloader": "dataloader"}
SHAPES = [
    ("per-op-sync", ["--compute", "per-op-sync"], ["host_sync"]),
    ("checkpoint", ["--checkpoint"], ["sync_checkpoint"]),
    ("loader-proc", ["--input", "loader-proc", "--slow"], ["dataloader"]),
    ("pin-thread", ["--input", "pin-thread", "--slow"], ["dataloader"]),
    ("per-op-sync+checkpoint", ["--compute", "per-op-sync", "--checkpoint", "--ckpt-mib", "8"],
     ["host_sync", "sync_checkpoint"]),
    ("loader-proc+checkpoint", ["--input", "loader-proc", "--slow", "--checkpoint", "--ckpt-mib", "8"],
     ["dataloader", "sync_checkpoint"]),
    ("pin-thread+checkpoint", ["--input", "pin-thread", "--slow", "--checkpoint", "--ckpt-mib", "8"],
     ["dataloader", "sync_checkpoint"]),
    ("pin-thread+per-op-sync", ["--input", "pin-thread", "--slow", "--compute", "per-op-sync"],
     ["dataloader", "host_sync"]),
    ("two-streams+loader-proc", ["--compute", "two-streams", "--input", "loader-proc", "--slow"],
     ["dataloader"]),
    ("graph+checkpoint", ["--compute", "graph", "--checkpoint", "--ckpt-mib", "8"], ["sync_checkpoint"]),
    ("clean plain", [], []),
    ("clean two-streams", ["--compute", "two-streams"], []),
    ("clean graph", ["--compute", "graph"], []),
    ("clean loader-proc", ["--input", "loader-proc"], []),
    ("clean pin-thread", ["--input", "pin-thread"], []),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--steps", type=int, default=40)
    a = ap.parse_args()
    rec = os.path.join(a.build, "recorder", "flightrec")
    ana = os.path.join(a.build, "analyzer", "flightrec-analyze")
    sample = os.path.join(a.build, "samples", "train_causes")
    if not os.path.exists(sample):
        sys.exit(f"bench_findings: {sample} not built")
    rows = []
    shapes = os.path.join(a.build, "samples", "train_shapes")
    with tempfile.TemporaryDirectory() as d:
        for name, args, kinds in SHAPES:
            for run in range(a.runs):
                trace = os.path.join(d, "shape.frec")
                p = subprocess.run([rec, "record", "-q", "-o", trace, "--force", "--probes",
                                    "cpu,syscalls,cuda,sched", "--freq", "999", "--", shapes,
                                    "--dir", d] + args,
                                   capture_output=True, text=True, timeout=300)
                if p.returncode:
                    sys.exit(f"bench_findings: record failed:\n{p.stderr}")
                line = [x for x in p.stdout.splitlines() if x.startswith("truth ")][-1]
                truth = {SHAPE_KIND_OF[k[:-3]]: float(v)
                         for k, v in re.findall(r"(\w+_ms)=(\S+)", line)}
                js = json.loads(subprocess.run([ana, "findings", trace, "--json"], check=True,
                                               capture_output=True, text=True).stdout)
                top = js["findings"][0]["kind"] if js["findings"] else "-"
                for kind in kinds or ["(none)"]:
                    f = next((x for x in js["findings"] if x["kind"] == kind), None)
                    rows.append({"case": "shape " + name, "run": run, "kind": kind,
                                 "truth_ms": truth.get(kind, 0.0),
                                 "cost_ms": f and f["cost_ms"], "steps": js["steps"],
                                 "first": top, "n_findings": len(js["findings"])})
        for name, slow, watchdog in NCCL_CASES:
            truth = 3 * NCCL_STEPS * (NCCL_FACTOR - 1) * NCCL_COMPUTE_MS if slow else 0.0
            for run in range(a.runs):
                trace = nccl_run(a.build, d, slow, watchdog)
                js = json.loads(subprocess.run([ana, "findings", trace, "--json"], check=True,
                                               capture_output=True, text=True).stdout)
                top = js["findings"][0]["kind"] if js["findings"] else "-"
                kind = "straggler" if slow else "(none)"
                f = next((x for x in js["findings"] if x["kind"] == kind), None)
                rows.append({"case": name, "run": run, "kind": kind, "truth_ms": truth,
                             "cost_ms": f and f["cost_ms"], "steps": js["steps"], "first": top,
                             "n_findings": len(js["findings"])})
        for causes in CASES:
            for run in range(a.runs):
                trace = os.path.join(d, "run.frec")
                args = [sample, "--steps", str(a.steps), "--dir", d]
                args += ["--" + c.replace("_", "-") for c in causes]
                p = subprocess.run([rec, "record", "-q", "-o", trace, "--force", "--probes",
                                    "cpu,syscalls,cuda", "--freq", "999", "--"] + args,
                                   capture_output=True, text=True, timeout=300)
                if p.returncode:
                    sys.exit(f"bench_findings: record failed:\n{p.stderr}")
                line = [x for x in p.stdout.splitlines() if x.startswith("truth ")][-1]
                truth = {KIND_OF[k[:-3]]: float(v) for k, v in re.findall(r"(\w+_ms)=(\S+)", line)}
                js = json.loads(subprocess.run([ana, "findings", trace, "--json"], check=True,
                                               capture_output=True, text=True).stdout)
                for c in causes:
                    kind = KIND_OF[c]
                    f = next((x for x in js["findings"] if x["kind"] == kind), None)
                    rows.append({"case": "+".join(causes), "run": run, "kind": kind,
                                 "truth_ms": truth.get(kind), "cost_ms": f and f["cost_ms"]})
    print(f"{'case':<34} {'kind':<16} {'truth ms':>9} {'cost ms':>9} {'cost/truth':>10}"
          f" {'min-max ratio':>14}")
    for case in dict.fromkeys(r["case"] for r in rows):
        for kind in dict.fromkeys(r["kind"] for r in rows if r["case"] == case):
            rs = [r for r in rows if r["case"] == case and r["kind"] == kind]
            truth = statistics.median(r["truth_ms"] for r in rs)
            if kind == "(none)":
                print(f"{case:<34} {kind:<16} findings per run: "
                      f"{[r['n_findings'] for r in rs]}, steps {[r['steps'] for r in rs]}")
                continue
            got = [r["cost_ms"] for r in rs if r["cost_ms"] is not None]
            cost = statistics.median(got) if got else float("nan")
            ratios = [r["cost_ms"] / r["truth_ms"] for r in rs
                      if r["cost_ms"] is not None and r["truth_ms"]]
            spread = f"{min(ratios):.2f}-{max(ratios):.2f}" if ratios else "-"
            extra = ""
            if "steps" in rs[0]:
                extra = f"  first {[r['first'] for r in rs]} steps {[r['steps'] for r in rs]}"
            print(f"{case:<34} {kind:<16} {truth:>9.1f} {cost:>9.1f} "
                  f"{cost / truth if truth else float('nan'):>10.3f} {spread:>14}"
                  f"{'' if len(got) == len(rs) else '  (not found in some runs)'}{extra}")
    os.makedirs(os.path.join(a.build, "bench"), exist_ok=True)
    out = os.path.join(a.build, "bench", "findings.json")
    with open(out, "w") as fh:
        json.dump(rows, fh, indent=1)
    print(f"(medians of {a.runs} runs; every run in {out})")


if __name__ == "__main__":
    main()
