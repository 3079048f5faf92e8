#!/usr/bin/env python3
"""bench/gpu_decode_search.sh without a GPU: stand-ins for kevo and the
harness (KEVO=, HARNESS=) show that each config is searched once and its best
timed twice with the right peers, that the verdicts come from both runs, that
a failed search or a config that does not fit LIMIT is said and turns the
exit status to 1, and that bad arguments are one line and exit 2."""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "bench", "gpu_decode_search.sh")

FAKE_KEVO = textwrap.dedent("""\
    #!/usr/bin/env python3
    # kevo run CONFIG --max-minutes M -o BEST --json: writes BEST unless told to fail
    import json, os, sys
    a = sys.argv[1:]
    assert a[0] == "run", a
    cfg, best = a[1], a[a.index("-o") + 1]
    name = os.path.basename(cfg)[:-5]
    with open(os.environ["FAKE_LOG"], "a") as f:
        f.write("search " + name + " " + a[a.index("--max-minutes") + 1] + "\\n")
    if name in os.environ.get("FAKE_FAIL", ""):
        sys.stderr.write("kevo: the cuda target cannot start\\n")
        sys.exit(1)
    open(best, "w").write("// best of " + name + "\\n")
    print(json.dumps({"best": {"family": "fake"}}))
    """)

FAKE_HARNESS = textwrap.dedent("""\
    #!/usr/bin/env python3
    # torch_peers.py CONFIG --peers P --kevo-cuda-dir D ... --json J: eager 10% slower than kevo
    import json, os, sys
    a = sys.argv[1:]
    cfg = a[0]
    name = os.path.basename(cfg)[:-5]
    opt = lambda k: a[a.index(k) + 1]
    if not os.path.exists(os.path.join(opt("--kevo-cuda-dir"), name + ".best.cu")):
        sys.exit(2)
    with open(os.environ["FAKE_LOG"], "a") as f:
        f.write("time %s %s %s\\n" % (name, opt("--peers"), opt("--flush")))
    peers = {"kevo_cuda": [10.0, 10.01, 10.02], "read": [9.5, 9.5, 9.51]}
    for p in opt("--peers").split(","):
        if p in ("eager", "compile"):
            peers[p] = [11.0, 11.02, 11.01]
    doc = {"tasks": [{"name": name, "flush": opt("--flush"),
                      "peers": {p: {"status": "ok", "round_medians_us": r, "median_us": sorted(r)[1]}
                                for p, r in peers.items()}}]}
    json.dump(doc, open(opt("--json"), "w"))
    print("timed", name)
    """)


def read(path):
    with open(path) as f:
        return f.read()


class GpuDecodeSearch(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        d = self.dir.name
        self.out = os.path.join(d, "out")
        self.log = os.path.join(d, "calls.txt")
        self.kevo = os.path.join(d, "kevo")
        self.harness = os.path.join(d, "harness.py")
        for path, text in ((self.kevo, FAKE_KEVO), (self.harness, FAKE_HARNESS)):
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o755)

    def tearDown(self):
        self.dir.cleanup()

    def run_script(self, *args, **env):
        e = dict(os.environ, OUT=self.out, KEVO=self.kevo, HARNESS=self.harness, FAKE_LOG=self.log,
                 KEVO_DB=os.path.join(self.dir.name, "kevo.db"), KEVO_CACHE_DIR=os.path.join(self.dir.name, "c"),
                 PATH=os.environ.get("PATH", ""))
        e.update(env)
        return subprocess.run(["bash", SCRIPT, *args], env=e, capture_output=True, text=True, timeout=120)

    def calls(self):
        return read(self.log).splitlines() if os.path.exists(self.log) else []

    def test_each_config_is_searched_once_and_timed_twice_and_judged_over_both(self):
        r = self.run_script("1.5", "gemm-16x4096x4096", "gemm_swiglu-16x4096x14336")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.calls(), [
            "search gemm-16x4096x4096 1.5",
            "time gemm-16x4096x4096 eager,read read",
            "time gemm-16x4096x4096 eager,read read",
            "search gemm_swiglu-16x4096x14336 1.5",
            "time gemm_swiglu-16x4096x14336 eager,compile,read read",
            "time gemm_swiglu-16x4096x14336 eager,compile,read read",
        ])
        verdicts = read(os.path.join(self.out, "verdicts.txt"))
        for line in ("gemm-16x4096x4096 [read flush] eager / kevo_cuda",
                     "gemm_swiglu-16x4096x14336 [read flush] compile / kevo_cuda",
                     "gemm_swiglu-16x4096x14336 [read flush] eager / kevo_cuda"):
            self.assertIn(line, verdicts)
        self.assertIn("kevo faster", verdicts)
        self.assertNotIn("(one call)", verdicts)   # both runs went in
        for n in ("gemm-16x4096x4096", "gemm_swiglu-16x4096x14336"):
            for x in ("harness", "repeat"):
                self.assertTrue(os.path.exists(os.path.join(self.out, f"{n}.{x}.json")))

    def test_a_failed_search_is_said_and_the_others_still_judged(self):
        r = self.run_script("1.5", "gemm-16x4096x4096", "gemm-128x4096x4096", FAKE_FAIL="gemm-16x4096x4096")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("gemm-16x4096x4096: no best kernel written", r.stdout)
        self.assertNotIn("time gemm-16x4096x4096 eager,read read", self.calls())
        verdicts = read(os.path.join(self.out, "verdicts.txt"))
        self.assertIn("gemm-128x4096x4096 [read flush] eager / kevo_cuda", verdicts)
        self.assertNotIn("gemm-16x4096x4096 ", verdicts)

    def test_a_config_that_does_not_fit_the_limit_is_skipped_not_cut(self):
        # 1.5 minutes of search and 150 s of timing do not fit 200 s
        r = self.run_script("1.5", "gemm-16x4096x4096", LIMIT="200")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("gemm-16x4096x4096 skipped: ", r.stdout)
        self.assertEqual(self.calls(), [])
        self.assertIn("no verdicts", read(os.path.join(self.out, "verdicts.txt")))

    def test_bad_arguments_are_one_line_and_exit_2(self):
        for args in ((), ("2",), ("1", "gemm-16x4096x4096"), ("x", "gemm-16x4096x4096"),
                     ("2", "gemm-16x4096x4096", "gemm-nope")):
            r = self.run_script(*args)
            self.assertEqual(r.returncode, 2, (args, r.stdout, r.stderr))
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, (args, r.stderr))
            self.assertEqual(self.calls(), [], args)   # nothing started


if __name__ == "__main__":
    unittest.main()
