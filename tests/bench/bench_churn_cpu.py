#!/usr/bin/env python3
"""The recorder's CPU per new process (root; a table, never pass/fail).

Three workloads under `flightrec record --ring 16M --probes cpu`, each a shell
loop of N processes that do nothing themselves, so what is measured is the
recorder's work per process (process records, mappings, /proc reads, exit
bookkeeping), not the events a busy process makes:
  fork       `( : )`: a subshell, fork only (the parent's files, all known)
  exec       `/bin/true`: fork and exec of a binary the recorder knows
  python     `python3 -c pass`: fork and exec of a known interpreter
The idle recorder's CPU per second (a `sleep` of the same length) is taken
off, and what is left is divided by N.  Medians of --runs.

usage: sudo tests/bench/bench_churn_cpu.py [--build build] [--recorder PATH]
           [-n 2000] [--runs 3]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

LOOPS = {
    "fork": "i=0; while [ $i -lt {n} ]; do ( : ); i=$((i+1)); done",
    "exec": "i=0; while [ $i -lt {n} ]; do /bin/true; i=$((i+1)); done",
    "python": "i=0; while [ $i -lt {n} ]; do " + sys.executable + " -c pass; i=$((i+1)); done",
}


def record(rec, out, script):
    t0 = time.monotonic()
    p = subprocess.run([rec, "record", "-o", out, "--ring", "16M", "--probes", "cpu",
                        "--", "sh", "-c", script], capture_output=True, text=True)
    wall = time.monotonic() - t0
    m = re.search(r"recorder CPU ([0-9.]+) s in its ([0-9.]+) s", p.stderr)
    if not m:
        raise RuntimeError(p.stderr)
    return float(m.group(1)), float(m.group(2)), wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--recorder")
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    rec = a.recorder or os.path.join(os.path.abspath(a.build), "recorder", "flightrec")
    out = "/tmp/flightrec-bench-churn.frec"
    print(f"# {rec}, N = {a.n}, medians of {a.runs}")
    print(f"{'workload':>8} {'N':>6} {'wall s':>7} {'CPU s':>7} {'idle CPU s':>10} "
          f"{'us/process':>10}")
    for name, loop in LOOPS.items():
        n = a.n if name != "python" else max(1, a.n // 10)
        per, walls, cpus, idles = [], [], [], []
        for _ in range(a.runs):
            cpu, life, wall = record(rec, out, loop.format(n=n))
            idle_cpu, idle_life, _ = record(rec, out, f"sleep {max(life - 1.0, 0.5):.2f}")
            idle = idle_cpu / idle_life * life
            per.append((cpu - idle) / n * 1e6)
            walls.append(wall)
            cpus.append(cpu)
            idles.append(idle)
        print(f"{name:>8} {n:>6} {statistics.median(walls):>7.2f} "
              f"{statistics.median(cpus):>7.2f} {statistics.median(idles):>10.2f} "
              f"{statistics.median(per):>10.0f}", flush=True)


if __name__ == "__main__":
    main()
