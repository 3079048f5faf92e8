#!/usr/bin/env python3
"""bench/micro/harness_points.py: a point's knobs and the task's shapes reach
nvcc as -D defines with kevo's own flags, and bad input is one line with exit status 2 (no GPU
or torch needed for either)."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import unittest.mock

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "bench", "micro", "harness_points.py")
CONFIG = os.path.join(ROOT, "configs", "cuda", "rmsnorm-16384x4096.json")
FAMILY = os.path.join(ROOT, "targets", "cuda", "kernels", "rmsnorm", "fused.cu")
sys.path.insert(0, os.path.join(ROOT, "bench", "micro"))
import harness_points as hp  # noqa: E402


def nvcc_args(task, src, knobs, label):
    """The arguments kevo_kernel gives nvcc, caught by a stand-in nvcc that
    records them and fails; returns (the RuntimeError's text, the arguments)."""
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "args")
        nvcc = os.path.join(d, "nvcc")
        with open(nvcc, "w") as f:
            f.write(f"#!/bin/sh\necho \"$@\" > {log}\necho 'fake nvcc: no' >&2\nexit 1\n")
        os.chmod(nvcc, 0o755)
        os.environ["NVCC"] = nvcc
        try:
            hp.tp.kevo_kernel(task, src, knobs, d, label)
        except RuntimeError as e:
            return str(e), open(log).read().split()
        finally:
            del os.environ["NVCC"]
    raise AssertionError("kevo_kernel did not fail with the failing nvcc")


class HarnessPoints(unittest.TestCase):
    def test_a_point_is_a_source_and_its_knobs(self):
        self.assertEqual(hp.parse_point(f"h4={FAMILY}:HINT=4,MINB=2"),
                         ("h4", FAMILY, {"HINT": 4, "MINB": 2}))
        self.assertEqual(hp.parse_point(f"plain={FAMILY}"), ("plain", FAMILY, {}))
        for bad in ("nolabel", f"x={FAMILY}:HINT", f"x={FAMILY}:HINT=a", "x=/no/such.cu"):
            with self.assertRaises(hp.tp.BadInput, msg=bad):
                hp.parse_point(bad)

    def test_the_knobs_reach_nvcc_with_kevos_flags(self):
        err, args = nvcc_args(hp.tp.load_config(CONFIG), FAMILY, {"HINT": 4, "MINB": 2}, "h4")
        self.assertIn("fake nvcc: no", err)
        # the task's shapes too, as kevo passes them (targets/target.h shape_defines)
        for want in ("-DHINT=4", "-DMINB=2", "-gencode=arch=compute_90a,code=sm_90a", "-O3",
                     "-lineinfo", FAMILY, "-DKEVO_RANK_x=2", "-DKEVO_DIM_x_0=16384",
                     "-DKEVO_DIM_x_1=4096", "-DKEVO_LAST_x=4096", "-DKEVO_RANK_w=1",
                     "-DKEVO_LAST_w=4096", "-DKEVO_LAST_y=4096"):
            self.assertIn(want, args)

    def test_a_familys_kevo_headers_are_found(self):
        """Every quoted #include of a family that uses kevo's kernel headers
        resolves in one of the -I directories the harness gives nvcc, as it
        does in kevo's own compile."""
        gemm = os.path.join(ROOT, "targets", "cuda", "kernels", "gemm", "wgmma.cu")
        task = hp.tp.load_config(os.path.join(ROOT, "configs", "cuda", "gemm-4096.json"))
        _, args = nvcc_args(task, gemm, {"BN": 256}, "g")
        dirs = [a[2:] for a in args if a.startswith("-I")]
        wanted = [line.split('"')[1] for line in open(gemm)
                  if line.startswith("#include \"")]
        self.assertIn("kevo_cuda_gemm_fallback.cuh", wanted)
        for name in wanted:
            self.assertTrue(any(os.path.exists(os.path.join(x, name)) for x in dirs),
                            f"{name} is in none of {dirs}")

    def test_the_points_build_at_once_and_keep_their_order(self):
        """build_points: every point's kernel, built by a stand-in nvcc that
        makes a real shared library with cc (and fails on -DFAIL=1), comes back
        in the order given; a failing point is left out and named. The builds
        run at once: each stand-in nvcc waits (20 s at most) until another one
        has started, so builds one after another fail the first point."""
        cc = shutil.which("cc") or shutil.which("gcc")
        if not cc:
            self.skipTest("no C compiler for the stand-in nvcc")
        if (os.cpu_count() or 1) < 2:
            self.skipTest("one CPU: build_points runs one nvcc at a time here")
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "k.c")
            with open(src, "w") as f:
                f.write("int kevo_launch(void) { return 0; }\n")
            nvcc = os.path.join(d, "nvcc")
            with open(nvcc, "w") as f:
                f.write("#!/bin/sh\nout=\n"
                        "while [ $# -gt 0 ]; do\n"
                        "  case \"$1\" in -DFAIL=1) echo 'fake nvcc: FAIL' >&2; exit 1;;\n"
                        "  -o) out=$2; shift;; esac; shift\ndone\n"
                        "touch \"$out.started\"; n=0\n"
                        f"while [ $(ls {d}/*.started 2>/dev/null | wc -l) -lt 2 ]; do\n"
                        "  n=$((n + 1)); [ $n -gt 200 ] && { echo 'fake nvcc: alone' >&2; exit 1; }\n"
                        "  sleep 0.1\ndone\n"
                        f"exec {cc} -shared -fPIC -x c {src} -o \"$out\"\n")
            os.chmod(nvcc, 0o755)
            with unittest.mock.patch.dict(os.environ, {"NVCC": nvcc}):
                task = hp.tp.load_config(CONFIG)
                labels = [f"p{i}" for i in range(6)]
                points = [(label, FAMILY, {"HINT": i, "FAIL": int(label == "p3")})
                          for i, label in enumerate(labels)]
                kernels, failed = hp.build_points(task, points, d)
        self.assertEqual(list(kernels), ["p0", "p1", "p2", "p4", "p5"])
        self.assertEqual(failed, ["p3"])
        self.assertTrue(all(callable(k) for k in kernels.values()))

    def test_bad_input_is_one_line_and_exit_2(self):
        for argv in ([CONFIG, "--point", "x=/no/such.cu"],
                     [CONFIG, "--point", f"x={FAMILY}", "--flush", "boil"],
                     [CONFIG, "--no-compile"]):
            r = subprocess.run([sys.executable, SCRIPT, *argv], capture_output=True, text=True,
                               check=False)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertTrue(r.stderr.startswith("harness_points: "), r.stderr)

    def test_the_eager_function_alone_is_something_to_time(self):
        """--no-compile --eager times cuBLAS's (the eager function's) side alone:
        not refused as an empty run (here it stops at the want of a GPU)."""
        r = subprocess.run([sys.executable, SCRIPT, CONFIG, "--no-compile", "--eager"],
                           capture_output=True, text=True, check=False)
        self.assertNotIn("something must be timed", r.stderr)
        if r.returncode == 2:
            self.assertIn("CUDA device", r.stderr)


if __name__ == "__main__":
    unittest.main()
