#!/usr/bin/env python3
"""bench/micro/runner_order.py: its jobs are kevo's phases, it speaks the runner's
protocol (against fake_cuda_runner, so no GPU is needed), a failed job is exit 1 and
bad input one line with exit status 2.
Usage: runner_order_test.py FAKE_CUDA_RUNNER"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "bench", "micro", "runner_order.py")
FAKE = sys.argv.pop(1) if len(sys.argv) > 1 else None
sys.path.insert(0, os.path.join(ROOT, "bench", "micro"))
import runner_order as ro  # noqa: E402


def run(*argv):
    return subprocess.run([sys.executable, SCRIPT, *argv], capture_output=True, text=True,
                          check=False, timeout=120)


class RunnerOrder(unittest.TestCase):
    def test_a_c_job_has_kevos_phases(self):
        # the operator's check shapes at seed 1, the task's shape at seed 1, timed at
        # seed 2, checked again at seed 3 (eval/evaluator.cpp, task seed 1)
        op = json.load(open(os.path.join(ROOT, "operators", "rmsnorm.json")))
        small = [[s["x"], s["x"][-1:], s["x"]] for s in op["check_shapes"]]
        got = ro.phases("c", 2)
        self.assertEqual([p["shapes"] for p in got[:3]], small)
        self.assertEqual([(p["timed"], p["seed"]) for p in got],
                         [(False, 1)] * 4 + [(True, 2), (False, 3)])
        self.assertEqual([p["timed"] for p in ro.phases("", 5)], [True])
        self.assertEqual([(p["timed"], p["seed"]) for p in ro.phases("m", 5)], [(False, 5), (True, 5)])

    @unittest.skipUnless(FAKE, "give the fake runner's path")
    def test_it_speaks_the_runners_protocol(self):
        with tempfile.TemporaryDirectory() as d:
            ok, bad = os.path.join(d, "ok.so"), os.path.join(d, "bad.so")
            open(ok, "w").write("FAKE_MODE=ok\n")
            open(bad, "w").write("FAKE_MODE=kernel_error\n")
            out = os.path.join(d, "out")
            r = run("--runner", FAKE, "--output", out, "--kernel", f"F={ok}", "F,Fs,F7")
            self.assertEqual(r.returncode, 0, r.stderr)
            # the fake runner times 1 ms a call
            self.assertEqual(r.stdout.split(), ["F,Fs,F7", "F:1000.00", "Fs:1000.00", "F7:1000.00"])
            r = run("--runner", FAKE, "--output", out, "--kernel", f"F={ok}", "--kernel", f"K={bad}", "F,K,F")
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertEqual(r.stdout.split(), ["F,K,F", "F:1000.00", "K:-", "F:1000.00"])
            self.assertIn("K: kernel_error", r.stderr)

    def test_bad_input_is_one_line_and_exit_2(self):
        with tempfile.TemporaryDirectory() as d:
            so = os.path.join(d, "k.so")
            open(so, "w").write("")
            for argv in (["--kernel", "F=/no/such.so", "F"],
                         ["--kernel", f"F={so}", "G"],
                         ["--kernel", f"F={so}", "Fx"],
                         ["--kernel", f"F={so}", "--runner", "/no/runner", "F"]):
                r = run(*argv)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertTrue(r.stderr.startswith("runner_order: "), r.stderr)


if __name__ == "__main__":
    unittest.main()
