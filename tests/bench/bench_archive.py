#!/usr/bin/env python3
"""Benchmark of reading hostile archives (not a timed test; prints a table,
writes BUILD/bench/archive.json and never fails on a number): wall time and
peak RSS of `flightrec-analyze info` on archives built here with Python's
tarfile (compressed with the `zstd` program when present, else gzip):

  zeros-2g      a 2 GiB member of zeros named zeros.frec, under the default
                cap: decompressed into an unnamed temporary file, then found
                not to be a trace (exit 1)
  zeros-capped  the same with FLIGHTREC_ARCHIVE_MAX_MEMBER_MB=1024: refused
                from its header, nothing copied
  tiny-4096     4096 members, the most an archive may hold: one trace and
                4095 tiny files (skipped, ten warnings and a count)
  traces-4096   4096 members that are all copies of one trace: 4096 traces
                opened at once (two descriptors each)
  members-4097  one more member than the cap: refused
  deep-dotdot   a trace and 500 members named ../../.. up to 200 levels deep
                (skipped with warnings; nothing is ever written by name)

Each run gets a fresh, empty TMPDIR; the table says whether anything was
left in it.  The trace is the build's make_memory_trace output.

usage: tests/bench/bench_archive.py [--build build] [--out DIR] [--zeros-gib 2]
"""
import argparse
import io
import json
import os
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time


class Zeros(io.RawIOBase):
    """n bytes of zeros, read in pieces: never held in memory."""

    def __init__(self, n):
        self.left = n

    def readable(self):
        return True

    def readinto(self, b):
        k = min(len(b), self.left)
        b[:k] = bytes(k)
        self.left -= k
        return k


def write_archive(path, members):
    """members: (name, size, bytes or None for zeros); a tar.zst (zstd
    program) or tar.gz, streamed."""
    zstd = shutil.which("zstd")
    if zstd:
        path += ".tar.zst"
        with open(path, "wb") as f:
            p = subprocess.Popen([zstd, "-q", "-3", "-T0", "-c"], stdin=subprocess.PIPE, stdout=f)
            with tarfile.open(fileobj=p.stdin, mode="w|", format=tarfile.PAX_FORMAT) as t:
                add_members(t, members)
            p.stdin.close()
            p.wait()
    else:
        path += ".tar.gz"
        with tarfile.open(path, mode="w|gz", format=tarfile.PAX_FORMAT) as t:
            add_members(t, members)
    return path


def add_members(t, members):
    for name, size, data in members:
        info = tarfile.TarInfo(name)
        info.size = size
        info.mtime = 1714564800
        t.addfile(info, io.BytesIO(data) if data is not None else io.BufferedReader(Zeros(size)))


def run(cmd, env):
    """(exit, wall_s, peak_rss_kib, stderr) of cmd."""
    t0 = time.monotonic()
    if os.path.exists("/usr/bin/time"):
        p = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, capture_output=True, text=True,
                           env=env)
        wall = time.monotonic() - t0
        lines = p.stderr.rstrip("\n").split("\n")
        rss = int(lines[-1]) if lines and lines[-1].isdigit() else None
        return p.returncode, wall, rss, "\n".join(lines[:-1])
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.monotonic() - t0
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return p.returncode, wall, rss if rss > before else None, p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default=None, help="scratch directory (default: a new one in /tmp)")
    ap.add_argument("--zeros-gib", type=float, default=2.0)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    analyze = os.path.join(build, "analyzer", "flightrec-analyze")
    out = a.out or tempfile.mkdtemp(prefix="flightrec-bench-archive-")
    os.makedirs(out, exist_ok=True)
    trace_path = os.path.join(out, "ok.frec")
    subprocess.run([os.path.join(build, "tests", "unit", "make_memory_trace"), trace_path],
                   check=True, capture_output=True)
    with open(trace_path, "rb") as f:
        trace = f.read()

    zeros = int(a.zeros_gib * 2**30)
    ok = ("ok.frec", len(trace), trace)
    cases = [
        ("zeros-2g", [ok, ("zeros.frec", zeros, None)], {}),
        ("zeros-capped", None, {"FLIGHTREC_ARCHIVE_MAX_MEMBER_MB": "1024"}),
        ("tiny-4096", [ok] + [("m%04d.txt" % i, 1, b"x") for i in range(1, 4096)], {}),
        ("traces-4096", [("t%04d.frec" % i, len(trace), trace) for i in range(4096)], {}),
        ("members-4097", [ok] + [("m%04d.txt" % i, 1, b"x") for i in range(1, 4097)], {}),
        ("deep-dotdot", [ok] + [("../" * (1 + i % 200) + "x%03d.frec" % i, len(trace), trace)
                                for i in range(500)], {}),
    ]
    results = []
    archives = {}
    print("%-13s %5s %8s %13s %12s %9s  %s" % ("case", "exit", "wall s", "peak RSS MiB",
                                             "archive MiB", "tmp left", "first line of stderr"))
    for name, members, extra in cases:
        if members is None:  # the previous archive again
            path = archives["zeros-2g"]
        else:
            path = write_archive(os.path.join(out, name), members)
        archives[name] = path
        tmp = os.path.join(out, "tmpdir-" + name)
        os.makedirs(tmp, exist_ok=True)
        env = dict(os.environ, TMPDIR=tmp, **extra)
        if not extra:
            env.pop("FLIGHTREC_ARCHIVE_MAX_MEMBER_MB", None)
        code, wall, rss, err = run([analyze, "info", path], env)
        left = len(os.listdir(tmp))
        first = err.split("\n")[0] if err else ""
        first = first.replace(path, "ARCHIVE")
        size = os.path.getsize(path) / 2**20
        print("%-13s %5d %8.2f %13s %12.2f %9d  %.90s" % (
            name, code, wall, "%.1f" % (rss / 1024) if rss else "?", size, left, first))
        results.append({"case": name, "exit": code, "wall_s": round(wall, 3),
                        "peak_rss_kib": rss, "archive_bytes": os.path.getsize(path),
                        "stderr_lines": len(err.split("\n")) if err else 0,
                        "tmp_entries_left": left, "first_stderr_line": first})
    dest = os.path.join(build, "bench")
    os.makedirs(dest, exist_ok=True)
    with open(os.path.join(dest, "archive.json"), "w") as f:
        json.dump({"zstd_program": bool(shutil.which("zstd")), "zeros_bytes": zeros,
                   "results": results}, f, indent=1)
    print("wrote %s" % os.path.join(dest, "archive.json"))
    if not a.out:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
