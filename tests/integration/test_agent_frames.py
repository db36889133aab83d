"""Frames an agent can act on, on a real PyTorch recording: Debian's
python3-torch running tests/bench/torch_loop.py (a 2-layer MLP, SGD, one
CPU thread) recorded with --stack dwarf --probes cpu.  In `summary`'s CPU
section every stack line keeps the loop's own Python frames
(torch_loop.py) and ends in a named native frame, and none shows the
interpreter's internals (_PyObject_MakeTpCall, python3.11+0x...) or a
run of unnamed libtorch offsets: they are counted as [+N].  The heaviest
line goes through Linear.forward or Tensor.backward down to sgemm_ (the
matrix products are the loop's work).  `explain Linear.forward` names
its caller Module._call_impl (not the interpreter's call machinery) and
its source file linear.py, with its total equal to the folded stacks
holding it.  Skipped when /usr/bin/python3 cannot import torch."""
import json
import os
import re
import subprocess
import sys
import frtest

PY = "/usr/bin/python3"
LOOP = os.path.join(os.path.dirname(__file__), "..", "bench", "torch_loop.py")


def has_torch():
    try:
        return subprocess.run([PY, "-c", "import torch"], capture_output=True,
                              timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class AgentFrames(frtest.Case):
    @classmethod
    def setUpClass(cls):
        d = frtest.workdir("agent_frames")
        cls.trace = os.path.join(d, "torch.frec")
        frtest.record(cls.trace, ["--stack", "dwarf", "--probes", "cpu", "--freq", "199"],
                      ["--", PY, LOOP, "40"], timeout=170)

    def test_summary_cpu_lines(self):
        text = frtest.analyze("summary", self.trace).stdout
        cpu = text.split("## CPU\n", 1)[1].split("\n## ", 1)[0]
        lines = [ln for ln in cpu.splitlines() if ln.startswith("- ")]
        self.assertTrue(lines, cpu)
        for ln in lines:
            stack = ln.split(": ", 1)[1]
            self.assertNotIn("_PyObject_MakeTpCall", stack, ln)
            self.assertNotRegex(stack, r"python3\.\d+\+0x", ln)
            self.assertNotRegex(stack, r"libtorch_cpu\.so[^;]*\+0x[0-9a-f]+;libtorch_cpu", ln)
        top = lines[0].split(": ", 1)[1]
        self.assertIn("torch_loop.py:", top, top)
        self.assertTrue("Linear.forward (linear.py:" in top or "backward (" in top, top)
        user = top.split(";...;")[0]  # the kernel part aside
        self.assertTrue(user.endswith("sgemm_"), top)
        self.assertRegex(top, r"\[\+\d+\]", top)

    def test_explain_linear_forward(self):
        ex = json.loads(frtest.analyze("explain", "Linear.forward", self.trace, "--json").stdout)
        self.assertTrue(ex["found"], ex)
        self.assertEqual(ex["source"], "linear.py", ex)
        self.assertGreater(ex["line"], 0, ex)
        self.assertTrue(ex["callers"][0]["name"].startswith("Module._call_impl ("), ex["callers"])
        held = sum(v for stack, v in frtest.folded(self.trace).items()
                   if any(f == "Linear.forward" or f.startswith("Linear.forward (") for f in stack))
        self.assertEqual(ex["total"], held)


if __name__ == "__main__":
    frtest.require_root()
    if not has_torch():
        print("SKIP: /usr/bin/python3 cannot import torch (python3-torch)")
        sys.exit(77)
    frtest.main()
