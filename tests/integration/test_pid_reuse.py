"""A system call is closed only by the thread that entered it.  Under
process churn pids come round within minutes (pid_max is 32768 here), and a
thread that dies inside exit_group never leaves its call: before, the next
thread given its id closed that call at its own first system-call exit (its
return from clone), so the trace got an exit_group of minutes attributed to
a new process, with a time from before it was born; a stream of those
pinned the flight recorder's window and kept every exited process's
metadata.  samples/pid_reuse makes the kernel hand one pid out twice
(clone3 with set_tid), in two shapes: A exits (exit_group), or A is killed
in a blocking read (which the kernel does close, with -ERESTARTSYS: why
exit and exit_group are the only calls the probe leaves unrecorded).
B's sleep is checked for being recorded whole (nanosleep never returns
early), a lower bound that load only moves further away."""
import json
import os
import re
import frtest

ERESTARTSYS = -512
SLEEP_MS = 20


def events(trace):
    out = []
    for e in frtest.dump(trace, "--no-stacks"):
        if e["type"] in ("syscall", "proc_fork", "proc_exit"):
            out.append(e)
    return out


class PidReuse(frtest.Case):
    def record(self, mode, name, probes="syscalls", extra=()):
        d = frtest.workdir(name)
        trace = os.path.join(d, "reuse.frec")
        p = frtest.record(trace, ["--probes", probes, *extra],
                          ["--", frtest.sample("pid_reuse"), mode, str(SLEEP_MS)])
        m = re.search(r"reused pid (\d+)", p.stdout)
        self.assertIsNotNone(m, p.stdout + p.stderr)
        pid = int(m.group(1))
        evs = [e for e in events(trace) if e["pid"] == pid]
        forks = sorted(e["ts_ns"] for e in evs if e["type"] == "proc_fork")
        self.assertEqual(len(forks), 2, evs)  # A, then B with the same pid
        born_b = forks[1]
        calls = [e for e in evs if e["type"] == "syscall"]
        why = json.dumps(calls, indent=1)
        # no call of A's closed in B's life, none of B's before B was born
        for c in calls:
            self.assertFalse(c["ts_ns"] < born_b < c["ts_ns"] + c["duration_ns"], why)
        self.assertEqual([c for c in calls if c["name"] in ("exit", "exit_group")], [], why)
        # the control: B's own sleep is there, whole
        sleeps = [c for c in calls if c["name"] == "clock_nanosleep" and c["ts_ns"] >= born_b]
        self.assertEqual(len(sleeps), 1, why)
        self.assertGreaterEqual(sleeps[0]["duration_ns"], SLEEP_MS * 1000000, why)
        return calls, born_b

    def test_exited_thread_reused(self):
        self.record("exit", "pid_reuse_exit")

    def test_killed_in_read_reused(self):
        calls, born_b = self.record("killed", "pid_reuse_killed")
        # A's read is closed by A itself, at its death: -ERESTARTSYS, before B
        reads = [c for c in calls if c["name"] == "read" and c.get("fd") is not None
                 and c["ret"] == ERESTARTSYS]
        self.assertEqual(len(reads), 1, calls)
        self.assertLess(reads[0]["ts_ns"] + reads[0]["duration_ns"], born_b)

    def test_exact_under_load(self):
        """The same, repeated beside a busy CPU and a high sampling rate."""
        with frtest.cpu_burners(1):
            for i in range(3):
                self.record("exit", f"pid_reuse_load{i}", "syscalls,cpu", ["--freq", "999"])


if __name__ == "__main__":
    frtest.main()
