#!/usr/bin/env python3
"""bench/micro/ncu_wrap.sh writes the ncu that bench/gpu_diag.sh hands kevo as
KEVO_NCU. kevo starts ncu with the runner's environment only, so the wrapper
must carry everything it needs in itself: run here under `env -i` with a
stand-in ncu, it profiles the job kevo names into the report it was given,
then runs ncu exactly as kevo asked, and passes `ncu --import` straight
through with its exit status."""
import os
import subprocess
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
WRAP = os.path.join(ROOT, "bench", "micro", "ncu_wrap.sh")
SEP = "\x1f"


class NcuWrap(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.calls = os.path.join(self.dir, "calls")
        # The stand-in ncu: one line per call, its arguments joined by SEP;
        # --import exits 3, so the wrapper's exit status can be checked.
        self.ncu = os.path.join(self.dir, "fake ncu")
        with open(self.ncu, "w", encoding="utf-8") as f:
            f.write("#!/bin/sh\n"
                    f"(IFS='{SEP}'; printf '%s\\n' \"$*\") >> '{self.calls}'\n"
                    "[ \"$1\" = --import ] && exit 3\n"
                    "exit 0\n")
        os.chmod(self.ncu, 0o755)
        self.wrapper = os.path.join(self.dir, "ncu-wrap")
        self.report = os.path.join(self.dir, "kevo-gemm it's")  # a space and a quote

    def tearDown(self):
        self.tmp.cleanup()

    def write_wrapper(self, *extra):
        r = subprocess.run([WRAPPER_SHELL, WRAP, self.wrapper, self.ncu, self.report, *extra],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)

    def call(self, *args):
        return subprocess.run(["env", "-i", self.wrapper, *args], capture_output=True, text=True,
                              timeout=30)

    def recorded(self):
        with open(self.calls, encoding="utf-8") as f:
            return [line.rstrip("\n").split(SEP) for line in f]

    def test_profiles_kevos_job_then_runs_ncu_as_asked(self):
        self.write_wrapper("--clock-control", "none", "--section", "SpeedOfLight")
        kevo = ["--clock-control", "none", "--metrics", "a,b", "-f", "-o", "/x/profile",
                "/opt/kevo-cuda-runner", "--device", "1", "--profile", "/x/job.json"]
        r = self.call(*kevo)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.recorded(), [
            ["--clock-control", "none", "--section", "SpeedOfLight", "-f", "-o", self.report,
             "/opt/kevo-cuda-runner", "--device", "1", "--profile", "/x/job.json"],
            kevo])
        self.assertTrue(os.path.exists(self.report + ".log"))

    def test_import_passes_straight_through_with_its_status(self):
        self.write_wrapper("--section", "SpeedOfLight")
        r = self.call("--import", "/x/profile.ncu-rep", "--csv")
        self.assertEqual(r.returncode, 3)
        self.assertEqual(self.recorded(), [["--import", "/x/profile.ncu-rep", "--csv"]])

    def test_a_call_not_shaped_like_kevos_is_only_passed_on(self):
        self.write_wrapper("--section", "SpeedOfLight")
        r = self.call("--version")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.recorded(), [["--version"]])

    def test_too_few_arguments_is_a_usage_error(self):
        r = subprocess.run([WRAPPER_SHELL, WRAP, self.wrapper], capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(r.returncode, 2)
        self.assertIn("usage", r.stderr)


WRAPPER_SHELL = "bash"

if __name__ == "__main__":
    unittest.main()
