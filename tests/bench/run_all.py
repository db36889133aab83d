#!/usr/bin/env python3
"""Every benchmark of the performance table, one after the other on this
machine, then the headline figures beside perf's (root; needs Debian's
python3-torch and perf for the PyTorch and perf rows).  Prints each bench's
own table as it goes, then a summary; writes BUILD/bench/run_all.txt (all of
it) and BUILD/bench/run_all.json (the summary).  It never fails on a number:
a bench that cannot run (a missing tool) is reported and skipped.

  per-call cost        bench_cuda.py     cudaMalloc+cudaFree over the floor, beside
                                         perf probe with -g and --call-graph dwarf
                       bench_probes.py   NCCL, verbs, kernel-launch calls
                       bench_gpu_launch.py  cudaLaunchKernel: --gpu-kernels (injected)
                                         beside --probes cuda (uprobe)
  bytes per sample     bench_sample_bytes.py   torch loop, flightrec vs perf -g
  start-up             bench_startup.py  import torch bare / perf -g / flightrec,
                                         the fixed part beside perf archive
  --pid attach         bench_cache.py    torch loop, recorder CPU, cache
  99 Hz slowdown       bench_recorder.py fixed work, flightrec vs perf -g
  training step        bench_torch_step.py  a PyTorch loop's step: bare / flightrec
                                         default probes / perf record -g
  drain keeps up       bench_drain.py    rate held with no loss, the cuda storm,
                                         fp / dwarf sparse / dwarf whole
  many ranks           bench_ranks.py    stragglers/report/summary/sqlite at 64..1024 (--ranks up to 16384)

usage: sudo tests/bench/run_all.py [--build build] [--quick] [--only NAME,...]
  --quick  fewer runs (a smoke run of the whole set, ~10 min here)
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def benches(quick):
    runs = "2" if quick else "5"
    return [
        ("cuda", ["bench_cuda.py", "--runs", runs]),
        ("probes", ["bench_probes.py", "--runs", "2" if quick else "3"]),
        ("gpu_launch", ["bench_gpu_launch.py", "--runs", "2" if quick else "3"]),
        ("sample_bytes", ["bench_sample_bytes.py", "--runs", "1" if quick else "3", "--compare"]),
        ("startup", ["bench_startup.py", "--runs", "2" if quick else "5"]),
        ("cache", ["bench_cache.py", "--runs", "1" if quick else "3"]),
        ("recorder", ["bench_recorder.py", "--runs", "2" if quick else "5"]),
        ("torch_step", ["bench_torch_step.py", "--runs", "2" if quick else "5"]),
        ("drain", ["bench_drain.py", "--runs", "1" if quick else "3"]),
        ("ranks", ["bench_ranks.py"] + (["--ranks", "64,256"] if quick else [])),
    ]


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def get(d, *keys):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def fmt(v, spec="{:.2f}", unit=""):
    return "-" if v is None else spec.format(v) + unit


def summary(outdir, texts):
    """The issue's table, from the benches' JSON files (and the bytes bench's
    printed table, which has no JSON)."""
    rows = []
    cuda = load(os.path.join(outdir, "bench_cuda.json"))
    rows.append(("cudaMalloc+cudaFree, --probes cuda --stack fp, over the floor",
                 fmt(get(cuda, "ratio_over_floor"), "{:.2f}", "x"), "floor = bare uprobes", "<= 1.15x"))
    rows.append(("same, --stack dwarf (the default)", fmt(get(cuda, "ratio_over_floor_dwarf"), "{:.2f}", "x"), "", ""))
    rows.append(("fp pair / perf probe -g pair (added cost)", fmt(get(cuda, "ratio_fp_over_perf_g"), "{:.2f}", "x"),
                 "perf probe + record -g", "<= 1x"))
    rows.append(("dwarf pair / fp pair (added cost)", fmt(get(cuda, "ratio_dwarf_over_fp"), "{:.2f}", "x"),
                 "", "<= 1.3x"))
    gpu = {r["row"]: r for r in get(load(os.path.join(outdir, "gpu_launch.json")), "rows") or []}
    for s in ("fp", "dwarf"):
        g, c = gpu.get("gpu_" + s) or {}, gpu.get("cuda_" + s) or {}
        rows.append(("cudaLaunchKernel, --gpu-kernels --probes gpu, %s, added" % s,
                     "%s (%s cuda)" % (fmt(g.get("added_ns"), "{:.0f}", " ns"),
                                       fmt(g.get("ratio_over_cuda"), "{:.2f}", "x")),
                     "--probes cuda: %s" % fmt(c.get("added_ns"), "{:.0f}", " ns"), "stated"))
    bytes_txt = texts.get("sample_bytes", "")
    # bench_sample_bytes prints a table: its header, then a row per tool and run
    marg = [l.rstrip() for l in bytes_txt.splitlines()
            if l.startswith(("tool ", "flightrec", "perf"))]
    rows.append(("marginal bytes per CPU sample, torch loop", "see below", "perf -g -F 99", "<= perf"))
    st = load(os.path.join(outdir, "startup.json"))
    s = get(st, "summary") or {}
    rows.append(("import torch, flightrec default probes",
                 "%s (%s bare)" % (fmt(get(s, "flightrec default", "import_s"), "{:.2f}", " s"),
                                   fmt(get(s, "flightrec default", "x_bare"), "{:.2f}", "x")),
                 "perf -g: %s (%s)" % (fmt(get(s, "perf -g", "import_s"), "{:.2f}", " s"),
                                       fmt(get(s, "perf -g", "x_bare"), "{:.2f}", "x")),
                 "<= perf, ~1.1x bare"))
    rows.append(("that command, launch to exit, x bare",
                 fmt(get(s, "flightrec default", "command_x_bare"), "{:.2f}", "x"),
                 "perf -g: %s" % fmt(get(s, "perf -g", "command_x_bare"), "{:.2f}", "x"), "stated"))
    rows.append(("the job's wait for the probes (ready in)",
                 fmt(get(s, "flightrec default", "ready_s"), "{:.2f}", " s"), "", "stated"))
    rows.append(("recorder CPU for that import", fmt(get(s, "flightrec default", "recorder_cpu_s"), "{:.2f}", " s"),
                 "", "stated"))
    fx = get(st, "fixed") or {}
    rows.append(("fixed part (import torch trace, --probes cpu)",
                 fmt((fx.get("flightrec_trace_bytes") or 0) / 1048576 or None, "{:.1f}", " MiB"),
                 "perf archive: %s" % fmt((fx.get("perf_archive_bytes") or 0) / 1048576 or None,
                                          "{:.1f}", " MiB"), "stated"))
    ts = load(os.path.join(outdir, "torch_step.json"))
    rows.append(("PyTorch training step, flightrec default probes",
                 "%s (%s bare)" % (fmt(get(ts, "median_ms", "flightrec"), "{:.1f}", " ms"),
                                   fmt(get(ts, "x_bare", "flightrec"), "{:.3f}", "x")),
                 "perf -g: %s (%s)" % (fmt(get(ts, "median_ms", "perf"), "{:.1f}", " ms"),
                                       fmt(get(ts, "x_bare", "perf"), "{:.3f}", "x")),
                 "<= perf"))
    cache = load(os.path.join(outdir, "bench_cache.json"))
    pid = get(cache, "pid_attach", "default") or {}
    def med_cpu(rows_):
        vals = sorted(r["recorder_cpu_s"] for r in rows_ or [] if r.get("recorder_cpu_s") is not None)
        return vals[len(vals) // 2] if vals else None
    rows.append(("--pid attach 4 s, recorder CPU, no / warm cache",
                 "%s / %s" % (fmt(med_cpu(pid.get("no cache")), "{:.2f}", " s"),
                              fmt(med_cpu(pid.get("warm cache")), "{:.2f}", " s")), "", "a fraction"))
    rec = load(os.path.join(outdir, "bench_recorder.json"))
    rows.append(("99 Hz sampling slowdown, fixed work",
                 fmt(get(rec, "cpu_slowdown", "ratio_flightrec"), "{:.3f}", "x"),
                 "perf -g: %s" % fmt(get(rec, "cpu_slowdown", "ratio_perf"), "{:.3f}", "x"), "keep"))
    drain = load(os.path.join(outdir, "bench_drain.json"))
    for mode in ("fp", "dwarf sparse", "dwarf whole"):
        m = get(drain, "modes", mode) or {}
        storm = m.get("storm") or []
        rows.append(("%s: rate held with no loss / storm lost" % mode,
                     "%s / %s" % (fmt(m.get("held"), "{:.0f}", " ev/s"),
                                  fmt(max((r["dropped"] for r in storm), default=None), "{:d}")),
                     "", "storm: 0"))
    ranks = load(os.path.join(outdir, "ranks.json"))
    rows.append(("many ranks", "see bench_ranks table", "", "bounded memory"))
    lines = ["%-52s %-22s %-26s %s" % ("what", "flightrec", "reference, same run", "goal")]
    for r in rows:
        lines.append("%-52s %-22s %-26s %s" % r)
    if marg:
        lines.append("")
        lines.append("bytes per sample (bench_sample_bytes.py):")
        lines.extend("  " + l for l in marg[:8])
    return lines, {"rows": rows, "ranks": ranks is not None}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="", help="comma list of bench names to run")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run_all: needs root (the recorder benches record with eBPF)")
    outdir = os.path.join(a.build, "bench")
    os.makedirs(outdir, exist_ok=True)
    only = set(filter(None, a.only.split(",")))
    texts, log = {}, []
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    log.append("run_all %s, kernel %s, %d CPUs\n" % (started, os.uname().release, os.cpu_count()))
    for name, cmd in benches(a.quick):
        if only and name not in only:
            continue
        full = [sys.executable, os.path.join(HERE, cmd[0]), "--build", a.build] + cmd[1:]
        print("\n=== %s: %s" % (name, " ".join(cmd)), flush=True)
        t0 = time.monotonic()
        p = subprocess.run(full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        texts[name] = p.stdout
        print(p.stdout, end="")
        status = "ok" if p.returncode == 0 else "exit %d (skipped in the summary)" % p.returncode
        print("=== %s: %s in %.0f s" % (name, status, time.monotonic() - t0), flush=True)
        log.append("\n=== %s (%s)\n%s" % (name, status, p.stdout))
    lines, js = summary(outdir, texts)
    print("\nSummary (%s, this machine; only ratios within one run compare)" % started)
    print("\n".join(lines))
    log.append("\nSummary\n" + "\n".join(lines) + "\n")
    with open(os.path.join(outdir, "run_all.txt"), "w") as f:
        f.write("".join(log))
    js["date"] = started
    with open(os.path.join(outdir, "run_all.json"), "w") as f:
        json.dump(js, f, indent=1)
    print("\nwrote %s and run_all.json" % os.path.join(outdir, "run_all.txt"))


if __name__ == "__main__":
    main()
