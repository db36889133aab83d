"""A forked child of the recorded command is traced from its first
instruction (the pid set is followed in the kernel) and its stacks resolve
through the mappings it inherited from its parent."""
import os
import re
import frtest


class ForkFollow(frtest.Case):
    def test_child_samples(self):
        d = frtest.workdir("fork_follow")
        trace = os.path.join(d, "fork.frec")
        p = frtest.record(trace, ["--probes", "cpu"], ["--", frtest.sample("forker"), "1.5"])
        m = re.search(r"child (\d+) exited", p.stdout)
        self.assertIsNotNone(m, p.stdout)
        child = m.group(1)

        child_cpu = float(re.search(r"child cpu ([0-9.]+) s", p.stdout).group(1))
        child_stacks = frtest.folded(trace, "--pid", child)
        child_work = sum(n for f, n in child_stacks.items() if "child_work" in f)
        # 99 Hz of the CPU time the child got, within 25% (the ratio printed
        # whatever the outcome)
        print(f"child samples {child_work} for {child_cpu:.3f} s of CPU: "
              f"{child_work / (99 * child_cpu) if child_cpu else 0:.3f} of 99 Hz", flush=True)
        self.assertGreaterEqual(child_work, 0.75 * 99 * child_cpu, (child_cpu, child_stacks))
        self.assertFalse(any("parent_work" in f for f in child_stacks), child_stacks)
        for frames in child_stacks:
            if "child_work" in frames:
                i = frames.index("main")
                self.assertEqual(frames[i:i + 3], ("main", "child_work", "burn"), frames)

        info = frtest.analyze("info", trace).stdout
        self.assertRegex(info, rf"\n\s*{child}\s+\d+\s+")


if __name__ == "__main__":
    frtest.main()
