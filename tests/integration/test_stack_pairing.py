"""Every event keeps its own stack.  samples/cuda_train recorded again and
again with CPU sampling at a high rate (the CPU-sample program then runs from
the timer interrupt inside the cuda return probes, on the same CPU), some
runs with another process keeping a CPU busy, in both stack modes: in every
run every allocation and free carries the stack of the function that made
it, the bytes in use per function at the peak and allocated per function are
exact, and nothing was lost.  A recording with `syscalls` on holds none of the uretprobe system
calls the kernel makes for the recorder's own return probes, and a ring that
overflows counts every lost event with its probe, reason and window.

FLIGHTREC_STACK_RUNS sets the number of repeated recordings (4 here, so CI
stays short; scripts/stress-stacks runs 30 and more)."""
import json
import os
import re
import signal
import subprocess
import frtest

STEPS = 6
MiB = 1 << 20
AT_PEAK = {"init_weights": 805_306_368, "alloc_io_buffers": 67_108_864,
           "forward": 1_073_741_824, "leaky_cache": STEPS * MiB}
ALLOC_FREE = {"cudaMalloc", "cudaFree", "cudaMallocHost", "cudaFreeHost", "cudaHostAlloc",
              "cudaMallocAsync", "cudaFreeAsync", "cudaMallocManaged"}
RUNS = int(os.environ.get("FLIGHTREC_STACK_RUNS", "4"))
# the getppid storm's recordings (FLIGHTREC_STORM_RUNS; every third is busy)
STORM_RUNS = int(os.environ.get("FLIGHTREC_STORM_RUNS", "3"))
GETPPID = 110
# (probes, frequency, another process keeping a CPU busy, stack mode), in
# turn: the two stack modes build their ring records differently
VARIANTS = [("cuda,cpu", 999, False, "dwarf"), ("cuda,cpu", 999, True, "fp"),
            (None, 999, True, "dwarf"), (None, 99, False, "fp")]


def by_caller(out):
    """bytes per function that called the allocating API (the leaf frame)"""
    res = {}
    for line in out.splitlines():
        frames, _, v = line.rpartition(" ")
        caller = frames.split(";")[-2]
        res[caller] = res.get(caller, 0) + int(v)
    return res


def record_stopped(trace, args, target, comm):
    """Records target with the recorder stopped from the moment target runs
    (its probes attached) until it has exited: nothing drains the ring
    meanwhile, so it fills whatever the machine's speed.  Returns the
    recorder's stdout, stderr and exit status."""
    cmd = [frtest.FLIGHTREC, "record", "-o", trace] + args + ["--"] + target
    rec = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        job = frtest.child_of(rec.pid)
        frtest.wait_comm(job, comm)
        os.kill(rec.pid, signal.SIGSTOP)
        try:
            frtest.wait_state(job, ("Z", None), "the job ends while the recorder is stopped")
        finally:
            os.kill(rec.pid, signal.SIGCONT)
        out, err = rec.communicate(timeout=120)
    except BaseException:
        rec.kill()
        rec.wait()
        raise
    if rec.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {rec.returncode}:\n{err}")
    return subprocess.CompletedProcess(cmd, rec.returncode, out, err)


class StackPairing(frtest.Case):
    def record_once(self, d, i, probes, freq, busy, stack):
        trace = os.path.join(d, f"run{i}.frec")
        args = ["--freq", str(freq), "--stack", stack] + (["--probes", probes] if probes else [])
        with frtest.cpu_burners(1 if busy else 0):
            p = frtest.record(trace, args,
                              ["--", frtest.sample("cuda_train"), "--steps", str(STEPS)])
        return trace, p

    def check_run(self, trace, p, what):
        self.assertNotIn("lost their", p.stderr, what)
        self.assertNotIn("WARNING", p.stderr, what)
        info = json.loads(frtest.analyze("info", trace, "--json").stdout)["files"][0]
        self.assertEqual(info["losses"], [], what)
        self.assertEqual(info["drops"], 0, what)
        calls = [e for e in frtest.dump(trace) if e["type"] == "cuda"]
        mem = [e for e in calls if e["name"] in ALLOC_FREE]
        self.assertGreater(len(mem), 4 * STEPS, what)
        for e in mem:
            # the program's own frames, not [no stack]
            self.assertIn("main", e.get("stack") or [], (what, e))
            self.assertIn("run", e["stack"], (what, e))
        peak = frtest.analyze("flame", trace, "--kind", "mem-inuse", "--at", "peak").stdout
        self.assertNotIn("[no stack]", peak, what)
        self.assertEqual(by_caller(peak), AT_PEAK, what)
        alloc = frtest.analyze("flame", trace, "--kind", "mem-alloc").stdout
        self.assertNotIn("[no stack]", alloc, what)
        got = by_caller(alloc)
        self.assertEqual(got["forward"], 1_073_741_824 * STEPS, what)
        self.assertEqual(got["init_weights"], 805_306_368, what)
        self.assertEqual(got["leaky_cache"], STEPS * MiB, what)

    def test_every_allocation_keeps_its_stack(self):
        d = frtest.workdir("stack_pairing")
        for i in range(RUNS):
            probes, freq, busy, stack = VARIANTS[i % len(VARIANTS)]
            trace, p = self.record_once(d, i, probes, freq, busy, stack)
            self.check_run(trace, p, f"run {i}: probes {probes or 'default'}, {freq} Hz, "
                                     f"{'busy' if busy else 'quiet'}, --stack {stack}")
            os.unlink(trace)

    def test_no_uretprobe_syscalls(self):
        d = frtest.workdir("stack_pairing_syscalls")
        trace = os.path.join(d, "sys.frec")
        frtest.record(trace, ["--probes", "cuda,syscalls"],
                      ["--", frtest.sample("cuda_train"), "--steps", str(STEPS)])
        events = frtest.dump(trace)
        cuda = [e for e in events if e["type"] == "cuda"]
        sys_nrs = {e["nr"] for e in events if e["type"] == "syscall"}
        self.assertGreater(len(cuda), 4 * STEPS)  # return probes did fire
        self.assertFalse(sys_nrs & {335, 336}, sorted(sys_nrs))
        names = {e["name"] for e in events if e["type"] == "syscall"}
        self.assertFalse({"uretprobe", "uprobe"} & names)
        self.assertFalse(any(n.startswith("syscall_") for n in names), names)
        self.assertIn("write", names)  # the program's own calls are there

    def test_overflow_counted_with_reason(self):
        # a 1 MiB ring fills while the recorder is stopped (SIGSTOP from the
        # moment the storm of getppid runs until it has exited): every
        # getppid the program made is recorded or counted as lost, exactly.
        # The family's drop count covers every call of the process
        # (start-up, thread creation, futex waits: how many depends on
        # timing), so the exact count is the kernel's count per call number
        # (FR_REC_SYSCALL_DROPS), against the getppid events in the file.
        # Some runs sample the CPU at 999 Hz with another process keeping a
        # CPU busy.
        d = frtest.workdir("stack_pairing_overflow")
        for run in range(STORM_RUNS):
            busy = run % 3 == 1
            probes = "syscalls,cpu" if busy else "syscalls"
            what = f"run {run}: {probes}, {'busy' if busy else 'quiet'}"
            trace = os.path.join(d, f"storm{run}.frec")
            with frtest.cpu_burners(1 if busy else 0):
                p = record_stopped(trace, ["--probes", probes, "--freq", "999", "--stack", "fp",
                                           "--ring-mib", "1"],
                                   [frtest.sample("syscall_storm"), "1", "2"], "syscall_storm")
            made = int(re.search(r"syscall_storm: (\d+) calls", p.stdout).group(1))
            info = json.loads(frtest.analyze("info", trace, "--json").stdout)["files"][0]
            sc = next(x for x in info["probes"] if x["name"] == "syscalls")
            losses = [x for x in info["losses"] if x["probe"] == "syscalls"]
            self.assertEqual(sum(x["count"] for x in losses if x["lost"] == "event"),
                             sc["drops"], what)
            for x in losses:
                self.assertEqual(x["reason"], "ring_full", (what, x))
                self.assertLessEqual(x["first_s"], x["last_s"], what)
            by_nr = {x["nr"]: x["count"] for x in info["syscall_drops"]}
            self.assertLessEqual(sum(by_nr.values()), sc["drops"], what)
            recorded = sum(1 for e in frtest.dump(trace, "--type", "syscall", "--no-stacks")
                           if e["type"] == "syscall" and e["nr"] == GETPPID)
            self.assertEqual(recorded + by_nr.get(GETPPID, 0), made,
                             (what, recorded, by_nr, sc))
            self.assertGreater(by_nr.get(GETPPID, 0), 0, (what, "the ring never overflowed"))
            self.assertRegex(p.stderr, r"WARNING: \d+ events were dropped: (.*, )?syscalls \d+ "
                                       r"\(ring_full, [\d.]+-[\d.]+ s\)", what)
            text = frtest.analyze("info", trace).stdout
            self.assertRegex(text, r"syscalls\s+ring_full\s+%d\s+event" % sc["drops"])
            self.assertRegex(text, r"\n    getppid\s+%d\n" % by_nr[GETPPID])
            os.unlink(trace)

    def test_every_call_recorded_or_counted_exactly(self):
        # a 1 MiB ring and dwarf stacks (16 KiB per call) against a storm of
        # cudaMalloc/cudaFree linked at build time (attached before main):
        # every call the program made is either in the trace or counted as
        # lost, exactly, however many the load makes it lose
        d = frtest.workdir("stack_pairing_exact")
        for run in range(3):
            trace = os.path.join(d, f"storm{run}.frec")
            with frtest.cpu_burners(1 if run == 2 else 0):  # the last run with a CPU kept busy
                p = frtest.record(trace, ["--probes", "cuda", "--stack", "dwarf", "--ring-mib", "1"],
                                  ["--", frtest.sample("cuda_storm"), "30000"])
            made = int(re.search(r"cuda_storm: (\d+) calls", p.stdout).group(1))
            info = json.loads(frtest.analyze("info", trace, "--json").stdout)["files"][0]
            cuda = next(x for x in info["probes"] if x["name"] == "cuda")
            self.assertEqual(cuda["events"] + cuda["drops"], made, (run, cuda, info["losses"]))
            in_file = sum(x["count"] for x in info["records_by_type"] if x["name"] == "cuda")
            self.assertEqual(in_file, cuda["events"], run)
            for x in info["losses"]:
                if x["probe"] == "cuda" and x["lost"] == "event":
                    self.assertIn(x["reason"], ("ring_full", "no_entry"), x)


if __name__ == "__main__":
    frtest.main()
