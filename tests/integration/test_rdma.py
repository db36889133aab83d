"""samples/rdma_pingpong on the stand-in verbs stack (samples/verbs/), recorded
with the rdma probes: `flightrec-analyze rdma --json` must give, per queue
pair, exactly the work requests, bytes and error completions the sample's
schedule implies, each QP joined to its peer, and a post->completion p50
never below the latency the sample configures (how close it comes is a
measurement: tests/bench/bench_rdma.py).  Also the unsignaled-chain
mode, a process that opens its device (and forks a peer) after the recording
started, and port counters read from a directory of fake hw_counters files.

Not for the model's corner cases (tests/unit/test_analyzer_rdma.c)."""
import contextlib
import json
import os
import re
import signal
import subprocess
import time
import frtest

WRITE_SIZES = (64, 1024, 4096, 65536)


def expected_side(error_every, chain_n=None, chains=20):
    """What the analyzer must report for one QP of the sample (see the
    schedule in samples/rdma_pingpong.c): the fake provider fails every
    error_every-th signaled send WR it executes (flushed ones not counted)
    and flushes the rest of that post call; unsignaled WRs before a failed
    one in a chain succeed."""
    posts = [[(WRITE_SIZES[i % 4], True)] for i in range(100)]
    posts += [[(512, True)] for _ in range(8)]
    posts += [[(4096, True)] * 4 for _ in range(3)]
    if chain_n is not None:
        posts += [[(1024, False)] * chain_n + [(1024, True)] for _ in range(chains)]
    executed = send_ops = send_bytes = errors = flushes = signaled_ok = 0
    for call in posts:
        failed = False
        for size, signaled in call:
            if failed:
                flushes += 1
                continue
            if signaled:
                executed += 1
                if error_every and executed % error_every == 0:
                    errors += 1
                    failed = True
                    continue
                signaled_ok += 1
            send_ops += 1
            send_bytes += size
    return {
        "send_ops": send_ops, "send_bytes": send_bytes,
        "recv_ops": 8, "recv_bytes": 8 * 512,
        "ops": send_ops + 8, "bytes": send_bytes + 8 * 512,
        "errors": errors, "flush_errors": flushes,
        "error_status": {"IBV_WC_RETRY_EXC_ERR": errors} if errors else {},
        # one completion per signaled WR (success or error), per flushed WR,
        # and per receive
        "completions": signaled_ok + errors + flushes + 8,
    }


def sides(stdout):
    """{side name: {"qp_num", "latency_us", "error_every", "p50_ns", and the
    counts of the SIDE line}} from the sample's output."""
    out = {}
    for m in re.finditer(r"^(\w\d) timing: (.*)$", stdout, re.M):
        out.setdefault(m.group(1), {}).update(
            {k: int(v, 0) for k, v in re.findall(r"(\w+)=(\S+)", m.group(2))})
    for m in re.finditer(r"^(\w\d) (send_wr=.*)$", stdout, re.M):
        out.setdefault(m.group(1), {}).update(
            {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))})
    return out


def peer_of(name):
    return name[0] + ("1" if name[1] == "0" else "0")


class Rdma(frtest.Case):
    def setUp(self):
        # samples/verbs fails the configure when it cannot build it
        self.assertTrue(os.path.exists(frtest.sample("rdma_pingpong")), "rdma_pingpong not built")
        self.env = dict(os.environ, FLIGHTREC_FAKE_RDMA_SHM=f"flightrec-fakerdma-it-{os.getpid()}")

    def record_pingpong(self, name, args, extra_rec=()):
        d = frtest.workdir(name)
        trace = os.path.join(d, "pp.frec")
        # No wait before the first post: the process is held at the return
        # of ibv_open_device until the provider's post/poll functions are
        # attached (tests/integration/test_rdma_hold.py checks that nothing
        # is lost)
        cmd = [frtest.FLIGHTREC, "record", "-o", trace, "--probes", "rdma,cpu", *extra_rec,
               "--", frtest.sample("rdma_pingpong"), *args]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=self.env)
        self.assertEqual(p.returncode, 0, f"{' '.join(cmd)}:\n{p.stdout}\n{p.stderr}")
        self.assertIn("rdma_pingpong: ok", p.stdout + p.stderr)
        report = json.loads(frtest.analyze("rdma", trace, "--json").stdout)
        return trace, p, sides(p.stdout), report

    def check_connections(self, trace, proc, by_side, report, chain_n=None):
        conns = {c["local_qp"]: c for c in report["connections"]}
        why = (f"recorder stderr:\n{proc.stderr}\n"
               f"rdma text:\n{frtest.analyze('rdma', trace).stdout}")
        pids = {c["pid"] for c in report["connections"]}
        for name, s in sorted(by_side.items()):
            qp, peer = s["qp_num"], by_side[peer_of(name)]["qp_num"]
            with self.subTest(side=name, qp=qp):
                self.assertIn(qp, conns, why)
                c = conns[qp]
                want = expected_side(s["error_every"], chain_n)
                # the sample's own counts agree with the schedule
                self.assertEqual(s["wc_retry_exc_err"], want["errors"])
                self.assertEqual(s["wc_flush_err"], want["flush_errors"])
                self.assertEqual(s["recv_bytes"], want["recv_bytes"])
                got = {k: c[k] for k in want}
                self.assertEqual(got, want, f"side {name}\n{why}")
                self.assertEqual(c["remote_qp"], peer)
                self.assertTrue(c["joined"], c)
                self.assertEqual(c["remote_pid"], conns[peer]["pid"])
                self.assertEqual(c["host"], c["remote_host"])
                self.assertEqual(c["unmatched_completions"], 0, why)
                self.assertEqual(c["missed_completions"], 0, why)
                self.assertEqual(c["outstanding"], 0, why)
                # post -> completion p50: never below the configured latency
                # (the provider completes a work request no earlier); how
                # close it comes depends on the machine's load, so that is
                # measured in tests/bench/bench_rdma.py, not asserted here
                p50 = c["latency_us"]["p50"]
                conf = s["latency_us"]
                self.assertIsNotNone(p50, why)
                self.assertGreaterEqual(p50, 0.99 * conf, f"side {name}")
                self.assertGreaterEqual(c["latency_us"]["max"], c["latency_us"]["p99"])
                self.assertGreater(c["bytes_per_s"], 0)
                self.assertGreater(c["ops_per_s"], 0)
        self.assertEqual(len(report["connections"]), len(by_side), report["connections"])
        return pids

    def test_default(self):
        trace, p, by_side, report = self.record_pingpong("rdma_default", [])
        self.assertEqual(set(by_side), {"A0", "A1", "B0", "B1"})
        pids = self.check_connections(trace, p, by_side, report)
        self.assertEqual(len(pids), 1)  # every QP in one process
        # empty polls: counted in the kernel, reported per recording
        self.assertEqual(len(report["files"]), 1)
        self.assertGreater(report["files"][0]["idle_polls"], 0)
        # by opcode: the 100 writes of A0 by size bucket
        a0 = next(c for c in report["connections"] if c["local_qp"] == by_side["A0"]["qp_num"])
        rows = {(r["opcode"], r["size"]): r for r in a0["by_opcode"]}
        self.assertEqual(rows[("RDMA_WRITE", "<4K")]["ops"], 50)
        self.assertEqual(rows[("RDMA_WRITE", "4K-64K")]["ops"], 25 + 12)  # writes + bursts
        self.assertEqual(rows[("RDMA_WRITE", "64K-1M")]["ops"], 25)
        self.assertEqual(rows[("SEND", "<4K")]["ops"], 8)
        self.assertEqual(rows[("RECV", "<4K")]["bytes"], 4096)
        text = frtest.analyze("rdma", trace).stdout
        self.assertIn("IBV_WC_RETRY_EXC_ERR x11 (retry_exhausted)", text)
        self.assertIn("flushed: 2", text)

    def test_unsignaled_chain(self):
        trace, p, by_side, report = self.record_pingpong("rdma_chain",
                                                         ["--unsignaled-chain", "7"])
        self.check_connections(trace, p, by_side, report, chain_n=7)
        for name, s in by_side.items():
            c = next(c for c in report["connections"] if c["local_qp"] == s["qp_num"])
            self.assertEqual(c["send_ops"] + c["errors"] + c["flush_errors"], s["send_wr"],
                             name)

    def test_open_after_start(self):
        """The provider is loaded and the devices opened 300 ms after the
        recording started, in a parent and a forked child that post their
        receives as soon as their QPs exist: the data path must be attached
        dynamically, before either posts (the first to open is held until it
        is; the other finds it attached, or is held as well)."""
        trace, p, by_side, report = self.record_pingpong(
            "rdma_late", ["--fork", "--unsignaled-chain", "7", "--open-after-ms", "300",
                          "--post-early"])
        pids = self.check_connections(trace, p, by_side, report, chain_n=7)
        self.assertEqual(len(pids), 2)
        for c in report["connections"]:
            self.assertNotEqual(c["pid"], c["remote_pid"], c)

    def test_port_counters(self):
        d = frtest.workdir("rdma_counters")
        ctr = os.path.join(d, "ib", "fakerdma0", "ports", "1", "hw_counters")
        os.makedirs(ctr)

        def put(name, value):
            tmp = os.path.join(ctr, "." + name)
            with open(tmp, "w") as f:
                f.write(f"{value}\n")
            os.rename(tmp, os.path.join(ctr, name))

        put("rnr_nak_retry_err", 100)
        put("out_of_sequence", 7)
        put("local_ack_timeout_err", 0)
        trace = os.path.join(d, "c.frec")
        # a file, not a pipe: each SIGUSR2 below adds a line, read at the end
        errf = open(os.path.join(d, "c.stderr"), "w+")
        rec = subprocess.Popen([frtest.FLIGHTREC, "record", "-o", trace, "--probes", "rdma",
                                "--rdma-counters", os.path.join(d, "ib"), "--", "sleep", "3600"],
                               stdout=subprocess.PIPE, stderr=errf, text=True)
        job = frtest.child_of(rec.pid)
        try:
            # SIGUSR2 before the recorder's handler is in would kill it:
            # first its "recording" line
            frtest.wait_file_line(errf.name, "recording", rec)

            def samples_taken():
                """Samples of the port counters in the trace so far: SIGUSR2
                seals and writes what the recorder holds, then `rdma` reads
                the growing file."""
                rec.send_signal(signal.SIGUSR2)
                p = frtest.analyze("rdma", trace, "--json", check=False)
                try:
                    got = {c["name"]: c for c in json.loads(p.stdout)["counters"]}
                except (ValueError, KeyError):
                    return 0
                return got.get("fakerdma0/1/rnr_nak_retry_err", {}).get("samples", 0)

            def wait_samples(n):
                # the sampler's own records are the outcome; the bound only
                # turns a sampler that stopped into a message
                deadline = time.monotonic() + frtest.HANG_GUARD_S
                while (have := samples_taken()) < n:
                    self.assertLess(time.monotonic(), deadline, f"{have} counter samples, "
                                    f"waiting for {n}")
                    time.sleep(0.2)
                return have

            # the baseline is in; each change then stays in place for two
            # more samples, so at least one whole sample reads it before the
            # next change: the deltas are exactly 5 then 20 (SIGUSR2's flush
            # takes a sample too: the waits are short)
            have = wait_samples(1)
            put("rnr_nak_retry_err", 105)
            put("out_of_sequence", 9)
            have = wait_samples(have + 2)
            put("rnr_nak_retry_err", 125)
            wait_samples(have + 2)
            rec.send_signal(signal.SIGINT)
            rec.communicate(timeout=frtest.HANG_GUARD_S)
        finally:
            if rec.poll() is None:
                rec.kill()
                rec.wait()
            with contextlib.suppress(ProcessLookupError):
                os.kill(job, signal.SIGKILL)
            errf.seek(0)
            err = errf.read()
            errf.close()
        # the recorder passes its SIGINT on to the job: sleep's status
        self.assertEqual(rec.returncode, 128 + signal.SIGINT, err)
        report = json.loads(frtest.analyze("rdma", trace, "--json").stdout)
        got = {c["name"]: c for c in report["counters"]}
        self.assertEqual(set(got), {"fakerdma0/1/rnr_nak_retry_err", "fakerdma0/1/out_of_sequence",
                                    "fakerdma0/1/local_ack_timeout_err"}, err)
        self.assertEqual(got["fakerdma0/1/rnr_nak_retry_err"]["total"], 25)
        self.assertEqual(got["fakerdma0/1/rnr_nak_retry_err"]["max_delta"], 20)
        self.assertEqual(got["fakerdma0/1/out_of_sequence"]["total"], 2)
        self.assertEqual(got["fakerdma0/1/local_ack_timeout_err"]["total"], 0)
        self.assertGreaterEqual(got["fakerdma0/1/rnr_nak_retry_err"]["samples"], 3)
        self.assertEqual(report["connections"], [])
        text = frtest.analyze("rdma", trace).stdout
        self.assertRegex(text, r"fakerdma0/1/rnr_nak_retry_err\s+25\s")


if __name__ == "__main__":
    frtest.main()
