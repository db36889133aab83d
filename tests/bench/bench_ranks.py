#!/usr/bin/env python3
"""How the analyzer grows with the number of ranks (not a timed test; prints
a table, writes BUILD/bench/ranks.json, never fails on a number; no root).

For each rank count (8 ranks per node by default) samples/gen_ranks writes
one synthetic trace per node: every rank computes (CPU samples on two
stacks) and makes one NCCL allreduce per step; one rank enters every
collective --late-ms late; each node's realtime clock is off by its own
skew.  Generation is timed apart from the analysis.  Then, each in a fresh
process, measured with wait4 (wall time and that process's own peak RSS):
  stragglers --json     (and whether it names the straggler: printed only)
  report -o FILE
  summary               (its standard output; it has no --jobs)
  sqlite -o FILE --force
  export clickhouse --url URL --database rN_jJ --create
(--commands picks some of them).  For export a clickhouse-server is started
once for the bench (unprivileged on 127.0.0.1, a temporary config, as
tests/integration/test_export_clickhouse.py starts it; needs root for
setpriv); each export goes into a fresh database, and its row counts are
checked (recordings = job_recordings = files, collectives = ranks x
steps, rank_steps = ranks x (steps - 1), stragglers = ranks): a count off
is printed as WRONG.  Only the analyzer's process is measured, not the
server's.  A job's recording ids are rows of job_recordings, one per
recording (CLICKHOUSE.md), so what export sends grows with the rows, not
rows x files.
each with every --jobs N of --jobs (default 1,2: the serial path, then two
threads decompressing ahead), and whether the output is the same for every
N (it must be).  CPU is the process's user + system time (wait4): on a
shared machine wall time also counts the other processes.
Growth: the ratio of each number between successive rank counts; with 4x
the ranks, 4.0 is linear.

Memory: for each command, peak RSS against the number of trace files is
fitted to a line (least squares over the rank counts run), printed as
"bound: CMD: F MiB fixed + P KiB per trace file", with CPU ms per rank at
each count (flat means linear CPU).  Measured last on 1,024 / 4,096 /
16,384 ranks (128 / 512 / 2,048 files, 8 ranks per node, 200 steps,
--jobs 1, 2026-12-05, the machine otherwise idle):
  stragglers  11 MiB fixed + 309 KiB per trace file (39 KiB per rank);
              CPU 0.27 / 0.27 / 0.26 ms per rank; 629 MiB at 16,384
              (then, the events pass taking the align pass's NCCL
              build: 42 / 136 / 512 MiB, 3.9 s CPU at 16,384)
  report      15 MiB fixed + 460 KiB per trace file (58 KiB per rank);
              CPU 0.42 / 0.46 / 0.43 ms per rank; 935 MiB at 16,384
  summary     13 MiB fixed + 459 KiB per trace file (57 KiB per rank);
              CPU 0.42 / 0.40 / 0.39 ms per rank; 931 MiB at 16,384
  export      27 MiB fixed + 456 KiB per trace file (57 KiB per rank);
              CPU 1.11 / 0.98 / 0.96 ms per rank; 939 MiB at 16,384
(2026-12-04, before the stragglers and findings models counted their CPU
samples in a second look at the events instead of keeping them, the clock
alignment took one entry per (collective, node) instead of per member,
and a call's common-timeline times were computed instead of stored:
stragglers 486 KiB per file, 0.98 GB and 5.6 s CPU at 16,384; report and
summary 795 KiB per file, 1.60 GB, 8.5 and 7.8 s; export failed from 512
files on, its delete's query too long for a URL.)  The per-file part is
what the models keep until finish: every rank's NCCL calls (80 bytes each:
1,608 per file here) and the ranks and steps built from them, the findings
model's per-process events other than samples, and each file's metadata
(mappings, stacks, symbols).  Memory is linear in the ranks and in the
collectives per rank, not bounded: the cross-rank results (which instance
each call joined, each instance's latest entry) need every rank's calls at
once.

usage: tests/bench/bench_ranks.py [--build build] [--ranks 64,256,1024]
                                  [--ranks-per-node 8] [--steps 200]
                                  [--late-ms 10] [--jobs 1,2] [--out DIR]
                                  [--commands stragglers,report,summary,sqlite,export]
  the large sizes: --ranks 1024,4096,16384 --jobs 1 (minutes each)
"""
import filecmp
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))


def run_measured(cmd, stdout_path):
    """Runs cmd in a fresh process; returns (wall_s, peak_rss_kib, rc, cpu_s)."""
    with open(stdout_path, "w") as out, open(stdout_path + ".err", "w") as err:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        with open(stdout_path + ".err") as f:
            print("FAILED (%d): %s\n%s" % (p.returncode, " ".join(cmd), f.read()), file=sys.stderr)
    return wall, ru.ru_maxrss, p.returncode, ru.ru_utime + ru.ru_stime  # ru_maxrss: KiB


def straggler_named(json_path):
    try:
        with open(json_path) as f:
            s = json.load(f).get("straggler")
        return s.get("rank") if s else None
    except (OSError, ValueError, AttributeError):
        return "unreadable"


def start_clickhouse():
    from test_export_clickhouse import Server  # its server: same config, same start
    return Server()


def export_counts(server, db):
    """Row count of each exported table of db."""
    rows = server.query("SELECT name FROM system.tables WHERE database = '%s'" % db)
    return {r["name"]: int(server.query("SELECT count() AS n FROM %s.%s" % (db, r["name"]))[0]["n"])
            for r in rows}


def export_wrong(counts, nfiles, ranks, steps):
    """The expected counts that the export missed, as 'table: got != want'."""
    # gen_ranks: one allreduce per step per rank; the steps between them
    want = {"recordings": nfiles, "job_recordings": nfiles, "collectives": ranks * steps,
            "stragglers": ranks,
            "rank_steps": ranks * (steps - 1)}
    return ["%s: %s != %d" % (t, counts.get(t), w) for t, w in want.items() if counts.get(t) != w]


def line_fit(xs, ys):
    """Least-squares (intercept, slope) of ys over xs; None below 2 points."""
    n = len(xs)
    if n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if not sxx:
        return None
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - slope * mx, slope


def ratio(a, b):
    return b / a if a and b else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--ranks", default="64,256,1024", help="comma-separated rank counts")
    ap.add_argument("--ranks-per-node", type=int, default=8)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--late-ms", type=float, default=10)
    ap.add_argument("--jobs", default="1,2", help="comma-separated --jobs values")
    ap.add_argument("--out", default="/tmp/flightrec-bench-ranks")
    ap.add_argument("--commands", default="stragglers,report,summary,sqlite",
                    help="comma-separated commands to time")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    gen = os.path.join(build, "samples", "gen_ranks")
    analyze = os.path.join(build, "analyzer", "flightrec-analyze")
    for exe in (gen, analyze):
        if not os.access(exe, os.X_OK):
            sys.exit("bench_ranks: %s not built (cmake --build %s)" % (exe, a.build))
    counts = [int(x) for x in a.ranks.split(",") if x]
    jobs_list = [int(x) for x in a.jobs.split(",") if x]
    wanted = set(x for x in a.commands.split(",") if x)
    server = start_clickhouse() if "export" in wanted else None
    try:
        run_all(a, gen, analyze, counts, jobs_list, wanted, server, build)
    finally:
        if server:
            server.stop()
            subprocess.run(["rm", "-rf", server.dir])


def run_all(a, gen, analyze, counts, jobs_list, wanted, server, build):

    results = []
    rows = []
    for n in counts:
        straggler = n * 5 // 8 + 3  # on a node other than the reference one
        d = os.path.join(a.out, "r%d" % n)
        subprocess.run(["rm", "-rf", d], check=True)
        os.makedirs(a.out, exist_ok=True)
        t0 = time.monotonic()
        subprocess.run([gen, "--ranks", str(n), "--ranks-per-node", str(a.ranks_per_node),
                        "--steps", str(a.steps), "--straggler", str(straggler),
                        "--late-ms", str(a.late_ms), "--out", d], check=True, stdout=subprocess.DEVNULL)
        gen_s = time.monotonic() - t0
        files = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".frec"))
        mib = sum(os.path.getsize(f) for f in files) / 2**20
        print("generated %d ranks: %d files, %.1f MiB in %.1f s" % (n, len(files), mib, gen_s))
        entry = {"ranks": n, "files": len(files), "trace_mib": mib, "generate_s": gen_s,
                 "straggler": straggler, "commands": {}}
        cmds = []
        for j in jobs_list:
            jj = ["--jobs", str(j)]
            cmds += [("stragglers", j, [analyze, "stragglers"] + files + ["--json"] + jj,
                      os.path.join(d, "stragglers-j%d.json" % j)),
                     ("report", j, [analyze, "report"] + files + ["-o", os.path.join(d, "report-j%d.html" % j)] + jj,
                      os.path.join(d, "report-j%d.html" % j)),
                     # summary takes no --jobs: its pass is the serial one for every N
                     ("summary", j, [analyze, "summary"] + files, os.path.join(d, "summary-j%d.txt" % j)),
                     ("sqlite", j, [analyze, "sqlite"] + files + ["-o", os.path.join(d, "trace-j%d.db" % j), "--force"] + jj,
                      os.path.join(d, "trace-j%d.db" % j))]
            if server:
                # the server is the bench's own: every database is new
                cmds.append(("export", j, [analyze, "export", "clickhouse"] + files +
                             ["--url", server.url, "--database", "r%d_j%d" % (n, j), "--create"] + jj,
                             os.path.join(d, "export-j%d.out" % j)))
        cmds = [c for c in cmds if c[0] in wanted]
        for name, j, cmd, result_path in cmds:
            stdout_path = result_path if name in ("stragglers", "summary") else os.path.join(d, "%s-j%d.out" % (name, j))
            wall, rss_kib, rc, cpu = run_measured(cmd, stdout_path)
            c = {"jobs": j, "wall_s": wall, "cpu_s": cpu, "peak_rss_mib": rss_kib / 1024, "rc": rc,
                 "s_per_rank": wall / n, "cpu_ms_per_rank": 1000 * cpu / n}
            first = os.path.join(d, os.path.basename(result_path).replace("-j%d" % j, "-j%d" % jobs_list[0]))
            if name == "export":
                got = export_counts(server, "r%d_j%d" % (n, j))
                wrong = export_wrong(got, len(files), n, a.steps)
                c["rows"] = got
                c["same_as_jobs_%d" % jobs_list[0]] = got == entry["commands"].get(
                    "export@j%d" % jobs_list[0], c)["rows"]
                print("  export rows %s: %s" % (", ".join("%s %d" % kv for kv in sorted(got.items())),
                                               "right" if not wrong else "WRONG " + "; ".join(wrong)))
            else:
                c["same_as_jobs_%d" % jobs_list[0]] = filecmp.cmp(first, result_path, shallow=False)
            if name == "stragglers":
                named = straggler_named(stdout_path)
                c["straggler_named"] = named
                c["straggler_right"] = named == straggler
                print("  stragglers names rank %s (expected %d): %s" %
                      (named, straggler, "right" if named == straggler else "WRONG"))
            key = "%s@j%d" % (name, j)
            entry["commands"][key] = c
            rows.append((n, len(files), mib, key, c))
        results.append(entry)

    print()
    print("%6s %6s %9s  %-14s %8s %8s %13s %12s %5s" %
          ("ranks", "files", "trace MiB", "command", "wall s", "CPU s", "peak RSS MiB", "CPU ms/rank",
           "same"))
    for n, nfiles, mib, name, c in rows:
        print("%6d %6d %9.1f  %-14s %8.2f %8.2f %13.1f %12.3f %5s" %
              (n, nfiles, mib, name, c["wall_s"], c["cpu_s"], c["peak_rss_mib"], c["cpu_ms_per_rank"],
               "yes" if c["same_as_jobs_%d" % jobs_list[0]] else "NO"))

    bounds = {}
    print()
    for name in (results[0]["commands"] if results else {}):
        xs = [r["files"] for r in results]
        fit = line_fit(xs, [r["commands"][name]["peak_rss_mib"] for r in results])
        per_rank = ", ".join("%.3f" % r["commands"][name]["cpu_ms_per_rank"] for r in results)
        if fit:
            bounds[name] = {"fixed_mib": fit[0], "per_file_kib": fit[1] * 1024,
                            "per_rank_kib": fit[1] * 1024 / a.ranks_per_node}
            print("bound: %s: %.1f MiB fixed + %.1f KiB per trace file (%.1f KiB per rank); CPU ms per rank %s" %
                  (name, fit[0], fit[1] * 1024, fit[1] * 1024 / a.ranks_per_node, per_rank))
        else:
            print("bound: %s: one size only; CPU ms per rank %s" % (name, per_rank))

    growth = []
    if len(results) > 1:
        print()
        print("growth (x ranks: %s)" % ", ".join("%d/%d" % (b["ranks"], p["ranks"])
                                                  for p, b in zip(results, results[1:])))
        print("%-14s %-8s %s" % ("command", "of", "ratios (ranks ratio, then each number's)"))
        for p, b in zip(results, results[1:]):
            g = {"from": p["ranks"], "to": b["ranks"], "ranks": b["ranks"] / p["ranks"],
                 "trace_mib": ratio(p["trace_mib"], b["trace_mib"]), "commands": {}}
            for name in b["commands"]:
                pc, bc = p["commands"][name], b["commands"][name]
                g["commands"][name] = {"wall_s": ratio(pc["wall_s"], bc["wall_s"]),
                                       "cpu_s": ratio(pc["cpu_s"], bc["cpu_s"]),
                                       "peak_rss_mib": ratio(pc["peak_rss_mib"], bc["peak_rss_mib"])}
            growth.append(g)
        fmt = lambda x: "%.2f" % x if x else "?"
        for g in growth:
            label = "%d/%d" % (g["to"], g["from"])
            print("%-14s %-8s ranks %.1f, trace MiB %s" % ("(input)", label, g["ranks"], fmt(g["trace_mib"])))
            for name, c in g["commands"].items():
                print("%-14s %-8s wall %s, CPU %s, peak RSS %s" % (name, label, fmt(c["wall_s"]), fmt(c["cpu_s"]),
                                                                 fmt(c["peak_rss_mib"])))

    out = os.path.join(build, "bench")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "ranks.json")
    with open(path, "w") as f:
        json.dump({"ranks_per_node": a.ranks_per_node, "steps": a.steps, "late_ms": a.late_ms, "jobs": jobs_list,
                   "runs": results, "growth": growth, "bounds": bounds}, f, indent=1)
    print("results: " + path)


if __name__ == "__main__":
    main()
