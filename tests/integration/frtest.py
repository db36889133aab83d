"""Helpers shared by the integration tests: where the programs are, running
the recorder and the analyzer, and reading their outputs.  Tests record real
processes with real probes; nothing here fakes a result."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

FLIGHTREC = os.environ.get("FLIGHTREC", "build/recorder/flightrec")
ANALYZE = os.environ.get("FLIGHTREC_ANALYZE", "build/analyzer/flightrec-analyze")
SAMPLES = os.environ.get("FLIGHTREC_SAMPLES", "build/samples")
OUT = os.environ.get("FLIGHTREC_TEST_OUT", tempfile.gettempdir())


def sample(name):
    return os.path.join(SAMPLES, name)


def require_root():
    if os.geteuid() != 0:
        print("SKIP: integration tests record with eBPF and need root")
        sys.exit(77)


def workdir(name):
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def record(out, args, target, check=True, timeout=120):
    """Runs `flightrec record -o out ARGS TARGET` and returns the process."""
    cmd = [FLIGHTREC, "record", "-o", out] + list(args) + list(target)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stderr}")
    return p


def analyze(*args, check=True, timeout=120):
    p = subprocess.run([ANALYZE] + [str(a) for a in args], capture_output=True,
                       text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"flightrec-analyze {' '.join(map(str, args))} exited "
                             f"{p.returncode}:\n{p.stderr}")
    return p


def folded(trace, *extra):
    """{stack (tuple of frames, root first): samples}"""
    out = analyze("flame", trace, "--kind", "cpu", "--format", "folded", *extra).stdout
    stacks = {}
    for line in out.splitlines():
        frames, _, value = line.rpartition(" ")
        stacks[tuple(frames.split(";"))] = stacks.get(tuple(frames.split(";")), 0) + int(value)
    return stacks


def dump(trace, *extra):
    """Events as dicts, from `flightrec-analyze dump` (JSON lines)."""
    out = analyze("dump", trace, *extra).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def attached_flightrec_programs():
    """Names of loaded BPF programs that belong to flightrec."""
    p = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError("bpftool prog show failed: " + p.stderr)
    progs = json.loads(p.stdout or "[]")
    return [x.get("name", "") for x in progs if x.get("name", "").startswith("fr_")]


def bpf_objects():
    """(flightrec's loaded programs, flightrec's links) as bpftool lists
    them: {id: name} of programs named fr_*, {link id: (type, program
    name)} of links whose program is one of them."""
    def show(what):
        p = subprocess.run(["bpftool", "-j", what, "show"], capture_output=True, text=True)
        if p.returncode != 0:
            raise AssertionError(f"bpftool {what} show failed: " + p.stderr)
        return json.loads(p.stdout or "[]")
    progs = {x["id"]: x.get("name", "") for x in show("prog")}
    ours = {i: n for i, n in progs.items() if n.startswith("fr_")}
    links = {x["id"]: (x.get("type", "?"), progs.get(x.get("prog_id"), "?")) for x in show("link")}
    return ours, {i: v for i, v in links.items() if v[1].startswith("fr_")}


class Case(unittest.TestCase):
    pass


def main():
    require_root()
    unittest.main(verbosity=2)
