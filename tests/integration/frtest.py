"""Helpers shared by the integration tests: where the programs are, running
the recorder and the analyzer, and reading their outputs.  Tests record real
processes with real probes; nothing here fakes a result."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
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



# Waiting on a process, for the hold tests.  The guard is a hang guard, not
# a measurement: it only ever fails a test that would otherwise hang.
HANG_GUARD_S = 60


def proc_state(pid):
    """The state letter of /proc/PID/stat, None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def child_of(pid):
    """The first child of pid, once it has one."""
    deadline = time.monotonic() + HANG_GUARD_S
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                kids = f.read().split()
        except FileNotFoundError:
            kids = []
        if kids:
            return int(kids[0])
        time.sleep(0.01)
    raise AssertionError(f"pid {pid} started no child")


def wait_comm(pid, comm):
    """Waits until pid runs the program named comm (it has exec'd)."""
    deadline = time.monotonic() + HANG_GUARD_S
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == comm:
                    return
        except FileNotFoundError:
            raise AssertionError(f"pid {pid} ended before it ran {comm}")
        time.sleep(0.005)
    raise AssertionError(f"pid {pid} never ran {comm}")


def wait_state(pid, want, why):
    """Waits until pid's state is one of want (None: gone)."""
    deadline = time.monotonic() + HANG_GUARD_S
    while time.monotonic() < deadline:
        st = proc_state(pid)
        if st in want:
            return st
        time.sleep(0.005)
    raise AssertionError(f"pid {pid} never reached {want} ({why}); state {proc_state(pid)}")

def main():
    require_root()
    unittest.main(verbosity=2)
