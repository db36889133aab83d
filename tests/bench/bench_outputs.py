#!/usr/bin/env python3
"""Benchmark of the outputs users open directly (not a timed test; prints a
table and never fails on a number): `report` and `sqlite` (and `timeline`
with --timeline) on a synthetic trace of 10 M events written with the writer
API by bench_outputs_gen.c (compiled here against the build's libraries).
Prints wall time and peak RSS of each command.  Targets: under a minute,
memory bounded by live state (not by the number of events).

usage: tests/bench/bench_outputs.py [--build build] [--events 10000000]
                                    [--out DIR] [--timeline]
"""
import argparse
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def measure(cmd):
    t0 = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    # ru_maxrss of children is the max over all waited-for children: run
    # each command through /usr/bin/time when available for its own peak.
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if p.returncode != 0:
        print("FAILED: %s\n%s" % (" ".join(cmd), p.stderr), file=sys.stderr)
    return wall, rss if rss > before else None, p


def peak_rss_kib(cmd):
    """Runs cmd under /usr/bin/time -f %M; returns (wall_s, rss_kib, proc)."""
    if os.path.exists("/usr/bin/time"):
        t0 = time.monotonic()
        p = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, capture_output=True, text=True)
        wall = time.monotonic() - t0
        lines = p.stderr.strip().splitlines()
        rss = int(lines[-1]) if lines and lines[-1].isdigit() else None
        if p.returncode != 0:
            print("FAILED: %s\n%s" % (" ".join(cmd), p.stderr), file=sys.stderr)
        return wall, rss, p
    return measure(cmd)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--out", default="/tmp/flightrec-bench-outputs")
    ap.add_argument("--timeline", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    build = os.path.abspath(a.build)
    gen = os.path.join(a.out, "bench_outputs_gen")
    libs = [os.path.join(build, "format", "libfrec_format.a")]
    subprocess.run(["cc", "-O2", "-std=c11", "-D_GNU_SOURCE", "-o", gen,
                    os.path.join(HERE, "bench_outputs_gen.c"),
                    "-I" + os.path.join(ROOT, "tests", "unit"), "-I" + os.path.join(ROOT, "format"),
                    "-I" + os.path.join(ROOT, "bpf")] + libs + ["-lzstd", "-lz", "-lpthread"], check=True)
    trace = os.path.join(a.out, "bench-%d.frec" % a.events)
    if not os.path.exists(trace):
        t0 = time.monotonic()
        subprocess.run([gen, trace, str(a.events)], check=True)
        print("generated %s (%d events, %.1f MiB) in %.1f s" %
              (trace, a.events, os.path.getsize(trace) / 2**20, time.monotonic() - t0))
    analyze = os.path.join(build, "analyzer", "flightrec-analyze")
    runs = [("report", [analyze, "report", trace, "-o", os.path.join(a.out, "bench.html")]),
            ("sqlite", [analyze, "sqlite", trace, "-o", os.path.join(a.out, "bench.db"), "--force"])]
    if a.timeline:
        runs.append(("timeline", [analyze, "timeline", trace, "-o", os.path.join(a.out, "bench.json")]))
    print("%-10s %10s %14s %14s" % ("command", "wall s", "peak RSS MiB", "output MiB"))
    for name, cmd in runs:
        wall, rss, _ = peak_rss_kib(cmd)
        out = cmd[cmd.index("-o") + 1]
        size = os.path.getsize(out) / 2**20 if os.path.exists(out) else float("nan")
        print("%-10s %10.1f %14s %14.1f" % (name, wall, "%.1f" % (rss / 1024) if rss else "?", size))


if __name__ == "__main__":
    main()
