"""Helpers shared by the integration tests: where the programs are, running
the recorder and the analyzer, and reading their outputs.  Tests record real
processes with real probes; nothing here fakes a result."""
import contextlib
import json
import os
import shutil
import signal
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


def event_losses(trace, probe, units=("event",)):
    """{reason: count} of probe's losses in trace whose unit is one of units
    (`info --json`: "event", or what not_attached counts: "dlopen",
    "qp_or_context" — each a loss of events all the same)."""
    info = json.loads(analyze("info", "--json", trace).stdout)
    out = {}
    for loss in info["files"][0]["losses"]:
        if loss["probe"] == probe and loss["lost"] in units:
            out[loss["reason"]] = out.get(loss["reason"], 0) + loss["count"]
    return out


def cgroup2_root():
    """Where cgroup v2 is mounted (/sys/fs/cgroup, or /sys/fs/cgroup/unified
    on a hybrid host), None when it is not."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            if right.split()[0] == "cgroup2":
                return left.split()[4]
    return None


@contextlib.contextmanager
def cpu_burners(n=1):
    """n processes keeping a CPU busy each while the block runs (n=0: none)."""
    burners = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(n)]
    try:
        yield
    finally:
        for b in burners:
            b.kill()
            b.wait()


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
        # an object freed while bpftool walks the list (another recording
        # ending) fails that walk: walk again
        for _ in range(20):
            p = subprocess.run(["bpftool", "-j", what, "show"], capture_output=True, text=True)
            if p.returncode == 0:
                return json.loads(p.stdout or "[]")
            time.sleep(0.05)
        raise AssertionError(f"bpftool {what} show failed: {p.stdout} {p.stderr}")
    progs = {x["id"]: x.get("name", "") for x in show("prog")}
    ours = {i: n for i, n in progs.items() if n.startswith("fr_")}
    links = {x["id"]: (x.get("type", "?"), progs.get(x.get("prog_id"), "?")) for x in show("link")}
    return ours, {i: v for i, v in links.items() if v[1].startswith("fr_")}


def held_bpf_ids(pids=None):
    """(program ids, link ids) that open file descriptors of pids (None:
    every process) hold, as /proc/PID/fdinfo says (a link's program too)."""
    progs, links = set(), set()
    for pid in pids if pids is not None else os.listdir("/proc"):
        fddir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fddir)
        except (FileNotFoundError, NotADirectoryError, PermissionError, ProcessLookupError):
            continue
        for fd in fds:
            try:
                what = os.readlink(f"{fddir}/{fd}")
                if not what.startswith("anon_inode:bpf"):
                    continue
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    info = dict(line.split(":", 1) for line in f if ":" in line)
            except (FileNotFoundError, ProcessLookupError, PermissionError, OSError):
                continue
            if "link_id" in info:
                links.add(int(info["link_id"]))
            if "prog_id" in info:
                progs.add(int(info["prog_id"]))
    return progs, links


def left_behind(also=()):
    """flightrec's programs and links that no live process holds (a dead
    recorder's, not yet freed or leaked), and those that the processes in
    also (a job that might have inherited a descriptor) hold.  Other
    recorders running on this machine hold theirs: not counted."""
    progs, links = bpf_objects()
    live_p, live_l = held_bpf_ids()
    job_p, job_l = held_bpf_ids([str(p) for p in also])
    return ({i: n for i, n in progs.items() if i not in live_p or i in job_p},
            {i: v for i, v in links.items() if i not in live_l or i in job_l})


def no_programs_left(bound_s=120.0, also=()):
    """No flightrec program and no link to one (`bpftool prog show` and
    `bpftool link show`; uprobe_multi and perf-event uprobes are links) left
    behind (left_behind).  The kernel frees a dead process's programs after
    an RCU grace period: wait for that.  The bound is not a measurement: it
    is far past any grace period, and only turns a leaked program into a
    failure with a message instead of a ctest timeout."""
    end = time.monotonic() + bound_s
    while any(left_behind(also)):
        if time.monotonic() > end:
            return False
        time.sleep(0.1)
    return True


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


def wait_all_threads_stopped(pid, why):
    """Waits until every thread of pid is stopped: SIGSTOP reaches a
    process's threads one by one, and one still running on another CPU
    (the recorder's tracking thread) can act after kill() returns."""
    deadline = time.monotonic() + HANG_GUARD_S
    while time.monotonic() < deadline:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except FileNotFoundError:
            raise AssertionError(f"pid {pid} is gone ({why})")
        if all(proc_state(f"{pid}/task/{t}") in ("T", None) for t in tids):
            return
        time.sleep(0.005)
    raise AssertionError(f"pid {pid}'s threads never all stopped ({why})")


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


def start_held(cmd, env, why):
    """Starts the recording cmd of a sample that says "waiting for SIGUSR1"
    and waits for it before the call the recorder holds it at; stops the
    recorder (so it neither attaches nor lets go), lets the sample make the
    call and waits until it is held (stopped by the BPF side: nobody else
    stops it).  Returns (recorder, sample pid, the sample's output so far)."""
    rec = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=env)
    out = ""
    while "waiting for SIGUSR1" not in out:
        line = rec.stdout.readline()
        if not line:
            break
        out += line
    if "waiting for SIGUSR1" not in out:
        rec.kill()
        rec.wait()
        raise AssertionError(f"the sample never waited for SIGUSR1: {out}")
    sample = child_of(rec.pid)
    os.kill(rec.pid, signal.SIGSTOP)
    wait_all_threads_stopped(rec.pid, "the recorder stopped before the sample goes on")
    os.kill(sample, signal.SIGUSR1)
    try:
        wait_state(sample, {"T"}, why)
    except AssertionError:
        # a stopped recorder left behind keeps its probes on the sample's
        # libraries: every later test would see them
        rec.kill()
        rec.communicate(timeout=HANG_GUARD_S)
        raise
    return rec, sample, out


def wait_file_line(path, text, proc=None):
    """Waits until the file at path (a process's stderr, say) holds a line
    containing text; fails at once when proc ends first."""
    deadline = time.monotonic() + HANG_GUARD_S
    while time.monotonic() < deadline:
        with open(path) as f:
            got = f.read()
        if any(text in line for line in got.splitlines()):
            return got
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"exited {proc.returncode} before saying {text!r}:\n{got}")
        time.sleep(0.01)
    raise AssertionError(f"{path} never said {text!r}")


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
    """Runs the calling test file's cases.  Exits 1 when one failed, 77
    (ctest's skip: SKIP_RETURN_CODE in tests/integration/CMakeLists.txt) when
    none failed but one was skipped, 0 when every case ran and passed.  Each
    skip is printed as `frtest: SKIPPED <id>: <reason>` for scripts/test,
    which counts skips and, in CI, refuses those not on tests/skips-allowed."""
    require_root()
    prog = unittest.main(verbosity=2, exit=False)
    result = prog.result
    script = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    for case, reason in result.skipped:
        # named by the test file, as tests/skips-allowed names it
        cid = case.id()
        if cid.startswith("__main__."):
            cid = script + cid[len("__main__"):]
        print(f"frtest: SKIPPED {cid}: {reason}", flush=True)
    if not result.wasSuccessful():
        sys.exit(1)
    if result.testsRun == 0:
        print("frtest: no test ran", flush=True)
        sys.exit(1)
    sys.exit(77 if result.skipped else 0)
