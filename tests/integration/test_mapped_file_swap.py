"""A traced process must not be able to point the recorder (root) at a file
it cannot read (issue 16).  The job, running as nobody, maps its own
library, deletes it, and puts a symbolic link where /proc/PID/maps now names
the mapping ("lib.so (deleted)") pointing at a root-only library.  The
recorder, attached with --pid, writes the symbols of every mapped file into
the trace (dwarf mode), and the trace belongs to the user: it must hold the
symbols of the library the job mapped, never those of the link's target.
Before, the recorder opened the name through /proc/PID/root, followed the
link, and copied the root-only library's symbols into the trace."""
import os
import shutil
import subprocess
import sys
import time
import frtest

NOBODY = 65534

JOB = r"""
import mmap, os, sys, time
lib, secret = sys.argv[1], sys.argv[2]
fd = os.open(lib, os.O_RDONLY)
m = mmap.mmap(fd, 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_EXEC)
os.unlink(lib)
os.symlink(secret, lib + " (deleted)")
print("ready", flush=True)
time.sleep(60)
"""


def compile_lib(d, name, function):
    src = os.path.join(d, name + ".c")
    with open(src, "w") as f:
        f.write(f"int {function}(int x) {{ return x * 3 + 1; }}\n")
    out = os.path.join(d, name + ".so")
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", out, src], check=True)
    return out


class MappedFileSwap(frtest.Case):
    def test_link_after_mapping(self):
        if shutil.which(os.environ.get("CC", "cc")) is None:
            self.skipTest("no C compiler to build the two libraries")
        d = frtest.workdir("mapped_file_swap")
        job_dir = os.path.join(d, "job")
        secret_dir = os.path.join(d, "secret")
        os.makedirs(job_dir)
        os.makedirs(secret_dir)
        lib = compile_lib(job_dir, "libmapped", "mapped_lib_marker_fn")
        secret = compile_lib(secret_dir, "libsecret", "secret_lib_marker_fn")
        os.chmod(secret, 0o600)
        os.chmod(secret_dir, 0o700)
        os.chown(job_dir, NOBODY, NOBODY)
        os.chown(lib, NOBODY, NOBODY)

        def as_nobody():
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)

        # the system's interpreter: one under /root would be out of nobody's reach
        python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
        job = subprocess.Popen([python, "-c", JOB, lib, secret], stdout=subprocess.PIPE,
                               text=True, preexec_fn=as_nobody, cwd="/")
        try:
            self.assertEqual(job.stdout.readline().strip(), "ready")
            with open(f"/proc/{job.pid}/maps") as f:
                self.assertIn(lib + " (deleted)", f.read())
            # the link is there and leads to the secret, which nobody cannot read
            self.assertEqual(os.readlink(lib + " (deleted)"), secret)
            trace = os.path.join(d, "swap.frec")
            # uncompressed, so the symbol names can be looked for in the bytes
            frtest.record(trace, ["--probes", "cpu", "--codec", "none", "--duration", "1"],
                          ["--pid", str(job.pid)])
        finally:
            job.kill()
            job.wait()
        with open(trace, "rb") as f:
            data = f.read()
        # (assertTrue, not assertIn: a failure must not print the trace)
        self.assertTrue((lib + " (deleted)").encode() in data, "the mapping was not recorded")
        self.assertFalse(b"secret_lib_marker_fn" in data,
                         "the recorder followed the job's link to a file the job cannot read")
        # the recorder is root: /proc/PID/map_files gives it the mapped file itself
        self.assertTrue(b"mapped_lib_marker_fn" in data, "the mapped library's symbols are missing")


if __name__ == "__main__":
    frtest.main()
