"""samples/write_calls makes COUNT write(2) calls of sizes BASE..BASE+COUNT-1
to one file: every one must be in the trace, with its fd, its size and its
return value, and --syscall-min-us must drop short calls in the kernel.
Which file an fd names is recorded for every open, whatever the minimum
duration, and for the fds a process already had when --pid attached."""
import os
import re
import signal
import subprocess
import frtest

COUNT, BASE = 50, 100


class Syscalls(frtest.Case):
    def record_writes(self, name, extra, sleep_ms=None):
        d = frtest.workdir(name)
        trace = os.path.join(d, "w.frec")
        p = frtest.record(trace, ["--probes", "syscalls"] + extra,
                          ["--", frtest.sample("write_calls"), os.path.join(d, "out.bin"),
                           str(COUNT), str(BASE)] + ([str(sleep_ms)] if sleep_ms else []))
        self.pid = None
        fd = int(re.search(r"fd=(\d+)", p.stdout).group(1))
        everything = frtest.dump(trace)
        pid = self.pid = next(e["pid"] for e in everything
                              if e["type"] == "proc_exec" and e["comm"] == "write_calls")
        events = [e for e in everything if e["type"] == "syscall"]
        writes = [e for e in events if e["name"] == "write" and e["pid"] == pid and e.get("fd") == fd]
        self.fd_paths = [e for e in everything if e["type"] == "fd_path" and e["pid"] == pid]
        self.out_bin = os.path.join(d, "out.bin")
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
        _, _, events, writes = self.record_writes("syscalls_min", ["--syscall-min-us", "100000"],
                                                  sleep_ms=200)
        # nothing in this program takes 100 ms but its 200 ms nanosleep and,
        # at most, process start-up: the sleep is kept (the filter is not
        # "record nothing"), the writes are not
        self.assertEqual(writes, [])
        self.assertTrue(all(e["duration_ns"] >= 100_000_000 for e in events), events[:3])
        sleeps = [e for e in events if e["pid"] == self.pid and "nanosleep" in e["name"]]
        self.assertEqual(len(sleeps), 1, events)
        self.assertGreaterEqual(sleeps[0]["duration_ns"], 200_000_000, sleeps)
        # the open of the written file is there all the same, with its fd
        opened = [e for e in self.fd_paths if e["path"] == self.out_bin]
        self.assertEqual(len(opened), 1, self.fd_paths)
        self.assertEqual(opened[0]["source"], 0)
        self.assertEqual(opened[0]["open_flags"] & 0o1101, 0o1101)  # O_WRONLY|O_CREAT|O_TRUNC
        self.assertEqual(opened[0]["path_len"], len(self.out_bin))

    def test_fds_open_before_attach(self):
        d = frtest.workdir("syscalls_fds_at_attach")
        held = os.path.join(d, "held.pt")
        # fd 7 is open on held.pt before the recorder attaches; the process
        # then sleeps (no open of its own to see)
        job = subprocess.Popen(["sh", "-c", f"exec 7>'{held}'; exec sleep 30"])
        try:
            for _ in range(100):  # until the shell has exec'd sleep with fd 7
                if os.path.exists(f"/proc/{job.pid}/fd/7") and \
                        os.readlink(f"/proc/{job.pid}/exe").endswith("sleep"):
                    break
                subprocess.run(["sleep", "0.05"])
            trace = os.path.join(d, "a.frec")
            frtest.record(trace, ["--probes", "syscalls", "--duration", "0.5"],
                          ["--pid", str(job.pid)])
        finally:
            job.send_signal(signal.SIGKILL)
            job.wait()
        found = [e for e in frtest.dump(trace, "--type", "fd_path")
                 if e["pid"] == job.pid and e["fd"] == 7]
        self.assertEqual(len(found), 1, found)
        self.assertEqual(found[0]["path"], held)
        self.assertEqual(found[0]["source"], 1)  # read from /proc at attach


if __name__ == "__main__":
    frtest.main()
