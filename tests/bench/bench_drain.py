#!/usr/bin/env python3
"""Does the drain keep up (root)?  Prints tables, writes JSON, never fails on
a number.

For each stack mode - `--stack fp`, `--stack dwarf` (sparse copies, the
default) and dwarf with `FLIGHTREC_USTACK_SPARSE=0` (every copy whole) - at
the default buffer:

  1. The sustained rate: tests/bench/cuda_paced makes probed CUDA calls at
     a steady rate for a few seconds, at rising rates, until a rate loses
     something; the highest rate the job made with nothing lost (no
     ring_full, no chunk_lost: every call the program made is in the file)
     is the rate the recorder holds.  Each rate is recorded --runs times and
     holds only if every run lost nothing.  The job's own ceiling under the
     probes ("as fast as it can") is recorded too: a rate above it cannot be
     made, so the held rate is at most that, and is that when those runs
     lost nothing.
  2. The storm: samples/cuda_storm 100000 (200,000 cudaMalloc/cudaFree
     calls, each a cudaFree waiting for the device) recorded with the
     defaults, --runs times: events lost, the recorder's CPU, and how many
     raw stacks were written whole because the drain was behind.

The recorder's CPU is its own (user + system, from its end-of-run summary),
over its whole life.

usage: sudo tests/bench/bench_drain.py [--build build] [--runs 2] [--seconds 2]
           [--rates 25000,50000,...] [--pairs 100000] [--busy] [--out DIR]
           [--recorder PATH]  (another flightrec, to compare)
  --busy: every recording with another process keeping a CPU busy
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

MODES = (("fp", ["--stack", "fp"], {}),
         ("dwarf sparse", ["--stack", "dwarf"], {}),
         ("dwarf whole", ["--stack", "dwarf"], {"FLIGHTREC_USTACK_SPARSE": "0"}))


def record(rec, trace, args, env_extra, target, busy):
    env = dict(os.environ, **env_extra)
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    try:
        p = subprocess.run([rec, "record", "-o", trace] + args + ["--"] + target,
                           capture_output=True, text=True, env=env)
    finally:
        if burner:
            burner.kill()
            burner.wait()
    if p.returncode:
        raise RuntimeError(f"flightrec exited {p.returncode}: {p.stderr[-2000:]}")
    err = p.stderr
    m = re.search(r"[ (]cuda ([0-9]+)[,)]", err)
    res = {"recorded": int(m.group(1)) if m else 0,
           "dropped": int(re.search(r" ([0-9]+) dropped", err).group(1)),
           "recorder_cpu_s": float(re.search(r"recorder CPU ([0-9.]+) s", err).group(1))}
    m = re.search(r"cuda ([0-9]+) \(ring_full", err)
    res["ring_full"] = int(m.group(1)) if m else 0
    m = re.search(r"writer ([0-9]+) \(chunk_lost", err)
    res["chunk_lost"] = int(m.group(1)) if m else 0
    m = re.search(r"([0-9]+) copies whole because the drain was behind", err)
    res["whole_behind"] = int(m.group(1)) if m else None
    m = re.search(r"cuda_(?:paced|storm): ([0-9]+) calls(?: in ([0-9.]+) s)?", p.stdout)
    res["made"] = int(m.group(1))
    if m.group(2):
        res["rate"] = res["made"] / float(m.group(2))
    return res


def row(name, asked, r):
    print("%-14s %10s %10d %10.0f %10d %10d %10.2f %12s" % (
        name, asked, r["made"], r.get("rate", 0), r["ring_full"], r["chunk_lost"],
        r["recorder_cpu_s"], "-" if r["whole_behind"] is None else r["whole_behind"]))


HEAD = "%-14s %10s %10s %10s %10s %10s %10s %12s" % (
    "mode", "asked/s", "made", "made/s", "ring_full", "chunk_lost", "rec CPU s", "whole/behind")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--rates", default="25000,50000,100000,150000,200000,300000,400000")
    ap.add_argument("--pairs", type=int, default=100000)
    ap.add_argument("--busy", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--recorder", default=None, help="another flightrec, to compare")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_drain: needs root (it records with eBPF)")
    rec = a.recorder or os.path.join(a.build, "recorder", "flightrec")
    paced = os.path.join(a.build, "tests", "bench", "cuda_paced")
    storm = os.path.join(a.build, "samples", "cuda_storm")
    outdir = a.out or os.path.join(a.build, "bench")
    os.makedirs(outdir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="flightrec-drain-")
    trace = os.path.join(tmp, "t.frec")
    rates = [int(x) for x in a.rates.split(",")]
    results = {"date": time.strftime("%Y-%m-%dT%H:%M:%S"), "cpus": os.cpu_count(),
               "busy": a.busy, "seconds": a.seconds, "runs": a.runs, "modes": {}}

    print("1. Sustained rate at the default buffer: cuda_paced, %.0f s a run, %d runs a rate%s"
          % (a.seconds, a.runs, ", a CPU kept busy" if a.busy else ""))
    print(HEAD)
    for name, args, env in MODES:
        mode = results["modes"].setdefault(name, {"rates": [], "held": 0})
        ceiling = [record(rec, trace, args + ["--probes", "cuda"], env,
                          [paced, str(a.seconds), "0"], a.busy) for _ in range(a.runs)]
        mode["ceiling"] = ceiling
        for r in ceiling:
            row(name, "max", r)
        for rate in rates:
            runs = [record(rec, trace, args + ["--probes", "cuda"], env,
                           [paced, str(a.seconds), str(rate)], a.busy) for _ in range(a.runs)]
            mode["rates"].append({"asked": rate, "runs": runs})
            for r in runs:
                row(name, rate, r)
            # held: every run of the rate lost nothing, at what the job made
            # of it (a loaded machine may keep the job below the rate asked)
            if not all(r["dropped"] == 0 and r["recorded"] == r["made"] for r in runs):
                break
            mode["held"] = max(mode["held"], min(r["rate"] for r in runs))
            if max(r["rate"] for r in runs) < 0.9 * rate:
                break  # the job's own ceiling: higher rates cannot be made
        if all(r["dropped"] == 0 and r["recorded"] == r["made"] for r in ceiling):
            # as fast as the job goes, nothing lost
            mode["held"] = max(mode["held"], min(r["rate"] for r in ceiling))
    print("\n%-14s %24s %24s" % ("mode", "held, no loss (ev/s)", "job's ceiling (ev/s)"))
    for name, _, _ in MODES:
        m = results["modes"][name]
        print("%-14s %24.0f %24.0f" % (name, m["held"], min(r["rate"] for r in m["ceiling"])))

    print("\n2. The storm: cuda_storm %d (%d calls), defaults, %d runs%s"
          % (a.pairs, 2 * a.pairs, a.runs, ", a CPU kept busy" if a.busy else ""))
    print(HEAD)
    for name, args, env in MODES:
        runs = [record(rec, trace, args, env, [storm, str(a.pairs)], a.busy)
                for _ in range(a.runs)]
        results["modes"][name]["storm"] = runs
        for r in runs:
            row(name, "-", r)
    path = os.path.join(outdir, "bench_drain.json")
    with open(path, "w") as f:
        json.dump(results, f, indent=1)
    print("\nresults: " + path)
    os.unlink(trace) if os.path.exists(trace) else None
    os.rmdir(tmp)


if __name__ == "__main__":
    main()
