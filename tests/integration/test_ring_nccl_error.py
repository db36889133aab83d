"""Flight-recorder mode's nccl-error trigger end to end: a two-rank
nccl_train job whose rank 0 gets ncclSystemError from its 5th collective
(the NCCL stand-in's FLIGHTREC_FAKE_NCCL_FAIL_AT) is recorded with
`--ring --trigger nccl-error`; one snapshot is written, named by the trigger,
whose detail names the failing call, its error and rank 0's pid, and which
holds rank 0's five all-reduces, the last one failed."""
import json
import os
import re
import subprocess
import frtest
from test_stragglers import free_port

FAIL_AT = 5


class RingNcclError(frtest.Case):
    def test_nccl_error_snapshot(self):
        d = frtest.workdir("ring_nccl_error")
        out = os.path.join(d, "job.frec")
        # the other rank then waits for a peer that has gone: bounded
        env = dict(os.environ, FLIGHTREC_FAKE_NCCL_FAIL_AT=str(FAIL_AT),
                   FLIGHTREC_FAKE_NCCL_TIMEOUT_S="10")
        cmd = [frtest.FLIGHTREC, "record", "-o", out, "--ring", "8M", "--trigger", "nccl-error",
               "--probes", "nccl,cuda", "--", frtest.sample("launch_ranks"), "--ranks", "2",
               "--first-rank", "0", "--local-ranks", "2", "--master",
               f"127.0.0.1:{free_port()}", "--", frtest.sample("nccl_train"), "--steps", "20",
               "--compute-ms", "5"]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        text = p.stdout + p.stderr
        self.assertNotEqual(p.returncode, 0, text)  # rank 0 failed: the job did
        self.assertIn(f"nccl_train: rank 0: ncclAllReduce at step {FAIL_AT - 1}", text)
        m = re.search(r"fake-nccl: pid (\d+) rank 0/2: AllReduce: collective "
                      rf"{FAIL_AT} fails", text)
        self.assertIsNotNone(m, text)
        pid = int(m.group(1))

        snap = os.path.join(d, "job-1.frec")
        self.assertIn(f"flightrec: snapshot {snap} (nccl-error at ", p.stderr)
        self.assertEqual(sorted(os.listdir(d)), ["job-1.frec"])
        self.assertIn("intact", frtest.analyze("check", snap).stdout)
        s = json.loads(frtest.analyze("info", "--json", snap).stdout)["files"][0]["snapshot"]
        self.assertEqual((s["number"], s["trigger"], s["pid"]), (1, "nccl-error", pid), s)
        # the first trigger's detail; rank 1's ncclRemoteError (its peer
        # gone) may come while the snapshot is pending, and is merged
        self.assertRegex(s["detail"], rf"^ncclAllReduce returned error 2 in pid {pid}, "
                         rf"thread {pid}( \(and more triggers while it was pending\))?$")
        results = [e["result"] for e in frtest.dump(snap, "--type", "nccl", "--no-stacks")
                   if e["pid"] == pid and e["name"] == "ncclAllReduce"]
        self.assertEqual(results, [0] * (FAIL_AT - 1) + [2])


if __name__ == "__main__":
    frtest.main()
