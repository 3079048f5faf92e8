#!/usr/bin/env python3
"""bench/micro/stall_summary.py: ncu's per-instruction stall samples read back
per kernel, each sample counted once under its instruction's kind, the branch of
an mbarrier try-wait counted as the wait, and bad input one line (no GPU needed)."""
import gzip
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "bench", "micro", "stall_summary.py")
# A real source page (three builds of gemm wgmma at 4096^3 on an H100, round 9).
ROUND9 = os.path.join(ROOT, "bench", "results", "2026-12-06-h100-decode-gemm-9", "call3", "source.csv.gz")
sys.path.insert(0, os.path.join(ROOT, "bench", "micro"))
import stall_summary as ss  # noqa: E402

HEAD = ('"Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued Samples)",'
        '"stall_barrier","stall_long_sb","stall_mio","stall_wait","stall_barrier (Not Issued)"\n')


def row(addr, src, samples, barrier=0, long_sb=0, mio=0, wait=0):
    return f'"{addr}","{src}","{samples}","0","{barrier}","{long_sb}","{mio}","{wait}","99"\n'


SYNTH = ('==PROF== a line ncu writes first\n'
         '"Kernel Name","kevo_kernel(int)",\n' + HEAD +
         row("0x100", "      SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [UR8+0x38000], R12", 2, wait=2) +
         row("0x110", "@!P1  BRA 0x100", 50, long_sb=50) +
         row("0x120", "      HGMMA.64x64x16.F32.BF16 R24, gdesc[UR16].tnspB, R24", 30, mio=20, wait=10) +
         row("0x130", "@P0   BRA 0x200", 5, long_sb=5) +   # a plain branch: control
         row("0x140", "      STG.E [R2.64], R4", 10, wait=10) +
         row("0x150", "      IMAD R1, R2, R3, RZ", 3, wait=3) +
         '"Kernel Name","nvjet_sm90_tst(int)",\n' + HEAD +
         row("0x900", "      UTMALDG.2D [UR4], [UR6]", 4, wait=4) +
         row("0x910", "      WARPGROUP.DEPBAR.LE gsb0, 0x1", 16, barrier=16))


class StallSummary(unittest.TestCase):
    def write(self, d, text, name="s.csv"):
        path = os.path.join(d, name)
        if name.endswith(".gz"):
            with gzip.open(path, "wt") as fh:
                fh.write(text)
        else:
            with open(path, "w") as fh:
                fh.write(text)
        return path

    def test_each_sample_counts_once_under_its_kind(self):
        with tempfile.TemporaryDirectory() as d:
            ks = ss.kernels(self.write(d, SYNTH, "s.csv.gz"))
        self.assertEqual([k["name"] for k in ks], ["kevo_kernel(int)", "nvjet_sm90_tst(int)"])
        a, b = (ss.summarize(k, 3) for k in ks)
        self.assertEqual(a["samples"], 100)
        got = {k: v["samples"] for k, v in a["kinds"].items() if v["samples"]}
        # the try-wait and the branch back to it are the wait; the other branch is control
        self.assertEqual(got, {"mbarrier": 52, "mma": 30, "control": 5, "store": 10, "other": 3})
        self.assertEqual(sum(v["samples"] for v in a["kinds"].values()), a["samples"])
        self.assertEqual([h["offset"] for h in a["hot"]], ["+0x10", "+0x20", "+0x40"])
        self.assertEqual(a["hot"][1]["reasons"], "mio 67%, wait 33%")  # (Not Issued) columns left out
        self.assertEqual({k: v["samples"] for k, v in b["kinds"].items() if v["samples"]},
                         {"tma": 4, "mma": 16})
        text = ss.render([a, b])
        self.assertIn("side by side", text)
        self.assertRegex(text, r"\n   mbarrier +52.0% +0.0%\n")

    def test_a_real_source_page_adds_up(self):
        ks = ss.kernels(ROUND9)
        self.assertEqual(len(ks), 3)
        for k in ks:
            s = ss.summarize(k, 5)
            self.assertGreater(s["samples"], 1000)
            self.assertAlmostEqual(sum(v["samples"] for v in s["kinds"].values()), s["samples"])
        first = ss.summarize(ks[0], 1)
        self.assertTrue(first["hot"][0]["source"].startswith("HGMMA"), first["hot"][0])
        self.assertGreater(first["kinds"]["mbarrier"]["share"], first["kinds"]["control"]["share"])

    def test_bad_input_is_one_line_and_a_page_without_samples_is_status_1(self):
        r = subprocess.run([sys.executable, SCRIPT, "/no/such.csv"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        with tempfile.TemporaryDirectory() as d:
            path = self.write(d, "==ERROR== no kernels were profiled\n")
            r = subprocess.run([sys.executable, SCRIPT, path], capture_output=True, text=True)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("no kernel's stall samples", r.stderr)
            good = self.write(d, SYNTH, "g.csv")
            out = os.path.join(d, "o.json")
            r = subprocess.run([sys.executable, SCRIPT, good, "--top", "2", "--json", out],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("hottest instructions", r.stdout)
            self.assertTrue(os.path.getsize(out) > 0)


if __name__ == "__main__":
    unittest.main()
