#!/usr/bin/env python3
"""bench/peers_verdict.py: a verdict only where every round pairing of every
call agrees, pairs only within a call, never pools two flushes, marks an
unrepeated verdict and a kernel under the read floor, never pools calls that
timed different kevo kernels, and refuses bad input."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "peers_verdict.py")


def call(task, flush="read", kernel=None, **rounds):
    """One harness call: each peer's round medians (µs); `kernel`, the
    SHA-256 the harness records for the kevo kernel's source."""
    doc = {"tasks": [{"name": task, "flush": flush,
                      "peers": {p: {"status": "ok", "round_medians_us": r, "median_us": sorted(r)[len(r) // 2]}
                                for p, r in rounds.items()}}]}
    for side in ("kevo", "kevo_cuda"):
        if kernel and side in rounds:
            doc["tasks"][0]["peers"][side]["source_sha256"] = kernel
    return doc


class PeersVerdict(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.n = 0

    def tearDown(self):
        self.dir.cleanup()

    def files(self, *docs):
        paths = []
        for d in docs:
            self.n += 1
            p = os.path.join(self.dir.name, f"call{self.n}.json")
            with open(p, "w") as f:
                f.write(d if isinstance(d, str) else json.dumps(d))
            paths.append(p)
        return paths

    def run_tool(self, *docs, args=()):
        return subprocess.run([sys.executable, TOOL, *args, *self.files(*docs)],
                              capture_output=True, text=True)

    def lines(self, *docs, args=()):
        r = self.run_tool(*docs, args=args)
        self.assertEqual(r.returncode, 0, r.stderr)
        return [l for l in r.stdout.splitlines() if l]

    def test_faster_in_two_calls(self):
        out = self.lines(call("t", eager=[50, 50.5, 49.8], kevo_cuda=[45, 45.2, 44.9]),
                         call("t", eager=[51, 50.2, 50.9], kevo_cuda=[45.5, 45.1, 45.3]))
        self.assertEqual(len(out), 1)
        self.assertIn("eager / kevo_cuda", out[0])
        self.assertIn(": kevo faster;", out[0])
        self.assertNotIn("one call", out[0])

    def test_slower_and_level(self):
        slow = self.lines(call("t", eager=[40, 40.1], kevo_cuda=[44, 44.2]),
                          call("t", eager=[40.2, 40], kevo_cuda=[44.1, 43.9]))
        self.assertIn(": kevo slower;", slow[0])
        level = self.lines(call("t", eager=[40, 40.1], kevo_cuda=[40.05, 40.1]),
                           call("t", eager=[40.2, 40], kevo_cuda=[40.1, 39.95]))
        self.assertIn(": level;", level[0])

    def test_noise_larger_than_the_effect_is_inconclusive(self):
        # The medians say 2% faster, but one pairing of rounds says slower.
        out = self.lines(call("t", eager=[51, 49, 51], kevo_cuda=[49.5, 50, 49.8]),
                         call("t", eager=[51, 51.2, 50.9], kevo_cuda=[50, 49.9, 50.1]))
        self.assertIn(": inconclusive", out[0])

    def test_rounds_pair_only_within_a_call(self):
        # Each call: kevo 6-11% faster. Pairing call 1's kevo with call 2's
        # peer (80 / 90) would read 0.89 and make it inconclusive.
        out = self.lines(call("t", eager=[100], kevo_cuda=[90]), call("t", eager=[80], kevo_cuda=[75]))
        self.assertIn(": kevo faster;", out[0])
        self.assertIn("1.111 · 1.067", out[0])

    def test_one_call_is_marked_and_flushes_are_not_pooled(self):
        out = self.lines(call("t", flush="read", eager=[50], kevo_cuda=[45]),
                         call("t", flush="write", eager=[60], kevo_cuda=[70]))
        self.assertEqual(len(out), 2, out)
        read = next(l for l in out if "[read flush]" in l)
        write = next(l for l in out if "[write flush]" in l)
        self.assertIn("kevo faster (one call)", read)
        self.assertIn("kevo slower (one call)", write)

    def test_each_peer_is_judged_and_the_floor_reported(self):
        out = self.lines(call("mlp", eager=[92, 92.5], compile=[86, 85.9], read=[78, 78.1],
                              kevo_cuda=[83.3, 83.2]),
                         call("mlp", eager=[92.4, 92.5], compile=[85.9, 86], read=[78, 77.9],
                              kevo_cuda=[83.2, 83.3]))
        self.assertEqual(len(out), 2, out)  # compile and eager, not the yardstick
        self.assertTrue(all("kevo faster" in l and "read 94%" in l for l in out), out)
        self.assertFalse(any(l.split(" ")[2] == "read" for l in out))

    def test_a_kernel_under_the_read_floor_is_suspect(self):
        out = self.lines(call("t", flush="write", eager=[55], read=[50.5], kevo_cuda=[46.5]))
        self.assertIn("UNDER THE READ FLOOR", out[0])
        ok = self.lines(call("t", eager=[47], read=[40.8], kevo_cuda=[41.5]))
        self.assertNotIn("UNDER THE READ FLOOR", ok[0])

    def test_kevo_peer_when_no_cuda_kernel_and_failed_peers(self):
        doc = call("t", eager=[50], kevo=[40])
        doc["tasks"][0]["peers"]["compile"] = {"status": "error", "error": "no triton"}
        out = self.lines(doc)
        self.assertTrue(any("eager / kevo:" in l and "kevo faster" in l for l in out), out)
        self.assertTrue(any("compile" in l and "not timed beside" in l for l in out), out)
        none = self.lines(call("t", eager=[50]))
        self.assertIn("no kevo kernel timed", none[0])

    def test_calls_that_timed_different_kernels_are_never_pooled(self):
        # A search's best timed once, then a later search's best: two kernels,
        # two rows, each unrepeated, not one verdict over both.
        a, b = "a" * 64, "b" * 64
        out = self.lines(call("t", kernel=a, eager=[50, 50.2], kevo_cuda=[51.1, 51.2]),
                         call("t", kernel=b, eager=[50.1, 50], kevo_cuda=[49.4, 49.3]))
        self.assertEqual(len(out), 2, out)
        self.assertIn("(kernel aaaaaaaaaaaa): ", out[0])
        self.assertIn("kevo slower (one call)", out[0])
        self.assertIn("(kernel bbbbbbbbbbbb): ", out[1])
        self.assertIn("kevo faster (one call)", out[1])
        same = self.lines(call("t", kernel=a, eager=[50], kevo_cuda=[45]),
                          call("t", kernel=a, eager=[50.5], kevo_cuda=[45.1]))
        self.assertEqual(len(same), 1, same)
        self.assertIn("kevo faster;", same[0])   # pooled: no "(one call)"
        md = self.lines(call("t", kernel=a, eager=[50], kevo_cuda=[45]), args=("--markdown",))
        self.assertTrue(md[2].startswith("| t (kernel aaaaaaaaaaaa) | read |"), md)

    def test_each_call_is_judged_by_the_kevo_peer_it_timed(self):
        # one call timed kevo's kernel as kevo_cuda, the next (another script)
        # as kevo: both count, neither is dropped
        out = self.lines(call("t", eager=[50], kevo_cuda=[45]), call("t", eager=[50.5], kevo=[45.2]))
        self.assertEqual(len(out), 1, out)
        self.assertIn("eager / kevo_cuda/kevo: 1.111 · 1.117", out[0])
        self.assertIn("kevo faster;", out[0])

    def test_markdown_and_threshold(self):
        docs = (call("t", eager=[50.4], kevo_cuda=[50]), call("t", eager=[50.5], kevo_cuda=[50]))
        self.assertIn("kevo faster", self.lines(*docs, args=("--threshold", "0.5"))[0])
        self.assertIn("level", self.lines(*docs, args=("--threshold", "2"))[0])
        md = self.lines(*docs, args=("--markdown",))
        self.assertTrue(md[0].startswith("| task |") and md[2].startswith("| t | read |"), md)

    def test_bad_input_is_one_line_and_exit_2(self):
        for bad in ("not json", json.dumps({"no": "tasks"}), json.dumps({"tasks": [{"peers": {}}]}),
                    json.dumps({"tasks": [{"name": "t", "peers": [1, 2]}]}),
                    json.dumps({"tasks": []})):
            r = self.run_tool(bad)
            self.assertEqual(r.returncode, 2, (bad, r.stdout, r.stderr))
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertTrue(r.stderr.startswith("peers_verdict: "), r.stderr)
        r = subprocess.run([sys.executable, TOOL, "--threshold", "-1", os.devnull], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        r = subprocess.run([sys.executable, TOOL, os.path.join(self.dir.name, "missing.json")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("missing.json", r.stderr)


if __name__ == "__main__":
    unittest.main()
