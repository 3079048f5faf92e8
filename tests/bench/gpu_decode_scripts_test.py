#!/usr/bin/env python3
"""bench/gpu_decode_search.sh and bench/gpu_decode_points.sh without a GPU:
stand-ins for kevo and the harness (KEVO=, HARNESS=) show that the search
script searches each config once and times its best twice with the right
peers, that the verdicts come from both runs, that each best becomes a point
the points script takes, that a failed search or a
config that does not fit LIMIT is said and turns the exit status to 1, and
that bad arguments are one line and exit 2; and that the points script times
each point once with the knobs it was given or a search's best file as it
is (whose runs then pool with the search call's), skips what LIMIT leaves no time
for, still gives the verdicts of what it timed, writes sources kevo itself
can evaluate, and that its default points are points of their families."""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "bench", "gpu_decode_search.sh")
POINTS = os.path.join(ROOT, "bench", "gpu_decode_points.sh")

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
    family = os.environ.get("FAKE_FAMILY", "mma")
    print(json.dumps({"best": {"family": family, "knobs": {"SPLIT": 4, "BM": 16}}}))
    """)

FAKE_HARNESS = textwrap.dedent("""\
    #!/usr/bin/env python3
    # torch_peers.py CONFIG --peers P --kevo-cuda-dir D (or --kevo-dir D) ... --json J:
    # eager and compile 10% slower than kevo's kernel; the kevo side names the
    # file it timed by its hash, as torch_peers.py does
    import hashlib, itertools, json, os, sys
    a = sys.argv[1:]
    cfg = a[0]
    name = os.path.basename(cfg)[:-5]
    opt = lambda k: a[a.index(k) + 1]
    side, folder = ("kevo_cuda", opt("--kevo-cuda-dir")) if "--kevo-cuda-dir" in a else ("kevo", opt("--kevo-dir"))
    best = os.path.join(folder, name + ".best.cu")
    if not os.path.exists(best):
        sys.exit(2)
    with open(os.environ["FAKE_LOG"], "a") as f:
        f.write("time %s %s %s %s\\n" % (name, opt("--peers"), opt("--flush"), side))
        if side == "kevo":
            text = open(best).read()
            knobs = itertools.takewhile(lambda l: l.startswith("#define"), text.splitlines())
            # the knobs lead; kevo_launch is in the file itself, so kevo can evaluate it too
            f.write("defines " + " ".join(l.split()[1] + "=" + l.split()[2] for l in knobs) +
                    (" +kevo_launch" if "kevo_launch" in text else "") + "\\n")
    peers = {side: [10.0, 10.01, 10.02]}
    for p in opt("--peers").split(","):
        peers[p] = [11.0, 11.02, 11.01] if p in ("eager", "compile") else [9.5, 9.5, 9.51]
    doc = {"tasks": [{"name": name, "flush": opt("--flush"),
                      "peers": {p: {"status": "ok", "round_medians_us": r, "median_us": sorted(r)[1]}
                                for p, r in peers.items()}}]}
    doc["tasks"][0]["peers"][side].update(
        source=best, source_sha256=hashlib.sha256(open(best, "rb").read()).hexdigest())
    json.dump(doc, open(opt("--json"), "w"))
    print("timed", name)
    """)


def read(path):
    with open(path) as f:
        return f.read()


class StandIns(unittest.TestCase):
    """A temporary folder with the stand-ins and the log of what they were asked."""
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

    def calls(self):
        return read(self.log).splitlines() if os.path.exists(self.log) else []


class GpuDecodeSearch(StandIns):
    def run_script(self, *args, **env):
        e = dict(os.environ, OUT=self.out, KEVO=self.kevo, HARNESS=self.harness, FAKE_LOG=self.log,
                 KEVO_DB=os.path.join(self.dir.name, "kevo.db"), KEVO_CACHE_DIR=os.path.join(self.dir.name, "c"))
        e.update(env)
        return subprocess.run(["bash", SCRIPT, *args], env=e, capture_output=True, text=True, timeout=120)

    def test_each_config_is_searched_once_and_timed_twice_and_judged_over_both(self):
        r = self.run_script("1.5", "gemm-16x4096x4096", "gemm_swiglu-16x4096x14336")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.calls(), [
            "search gemm-16x4096x4096 1.5",
            "time gemm-16x4096x4096 eager,read read kevo_cuda",
            "time gemm-16x4096x4096 eager,read read kevo_cuda",
            "search gemm_swiglu-16x4096x14336 1.5",
            "time gemm_swiglu-16x4096x14336 eager,compile,read read kevo_cuda",
            "time gemm_swiglu-16x4096x14336 eager,compile,read read kevo_cuda",
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

    def test_each_best_is_a_point_the_points_script_times_in_another_call(self):
        r = self.run_script("1.5", "gemm-16x4096x4096", "gemm_swiglu-16x4096x14336")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        points = read(os.path.join(self.out, "points.txt")).split()
        self.assertEqual(points, ["gemm-16x4096x4096=gemm/mma.cu:BM=16,SPLIT=4",
                                  "gemm_swiglu-16x4096x14336=gemm_swiglu/mma.cu:BM=16,SPLIT=4"])
        os.remove(self.log)
        e = dict(os.environ, OUT=os.path.join(self.dir.name, "points"), HARNESS=self.harness, FAKE_LOG=self.log)
        r = subprocess.run(["bash", POINTS, *points], env=e, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.calls()[:2], ["time gemm-16x4096x4096 eager,copy,read read kevo",
                                            "defines BM=16 SPLIT=4 +kevo_launch"])
        # a family the search names but kevo does not ship: said, not a bad point; a new run starts afresh
        r = self.run_script("1.5", "gemm-16x4096x4096", FAKE_FAMILY="nosuch")
        self.assertIn("gemm-16x4096x4096: its best is not in", r.stdout)
        self.assertEqual(read(os.path.join(self.out, "points.txt")), "")

    def test_a_best_file_timed_again_joins_the_search_calls_verdict(self):
        r = self.run_script("1.5", "gemm-16x4096x4096")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        first = [os.path.join(self.out, "gemm-16x4096x4096.%s.json" % x) for x in ("harness", "repeat")]
        best = os.path.join(self.dir.name, "kept.best.cu")   # the file brought back from the device
        os.rename(os.path.join(self.out, "gemm-16x4096x4096.best.cu"), best)
        verdict = os.path.join(ROOT, "bench", "peers_verdict.py")
        for point, pooled in (("gemm-16x4096x4096=" + best, True),
                              (read(os.path.join(self.out, "points.txt")).strip(), False)):
            out = os.path.join(self.dir.name, "again")
            e = dict(os.environ, OUT=out, HARNESS=self.harness, FAKE_LOG=self.log)
            r = subprocess.run(["bash", POINTS, point], env=e, capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            if pooled:   # the very file, byte for byte
                self.assertEqual(read(os.path.join(out, "best", "gemm-16x4096x4096.best.cu")), read(best))
            v = subprocess.run([sys.executable, verdict, *first, os.path.join(out, "gemm-16x4096x4096.json")],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(v.returncode, 0, v.stderr)
            rows = [l for l in v.stdout.splitlines() if l.startswith("gemm-16x4096x4096 [read flush] eager")]
            # one file: one row, judged over three runs of two calls; the same knobs
            # written from the family: another file, a row of its own
            self.assertEqual(len(rows), 1 if pooled else 2, v.stdout)
            self.assertEqual(any("(one call)" in l for l in rows), not pooled, v.stdout)
        gone = "gemm-16x4096x4096=" + os.path.join(self.dir.name, "gone.best.cu")
        r = subprocess.run(["bash", POINTS, gone], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, OUT=self.out, HARNESS=self.harness, FAKE_LOG=self.log))
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("no kernel file", r.stderr)

    def test_a_failed_search_is_said_and_the_others_still_judged(self):
        r = self.run_script("1.5", "gemm-16x4096x4096", "gemm-128x4096x4096", FAKE_FAIL="gemm-16x4096x4096")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("gemm-16x4096x4096: no best kernel written", r.stdout)
        self.assertNotIn("time gemm-16x4096x4096 eager,read read kevo_cuda", self.calls())
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


class GpuDecodePoints(StandIns):
    def run_points(self, *points, **env):
        e = dict(os.environ, OUT=self.out, HARNESS=self.harness, FAKE_LOG=self.log)
        e.update(env)
        return subprocess.run(["bash", POINTS, *points], env=e, capture_output=True, text=True, timeout=120)

    P1 = "gemm-16x4096x4096=gemm/mma.cu:BM=16,SPLIT=4"
    P2 = "gemm_swiglu-16x4096x14336=gemm_swiglu/mma.cu:BM=16,BN=256"

    def test_each_point_is_timed_once_with_its_knobs_and_judged(self):
        r = self.run_points(self.P1, self.P2)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.calls(), [
            "time gemm-16x4096x4096 eager,copy,read read kevo", "defines BM=16 SPLIT=4 +kevo_launch",
            "time gemm_swiglu-16x4096x14336 eager,compile,copy,read read kevo", "defines BM=16 BN=256 +kevo_launch",
        ])
        verdicts = read(os.path.join(self.out, "verdicts.txt"))
        self.assertIn("gemm-16x4096x4096 [read flush] eager / kevo", verdicts)
        self.assertIn("gemm_swiglu-16x4096x14336 [read flush] compile / kevo", verdicts)
        self.assertIn("(one call)", verdicts)   # one run each: said so

    def test_what_the_limit_leaves_no_time_for_is_skipped_and_said(self):
        r = self.run_points(self.P1, self.P2, LIMIT="10")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("== gemm-16x4096x4096: skipped", r.stdout)
        self.assertIn("== gemm_swiglu-16x4096x14336: skipped", r.stdout)
        self.assertEqual(self.calls(), [])
        self.assertIn("no verdicts", read(os.path.join(self.out, "verdicts.txt")))

    def test_a_bad_point_is_one_line_and_exit_2(self):
        for p in ("gemm-16x4096x4096", "gemm-16x4096x4096=gemm/nope.cu:BM=16", "gemm-nope=gemm/mma.cu:BM=16"):
            r = self.run_points(p)
            self.assertEqual(r.returncode, 2, (p, r.stdout, r.stderr))
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, (p, r.stderr))
            self.assertEqual(self.calls(), [], p)

    def test_each_default_point_is_a_point_of_its_family(self):
        # the script's own list, as it would run with no argument: every knob of the
        # family given once, each a value the family allows, for a config that exists
        text = read(POINTS)
        block = text[text.index("  points=(\n") + len("  points=(\n"):text.index("\n  )\nfi")]
        points = block.split()
        self.assertGreaterEqual(len(points), 13)
        for p in points:
            config, rest = p.split("=", 1)
            family, knobs = rest.split(":", 1)
            self.assertTrue(os.path.exists(os.path.join(ROOT, "configs", "cuda", "decode", config + ".json")), p)
            declared = {}
            for line in read(os.path.join(ROOT, "targets", "cuda", "kernels", family)).splitlines():
                if line.startswith("// @kevo knob "):
                    name, _default, values = line[len("// @kevo knob "):].split(" ", 2)
                    declared[name] = [v.strip() for v in values.strip("{} ").split(",")]
            given = dict(kv.split("=", 1) for kv in knobs.split(","))
            self.assertEqual(len(given), len(knobs.split(",")), p)   # no knob twice
            self.assertEqual(sorted(given), sorted(declared), p)
            for k, v in given.items():
                self.assertIn(v, declared[k], (p, k))


if __name__ == "__main__":
    unittest.main()
