"""--stack dwarf against --stack fp on real probes: a C program built with
-O2 -fomit-frame-pointer gives the whole chain from main to the leaf in
dwarf mode and a cut-short one in fp mode (both asserted, so the test proves
the difference); unwinding still works once the program is gone; and a
Python program's functions appear above the native frames (CPU samples of a
pure-Python function, and GPU allocations made through ctypes).

The Python part runs on every CPython it finds: this one, Debian's
/usr/bin/python3 (3.11 on Debian 12) and pyenv's 3.10-3.13 where
/root/.pyenv has them (the machine image's, not something install-deps can
install).  It prints `covered CPython: ...` with the versions it really ran,
and fails with fewer than two interpreters.  A real PyTorch (Debian's
python3-torch) gives its module chain (Module._call_impl, Sequential and
Linear forward) above ATen's native frames."""
import os
import shutil
import subprocess
import sys
import frtest

CHAIN = ["main", "level_one", "level_two", "level_three", "burn_cpu"]
PY_PROG = r'''
import ctypes, sys, time
lib = ctypes.CDLL(sys.argv[1])
def linear_layer(n):
    p = ctypes.c_void_p()
    lib.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n))
    return p
def call_impl(n, depth):
    return forward(n, depth)
def forward(n, depth=2):
    return call_impl(n, depth - 1) if depth > 0 else linear_layer(n)
def train_step():
    held = []
    for _ in range(4):
        held.append(forward(1 << 20))
    return held
def busy_python(seconds):
    # seconds of its own CPU time: as many samples however loaded the machine
    end = time.process_time() + seconds
    s = 0
    while time.process_time() < end:
        for i in range(1000):
            s += i * i
    return s
def main():
    train_step()
    busy_python(1.5)
main()
'''


def chain_of(frames):
    """The CHAIN functions in frames, in order."""
    return [f for f in frames if f in CHAIN]


class DwarfVersusFp(frtest.Case):
    @classmethod
    def setUpClass(cls):
        cls.dir = frtest.workdir("dwarf_stacks")
        # a private copy of the program, so it can be removed afterwards
        cls.prog = os.path.join(cls.dir, "deep_chain")
        shutil.copy(frtest.sample("deep_chain"), cls.prog)
        cls.fp = os.path.join(cls.dir, "fp.frec")
        cls.dwarf = os.path.join(cls.dir, "dwarf.frec")
        frtest.record(cls.fp, ["--probes", "cpu", "--stack", "fp"], ["--", cls.prog, "1.5"])
        frtest.record(cls.dwarf, ["--probes", "cpu", "--stack", "dwarf"], ["--", cls.prog, "1.5"])

    def burn_samples(self, trace):
        return {f: n for f, n in frtest.folded(trace).items() if "burn_cpu" in f}

    def test_dwarf_gives_the_whole_chain(self):
        stacks = self.burn_samples(self.dwarf)
        total = sum(stacks.values())
        self.assertGreater(total, 50, stacks)
        full = sum(n for f, n in stacks.items() if chain_of(f) == CHAIN)
        self.assertGreaterEqual(full / total, 0.9, stacks)

    def test_fp_is_cut_short(self):
        stacks = self.burn_samples(self.fp)
        self.assertGreater(sum(stacks.values()), 50, stacks)
        self.assertFalse(any(chain_of(f) == CHAIN for f in stacks), stacks)

    def test_after_the_program_is_gone(self):
        os.rename(self.prog, self.prog + ".gone")
        try:
            stacks = self.burn_samples(self.dwarf)
            full = sum(n for f, n in stacks.items() if chain_of(f) == CHAIN)
            self.assertGreaterEqual(full / sum(stacks.values()), 0.9, stacks)
        finally:
            os.rename(self.prog + ".gone", self.prog)


def pythons():
    """This python, Debian's, and any CPython 3.10-3.13 pyenv has here."""
    seen, out = set(), []
    import glob
    candidates = [sys.executable, "/usr/bin/python3"]
    for minor in (10, 11, 12, 13):
        candidates += sorted(glob.glob(f"/root/.pyenv/versions/3.{minor}.*/bin/python3.{minor}"))
    for exe in candidates:
        real = os.path.realpath(exe)
        if os.path.exists(real) and real not in seen:
            seen.add(real)
            out.append(exe)
    return out


class PythonStacks(frtest.Case):
    def test_python_chain_above_native(self):
        lib = os.path.join(frtest.SAMPLES, "cudart", "libcudart.so.12")
        exes = pythons()
        versions = {exe: subprocess.run([exe, "-c", "import platform; "
                                         "print(platform.python_version())"],
                                        capture_output=True, text=True).stdout.strip()
                    for exe in exes}
        # what this run covers, said whatever the outcome (ctest keeps it in
        # the JUnit file; scripts/test's readers see it there)
        print("covered CPython: " + ", ".join(f"{v} ({e})" for e, v in versions.items()),
              flush=True)
        self.assertGreaterEqual(len(exes), 2, f"one interpreter only: {versions}")
        for exe in exes:
            with self.subTest(python=exe, version=versions[exe]):
                d = frtest.workdir("dwarf_python")
                script = os.path.join(d, "train.py")
                with open(script, "w") as f:
                    f.write(PY_PROG)
                trace = os.path.join(d, "py.frec")
                frtest.record(trace, ["--probes", "cpu,cuda", "--stack", "dwarf"],
                              ["--", exe, script, lib])
                out = frtest.analyze("flame", trace, "--kind", "mem-alloc").stdout
                rows = [l.rpartition(" ") for l in out.splitlines()]
                total = sum(int(v) for _, _, v in rows)
                self.assertEqual(total, 4 << 20, out)
                for frames_text, _, _ in rows:
                    frames = frames_text.split(";")
                    # Python frames read "name (file.py:line)"; between two of
                    # them CPython 3.10 keeps its own C frames (_PyEval_Vector)
                    py = [(i, f.split(" (")[0]) for i, f in enumerate(frames) if ".py:" in f]
                    names = [n for _, n in py]
                    k = names.index("train_step")
                    # forward and call_impl alternate, as a PyTorch module's
                    # forward and _call_impl do: repeated code objects
                    self.assertEqual(names[k:k + 7], ["train_step", "forward", "call_impl",
                                                      "forward", "call_impl", "forward",
                                                      "linear_layer"], frames)
                    self.assertEqual(frames[-1], "cudaMalloc", frames)
                    # native ctypes frames between the Python caller and cudaMalloc
                    self.assertGreater(len(frames) - 1 - py[k + 6][0], 1, frames)
                self.assertRegex(out, r"linear_layer \(.*train\.py:\d+\)")
                cpu = frtest.folded(trace)
                busy = {f: n for f, n in cpu.items()
                        if any(fr.startswith("busy_python (") for fr in f)}
                self.assertGreater(sum(busy.values()), 40, cpu)
                for f in busy:
                    pyf = [fr.split(" (")[0] for fr in f if " (" in fr]
                    self.assertIn("main", pyf, f)
                    self.assertLess(pyf.index("main"), pyf.index("busy_python"), f)


TORCH_PYTHON = "/usr/bin/python3"  # Debian's, with python3-torch (install-deps)
TORCH_LOOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench",
                          "torch_loop.py")


class TorchStacks(frtest.Case):
    def test_real_pytorch_module_frames(self):
        """A real PyTorch (Debian's python3-torch), not a script shaped like
        one: a sample in a Linear layer's forward reads, from the training
        loop down, main -> Module._call_impl -> Sequential.forward ->
        Module._call_impl -> Linear.forward, then ATen's native frames."""
        has = subprocess.run([TORCH_PYTHON, "-c", "import torch"], capture_output=True)
        self.assertEqual(has.returncode, 0, f"{TORCH_PYTHON} has no torch (scripts/install-deps "
                         f"installs python3-torch): {has.stderr[-300:]!r}")
        d = frtest.workdir("dwarf_torch")
        trace = os.path.join(d, "torch.frec")
        frtest.record(trace, ["--probes", "cpu", "--stack", "dwarf", "--freq", "499"],
                      ["--", TORCH_PYTHON, TORCH_LOOP, "100"], timeout=600)
        want = ["main", "Module._call_impl", "Sequential.forward", "Module._call_impl",
                "Linear.forward"]
        files = {"main": "torch_loop.py", "Module._call_impl": "module.py",
                 "Sequential.forward": "container.py", "Linear.forward": "linear.py"}
        chains = 0
        for frames in frtest.folded(trace):
            py = [(i, f.split(" (")[0], f) for i, f in enumerate(frames) if ".py:" in f]
            names = [n for _, n, _ in py]
            for k in range(len(names) - len(want) + 1):
                if names[k:k + len(want)] != want:
                    continue
                for _, n, f in py[k:k + len(want)]:
                    self.assertIn(f"({files[n]}:", f, frames)
                # below Linear.forward, in most samples: ATen's native
                # frames (others are in the interpreter itself)
                below = frames[py[k + len(want) - 1][0] + 1:]
                if any(f.startswith("at::") for f in below):
                    chains += 1
                break
        self.assertGreater(chains, 0, "no sample in Linear.forward with the whole module chain "
                           "above ATen's frames")


if __name__ == "__main__":
    frtest.main()
