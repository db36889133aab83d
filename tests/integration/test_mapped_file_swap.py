"""A traced process must not be able to point the recorder (root) at a file
it cannot read (issue 16).  The job, running as nobody, maps its own
library, deletes it, and puts a symbolic link where /proc/PID/maps now names
the mapping ("lib.so (deleted)") pointing at a root-only library.  The
recorder, attached with --pid, writes the symbols of every mapped file into
the trace (dwarf mode), and the trace belongs to the user: it must hold the
symbols of the library the job mapped, never those of the link's target.
Before, the recorder opened the name through /proc/PID/root, followed the
link, and copied the root-only library's symbols into the trace.

The same swap must not choose where uprobes go (they are per file: probes
put on the link's target would fire in every process that runs it, and the
job's own library would go unseen) nor which file the CPython facts are
read from: the job's calls into the library it mapped are the ones counted,
and the interpreter version is the mapped libpython's."""
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


def as_nobody():
    """preexec_fn of the job: it runs as nobody, without root's groups."""
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


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


# Maps LIB (dlopen), swaps its name for a link to TARGET as above, says
# "ready", waits for a line on stdin, calls LIB's cudaMalloc CALLS times.
SWAP_JOB = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	char link[4200], line[16];
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) { fprintf(stderr, "%s\n", dlerror()); return 2; }
	int (*alloc)(void **, size_t) = (int (*)(void **, size_t))dlsym(h, "cudaMalloc");
	snprintf(link, sizeof(link), "%s (deleted)", argv[1]);
	if (unlink(argv[1]) || symlink(argv[2], link)) { perror("swap"); return 2; }
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 3;
	for (int i = 0; alloc && i < atoi(argv[3]); i++) {
		void *p;
		alloc(&p, 4096);
	}
	printf("done\n");
	fflush(stdout);
	return 0;
}
"""


def compile_src(d, name, source, shared):
    src = os.path.join(d, name + ".c")
    with open(src, "w") as f:
        f.write(source)
    out = os.path.join(d, name + (".so" if shared else ""))
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-O1", "-o", out, src] + (["-shared", "-fPIC"] if shared else []),
                   check=True)
    return out


class SwappedAttachTarget(frtest.Case):
    """A job swaps the name of a library it mapped for a link to another file
    before the recorder attaches (--pid): the probes and the CPython facts
    must come from the mapped file, whatever the name leads to."""

    def setUp(self):
        if shutil.which(os.environ.get("CC", "cc")) is None:
            self.skipTest("no C compiler to build the libraries")

    def run_swap(self, name, mapped_src, lib_name, other_src, probes, calls):
        """Returns (trace, recorder's stderr, job's stdout)."""
        d = frtest.workdir(name)
        job_dir, other_dir = os.path.join(d, "job"), os.path.join(d, "other")
        os.makedirs(job_dir)
        os.makedirs(other_dir)
        os.chmod(d, 0o755)
        job_bin = compile_src(d, "swapjob", SWAP_JOB, False)
        lib = compile_src(job_dir, lib_name, mapped_src, True)
        other = compile_src(other_dir, "libother", other_src, True)
        os.chown(job_dir, NOBODY, NOBODY)
        os.chown(lib, NOBODY, NOBODY)

        job = subprocess.Popen([job_bin, lib, other, str(calls)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, preexec_fn=as_nobody,
                               cwd="/")
        trace = os.path.join(d, "swap.frec")
        rec = None
        try:
            self.assertEqual(job.stdout.readline().strip(), "ready")
            self.assertEqual(os.readlink(lib + " (deleted)"), other)
            rec = subprocess.Popen([frtest.FLIGHTREC, "record", "-o", trace, "--probes", probes,
                                    "--pid", str(job.pid)], stderr=subprocess.PIPE, text=True)
            # a running process's mappings are read (and attached to)
            # before the recorder says it records; the job calls only then
            err = []
            for line in rec.stderr:
                err.append(line)
                if line.startswith("flightrec: recording"):
                    break
            job.stdin.write("go\n")
            job.stdin.flush()
            out = job.stdout.read()
            job.wait(timeout=60)
            err.append(rec.stderr.read())
            rec.wait(timeout=60)  # stops when its target exits
        finally:
            if job.poll() is None:
                job.kill()
            if rec and rec.poll() is None:
                rec.kill()
            for pipe in (job.stdin, job.stdout, rec.stderr if rec else None):
                if pipe:
                    pipe.close()
            job.wait()
            if rec:
                rec.wait()
        self.assertEqual(rec.returncode, 0, "".join(err))
        return trace, "".join(err), out

    def test_uprobes_go_to_the_mapped_file(self):
        fake_cuda = ("int cudaMalloc(void **p, unsigned long n) { *p = (void *)n; return %d; }\n"
                     "int cudaFree(void *p) { return p == 0; }\n")
        trace, err, out = self.run_swap("swap_uprobe", fake_cuda % 0, "libjobcuda",
                                         fake_cuda % 7, "cuda", 5)
        self.assertIn("done", out)
        self.assertRegex(err, r"cuda: attached \d+ functions in .*libjobcuda\.so \(deleted\)")
        mallocs = [e for e in frtest.dump(trace, "--type", "cuda") if e["name"] == "cudaMalloc"]
        # probes on the link's target would count none of these
        self.assertEqual(len(mallocs), 5, err)

    def test_python_facts_from_the_mapped_file(self):
        # the version is read from Py_Version: 3.12 in the mapped file, 3.10
        # in the one the link names (both are named libpython3.12 by the job)
        fake_py = ("const unsigned int Py_Version = 0x%x;\n"
                   "char _PyRuntime[256] = {1};\n")
        trace, err, out = self.run_swap("swap_python", fake_py % 0x030C00F0,
                                         "libpython3.12.so.1.0", fake_py % 0x030A00F0, "cpu", 0)
        self.assertIn("walking CPython 3.12 frames of pid", err)
        self.assertNotIn("CPython 3.10", err)


if __name__ == "__main__":
    frtest.main()
