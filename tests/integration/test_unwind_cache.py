"""Dwarf mode's build-id cache (recorder/symbols/unwind_cache.c) on real recordings:
the same program recorded with an empty cache, with a full one and without
one gives byte-identical FR_REC_DSO and FR_REC_UNWIND records and the same
stacks from the analyzer; a damaged entry and a symbolic link planted as an
entry are refused and rewritten; a file without a build-id is read, never
cached.  Traces are written with --codec none so the records are read here
directly (format/SPEC.md sections 2-5)."""
import os
import re
import shutil
import stat
import struct
import subprocess
import frtest

FR_CHUNK_MAGIC = 0x4B435246
FR_REC_DSO = 0x103
FR_REC_UNWIND = 0x10C
CHAIN = ["main", "level_one", "level_two", "level_three", "burn_cpu"]
CACHE_LINE = re.compile(r"build-id cache (.*): (\d+) of (\d+) files from it, (\d+) read and added"
                        r"(?:, (\d+) damaged or stale entries replaced)?"
                        r"(?:, (\d+) without a build-id)?")


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def file_records(trace):
    """Every ELF file's FR_REC_DSO (kind 0) and FR_REC_UNWIND record, as
    {(type, path or build-id): bytes with dso_id zeroed} (the id is the
    recording's own numbering), from an uncompressed trace."""
    data = read_bytes(trace)
    (header_size,) = struct.unpack_from("<I", data, 12)
    at, out, paths = header_size, {}, {}
    while at + 64 <= len(data):
        magic, _ctype, codec = struct.unpack_from("<IHB", data, at)
        if magic != FR_CHUNK_MAGIC:
            raise AssertionError(f"{trace}: no chunk at {at}")
        raw_len, stored_len = struct.unpack_from("<II", data, at + 16)
        payload = data[at + 64:at + 64 + stored_len]
        if codec == 0 and raw_len == stored_len:
            r = 0
            while r + 8 <= len(payload):
                size, rtype = struct.unpack_from("<IH", payload, r)
                if size < 8:
                    break
                rec = bytearray(payload[r:r + size])
                if rtype == FR_REC_DSO and rec[22] == 0:
                    path_len = struct.unpack_from("<H", rec, 20)[0]
                    dso_id = struct.unpack_from("<I", rec, 8)[0]
                    path = bytes(rec[48:48 + path_len]).decode()
                    paths[dso_id] = path
                    rec[8:12] = b"\0\0\0\0"
                    out[("dso", path)] = bytes(rec)
                elif rtype == FR_REC_UNWIND:
                    dso_id = struct.unpack_from("<I", rec, 8)[0]
                    rec[8:12] = b"\0\0\0\0"
                    out[("unwind", dso_id)] = bytes(rec)
                r += size
        at += 64 + ((stored_len + 7) & ~7)
    # unwind records named by their file's path, like the DSO records
    return {(k[0], paths.get(k[1], k[1]) if k[0] == "unwind" else k[1]): v
            for k, v in out.items()}


def cache_stats(stderr):
    m = CACHE_LINE.search(stderr)
    if not m:
        raise AssertionError("no build-id cache line in:\n" + stderr)
    g = [int(x) if x else 0 for x in m.groups()[1:]]
    return {"dir": m.group(1), "hits": g[0], "files": g[1], "added": g[2],
            "rejected": g[3], "no_build_id": g[4]}


def burn_stacks(trace):
    return {f: n for f, n in frtest.folded(trace).items() if "burn_cpu" in f}


def full_chain_share(stacks):
    full = sum(n for f, n in stacks.items() if [x for x in f if x in CHAIN] == CHAIN)
    return full / max(1, sum(stacks.values()))


class UnwindCache(frtest.Case):
    @classmethod
    def setUpClass(cls):
        cls.dir = frtest.workdir("unwind_cache")
        cls.cache = os.path.join(cls.dir, "cache")
        cls.prog = os.path.join(cls.dir, "deep_chain")
        shutil.copy(frtest.sample("deep_chain"), cls.prog)
        cls.runs = {}
        for name, extra in (("cold", ["--cache-dir", cls.cache]),
                            ("warm", ["--cache-dir", cls.cache]),
                            ("none", ["--no-cache"])):
            trace = os.path.join(cls.dir, name + ".frec")
            p = frtest.record(trace, ["--probes", "cpu", "--stack", "dwarf", "--codec", "none"]
                              + extra, ["--", cls.prog, "1.0"])
            cls.runs[name] = (trace, p.stderr)

    def record(self, name, extra=(), prog=None):
        trace = os.path.join(self.dir, name + ".frec")
        p = frtest.record(trace, ["--probes", "cpu", "--stack", "dwarf", "--codec", "none",
                                  "--cache-dir", self.cache] + list(extra),
                          ["--", prog or self.prog, "0.5"])
        return trace, p.stderr

    def entries(self):
        return sorted(n for n in os.listdir(self.cache) if n.endswith(".unwind"))

    def test_cold_then_warm(self):
        cold = cache_stats(self.runs["cold"][1])
        warm = cache_stats(self.runs["warm"][1])
        self.assertEqual(cold["dir"], self.cache)
        self.assertGreaterEqual(cold["files"], 3, self.runs["cold"][1])  # program, ld.so, libc
        self.assertEqual(cold["hits"], 0)
        self.assertEqual(cold["added"], cold["files"] - cold["no_build_id"])
        self.assertEqual(warm["hits"], cold["added"], self.runs["warm"][1])
        self.assertEqual(warm["added"], 0)
        self.assertIn("build-id cache off", self.runs["none"][1])
        st = os.stat(self.cache)
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o700)
        for name in self.entries():
            st = os.lstat(os.path.join(self.cache, name))
            self.assertTrue(stat.S_ISREG(st.st_mode))
            self.assertEqual(stat.S_IMODE(st.st_mode), 0o600)

    def test_records_identical(self):
        recs = {name: file_records(trace) for name, (trace, _) in self.runs.items()}
        self.assertTrue(any(k[0] == "unwind" and k[1] == self.prog for k in recs["cold"]),
                        sorted(recs["cold"]))
        self.assertTrue(any(k[0] == "dso" and k[1] == self.prog for k in recs["cold"]))
        for name in ("warm", "none"):
            self.assertEqual(sorted(recs[name]), sorted(recs["cold"]), name)
            for key, rec in recs["cold"].items():
                self.assertEqual(recs[name][key], rec, f"{name}: {key} differs")

    def test_stacks_agree(self):
        # the same records unwind the same way: whole chains from every trace
        frames = {}
        for name, (trace, _) in self.runs.items():
            stacks = burn_stacks(trace)
            self.assertGreater(sum(stacks.values()), 30, (name, stacks))
            self.assertGreaterEqual(full_chain_share(stacks), 0.9, (name, stacks))
            frames[name] = {f for stack in stacks for f in stack}
        self.assertEqual(frames["warm"] & set(CHAIN), frames["cold"] & set(CHAIN))

    def test_damaged_and_linked_entries_are_rewritten(self):
        names = self.entries()
        self.assertTrue(names)
        damaged = os.path.join(self.cache, names[0])
        with open(damaged, "r+b") as f:
            f.seek(os.path.getsize(damaged) // 2)
            byte = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([byte[0] ^ 0xFF]))
        linked = os.path.join(self.cache, names[-1])
        outside = os.path.join(self.dir, "outside")
        shutil.move(linked, outside)
        os.symlink(outside, linked)
        before = read_bytes(outside)
        trace, stderr = self.record("repaired")
        s = cache_stats(stderr)
        self.assertEqual(s["rejected"], 2 if len(names) > 1 else 1, stderr)
        self.assertEqual(s["added"], s["rejected"], stderr)
        self.assertEqual(read_bytes(outside), before)  # never written through
        self.assertTrue(stat.S_ISREG(os.lstat(linked).st_mode))
        ref = file_records(self.runs["none"][0])
        got = file_records(trace)
        for key, rec in ref.items():
            self.assertEqual(got.get(key), rec, key)
        _, stderr = self.record("after_repair")
        s = cache_stats(stderr)
        self.assertEqual((s["rejected"], s["added"]), (0, 0), stderr)

    def test_file_without_build_id_is_not_cached(self):
        if not shutil.which("objcopy"):
            self.skipTest("objcopy (binutils) not installed")
        prog = os.path.join(self.dir, "deep_chain_no_id")
        subprocess.run(["objcopy", "--remove-section", ".note.gnu.build-id", self.prog, prog],
                       check=True)
        os.chmod(prog, 0o755)
        before = self.entries()
        trace, stderr = self.record("no_build_id", prog=prog)
        s = cache_stats(stderr)
        self.assertEqual(s["no_build_id"], 1, stderr)
        self.assertEqual(self.entries(), before)
        # read from the file all the same: its symbols and unwind data are there
        recs = file_records(trace)
        self.assertIn(("dso", prog), recs)
        self.assertIn(("unwind", prog), recs)
        self.assertGreaterEqual(full_chain_share(burn_stacks(trace)), 0.9)

    def test_debug_file_installed_later_makes_the_entry_stale(self):
        # a stripped program of its own build-id (no other program shares its
        # debug file), its symbols in a separate debug file installed under
        # /usr/lib/debug only for the middle recordings
        cc, objcopy = shutil.which("cc") or shutil.which("gcc"), shutil.which("objcopy")
        if not cc or not objcopy:
            self.skipTest("cc or objcopy (binutils) not installed")
        bid = os.urandom(20).hex()
        src = os.path.join(self.dir, "dbg_target.c")
        with open(src, "w") as f:
            f.write(DBG_TARGET)
        full, prog = os.path.join(self.dir, "dbg_full"), os.path.join(self.dir, "dbg_target")
        dbg = os.path.join(self.dir, "dbg_target.debug")
        subprocess.run([cc, "-O1", "-g", "-o", full, src, f"-Wl,--build-id=0x{bid}"], check=True)
        subprocess.run([objcopy, "--only-keep-debug", full, dbg], check=True)
        subprocess.run([objcopy, "--strip-all", full, prog], check=True)
        installed = os.path.join("/usr/lib/debug/.build-id", bid[:2], bid[2:] + ".debug")

        def run(name):
            trace, stderr = self.record(name, prog=prog)
            names = {f for stack in frtest.folded(trace) for f in stack}
            return cache_stats(stderr), "spin_here" in names, trace

        s, named, _ = run("dbg_before")
        self.assertFalse(named)  # stripped, no debug file: no name
        os.makedirs(os.path.dirname(installed), exist_ok=True)
        shutil.copy(dbg, installed)
        try:
            s, named, trace = run("dbg_installed")
            self.assertEqual(s["rejected"], 1, s)  # the entry made without it
            self.assertTrue(named)
            s, named, warm = run("dbg_installed_again")
            self.assertEqual((s["rejected"], s["added"]), (0, 0), s)
            self.assertTrue(named)
            self.assertEqual(file_records(warm)[("dso", prog)], file_records(trace)[("dso", prog)])
        finally:
            os.unlink(installed)
            try:
                os.rmdir(os.path.dirname(installed))
            except OSError:
                pass
        s, named, _ = run("dbg_removed")
        self.assertEqual(s["rejected"], 1, s)
        self.assertFalse(named)


DBG_TARGET = r"""
#include <stdlib.h>
#include <time.h>
static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}
__attribute__((noinline)) static double spin_here(double seconds)
{
	double end = now() + seconds, x = 0;
	while (now() < end)
		for (int i = 0; i < 10000; i++)
			x += i * 0.5;
	return x;
}
int main(int argc, char **argv)
{
	return spin_here(argc > 1 ? atof(argv[1]) : 0.5) < 0;
}
"""

if __name__ == "__main__":
    frtest.main()
