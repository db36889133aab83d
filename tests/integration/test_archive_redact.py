"""`archive --redact` of a real recording: a job whose environment, user
name, paths and arguments hold known secrets is recorded with real probes
(dwarf stacks, so raw user stacks are in the file too), the secrets are
shown to be in the trace, and after `archive --redact` none of them is anywhere in the
archive: not in its raw bytes, not in the decompressed tar, not in any
member's raw bytes nor in any of its chunks once decompressed.  The host is
a token, and the redacted copy answers as the trace does.  `mcp --redact`
serves the same: no secret in any answer of any tool on the trace or on an
archive of it that was not redacted, while the same calls without
--redact show them; a trace is named as the client named it, and one host
token serves the whole session."""
import io
import json
import os
import shutil
import struct
import subprocess
import tarfile
import zlib
import frtest

USER = "alice-s3cr3t-user"          # in the job's path (/home/USER/...) and $USER
PROJECT = "project-hunter7"         # in the job's path
RUN_ID = "run-Zq8vW3xT9-do-not-leak"  # TORCHELASTIC_RUN_ID: an environment value kept
MASTER = "master-hunter-node9"      # MASTER_ADDR: a host
ARG = "arg-S3cret-t0ken"            # an argument of the job's command line
# recorded for certain (the recorder keeps launcher variables only)
SECRETS = sorted([USER, PROJECT, RUN_ID, MASTER, ARG])
# in the raw user stacks only if a copy reaches the environment: never in
# the archive, whether or not it was in the trace
API_KEY = "key-Vb7Lp2Qw-never-recorded-by-name"
ALL = SECRETS + [API_KEY]


def zstd_decompress(data):
    p = subprocess.run(["zstd", "-dc"], input=data, capture_output=True)
    if p.returncode != 0:
        raise AssertionError(f"zstd -dc failed: {p.stderr!r}")
    return p.stdout


def chunk_payloads(trace_bytes, what):
    """Every chunk's payload, decompressed (format/SPEC.md §4)."""
    header_size = struct.unpack_from("<I", trace_bytes, 12)[0]
    off, out = header_size, []
    while off + 64 <= len(trace_bytes):
        magic, _, codec = struct.unpack_from("<IHB", trace_bytes, off)
        if magic != 0x4B435246:
            raise AssertionError(f"{what}: no chunk at offset {off}")
        raw_len, stored_len = struct.unpack_from("<II", trace_bytes, off + 16)
        stored = trace_bytes[off + 64:off + 64 + stored_len]
        if codec == 0:
            payload = stored
        elif codec == 1:
            payload = zstd_decompress(stored)
        elif codec == 2:
            payload = zlib.decompress(stored)
        else:
            raise AssertionError(f"{what}: chunk at {off}: codec {codec}")
        if len(payload) != raw_len:
            raise AssertionError(f"{what}: chunk at {off}: {len(payload)} != raw_len {raw_len}")
        out.append(payload)
        off += 64 + (stored_len + 7) // 8 * 8
    return out


def found(blob, secrets=ALL):
    return [s for s in secrets if s.encode() in blob]


def found_in_trace(trace_bytes, what):
    """Secrets in a trace's raw bytes or in any of its decompressed chunks."""
    hits = set(found(trace_bytes))
    for payload in chunk_payloads(trace_bytes, what):
        hits.update(found(payload))
    return sorted(hits)


class ArchiveRedact(frtest.Case):
    @classmethod
    def setUpClass(cls):
        cls.dir = frtest.workdir("archive_redact")
        home = os.path.join(cls.dir, "home", USER, PROJECT)
        os.makedirs(home)
        cls.job = os.path.join(home, "trainer")
        shutil.copy(frtest.sample("cpu_split"), cls.job)
        cls.trace = os.path.join(cls.dir, "run.frec")
        env = dict(os.environ, FR_TEST_API_KEY=API_KEY, USER=USER, HOME=os.path.join(
            cls.dir, "home", USER), PWD=home, TORCHELASTIC_RUN_ID=RUN_ID, MASTER_ADDR=MASTER)
        # cpu_split reads its first argument only
        cmd = [frtest.FLIGHTREC, "record", "-o", cls.trace, "--probes", "cpu,syscalls",
               "--stack", "dwarf", "--", cls.job, "1.5", ARG]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
        if p.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stderr}")
        cls.archive = os.path.join(cls.dir, "for-vendor.tar.zst")
        frtest.analyze("archive", cls.trace, "--redact", "-o", cls.archive, "--force")

    def test_secrets_reach_the_trace(self):
        """Not vacuous: every secret is in the recording itself."""
        with open(self.trace, "rb") as f:
            hits = found_in_trace(f.read(), self.trace)
        print(f"in the trace: {hits}")
        self.assertEqual([h for h in hits if h != API_KEY], SECRETS)

    def test_no_secret_in_the_archive(self):
        with open(self.archive, "rb") as f:
            raw = f.read()
        self.assertEqual(found(raw), [], "in the archive's raw bytes")
        tar = zstd_decompress(raw)
        self.assertEqual(found(tar), [], "in the decompressed tar")
        members = 0
        with tarfile.open(fileobj=io.BytesIO(tar)) as t:
            for m in t.getmembers():
                data = t.extractfile(m).read()
                self.assertEqual(found(m.name.encode()), [], m.name)
                if m.name.endswith(".frec"):
                    members += 1
                    self.assertEqual(found_in_trace(data, m.name), [], m.name)
                else:
                    self.assertEqual(found(data), [], m.name)
        self.assertEqual(members, 1)

    def test_redacted_copy_answers_the_same(self):
        info = json.loads(frtest.analyze("info", "--json", self.archive).stdout)["files"][0]
        orig = json.loads(frtest.analyze("info", "--json", self.trace).stdout)["files"][0]
        self.assertRegex(info["host"], r"^<h:[0-9a-f]+>$")
        self.assertNotEqual(info["host"], orig["host"])
        chk = frtest.analyze("check", self.archive)
        self.assertIn("intact", chk.stdout)
        # the same samples in the same functions (symbol names stay; the
        # job's own file name is a token in the copy)
        a, b = frtest.folded(self.trace), frtest.folded(self.archive)
        self.assertEqual(sum(a.values()), sum(b.values()))
        heavy = lambda st: sum(n for f, n in st.items() if "compute_heavy" in f)
        self.assertGreater(heavy(a), 0, a)
        self.assertEqual(heavy(a), heavy(b))


def mcp_session(root, calls, *flags):
    """The answers (one JSON text each) of an MCP server on root to calls,
    a list of (tool, arguments), after the handshake."""
    lines = [json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})]
    for i, (tool, args) in enumerate(calls, 1):
        lines.append(json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                 "params": {"name": tool, "arguments": args}}))
    p = subprocess.run([frtest.ANALYZE, "mcp", root, *flags], input="\n".join(lines) + "\n",
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise AssertionError(f"mcp exited {p.returncode}: {p.stderr}")
    answers = {}
    for line in p.stdout.splitlines():
        m = json.loads(line)
        if m.get("id"):
            answers[m["id"]] = line
    if sorted(answers) != list(range(1, len(calls) + 1)):
        raise AssertionError(f"answers for {sorted(answers)} of {len(calls)} calls: {p.stdout[:2000]}")
    return [answers[i] for i in range(1, len(calls) + 1)]


class McpRedact(frtest.Case):
    CALLS = [("open_traces", {"traces": ["run.frec"], "max_tokens": 8000}),
             ("get_summary", {"traces": ["run.frec"], "max_tokens": 8000}),
             ("hot_paths", {"traces": ["run.frec"], "kind": "cpu", "max_tokens": 8000}),
             ("query_events", {"traces": ["run.frec"], "max_tokens": 8000}),
             ("open_traces", {"traces": ["plain.tar.zst"], "max_tokens": 8000}),
             ("get_summary", {"traces": ["plain.tar.zst"], "max_tokens": 8000})]

    @classmethod
    def setUpClass(cls):
        ArchiveRedact.setUpClass.__func__(cls)
        # an archive that was not redacted: the server redacts its member
        frtest.analyze("archive", cls.trace, "-o", os.path.join(cls.dir, "plain.tar.zst"),
                       "--force")

    def test_without_redact_the_secrets_show(self):
        """Not vacuous: the same calls, served as they are, show secrets."""
        hits = set()
        for a in mcp_session(self.dir, self.CALLS):
            hits.update(found(a.encode()))
        print(f"served without --redact: {sorted(hits)}")
        # (the environment, MASTER_ADDR's host among it, is in no tool's answer)
        self.assertLessEqual({USER, PROJECT, ARG}, hits)

    def test_redact_serves_no_secret(self):
        answers = mcp_session(self.dir, self.CALLS, "--redact")
        for (tool, args), a in zip(self.CALLS, answers):
            self.assertEqual(found(a.encode()), [], f"{tool} {args}: {a[:3000]}")
            self.assertNotIn('"isError":true', a, f"{tool}: {a[:2000]}")
            self.assertNotIn("/proc/self/fd/", a, f"{tool}: a copy's path shows")
        files = [json.loads(a)["result"]["structuredContent"]["data"]["files"][0]
                 for a in (answers[0], answers[4])]
        self.assertEqual(files[0]["path"], "run.frec")
        self.assertEqual(files[1]["path"], "plain.tar.zst:run.frec")
        # one secret for the session: the same host token in both copies
        self.assertRegex(files[0]["host"], r"^<h:[0-9a-f]+>$")
        self.assertEqual(files[0]["host"], files[1]["host"])
        # the copies answer as the trace does: the same events
        plain = json.loads(mcp_session(self.dir, self.CALLS[:1])[0])
        self.assertEqual(plain["result"]["structuredContent"]["data"]["files"][0]["events"],
                         files[0]["events"])

    def test_redact_in_help(self):
        h = frtest.analyze("mcp", "--help").stdout
        self.assertIn("--redact", h)
        self.assertIn("Raw user stacks", h)


if __name__ == "__main__":
    frtest.main()
