"""`flightrec-analyze findings` on samples/train_shapes, a training loop
written apart from samples/train_causes (the loop the rules were developed
on): per-op .item() copies (40 a step, each a 4-byte cudaMemcpy to the
host), checkpoints every 5th step and at the last one (48 MiB, fsync,
rename), a loader process feeding the training thread through a pipe, a
pin-memory thread behind a condition variable, and two clean compute
shapes (two streams with cudaStreamWaitEvent, a CUDA graph replayed each
step).  Each shape alone and two at a time: the right kind first (the one
that cost the sample more), `where` naming the culprit, every cost within
test_findings.BAND (30%) of the sample's own measure (its truth line), 20
steps counted from the synchronizing calls; dataloader names the loader
process (pid) or thread (tid) the truth line gives and does not advise
num_workers>0; a clean run of each shape has no finding above the
threshold.  Recorded with --probes cpu,syscalls,cuda,sched --freq 999 (the
pairs without sched)."""
import json
import os
import re
import frtest
from test_findings import in_band

SHAPE_STEPS = 20
SHAPE_KIND_OF = {"host_sync": "host_sync", "checkpoint": "sync_checkpoint",
                 "dataloader": "dataloader"}
SHAPE_CULPRIT = {"host_sync": "tensor_item", "sync_checkpoint": "save_checkpoint"}
SHAPE_ARGS = {"per-op-sync": ["--compute", "per-op-sync"], "checkpoint": ["--checkpoint"],
              "loader-proc": ["--input", "loader-proc", "--slow"],
              "pin-thread": ["--input", "pin-thread", "--slow"],
              "two-streams": ["--compute", "two-streams"], "graph": ["--compute", "graph"]}
SHAPE_KINDS = {"per-op-sync": "host_sync", "checkpoint": "sync_checkpoint",
               "loader-proc": "dataloader", "pin-thread": "dataloader"}


def run_shape(name, args, sched=True):
    """Records train_shapes ARGS; returns (findings JSON, truth in ms by
    kind, the truth line's loader pid and tid, text output).  sched: with
    the sched family (the loader named by the scheduler's wake-ups), else
    without (named from the system calls that handed input over)."""
    d = frtest.workdir("findings_shape_" + name)
    trace = os.path.join(d, "run.frec")
    probes = "cpu,syscalls,cuda" + (",sched" if sched else "")
    p = frtest.record(trace, ["--probes", probes, "--freq", "999"],
                      ["--", frtest.sample("train_shapes"), "--steps", str(SHAPE_STEPS),
                       "--dir", d] + args)
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("truth ")][-1]
    truth = {SHAPE_KIND_OF[k[:-3]]: float(v) for k, v in re.findall(r"(\w+_ms)=(\S+)", line)}
    loader = {k: int(v) for k, v in re.findall(r"(loader_\w+)=(\d+)", line)}
    loader["sched"] = sched
    js = json.loads(frtest.analyze("findings", trace, "--json").stdout)
    text = frtest.analyze("findings", trace).stdout
    return js, truth, loader, text


class FindingsShapes(frtest.Case):
    def check_steps(self, js, text):
        self.assertEqual(js["steps"], SHAPE_STEPS, text)
        self.assertEqual(js["steps_from"], "sync_period", js)
        self.assertIn(js["step_site"], ("cudaDeviceSynchronize", "cudaStreamSynchronize"), js)
        self.assertGreater(js["step_ms"], 0, js)

    def check_kind(self, js, truth, loader, kind, text):
        found = [f for f in js["findings"] if f["kind"] == kind]
        self.assertEqual(len(found), 1, (kind, text))
        f = found[0]
        in_band(self, f["cost_ms"], truth[kind], (kind, f["cost_ms"], truth, text))
        if kind == "dataloader":
            # named by its own process or thread, and no advice to add workers
            # to a job that has one
            culprit = "next_batch" if loader["loader_pid"] else "wait_pinned_batch"
            self.assertIn(culprit, f["where"], f)
            if loader["loader_pid"]:
                self.assertIn(f"loader worker process (pid {loader['loader_pid']}",
                              f["evidence"], f)
            else:
                self.assertIn(f"loader thread (tid {loader['loader_tid']})", f["evidence"], f)
            if loader["sched"]:
                self.assertIn("woken by it", f["evidence"], f)
                self.assertIn("the scheduler saw", f["evidence"], f)
            else:
                self.assertIn("ended right after", f["evidence"], f)
            self.assertNotIn("num_workers>0", f["fix"], f)
        else:
            self.assertIn(SHAPE_CULPRIT[kind], f["where"], f)
        if kind == "host_sync":
            self.assertEqual(f["where"][-1], "cudaMemcpy", f)
            # 40 reads a step, less the odd one whose gap a probe's rounding
            # made empty
            m = re.search(r"\(([0-9.]+) per step, [0-9.]+ ms\) after a synchronous copy "
                          r"to the host of 4 bytes", f["evidence"])
            self.assertTrue(m, f)
            self.assertTrue(38 <= float(m.group(1)) <= 40, f)
        if kind == "sync_checkpoint":
            self.assertIn("4 saves", f["evidence"], f)  # the last one too
            self.assertIn("ckpt_step_5.pt", f["evidence"], f)
        return f

    def check_costed(self, js, truth, loader, kind, text):
        if truth[kind] >= 2 * js["min_share"] * js["wall_ms"]:
            return self.check_kind(js, truth, loader, kind, text)
        # a busy host stretched the rest of the job (saves on a slow disk,
        # descheduled steps) until this cause fell near the threshold:
        # listed above or below it, costed as truly
        f = next((b for b in js["findings"] + js["below"] if b["kind"] == kind), None)
        self.assertIsNotNone(f, (kind, text))
        in_band(self, f["cost_ms"], truth[kind], (kind, f, truth, text))
        return f

    def test_each_shape_alone(self):
        for shape, kind in SHAPE_KINDS.items():
            with self.subTest(shape=shape):
                js, truth, loader, text = run_shape(shape, SHAPE_ARGS[shape])
                self.check_steps(js, text)
                self.check_costed(js, truth, loader, kind, text)
                if js["findings"]:
                    self.assertEqual(js["findings"][0]["kind"], kind, text)
                    self.assertIn(f"1. {kind}:", text)

    def test_two_at_a_time(self):
        # not per-op-sync beside a loader: the loader's CPU on a 2-core
        # machine deschedules the rounds, and which cause a descheduled
        # stretch belongs to no host signal says (the sched family would)
        for pair in (("per-op-sync", "checkpoint"), ("loader-proc", "checkpoint"),
                     ("pin-thread", "checkpoint"), ("two-streams", "loader-proc"),
                     ("graph", "checkpoint")):
            with self.subTest(pair=pair):
                # an 8 MiB checkpoint: 48 MiB and fsync take seconds on a busy
                # disk and leave the other cause under the 3% threshold
                args = SHAPE_ARGS[pair[0]] + SHAPE_ARGS[pair[1]] + ["--ckpt-mib", "8"]
                # without the sched family: the loader named from system calls
                js, truth, loader, text = run_shape("_".join(pair), args, sched=False)
                self.check_steps(js, text)
                kinds = [SHAPE_KINDS[s] for s in pair if s in SHAPE_KINDS]
                for kind in kinds:
                    self.check_costed(js, truth, loader, kind, text)
                # the right kind first: the one that cost the sample more,
                # where the truths are a quarter apart or more; two causes
                # that cost about the same (measured 86.1 and 85.7 ms in one
                # run on a busy host) may come in either order
                first = js["findings"][0]["kind"]
                best = max(kinds, key=lambda k: truth[k])
                self.assertIn(first, kinds, text)
                if first != best:
                    self.assertGreaterEqual(1.25 * truth[first], truth[best], (truth, text))

    def test_clean_shapes_have_no_finding(self):
        for shape, args in (("plain", []), ("two-streams", SHAPE_ARGS["two-streams"]),
                            ("graph", SHAPE_ARGS["graph"]),
                            ("loader-proc-fast", ["--input", "loader-proc"]),
                            ("pin-thread-fast", ["--input", "pin-thread"])):
            with self.subTest(shape=shape):
                js, truth, _, text = run_shape("clean_" + shape, args)
                self.check_steps(js, text)
                # no finding, unless the sample itself measured its cause
                # above the threshold (a fast loader starved of CPU on a
                # host far busier than its cores): then it is that cause,
                # costed as truly
                for f in js["findings"]:
                    self.assertIn(f["kind"], truth, text)
                    self.assertGreaterEqual(truth[f["kind"]],
                                            0.7 * js["min_share"] * js["wall_ms"], text)
                    in_band(self, f["cost_ms"], truth[f["kind"]], (f, truth, text))
                if all(v < 0.5 * js["min_share"] * js["wall_ms"] for v in truth.values()):
                    self.assertEqual(js["findings"], [], text)
                    self.assertIn("no finding above 3%", text)


if __name__ == "__main__":
    frtest.main()
