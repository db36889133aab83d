#!/usr/bin/env python3
"""Bytes per CPU sample of a real PyTorch training loop (torch_loop.py),
flightrec (--stack dwarf) against `perf record -g -F 99`.

The marginal cost is what a longer run adds: the same loop is recorded at
two step counts, and (size difference) / (sample difference) leaves out
what every recording pays once (symbols, unwind data, mappings).  For perf
the size is its data section (build-ids are left out: they are per file,
not per sample).  "events B/s" counts flightrec's EVENTS chunks only (the
samples and their stacks, without the metadata whose size varies by tens
of KiB from run to run with what the program loaded and named); for perf
it is the data section again.  With --compare flightrec is also recorded
with FLIGHTREC_USTACK_SPARSE=0: every stack copy whole, as format 1.1
wrote them.  Short step differences leave the per-sample bytes within the
metadata's noise: 8,120 gives about 1,000 samples of difference.

`--fields TRACE` instead breaks one trace's EVENTS chunks down: compressed
bytes per sample of each part of the FR_REC_USTACK records (registers,
kernel ips, Python frames, the stack copy) and of the events, and what two
other encodings would give (the chunks re-encoded and compressed with
zstd -1, as the recorder does):
  delta: each stack copy, its registers and Python frames XORed with the
         previous copy of the same thread in the same chunk (by address for
         the stack, from the root for the Python frames)
  stack ids: unwinding at record time, each distinct stack written once
         (estimated from the analyzer's merged stacks: 8 bytes a frame,
         halved by compression)

Needs root (eBPF), /usr/bin/python3 with torch (TORCH_PYTHON), perf, zstd.
Prints a table; never fails on a number.

  sudo python3 tests/bench/bench_sample_bytes.py --runs 3 --compare --steps 8,120
  python3 tests/bench/bench_sample_bytes.py --fields run.frec
"""
import argparse
import collections
import json
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FLIGHTREC = os.environ.get("FLIGHTREC", "build/recorder/flightrec")
ANALYZE = os.environ.get("FLIGHTREC_ANALYZE", "build/analyzer/flightrec-analyze")
PYTHON = os.environ.get("TORCH_PYTHON", "/usr/bin/python3")
LOOP = os.path.join(HERE, "torch_loop.py")

FR_CHUNK_MAGIC = 0x4b435246
FR_CHUNK_EVENTS = 2
FR_REC_USTACK = 0x10b
USTACK_FIXED = 168
FR_EV_CPU_SAMPLE = 1


def zlen(data):
    if not data:
        return 0
    return len(subprocess.run(["zstd", "-1", "-c", "-q"], input=bytes(data),
                              capture_output=True, check=True).stdout)


def events_chunks(path):
    """Decompressed payloads of the file's EVENTS chunks, in file order."""
    with open(path, "rb") as fh:
        b = fh.read()
    off = struct.unpack_from("<I", b, 12)[0]
    while off + 64 <= len(b):
        magic, ctype, codec, _, _, _, _, stored = struct.unpack_from("<IHBBIIII", b, off)
        if magic != FR_CHUNK_MAGIC:
            break
        pay = b[off + 64:off + 64 + stored]
        if ctype == FR_CHUNK_EVENTS:
            if codec == 1:
                pay = subprocess.run(["zstd", "-d", "-c", "-q"], input=pay,
                                     capture_output=True, check=True).stdout
            if codec in (0, 1):
                yield pay
        off += 64 + ((stored + 7) & ~7)


def records(pay):
    off = 0
    while off + 8 <= len(pay):
        size, typ = struct.unpack_from("<IH", pay, off)
        if size < 8 or off + size > len(pay):
            break
        yield typ, pay[off:off + size]
        off += size


def split_ustack(rec):
    n_kernel, n_py, stack_len = struct.unpack_from("<HHI", rec, 20)
    regs = rec[32:USTACK_FIXED]
    k_end = USTACK_FIXED + 8 * n_kernel
    p_end = k_end + 16 * n_py
    return (rec[:32], regs, rec[USTACK_FIXED:k_end], rec[k_end:p_end],
            rec[p_end:p_end + stack_len])


def xor(a, b):
    return bytes(x ^ y for x, y in zip(a, b))


def delta_encode(rec, prev):
    """The record with its registers, Python frames (root-aligned) and
    stack copy (address-aligned) XORed with prev's: what `delta` costs."""
    head, regs, kern, py, stack = split_ustack(rec)
    if prev is None:
        return rec
    phead, pregs, _, ppy, pstack = split_ustack(prev)
    regs2 = xor(regs, pregs)
    n, pn = len(py) // 16, len(ppy) // 16
    py2 = bytearray(py)
    for i in range(min(n, pn)):  # frame i from the root
        a, b = (n - 1 - i) * 16, (pn - 1 - i) * 16
        py2[a:a + 16] = xor(py[a:a + 16], ppy[b:b + 16])
    rsp = struct.unpack_from("<Q", regs, 7 * 8)[0]
    prsp = struct.unpack_from("<Q", pregs, 7 * 8)[0]
    stack2 = bytearray(stack)
    lo, hi = max(rsp, prsp), min(rsp + len(stack), prsp + len(pstack))
    if lo < hi:
        a, b = lo - rsp, lo - prsp
        stack2[a:a + hi - lo] = xor(stack[a:a + hi - lo], pstack[b:b + hi - lo])
    return head + regs2 + kern + bytes(py2) + bytes(stack2) + rec[len(head) + len(regs) + len(kern) + len(py) + len(stack):]


def fields(path):
    streams = collections.defaultdict(int)
    samples = ustacks = truncated = stack_bytes = 0
    whole = delta = 0
    for pay in events_chunks(path):
        parts = collections.defaultdict(bytearray)
        delta_pay = bytearray()
        last = {}
        for typ, rec in records(pay):
            if typ == FR_REC_USTACK:
                ustacks += 1
                head, regs, kern, py, stack = split_ustack(rec)
                truncated += (struct.unpack_from("<H", rec, 28)[0] & 1)
                stack_bytes += len(stack)
                parts["ustack header"] += head
                parts["registers"] += regs
                parts["kernel ips"] += kern
                parts["python frames"] += py
                parts["stack copy"] += stack
                tid = struct.unpack_from("<I", rec, 16)[0]
                delta_pay += delta_encode(rec, last.get(tid))
                last[tid] = rec
            else:
                if typ == FR_EV_CPU_SAMPLE:
                    samples += 1
                parts["events"] += rec
                delta_pay += rec
        for k, v in parts.items():
            streams[k] += zlen(v)
        whole += zlen(pay)
        delta += zlen(delta_pay)
    return samples, ustacks, truncated, stack_bytes, streams, whole, delta


def distinct_stacks(path):
    out = subprocess.run([ANALYZE, "dump", path, "--type", "cpu_sample"],
                         capture_output=True, text=True, check=True).stdout
    seen = {}
    for line in out.splitlines():
        st = tuple(json.loads(line).get("stack", []))
        seen[st] = len(st)
    return len(seen), sum(seen.values())


def print_fields(path):
    samples, ustacks, trunc, sbytes, streams, whole, delta = fields(path)
    if not samples:
        print(f"{path}: no CPU samples")
        return
    print(f"{path}: {samples} CPU samples, {ustacks} raw stacks, {trunc} copies "
          f"truncated at the copy size, mean copy {sbytes / max(ustacks, 1):.0f} B")
    print(f"{'part (each compressed alone)':34} {'B/sample':>9}")
    for k, v in sorted(streams.items(), key=lambda kv: -kv[1]):
        print(f"{k:34} {v / samples:9.1f}")
    n_st, frames = distinct_stacks(path)
    ev = streams.get("events", 0)
    ids = ev + 0.5 * 8 * frames
    print(f"{'encoding of the EVENTS chunks':34} {'B/sample':>9}")
    print(f"{'as recorded':34} {whole / samples:9.1f}")
    print(f"{'delta (XOR with previous copy)':34} {delta / samples:9.1f}")
    print(f"{'stack ids (est.: %d stacks)' % n_st:34} {ids / samples:9.1f}")


def events_stored(path):
    """bytes the file's EVENTS chunks take (headers included)"""
    with open(path, "rb") as fh:
        b = fh.read()
    off, total = struct.unpack_from("<I", b, 12)[0], 0
    while off + 64 <= len(b):
        magic, ctype, _, _, _, _, _, stored = struct.unpack_from("<IHBBIIII", b, off)
        if magic != FR_CHUNK_MAGIC:
            break
        size = 64 + ((stored + 7) & ~7)
        if ctype == FR_CHUNK_EVENTS:
            total += size
        off += size
    return total


def info(path):
    out = subprocess.run([ANALYZE, "info", "--json", path], capture_output=True,
                         text=True, check=True).stdout
    f = json.loads(out)["files"][0]
    cpu = sum(r["count"] for r in f["records_by_type"] if r["name"] == "cpu_sample")
    return f["size_bytes"], cpu, events_stored(path)


def perf_data_size(path):
    with open(path, "rb") as fh:
        head = fh.read(56)
    return struct.unpack_from("<Q", head, 48)[0]


def perf_samples(path):
    out = subprocess.run(["perf", "report", "-i", path, "--stats"], capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        if "SAMPLE events:" in line:
            return int(line.split(":")[1].split()[0])
    return 0


def record_flightrec(d, steps, env_extra):
    out = os.path.join(d, f"fr-{steps}.frec")
    env = dict(os.environ, **env_extra)
    subprocess.run([FLIGHTREC, "record", "--probes", "cpu", "-o", out, "--force", "--",
                    PYTHON, LOOP, str(steps)], capture_output=True, check=True, env=env)
    return info(out)


def record_perf(d, steps):
    out = os.path.join(d, f"perf-{steps}.data")
    # build-ids are not in the data section; this perf sometimes aborts
    # (stack smashing) while collecting them: leave them out, try again
    for attempt in range(3):
        p = subprocess.run(["perf", "record", "-g", "-F", "99", "--no-buildid", "-o", out,
                            "--", PYTHON, LOOP, str(steps)], capture_output=True)
        if p.returncode == 0:
            break
    else:
        raise RuntimeError(f"perf record failed: {p.stderr[-300:]}")
    size = perf_data_size(out)
    return size, perf_samples(out), size


def marginal(a, b, field=0):
    return (b[field] - a[field]) / (b[1] - a[1]) if b[1] != a[1] else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=None,
                    help="the build to measure (default: $FLIGHTREC or build/)")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--steps", default="8,120",
                    help="the two step counts (at 8,40 the metadata's run-to-run "
                         "variation swamps the samples' bytes)")
    ap.add_argument("--compare", action="store_true",
                    help="also flightrec with every stack copy whole (FLIGHTREC_USTACK_SPARSE=0)")
    ap.add_argument("--no-perf", action="store_true")
    ap.add_argument("--fields", metavar="TRACE")
    args = ap.parse_args()
    if args.build:
        global FLIGHTREC, ANALYZE
        FLIGHTREC = os.path.join(args.build, "recorder", "flightrec")
        ANALYZE = os.path.join(args.build, "analyzer", "flightrec-analyze")
    if args.fields:
        print_fields(args.fields)
        return 0
    lo, hi = (int(s) for s in args.steps.split(","))
    tools = [("flightrec", {})]
    if args.compare:
        tools.append(("flightrec whole", {"FLIGHTREC_USTACK_SPARSE": "0"}))
    if not args.no_perf:
        tools.append(("perf -g", None))
    print(f"{'tool':18} {'run':>3} {'samples ' + str(lo):>11} {'samples ' + str(hi):>11} "
          f"{'bytes ' + str(lo):>10} {'bytes ' + str(hi):>10} {'B/sample':>9} {'events B/s':>10}")
    with tempfile.TemporaryDirectory() as d:
        for run in range(args.runs):
            for name, env in tools:
                if env is None:
                    a, b = record_perf(d, lo), record_perf(d, hi)
                else:
                    a, b = record_flightrec(d, lo, env), record_flightrec(d, hi, env)
                m, ev = marginal(a, b), marginal(a, b, 2)
                print(f"{name:18} {run + 1:3} {a[1]:11} {b[1]:11} {a[0]:10} {b[0]:10} {m:9.1f} "
                      f"{ev:10.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
