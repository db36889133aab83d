"""Flight-recorder mode (`record --ring`): the ring keeps only the latest
events in memory, FILE is never written, and a trigger writes a snapshot
FILE-N that is a complete trace on its own.

- An OOM after far more events than the ring holds: the snapshot is intact,
  holds only the latest events, and `memory` on it gives the failed
  allocation and its holders with their exact bytes, though most of those
  allocations were made long before the window (they are carried).
- SIGUSR2 on a running job: snapshots numbered after the highest FILE-N
  already there (nothing replaced), capped by --max-snapshots with the
  suppressed one said.
- A hung collective, as two nodes (ranks 0-2 on one recorder, the culprit
  rank 3 alone on the other, whose recorder never triggers): the waiting
  node's snapshot comes after --hang-timeout by itself, and `stragglers` on
  it alone names the collective, the waiting ranks and the missing one —
  blocking NCCL, and asynchronous NCCL waited for by a synchronize or by a
  watchdog polling cudaEventQuery.
- Outside ring mode SIGUSR2 does not stop the recorder: it seals and flushes
  the current chunks, so a recorder killed afterwards keeps what it saw."""
import json
import os
import queue
import signal
import socket
import subprocess
import threading
import frtest

MiB = 1048576
# 800 steps before the OOM put several times the 64K ring's worth of records
# through it (at 400 the ring held most of the run: 400-700 records evicted)
STEPS = 1600
FAILED = 17179869184  # the stand-in's 16 GiB: cuda_train's try_huge_alloc
# cuda_train's live allocations at the OOM in step STEPS/2 (0-based):
# weights, the input buffer, the leaky cache of steps 0..STEPS/2, forward
HOLDERS = {"forward": (1073741824, 2), "init_weights": (805306368, 3),
           "leaky_cache": ((STEPS // 2 + 1) * MiB, STEPS // 2 + 1),
           "alloc_io_buffers": (67108864, 1)}


class Lines:
    """A process's output lines, read on threads, waited for by content."""

    def __init__(self, proc):
        self.q = queue.Queue()
        self.seen = []
        for stream in (proc.stdout, proc.stderr):
            threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream):
        for line in stream:
            self.q.put(line.rstrip("\n"))
        stream.close()

    def wait_for(self, text, timeout=60):
        for line in self.seen:
            if text in line:
                self.seen.remove(line)
                return line
        while True:
            line = self.q.get(timeout=timeout)
            if text in line:
                return line
            self.seen.append(line)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Ring(frtest.Case):
    def test_oom_snapshot_exact_holders(self):
        d = frtest.workdir("ring_oom")
        out = os.path.join(d, "job.frec")
        # CPU samples at 999 Hz add to the calls' records
        p = frtest.record(out, ["--ring", "64K", "--chunk-kib", "64", "--probes", "cuda,cpu",
                                "--freq", "999"],
                          ["--", frtest.sample("cuda_train"), "--steps", str(STEPS),
                           "--step-ms", "2"])
        snap = os.path.join(d, "job-1.frec")
        self.assertIn(f"flightrec: snapshot {snap} (oom at ", p.stderr)
        self.assertFalse(os.path.exists(out), "ring mode wrote FILE itself")
        self.assertEqual(sorted(os.listdir(d)), ["job-1.frec"])

        chk = frtest.analyze("check", snap)
        self.assertIn("intact", chk.stdout)
        info = json.loads(frtest.analyze("info", "--json", snap).stdout)["files"][0]
        s = info["snapshot"]
        self.assertEqual((s["number"], s["trigger"]), (1, "oom"))
        # far more than the ring held had gone through it
        self.assertGreater(s["evicted_records"], 1000, s)
        self.assertGreater(s["window_s"][0], 0, s)
        self.assertIn("cudaMalloc of 17179869184 bytes", s["detail"])

        mem = json.loads(frtest.analyze("memory", "--json", snap).stdout)
        self.assertEqual(len(mem["failed_allocations"]), 1, mem["failed_allocations"])
        fail = mem["failed_allocations"][0]
        self.assertEqual((fail["function"], fail["bytes"]), ("cudaMalloc", FAILED))
        self.assertEqual(fail["stack"][-1], "try_huge_alloc")
        holders = {h["stack"][-1]: (h["bytes"], h["allocations"]) for h in fail["top_holders"]}
        self.assertEqual(holders, HOLDERS)
        self.assertEqual(fail["in_use_bytes"], sum(b for b, _ in HOLDERS.values()))
        # the carried allocations pair with their frees inside the window
        series = [x for x in mem["series"] if x["space"] == "device"]
        self.assertEqual([x["before_recording_frees"] for x in series], [0])

    def test_exit_trigger(self):
        d = frtest.workdir("ring_exit")
        out = os.path.join(d, "job")  # no extension: snapshots are job-N
        p = frtest.record(out, ["--ring", "1M", "--probes", "cpu"],
                          ["--", "sh", "-c", "exit 3"], check=False)
        self.assertEqual(p.returncode, 3, p.stderr)  # the job's status stays the job's
        snap = os.path.join(d, "job-1")
        self.assertIn(f"flightrec: snapshot {snap} (exit at ", p.stderr)
        frtest.analyze("check", snap)
        s = json.loads(frtest.analyze("info", "--json", snap).stdout)["files"][0]["snapshot"]
        self.assertEqual(s["trigger"], "exit")
        self.assertIn("exited with status 3", s["detail"])

    def test_on_snapshot_command(self):
        d = frtest.workdir("ring_hook")
        out = os.path.join(d, "job.frec")
        told = os.path.join(d, "told")
        p = frtest.record(out, ["--ring", "1M", "--probes", "cpu", "--on-snapshot",
                                'echo "$FLIGHTREC_TRIGGER $FLIGHTREC_SNAPSHOT" > ' + told + ".tmp"
                                " && mv " + told + ".tmp " + told],
                          ["--", "sh", "-c", "exit 4"], check=False)
        self.assertEqual(p.returncode, 4, p.stderr)
        # the command is not waited for: it finishes on its own
        for _ in range(600):
            if os.path.exists(told):
                break
            threading.Event().wait(0.1)
        with open(told) as f:
            self.assertEqual(f.read(), "exit " + os.path.join(d, "job-1.frec") + "\n")

    def hang_two_nodes(self, name, wait, asynchronous, how):
        d = frtest.workdir("ring_hang_" + name)
        port = free_port()
        train = [frtest.sample("nccl_train"), "--steps", "10", "--compute-ms", "20",
                 "--wait", wait, "--hang-rank", "3", "--hang-at", "3"]
        env = dict(os.environ, FLIGHTREC_FAKE_NCCL_TIMEOUT_S="120")
        env.pop("FLIGHTREC_FAKE_NCCL_ASYNC", None)
        if asynchronous:
            env["FLIGHTREC_FAKE_NCCL_ASYNC"] = "1"
        recs = []
        try:
            # the culprit's node first: the waiting node's recorder tells it
            # to take a snapshot too (--on-snapshot), as a user would fan out
            for node, first, local in (("nodeB", 3, 1), ("nodeA", 0, 3)):
                hook = [] if node == "nodeB" else [
                    "--on-snapshot", f"kill -USR2 {recs[0][0].pid}"]
                cmd = [frtest.FLIGHTREC, "record", "-o", os.path.join(d, node + ".frec"),
                       "--ring", "8M", "--hang-timeout", "1", "--trigger", "nccl-error"] + hook + [
                       "--probes", "nccl,cuda", "--", frtest.sample("launch_ranks"),
                       "--ranks", "4", "--first-rank", str(first), "--local-ranks", str(local),
                       "--master", f"127.0.0.1:{port}", "--"] + train
                p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env)
                recs.append((p, Lines(p)))
            line = recs[1][1].wait_for("flightrec: snapshot ", timeout=100)
            told = recs[0][1].wait_for("flightrec: snapshot ", timeout=100)
            for p, _ in reversed(recs):  # the waiting node first
                p.send_signal(signal.SIGINT)
                p.wait(timeout=60)
        finally:
            for p, _ in recs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        snap = os.path.join(d, "nodeA-1.frec")
        self.assertIn(f"{snap} (hang at ", line)
        self.assertNotIn("nodeA.frec", os.listdir(d))
        frtest.analyze("check", snap)
        s = json.loads(frtest.analyze("info", "--json", snap).stdout)["files"][0]["snapshot"]
        self.assertEqual(s["trigger"], "hang")
        result = json.loads(frtest.analyze("stragglers", "--json", snap).stdout)
        hang = result["hang"]
        self.assertIsNotNone(hang, result.get("no_hang_reason"))
        self.assertEqual((hang["op"], hang["seq"], hang["waiting_ranks"], hang["missing_ranks"]),
                         ("AllReduce", 3, [0, 1, 2], [3]), hang)
        self.assertEqual(sorted({w["how"] for w in hang["waiting"]}), [how], hang)
        # the culprit's side, from the snapshot its node took when told
        other = os.path.join(d, "nodeB-1.frec")
        self.assertIn(f"{other} (signal at ", told)
        both = json.loads(frtest.analyze("stragglers", "--json", snap, other).stdout)["hang"]
        self.assertEqual((both["seq"], both["waiting_ranks"], both["missing_ranks"]),
                         (3, [0, 1, 2], [3]), both)
        self.assertEqual(both["ranks_without_trace"], 0, both)

    def test_hang_blocking(self):
        self.hang_two_nodes("blocking", "none", False, "in_call")

    def test_hang_async_synchronize(self):
        self.hang_two_nodes("sync", "stream", True, "synchronize")

    def test_hang_async_poll(self):
        self.hang_two_nodes("poll", "query", True, "event_poll")

    def test_sigusr2_numbering_and_cap(self):
        d = frtest.workdir("ring_signal")
        out = os.path.join(d, "run.frec")
        with open(os.path.join(d, "run-3.frec"), "w") as f:
            f.write("someone else's file\n")
        rec = subprocess.Popen([frtest.FLIGHTREC, "record", "-o", out, "--ring", "4M",
                                "--max-snapshots", "2", "--probes", "cuda", "--",
                                frtest.sample("cuda_hold"), "60"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = Lines(rec)
        try:
            ready = lines.wait_for("cuda_hold: ready")
            hold_pid = int(ready.split("pid=")[1].split()[0])
            rec.send_signal(signal.SIGUSR2)
            first = lines.wait_for("flightrec: snapshot ")
            rec.send_signal(signal.SIGUSR2)
            second = lines.wait_for("flightrec: snapshot ")
            rec.send_signal(signal.SIGUSR2)
            refused = lines.wait_for("no snapshot")
            os.kill(hold_pid, signal.SIGUSR1)
            self.assertEqual(rec.wait(timeout=60), 0)
        finally:
            if rec.poll() is None:
                rec.kill()
        self.assertIn(os.path.join(d, "run-4.frec") + " (signal at ", first)
        self.assertIn(os.path.join(d, "run-5.frec") + " (signal at ", second)
        self.assertIn("--max-snapshots 2 reached", refused)
        self.assertEqual(sorted(os.listdir(d)), ["run-3.frec", "run-4.frec", "run-5.frec"])
        with open(os.path.join(d, "run-3.frec")) as f:
            self.assertEqual(f.read(), "someone else's file\n")
        for n in (4, 5):
            snap = os.path.join(d, f"run-{n}.frec")
            frtest.analyze("check", snap)
            s = json.loads(frtest.analyze("info", "--json", snap).stdout)["files"][0]["snapshot"]
            self.assertEqual((s["number"], s["trigger"]), (n, "signal"))
            mem = json.loads(frtest.analyze("memory", "--json", snap).stdout)
            dev = [x for x in mem["series"] if x["space"] == "device"]
            # cuda_hold's four buffers, held when the signal came
            self.assertEqual([(x["end_bytes"], x["end_allocations"]) for x in dev],
                             [(125829120, 4)])

    def test_sigusr2_flushes_outside_ring_mode(self):
        d = frtest.workdir("usr2_flush")
        out = os.path.join(d, "run.frec")
        rec = subprocess.Popen([frtest.FLIGHTREC, "record", "-o", out, "--probes", "cuda",
                                "--", frtest.sample("cuda_hold"), "60"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = Lines(rec)
        try:
            ready = lines.wait_for("cuda_hold: ready")
            hold_pid = int(ready.split("pid=")[1].split()[0])
            rec.send_signal(signal.SIGUSR2)
            lines.wait_for("SIGUSR2: the current chunks sealed and written")
            self.assertIsNone(rec.poll(), "SIGUSR2 stopped the recorder")
            rec.send_signal(signal.SIGKILL)
            rec.wait(timeout=30)
        finally:
            if rec.poll() is None:
                rec.kill()
            try:
                os.kill(hold_pid, signal.SIGUSR1)
            except (ProcessLookupError, UnboundLocalError):
                pass
        chk = frtest.analyze("check", out, check=False)
        self.assertEqual(chk.returncode, 1, chk.stdout)
        mem = json.loads(frtest.analyze("memory", "--json", out).stdout)
        dev = [x for x in mem["series"] if x["space"] == "device"]
        self.assertEqual([(x["end_bytes"], x["end_allocations"]) for x in dev], [(125829120, 4)])


if __name__ == "__main__":
    frtest.main()
