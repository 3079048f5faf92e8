#!/usr/bin/env python3
"""bench/peers/torch_peers.py reads every GPU task config kevo ships (the anchor
suite and configs/cuda/decode/), derives the shapes and tolerances kevo binds,
and draws each input from the same range as kevo's operator definition (no GPU
or torch needed), and reads the GPU's clocks through NVML as kevo's runner does
(against a stand-in libnvidia-ml built here)."""
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
import torch_peers as tp  # noqa: E402


def operator_json(name):
    with open(os.path.join(ROOT, "operators", name + ".json"), encoding="utf-8") as f:
        return json.load(f)


class TorchPeers(unittest.TestCase):
    def test_every_shipped_gpu_config_loads(self):
        paths = sorted(glob.glob(os.path.join(ROOT, "configs", "cuda", "**", "*.json"), recursive=True))
        self.assertGreater(len(paths), 6)
        loaded = 0
        for p in paths:
            with open(p, encoding="utf-8") as f:
                cfg = json.load(f)
            if isinstance(cfg.get("shapes"), list):
                continue  # several timed shapes: the script times one shape per config
            t = tp.load_config(p)
            self.assertEqual(t.name, cfg["name"], p)
            loaded += 1
        self.assertGreater(loaded, 6)

    def test_each_kevo_build_has_its_own_library(self):
        # Two kernels for one task (--kevo-dir and --kevo-cuda-dir) must not
        # share a library path: dlopen would return the first for both.
        cmd = ["nvcc", "-O3", "-DKEVO_DIM_A_0=16", "a/gemm-16.best.cu"]
        one = tp.kevo_lib_name("gemm-16", cmd, b"kernel one")
        self.assertEqual(one, tp.kevo_lib_name("gemm-16", list(cmd), b"kernel one"))
        self.assertNotEqual(one, tp.kevo_lib_name("gemm-16", cmd, b"kernel two"))
        self.assertNotEqual(one, tp.kevo_lib_name("gemm-16", cmd[:-1] + ["b/gemm-16.best.cu"], b"kernel one"))
        self.assertNotEqual(one, tp.kevo_lib_name("gemm-16", ["nvcc", "-O2"] + cmd[2:], b"kernel one"))
        self.assertTrue(one.startswith("gemm-16.") and one.endswith(".kevo.so"))

    def test_a_kevo_peer_is_named_by_the_hash_of_its_source(self):
        # peers_verdict pools two calls only where this hash matches
        with tempfile.TemporaryDirectory() as d:
            a, b = os.path.join(d, "a.best.cu"), os.path.join(d, "b.best.cu")
            for path, text in ((a, "#define BN 64\n"), (b, "#define BN 128\n")):
                with open(path, "w") as f:
                    f.write(text)
            ra, rb = tp.source_record(a), tp.source_record(b)
            self.assertEqual(ra["source"], a)
            self.assertEqual(ra["source_sha256"],
                             hashlib.sha256(b"#define BN 64\n").hexdigest())
            self.assertNotEqual(ra["source_sha256"], rb["source_sha256"])
            self.assertEqual(tp.source_record(a), ra)   # the same file, the same name

    def test_flush_mode_is_a_choice_and_named_in_the_method(self):
        cfg = os.path.join(ROOT, "configs", "cuda", "decode", "gemm-64x4096x4096.json")
        dirty = tp.Task({"operator": "gemm", "dtype": "bf16",
                         "shapes": {"A": [64, 4096], "B": [4096, 4096]}}, "x.json")
        clean = tp.Task({"operator": "gemm", "dtype": "bf16", "timing": {"l2": "clean"},
                         "shapes": {"A": [64, 4096], "B": [4096, 4096]}}, "x.json")
        with self.assertRaises(tp.BadInput):
            tp.Task({"operator": "gemm", "timing": {"l2": "cold"},
                     "shapes": {"A": [64, 4096], "B": [4096, 4096]}}, "x.json")
        opts = tp.parse_args([cfg])
        self.assertEqual((tp.task_flush(dirty, opts), tp.task_flush(clean, opts)), ("write", "read"))
        opts = tp.parse_args(["--flush", "write", cfg])
        self.assertEqual((tp.task_flush(dirty, opts), tp.task_flush(clean, opts)), ("write", "write"))
        opts = tp.parse_args(["--flush", "read", cfg])
        self.assertEqual((tp.task_flush(dirty, opts), tp.task_flush(clean, opts)), ("read", "read"))
        with open(os.devnull, "w", encoding="utf-8") as devnull:
            err, sys.stderr = sys.stderr, devnull
            try:
                with self.assertRaises(SystemExit):
                    tp.parse_args(["--flush", "clean", cfg])
            finally:
                sys.stderr = err
        self.assertEqual(sorted(tp.FLUSH_HOW), ["read", "write"])

    def test_gemm_swiglu_shapes_tolerance_and_flops(self):
        t = tp.Task({"operator": "gemm_swiglu", "dtype": "bf16",
                     "shapes": {"A": [64, 4096], "Wg": [4096, 14336]}}, "x.json")
        self.assertEqual(t.shapes, {"A": [64, 4096], "Wg": [4096, 14336], "Wu": [4096, 14336],
                                    "y": [64, 14336]})
        self.assertAlmostEqual(t.atol, 4e-7 * 4096)
        self.assertAlmostEqual(t.rtol, 1.6e-2)
        self.assertEqual(t.flops(), 4.0 * 64 * 4096 * 14336 + 5.0 * 64 * 14336)
        self.assertEqual(t.bytes_moved(), (64 * 4096 + 2 * 4096 * 14336 + 64 * 14336) * 2)
        for bad in ({"A": [64, 4096], "Wg": [4095, 14336]}, {"A": [64, 4096]},
                    {"A": [64, 4096], "Wg": [4096, 14336], "Wu": [4096, 14335]},
                    {"A": [64, 4096, 1], "Wg": [4096, 14336]}):
            with self.assertRaises(tp.BadInput, msg=str(bad)):
                tp.Task({"operator": "gemm_swiglu", "dtype": "bf16", "shapes": bad}, "x.json")

    def test_the_yardsticks_move_the_tasks_bytes(self):
        # copy: two buffers of copy_elements each, one read and one written;
        # read: one buffer of read_elements, read once. Either way the task's
        # bytes to within 16 of them, whatever the shape.
        for shapes in ({"A": [16, 4096], "B": [4096, 4096]}, {"A": [7, 129], "B": [129, 1003]},
                       {"A": [1, 8], "B": [8, 8]}):
            t = tp.Task({"operator": "gemm", "dtype": "bf16", "shapes": shapes}, "x.json")
            for n, buffers in ((tp.copy_elements(t), 2), (tp.read_elements(t), 1)):
                self.assertEqual(n % 8, 0, shapes)
                self.assertLessEqual(abs(buffers * n * t.elem_bytes - t.bytes_moved()),
                                     buffers * 8 * t.elem_bytes, shapes)
        self.assertEqual(tp.parse_args(["--peers", "eager,read,copy",
                                        os.path.join(ROOT, "configs", "cuda", "gemm-4096.json")]).peers,
                         ["eager", "read", "copy"])
        with self.assertRaises(tp.BadInput):
            tp.parse_args(["--peers", "eager,memcpy"])
        # Their figure is a bandwidth, not the operator's FLOP rate.
        self.assertEqual(set(tp.YARDSTICKS), {"copy", "read"})
        t = tp.Task({"operator": "gemm", "dtype": "bf16", "shapes": {"A": [16, 4096], "B": [4096, 4096]}},
                    "x.json")
        self.assertTrue(tp.rate(t, 10.0, moved_only=True)[1].endswith("GB/s"))
        self.assertTrue(tp.rate(t, 10.0)[1].endswith("TFLOP/s"))

    def test_input_laws_follow_the_operator_definitions(self):
        # Where an operator declares a tensor's distribution, the peers draw from that range
        # (otherwise from kevo's default law, which the script spells out per operator).
        for op, spec in tp.OPERATORS.items():
            tensors = {t["name"]: t for t in operator_json(op)["tensors"]}
            self.assertEqual(spec["inputs"], [t["name"] for t in operator_json(op)["tensors"]
                                              if t["role"] == "in"], op)
            self.assertEqual(spec["outputs"], [t["name"] for t in operator_json(op)["tensors"]
                                               if t["role"] == "out"], op)
            for name, law in zip(spec["inputs"], spec["laws"]):
                d = tensors[name].get("distribution")
                if d and "lo" in d:
                    self.assertEqual((law[0], law[1]), (d["lo"], d["hi"]), f"{op}.{name}")

    def test_the_yardsticks_pass_without_a_check(self):
        # copy and read compute nothing: their check is None, and a run whose peers all
        # passed must exit 0 with them (it once raised AttributeError at the end instead).
        ok = {"status": "ok", "check": {"ok": True}}
        copy = {"status": "ok", "check": None}
        self.assertTrue(tp.task_passed({"peers": {"eager": ok, "copy": copy, "read": copy}}))
        self.assertFalse(tp.task_passed({"peers": {"eager": ok, "read": {"status": "error", "error": "x"}}}))
        self.assertFalse(tp.task_passed({"peers": {"eager": {"status": "ok", "check": {"ok": False}},
                                                   "copy": copy}}))
        self.assertFalse(tp.task_passed({"peers": {"eager": {"status": "error", "error": "x"}}}))
        self.assertFalse(tp.task_passed({"peers": {"eager": {"status": "ok"}}}))
        self.assertFalse(tp.task_passed({"error": "no inputs", "peers": {}}))


class CheckedOutputsStartPoisoned(unittest.TestCase):
    """A kevo kernel checked in the harness gets outputs filled with NaN, not
    whatever torch.empty hands back (often the last call's correct answer): a
    kernel that writes nothing must fail its check. Timed calls keep empty."""

    class Tensor:
        def __init__(self, shape, fill, dtype):
            self.shape, self.fill, self.dtype, self.device = list(shape), fill, dtype, "dev"

    class Dtype:
        def __init__(self, floating):
            self.is_floating_point = floating

    class Torch:  # the two allocations the wrappers make, recorded
        def empty(self, shape, dtype, device):
            return CheckedOutputsStartPoisoned.Tensor(shape, "unset", dtype)

        def full(self, shape, fill, dtype, device):
            return CheckedOutputsStartPoisoned.Tensor(shape, fill, dtype)

    def setUp(self):
        self.saved = tp.torch
        tp.torch = self.Torch()
        self.dir = tempfile.mkdtemp(prefix="poison-")

    def tearDown(self):
        tp.torch = self.saved
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_a_kernel_that_writes_nothing_sees_nan_while_checked(self):
        src = os.path.join(self.dir, "best.py")
        with open(src, "w", encoding="utf-8") as f:  # writes nothing, keeps what it was handed
            f.write("SEEN = []\ndef kevo_launch(inputs, outputs, scalars):\n    SEEN.append(outputs)\n")
        task = tp.Task({"operator": "gemm", "dtype": "bf16",
                        "shapes": {"A": [16, 64], "B": [64, 32]}}, "x.json")
        kevo = tp.kevo_triton_kernel(task, src)
        a = self.Tensor([16, 64], 1.0, self.Dtype(True))
        with tp.poisoned_outputs():
            checked = kevo(a, a)
        timed = kevo(a, a)
        self.assertEqual(checked.shape, [16, 32])
        self.assertTrue(checked.fill != checked.fill, "a checked output starts as NaN")
        self.assertEqual(timed.fill, "unset", "a timed call allocates as a peer does")
        ints = tp.kevo_outputs(task, ["C"], self.Tensor([1], 1, self.Dtype(False)))
        self.assertEqual(ints[0].fill, "unset")
        with tp.poisoned_outputs():
            ints = tp.kevo_outputs(task, ["C"], self.Tensor([1], 1, self.Dtype(False)))
        self.assertEqual(ints[0].fill, -1)
        with self.assertRaises(KeyError), tp.poisoned_outputs():
            tp.kevo_outputs(task, ["nope"], a)
        self.assertEqual(kevo(a, a).fill, "unset", "poisoning ends with the check, even on an error")

# A stand-in for the driver's NVML: one device, "GPU-fake" or index 0, whose
# SM clock is 1755 MHz, memory clock 3201 MHz, power 512.345 W, 47 C.
FAKE_NVML = r"""
#include <string.h>
static int dev;
int nvmlInit_v2(void) { return 0; }
int nvmlDeviceGetHandleByUUID(const char* uuid, void** h) {
  if (strcmp(uuid, "GPU-fake") != 0) return 13;  /* NVML_ERROR_NOT_FOUND */
  *h = &dev; return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** h) {
  if (i != 0) return 2;  /* NVML_ERROR_INVALID_ARGUMENT */
  *h = &dev; return 0;
}
int nvmlDeviceGetClockInfo(void* h, int type, unsigned* mhz) {
  if (h != &dev) return 2;
  if (type == 1) { *mhz = 1755; return 0; }
  if (type == 2) { *mhz = 3201; return 0; }
  return 3;  /* NVML_ERROR_NOT_SUPPORTED */
}
int nvmlDeviceGetPowerUsage(void* h, unsigned* mw) { *mw = 512345; return h == &dev ? 0 : 2; }
int nvmlDeviceGetTemperature(void* h, int sensor, unsigned* c) { *c = 47; return h == &dev && sensor == 0 ? 0 : 2; }
"""


class GpuStateThroughNvml(unittest.TestCase):
    def setUp(self):
        cc = shutil.which("cc") or shutil.which("gcc")
        if not cc:
            self.skipTest("no C compiler to build the stand-in libnvidia-ml")
        self.dir = tempfile.mkdtemp(prefix="fake-nvml-")
        src = os.path.join(self.dir, "nvml.c")
        with open(src, "w", encoding="utf-8") as f:
            f.write(FAKE_NVML)
        self.lib = os.path.join(self.dir, "libnvidia-ml.so.1")
        subprocess.run([cc, "-shared", "-fPIC", "-o", self.lib, src], check=True)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_the_clocks_power_and_temperature_of_the_device(self):
        want = {"sm_mhz": 1755, "mem_mhz": 3201, "power_w": 512.345, "gpu_temp_c": 47}
        self.assertEqual(tp.GpuState("GPU-fake", 0, self.lib).read(), want)
        # A UUID NVML does not know: the device by its index instead.
        self.assertEqual(tp.GpuState("GPU-other", 0, self.lib).read(), want)
        # Neither: nothing, as without NVML at all.
        self.assertEqual(tp.GpuState("GPU-other", 3, self.lib).read(), {})
        self.assertEqual(tp.GpuState(None, 0, os.path.join(self.dir, "missing.so")).read(), {})
        self.assertEqual(tp.GpuState(lib_name=None).read(), {})

    def test_a_round_carries_the_state_read_after_its_samples(self):
        class Timer:  # the CPU's timer's interface: (seconds timed, host seconds) a call
            cuda = False
            gpu_state = tp.GpuState("GPU-fake", 0, self.lib)

            def call(self, fn, args):
                fn(*args)
                return 1e-6, 1e-6

        class Opts:
            min_warmup, warmup_ms, min_samples, min_time_ms, max_samples, profile_calls = 1, 0, 3, 0, 3, 0

        m = tp.measure(Timer(), lambda: None, (), Opts())
        self.assertEqual(m["machine"]["sm_mhz"], 1755)
        self.assertEqual(m["n"], 3)


if __name__ == "__main__":
    unittest.main()
