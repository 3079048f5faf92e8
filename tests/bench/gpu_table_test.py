#!/usr/bin/env python3
"""bench/gpu_table.py: the ratios against the peers come from the one harness
that timed kevo's kernel beside them (peer "kevo" of torch_peers.py
--kevo-dir) when it did, and from kevo's own runner otherwise; the verdict
column comes from that harness's rounds only."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "gpu_table.py")


def write(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f)


def kevo_eval(median_us):
    return {"result": {"status": "ok", "timing": {"median_s": median_us * 1e-6},
                       "diagnosis": {"roof_fraction": 0.9, "bound": "memory"}}}


def peers(task, **medians):
    return {"tasks": [{"name": task,
                       "peers": {p: {"median_us": m} for p, m in medians.items()}}]}


def rows(out):
    text = subprocess.run([sys.executable, TABLE, out], capture_output=True, text=True,
                          check=True).stdout
    cells = {}
    for line in text.splitlines()[2:]:
        c = [x.strip() for x in line.strip("|").split("|")]
        cells[c[0]] = c
    return cells


class GpuTable(unittest.TestCase):
    def test_ratios_come_from_the_one_harness_when_it_timed_kevo(self):
        with tempfile.TemporaryDirectory() as out:
            write(os.path.join(out, "rms.kevo.1.json"), kevo_eval(70.0))
            write(os.path.join(out, "all.peers.1.json"),
                  peers("rms", eager=84.0, compile=66.0, kevo=66.0 / 0.98))
            r = rows(out)["rms"]
            self.assertEqual(r[1], "67.3")  # kevo, same harness
            self.assertEqual(r[2], "70.0")  # kevo, its runner
            self.assertEqual(r[5], "**1.25x**")  # eager / same-harness kevo
            self.assertEqual(r[6], "**0.98x**")  # compile / same-harness kevo

    def test_without_the_kevo_peer_the_runner_figure_is_the_base(self):
        with tempfile.TemporaryDirectory() as out:
            write(os.path.join(out, "sm.kevo.1.json"), kevo_eval(80.0))
            write(os.path.join(out, "all.peers.1.json"), peers("sm", eager=160.0, compile=100.0))
            r = rows(out)["sm"]
            self.assertEqual(r[1], "—")
            self.assertEqual(r[5], "**2.00x**")
            self.assertEqual(r[6], "**1.25x**")

    def test_kevos_cuda_kernel_gets_two_columns_of_its_own(self):
        with tempfile.TemporaryDirectory() as out:
            write(os.path.join(out, "rms.kevo.1.json"), kevo_eval(70.0))
            write(os.path.join(out, "other.kevo.1.json"), kevo_eval(50.0))
            write(os.path.join(out, "all.peers.1.json"),
                  {"tasks": peers("rms", compile=66.0, kevo=60.0, kevo_cuda=63.0)["tasks"]
                   + peers("other", compile=50.0, kevo=50.0)["tasks"]})
            r = rows(out)
            self.assertEqual(r["rms"][10], "63.0")
            self.assertEqual(r["rms"][11], "**1.05x**")  # CUDA / Triton, one harness
            self.assertEqual(r["other"][10], "—")
            self.assertEqual(r["other"][11], "—")

    def test_without_a_cuda_peer_the_table_keeps_its_columns(self):
        with tempfile.TemporaryDirectory() as out:
            write(os.path.join(out, "rms.kevo.1.json"), kevo_eval(70.0))
            write(os.path.join(out, "all.peers.1.json"), peers("rms", compile=66.0, kevo=60.0))
            self.assertEqual(len(rows(out)["rms"]), 11)  # ten and the verdict

    def test_the_verdict_holds_only_where_every_round_of_the_harness_agrees(self):
        with tempfile.TemporaryDirectory() as out:
            write(os.path.join(out, "rms.kevo.1.json"), kevo_eval(70.0))
            write(os.path.join(out, "sm.kevo.1.json"), kevo_eval(70.0))
            write(os.path.join(out, "ln.kevo.1.json"), kevo_eval(70.0))
            # Two rounds (two calls of the harness): rms faster than eager in both,
            # level with compile; sm's second round flips against compile.
            write(os.path.join(out, "all.peers.1.json"),
                  {"tasks": peers("rms", eager=84.0, compile=66.0, kevo=66.1)["tasks"]
                   + peers("sm", compile=66.0, kevo=60.0)["tasks"]
                   + peers("ln", eager=90.0)["tasks"]})
            write(os.path.join(out, "all.peers.2.json"),
                  {"tasks": peers("rms", eager=85.0, compile=66.2, kevo=66.0)["tasks"]
                   + peers("sm", compile=60.0, kevo=63.0)["tasks"]
                   + peers("ln", eager=91.0)["tasks"]})
            r = rows(out)
            self.assertEqual(r["rms"][-1], "compile: level; eager: kevo faster")
            self.assertEqual(r["sm"][-1], "compile: inconclusive")
            self.assertEqual(r["ln"][-1], "—")  # kevo's kernel not in the harness: no verdict
            self.assertEqual(r["ln"][5], "**1.29x**")  # the ratio against its runner stays
            os.remove(os.path.join(out, "all.peers.2.json"))
            self.assertEqual(rows(out)["rms"][-1], "compile: level (one call); eager: kevo faster (one call)")


if __name__ == "__main__":
    unittest.main()
