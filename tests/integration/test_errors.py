"""Every failure before the recording starts is one clear line on stderr
and a non-zero exit, and nothing is left behind."""
import os
import subprocess
import frtest


class Errors(frtest.Case):
    def run_rec(self, *args, user=None):
        cmd = [frtest.FLIGHTREC, "record"] + list(args)
        if user:
            cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"] + cmd
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60)

    def assertOneLineError(self, p, needle):
        self.assertNotEqual(p.returncode, 0)
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn(needle, lines[0])
        self.assertTrue(lines[0].startswith("flightrec: "), lines[0])

    def test_not_root(self):
        d = frtest.workdir("errors_root")
        os.chmod(d, 0o777)
        p = self.run_rec("-o", os.path.join(d, "x.frec"), "--", "true", user="65534")
        self.assertOneLineError(p, "needs root")
        self.assertFalse(os.path.exists(os.path.join(d, "x.frec")))

    def test_unknown_pid(self):
        p = self.run_rec("-o", "/tmp/never.frec", "--pid", "4194300")
        self.assertOneLineError(p, "no process with pid 4194300")

    def test_unwritable_output(self):
        p = self.run_rec("-o", "/nonexistent-dir/x.frec", "--", "true")
        self.assertOneLineError(p, "/nonexistent-dir/x.frec")

    def test_not_a_cgroup(self):
        p = self.run_rec("-o", "/tmp/never.frec", "--cgroup", "/tmp")
        self.assertOneLineError(p, "not a cgroup v2 directory")

    def test_no_target(self):
        p = self.run_rec("-o", "/tmp/never.frec")
        self.assertOneLineError(p, "nothing to record")

    def test_command_not_found(self):
        # checked before anything is loaded: one line, a shell's status, no file
        d = frtest.workdir("errors_cmd")
        out = os.path.join(d, "x.frec")
        p = self.run_rec("-q", "-o", out, "--", "/nonexistent/program")
        self.assertEqual(p.returncode, 127, p.stderr)
        self.assertOneLineError(p, "cannot run /nonexistent/program: No such file or directory")
        p = self.run_rec("-q", "-o", out, "--", "no-such-command-on-path")
        self.assertEqual(p.returncode, 127, p.stderr)
        self.assertOneLineError(p, "cannot run no-such-command-on-path")
        p = self.run_rec("-q", "-o", out, "--", "/etc/passwd")
        self.assertEqual(p.returncode, 126, p.stderr)
        self.assertOneLineError(p, "cannot run /etc/passwd: Permission denied")
        self.assertFalse(os.path.exists(out))

    def test_output_safety(self):
        d = frtest.workdir("errors_output")
        precious = os.path.join(d, "notes.txt")
        with open(precious, "w") as f:
            f.write("precious\n")
        # never through a symbolic link, whatever it points at
        link = os.path.join(d, "link.frec")
        os.symlink(precious, link)
        p = self.run_rec("-q", "-o", link, "--", "true")
        self.assertEqual(p.returncode, 1)
        self.assertOneLineError(p, "is a symbolic link")
        # a file that is not a trace only with --force
        p = self.run_rec("-q", "-o", precious, "--", "true")
        self.assertEqual(p.returncode, 1)
        self.assertOneLineError(p, "exists and is not a flightrec trace; pass --force")
        with open(precious) as f:
            self.assertEqual(f.read(), "precious\n")
        p = self.run_rec("-q", "-o", os.path.join(d, "."), "--", "true")
        self.assertOneLineError(p, "is not a regular file")
        p = self.run_rec("-q", "--force", "-o", precious, "--", "true")
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(precious, "rb") as f:
            self.assertEqual(f.read(8), b"FLIGHTR\x01")
        # a trace is replaced without --force; run through sudo, it is the
        # user's, 0644 whatever the umask
        env = dict(os.environ, SUDO_UID="65534", SUDO_GID="65534")
        p = subprocess.run(["sh", "-c", 'umask 077; exec "$@"', "sh", frtest.FLIGHTREC, "record",
                            "-q", "-o", precious, "--", "true"],
                           capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        st = os.stat(precious)
        self.assertEqual((st.st_uid, st.st_gid, st.st_mode & 0o777), (65534, 65534, 0o644))

    def test_analyzer_suggests_a_command(self):
        for typo, meant in (("flam", "flame"), ("memroy", "memory"), ("straggler", "stragglers")):
            p = frtest.analyze(typo, check=False)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
            self.assertIn(f"unknown command '{typo}'; did you mean '{meant}'?", p.stderr)
        p = frtest.analyze("xyzzy", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertNotIn("did you mean", p.stderr)

    def test_exit_status_is_the_commands(self):
        d = frtest.workdir("errors_status")
        p = self.run_rec("-q", "-o", os.path.join(d, "x.frec"), "--", "sh", "-c", "exit 7")
        self.assertEqual(p.returncode, 7, p.stderr)


if __name__ == "__main__":
    frtest.main()
