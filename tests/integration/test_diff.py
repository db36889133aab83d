"""`flightrec-analyze diff` and `explain` on real recordings of
samples/train_causes (the stand-in libcudart's fake GPU), one cause
switched on and off, recorded with --probes cpu,syscalls,cuda --freq 999
as test_findings.py records them:

- clean -> --pageable: the pageable_copy finding is new, with the cost
  per step `findings --json` gives the after run (exactly), 0 before; the
  function whose CUDA time changed most is stage_input_pageable (it calls
  the new cudaMemcpy), and cudaMemcpy leads the CUDA functions; the two
  are comparable, per step.  In reverse the finding is gone and the same
  function leads with the opposite change.
- clean -> --dataloader: the dataloader finding is new, and load_batch
  (the function the cause adds to each step, decode_batch and its read()
  under it) leads the functions by CPU time per step (not by share: the
  shares of every other function fall by as much as its rises).
Step time is not asserted: on a loaded machine the clean run's steps can
take as long as the pageable run's.
- the dataloader run recorded at 99 Hz against the clean one at 999 Hz:
  not comparable, the notes say the sampling rates differ.
- explain stage_input_pageable on the pageable run: its CUDA calls are
  exactly `cuda --json`'s cudaMemcpy row (every cudaMemcpy of the sample
  is made there: one a step), and the pageable_copy finding names it.
- the same diff twice gives the same bytes."""
import json
import os
import frtest

STEPS = 40


def record(d, name, causes, freq="999"):
    trace = os.path.join(d, name + ".frec")
    args = [frtest.sample("train_causes"), "--steps", str(STEPS), "--dir", d]
    args += ["--" + c for c in causes]
    frtest.record(trace, ["--probes", "cpu,syscalls,cuda", "--freq", freq], ["--"] + args)
    return trace


def diff(before, after):
    return json.loads(frtest.analyze("diff", before, "--", after, "--json").stdout)


def finding(js, kind):
    found = [f for f in js["findings"] if f["kind"] == kind]
    return found[0] if found else None


class Diff(frtest.Case):
    @classmethod
    def setUpClass(cls):
        d = frtest.workdir("diff")
        cls.clean = record(d, "clean", [])
        cls.pageable = record(d, "pageable", ["pageable"])
        cls.dataloader = record(d, "dataloader", ["dataloader"])
        cls.slow = record(d, "dataloader_99hz", ["dataloader"], freq="99")

    def test_pageable_on_and_off(self):
        js = diff(self.clean, self.pageable)
        self.assertTrue(js["comparable"], js["notes"])
        self.assertEqual(js["unit"], "step")
        self.assertEqual(js["before"]["steps"], STEPS)
        self.assertEqual(js["after"]["steps"], STEPS)
        f = finding(js, "pageable_copy")
        self.assertIsNotNone(f, js["findings"])
        self.assertEqual(f["status"], "new", f)
        self.assertEqual(f["cost_ms_before"], 0, f)
        fx = json.loads(frtest.analyze("findings", self.pageable, "--json").stdout)
        truth = [g for g in fx["findings"] if g["kind"] == "pageable_copy"][0]
        self.assertAlmostEqual(f["cost_ms_after"], truth["cost_ms_per_step"], places=3)
        lead = js["functions"]["cuda_ms"][0]
        self.assertEqual(lead["function"], "stage_input_pageable", js["functions"]["cuda_ms"])
        self.assertGreater(lead["delta"], 0, lead)
        self.assertEqual(js["cuda_calls_ms"][0]["function"], "cudaMemcpy", js["cuda_calls_ms"])

        back = diff(self.pageable, self.clean)
        g = finding(back, "pageable_copy")
        self.assertEqual(g["status"], "gone", g)
        self.assertAlmostEqual(g["cost_ms_before"], f["cost_ms_after"], places=3)
        self.assertEqual(back["functions"]["cuda_ms"][0]["function"], "stage_input_pageable")
        self.assertAlmostEqual(back["functions"]["cuda_ms"][0]["delta"], -lead["delta"], places=4)

    def test_dataloader_leads_cpu(self):
        js = diff(self.clean, self.dataloader)
        self.assertTrue(js["comparable"], js["notes"])
        f = finding(js, "dataloader")
        self.assertEqual(f["status"], "new", js["findings"])
        self.assertGreater(f["cost_ms_after"], 0, f)
        lead = js["functions"]["cpu_ms"][0]
        self.assertEqual(lead["function"], "load_batch", js["functions"]["cpu_ms"][:3])
        self.assertEqual(lead["before"], 0, lead)
        self.assertGreater(lead["share_after"], 0, lead)

    def test_rates_differ(self):
        js = diff(self.clean, self.slow)
        self.assertFalse(js["comparable"], js)
        self.assertTrue(any(n.startswith("sampling rates differ") for n in js["notes"]),
                        js["notes"])

    def test_explain_agrees_with_cuda(self):
        ex = json.loads(frtest.analyze("explain", "stage_input_pageable", self.pageable,
                                       "--json").stdout)
        cuda = json.loads(frtest.analyze("cuda", self.pageable, "--json").stdout)
        row = [r for r in cuda["calls"] if r["function"] == "cudaMemcpy"][0]
        self.assertEqual(row["calls"], STEPS)
        self.assertEqual(ex["cuda"]["functions"],
                         [{"name": "cudaMemcpy", "calls": row["calls"],
                           "total_ns": row["total_ns"], "errors": row["errors"]}])
        self.assertIn("pageable_copy", [f["kind"] for f in ex["findings"]], ex["findings"])
        self.assertTrue(ex["module"].endswith("/train_causes"), ex["module"])

    def test_deterministic(self):
        a = frtest.analyze("diff", self.clean, "--", self.pageable).stdout
        b = frtest.analyze("diff", self.clean, "--", self.pageable).stdout
        self.assertEqual(a, b)


if __name__ == "__main__":
    frtest.main()
