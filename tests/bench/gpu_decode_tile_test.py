#!/usr/bin/env python3
"""bench/gpu_decode_tile.sh without a GPU: stand-ins for the harness and for
gpu_diag.sh (HARNESS_POINTS=, DIAG=) show that every variant is BASE with its
knobs on top, timed beside cuBLAS (--eager) from a clean L2 with the two
diagnostic builds, that BASE reaches gpu_diag.sh as a kernel file kevo can
evaluate with stall sampling asked for, that LIMIT leaving too little time
skips the ncu part and says so, and that bad variants are one line and exit 2."""
import os
import subprocess
import tempfile
import textwrap
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "bench", "gpu_decode_tile.sh")

FAKE_POINTS = textwrap.dedent("""\
    #!/usr/bin/env python3
    import os, sys
    with open(os.environ["FAKE_LOG"], "a") as f:
        f.write("points " + " ".join(sys.argv[1:]) + "\\n")
    print("base: check ok")
    sys.exit(1)
    """)
FAKE_DIAG = textwrap.dedent("""\
    #!/usr/bin/env bash
    task=$(basename "$1")
    f=$BEST_DIR/$task.best.cu
    { echo "diag $* sections=$EXTRA_SECTIONS peer=$PEER kernels=$KERNELS"
      echo "head $(head -3 "$f" | tr '\\n' ';') launch $(grep -c kevo_launch "$f")"; } >> "$FAKE_LOG"
    """)


class GpuDecodeTile(unittest.TestCase):
    def run_tile(self, *args, **env):
        with tempfile.TemporaryDirectory() as d:
            log = os.path.join(d, "log")
            for name, text in (("points.py", FAKE_POINTS), ("diag.sh", FAKE_DIAG)):
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)
            e = dict(os.environ, FAKE_LOG=log, OUT=os.path.join(d, "out"),
                     HARNESS_POINTS=os.path.join(d, "points.py"), DIAG=os.path.join(d, "diag.sh"),
                     PATH=os.environ.get("PATH", "") + ":/nonexistent", **env)
            r = subprocess.run(["bash", SCRIPT, *args], capture_output=True, text=True, env=e, timeout=60)
            lines = []
            if os.path.exists(log):
                with open(log) as f:
                    lines = f.read().splitlines()
            return r, lines

    def test_variants_on_base_beside_cublas_then_stalls_of_base(self):
        r, lines = self.run_tile("e2=EPI=2", "c4s8=CLUSTER=4,STAGES=8", BASE="BN=64,WGM=64,EPI=0")
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        points = [l for l in lines if l.startswith("points ")]
        self.assertEqual(len(points), 1, lines)
        args = points[0].split()
        self.assertTrue(args[1].endswith("configs/cuda/decode/gemm-128x4096x4096.json"), args)
        for want in ("--no-compile", "--eager", "--flush read"):
            self.assertIn(want, points[0])
        w = "targets/cuda/kernels/gemm/wgmma.cu"
        got = [args[i + 1] for i, a in enumerate(args) if a == "--point"]
        self.assertEqual(got, [f"base={w}:BN=64,WGM=64,EPI=0", f"e2={w}:BN=64,WGM=64,EPI=0,EPI=2",
                               f"c4s8={w}:BN=64,WGM=64,EPI=0,CLUSTER=4,STAGES=8",
                               f"no_epi={w}:BN=64,WGM=64,EPI=0,KEVO_DIAG_NO_EPILOGUE=1",
                               f"no_mma={w}:BN=64,WGM=64,EPI=0,KEVO_DIAG_NO_MMA=1"])
        diag = [l for l in lines if l.startswith("diag ")]
        self.assertEqual(diag, ["diag decode/gemm-128x4096x4096 sections=SourceCounters peer=eager "
                                "kernels=nvjet|gemm|xmma|cutlass"])
        head, launch = lines[-1].rsplit(" launch ", 1)
        self.assertEqual(head, "head #define BN 64;#define WGM 64;#define EPI 0;")
        self.assertNotEqual(launch, "0", "the family's text follows the knobs")
        self.assertIn("points rc=1", r.stdout)

    def test_the_default_variants_are_knob_points(self):
        r, lines = self.run_tile()
        self.assertEqual(r.returncode, 0, r.stderr)
        labels = [a.split("=")[0] for a in lines[0].split() if "=" in a and "/" in a]
        self.assertEqual(labels[0], "base")
        self.assertIn("epi2", labels)
        self.assertEqual(labels[-2:], ["no_epi", "no_mma"])

    def test_too_little_time_skips_ncu_and_says_so(self):
        r, lines = self.run_tile(LIMIT="30")
        self.assertIn("ncu part skipped", r.stdout)
        self.assertFalse([l for l in lines if l.startswith("diag ")], lines)

    def test_bad_input_is_one_line_and_exit_2(self):
        for args, env in ((["nolabel"], {}), (["x=EPI=two"], {}), (["x=EPI=1;rm"], {}),
                          ([], {"CONFIG": "gemm-1x1x1"})):
            r, lines = self.run_tile(*args, **env)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertEqual(lines, [])


if __name__ == "__main__":
    unittest.main()
