"""What start-up costs: `-v` names each loaded family's load time and, per
program, the instructions the verifier processed (the kernel's count for
this kernel, the same in every run).  Each stack-taking program's copy of
the Python walk and the stack copy once took 186,000-214,000 (0.2 s of
verification per family, 1.7 s before a command under the default probes
ran): bpf_loop's callbacks, which kernels from 6.8 verify round by round,
kept their counters on the BPF stack, where every round's count was a new
state.  Every family, both stack modes; the start-up line says how long the
command waited."""
import re

import frtest

LOADED = re.compile(r"^flightrec: probe family (\w+) loaded in ([\d.]+) ms; "
                    r"instructions verified:((?: \w+ \d+)*)$", re.M)
READY = re.compile(r"; ready in (\d+\.\d\d) s")
# five times the largest program's count here (fr_cuda_exit, 39,258), a
# fifth of the old stack programs'
BOUND = 60000
FAMILIES = {"proc", "cpu", "syscalls", "cuda", "nccl", "rdma", "sched", "gpu", "step"}


class BpfLoad(frtest.Case):
    def test_every_program_verifies_in_bounded_work(self):
        d = frtest.workdir("bpf_load")
        for mode in ("dwarf", "fp"):
            with self.subTest(stack=mode):
                p = frtest.record(f"{d}/{mode}.frec",
                                  ["-v", "--stack", mode, "--probes",
                                   "cpu,syscalls,cuda,nccl,rdma,sched,gpu",
                                   "--step-marker", "step_ret"],
                                  ["--", frtest.sample("step_marks"), "1"])
                fams = {m[0]: m[2].split() for m in LOADED.findall(p.stderr)}
                self.assertEqual(set(fams), FAMILIES, p.stderr)
                stack_programs = 0
                for fam, words in fams.items():
                    progs = dict(zip(words[::2], map(int, words[1::2])))
                    self.assertTrue(progs, (fam, p.stderr))
                    for name, insns in progs.items():
                        self.assertGreater(insns, 0, (fam, name))
                        self.assertLessEqual(insns, BOUND, (fam, name, p.stderr))
                        if name.endswith("_exit") or name == "fr_cpu_sample":
                            stack_programs += 1
                # cpu, syscalls, cuda, nccl, rdma (two), sched: the programs
                # that take stacks, all loaded and counted
                self.assertGreaterEqual(stack_programs, 7, p.stderr)
                ready = READY.search(p.stderr)
                self.assertIsNotNone(ready, p.stderr)
                self.assertGreater(float(ready.group(1)), 0)

    def test_quiet_without_verbose(self):
        d = frtest.workdir("bpf_load")
        p = frtest.record(f"{d}/plain.frec", ["--probes", "cpu"], ["--", "/bin/true"])
        self.assertNotIn("probe family", p.stderr)
        self.assertRegex(p.stderr, READY)


if __name__ == "__main__":
    frtest.main()
