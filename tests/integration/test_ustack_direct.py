"""--stack dwarf's one-copy BPF objects (FR_USTACK_DYNPTR, bpf/ustack.bpf.h):
where the kernel has bpf_probe_read_user_dynptr (its BTF names the kfunc,
Linux 6.16 on) the recorder loads them, says so on its start-up line and
in the trace header (FR_FILE_USTACK_DIRECT, info's ustack_direct), and the
stacks are the ones the two-copy objects give; FLIGHTREC_USTACK_DYNPTR=0
or an older kernel takes the two-copy objects, said the same way.  The
CUDA calls of samples/cuda_train are the same calls from the same places in
every run, so their unwound stacks must agree exactly, call for call."""
import collections
import json
import os
import subprocess

import frtest

STEPS = 3


def kernel_has_dynptr_read():
    p = subprocess.run(["bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux"],
                       capture_output=True, text=True)
    return "FUNC 'bpf_probe_read_user_dynptr'" in p.stdout


def record(name, dynptr):
    d = frtest.workdir("ustack_direct_" + name)
    trace = os.path.join(d, "run.frec")
    env = dict(os.environ, FLIGHTREC_USTACK_DYNPTR="1" if dynptr else "0")
    cmd = [frtest.FLIGHTREC, "record", "-o", trace, "--stack", "dwarf", "--probes", "cuda", "--",
           frtest.sample("cuda_train"), "--steps", str(STEPS)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stderr}")
    info = json.loads(frtest.analyze("info", "--json", trace).stdout)
    stacks = collections.Counter()
    for line in frtest.analyze("dump", trace, "--type", "cuda").stdout.splitlines():
        e = json.loads(line)
        stacks[(e["name"], tuple(e.get("stack", ())))] += 1
    return p.stderr, info["files"][0], stacks


class UstackDirect(frtest.Case):
    @classmethod
    def setUpClass(cls):
        cls.has = kernel_has_dynptr_read()
        cls.one = record("one", True)
        cls.two = record("two", False)

    def test_choice_said_on_start_line_and_in_header(self):
        err, info, _ = self.one
        if self.has:
            self.assertIn("dwarf stacks copied once", err)
            self.assertTrue(info["ustack_direct"], info)
        else:
            self.assertIn("dwarf stacks copied twice", err)
            self.assertFalse(info["ustack_direct"], info)
        self.assertNotIn("copied twice\n", err.replace("dwarf stacks copied twice", ""))
        err, info, _ = self.two
        self.assertIn("dwarf stacks copied twice", err)
        self.assertFalse(info["ustack_direct"], info)

    def test_same_stacks_either_way(self):
        one, two = self.one[2], self.two[2]
        self.assertEqual(one, two)
        # and they are whole: every allocation's stack reaches main through run
        allocs = [s for (name, s) in one if name == "cudaMalloc"]
        self.assertTrue(allocs)
        for s in allocs:
            self.assertIn("main", s)
            self.assertIn("run", s)


if __name__ == "__main__":
    frtest.main()
