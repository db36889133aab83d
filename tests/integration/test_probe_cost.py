"""--probe-cost prints each BPF program's calls and time per call when the
recording ends, from the kernel's run-time statistics: every cuda call of
samples/cuda_train ran the return program once and one of the entry
programs once, so their call counts equal the cuda events in the trace,
exactly.  Printed even with -q, and nothing without the option."""
import re
import frtest

ROW = re.compile(r"^  (fr_\w+)\s+(\d+)\s+(\d+)\s+([\d.]+)$", re.M)


class ProbeCost(frtest.Case):
    def test_calls_match_events(self):
        d = frtest.workdir("probe_cost")
        lib = frtest.sample("cudart/libcudart.so.12")
        trace = f"{d}/cost.frec"
        p = frtest.record(trace, ["-q", "--probe-cost", "--probes", "cuda", "--lib", f"cuda={lib}"],
                          ["--", frtest.sample("cuda_train"), "--steps", "4"])
        self.assertIn("probe cost", p.stderr)
        rows = {m[0]: (int(m[1]), int(m[2])) for m in ROW.findall(p.stderr)}
        events = [e for e in frtest.dump(trace, "--type", "cuda", "--no-stacks")]
        self.assertGreater(len(events), 20)
        self.assertEqual(rows["fr_cuda_exit"][0], len(events), p.stderr)
        entries = sum(c for name, (c, _) in rows.items() if name.startswith("fr_cuda_enter"))
        self.assertEqual(entries, len(events), p.stderr)
        for name, (calls, ns) in rows.items():
            self.assertGreater(ns, 0, (name, p.stderr))

        quiet = frtest.record(f"{d}/plain.frec", ["-q", "--probes", "cuda", "--lib", f"cuda={lib}"],
                              ["--", frtest.sample("cuda_train"), "--steps", "1"])
        self.assertNotIn("probe cost", quiet.stderr)


if __name__ == "__main__":
    frtest.main()
