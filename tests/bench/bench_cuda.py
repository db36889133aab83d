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
               and the same with --stack dwarf (16 KiB of stack per call; one
               copy, straight into the ring, where the kernel has the dynptr
               read, and "two copies" with FLIGHTREC_USTACK_DYNPTR=0; each
               copy cut at the thread's stack top once the recorder has
               unwound one, and "whole copies" with FLIGHTREC_USTACK_BOUND=0),
               and dwarf with the syscalls family on too (what the job pays
               for system-call tracing next to the cuda probes; the kernel's
               uretprobe system call of each return is not recorded)
  perf         perf probe on the same four places (entry and return of both
               functions) recorded by perf record -g, and --call-graph dwarf
               (perf's own stack modes for uprobes), when perf is installed
The ratio that matters is (flightrec - bare) / (floor - bare): the cuda
family's cost over the floor.  Goals: the fp pair at most perf -g's, the
dwarf pair at most 1.3x the fp pair.

Then one more run of the floor and of each flightrec variant with the
kernel's BPF run-time statistics on (BPF_ENABLE_STATS, for that run only):
the nanoseconds per call of each BPF program (the floor's entry and return
against flightrec's), the part of a probed call the programs themselves
decide; the rest (the breakpoint, the return trampoline) is the same for
every program.  Last, the same pairs called from Python 20 frames deep
(tests/bench/py_callbench.py, through ctypes, under /usr/bin/python3 when
it is there), in both stack modes: dwarf mode walks the Python frames, and
the difference is what that walk adds.

usage: sudo tests/bench/bench_cuda.py [--build build] [--runs 5] [--pairs 100000]
                                     [--recorder PATH]  (another flightrec, to compare)
                                     [--no-prog-stats]
"""
import argparse
import ctypes
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time


# The runs that take their environment from here: the two-copy dwarf path
# (FLIGHTREC_USTACK_DYNPTR=0) beside the one-copy path this kernel may have.
# And dwarf copies of --stack-size bytes every time (FLIGHTREC_USTACK_BOUND=0)
# beside copies cut at the thread's stack top.
ENV = {"flightrec_dwarf_two_copies": dict(os.environ, FLIGHTREC_USTACK_DYNPTR="0"),
       "flightrec_dwarf_unbounded": dict(os.environ, FLIGHTREC_USTACK_BOUND="0")}


def ns_per_pair(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    m = re.search(r"([0-9.]+) ns per pair", p.stdout)
    if not m:
        raise RuntimeError(f"{cmd}: {p.stdout} {p.stderr}")
    return float(m.group(1))


PERF_EVENTS = ["probe_libcudart:cudaMalloc", "probe_libcudart:cudaMalloc_ret__return",
               "probe_libcudart:cudaFree", "probe_libcudart:cudaFree_ret__return"]


def perf_probes(lib):
    """perf probe on both functions' entry and return; the perf record
    commands' event arguments, or None when perf cannot."""
    import shutil
    if not shutil.which("perf"):
        return None
    subprocess.run(["perf", "probe", "-q", "-d", "probe_libcudart:*"], capture_output=True)
    for spec in ("cudaMalloc", "cudaMalloc_ret=cudaMalloc%return", "cudaFree",
                 "cudaFree_ret=cudaFree%return"):
        if subprocess.run(["perf", "probe", "-q", "-x", lib, "-a", spec],
                          capture_output=True).returncode:
            return None
    return [x for e in PERF_EVENTS for x in ("-e", e)]


def enable_prog_stats():
    """Turns on the kernel's per-program run time accounting for as long as
    the returned fd stays open (BPF_ENABLE_STATS: reference-counted, so the
    kernel.bpf_stats_enabled sysctl others may rely on is left alone).
    None when the kernel refuses."""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = (ctypes.c_uint32 * 2)(0, 0)  # type BPF_STATS_RUN_TIME
    fd = libc.syscall(321, 32, attr, ctypes.c_uint(8))  # __NR_bpf, BPF_ENABLE_STATS
    return fd if fd >= 0 else None


def prog_name(prog_id, names):
    if prog_id not in names:
        p = subprocess.run(["bpftool", "prog", "show", "id", str(prog_id), "-j"],
                           capture_output=True, text=True)
        try:
            names[prog_id] = json.loads(p.stdout)["name"]
        except (ValueError, KeyError):
            names[prog_id] = "prog%d" % prog_id
    return names[prog_id]


def prog_stats_of(pid, names):
    """{program name: (run_cnt, run_time_ns)} of the BPF programs process pid
    holds, read from its fdinfo (programs of the same name are summed)."""
    out = {}
    for fdinfo in glob.glob("/proc/%d/fdinfo/*" % pid):
        try:
            text = open(fdinfo).read()
        except OSError:
            continue
        f = dict(re.findall(r"^(\w+):\s+(\S+)", text, re.M))
        if "prog_id" not in f or "run_cnt" not in f:
            continue
        name = prog_name(int(f["prog_id"]), names)
        c, t = out.get(name, (0, 0))
        out[name] = (c + int(f["run_cnt"]), t + int(f["run_time_ns"]))
    return out


def run_with_prog_stats(cmd, env=None):
    """Runs cmd (a recorder or uprobe_floor wrapping a workload) and samples
    the run counts and times of its BPF programs until it exits: (stdout,
    {name: (calls, ns per call)}) for the programs that ran.  The last
    sample is taken a few ms before the end, so counts are not the
    workload's exact total; their ratio is what is read."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         env=env)
    names, last = {}, {}
    while p.poll() is None:
        now = prog_stats_of(p.pid, names)
        if now:
            last = now
        time.sleep(0.05)
    out = p.stdout.read()
    return out, {k: (c, t / c) for k, (c, t) in last.items() if c}


def print_prog_stats(title, stats):
    print(title)
    for name, (calls, ns) in sorted(stats.items()):
        print("  %-24s %10d calls %9.0f ns per call" % (name, calls, ns))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pairs", type=int, default=100000)
    ap.add_argument("--recorder", help="the flightrec binary to measure (default: the build's)")
    ap.add_argument("--no-prog-stats", action="store_true",
                    help="skip the runs with BPF run-time statistics")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_cuda: needs root")
    b = a.build
    lib = os.path.join(b, "samples", "cudart", "libcudart.so.12")
    bench = [os.path.join(b, "tests", "bench", "cuda_callbench"), lib, str(a.pairs)]
    floor = [os.path.join(b, "tests", "bench", "uprobe_floor"), lib, "--"]
    rec = a.recorder or os.path.join(b, "recorder", "flightrec")
    tmp = tempfile.mkdtemp(prefix="flightrec-bench-cuda-")
    cmds = {
        "floor": floor + bench,
        "flightrec": [rec, "record", "-q", "-o", os.path.join(tmp, "c.frec"), "--probes", "cuda",
                      "--stack", "fp", "--lib", f"cuda={lib}", "--"] + bench,
        "flightrec_dwarf": [rec, "record", "-q", "-o", os.path.join(tmp, "d.frec"), "--probes",
                            "cuda", "--stack", "dwarf", "--lib", f"cuda={lib}", "--"] + bench,
        "flightrec_dwarf_two_copies": [rec, "record", "-q", "-o", os.path.join(tmp, "t.frec"),
                                       "--probes", "cuda", "--stack", "dwarf", "--lib",
                                       f"cuda={lib}", "--"] + bench,
        "flightrec_dwarf_unbounded": [rec, "record", "-q", "-o", os.path.join(tmp, "u.frec"),
                                      "--probes", "cuda", "--stack", "dwarf", "--lib",
                                      f"cuda={lib}", "--"] + bench,
        "flightrec_dwarf_syscalls": [rec, "record", "-q", "-o", os.path.join(tmp, "s.frec"),
                                     "--probes", "cuda,syscalls", "--stack", "dwarf",
                                     "--lib", f"cuda={lib}", "--"] + bench,
    }
    events = perf_probes(lib)
    if events:
        # -B -N: perf 6.1 aborts collecting build-ids at the end of such a run
        for k, mode in (("perf_probe_g", ["-g"]), ("perf_probe_dwarf", ["--call-graph", "dwarf"])):
            cmds[k] = ["perf", "record", "-q", "-B", "-N", "-o", os.path.join(tmp, k + ".data")] + \
                mode + events + ["--"] + bench
    else:
        print("(no perf probe rows: perf is missing or cannot probe %s)" % lib)
    res = {"bare": []}
    res.update({k: [] for k in cmds})
    for i in range(a.runs):
        res["bare"].append(ns_per_pair(bench))
        for k, cmd in cmds.items():
            res[k].append(ns_per_pair(cmd, ENV.get(k)))
    med = {k: statistics.median(v) for k, v in res.items()}
    over = {k: med[k] - med["bare"] for k in med}
    print("cudaMalloc + cudaFree pair, %d pairs per run, %d runs, medians" % (a.pairs, a.runs))
    print("%-28s %12s %14s %10s" % ("", "ns/pair", "added ns/pair", "x floor"))
    for k, label in (("bare", "no probes"), ("floor", "bare uprobe+ringbuf (floor)"),
                     ("flightrec", "flightrec, --stack fp"),
                     ("flightrec_dwarf", "flightrec, --stack dwarf"),
                     ("flightrec_dwarf_two_copies", "  same, two copies"),
                     ("flightrec_dwarf_unbounded", "  same, 16 KiB every copy"),
                     ("flightrec_dwarf_syscalls", "  same, with syscalls"),
                     ("perf_probe_g", "perf probe, perf record -g"),
                     ("perf_probe_dwarf", "  same, --call-graph dwarf")):
        if k not in med:
            continue
        ratio = over[k] / over["floor"] if over["floor"] > 0 and k != "bare" else float("nan")
        print("%-28s %12.1f %14.1f %10.2f" % (label, med[k], over[k], ratio))
    if "perf_probe_g" in med and over["perf_probe_g"] > 0 and over["flightrec"] > 0:
        print("fp pair / perf -g pair: %.2fx (goal <= 1); dwarf pair / fp pair: %.2fx (goal <= 1.3)"
              % (over["flightrec"] / over["perf_probe_g"], over["flightrec_dwarf"] / over["flightrec"]))
    if events:
        subprocess.run(["perf", "probe", "-q", "-d", "probe_libcudart:*"], capture_output=True)
        for k in ("perf_probe_g", "perf_probe_dwarf"):
            cmds.pop(k, None)  # no BPF programs of theirs to read
    progs = {}
    fd = None if a.no_prog_stats else enable_prog_stats()
    if fd is not None:
        print("\nBPF programs, ns per call (one run each, run-time statistics on)")
        for k, cmd in cmds.items():
            _, progs[k] = run_with_prog_stats(cmd, ENV.get(k))
            print_prog_stats(k, {n: v for n, v in progs[k].items()
                                 if n.startswith(("floor_", "fr_cuda", "fr_sys"))})
        py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
        py_bench = [py, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                     "py_callbench.py"), lib, str(a.pairs)]
        for k, mode in (("python_fp", "fp"), ("python_dwarf", "dwarf")):
            _, progs[k] = run_with_prog_stats(
                [rec, "record", "-q", "-o", os.path.join(tmp, "p.frec"), "--probes", "cuda",
                 "--stack", mode, "--lib", f"cuda={lib}", "--"] + py_bench)
            print_prog_stats(k + " (called from Python, 20 frames deep)",
                             {n: v for n, v in progs[k].items() if n.startswith("fr_cuda")})
        os.close(fd)
    elif not a.no_prog_stats:
        print("(no BPF run-time statistics: the kernel refused BPF_ENABLE_STATS)")
    out = os.path.join(b, "bench")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "bench_cuda.json")
    with open(path, "w") as f:
        json.dump({"runs": res, "median_ns_per_pair": med, "prog_ns_per_call": progs,
                   "ratio_over_floor": over["flightrec"] / over["floor"] if over["floor"] > 0 else None,
                   "ratio_over_floor_dwarf": over["flightrec_dwarf"] / over["floor"] if over["floor"] > 0 else None,
                   "ratio_fp_over_perf_g": over["flightrec"] / over["perf_probe_g"]
                   if over.get("perf_probe_g", 0) > 0 else None,
                   "ratio_dwarf_over_fp": over["flightrec_dwarf"] / over["flightrec"]
                   if over["flightrec"] > 0 else None},
                  f, indent=1)
    print("results: " + path)


if __name__ == "__main__":
    main()
