"""The step marker's stack, taken at a probed function's entry, names the
caller exactly once whatever the function's first instruction: `ret`,
`push %rbp` (where kernels since 6.11 add the caller to the stack
themselves, and flightrec used to add it a second time) or endbr64.  Every
call is one step event: the count is exact.  Both stack modes."""
import frtest

STEPS = 7


class StepMarker(frtest.Case):
    def test_stack_at_entry(self):
        d = frtest.workdir("step_marker")
        for marker in ("step_ret", "step_push", "step_endbr"):
            for mode in ("fp", "dwarf"):
                with self.subTest(marker=marker, stack=mode):
                    out = f"{d}/{marker}-{mode}.frec"
                    frtest.record(out, ["-q", "--probes", "cpu", "--stack", mode,
                                        "--step-marker", marker],
                                  ["--", frtest.sample("step_marks"), str(STEPS)])
                    steps = frtest.dump(out, "--type", "step")
                    self.assertEqual(len(steps), STEPS)
                    for ev in steps:
                        stack = ev["stack"]
                        self.assertEqual(stack[-3:], ["main", "run_steps", marker], stack)
                        self.assertEqual(stack.count("run_steps"), 1, stack)
                        self.assertEqual(stack.count("main"), 1, stack)


if __name__ == "__main__":
    frtest.main()
