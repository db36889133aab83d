"""A hung collective named from real recordings: a 4-rank job of the NCCL
sample on the stand-in libnccl, recorded as two "nodes" by two recorders
(ranks 0-2 into nodeA.frec, rank 3 alone into nodeB.frec), where rank 3
never enters all-reduce #3 (nccl_train --hang-rank 3 --hang-at 3) and the
others wait for it until the recordings are stopped with SIGINT.

  blocking   the stand-in's collectives block: ranks 0-2 are inside
             ncclAllReduce (the recorder's FR_REC_INFLIGHT names it)
  sync       asynchronous NCCL (FLIGHTREC_FAKE_NCCL_ASYNC=1, the call
             returns at enqueue), --wait stream: ranks 0-2 are inside
             cudaStreamSynchronize of the collective's stream
  poll       asynchronous NCCL, --wait query: ranks 0-2 poll cudaEventQuery
             on an event recorded after the collective, never complete

In each, `stragglers --json` over both files, and over nodeA.frec alone (the
culprit's node holds nothing in flight, or no trace at all), gives
{"op":"AllReduce","seq":3,"waiting_ranks":[0,1,2],"missing_ranks":[3]}, and
the text output says it in one line.  The recordings stop once the hang
can be read from them: after every waiting rank has said it is about to
wait (nccl_train prints it just before the call or the wait), the test
asks both recorders to write what they hold (SIGUSR2: the chunks and the
calls in flight now) and runs `stragglers --json` on the files as they
stand, again until it names the hang (a timeout only fails the test).  A
look later than one that named it can only show a longer wait, so the
assertions are about who and what, never about how long.  Not a test of the rule's arithmetic
(tests/unit/test_analyzer_hang.c) nor of the stand-ins
(samples/nccl/test_nccl_train.sh, samples/cudart/test_cudart_standin.c)."""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frtest  # noqa: E402

HANG_AT = 3
# only to fail: how long the job may take to hang, and the analyzer to see it
START_TIMEOUT_S = 90.0
HANG_SEEN_TIMEOUT_S = 120.0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lines:
    """Collects a process's stderr lines on a thread."""

    def __init__(self, stream):
        self.lines = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self.read, args=(stream,), daemon=True)
        self.thread.start()

    def read(self, stream):
        for line in stream:
            with self.lock:
                self.lines.append(line)

    def count(self, text):
        with self.lock:
            return sum(text in line for line in self.lines)

    def text(self):
        with self.lock:
            return "".join(self.lines)


def names_hang(files):
    """Whether stragglers, on the files as they stand, names the planned
    hang: over both files and over the waiting ranks' node alone."""
    for subset in (files, files[:1]):
        p = frtest.analyze("stragglers", "--json", *subset, check=False)
        try:
            hang = json.loads(p.stdout).get("hang")
        except ValueError:
            return False
        if not hang or hang.get("seq") != HANG_AT or hang.get("waiting_ranks") != [0, 1, 2]:
            return False
    return True


def wait_until_hang_seen(procs, files):
    """SIGUSR2 to every recorder (each writes its chunks and the calls in
    flight, then says so), then the analyzer on the files, until it names
    the hang."""
    deadline = time.monotonic() + HANG_SEEN_TIMEOUT_S
    while True:
        for _, p, lines in procs:
            before = lines.count("SIGUSR2: ")
            p.send_signal(signal.SIGUSR2)
            while lines.count("SIGUSR2: ") == before:
                if time.monotonic() > deadline or p.poll() is not None:
                    raise AssertionError("a recorder did not write on SIGUSR2:\n" + lines.text())
                time.sleep(0.05)
        if names_hang(files):
            return
        if time.monotonic() > deadline:
            raise AssertionError("the recordings never showed the hang:\n" +
                                 frtest.analyze("stragglers", "--json", *files,
                                                check=False).stdout)


def record_hang(d, wait, asynchronous):
    """Records the hung job into nodeA.frec and nodeB.frec; returns their paths."""
    port = free_port()
    train = [frtest.sample("nccl_train"), "--steps", "10", "--compute-ms", "20",
             "--wait", wait, "--hang-rank", "3", "--hang-at", str(HANG_AT)]
    env = dict(os.environ, FLIGHTREC_FAKE_NCCL_TIMEOUT_S="60")
    env.pop("FLIGHTREC_FAKE_NCCL_ASYNC", None)
    if asynchronous:
        env["FLIGHTREC_FAKE_NCCL_ASYNC"] = "1"
    procs = []
    files = [os.path.join(d, "nodeA.frec"), os.path.join(d, "nodeB.frec")]
    for name, first, local in (("nodeA", 0, 3), ("nodeB", 3, 1)):
        cmd = [frtest.FLIGHTREC, "record", "-o", os.path.join(d, name + ".frec"),
               "--probes", "nccl,cuda", "--",
               frtest.sample("launch_ranks"), "--ranks", "4", "--first-rank", str(first),
               "--local-ranks", str(local), "--master", f"127.0.0.1:{port}", "--"] + train
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             env=env)
        procs.append((cmd, p, Lines(p.stderr)))
    try:
        a, b = procs[0][2], procs[1][2]
        deadline = time.monotonic() + START_TIMEOUT_S
        while a.count(f"waiting in collective {HANG_AT}") < 3 or \
                b.count(f"hanging before collective {HANG_AT}") < 1:
            if time.monotonic() > deadline or any(p.poll() is not None for _, p, _ in procs):
                raise AssertionError("the job never hung as planned:\n" +
                                     "\n".join(lines.text() for _, _, lines in procs))
            time.sleep(0.05)
        wait_until_hang_seen(procs, files)
        # One node after the other, the waiting ranks' first: a recorder
        # stopped with SIGINT passes it on to its job, and the culprit's
        # death would end the others' wait (its peers see the connection
        # close) before their recorder has looked.
        for cmd, p, lines in procs:
            p.send_signal(signal.SIGINT)
            p.wait(timeout=120)
            lines.thread.join(timeout=10)
            # the job's status is the job's (killed): the file must be whole
            if "wrote " not in lines.text():
                raise AssertionError(f"{' '.join(cmd)} wrote no trace:\n{lines.text()}")
    finally:
        for _, p, lines in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            lines.thread.join(timeout=10)
            p.stderr.close()
    for f in files:
        frtest.analyze("check", f)
    return files


class Hang(frtest.Case):
    def check_hang(self, files, how):
        result = json.loads(frtest.analyze("stragglers", "--json", *files).stdout)
        hang = result["hang"]
        self.assertIsNotNone(hang, result.get("no_hang_reason"))
        self.assertEqual(hang["op"], "AllReduce", hang)
        self.assertEqual(hang["seq"], HANG_AT, hang)
        self.assertEqual(hang["waiting_ranks"], [0, 1, 2], hang)
        self.assertEqual(hang["missing_ranks"], [3], hang)
        self.assertGreater(hang["waiting_s"], 0, hang)
        self.assertEqual(hang["comm_nranks"], 4, hang)
        self.assertEqual(sorted({w["how"] for w in hang["waiting"]}), [how], hang)
        return result

    def run_mode(self, name, wait, asynchronous, how):
        files = record_hang(frtest.workdir("hang_" + name), wait, asynchronous)
        self.check_hang(files, how)
        # the culprit's node holds nothing in flight; without its trace
        # the missing rank is the one no trace shows
        self.check_hang(files[:1], how)
        text = frtest.analyze("stragglers", *files).stdout
        self.assertIn(f"hang: AllReduce #{HANG_AT} never completed: ranks 0,1,2 waited", text)
        self.assertIn("; rank 3 never entered it\n", text)

    def test_blocking(self):
        self.run_mode("blocking", "none", False, "in_call")

    def test_async_sync(self):
        self.run_mode("sync", "stream", True, "synchronize")

    def test_async_poll(self):
        self.run_mode("poll", "query", True, "event_poll")


if __name__ == "__main__":
    frtest.main()
