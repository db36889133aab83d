#!/usr/bin/env python3
"""Per-call cost of the nccl and rdma probes and of the cuda kernel-launch
path (root).  Prints a table, writes build/bench/probes.json, never fails on
a number.

Each workload is tests/bench/probe_callbench MODE LIB ITERS on the stand-in
libraries (mean ns over ITERS iterations, median over RUNS runs):
  nccl-allreduce   ncclAllReduce, 0 elements, 1-rank communicator (1 probed call)
  nccl-group       ncclGroupStart + ncclGroupEnd (2 probed calls)
  verbs-post-poll  ibv_post_send + ibv_poll_cq on the provider reached through
                   the ops table, a QP connected to itself, latency 0 (2)
  verbs-reg-dereg  ibv_reg_mr + ibv_dereg_mr, 4 KiB (2)
  cuda-launch      cudaLaunchKernel (1); one launch in 64 takes a stack by
                   default, and every launch with --launch-stack-every 1
each bare and under flightrec record --probes nccl|rdma|cuda --lib FAMILY=LIB
with --stack fp and --stack dwarf.

The floor (a bare uprobe + uretprobe writing one ring event) is measured as
bench_cuda.py measures it, on the cudaMalloc + cudaFree pair, and charged per
probed call: floor_per_call = (floor - bare) / 2 of that pair.  It is an
estimate for the other functions: a probe on a function whose first
instruction the kernel must single-step (flightrec's attach note names
them) costs more than the floor measured on one it emulates; and the
pair's own cost (~17 us on the stand-in) makes that floor noisy from run to
run, so read "x floor" as a rough guide and "added ns" as the measurement.

Then one run of each recorded variant with the kernel's BPF run-time
statistics on (as bench_cuda.py does): nanoseconds per call of each of the
family's programs, next to the floor's.

usage: sudo tests/bench/bench_probes.py [--build build] [--runs 5] [--iters 100000]
                                       [--only MODE,...] [--recorder PATH]
                                       [--no-prog-stats]
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cuda import (ns_per_pair, enable_prog_stats, run_with_prog_stats,  # noqa: E402
                        print_prog_stats)  # the floor, measured the same way

# mode, family, library (relative to the build), probed calls per iteration, label
WORKLOADS = (
    ("nccl-allreduce", "nccl", "samples/nccl/libnccl.so.2", 1, "ncclAllReduce"),
    ("nccl-group", "nccl", "samples/nccl/libnccl.so.2", 2, "ncclGroupStart+End"),
    ("verbs-post-poll", "rdma", "samples/verbs/lib/libibverbs.so.1", 2, "ibv_post_send+poll_cq"),
    ("verbs-reg-dereg", "rdma", "samples/verbs/lib/libibverbs.so.1", 2, "ibv_reg_mr+dereg_mr"),
    ("cuda-launch", "cuda", "samples/cudart/libcudart.so.12", 1, "cudaLaunchKernel"),
)

# variant name, extra recorder options (None: bare), applies to launch only
VARIANTS = (
    ("bare", None, False),
    ("fp", ["--stack", "fp"], False),
    ("dwarf", ["--stack", "dwarf"], False),
    ("fp_stack_every_1", ["--stack", "fp", "--launch-stack-every", "1"], True),
    ("dwarf_stack_every_1", ["--stack", "dwarf", "--launch-stack-every", "1"], True),
)


def ns_per_iter(cmd, env):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    m = re.search(r"([0-9.]+) ns per iteration", p.stdout)
    if not m:
        raise RuntimeError(f"{' '.join(cmd)}: rc {p.returncode}: {p.stdout} {p.stderr}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--iters", type=int, default=100000)
    ap.add_argument("--only", help="comma list of modes to run (default: all)")
    ap.add_argument("--recorder", help="the flightrec binary to measure (default: the build's)")
    ap.add_argument("--no-prog-stats", action="store_true",
                    help="skip the runs with BPF run-time statistics")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_probes: needs root")
    b = a.build
    rec = a.recorder or os.path.join(b, "recorder", "flightrec")
    bench = os.path.join(b, "tests", "bench", "probe_callbench")
    tmp = tempfile.mkdtemp(prefix="flightrec-bench-probes-")
    trace = os.path.join(tmp, "p.frec")
    env = dict(os.environ, FLIGHTREC_FAKE_RDMA_LATENCY_US="0",
               FLIGHTREC_FAKE_RDMA_SHM="flightrec-fakerdma-bench-probes")
    only = set(a.only.split(",")) if a.only else None
    workloads = [w for w in WORKLOADS if not only or w[0] in only]

    # the floor, as bench_cuda.py takes it: cudaMalloc + cudaFree, 2 probed calls
    cudart = os.path.join(b, "samples", "cudart", "libcudart.so.12")
    pair = [os.path.join(b, "tests", "bench", "cuda_callbench"), cudart, str(a.iters)]
    floor_cmd = [os.path.join(b, "tests", "bench", "uprobe_floor"), cudart, "--"] + pair
    floor_runs = {"bare": [], "floor": []}

    res = {w[0]: {v[0]: [] for v in VARIANTS if not v[2] or w[1] == "cuda"}
           for w in workloads}
    for _ in range(a.runs):
        floor_runs["bare"].append(ns_per_pair(pair))
        floor_runs["floor"].append(ns_per_pair(floor_cmd))
        for mode, family, lib, _n, _label in workloads:
            libpath = os.path.join(b, lib)
            work = [bench, mode, libpath, str(a.iters)]
            for name, opts, _launch_only in VARIANTS:
                if name not in res[mode]:
                    continue
                cmd = work if opts is None else (
                    [rec, "record", "-q", "-o", trace, "--probes", family,
                     "--lib", f"{family}={libpath}"] + opts + ["--"] + work)
                res[mode][name].append(ns_per_iter(cmd, env))

    fmed = {k: statistics.median(v) for k, v in floor_runs.items()}
    floor_per_call = (fmed["floor"] - fmed["bare"]) / 2
    rows = []
    print("per-call cost of the probes, %d iterations per run, %d runs, medians (ns per iteration)"
          % (a.iters, a.runs))
    print("floor: bare uprobe+uretprobe+ring event = %.1f ns per probed call "
          "(cudaMalloc+cudaFree pair: %.1f bare, %.1f floor)" % (floor_per_call, fmed["bare"], fmed["floor"]))
    print("%-24s %-20s %5s %9s %11s %9s %9s" % ("call", "flightrec", "calls", "bare ns",
                                               "flightrec", "added ns", "x floor"))
    for mode, family, lib, ncalls, label in workloads:
        med = {k: statistics.median(v) for k, v in res[mode].items()}
        for name, val in med.items():
            if name == "bare":
                continue
            added = val - med["bare"]
            ratio = added / (ncalls * floor_per_call) if floor_per_call > 0 else None
            rows.append({"call": label, "mode": mode, "family": family, "variant": name,
                         "probed_calls_per_iter": ncalls, "bare_ns": med["bare"],
                         "flightrec_ns": val, "added_ns": added,
                         "added_ns_per_probed_call": added / ncalls, "ratio_over_floor": ratio})
            print("%-24s %-20s %5d %9.1f %11.1f %9.1f %9s" % (
                label, name, ncalls, med["bare"], val, added,
                "%.2f" % ratio if ratio is not None else "n/a"))
    progs = {}
    fd = None if a.no_prog_stats else enable_prog_stats()
    if fd is not None:
        print("\nBPF programs, ns per call (one run each, run-time statistics on)")
        _, progs["floor"] = run_with_prog_stats(floor_cmd)
        print_prog_stats("floor (cudaMalloc+cudaFree)", progs["floor"])
        for mode, family, lib, _n, label in workloads:
            libpath = os.path.join(b, lib)
            for name, opts, _launch_only in VARIANTS:
                if opts is None or name not in res[mode]:
                    continue
                cmd = [rec, "record", "-q", "-o", trace, "--probes", family,
                       "--lib", f"{family}={libpath}"] + opts + ["--", bench, mode, libpath,
                                                                str(a.iters)]
                _, got = run_with_prog_stats(cmd, env)
                got = {k: v for k, v in got.items() if k.startswith("fr_" + family)}
                progs["%s %s" % (mode, name)] = got
                print_prog_stats("%s, %s" % (label, name), got)
        os.close(fd)
    elif not a.no_prog_stats:
        print("(no BPF run-time statistics: the kernel refused BPF_ENABLE_STATS)")
    out = os.path.join(b, "bench")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "probes.json")
    with open(path, "w") as f:
        json.dump({"iters": a.iters, "runs": a.runs, "floor_runs": floor_runs,
                   "floor_ns_per_probed_call": floor_per_call, "runs_ns_per_iter": res,
                   "rows": rows, "prog_ns_per_call": progs}, f, indent=1)
    shutil.rmtree(tmp, ignore_errors=True)
    print("results: " + path)


if __name__ == "__main__":
    main()
