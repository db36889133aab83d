"""The profile formats read by the real readers: `flame --format pprof`
decoded by Go's own `go tool pprof -raw` (Debian golang-go) and `flame
--format speedscope` validated against the JSON schema speedscope publishes
(tests/speedscope, npm ci), each with the same stacks and weights as `flame
--format folded`, for every kind, on two workloads shaped differently:
samples/cuda_train (cpu, cuda and syscalls probes: CPU samples, device
memory, CUDA API time, system-call time) and samples/cpu_split (CPU in
two functions, write calls).  The cuda and syscalls kinds are also checked
against the events themselves (`dump`): time per call made equals the
calls' durations, each CUDA call without the calls nested in it on its
thread.  A Python program calling back into Python through C (map, sorted)
checks --hide-interpreter: the interpreter's frames between two Python
frames go, nothing else does, and the total stays."""
import collections
import gzip
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import unittest
import frtest

HERE = os.path.dirname(os.path.abspath(__file__))
SPEEDSCOPE = os.path.join(HERE, "..", "speedscope")
GO = shutil.which("go")
NODE = shutil.which("node")

PY_PROG = r'''
import time
def leaf_work(x):
    s = 0
    for i in range(2000):
        s += i * x
    return s
def through_map(n):
    return sum(map(leaf_work, range(n)))
def through_sorted(n):
    return sorted(range(n), key=leaf_work)[:1]
def main():
    end = time.time() + 1.5
    while time.time() < end:
        through_map(50)
        through_sorted(50)
main()
'''


def parse_folded(text):
    out = collections.Counter()
    for line in text.splitlines():
        frames, _, value = line.rpartition(" ")
        out[tuple(frames.split(";"))] += int(value)
    return out


def go_pprof_raw(path):
    """(sample types, [(values, [frame names root first], labels)]) as
    `go tool pprof -raw` prints the profile."""
    p = subprocess.run([GO, "tool", "pprof", "-raw", path], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, HOME=os.environ.get("HOME", "/root")))
    if p.returncode != 0:
        raise AssertionError(f"go tool pprof -raw {path}: {p.stderr}")
    lines = p.stdout.splitlines()
    i = lines.index("Samples:")
    types = lines[i + 1].split()
    samples, locs = [], {}
    j = i + 2
    while j < len(lines) and lines[j] != "Locations":
        m = re.match(r"^\s+((?:-?\d+\s+)*?)(-?\d+): ?([\d ]*)$", lines[j])
        if m:
            values = [int(v) for v in (m.group(1) + m.group(2)).split()]
            ids = [int(x) for x in m.group(3).split()]
            samples.append([values, ids, {}])
        elif lines[j].strip() and samples:
            for k, v in re.findall(r"(\w+):\[([^\]]*)\]", lines[j]):
                samples[-1][2][k] = v
        j += 1
    for line in lines[j + 1:]:
        if line == "Mappings":
            break
        # "    12: 0x55d2 M=2 NAME FILE:LINE s=START()": pprof adds "()"
        # (the system name, which the analyzer leaves empty)
        m = re.match(r"^\s*(\d+): 0x[0-9a-f]+ (?:M=\d+ )?(.*) s=-?\d+(?:\(.*\))?$", line)
        assert m, line
        rest = m.group(2)
        py = re.match(r"^(.* \((.*?)(?::\d+)?\)) \2:-?\d+$", rest)
        if py:
            name = py.group(1)
        else:
            assert rest.endswith(" :0"), line
            name = rest[:-3]
        locs[int(m.group(1))] = name.replace(";", ":")
    return types, [(v, [locs[x] for x in reversed(ids)], lab) for v, ids, lab in samples]


def speedscope_read(path):
    p = subprocess.run([NODE, os.path.join(SPEEDSCOPE, "validate.js"), path],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise AssertionError(f"validate.js {path} exited {p.returncode}: {p.stderr}")
    return json.loads(p.stdout)


def nested_self_times(events):
    """ns per CUDA function, each call without the calls inside it on its
    thread (the nested call is written first: it returns first)"""
    per = collections.Counter()
    pending = collections.defaultdict(list)
    for e in events:
        start, dur = e["ts_ns"], e["duration_ns"]
        stack = pending[(e["file"], e["tid"])]
        inner = 0
        while stack and stack[-1][0] >= start and stack[-1][1] <= start + dur:
            inner += stack.pop()[2]
        stack.append((start, start + dur, dur))
        per[e["name"]] += max(dur - inner, 0)
    return per


class ProfileFormats(frtest.Case):
    @classmethod
    def setUpClass(cls):
        frtest.require_root()
        cls.dir = frtest.workdir("profile_formats")
        cls.cuda = os.path.join(cls.dir, "cuda.frec")
        frtest.record(cls.cuda, ["--probes", "cpu,cuda,syscalls", "-F", "499"],
                      ["--", frtest.sample("cuda_train"), "--steps", "6"])
        cls.split = os.path.join(cls.dir, "split.frec")
        frtest.record(cls.split, ["--probes", "cpu,syscalls"],
                      ["--", frtest.sample("cpu_split"), "1"])
        # frame-pointer stacks: ips, not names, for the user frames
        cls.split_fp = os.path.join(cls.dir, "split_fp.frec")
        frtest.record(cls.split_fp, ["--probes", "cpu", "--stack", "fp"],
                      ["--", frtest.sample("cpu_split"), "1"])
        cls.host = socket.gethostname()

    def folded(self, trace, kind, *extra):
        return parse_folded(frtest.analyze("flame", trace, "--kind", kind, *extra).stdout)

    def check_pprof(self, trace, kind, *extra):
        want = self.folded(trace, kind, *extra)
        self.assertTrue(want, (trace, kind))
        out = os.path.join(self.dir, f"{os.path.basename(trace)}.{kind}.pb.gz")
        frtest.analyze("flame", trace, "--kind", kind, "--format", "pprof", "-o", out, *extra)
        with open(out, "rb") as f:
            self.assertEqual(f.read(2), b"\x1f\x8b")  # gzip, as the format asks
        types, samples = go_pprof_raw(out)
        got = collections.Counter()
        # folded counts samples for cpu, the value (bytes, ns) otherwise
        col = 0 if kind == "cpu" else len(types) - 1
        for values, frames, labels in samples:
            self.assertEqual(len(values), len(types))
            if values[col]:
                got[tuple(frames)] += values[col]
            self.assertEqual(labels.get("host"), self.host, labels)
            self.assertRegex(labels.get("pid", ""), r"^\d+$")
        self.assertEqual(dict(got), dict(want), (trace, kind))
        return types, samples

    def test_pprof_every_kind_equals_folded(self):
        for trace, kinds in ((self.cuda, ("cpu", "mem-inuse", "mem-alloc", "cuda", "syscalls")),
                             (self.split, ("cpu", "syscalls")), (self.split_fp, ("cpu",))):
            for kind in kinds:
                with self.subTest(trace=os.path.basename(trace), kind=kind):
                    self.check_pprof(trace, kind)

    def test_pprof_mappings_name_the_files(self):
        """Both stack modes: the sample's executable and libc as mappings with
        their file, offsets and build id (the executable's as readelf reads
        it from the file)."""
        for trace in (self.split, self.split_fp):
            with self.subTest(trace=os.path.basename(trace)):
                out = trace + ".pb.gz"
                frtest.analyze("flame", trace, "--format", "pprof", "-o", out)
                raw = subprocess.run([GO, "tool", "pprof", "-raw", out], capture_output=True,
                                     text=True, timeout=300).stdout
                maps = raw.split("Mappings", 1)[1]
                exe = os.path.realpath(frtest.sample("cpu_split"))
                m = re.search(r"^\d+: 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ (\S+) ([0-9a-f]{40}) \[FN\]$",
                              maps, re.M)
                self.assertIsNotNone(m, maps[:500])
                self.assertEqual(os.path.realpath(m.group(1)), exe)  # the main binary first
                notes = subprocess.run(["readelf", "-n", exe], capture_output=True, text=True).stdout
                self.assertIn("Build ID: " + m.group(2), notes)
                self.assertRegex(maps, r"libc\.so\.6 [0-9a-f]{40} \[FN\]")
                # every location of the executable's functions is in a mapping
                self.assertRegex(raw, r"0x[0-9a-f]+ M=\d+ compute_heavy ")

    def test_pprof_cpu_time_and_labels(self):
        types, samples = self.check_pprof(self.cuda, "cpu")
        self.assertEqual(types, ["samples/count", "cpu/nanoseconds"])
        period = 1_000_000_000 // 499  # -F 499
        for values, _, labels in samples:
            self.assertEqual(values[1], values[0] * period)
            self.assertEqual(labels["process"], "cuda_train", labels)
            self.assertRegex(labels["thread"], r"^\d+$")
        # one process here: every sample names the pid `dump` shows
        pids = {e["pid"] for e in frtest.dump(self.cuda, "--type", "cpu_sample")}
        self.assertEqual({s[2]["pid"] for s in samples}, {str(p) for p in pids})
        types, _ = self.check_pprof(self.cuda, "mem-alloc")
        self.assertEqual(types, ["alloc_objects/count", "alloc_space/bytes"])

    def test_pprof_top_and_traces(self):
        out = os.path.join(self.dir, "split.pb.gz")
        frtest.analyze("flame", self.split, "--format", "pprof", "-o", out)
        top = subprocess.run([GO, "tool", "pprof", "-top", out], capture_output=True,
                             text=True, timeout=300)
        self.assertEqual(top.returncode, 0, top.stderr)
        self.assertIn("compute_heavy", top.stdout)
        self.assertIn("File: cpu_split", top.stdout)  # the executable is the main binary
        traces = subprocess.run([GO, "tool", "pprof", "-traces", out], capture_output=True,
                                text=True, timeout=300)
        self.assertEqual(traces.returncode, 0, traces.stderr)
        self.assertIn("compute_light", traces.stdout)

    def test_cuda_time_equals_events(self):
        events = [e for e in frtest.dump(self.cuda, "--type", "cuda")]
        want = nested_self_times(events)
        got = collections.Counter()
        for frames, ns in self.folded(self.cuda, "cuda").items():
            got[frames[-1]] += ns
        self.assertEqual({k: v for k, v in got.items() if v}, {k: v for k, v in want.items() if v})
        launches = [e for e in events if e["name"] == "cudaLaunchKernel"]
        self.assertTrue(launches)
        no_stack = sum(ns for frames, ns in self.folded(self.cuda, "cuda").items()
                       if frames[0] == "[no stack]")
        self.assertEqual(no_stack, sum(e["duration_ns"] for e in events if not e.get("stack")))
        p = frtest.analyze("flame", self.cuda, "--kind", "cuda")
        self.assertIn(f"of {len(launches)} kernel launches carry a stack "
                      "(the recorder takes one launch in 64)", p.stderr)

    def test_syscall_time_equals_events(self):
        for trace in (self.cuda, self.split):
            with self.subTest(trace=os.path.basename(trace)):
                want = collections.Counter()
                for e in frtest.dump(trace, "--type", "syscall"):
                    want["[syscall] " + e["name"]] += e["duration_ns"]
                got = collections.Counter()
                for frames, ns in self.folded(trace, "syscalls").items():
                    got[frames[-1]] += ns
                self.assertEqual({k: v for k, v in got.items() if v},
                                 {k: v for k, v in want.items() if v})

    def test_report_title_and_cuda_time_graph(self):
        out = os.path.join(self.dir, "report.html")
        frtest.analyze("report", self.cuda, "-o", out)
        with open(out) as f:
            page = f.read()
        # the job's command, not the recorder's line around it
        self.assertIn(f"<title>flightrec report: {frtest.sample('cuda_train')} --steps 6</title>", page)
        data = json.loads(re.search(r'<script type="application/json" id="fr-data">(.*?)</script>',
                                    page, re.S).group(1))
        tree = data["cuda"]["time_tree"]
        self.assertEqual(tree["total"], sum(self.folded(self.cuda, "cuda").values()))
        self.assertIn("cudaMemcpy", tree["names"])
        self.assertEqual(data["cuda"]["launch_stack_every"], 64)

    def test_speedscope_every_kind_equals_folded(self):
        if not NODE or not os.path.isdir(os.path.join(SPEEDSCOPE, "node_modules")):
            self.skipTest("node or tests/speedscope/node_modules missing (npm ci there)")
        units = {"cpu": "nanoseconds", "mem-inuse": "bytes", "mem-alloc": "bytes",
                 "cuda": "nanoseconds", "syscalls": "nanoseconds"}
        for trace, kinds in ((self.cuda, units), (self.split, ("cpu", "syscalls"))):
            for kind in kinds:
                with self.subTest(trace=os.path.basename(trace), kind=kind):
                    want = self.folded(trace, kind)
                    out = os.path.join(self.dir, f"{os.path.basename(trace)}.{kind}.speedscope.json")
                    frtest.analyze("flame", trace, "--kind", kind, "--format", "speedscope", "-o", out)
                    doc = speedscope_read(out)
                    got = collections.Counter()
                    for prof in doc["profiles"]:
                        self.assertEqual(prof["unit"], units[kind])
                        self.assertIn(" on " + self.host, prof["name"])
                        for frames, w in prof["stacks"]:
                            if w:
                                got[tuple(f.replace(";", ":") for f in frames)] += w
                    if kind == "cpu":  # speedscope weighs in nanoseconds: samples x period
                        period = 1_000_000_000 // (499 if trace == self.cuda else 99)
                        want = collections.Counter({k: v * period for k, v in want.items()})
                    self.assertEqual(dict(got), dict(want))

    def test_speedscope_validator_rejects(self):
        """The check can fail: a unit speedscope does not know is refused."""
        if not NODE or not os.path.isdir(os.path.join(SPEEDSCOPE, "node_modules")):
            self.skipTest("node or tests/speedscope/node_modules missing (npm ci there)")
        out = os.path.join(self.dir, "bad.speedscope.json")
        frtest.analyze("flame", self.split, "--format", "speedscope", "-o", out)
        with open(out) as f:
            doc = json.load(f)
        doc["profiles"][0]["unit"] = "samples"
        with open(out, "w") as f:
            json.dump(doc, f)
        p = subprocess.run([NODE, os.path.join(SPEEDSCOPE, "validate.js"), out],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 1, p.stderr)


class HideInterpreter(frtest.Case):
    def test_python_callbacks_through_c(self):
        d = frtest.workdir("profile_formats_py")
        trace = os.path.join(d, "py.frec")
        prog = os.path.join(d, "callbacks.py")
        with open(prog, "w") as f:
            f.write(PY_PROG)
        frtest.record(trace, ["--probes", "cpu", "-F", "499"], ["--", "/usr/bin/python3", prog])
        full = parse_folded(frtest.analyze("flame", trace).stdout)
        hidden = parse_folded(frtest.analyze("flame", trace, "--hide-interpreter").stdout)
        self.assertEqual(sum(full.values()), sum(hidden.values()))
        py = lambda f: f == "[unknown python]" or re.match(r"^\S+ \(.*\)$", f) is not None
        # the Python callers sit right above leaf_work once the interpreter's
        # frames between them are gone
        callers = collections.Counter()
        for frames, n in hidden.items():
            for a, b in zip(frames, frames[1:]):
                if b.startswith("leaf_work ("):
                    callers[a.split(" ")[0]] += n
        self.assertGreater(callers["through_map"], 0, callers)
        self.assertGreater(callers["through_sorted"], 0, callers)
        between_full = collections.Counter()
        for frames, n in full.items():
            idx = [i for i, f in enumerate(frames) if py(f)]
            for i, j in zip(idx, idx[1:]):
                for f in frames[i + 1:j]:
                    between_full[f] += n
        self.assertTrue(between_full, "no native frames between Python frames to hide")
        # nothing else goes: every Python frame stays, and so does every
        # frame above the first or below the last Python frame of a stack
        def outside_and_python(stacks):
            c = collections.Counter()
            for frames, n in stacks.items():
                idx = [i for i, f in enumerate(frames) if py(f)]
                for i, f in enumerate(frames):
                    if py(f) or not idx or i < idx[0] or i > idx[-1]:
                        c[(f, py(f))] += n
            return c
        self.assertEqual(outside_and_python(full), outside_and_python(hidden))
        gone = sum(len(f) * n for f, n in full.items()) - sum(len(f) * n for f, n in hidden.items())
        self.assertGreater(gone, 0)
        # and what went was the interpreter's: none of leaf_work's callers' C
        # frames that are not CPython's (there are none in this program)
        left_between = collections.Counter()
        for frames, n in hidden.items():
            idx = [i for i, f in enumerate(frames) if py(f)]
            for i, j in zip(idx, idx[1:]):
                for f in frames[i + 1:j]:
                    left_between[f] += n
        self.assertFalse(left_between, left_between.most_common(5))
        if GO:
            out = os.path.join(d, "py.pb.gz")
            frtest.analyze("flame", trace, "--hide-interpreter", "--format", "pprof", "-o", out)
            _, samples = go_pprof_raw(out)
            got = collections.Counter()
            for values, frames, _ in samples:
                got[tuple(frames)] += values[0]
            self.assertEqual(dict(got), dict(hidden))
            # Python frames carry file and line: -list shows the source
            p = subprocess.run([GO, "tool", "pprof", "-list", "leaf_work", "-source_path", d, out],
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("ROUTINE", p.stdout)
            self.assertIn("s += i * x", p.stdout)


if __name__ == "__main__":
    if not GO:
        print("SKIP: go (Debian golang-go, scripts/install-deps) is needed to read pprof files")
        sys.exit(77)
    frtest.main()
