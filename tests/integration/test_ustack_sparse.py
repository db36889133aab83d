"""Sparse raw stacks (FR_USTACK_SPARSE): the recorder keeps only the bytes
and registers of each --stack dwarf copy that its unwind read.

The same recording decoded from its whole copies and from sparse ones must
give the same stacks, sample by sample: a recording made with every copy
whole (FLIGHTREC_USTACK_SPARSE=0) is rewritten sparse by the recorder's own
planner (tests/unit/make_sparse_trace.c, from the trace's unwind images and
mappings) and both are dumped.  A recording made sparse (the default) gives
the whole call chain of deep_chain, and its raw stacks are flagged.

Bounded copies (FR_USTACK_BOUNDED): the same whole recording rewritten with
each copy cut at its thread's stack top as the planner found it in an
earlier copy (what the kernel does with the recorder's hints) must dump the
same stacks too; and a real recording cuts most copies, counts them in its
"ustack_bounded" entry, and still gives the whole chain."""
import json
import os
import shutil
import struct
import subprocess
import sys
import frtest

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_SPARSE = os.environ.get("FLIGHTREC_MAKE_SPARSE_TRACE",
                             os.path.join(os.path.dirname(frtest.SAMPLES), "tests", "unit",
                                          "make_sparse_trace"))
TORCH_PYTHON = "/usr/bin/python3"
TORCH_LOOP = os.path.join(HERE, "..", "bench", "torch_loop.py")
CHAIN = ["main", "level_one", "level_two", "level_three", "burn_cpu"]
FR_REC_USTACK = 0x10B
FR_USTACK_SPARSE = 16
FR_USTACK_BOUNDED = 32


def rewrite(src, dst, *mode):
    out = subprocess.run([MAKE_SPARSE, src, dst, *mode], capture_output=True, text=True,
                         check=True)
    words = out.stdout.split()
    return {words[i]: int(words[i + 1]) for i in range(0, len(words), 2)}


def dump(trace):
    return frtest.analyze("dump", trace, "--type", "cpu_sample").stdout.splitlines()


def ustacks(trace):
    """(flags, stack_len) of every FR_REC_USTACK in the trace's EVENTS chunks"""
    sys.path.insert(0, os.path.join(HERE, "..", "bench"))
    import bench_sample_bytes as bench
    out = []
    for pay in bench.events_chunks(trace):
        for typ, rec in bench.records(pay):
            if typ == FR_REC_USTACK:
                out.append((struct.unpack_from("<H", rec, 28)[0],
                            struct.unpack_from("<I", rec, 24)[0]))
    return out


def ustack_flags(trace):
    return [f for f, _ in ustacks(trace)]


def has_torch():
    return subprocess.run([TORCH_PYTHON, "-c", "import torch"], capture_output=True).returncode == 0


class SparseStacks(frtest.Case):
    @classmethod
    def setUpClass(cls):
        cls.dir = frtest.workdir("ustack_sparse")
        cls.prog = os.path.join(cls.dir, "deep_chain")
        shutil.copy(frtest.sample("deep_chain"), cls.prog)

    def record(self, name, target, sparse, bound=True):
        out = os.path.join(self.dir, name)
        env = dict(os.environ, FLIGHTREC_USTACK_SPARSE="1" if sparse else "0",
                   FLIGHTREC_USTACK_BOUND="1" if bound else "0")
        cmd = [frtest.FLIGHTREC, "record", "-o", out, "--probes", "cpu", "--"] + target
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)
        return out, p.stderr

    def check_rewrite(self, name, target, min_sparse):
        whole, _ = self.record(name + "-whole.frec", target, sparse=False)
        self.assertFalse(any(f & FR_USTACK_SPARSE for f in ustack_flags(whole)))
        sparse = os.path.join(self.dir, name + "-sparse.frec")
        st = rewrite(whole, sparse)
        flags = ustack_flags(sparse)
        n_sparse = sum(1 for f in flags if f & FR_USTACK_SPARSE)
        self.assertEqual(st["sparse"] + st["whole"], len(flags))
        self.assertEqual(n_sparse, st["sparse"])
        self.assertGreaterEqual(n_sparse, min_sparse * len(flags), st)
        self.assertLess(st["bytes_kept"], st["bytes_in"])
        a, b = dump(whole), dump(sparse)
        self.assertEqual(len(a), len(flags))
        self.assertEqual(a, b)
        self.assertEqual(frtest.folded(whole), frtest.folded(sparse))
        return st

    def test_deep_chain_same_stacks(self):
        # how much smaller depends on how deep the samples caught the chain:
        # tests/bench/bench_sample_bytes.py measures it; here only that the
        # stacks are the same and the copies shrink (check_rewrite)
        self.check_rewrite("deep", [self.prog, "1.5"], 0.9)

    def test_torch_same_stacks(self):
        if not has_torch():
            self.skipTest(f"{TORCH_PYTHON} has no torch")
        # stacks that do not unwind to their outermost frame stay whole:
        # how many depends on how many samples fall in the import (Debian's
        # python3-torch 1.13.1 here: 62% and 74% of the copies sparse in two
        # runs on a loaded machine); the outcome is that the stacks are the
        # same and the copies shrink, with most of them sparse
        self.check_rewrite("torch", [TORCH_PYTHON, TORCH_LOOP, "4"], 0.5)

    def check_bound(self, name, target, min_bounded):
        whole, _ = self.record(name + "-whole.frec", target, sparse=False)
        bounded = os.path.join(self.dir, name + "-bounded.frec")
        st = rewrite(whole, bounded, "bound")
        recs = ustacks(bounded)
        cut = [n for f, n in recs if f & FR_USTACK_BOUNDED]
        self.assertEqual(len(cut), st["bounded"])
        self.assertGreaterEqual(len(cut), min_bounded * len(recs), st)
        self.assertEqual(dump(whole), dump(bounded))
        self.assertEqual(frtest.folded(whole), frtest.folded(bounded))
        return st

    def test_deep_chain_bounded_same_stacks(self):
        st = self.check_bound("deep-bound", [self.prog, "1.5"], 0.9)
        self.assertEqual(st["bounded_short"], 0, st)

    def test_torch_bounded_same_stacks(self):
        if not has_torch():
            self.skipTest(f"{TORCH_PYTHON} has no torch")
        # Python stacks of every depth (the import, the loop); a copy whose
        # unwind stops early for another reason (a file whose image is not
        # written yet) counts as short and stays whole after: same stacks
        self.check_bound("torch-bound", [TORCH_PYTHON, TORCH_LOOP, "4"], 0.3)

    def test_recorded_bounded(self):
        trace, err = self.record("deep-bounded.frec", [self.prog, "1.5"], sparse=True)
        self.assertRegex(err, r"[1-9][0-9]* copies cut at their thread's stack top, 0 of them short")
        recs = ustacks(trace)
        cut = [n for f, n in recs if f & FR_USTACK_BOUNDED]
        self.assertGreaterEqual(len(cut), 0.9 * len(recs), len(recs))
        self.assertLess(max(cut), 4096, cut[:10])  # main's few frames, not 16 KiB
        info = json.loads(frtest.analyze("info", "--json", trace).stdout)
        counts = {p["name"]: p["events"] for p in info["files"][0]["probes"]}
        self.assertEqual(counts["ustack_bounded"], len(cut), counts)
        self.assertEqual(counts["ustack_short"], 0, counts)
        self.assertEqual(info["files"][0]["drops"], 0)
        stacks = {f: n for f, n in frtest.folded(trace).items() if "burn_cpu" in f}
        total = sum(stacks.values())
        full = sum(n for f, n in stacks.items() if [x for x in f if x in CHAIN] == CHAIN)
        self.assertGreater(total, 50, stacks)
        self.assertGreaterEqual(full / total, 0.9, stacks)
        off, _ = self.record("deep-unbounded.frec", [self.prog, "1"], sparse=True,
                             bound=False)
        self.assertFalse([f for f in ustack_flags(off) if f & FR_USTACK_BOUNDED])

    def test_recorded_sparse(self):
        trace, err = self.record("deep-default.frec", [self.prog, "1.5"], sparse=True)
        self.assertIn("copies sparse", err)
        flags = ustack_flags(trace)
        self.assertGreater(len(flags), 50)
        self.assertGreaterEqual(sum(1 for f in flags if f & FR_USTACK_SPARSE), 0.9 * len(flags))
        stacks = {f: n for f, n in frtest.folded(trace).items() if "burn_cpu" in f}
        total = sum(stacks.values())
        full = sum(n for f, n in stacks.items()
                   if [x for x in f if x in CHAIN] == CHAIN)
        self.assertGreater(total, 50, stacks)
        self.assertGreaterEqual(full / total, 0.9, stacks)


if __name__ == "__main__":
    frtest.require_root()
    frtest.main()
