#!/usr/bin/env python3
"""What scripts/gpu-check's --gpu-kernels recording must show, read with
the analyzer here: kernel records exist; each one's end is not before its
start, and a stream's kernels do not overlap (CUPTI's times on one clock);
every kernel joins the launch with its correlation id and starts after that
launch was made, at most WINDOW_S later; and the injected run's steps take at
most FACTOR times the bare run's.  Prints one line per check and exits 1
when one fails.

usage: gpu_kernels_check.py ANALYZE TRACE BARE_OUT KERNELS_OUT"""
import json
import re
import subprocess
import sys

FACTOR = 1.5     # step time under --gpu-kernels over bare
WINDOW_S = 10.0  # a kernel starts this long after its launch at most (a full queue)


def steps_s(path):
    with open(path) as f:
        m = re.search(r"(\d+) steps in ([0-9.]+) s", f.read())
    return float(m.group(2)) if m else None


def main():
    analyze, trace, bare_out, kern_out = sys.argv[1:5]
    p = subprocess.run([analyze, "dump", trace, "--type", "gpu_launch,gpu_kernel", "--no-stacks"],
                       capture_output=True, text=True)
    events = [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]
    launches = {(e["pid"], e["correlation_id"]): e for e in events if e["type"] == "gpu_launch"}
    kernels = [e for e in events if e["type"] == "gpu_kernel"]
    bad = []

    def check(ok, what):
        print("%s %s" % ("ok  " if ok else "FAIL", what))
        if not ok:
            bad.append(what)

    check(kernels, "%d kernel records, %d launches" % (len(kernels), len(launches)))
    check(all(k["end_ns"] >= k["start_ns"] for k in kernels), "every kernel ends after it starts")
    by_stream = {}
    for k in kernels:
        by_stream.setdefault((k["pid"], k["device"], k["stream"]), []).append(k)
    overlaps = 0
    for ks in by_stream.values():
        ks.sort(key=lambda k: k["start_ns"])
        overlaps += sum(b["start_ns"] < a["end_ns"] for a, b in zip(ks, ks[1:]))
    check(overlaps == 0, "%d streams, %d kernels overlapping the one before on their stream"
          % (len(by_stream), overlaps))
    joined = [(k, launches.get((k["pid"], k["correlation_id"]))) for k in kernels]
    orphans = sum(l is None for _, l in joined)
    check(orphans == 0, "%d kernels without their launch record" % orphans)
    outside = sum(1 for k, l in joined if l and not
                  (l["ts_ns"] <= k["start_ns"] <= l["ts_ns"] + WINDOW_S * 1e9))
    check(outside == 0, "%d kernels starting before their launch or more than %g s after"
          % (outside, WINDOW_S))
    bare, kern = steps_s(bare_out), steps_s(kern_out)
    check(bare and kern and kern <= FACTOR * bare,
          "steps: bare %s s, --gpu-kernels %s s (at most %.1fx)" % (bare, kern, FACTOR))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
