"""`--version` of both programs says what the build says: the project
version from CMakeLists.txt's project() line (through
common/flightrec_version.h.in), and for the analyzer the trace format
version it reads (format/frec_format.h), and no hard-coded copy."""
import os
import re
import subprocess

import frtest

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def read(path):
    with open(os.path.join(TOP, path)) as f:
        return f.read()


class Version(frtest.Case):
    def setUp(self):
        self.project = re.search(r"project\(flightrec VERSION (\S+)", read("CMakeLists.txt")).group(1)
        fmt = read("format/frec_format.h")
        self.format = "%s.%s" % (re.search(r"#define FR_VERSION_MAJOR (\d+)", fmt).group(1),
                                 re.search(r"#define FR_VERSION_MINOR (\d+)", fmt).group(1))

    def test_recorder(self):
        p = subprocess.run([frtest.FLIGHTREC, "--version"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, f"flightrec {self.project}\n")

    def test_analyzer(self):
        p = frtest.analyze("--version")
        self.assertEqual(p.stdout, f"flightrec-analyze {self.project} (trace format {self.format})\n")


if __name__ == "__main__":
    frtest.main()
