"""The sched family: off-CPU time per system call, with the stack the
thread blocked at and the task that woke it.  samples/offcpu_waits blocks
its main thread in read() inside wait_for_batch() --rounds times, each time
woken by its worker process's write(), and a consumer thread in futex()
inside wait_for_signal(), each time woken by the producer thread; every
waker first waits until the waiting thread is asleep in its call, then
holds it --hold-ms more.  So each of those calls is a block of at least
that long, with a known waker: the counts and wakers are exact.  Repeated
with frame-pointer stacks and beside a CPU burner at 999 Hz; `flame --kind
offcpu` must total exactly what the events say, and --sched-min-us must
drop shorter blocks in the kernel."""
import os
import re
import frtest

ROUNDS, HOLD_MS = 20, 3


class Sched(frtest.Case):
    def record(self, name, extra=(), burners=0, rounds=ROUNDS, hold_ms=HOLD_MS):
        d = frtest.workdir(name)
        trace = os.path.join(d, "s.frec")
        with frtest.cpu_burners(burners):
            p = frtest.record(trace, ["--probes", "sched"] + list(extra),
                              ["--", frtest.sample("offcpu_waits"), "--rounds", str(rounds),
                               "--hold-ms", str(hold_ms)])
        truth = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", p.stdout.split("offcpu_truth")[1])}
        events = [e for e in frtest.dump(trace) if e["type"] == "sched"]
        return trace, truth, events

    def check_waits(self, truth, events, stack_frame):
        pid = truth["pid"]
        reads = [e for e in events if e["pid"] == pid and e["tid"] == pid and e["nr"] == 0
                 and stack_frame("wait_for_batch", e)]
        # on a mismatch, every read of the main thread: a missing event and
        # a stack without the frame read differently
        self.assertEqual(len(reads), truth["reads"],
                         [(e["t_s"], e["duration_ns"], e["waker_pid"], e.get("stack"))
                          for e in events if e["tid"] == pid and e["nr"] == 0])
        for e in reads:
            self.assertEqual((e["waker_pid"], e["waker_tid"]), (truth["worker_pid"],) * 2, e)
            self.assertEqual(e["waker_comm"], "offcpu_waits", e)
            self.assertEqual(e["waker_flags"], 0, e)
            self.assertGreaterEqual(e["duration_ns"], truth["hold_ms"] * 1_000_000, e)
            self.assertGreaterEqual(e["blocks"], 1, e)
            self.assertEqual(e["state"], 1, e)  # TASK_INTERRUPTIBLE
        futexes = [e for e in events if e["tid"] == truth["consumer_tid"] and e["nr"] == 202
                   and stack_frame("wait_for_signal", e)]
        self.assertEqual(len(futexes), truth["futex_waits"], events[:5])
        for e in futexes:
            self.assertEqual(e["pid"], pid, e)
            self.assertEqual((e["waker_pid"], e["waker_tid"]), (pid, truth["producer_tid"]), e)
            self.assertGreaterEqual(e["duration_ns"], truth["hold_ms"] * 1_000_000, e)
        return reads, futexes

    def test_wakers_and_stacks_dwarf(self):
        trace, truth, events = self.record("sched_dwarf")
        reads, futexes = self.check_waits(truth, events, lambda f, e: f in e.get("stack", []))
        # the whole stack, in order, down to main
        stack = reads[0]["stack"]
        self.assertEqual(stack[stack.index("main"):], ["main", "wait_for_batch", "read"], stack)
        # flame --kind offcpu: the calls' off-CPU time by stack, exactly
        folded = frtest.analyze("flame", trace, "--kind", "offcpu").stdout.splitlines()
        total = {}
        for line in folded:
            frames, value = line.rsplit(" ", 1)
            total[frames] = total.get(frames, 0) + int(value)
        at_batch = sum(v for k, v in total.items()
                       if ";wait_for_batch;read;[off-cpu] read" in k)
        self.assertEqual(at_batch, sum(e["duration_ns"] for e in reads), folded)
        at_signal = sum(v for k, v in total.items()
                        if ";wait_for_signal;" in k and k.endswith("[off-cpu] futex"))
        self.assertEqual(at_signal, sum(e["duration_ns"] for e in futexes), folded)
        self.assertEqual(sum(total.values()), sum(e["duration_ns"] for e in events))
        # SQLite's generic table holds every event
        db = os.path.join(os.path.dirname(trace), "s.db")
        frtest.analyze("sqlite", trace, "-o", db)
        import sqlite3
        con = sqlite3.connect(db)
        rows = con.execute("SELECT COUNT(*), SUM(duration_ns) FROM events_sched "
                           "WHERE tid = ? AND waker_pid = ? AND nr = 0",
                           (truth["pid"], truth["worker_pid"])).fetchone()
        self.assertEqual(rows, (len(reads), sum(e["duration_ns"] for e in reads)))

    def test_wakers_fp_beside_a_burner(self):
        # frame pointers: read() in libc has none, so the walk from it skips
        # wait_for_batch; main is its caller and the leaf is the call
        for run in range(2):
            with self.subTest(run=run):
                _, truth, events = self.record(f"sched_fp_{run}", ["--stack", "fp", "-F", "999"],
                                               burners=1)
                self.check_waits(truth, events,
                                 lambda f, e: {"wait_for_batch": "main",
                                               "wait_for_signal": "consumer"}[f] in e.get("stack", []))

    def test_min_duration_in_the_kernel(self):
        # a 200 ms minimum: the 3 ms blocks are gone, a 250 ms one stays
        _, truth, events = self.record("sched_min", ["--sched-min-us", "200000"], rounds=2,
                                       hold_ms=250)
        self.assertTrue(events)
        self.assertTrue(all(e["duration_ns"] >= 200_000_000 for e in events), events)
        reads = [e for e in events if e["tid"] == truth["pid"] and e["nr"] == 0 and
                 e["waker_pid"] == truth["worker_pid"]]
        self.assertEqual(len(reads), 2, events)
        _, truth, events = self.record("sched_min_short", ["--sched-min-us", "200000"], rounds=3)
        self.assertFalse([e for e in events if e["waker_tid"] in (truth["worker_pid"],
                                                                  truth["producer_tid"])], events)


if __name__ == "__main__":
    frtest.main()
