#!/usr/bin/env python3
"""Per-call cost of the cuda probes (root).  Prints a table, writes JSON,
never fails on a number.

A cudaMalloc + cudaFree pair on the stand-in libcudart, timed by
tests/bench/cuda_callbench (mean over PAIRS calls, median over RUNS runs):
  bare         no probes
  floor        a bare uprobe + uretprobe writing one ring-buffer event each,
               on both functions (the least a probe can cost on this kernel)
  flightrec    flightrec record --probes cuda --stack fp (argument capture,
               pointer read at return, caller's stack, per-thread pairing);
               and the same with --stack dwarf (16 KiB of stack per call),
               and dwarf with the syscalls family on too (what the job pays
               for system-call tracing next to the cuda probes; the kernel's
               uretprobe system call of each return is not recorded)
The ratio that matters is (flightrec - bare) / (floor - bare): the cuda
family's cost over the floor.  Target: at most 1.15.

usage: sudo tests/bench/bench_cuda.py [--build build] [--runs 5] [--pairs 100000]
                                     [--recorder PATH]  (another flightrec, to compare)
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile


def ns_per_pair(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    m = re.search(r"([0-9.]+) ns per pair", p.stdout)
    if not m:
        raise RuntimeError(f"{cmd}: {p.stdout} {p.stderr}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pairs", type=int, default=100000)
    ap.add_argument("--recorder", help="the flightrec binary to measure (default: the build's)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_cuda: needs root")
    b = a.build
    lib = os.path.join(b, "samples", "cudart", "libcudart.so.12")
    bench = [os.path.join(b, "tests", "bench", "cuda_callbench"), lib, str(a.pairs)]
    floor = [os.path.join(b, "tests", "bench", "uprobe_floor"), lib, "--"]
    rec = a.recorder or os.path.join(b, "recorder", "flightrec")
    tmp = tempfile.mkdtemp(prefix="flightrec-bench-cuda-")
    res = {"bare": [], "floor": [], "flightrec": [], "flightrec_dwarf": [],
           "flightrec_dwarf_syscalls": []}
    for i in range(a.runs):
        res["bare"].append(ns_per_pair(bench))
        res["floor"].append(ns_per_pair(floor + bench))
        res["flightrec"].append(ns_per_pair([rec, "record", "-q", "-o", os.path.join(tmp, "c.frec"),
                                             "--probes", "cuda", "--stack", "fp",
                                             "--lib", f"cuda={lib}", "--"] + bench))
        res["flightrec_dwarf"].append(ns_per_pair([rec, "record", "-q", "-o", os.path.join(tmp, "d.frec"),
                                                   "--probes", "cuda", "--stack", "dwarf",
                                                   "--lib", f"cuda={lib}", "--"] + bench))
        res["flightrec_dwarf_syscalls"].append(ns_per_pair(
            [rec, "record", "-q", "-o", os.path.join(tmp, "s.frec"), "--probes", "cuda,syscalls",
             "--stack", "dwarf", "--lib", f"cuda={lib}", "--"] + bench))
    med = {k: statistics.median(v) for k, v in res.items()}
    over = {k: med[k] - med["bare"] for k in med}
    print("cudaMalloc + cudaFree pair, %d pairs per run, %d runs, medians" % (a.pairs, a.runs))
    print("%-28s %12s %14s %10s" % ("", "ns/pair", "added ns/pair", "x floor"))
    for k, label in (("bare", "no probes"), ("floor", "bare uprobe+ringbuf (floor)"),
                     ("flightrec", "flightrec, --stack fp"),
                     ("flightrec_dwarf", "flightrec, --stack dwarf"),
                     ("flightrec_dwarf_syscalls", "  same, with syscalls")):
        ratio = over[k] / over["floor"] if over["floor"] > 0 and k != "bare" else float("nan")
        print("%-28s %12.1f %14.1f %10.2f" % (label, med[k], over[k], ratio))
    out = os.path.join(b, "bench")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "bench_cuda.json")
    with open(path, "w") as f:
        json.dump({"runs": res, "median_ns_per_pair": med,
                   "ratio_over_floor": over["flightrec"] / over["floor"] if over["floor"] > 0 else None,
                   "ratio_over_floor_dwarf": over["flightrec_dwarf"] / over["floor"] if over["floor"] > 0 else None},
                  f, indent=1)
    print("results: " + path)


if __name__ == "__main__":
    main()
