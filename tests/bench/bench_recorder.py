#!/usr/bin/env python3
"""Recorder and analyzer benchmark (root).  Prints tables and writes the
results as JSON; it never fails on a number.

  1. Slowdown of a fixed-work CPU program (samples/cpu_split --rounds) under
     `flightrec record` at 99 Hz and under `perf record -g -F 99`, interleaved
     in one run, medians of several runs, as ratios to the bare run.
  2. Bytes per CPU sample on disk.
  3. Drain throughput: samples/syscall_storm under the syscalls probe; events
     per second recorded and events dropped (target: 1 M ev/s, zero drops),
     also with a stack on every call into a 1 MiB ring (what the ring's
     record size costs: the drops).
  4. Analyzer `flame --kind cpu` peak memory on a short and a long trace with
     the same distinct stacks (target: bounded by distinct stacks).

usage: sudo tests/bench/bench_recorder.py [--build build] [--runs 7] [--out DIR]
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
import time


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def elapsed_of(stdout):
    m = re.search(r"elapsed ([0-9.]+) s", stdout)
    if not m:
        raise RuntimeError("no elapsed time in: " + stdout)
    return float(m.group(1))


def wait_rss(cmd):
    """Runs cmd; returns (returncode, wall seconds, peak RSS in MiB)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    return os.waitstatus_to_exitcode(status), time.monotonic() - t0, ru.ru_maxrss / 1024.0


def summary_numbers(stderr):
    cpu = re.search(r"recorder CPU ([0-9.]+) s", stderr)
    dropped = re.search(r" ([0-9]+) dropped", stderr)
    return (float(cpu.group(1)) if cpu else None, int(dropped.group(1)) if dropped else None)


def events_of(analyze, trace, name):
    out = run([analyze, "info", trace]).stdout
    m = re.search(rf"^\s+{name}\s+([0-9]+)\s+([0-9]+)\s*$", out, re.M)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=1700, help="cpu_split rounds (~3 s here)")
    ap.add_argument("--out", default=None, help="results directory (default BUILD/bench)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_recorder: needs root (it records with eBPF)")
    rec = os.path.join(a.build, "recorder", "flightrec")
    ana = os.path.join(a.build, "analyzer", "flightrec-analyze")
    cpu_split = os.path.join(a.build, "samples", "cpu_split")
    storm = os.path.join(a.build, "samples", "syscall_storm")
    outdir = a.out or os.path.join(a.build, "bench")
    os.makedirs(outdir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="flightrec-bench-")
    perf = shutil.which("perf")
    results = {"date": time.strftime("%Y-%m-%dT%H:%M:%S"), "kernel": os.uname().release,
               "cpus": os.cpu_count()}

    # 1 + 2: slowdown and bytes per sample
    times = {"bare": [], "flightrec": [], "flightrec_fp": [], "perf": [], "perf_dwarf": []}
    rec_cpu, bytes_per_sample, bytes_per_sample_fp, drops = [], [], [], []
    work = [cpu_split, "--rounds", str(a.rounds)]
    for i in range(a.runs):
        times["bare"].append(elapsed_of(run(work).stdout))
        for mode, key, sizes in (("dwarf", "flightrec", bytes_per_sample),
                                 ("fp", "flightrec_fp", bytes_per_sample_fp)):
            trace = os.path.join(tmp, f"cpu{i}-{mode}.frec")
            p = run([rec, "record", "-o", trace, "--freq", "99", "--stack", mode, "--"] + work)
            times[key].append(elapsed_of(p.stdout))
            c, d = summary_numbers(p.stderr)
            if mode == "dwarf":
                rec_cpu.append(c)
            drops.append(d)
            samples, _ = events_of(ana, trace, "cpu")
            if samples:
                sizes.append(os.path.getsize(trace) / samples)
        if perf:
            pd = os.path.join(tmp, f"perf{i}.data")
            p = run([perf, "record", "-q", "-g", "-F", "99", "-o", pd, "--"] + work)
            times["perf"].append(elapsed_of(p.stdout))
            p = run([perf, "record", "-q", "--call-graph", "dwarf", "-F", "99", "-o", pd, "--"] + work)
            times["perf_dwarf"].append(elapsed_of(p.stdout))
    med = {k: statistics.median(v) for k, v in times.items() if v}
    results["cpu_slowdown"] = {
        "runs": a.runs, "rounds": a.rounds, "median_s": med,
        "ratio_flightrec": med["flightrec"] / med["bare"],
        "ratio_perf": med["perf"] / med["bare"] if "perf" in med else None,
        "recorder_cpu_s_median": statistics.median([c for c in rec_cpu if c is not None]),
        "drops": sum(d or 0 for d in drops),
        "bytes_per_sample_median": statistics.median(bytes_per_sample) if bytes_per_sample else None,
        "bytes_per_sample_fp_median": statistics.median(bytes_per_sample_fp) if bytes_per_sample_fp else None,
        "all_s": times,
    }
    print("\n1. CPU slowdown, fixed work (%d rounds of samples/cpu_split), %d runs, medians" % (a.rounds, a.runs))
    print("%-30s %10s %10s" % ("", "seconds", "ratio"))
    print("%-30s %10.4f %10s" % ("bare", med["bare"], "1.000"))
    print("%-30s %10.4f %10.4f" % ("flightrec, 99 Hz, --stack dwarf", med["flightrec"], med["flightrec"] / med["bare"]))
    print("%-30s %10.4f %10.4f" % ("flightrec, 99 Hz, --stack fp", med["flightrec_fp"], med["flightrec_fp"] / med["bare"]))
    if "perf" in med:
        print("%-30s %10.4f %10.4f" % ("perf record -g -F 99", med["perf"], med["perf"] / med["bare"]))
        print("%-30s %10.4f %10.4f" % ("perf --call-graph dwarf -F 99", med["perf_dwarf"], med["perf_dwarf"] / med["bare"]))
    else:
        print("perf not installed: no comparison")
    print("recorder's own CPU time per run (median): %.3f s; drops: %d" %
          (results["cpu_slowdown"]["recorder_cpu_s_median"], results["cpu_slowdown"]["drops"]))
    if bytes_per_sample:
        print("\n2. Bytes per CPU sample on disk (whole file / samples, median): dwarf %.1f, fp %.1f" %
              (results["cpu_slowdown"]["bytes_per_sample_median"],
               results["cpu_slowdown"]["bytes_per_sample_fp_median"] or 0))

    # 3: drain throughput
    print("\n3. Drain throughput: samples/syscall_storm, 3 s")
    print("%-34s %12s %12s %10s %10s" % ("probe", "events", "M ev/s", "dropped", "rec CPU s"))
    results["drain"] = []
    for label, extra, threads in (("syscalls, no stacks, 1 thread", ["--no-syscall-stacks"], 1),
                                  ("syscalls, no stacks, 2 threads", ["--no-syscall-stacks"], 2),
                                  ("syscalls + user stacks, 1 thread", [], 1),
                                  ("same, 2 threads, 1 MiB ring", ["--buffer-mib", "1"], 2)):
        trace = os.path.join(tmp, "storm.frec")
        p = run([rec, "record", "-o", trace, "--probes", "syscalls", "--stack", "fp"] + extra +
                ["--", storm, "3", str(threads)])
        ev, dr = events_of(ana, trace, "syscalls")
        c, _ = summary_numbers(p.stderr)
        rate = ev / 3.0 / 1e6
        results["drain"].append({"case": label, "events": ev, "drops": dr, "mev_per_s": rate,
                                 "recorder_cpu_s": c})
        print("%-34s %12d %12.2f %10d %10.2f" % (label, ev, rate, dr, c or 0))

    # 4: analyzer memory vs trace length
    print("\n4. Analyzer flame --kind cpu: peak memory vs trace length (same program, same stacks)")
    print("%-20s %10s %12s %10s %10s" % ("trace", "samples", "file KiB", "wall s", "RSS MiB"))
    results["analyzer_memory"] = []
    for secs in (2, 16):
        trace = os.path.join(tmp, f"long{secs}.frec")
        run([rec, "record", "-q", "-o", trace, "--probes", "cpu", "--freq", "4999", "--stack", "fp",
             "--", cpu_split, str(secs)])
        samples, _ = events_of(ana, trace, "cpu")
        rc, wall, rss = wait_rss([ana, "flame", trace, "--kind", "cpu"])
        results["analyzer_memory"].append({"seconds": secs, "samples": samples,
                                           "file_bytes": os.path.getsize(trace),
                                           "wall_s": wall, "rss_mib": rss, "rc": rc})
        print("%-20s %10d %12.1f %10.3f %10.1f" % (f"{secs} s at 4999 Hz", samples,
              os.path.getsize(trace) / 1024, wall, rss))

    path = os.path.join(outdir, "bench_recorder.json")
    with open(path, "w") as f:
        json.dump(results, f, indent=1)
    print("\nresults: " + path)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
