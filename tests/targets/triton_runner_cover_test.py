#!/usr/bin/env python3
"""kevo_triton_runner.py's timing phase, driven without a GPU: torch, the
events and the clock are stand-ins, the host time of each call is set by the
test. What it checks is the launch cover: a call the cover did not hide is
taken again under a cover grown to fit it, and the timing line says so; a
long call rests the GPU."""
import io
import os
import re
import sys
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "targets", "triton", "runner"))
import kevo_triton_runner as runner  # noqa: E402  (imports nothing of torch's)


class Clock:
    """A host clock that moves 1 us per reading, and more when a call holds it."""

    def __init__(self):
        self.t = 0.0

    def perf(self):
        self.t += 1e-6
        return self.t


def fake_runner(clock, cover_us=-1.0):
    r = types.SimpleNamespace()
    r.torch = types.SimpleNamespace(cuda=types.SimpleNamespace(_sleep=lambda cycles: None))
    r.flush = types.SimpleNamespace(fill_=lambda value: None)
    r.flush_value = 0
    r.interpret = False
    r.clock_khz = 1.98e6
    r.flush_us = 30.0
    r.cover_us = cover_us
    r.stage_s = {"timing": 0.0}
    r.perf = clock.perf
    r.synchronize = lambda: None
    r.Event = lambda enable_timing=True: types.SimpleNamespace(record=lambda: None,
                                                                synchronize=lambda: None)
    r.elapsed = lambda a, b: 0.005  # ms
    return r


def time_phase(hold_every, hold_us, cover_us=-1.0, samples=100, escalate_us=0.0, call_s=5e-6):
    """Runs one timing phase whose every hold_every-th call holds the host
    hold_us (escalate_us longer each time), each call taking call_s from its
    launch to its end; returns (events emitted, the timing line)."""
    clock = Clock()
    calls = [0]
    holds = [0]

    def call():
        calls[0] += 1
        if hold_every and calls[0] % hold_every == 0:
            clock.t += (hold_us + escalate_us * holds[0]) * 1e-6
            holds[0] += 1
        return 0

    def call_and_wait():
        call()
        return True, call_s, 10e-6

    emitted = []
    saved_emit, saved_err = runner.emit, sys.stderr
    runner.emit = emitted.append
    sys.stderr = io.StringIO()
    try:
        job = {"timing": {"min_warmup": 10, "warmup_s": 0.0, "min_samples": samples,
                          "max_samples": samples, "min_time_s": 0.0}}
        ok = runner.Runner.time_phase(fake_runner(clock, cover_us), job, "main", call, lambda: None,
                                      lambda e: False, lambda s: True, call_and_wait)
        line = sys.stderr.getvalue()
    finally:
        runner.emit, sys.stderr = saved_emit, saved_err
    assert ok, line
    return emitted, line


class LaunchCover(unittest.TestCase):
    def test_a_slow_tail_is_taken_again_under_a_longer_cover(self):
        events, line = time_phase(hold_every=25, hold_us=300)
        self.assertIn(" 0 of ", line)  # no kept sample left unhidden
        self.assertRegex(line, r"outlasted the flush and cover \(host at most 30\d us\), 1 taken again "
                               r"under a longer cover")
        self.assertRegex(line, r"launch cover 62\d us")
        timing = [e for e in events if e.get("event") == "timing"]
        self.assertEqual(len(timing), 1)
        self.assertGreaterEqual(len(timing[0]["samples"]), 100)

    def test_a_kernel_that_holds_the_host_ever_longer_drops_one_sample_in_ten(self):
        # Every other call holds the host longer than the last: each would be
        # taken again, but only one to begin with and one for every ten kept.
        _, line = time_phase(hold_every=2, hold_us=100, escalate_us=10)
        m = re.search(r"(\d+) of (\d+) samples' calls outlasted .*, (\d+) taken again", line)
        self.assertIsNotNone(m, line)
        outlasted, kept, retaken = (int(g) for g in m.groups())
        self.assertEqual(kept, 101)
        self.assertGreaterEqual(retaken, 2)
        self.assertLessEqual(retaken, kept // 10 + 1)
        self.assertGreater(outlasted, 0)  # the rest are kept, and counted

    def test_steady_calls_are_not_taken_again(self):
        _, line = time_phase(hold_every=0, hold_us=0)
        self.assertIn(", 0 taken again under a longer cover", line)
        self.assertIn(" 0 of ", line)

    def test_a_long_call_rests_the_gpu(self):
        # Calls of 400 us: flush (30 us) + cover = twice the call, though the
        # host time alone would ask for 2 x 10 + 20 us.
        _, line = time_phase(hold_every=0, hold_us=0, call_s=400e-6)
        self.assertIn("launch cover 770 us", line)
        self.assertIn(", 0 taken again under a longer cover", line)
        # Capped at MAX_COVER_US; a short call gets no rest; a fixed cover is kept.
        _, line = time_phase(hold_every=0, hold_us=0, call_s=5e-3)
        self.assertIn("launch cover 2000 us", line)
        _, line = time_phase(hold_every=0, hold_us=0, call_s=20e-6)
        self.assertIn("launch cover 40 us", line)
        _, line = time_phase(hold_every=0, hold_us=0, cover_us=50, call_s=400e-6)
        self.assertIn("launch cover 50 us", line)

    def test_a_fixed_cover_is_kept_and_the_slow_calls_are_counted(self):
        _, line = time_phase(hold_every=25, hold_us=300, cover_us=50)
        self.assertIn("launch cover 50 us", line)
        self.assertIn(", 0 taken again under a longer cover", line)
        self.assertIn(" 4 of 101 samples' calls outlasted", line)


if __name__ == "__main__":
    unittest.main()
