#!/usr/bin/env python3
"""A real PyTorch training loop's step time (root; needs Debian's
python3-torch, and perf for its row): tests/bench/torch_loop.py --time on
one CPU thread, bare, under flightrec record with its default probes (dwarf
stacks, every family that attaches), and under perf record -g -F 99, taken
in turn RUNS times; the median step of each run, then the median over runs.
Prints a table, writes BUILD/bench/torch_step.json, never fails on a number.
Goal: flightrec's step time at most perf -g's.

usage: sudo tests/bench/bench_torch_step.py [--build build] [--runs 5] [--steps 100]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"


def step_ms(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    m = re.search(r"step_ms_median ([0-9.]+)", p.stdout)
    if not m:
        raise RuntimeError(f"{' '.join(cmd)}: {p.stdout[-500:]} {p.stderr[-1500:]}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--steps", type=int, default=100)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_torch_step: needs root")
    if subprocess.run([PYTHON, "-c", "import torch"], capture_output=True).returncode:
        sys.exit(f"bench_torch_step: {PYTHON} has no torch (Debian's python3-torch)")
    tmp = tempfile.mkdtemp(prefix="flightrec-bench-torch-")
    loop = [PYTHON, os.path.join(HERE, "torch_loop.py"), str(a.steps), "--time"]
    rec = os.path.join(a.build, "recorder", "flightrec")
    cmds = {"bare": loop,
            "flightrec": [rec, "record", "-q", "-o", os.path.join(tmp, "t.frec"), "--"] + loop}
    if shutil.which("perf"):
        cmds["perf"] = ["perf", "record", "-q", "-g", "-F", "99", "-B", "-N",
                        "-o", os.path.join(tmp, "perf.data"), "--"] + loop
    res = {k: [] for k in cmds}
    for _ in range(a.runs):
        for k, cmd in cmds.items():
            res[k].append(step_ms(cmd))
    med = {k: statistics.median(v) for k, v in res.items()}
    print("torch_loop.py (2-layer MLP, batch 256, 1 thread), %d steps, %d runs: median step"
          % (a.steps, a.runs))
    print("%-44s %10s %8s" % ("", "ms/step", "x bare"))
    for k, label in (("bare", "bare"), ("flightrec", "flightrec record (default probes, dwarf)"),
                     ("perf", "perf record -g -F 99")):
        if k in med:
            print("%-44s %10.3f %8.3f" % (label, med[k], med[k] / med["bare"]))
    if "perf" in med:
        print("flightrec / perf -g: %.3fx (goal <= 1)" % (med["flightrec"] / med["perf"]))
    out = os.path.join(a.build, "bench")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "torch_step.json")
    with open(path, "w") as f:
        json.dump({"runs": res, "median_ms": med,
                   "x_bare": {k: v / med["bare"] for k, v in med.items()},
                   "flightrec_over_perf": med["flightrec"] / med["perf"] if "perf" in med else None},
                  f, indent=1)
    shutil.rmtree(tmp, ignore_errors=True)
    print("results: " + path)


if __name__ == "__main__":
    main()
