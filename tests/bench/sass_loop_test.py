#!/usr/bin/env python3
"""bench/micro/sass_loop.py: the consumer's k-tile loop is found in a SASS
listing (unrolled or not, never a wait's retry branch), counted per k tile,
and said uniform or not; the point reaches nvcc as kevo builds it (-cubin);
bad input is one line with exit status 2. No GPU, CUDA or torch needed: a
stand-in nvcc and cuobjdump replay canned listings."""
import io
import json
import os
import sys
import tempfile
import unittest
import unittest.mock

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CONFIG = os.path.join(ROOT, "configs", "cuda", "gemm-4096.json")
FAMILY = os.path.join(ROOT, "targets", "cuda", "kernels", "gemm", "wgmma.cu")
sys.path.insert(0, os.path.join(ROOT, "bench", "micro"))
import sass_loop as sl  # noqa: E402


def listing(name, lines):
    """A cuobjdump -sass listing of one function: lines are instruction texts,
    at addresses 0x0000, 0x0010, ..."""
    out = [f"\t\tFunction : {name}", "\t.headerflags\t@\"EF_CUDA_SM90\""]
    for i, text in enumerate(lines):
        out.append(f"        /*{i * 16:04x}*/                   {text} ;   /* 0x0000000000000000 */")
        out.append("                                                                 /* 0x0000000000000000 */")
    return "\n".join(out) + "\n"


def at(i):
    return f"0x{i * 16:x}"


# A consumer whose k-tile loop is unrolled twice, with uniform barrier
# addresses and no R2UR; the wait's retry stubs after EXIT jump back to the
# waits (a "loop" holding the whole kernel, which must not be chosen).
UNIFORM = [
    "MOV R1, c[0x0][0x28]",                                        # 0
    "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR14+0x38000], R6",       # 1  loop top
    "@!P0 BRA 0x100",                                              # 2  -> retry stub 16
    "WARPGROUP.ARRIVE",                                            # 3
    "HGMMA.64x128x16.F32.BF16 R24, gdesc[UR20].tnspB, R24",        # 4
    "HGMMA.64x128x16.F32.BF16 R88, gdesc[UR24].tnspB, R88, gsb0",  # 5
    "SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [UR16+0x38000], R7",       # 6
    "@!P1 BRA 0x110",                                              # 7  -> retry stub 17
    "HGMMA.64x128x16.F32.BF16 R24, gdesc[UR20].tnspB, R24",        # 8
    "HGMMA.64x128x16.F32.BF16 R88, gdesc[UR24].tnspB, R88, gsb0",  # 9
    "WARPGROUP.DEPBAR.LE gsb0, 0x1",                               # 10
    f"@P0 BRA {at(1)}",                                            # 11 back to the top
    "STS [R2], R3",                                                # 12
    "EXIT",                                                        # 13
    "NOP",                                                         # 14
    "NOP",                                                         # 15
    f"BRA {at(1)}",                                                # 16 retry stub
    f"BRA {at(6)}",                                                # 17 retry stub
]
# A rolled loop whose descriptors are moved to uniform registers every k tile.
ORDINARY = [
    "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R21+URZ+0x38000], R154",  # 0
    "R2UR UR16, R18",                                              # 1
    "R2UR UR17, R19",                                              # 2
    "HGMMA.64x128x16.F32.BF16 R24, gdesc[UR16].tnspB, R24, gsb0",  # 3
    "IADD3 R18, R18, 0x2, RZ",                                     # 4
    f"@!P2 BRA {at(0)}",                                           # 5
    "EXIT",                                                        # 6
]


class SassLoop(unittest.TestCase):
    def test_an_unrolled_uniform_loop_is_counted_per_k_tile(self):
        s = sl.summarize(sl.instructions(listing("_Z4gemmv", UNIFORM)))
        self.assertEqual(s["function"], "_Z4gemmv")
        self.assertEqual(s["loop_instructions"], 11)  # 1 .. 11, not the retry stubs' span
        self.assertEqual(s["k_tiles_per_pass"], 2)
        self.assertEqual(s["per_k_tile"], 5.5)
        self.assertEqual(s["hgmma_per_k_tile"], 2)
        self.assertEqual(s["r2ur_per_k_tile"], 0)
        self.assertTrue(s["uniform_barrier_address"])

    def test_a_loop_in_ordinary_registers_says_so(self):
        s = sl.summarize(sl.instructions(listing("_Z1kv", ORDINARY)))
        self.assertEqual((s["loop_instructions"], s["k_tiles_per_pass"], s["r2ur_per_k_tile"]), (6, 1, 2))
        self.assertFalse(s["uniform_barrier_address"])

    def test_no_loop_of_waits_and_wgmmas_is_none(self):
        self.assertIsNone(sl.summarize(sl.instructions(listing("_Z1kv", ["MOV R1, R2", "EXIT"]))))
        # the first function without such a loop is passed over
        both = listing("_Z5emptyv", ["EXIT"]) + listing("_Z4gemmv", UNIFORM)
        self.assertEqual(sl.summarize(sl.instructions(both))["function"], "_Z4gemmv")

    def run_main(self, argv, sass_text, nvcc_rc=0):
        """main() with a stand-in nvcc (records its arguments, writes the
        cubin) and cuobjdump (prints sass_text); returns (status, stdout,
        stderr, nvcc's arguments)."""
        with tempfile.TemporaryDirectory() as d:
            args_log, sass = os.path.join(d, "args"), os.path.join(d, "listing")
            with open(sass, "w") as f:
                f.write(sass_text)
            nvcc = os.path.join(d, "nvcc")
            with open(nvcc, "w") as f:
                f.write(f"#!/bin/sh\necho \"$@\" > {args_log}\n"
                        "while [ $# -gt 1 ]; do [ \"$1\" = -o ] && : > \"$2\"; shift; done\n"
                        f"[ {nvcc_rc} -eq 0 ] || {{ echo 'fake nvcc: no' >&2; exit {nvcc_rc}; }}\n")
            cuobjdump = os.path.join(d, "cuobjdump")
            with open(cuobjdump, "w") as f:
                f.write(f"#!/bin/sh\ncat {sass}\n")
            for p in (nvcc, cuobjdump):
                os.chmod(p, 0o755)
            out, err = io.StringIO(), io.StringIO()
            with unittest.mock.patch.dict(os.environ, {"NVCC": nvcc, "CUOBJDUMP": cuobjdump}), \
                    unittest.mock.patch("sys.stdout", out), unittest.mock.patch("sys.stderr", err):
                status = sl.main(argv)
            nvcc_args = []
            if os.path.exists(args_log):
                with open(args_log) as f:
                    nvcc_args = f.read().split()
            return status, out.getvalue(), err.getvalue(), nvcc_args

    def test_a_point_is_built_as_kevo_builds_it_and_reported(self):
        with tempfile.TemporaryDirectory() as d:
            js = os.path.join(d, "out.json")
            status, out, _, args = self.run_main(
                [CONFIG, "--point", f"p={FAMILY}:BN=128,STAGES=4", "--json", js], listing("_Z4gemmv", UNIFORM))
            with open(js) as f:
                report = json.load(f)
        self.assertEqual(status, 0)
        self.assertIn("-cubin", args)
        self.assertIn("-gencode=arch=compute_90a,code=sm_90a", args)
        for d in ("-DBN=128", "-DSTAGES=4", "-DKEVO_DIM_A_0=4096"):
            self.assertIn(d, args)
        self.assertIn("5.5 instructions per k tile", out)
        self.assertIn("barrier address uniform", out)
        self.assertEqual(report["points"]["p"]["knobs"], {"BN": 128, "STAGES": 4})
        self.assertEqual(report["points"]["p"]["per_k_tile"], 5.5)

    def test_a_point_that_does_not_build_or_has_no_loop_fails(self):
        status, out, _, _ = self.run_main([CONFIG, "--point", f"p={FAMILY}"], "", nvcc_rc=1)
        self.assertEqual(status, 1)
        self.assertIn("nvcc failed", out)
        status, out, _, _ = self.run_main([CONFIG, "--point", f"p={FAMILY}"], listing("_Z1kv", ["EXIT"]))
        self.assertEqual(status, 1)
        self.assertIn("no k-tile loop", out)

    def test_bad_input_is_one_line_and_status_2(self):
        for argv in ([CONFIG], ["/no/such.json", "--point", f"p={FAMILY}"],
                     [CONFIG, "--point", "p=/no/such.cu"],
                     [CONFIG, "--point", f"p={FAMILY}", "--point", f"p={FAMILY}:BN=64"]):
            status, out, err, _ = self.run_main(argv, "")
            self.assertEqual(status, 2, argv)
            self.assertEqual(len(err.strip().splitlines()), 1, (argv, err))
            self.assertTrue(err.startswith("sass_loop: "), err)


if __name__ == "__main__":
    unittest.main()
