#!/usr/bin/env python3
"""Per-launch cost of GPU kernel times through the injection library
(flightrec record --gpu-kernels) beside the uprobe path on cudaLaunchKernel
(--probes cuda) (root).  Prints a table, writes BUILD/bench/gpu_launch.json,
never fails on a number.

The workload is tests/bench/probe_callbench cuda-launch on the stand-in
libcudart (cudaLaunchKernel, 1x1 grid, legacy stream; mean ns per launch
over LAUNCHES launches, median over RUNS runs), with the stand-in libcupti
(samples/cupti/) on its library path:
  bare            no recorder, no injection
  injection only  CUDA_INJECTION64_PATH naming libflightrec_cupti.so, no
                  recorder: the CUPTI callbacks and the library by themselves
  cuda            flightrec --probes cuda (the uprobe on cudaLaunchKernel, a
                  stack on one launch in 64 by default; and on every launch
                  with --launch-stack-every 1)
  gpu             flightrec --gpu-kernels --probes gpu: the injected path
                  alone (the launch probe with a stack on every launch, and
                  the kernel records in batches of up to 32)
  both            flightrec --gpu-kernels with the default probes (cuda among
                  them, attached before the start with --lib)
each recorder row with --stack fp and --stack dwarf.  "added" is the row
minus bare; "x cuda" is the gpu row's added cost over the cuda row's of the
same stack mode (injected / uprobe), "x every 1" over the cuda row's with a
stack on every launch, as the injected path takes one.  Each recorded run's trace is read back
(flightrec-analyze info --json): its drops, and its gpu_launch, gpu_kernel
and cuda events against the launches made (LAUNCHES plus probe_callbench's
warm-up), so a row that lost events or a launch without its kernel shows.

What this does not measure: the stand-in's CUPTI is not NVIDIA's.  Its
fake GPU (a kernel record written per launch, on the launching thread) is
part of every injected row, so "injection only" is flightrec's library on
a stand-in; NVIDIA's CUPTI callback and activity cost needs a machine with
a GPU.

usage: sudo tests/bench/bench_gpu_launch.py [--build build] [--runs 3] [--launches 100000]
                                           [--recorder PATH]
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

WARMUP_LAUNCHES = 1000  # probe_callbench's WARMUP_CALLS, made before timing


def ns_per_launch(cmd, env):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    m = re.search(r"([0-9.]+) ns per iteration", p.stdout)
    if not m:
        raise RuntimeError(f"{' '.join(cmd)}: rc {p.returncode}: {p.stdout} {p.stderr}")
    return float(m.group(1)), p.stderr


def trace_counts(analyze, trace):
    """drops and event counts of one trace, from info --json"""
    info = json.loads(subprocess.run([analyze, "info", "--json", trace], capture_output=True,
                                     text=True, check=True).stdout)["files"][0]
    by_type = {r["name"]: r["count"] for r in info["records_by_type"]}
    return {"drops": info["drops"], "gpu_launch": by_type.get("gpu_launch", 0),
            "gpu_kernel": by_type.get("gpu_kernel", 0), "cuda": by_type.get("cuda", 0)}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--launches", type=int, default=100000)
    ap.add_argument("--recorder", help="the flightrec binary to measure (default: the build's)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_gpu_launch: needs root")
    b = os.path.abspath(a.build)
    rec = a.recorder or os.path.join(b, "recorder", "flightrec")
    analyze = os.path.join(b, "analyzer", "flightrec-analyze")
    lib = os.path.join(b, "samples", "cudart", "libcudart.so.12")
    inject = os.path.join(b, "gpu", "libflightrec_cupti.so")
    work = [os.path.join(b, "tests", "bench", "probe_callbench"), "cuda-launch", lib,
            str(a.launches)]
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(b, "samples", "cupti"))
    env.pop("CUDA_INJECTION64_PATH", None)
    tmp = tempfile.mkdtemp(prefix="flightrec-bench-gpu-")
    trace = os.path.join(tmp, "g.frec")

    def recorded(*opts):
        return [rec, "record", "-q", "-o", trace, "--lib", f"cuda={lib}"] + list(opts) + \
            ["--"] + work

    # name, label, command, environment, recorded
    rows = [("bare", "bare", work, env, False),
            ("inject", "injection only", work, dict(env, CUDA_INJECTION64_PATH=inject), False)]
    for s in ("fp", "dwarf"):
        rows += [
            (f"cuda_{s}", f"cuda, --stack {s}", recorded("--probes", "cuda", "--stack", s), env, True),
            (f"cuda_every1_{s}", f"  same, --launch-stack-every 1",
             recorded("--probes", "cuda", "--stack", s, "--launch-stack-every", "1"), env, True),
            (f"gpu_{s}", f"gpu (--gpu-kernels), --stack {s}",
             recorded("--gpu-kernels", "--probes", "gpu", "--stack", s), env, True),
            (f"both_{s}", f"both (--gpu-kernels, default), {s}",
             recorded("--gpu-kernels", "--stack", s), env, True),
        ]
    res = {r[0]: [] for r in rows}
    counts = {r[0]: [] for r in rows if r[4]}
    for _ in range(a.runs):
        for name, _label, cmd, e, rec_row in rows:
            ns, _err = ns_per_launch(cmd, e)
            res[name].append(ns)
            if rec_row:
                counts[name].append(trace_counts(analyze, trace))
    med = {k: statistics.median(v) for k, v in res.items()}
    made = a.launches + WARMUP_LAUNCHES
    print("cudaLaunchKernel on the stand-in, %d launches per run, %d runs, medians; "
          "%d launches made per run (with the warm-up)" % (a.launches, a.runs, made))
    print("%-38s %9s %9s %7s %9s  %s" % ("", "ns/launch", "added ns", "x cuda", "x every 1",
                                          "per run: drops, gpu_launch/gpu_kernel/cuda events"))
    summary = []
    for name, label, _cmd, _e, rec_row in rows:
        added = med[name] - med["bare"]
        ratio = ratio1 = None
        if name.startswith("gpu_"):
            base = med["cuda_" + name[4:]] - med["bare"]
            base1 = med["cuda_every1_" + name[4:]] - med["bare"]
            ratio = added / base if base > 0 else None
            ratio1 = added / base1 if base1 > 0 else None
        ev = ""
        if rec_row:
            ev = "; ".join("%d, %d/%d/%d" % (c["drops"], c["gpu_launch"], c["gpu_kernel"], c["cuda"])
                           for c in counts[name])
        print("%-38s %9.1f %9s %7s %9s  %s" % (
            label, med[name], "" if name == "bare" else "%.1f" % added,
            "%.2f" % ratio if ratio else "", "%.2f" % ratio1 if ratio1 else "", ev))
        summary.append({"row": name, "label": label.strip(), "ns_per_launch": med[name],
                        "added_ns": added, "ratio_over_cuda": ratio,
                        "ratio_over_cuda_every1": ratio1,
                        "counts": counts.get(name)})
    # what a recorded run must show: no drops; with the injected path, a
    # launch event and a kernel record per launch made (cuda events the same
    # where the cuda family is on)
    bad = []
    for name, runs in counts.items():
        for c in runs:
            want_gpu = made if ("gpu_" in name or "both_" in name) else 0
            want_cuda = made if ("cuda" in name or "both_" in name) else 0
            if c["drops"] or c["gpu_launch"] != want_gpu or c["gpu_kernel"] != want_gpu or \
                    c["cuda"] != want_cuda:
                bad.append("%s: %s (wanted %d gpu, %d cuda)" % (name, c, want_gpu, want_cuda))
    print("every recorded run complete (no drops, one kernel per launch): %s"
          % ("yes" if not bad else "NO"))
    for line in bad:
        print("  " + line)
    out = os.path.join(b, "bench")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "gpu_launch.json")
    with open(path, "w") as f:
        json.dump({"launches": a.launches, "runs": a.runs, "launches_made": made,
                   "runs_ns_per_launch": res, "median_ns_per_launch": med, "rows": summary,
                   "incomplete_runs": bad}, f, indent=1)
    shutil.rmtree(tmp, ignore_errors=True)
    print("results: " + path)


if __name__ == "__main__":
    main()
