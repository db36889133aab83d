#!/usr/bin/env python3
"""Soak bench (root; a table, never pass/fail): flight-recorder mode left on a
churning job.  The recorded command is a driver that, every --period seconds,
starts short exec'd processes (two Python interpreters, a shell helper that
exits 1 the way a wrapper's readlink does), forks two workers that exit at
once, and dlopen()s and dlclose()s the stand-in libcudart (a probed library).
Every --every seconds the bench prints the recorder's RSS and its own memory
(private dirty pages: RSS less the BPF ring buffer's pages, which the kernel
touches as it first writes through them), its CPU per new process over the
interval, the size of a SIGUSR2 snapshot taken then, and the
bytes it has written to stderr so far.  RSS that levels off and snapshots of
a steady size are what a week-long run needs.

usage: sudo tests/bench/bench_soak.py [--build build] [--minutes 30]
           [--period 0.5] [--every 60] [--ring 16M] [--recorder PATH]
           [--stack dwarf|fp] [--out DIR]
"""
import argparse
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

DRIVER = r'''
import ctypes, os, subprocess, sys, time
end = time.monotonic() + float(sys.argv[1])
period = float(sys.argv[2])
lib = sys.argv[3]
count_path = sys.argv[4]
n = 0
while time.monotonic() < end:
    kids = [subprocess.Popen([sys.executable, "-c", "import json"]) for _ in range(2)]
    kids.append(subprocess.Popen(["sh", "-c", "readlink /nonexistent/x; exit 1"]))
    forked = []
    for _ in range(2):
        pid = os.fork()
        if pid == 0:
            sum(range(20000))
            os._exit(0)
        forked.append(pid)
    h = ctypes.CDLL(lib)
    count = ctypes.c_int(0)
    h.cudaGetDeviceCount(ctypes.byref(count))
    import _ctypes
    _ctypes.dlclose(h._handle)
    for k in kids:
        k.wait()
    for pid in forked:
        os.waitpid(pid, 0)
    n += 6  # 2 pythons, sh + readlink, 2 forks
    with open(count_path + ".tmp", "w") as f:
        f.write(str(n))
    os.replace(count_path + ".tmp", count_path)
    time.sleep(period)
'''


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def private_mib(pid):
    """The recorder's own memory: private dirty pages.  RSS also counts the
    pages of the BPF ring buffer (mapped twice, up to 2 x --buffer-mib) as the
    kernel first writes through them, which is not the recorder growing."""
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Private_Dirty:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def read_count(path):
    try:
        with open(path) as f:
            return int(f.read() or 0)
    except (OSError, ValueError):
        return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--recorder", help="flightrec binary (default BUILD/recorder/flightrec)")
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--period", type=float, default=0.5)
    ap.add_argument("--every", type=float, default=60)
    ap.add_argument("--ring", default="16M")
    ap.add_argument("--stack", default="dwarf")
    ap.add_argument("--out")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    rec = a.recorder or os.path.join(build, "recorder", "flightrec")
    lib = os.path.join(build, "samples", "cudart", "libcudart.so.12")
    out = a.out or tempfile.mkdtemp(prefix="flightrec-soak-")
    os.makedirs(out, exist_ok=True)
    drv = os.path.join(out, "driver.py")
    with open(drv, "w") as f:
        f.write(DRIVER)
    count_path = os.path.join(out, "count")
    log_path = os.path.join(out, "recorder.stderr")
    secs = a.minutes * 60
    cmd = [rec, "record", "-o", os.path.join(out, "soak.frec"), "--ring", a.ring,
           "--max-snapshots", "0", "--max-snapshot-bytes", "1T",
           "--stack", a.stack, "--", sys.executable, drv, str(secs), str(a.period), lib,
           count_path]
    log = open(log_path, "w")
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
    t0 = time.monotonic()
    rows = []
    print(f"# {' '.join(cmd)}", flush=True)
    print(f"{'t s':>7} {'procs':>7} {'RSS MiB':>8} {'own MiB':>8} {'CPU %':>6} "
          f"{'CPU ms/proc':>11} {'snap MB':>8} {'log bytes':>9}", flush=True)
    last_cpu, last_n, last_t = 0.0, 0, t0
    next_at = t0 + a.every
    while p.poll() is None:
        time.sleep(min(1.0, max(0.0, next_at - time.monotonic())))
        if time.monotonic() < next_at:
            continue
        next_at += a.every
        try:
            now = time.monotonic()
            c, n, r = cpu_s(p.pid), read_count(count_path), rss_mib(p.pid)
            own = private_mib(p.pid)
        except OSError:
            break
        log.flush()
        with open(log_path) as f:
            said = f.read().count("flightrec: snapshot ")
        os.kill(p.pid, signal.SIGUSR2)
        snap_mb = None
        for _ in range(600):  # the file is complete once its line is logged
            with open(log_path) as f:
                text = f.read()
            if text.count("flightrec: snapshot ") > said:
                files = glob.glob(os.path.join(out, "soak-*.frec"))
                if files:
                    snap_mb = max(os.path.getsize(x) for x in files) / 1e6
                for x in files:
                    os.unlink(x)  # the disk is shared
                break
            if p.poll() is not None:
                break
            time.sleep(0.1)
        dn = n - last_n
        row = {"t": round(now - t0, 1), "procs": n, "rss_mib": round(r, 1),
               "own_mib": round(own, 1),
               "cpu_pct": round(100 * (c - last_cpu) / (now - last_t), 1),
               "cpu_ms_per_proc": round(1000 * (c - last_cpu) / dn, 2) if dn else None,
               "snapshot_mb": round(snap_mb, 2) if snap_mb is not None else None,
               "log_bytes": os.path.getsize(log_path)}
        rows.append(row)
        print(f"{row['t']:>7} {n:>7} {r:>8.1f} {own:>8.1f} {row['cpu_pct']:>6} "
              f"{row['cpu_ms_per_proc'] if dn else '-':>11} "
              f"{row['snapshot_mb'] if snap_mb is not None else '-':>8} "
              f"{row['log_bytes']:>9}", flush=True)
        last_cpu, last_n, last_t = c, n, now
    p.wait()
    log.close()
    with open(log_path) as f:
        tail = f.read().splitlines()
    print(f"# stderr: {os.path.getsize(log_path)} bytes, {len(tail)} lines; last lines:")
    for line in tail[-4:]:
        print("#   " + line)
    with open(os.path.join(out, "soak.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print(f"# results in {out}/soak.json")


if __name__ == "__main__":
    main()
