"""`flightrec-analyze findings` on real recordings of samples/train_causes
(the stand-in libcudart's fake GPU runs each kernel for a fixed time):
each cause switched on alone (launch_bound too: many small kernels issued
slower than the fake GPU runs them) is the first finding and names its
culprit function in `where`, with a cost that is part of its process's GPU
idle time; two causes together are both found and costed; the clean run has
no finding above the threshold, and no launch_bound even under it.  How
close each cost comes to the time the sample measured spending in the cause
is a measurement, made by tests/bench/bench_findings.py, not asserted here.
Recorded with --probes cpu,syscalls,cuda --freq 999, as `findings --help`
advises."""
import json
import os
import re
import frtest

STEPS = 40
KIND_OF = {"dataloader": "dataloader", "pageable": "pageable_copy",
           "checkpoint": "sync_checkpoint", "host_sync": "host_sync",
           "launch_bound": "launch_bound"}
CULPRIT = {"dataloader": "decode_batch", "pageable_copy": "stage_input_pageable",
           "sync_checkpoint": "save_checkpoint", "host_sync": "read_loss",
           "launch_bound": "optimizer_step"}
CLI_KEYS = {"steps", "wall_ms", "gpu_idle_ms", "unexplained_ms", "not_evaluated", "findings"}
FINDING_KEYS = {"kind", "cost_ms", "cost_ms_per_step", "share", "pids", "ranks", "where",
                "evidence", "fix"}


def run_case(name, causes):
    """Records train_causes with the given causes; returns (findings JSON,
    truth in ms by kind, text output)."""
    d = frtest.workdir("findings_" + name)
    trace = os.path.join(d, "run.frec")
    args = [frtest.sample("train_causes"), "--steps", str(STEPS), "--dir", d]
    args += ["--" + c.replace("_", "-") for c in causes]
    p = frtest.record(trace, ["--probes", "cpu,syscalls,cuda", "--freq", "999"], ["--"] + args)
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("truth ")][-1]
    truth = {KIND_OF[k[:-3]]: float(v) for k, v in re.findall(r"(\w+_ms)=(\S+)", line)}
    js = json.loads(frtest.analyze("findings", trace, "--json").stdout)
    text = frtest.analyze("findings", trace).stdout
    return js, truth, text


class Findings(frtest.Case):
    def check_shape(self, js):
        self.assertTrue(CLI_KEYS <= set(js), js.keys())
        self.assertEqual(js["steps"], STEPS, js)
        self.assertEqual(len(js["gpu_idle_ms"]), 1, js)
        for f in js["findings"]:
            self.assertTrue(FINDING_KEYS <= set(f), f)
        costed = [f["cost_ms"] for f in js["findings"] if f["cost_ms"] is not None]
        self.assertEqual(costed, sorted(costed, reverse=True), js["findings"])

    def check_found(self, js, truth, kind):
        found = [f for f in js["findings"] if f["kind"] == kind]
        self.assertEqual(len(found), 1, (kind, js["findings"]))
        f = found[0]
        self.assertIn(CULPRIT[kind], f["where"], f)
        self.assertGreater(truth[kind], 0, truth)  # the sample did spend time in it
        idle = sum(js["gpu_idle_ms"].values())
        self.assertGreater(f["cost_ms"], 0, f)
        self.assertLessEqual(f["cost_ms"], idle, (f, idle))  # a part of the idle time
        self.assertAlmostEqual(f["cost_ms_per_step"], f["cost_ms"] / STEPS, places=2)
        self.assertEqual(f["pids"], [int(p) for p in js["gpu_idle_ms"]], f)
        return f

    def test_clean_run_has_no_finding(self):
        js, _, text = run_case("clean", [])
        self.check_shape(js)
        self.assertEqual(js["findings"], [], js)
        self.assertIn("no finding above 3%", text)
        # launch_bound too stays away: 4 launches a step, and the GPU is behind
        self.assertNotIn("launch_bound", [f["kind"] for f in js["below"]], js["below"])
        kinds = {n["kind"] for n in js["not_evaluated"]}
        self.assertIn("straggler", kinds)  # no NCCL in this job, and it says so

    def test_each_cause_alone_is_first(self):
        for cause in ["dataloader", "pageable", "checkpoint", "host_sync", "launch_bound"]:
            with self.subTest(cause=cause):
                js, truth, text = run_case(cause, [cause])
                self.check_shape(js)
                kind = KIND_OF[cause]
                self.assertTrue(js["findings"], (cause, js))
                self.assertEqual(js["findings"][0]["kind"], kind, js["findings"])
                self.check_found(js, truth, kind)
                self.assertIn(f"1. {kind}:", text)
                if kind == "sync_checkpoint":
                    # the file is named: the syscalls probe records each open's path
                    self.assertRegex(js["findings"][0]["evidence"], r"written to \S*/train\.pt",
                                     js["findings"][0])

    def test_two_causes_together(self):
        for causes in (["dataloader", "pageable"], ["checkpoint", "host_sync"],
                       ["launch_bound", "dataloader"]):
            with self.subTest(causes=causes):
                js, truth, _ = run_case("_".join(causes), causes)
                self.check_shape(js)
                for c in causes:
                    self.check_found(js, truth, KIND_OF[c])


if __name__ == "__main__":
    frtest.main()
