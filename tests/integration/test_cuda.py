"""The cuda probe family on real probes: samples/cuda_train on the stand-in
libcudart (exact bytes in use per function at the peak, the peak itself,
the leak, the failed allocation, the pinned/pageable split of copies),
samples/cuda_events (event records, queries and their answers, streams
waiting on events, graph launches: counts, callers, handles), NVIDIA's real
libcudart when installed (calls and error codes), attaching with --pid to a
process that already holds memory (the before-recording bucket), and a
library loaded with dlopen after the recording started."""
import collections
import json
import os
import re
import signal
import subprocess
import sys
import frtest

STEPS = 6
MiB = 1 << 20
PEAK = 1_946_157_056 + STEPS * MiB
AT_PEAK = {"init_weights": 805_306_368, "alloc_io_buffers": 67_108_864,
           "forward": 1_073_741_824, "leaky_cache": STEPS * MiB}
REAL_CUDART = "/usr/local/cuda/lib64/libcudart.so.13"


def by_caller(folded):
    """bytes per function that called the allocating API (the leaf frame)"""
    out = {}
    for frames, value in folded.items():
        out[frames[-2]] = out.get(frames[-2], 0) + value
    return out


def mem_folded(trace, *extra):
    out = frtest.analyze("flame", trace, "--kind", "mem-inuse", *extra).stdout
    res = {}
    for line in out.splitlines():
        frames, _, v = line.rpartition(" ")
        res[tuple(frames.split(";"))] = int(v)
    return res


class CudaTrain(frtest.Case):
    @classmethod
    def setUpClass(cls):
        d = frtest.workdir("cuda_train")
        cls.trace = os.path.join(d, "train.frec")
        p = frtest.record(cls.trace, ["--probes", "cuda,cpu"],
                          ["--", frtest.sample("cuda_train"), "--steps", str(STEPS)])
        cls.summary = dict(re.findall(r"(\w+)=(\S+)", p.stdout.splitlines()[-1]))
        cls.stderr = p.stderr
        cls.memory = json.loads(frtest.analyze("memory", cls.trace, "--json").stdout)
        cls.cuda = json.loads(frtest.analyze("cuda", cls.trace, "--json").stdout)

    def test_attached_before_start(self):
        self.assertRegex(self.stderr, r"cuda: attached \d+ functions in \S*libcudart\.so\.12\S* "
                                      r"\(before the command started\)")

    def test_peak_and_bytes_per_function(self):
        self.assertEqual(int(self.summary["peak_bytes"]), PEAK)  # the program agrees
        series = [s for s in self.memory["series"] if s["space"] == "device"]
        self.assertEqual(len(series), 1, series)
        self.assertEqual(series[0]["peak_bytes"], PEAK)
        folded = mem_folded(self.trace, "--at", "peak")
        self.assertEqual(by_caller(folded), AT_PEAK)
        self.assertEqual({f[-1] for f in folded}, {"cudaMalloc"})

    def test_alloc_graph(self):
        out = frtest.analyze("flame", self.trace, "--kind", "mem-alloc").stdout
        alloc = {}
        for line in out.splitlines():
            frames, _, v = line.rpartition(" ")
            caller = frames.split(";")[-2]
            alloc[caller] = alloc.get(caller, 0) + int(v)
        self.assertEqual(alloc["forward"], 1_073_741_824 * STEPS)
        self.assertEqual(alloc["init_weights"], 805_306_368)

    def test_leak(self):
        s = [s for s in self.memory["series"] if s["space"] == "device"][0]
        self.assertEqual(s["end_bytes"], STEPS * MiB)
        self.assertEqual(len(s["never_freed"]), 1)
        self.assertEqual(s["never_freed"][0]["bytes"], STEPS * MiB)
        self.assertEqual(s["never_freed"][0]["stack"][-1], "leaky_cache")

    def test_failed_allocation(self):
        failed = self.memory["failed_allocations"]
        self.assertEqual(len(failed), 1, failed)
        f = failed[0]
        self.assertEqual(f["bytes"], int(self.summary["failed_alloc_bytes"]))
        self.assertEqual(f["error"], 2)
        self.assertEqual(f["stack"][-2:], ["train_step", "try_huge_alloc"])
        # at that moment: forward's two 512 MiB activations, then the weights
        holders = [(h["stack"][-1], h["bytes"]) for h in f["top_holders"]]
        self.assertEqual(holders[:3], [("forward", 1_073_741_824), ("init_weights", 805_306_368),
                                       ("alloc_io_buffers", 67_108_864)])

    def test_copies_pinned_and_pageable(self):
        copies = {(c["direction"], c["host"], c["mode"]): c for c in self.cuda["copies"]}
        self.assertEqual(copies[("H2D", "pageable", "sync")]["bytes"], STEPS * 64 * MiB)
        self.assertEqual(copies[("H2D", "pinned", "async")]["bytes"], STEPS * 16 * MiB)
        self.assertEqual(copies[("D2H", "pageable", "sync")]["bytes"], STEPS * MiB)
        self.assertEqual(len(copies), 3, copies)

    def test_api_counts(self):
        calls = {c["function"]: c for c in self.cuda["calls"] if not c["per_thread_stream"]}
        self.assertEqual(calls["cudaMalloc"]["calls"], 4 + 3 * STEPS + 1)
        self.assertEqual(calls["cudaLaunchKernel"]["calls"], 4 * STEPS)


EV_STEPS = 4
NOT_READY = 600  # cudaErrorNotReady
PTSZ = 1         # fr_ev_cuda.flags: the per-thread-stream variant


class EventsAndGraphs(frtest.Case):
    def test_event_records_queries_waits_and_graph_launches(self):
        n = EV_STEPS
        d = frtest.workdir("cuda_events")
        trace = os.path.join(d, "events.frec")
        p = frtest.record(trace, ["--probes", "cuda"],
                          ["--", frtest.sample("cuda_events"), "--steps", str(n)])
        lines = p.stdout.splitlines()
        h = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)",
                                               next(x for x in lines if " handles " in x))}
        printed = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", lines[-1])}
        # (name, per-thread variant): calls, as samples/cuda_events.c documents them
        want_calls = {("cudaGraphLaunch", False): n, ("cudaGraphLaunch", True): n,
                      ("cudaEventRecord", False): n + 1, ("cudaEventRecord", True): n,
                      ("cudaEventQuery", False): 2 * n,
                      ("cudaStreamWaitEvent", False): n, ("cudaStreamWaitEvent", True): n}
        for (name, ptsz), count in want_calls.items():  # the program agrees
            self.assertEqual(printed[name + ("_ptsz" if ptsz else "")], count, name)
        # poll_step's query is "not ready" unless the process stalled for the
        # kernels' time: the trace must say what the program saw, however many
        not_ready = printed["not_ready"]
        self.assertLessEqual(not_ready, n)

        events = frtest.dump(trace, "--type", "cuda")
        new = [e for e in events if e["name"] in {name for name, _ in want_calls}]
        got_calls = collections.Counter((e["name"], bool(e["flags"] & PTSZ)) for e in new)
        self.assertEqual(dict(got_calls), want_calls)
        ids = {"cudaEventRecord": 18, "cudaEventQuery": 19, "cudaStreamWaitEvent": 20,
               "cudaGraphLaunch": 21}
        for e in new:  # every one with its caller's stack, up to main
            self.assertEqual(e["func"], ids[e["name"]], e)
            stack = e.get("stack") or []
            self.assertGreaterEqual(len(stack), 3, e)
            parent = "run" if stack[-1] == "upload_then_wait" else "train_step"
            self.assertEqual(stack[-2], parent, e)
            self.assertIn("main", stack, e)
        # who called, with which handles, and what the queries answered
        main, side, done, exec_ = h["main"], h["side"], h["step_done"], h["exec"]
        got = collections.Counter(
            (e["name"], bool(e["flags"] & PTSZ), e["stack"][-1], e["result"], e["ptr"], e["stream"],
             e["kind"]) for e in new)
        want = {("cudaGraphLaunch", False, "replay_step", 0, exec_, main, 0): n,
                ("cudaGraphLaunch", True, "per_thread_replay", 0, exec_, 0, 0): n,
                ("cudaEventRecord", False, "mark_step_done", 0, done, main, 0): n,
                ("cudaEventRecord", False, "upload_then_wait", 0, h["copy_done"], main, 0): 1,
                ("cudaEventRecord", True, "per_thread_replay", 0, done, 0, 0): n,
                ("cudaEventQuery", False, "poll_step", NOT_READY, done, 0, 0): not_ready,
                ("cudaEventQuery", False, "poll_step", 0, done, 0, 0): n - not_ready,
                ("cudaEventQuery", False, "wait_step", 0, done, 0, 0): n,
                ("cudaStreamWaitEvent", False, "join_side_stream", 0, done, side, 0): n,
                ("cudaStreamWaitEvent", True, "per_thread_replay", 0, done, 0, 0): n}
        self.assertEqual(dict(got), {k: v for k, v in want.items() if v})
        names = collections.Counter(e["name"] for e in events)
        self.assertEqual(names["cudaLaunchKernel"], 3 + n)  # 3 captured, n on the side stream
        self.assertEqual(names["cudaEventSynchronize"], n + 1)

        # the API table: one row per function and variant, with those counts
        cuda = json.loads(frtest.analyze("cuda", trace, "--json").stdout)
        rows = {c["function"]: c for c in cuda["calls"]}
        for (name, ptsz), count in want_calls.items():
            row = rows[name + ("_ptsz" if ptsz else "")]
            self.assertEqual((row["func"], row["per_thread_stream"], row["calls"]),
                             (ids[name], ptsz, count), row)
            if name != "cudaEventQuery":
                self.assertEqual(row["errors"], 0, row)
        query = rows["cudaEventQuery"]
        self.assertEqual(query["errors"], not_ready)
        self.assertEqual(query["error_codes"],
                         [{"code": NOT_READY, "name": "cudaErrorNotReady", "count": not_ready}]
                         if not_ready else [])
        # An async copy, an event recorded, that event synchronized: the record is
        # looked past, so the pair counts when the synchronize started within the gap.
        copy = next(e for e in events if e["name"] == "cudaMemcpyAsync")
        sync = next(e for e in events if e["name"] == "cudaEventSynchronize")
        gap = sync["ts_ns"] - (copy["ts_ns"] + copy["duration_ns"])
        ats = cuda["async_then_sync"]
        self.assertEqual(ats["count"], 1 if gap < ats["gap_ns"] else 0, (gap, ats))
        if ats["count"]:
            self.assertEqual(ats["stacks"][0]["stack"][-1], "upload_then_wait")
        # the memory model ignores them: one device and one pinned buffer
        mem = json.loads(frtest.analyze("memory", trace, "--json").stdout)
        self.assertEqual(sorted((s["space"], s["allocations"], s["frees"]) for s in mem["series"]),
                         [("device", 1, 1), ("pinned_host", 1, 1)])


class RealCudart(frtest.Case):
    def test_nvidia_libcudart(self):
        if not os.path.exists(REAL_CUDART):
            self.skipTest(f"{REAL_CUDART} is not installed")
        d = frtest.workdir("cuda_real")
        trace = os.path.join(d, "real.frec")
        # cuda_real calls right after its dlopen: name the library so the
        # probes are there before the command starts
        p = frtest.record(trace, ["--probes", "cuda", "--lib", f"cuda={REAL_CUDART}"],
                          ["--", frtest.sample("cuda_real"), REAL_CUDART])
        printed = re.findall(r"(cuda\w+) -> (\d+)", p.stdout)
        events = [e for e in frtest.dump(trace, "--type", "cuda") if e["name"] in ("cudaMalloc", "cudaFree")]
        self.assertEqual([(e["name"], e["result"]) for e in events],
                         [(n, int(r)) for n, r in printed if n in ("cudaMalloc", "cudaFree")])
        self.assertRegex(p.stderr, r"cuda: attached \d+ functions in .*libcudart\.so\.13")


class AttachToRunning(frtest.Case):
    def test_before_recording_bucket(self):
        d = frtest.workdir("cuda_hold")
        trace = os.path.join(d, "hold.frec")
        hold = subprocess.Popen([frtest.sample("cuda_hold"), "30"], stdout=subprocess.PIPE, text=True)
        rec = None
        try:
            self.assertIn("ready", hold.stdout.readline())
            rec = subprocess.Popen([frtest.FLIGHTREC, "record", "-o", trace, "--probes", "cuda",
                                    "--pid", str(hold.pid)], stderr=subprocess.PIPE, text=True)
            # attached: the recorder says "recording" once its probes are in
            started = ""
            while "recording" not in started:
                line = rec.stderr.readline()
                if not line:
                    self.fail(f"the recorder ended before recording: {started}")
                started += line
            hold.send_signal(signal.SIGUSR1)
            hold.wait(timeout=30)
            rec.communicate(timeout=30)  # stops when its target exits
        finally:
            if hold.poll() is None:
                hold.kill()
            if rec is not None and rec.poll() is None:
                rec.kill()
                rec.wait()
        mem = json.loads(frtest.analyze("memory", trace, "--json").stdout)
        device = [s for s in mem["series"] if s["space"] == "device"]
        self.assertEqual(len(device), 1, mem)
        # 8+16+32+64 MiB allocated before the recording, freed during it
        self.assertEqual(device[0]["before_recording_frees"], 4)
        # and the 2 MiB allocated and freed while recording is seen in full
        self.assertEqual(device[0]["allocations"], 1)
        self.assertEqual(device[0]["allocated_bytes"], 2 * MiB)


class Dlopen(frtest.Case):
    def test_library_loaded_later(self):
        lib = os.path.join(frtest.SAMPLES, "cudart", "libcudart.so.12")
        d = frtest.workdir("cuda_dlopen")
        trace = os.path.join(d, "dlopen.frec")
        # the calls come right after the dlopen, with no pause: the dlopen
        # hold (the program stopped until the library is attached) is what
        # makes all ten seen
        prog = ("import ctypes\n"
                f"lib = ctypes.CDLL({lib!r})\n"
                "p = ctypes.c_void_p()\n"
                "for i in range(10):\n"
                "    lib.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(1 << 20))\n"
                "    lib.cudaFree(p)\n")
        p = frtest.record(trace, ["--probes", "cuda"], ["--", sys.executable, "-c", prog])
        m = re.search(r"cuda: attached \d+ functions in .*libcudart\.so\.12.*\(pid \d+, ([0-9.]+) ms after it was mapped\)",
                      p.stderr)
        self.assertIsNotNone(m, p.stderr)
        names = [e["name"] for e in frtest.dump(trace, "--type", "cuda")]
        self.assertEqual(names.count("cudaMalloc"), 10)
        self.assertEqual(names.count("cudaFree"), 10)


if __name__ == "__main__":
    frtest.main()
