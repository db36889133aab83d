"""samples/write_calls makes COUNT write(2) calls of sizes BASE..BASE+COUNT-1
to one file: every one must be in the trace, with its fd, its size and its
return value, and --syscall-min-us must drop short calls in the kernel."""
import os
import re
import frtest

COUNT, BASE = 50, 100


class Syscalls(frtest.Case):
    def record_writes(self, name, extra):
        d = frtest.workdir(name)
        trace = os.path.join(d, "w.frec")
        p = frtest.record(trace, ["--probes", "syscalls"] + extra,
                          ["--", frtest.sample("write_calls"), os.path.join(d, "out.bin"),
                           str(COUNT), str(BASE)])
        fd = int(re.search(r"fd=(\d+)", p.stdout).group(1))
        everything = frtest.dump(trace)
        pid = next(e["pid"] for e in everything
                   if e["type"] == "proc_exec" and e["comm"] == "write_calls")
        events = [e for e in everything if e["type"] == "syscall"]
        writes = [e for e in events if e["name"] == "write" and e["pid"] == pid and e.get("fd") == fd]
        return trace, fd, events, writes

    def test_every_write(self):
        # fp stacks: every call carries one (dwarf mode samples short calls)
        _, fd, events, writes = self.record_writes("syscalls_all", ["--stack", "fp"])
        self.assertEqual(sorted(w["bytes"] for w in writes), list(range(BASE, BASE + COUNT)))
        for w in writes:
            self.assertEqual(w["ret"], w["bytes"], w)
            self.assertGreater(w["duration_ns"], 0, w)
            self.assertTrue(w.get("stack"), w)
        # in call order
        self.assertEqual([w["bytes"] for w in writes], list(range(BASE, BASE + COUNT)))

    def test_min_duration_filter(self):
        _, _, events, writes = self.record_writes("syscalls_min", ["--syscall-min-us", "100000"])
        # nothing in this program takes 100 ms except, at most, process start-up
        self.assertEqual(writes, [])
        self.assertTrue(all(e["duration_ns"] >= 100_000_000 for e in events), events[:3])


if __name__ == "__main__":
    frtest.main()
