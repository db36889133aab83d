#!/usr/bin/env python3
"""Dwarf mode's build-id cache (recorder/symbols/unwind_cache.c): what a recording
costs when every mapped file's symbols and unwind data come from the cache
instead of the ELF files (root; needs Debian's python3-torch).  Prints
tables and writes BUILD/bench/bench_cache.json; it never fails on a number.

  1. `record --pid` attached to a running PyTorch training loop for
     --seconds: recorder CPU (its closing line), CPU spent on the files (the
     build-id cache line), wall time from starting the recorder to
     "recording" (the attach), trace size.  Three ways, interleaved, medians
     of --runs: no cache, cold cache (emptied before each run, so the run
     reads every file and fills the cache), warm cache (filled by the run
     before).  A first recording, not counted, puts the files in the page
     cache so every way reads them from memory.
  2. `record -- python3 -c 'import torch'` with the import timed inside the
     job (time.perf_counter around it), bare and under the same three ways.
Both with the default probes (whose BPF programs' loading is most of the
recorder's fixed CPU) and with `--probes cpu` (little else than the files).

usage: sudo tests/bench/bench_cache.py [--build build] [--runs 3] [--seconds 4]
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

LOOP = r'''
import torch
torch.set_num_threads(1)  # one CPU for the job, one for the recorder
x = torch.randn(256, 256)
w = torch.randn(256, 256, requires_grad=True)
print("ready", flush=True)
while True:
    (x @ w).relu().sum().backward()
'''
IMPORT = ("import time; t = time.perf_counter(); import torch; "
          "print('import_s', time.perf_counter() - t, flush=True)")
WAYS = ("no cache", "cold cache", "warm cache")
PROBE_SETS = ("default", "cpu")


def probe_args(probes):
    return [] if probes == "default" else ["--probes", probes]


def cache_args(way, cache):
    if way == "no cache":
        return ["--no-cache"]
    if way == "cold cache":
        shutil.rmtree(cache, ignore_errors=True)
    return ["--cache-dir", cache]


def record(rec, trace, args):
    """Runs the recorder; returns (stderr text, seconds to its 'recording'
    line, wall seconds, stdout text)."""
    t0 = time.monotonic()
    p = subprocess.Popen([rec, "record", "-o", trace] + args, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    attach, lines = None, []
    for line in p.stderr:
        if attach is None and line.startswith("flightrec: recording "):
            attach = time.monotonic() - t0
        lines.append(line)
    out = p.stdout.read()
    p.wait()
    wall = time.monotonic() - t0
    err = "".join(lines)
    if p.returncode != 0:
        raise RuntimeError(f"recorder exited {p.returncode}:\n{err}")
    return err, attach, wall, out


def numbers(err):
    cpu = re.search(r"recorder CPU ([0-9.]+) s", err)
    files = re.search(r"build-id cache (?:off: (\d+) files read, ([0-9.]+) s of CPU|"
                      r".*?: (\d+) of (\d+) files from it.*?; ([0-9.]+) s of CPU on files)", err)
    out = {"recorder_cpu_s": float(cpu.group(1)) if cpu else None}
    if files and files.group(1):
        out.update(files_cpu_s=float(files.group(2)), files=int(files.group(1)), from_cache=0)
    elif files:
        out.update(files_cpu_s=float(files.group(5)), files=int(files.group(4)),
                   from_cache=int(files.group(3)))
    return out


def med(rows, key):
    vals = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def fmt(v, unit, digits=2):
    return "-" if v is None else f"{v:.{digits}f} {unit}"


def du(path):
    total = 0
    for root, _, names in os.walk(path):
        for n in names:
            total += os.lstat(os.path.join(root, n)).st_size
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--python", default="/usr/bin/python3",
                    help="a python3 with torch (Debian's python3-torch)")
    ap.add_argument("--out", default=None, help="results directory (default BUILD/bench)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_cache: needs root (it records with eBPF)")
    rec = os.path.join(a.build, "recorder", "flightrec")
    if subprocess.run([a.python, "-c", "import torch"], capture_output=True).returncode:
        sys.exit(f"bench_cache: {a.python} cannot import torch (apt-get install python3-torch)")
    outdir = a.out or os.path.join(a.build, "bench")
    os.makedirs(outdir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="flightrec-bench-cache-")
    cache = os.path.join(tmp, "cache")
    results = {"date": time.strftime("%Y-%m-%dT%H:%M:%S"), "kernel": os.uname().release,
               "cpus": os.cpu_count(), "runs": a.runs, "seconds": a.seconds}

    # 1. --pid attach to a training loop
    script = os.path.join(tmp, "loop.py")
    with open(script, "w") as f:
        f.write(LOOP)
    job = subprocess.Popen([a.python, script], stdout=subprocess.PIPE, text=True)
    pid_rows = {}
    try:
        if job.stdout.readline().strip() != "ready":
            raise RuntimeError("the training loop did not start")
        base = ["--pid", str(job.pid), "--duration", str(a.seconds)]
        record(rec, os.path.join(tmp, "warmup.frec"), base + ["--no-cache"])
        for probes in PROBE_SETS:
            rows = pid_rows[probes] = {w: [] for w in WAYS}
            for r in range(a.runs):
                for way in WAYS:
                    trace = os.path.join(tmp, f"pid-{r}.frec")
                    err, attach, wall, _ = record(rec, trace, base + probe_args(probes) +
                                                  cache_args(way, cache))
                    row = numbers(err)
                    row.update(attach_s=attach, wall_s=wall, trace_bytes=os.path.getsize(trace))
                    rows[way].append(row)
                    if way == "cold cache":
                        results["cache_bytes"] = du(cache)
                    os.unlink(trace)
    finally:
        job.kill()
        job.wait()
    results["pid_attach"] = pid_rows

    # 2. import torch inside the recorded job
    imp_rows = {}
    for probes in PROBE_SETS:
        rows = imp_rows[probes] = {w: [] for w in ("bare",) + WAYS}
        for r in range(a.runs):
            p = subprocess.run([a.python, "-c", IMPORT], capture_output=True, text=True)
            rows["bare"].append({"import_s": float(p.stdout.split()[-1])})
            for way in WAYS:
                trace = os.path.join(tmp, f"import-{r}.frec")
                err, _, wall, out = record(rec, trace, probe_args(probes) +
                                           cache_args(way, cache) + ["--", a.python, "-c", IMPORT])
                row = numbers(err)
                m = re.search(r"import_s ([0-9.]+)", out)
                row.update(import_s=float(m.group(1)) if m else None, wall_s=wall,
                           trace_bytes=os.path.getsize(trace))
                rows[way].append(row)
                os.unlink(trace)
    results["import_torch"] = imp_rows
    shutil.rmtree(tmp, ignore_errors=True)

    print(f"\n--pid attach to a PyTorch training loop for {a.seconds:g} s "
          f"(medians of {a.runs}; files in the page cache for all)")
    print(f"{'probes':<9} {'':<11} {'recorder CPU':>13} {'CPU on files':>13} "
          f"{'attach wall':>12} {'trace':>10} {'files from cache':>17}")
    for probes in PROBE_SETS:
        for way in WAYS:
            rows = pid_rows[probes][way]
            files = f"{rows[-1].get('from_cache', 0)}/{rows[-1].get('files', 0)}"
            print(f"{probes:<9} {way:<11} {fmt(med(rows, 'recorder_cpu_s'), 's'):>13} "
                  f"{fmt(med(rows, 'files_cpu_s'), 's'):>13} "
                  f"{fmt(med(rows, 'attach_s'), 's'):>12} "
                  f"{fmt(med(rows, 'trace_bytes') / 1048576, 'MiB', 1):>10} {files:>17}")
    if results.get("cache_bytes") is not None:
        print(f"cache after one recording: {results['cache_bytes'] / 1048576:.1f} MiB")
    print(f"\nimport torch timed inside the job (`record -- {a.python} -c ...`, "
          f"medians of {a.runs})")
    print(f"{'probes':<9} {'':<11} {'import torch':>13} {'recorder CPU':>13} {'CPU on files':>13}")
    for probes in PROBE_SETS:
        for way in ("bare",) + WAYS:
            rows = imp_rows[probes][way]
            print(f"{probes:<9} {way:<11} {fmt(med(rows, 'import_s'), 's'):>13} "
                  f"{fmt(med(rows, 'recorder_cpu_s'), 's'):>13} "
                  f"{fmt(med(rows, 'files_cpu_s'), 's'):>13}")
    path = os.path.join(outdir, "bench_cache.json")
    with open(path, "w") as f:
        json.dump(results, f, indent=1)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
