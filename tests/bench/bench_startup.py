#!/usr/bin/env python3
"""Start-up on a real PyTorch import, and the fixed part of its trace, beside
perf (root; needs Debian's python3-torch and perf).  Prints a table and
writes BUILD/bench/startup.json; it never fails on a number.

  1. `import torch` timed inside the job (time.perf_counter around it) and
     the whole command (launch to exit: a recorder's start-up, the job, and
     its finish), the ways interleaved run by run, medians of --runs:
       bare                      no recorder
       perf -g                   perf record -g -F 99 -- python3 -c ...
       flightrec <probes>        flightrec record (warm build-id cache) with
                                 --probes cpu, cpu+syscalls, and the default
                                 set: which family costs the import what
     with the recorder's own CPU (its closing line), how long the job waited
     for the probes (its start-up line's "ready in") and the trace's size.
  2. The fixed part of the trace: a flightrec trace of `import torch` is
     almost all symbols and unwind data (a few hundred files); beside it the
     size of `perf archive`'s tarball of the same job's perf.data (the
     build-ids perf needs to symbolize it elsewhere) plus perf.data itself.

usage: sudo tests/bench/bench_startup.py [--build build] [--runs 5] [--out DIR]
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

IMPORT = ("import time; t = time.perf_counter(); import torch; "
          "print('import_s', time.perf_counter() - t, flush=True)")
FLIGHTREC_WAYS = (("flightrec cpu", ["--probes", "cpu"]),
                  ("flightrec cpu,syscalls", ["--probes", "cpu,syscalls"]),
                  ("flightrec default", []))


def import_seconds(text):
    m = re.search(r"import_s ([0-9.]+)", text)
    return float(m.group(1)) if m else None


def run_checked(cmd, **kw):
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    p.wall_s = time.perf_counter() - t
    if p.returncode != 0:
        raise RuntimeError("%s exited %d:\n%s" % (cmd[0], p.returncode, p.stderr[-2000:]))
    return p


def flightrec_run(rec, trace, cache, args, python):
    p = run_checked([rec, "record", "-o", trace, "--cache-dir", cache] + args +
                    ["--", python, "-c", IMPORT])
    cpu = re.search(r"recorder CPU ([0-9.]+) s", p.stderr)
    ready = re.search(r"ready in ([0-9.]+) s", p.stderr)
    return {"import_s": import_seconds(p.stdout), "command_s": p.wall_s,
            "ready_s": float(ready.group(1)) if ready else None,
            "recorder_cpu_s": float(cpu.group(1)) if cpu else None,
            "trace_bytes": os.path.getsize(trace)}


def perf_run(perf_data, python):
    # Debian's perf 6.1 sometimes aborts in its build-id pass at the end
    # ("assertion failed at util/build-id.c"): the run is repeated, and
    # counted, rather than lost
    for attempt in range(3):
        t = time.perf_counter()
        p = subprocess.run(["perf", "record", "-q", "-g", "-F", "99", "-o", perf_data, "--",
                            python, "-c", IMPORT], capture_output=True, text=True)
        wall = time.perf_counter() - t
        if p.returncode == 0:
            break
        print(f"bench_startup: perf record exited {p.returncode}; again", file=sys.stderr)
    else:
        raise RuntimeError("perf record failed 3 times:\n" + p.stderr[-2000:])
    return {"import_s": import_seconds(p.stdout), "command_s": wall,
            "trace_bytes": os.path.getsize(perf_data)}


def perf_archive_bytes(perf_data):
    """perf archive writes PERF_DATA.tar.bz2 with the build-id cache entries
    the data refers to; None when it fails (perf without archive support)."""
    p = subprocess.run(["perf", "archive", perf_data], capture_output=True, text=True)
    tar = perf_data + ".tar.bz2"
    if p.returncode != 0 or not os.path.exists(tar):
        return None
    return os.path.getsize(tar)


def med(rows, key):
    vals = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def fmt(v, unit="s", digits=2):
    return "-" if v is None else f"{v:.{digits}f} {unit}"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--python", default="/usr/bin/python3",
                    help="a python3 with torch (Debian's python3-torch)")
    ap.add_argument("--out", default=None, help="results directory (default BUILD/bench)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_startup: needs root (it records with eBPF)")
    if subprocess.run([a.python, "-c", "import torch"], capture_output=True).returncode:
        sys.exit(f"bench_startup: {a.python} cannot import torch (apt-get install python3-torch)")
    have_perf = shutil.which("perf") is not None
    if not have_perf:
        print("bench_startup: perf not found (apt-get install linux-perf): its rows are left out",
              file=sys.stderr)
    rec = os.path.join(a.build, "recorder", "flightrec")
    outdir = a.out or os.path.join(a.build, "bench")
    os.makedirs(outdir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="flightrec-bench-startup-")
    cache = os.path.join(tmp, "cache")
    trace = os.path.join(tmp, "import.frec")
    perf_data = os.path.join(tmp, "perf.data")

    # fill the page cache and the build-id cache: every way then reads the
    # files from memory, and flightrec its symbols from the cache
    flightrec_run(rec, trace, cache, [], a.python)
    ways = ["bare"] + (["perf -g"] if have_perf else []) + [w for w, _ in FLIGHTREC_WAYS]
    rows = {w: [] for w in ways}
    for r in range(a.runs):
        print(f"run {r + 1}/{a.runs}", file=sys.stderr, flush=True)
        for way in ways:
            if way == "bare":
                p = run_checked([a.python, "-c", IMPORT])
                rows[way].append({"import_s": import_seconds(p.stdout), "command_s": p.wall_s})
            elif way == "perf -g":
                rows[way].append(perf_run(perf_data, a.python))
            else:
                args = dict(FLIGHTREC_WAYS)[way]
                rows[way].append(flightrec_run(rec, trace, cache, args, a.python))

    fixed = {"flightrec_trace_bytes": med(rows["flightrec cpu"], "trace_bytes")}
    if have_perf:
        fixed["perf_data_bytes"] = med(rows["perf -g"], "trace_bytes")
        fixed["perf_archive_bytes"] = perf_archive_bytes(perf_data)
    info = subprocess.run([os.path.join(a.build, "analyzer", "flightrec-analyze"), "info",
                           trace, "--json"], capture_output=True, text=True)
    try:
        f0 = json.loads(info.stdout)["files"][0]
        fixed["flightrec_records"] = {k: v for k, v in f0.items()
                                      if isinstance(v, (int, float)) and not isinstance(v, bool)}
    except (ValueError, KeyError, IndexError):
        pass
    shutil.rmtree(tmp, ignore_errors=True)

    bare = med(rows["bare"], "import_s")
    bare_cmd = med(rows["bare"], "command_s")
    print(f"\nimport torch timed inside the job, and the whole command ({a.python}; medians "
          f"of {a.runs}, interleaved; warm page cache, warm build-id cache)")
    print(f"{'way':<24} {'import':>9} {'x bare':>7} {'command':>9} {'x bare':>7} "
          f"{'ready in':>9} {'recorder CPU':>13} {'file':>10}")
    summary = {}
    for way in ways:
        imp = med(rows[way], "import_s")
        cmd = med(rows[way], "command_s")
        ready = med(rows[way], "ready_s")
        cpu = med(rows[way], "recorder_cpu_s")
        size = med(rows[way], "trace_bytes")
        ratio = imp / bare if imp and bare else None
        cmd_ratio = cmd / bare_cmd if cmd and bare_cmd else None
        summary[way] = {"import_s": imp, "x_bare": ratio, "command_s": cmd,
                        "command_x_bare": cmd_ratio, "ready_s": ready,
                        "recorder_cpu_s": cpu, "file_bytes": size}
        print(f"{way:<24} {fmt(imp):>9} {fmt(ratio, 'x'):>7} {fmt(cmd):>9} "
              f"{fmt(cmd_ratio, 'x'):>7} {fmt(ready):>9} {fmt(cpu):>13} "
              f"{fmt(size / 1048576 if size else None, 'MiB', 1):>10}")
    print("\nfixed part (an `import torch` recording is almost all symbols and unwind data)")
    print(f"  flightrec trace, --probes cpu:   {fmt(fixed['flightrec_trace_bytes'] / 1048576, 'MiB', 1)}")
    if have_perf:
        pa = fixed.get("perf_archive_bytes")
        print(f"  perf.data (-g -F 99):            {fmt(fixed['perf_data_bytes'] / 1048576, 'MiB', 1)}")
        print(f"  perf archive (.tar.bz2):         "
              f"{fmt(pa / 1048576 if pa else None, 'MiB', 1)}"
              "  (build-id cache entries; perf has no unwind tables to carry)")
    results = {"date": time.strftime("%Y-%m-%dT%H:%M:%S"), "kernel": os.uname().release,
               "cpus": os.cpu_count(), "runs": a.runs, "rows": rows, "summary": summary,
               "fixed": fixed}
    path = os.path.join(outdir, "startup.json")
    with open(path, "w") as f:
        json.dump(results, f, indent=1)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
