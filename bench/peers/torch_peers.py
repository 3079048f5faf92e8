#!/usr/bin/env python3
"""PyTorch peers for kevo's GPU tasks: eager and torch.compile, timed as kevo times.

For each task this script times two peers on the same inputs:

  eager    the plain PyTorch expression (cuBLAS for gemm, through torch.matmul)
  compile  the same function through
           torch.compile(fn, mode="max-autotune-no-cudagraphs",
                         dynamic=False, fullgraph=True)
  kevo     (with --kevo-dir DIR) kevo's kernel DIR/<config name>.best.cu (or,
           for a Triton task, DIR/<config name>.best.py, called in this
           process through its kevo_launch), as
           `kevo run -o` writes it, built with nvcc as kevo builds it and
           called through its kevo_launch on torch's stream: kevo's kernel and
           the peers are then timed by one harness, call for call alike
  kevo_cuda (with --kevo-cuda-dir DIR) kevo's CUDA kernel DIR/<config name>.best.cu
           for the same task, beside a Triton one from --kevo-dir: kevo's two
           targets in one harness
  copy     (asked for in --peers) a yardstick, not a peer: dst.copy_(src) of
           two buffers that together move the task's bytes (half read, half
           written), timed alike. For a memory-bound task whose time is short
           (decode GEMMs of ~15 us), launch and ramp keep even a copy well
           below the copy roof; this row says how long the same bytes take to
           move at all, so a kernel's distance from it is the room left.
           Its outputs are not checked (there is nothing to check)
  read     (asked for in --peers) a yardstick like copy, but every byte the
           task moves is read once and (almost) nothing written: the floor of
           a kernel that streams its operands, such as a decode GEMM's weights
           (a copy pays for writing half of them). The fastest of a few
           read-only streams (torch.sum, and Triton loops at several block
           and grid sizes where Triton imports, up to a program per block),
           picked by the median of 7 calls each under the same flush; its
           record says which. Not checked

Tasks (the six defaults, `--task NAME`; any shape through a kevo task config):

  scaled_softmax  x [8,2048,4096], scale 0.125   y = torch.softmax(x * scale, -1)
  rmsnorm         x [16384,4096], w [N], 1e-6    y = F.rms_norm(x, (N,), w, eps)
  layernorm       x [16384,4096], w, b [N], 1e-5 y = F.layer_norm(x, (N,), w, b, eps)
  add_rmsnorm     x, r [16384,4096], w [N], 1e-6 h = x + r; y = F.rms_norm(h, ...)
  swiglu          g, u [16384,14336]             y = F.silu(g) * u
  gemm            A [4096,4096], B [4096,4096]   C = torch.matmul(A, B)

and, through a config only (configs/cuda/decode/):

  gemm_swiglu     A [M,K], Wg, Wu [K,N]          y = F.silu(A @ Wg) * (A @ Wu)

all in bf16; the framework does its own fp32 math inside (reductions, exp,
accumulation), as it does by default.

Method (kevo's):

* Every timed call is one call of the peer on the same inputs: first
  torch.cuda.synchronize(), then the L2 is flushed by zeroing a uint8 buffer
  of 2 x L2 bytes (L2 size from torch.cuda.get_device_properties(dev)
  .L2_cache_size), then a CUDA start event is recorded, the peer called, an
  end event recorded, and the sample is the time between the two events after
  the end event completes. The events are queued after the flush on the same
  stream, so the flush is not counted. --flush read sums the buffer instead
  of zeroing it: the L2 is then left with clean lines, so the timed call does
  not pay for writing back the flush's dirty lines (7-8 us of cuBLAS's
  decode GEMMs on an H200, 2026-12-04; a weight-streaming kernel in a model
  follows kernels that leave mostly clean weights behind). kevo's runner does the
  same under KEVO_CUDA_FLUSH=read. Without --flush, each config's
  "timing": {"l2": "dirty" | "clean"} picks the flush, as it does for kevo.
  Compare peers under one flush only.
* Host overhead: the start event fires when the flush ends (about 48 us for
  120 MiB on an H200), so whatever host time the call takes beyond that
  leaves the GPU idle inside the sample. A kernel launched from C++ costs the
  host a few us, always hidden, but a torch.compile'd function spends 60-190
  us on the host (dynamo guards, the Python wrapper, Triton launchers): on an
  H200 (2026-11-30) the default method timed compile peers 7-100% slower than
  their device time (rmsnorm 121-133 us instead of 67). Each line therefore reports the host time
  of the call ("host N us", perf_counter around the call) and flags
  HOST-BOUND when it exceeds 80% of what the flush hides. --launch-cover-us
  US queues a GPU sleep (torch.cuda._sleep, calibrated) of US microseconds
  between the flush and the start event, which hides host time up to
  flush + US and times the peer's device time only; it leaves the L2 state
  as the flush left it. Default 0 (kevo's runner sizes its own cover to hide
  the launch and, for a long call, to rest the GPU between samples:
  targets/runner/launch_cover.h); 300 is enough
  for every task here on an H200 (the figures then match
  triton.testing.do_bench's, which never leaves the GPU idle).
* The GPU's state: at the end of each round's samples, the SM and memory
  clocks, power and temperature as the driver's NVML reads them
  (libnvidia-ml.so.1 through ctypes; nothing where there is none), in the
  round's "machine" and on its line. kevo's runner stores the same figures
  with every evaluation (machine.sm_mhz, ...), so a gap between the two
  harnesses can be held against the clocks each ran at.
* Before timing: one first call (for the compile peer it compiles; its wall
  time is reported as first_call_s), the correctness check on its output
  (a kevo kernel's outputs are filled with NaN before that call, so one it
  leaves unwritten fails the check), then warm-up calls, done exactly like
  timed calls, until both --min-warmup calls (3) and --warmup-ms (25 ms of wall time) are reached.
* Samples are taken until both --min-samples (10) samples and --min-time-ms
  (100 ms) of summed sample time are reached, at most --max-samples.
* Reported: median, p20, p80 of the samples, quantiles by linear
  interpolation between closest ranks (type 7, numpy's default; kevo's), and
  the raw samples (JSON, microseconds).
* With --rounds R > 1 the peers are measured in turn R times (every other
  round in reverse order, so neither peer always goes first); each round is a
  full warm-up + sampling as above. The summary median is the median of the
  R round medians; p20/p80 then pool all rounds' samples.
* GB/s counts every input read once and every output written once at the
  task dtype's size (bf16: 2 bytes); gemm reports TFLOP/s = 2*M*N*K / time.
* Check: each peer's first output is compared with an fp64 computation of
  the same formula on the same (bf16) inputs, on the same device: normwise
  relative error ||got - ref||_2 / ||ref||_2, max abs error, and kevo's
  default tolerance for the dtype (|got - ref| <= atol + rtol * |ref|; for
  bf16 row ops tol:1e-5,1.6e-2, for gemm atol 1e-3*K, rtol 1.6e-2; a
  config's "compare": "tol:A,R" overrides). A failing check is reported and
  makes the exit status 1, but the peer is still timed.

Inputs follow kevo's input laws per operator (uniform in [lo, hi) plus a row
offset: softmax rows offset by up to 600 so that x*0.125 reaches ~80,
layernorm rows with means from -6 to +6, gemm uniform in [-1, 1]), drawn with
torch.Generator from --seed (default 1) in fp32 and rounded to the dtype.
They are not bit-identical to kevo's inputs (another generator), never zeros.

Usage:

  torch_peers.py                                 # the six default tasks
  torch_peers.py --task rmsnorm --task gemm
  torch_peers.py configs/cuda/rmsnorm.json --json out.json --rounds 3
  torch_peers.py --task all --device cpu --scale-down 64   # smoke test
  torch_peers.py --launch-cover-us 300 --rounds 3 --json h200.json

A config is kevo's task JSON ({"operator", "dtype" (default f32, as kevo),
"shapes" (x; gemm: A, B), "params", "compare", "name", ...}); other tensor
shapes are derived from the given ones; keys this script does not use
(search, timing, limits, ...) are ignored: timing comes from the options here.
--device cpu times with time.perf_counter instead of events (control-flow
testing; torch.compile on CPU needs a C++ compiler). --scale-down F divides
every dimension of 256 or more by F (at least 1).

Output: per task one header line and one line per peer; with --json, every
number, the samples, the environment (torch, triton, CUDA, device, L2) and
dates. Exit status: 0 when every peer ran and passed its check, 1 otherwise,
2 for bad input (one line on stderr). Standard library + torch only.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import hashlib
import json
import math
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
import traceback

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # reported in main(), so that --help works without torch
    torch = None
    F = None

COMPILE_MODE = "max-autotune-no-cudagraphs"

# Operators as kevo defines them: input and output tensor names in ABI order,
# scalar defaults, and input laws (lo, hi, row_period, row_step):
# value = lo + (hi - lo) * u + (row % row_period) * row_step, u uniform [0, 1).
OPERATORS = {
    "scaled_softmax": {
        "inputs": ["x"], "outputs": ["y"], "scalars": {"scale": 1.0},
        "laws": [(-64.0, 64.0, 7, 100.0)],
    },
    "rmsnorm": {
        "inputs": ["x", "w"], "outputs": ["y"], "scalars": {"eps": 1e-6},
        "laws": [(-2.0, 2.0, 0, 0.0), (0.5, 1.5, 0, 0.0)],
    },
    "layernorm": {
        "inputs": ["x", "w", "b"], "outputs": ["y"], "scalars": {"eps": 1e-5},
        "laws": [(-8.0, -4.0, 5, 3.0), (0.5, 1.5, 0, 0.0), (-1.0, 1.0, 0, 0.0)],
    },
    "add_rmsnorm": {
        "inputs": ["x", "r", "w"], "outputs": ["h", "y"], "scalars": {"eps": 1e-6},
        "laws": [(-2.0, 2.0, 0, 0.0), (-1.0, 1.0, 0, 0.0), (0.5, 1.5, 0, 0.0)],
    },
    "swiglu": {
        "inputs": ["g", "u"], "outputs": ["y"], "scalars": {},
        "laws": [(-6.0, 6.0, 0, 0.0), (-6.0, 6.0, 0, 0.0)],
    },
    "gemm": {
        "inputs": ["A", "B"], "outputs": ["C"], "scalars": {},
        "laws": [(-1.0, 1.0, 0, 0.0), (-1.0, 1.0, 0, 0.0)],
    },
    "gemm_swiglu": {
        "inputs": ["A", "Wg", "Wu"], "outputs": ["y"], "scalars": {},
        "laws": [(-1.0, 1.0, 0, 0.0), (-0.125, 0.125, 0, 0.0), (-0.125, 0.125, 0, 0.0)],
    },
}
VECTOR_TENSORS = {"w", "b"}  # [N] tensors of the row operators

DEFAULT_TASKS = {
    "scaled_softmax": {"name": "scaled_softmax-8x2048x4096", "operator": "scaled_softmax",
                       "dtype": "bf16", "shapes": {"x": [8, 2048, 4096]},
                       "params": {"scale": 0.125}, "target": "cuda"},
    "rmsnorm": {"name": "rmsnorm-16384x4096", "operator": "rmsnorm", "dtype": "bf16",
                "shapes": {"x": [16384, 4096]}, "params": {"eps": 1e-6}, "target": "cuda"},
    "layernorm": {"name": "layernorm-16384x4096", "operator": "layernorm", "dtype": "bf16",
                  "shapes": {"x": [16384, 4096]}, "params": {"eps": 1e-5}, "target": "cuda"},
    "add_rmsnorm": {"name": "add_rmsnorm-16384x4096", "operator": "add_rmsnorm",
                    "dtype": "bf16", "shapes": {"x": [16384, 4096]}, "params": {"eps": 1e-6},
                    "target": "cuda"},
    "swiglu": {"name": "swiglu-16384x14336", "operator": "swiglu", "dtype": "bf16",
               "shapes": {"g": [16384, 14336]}, "target": "cuda"},
    "gemm": {"name": "gemm-4096", "operator": "gemm", "dtype": "bf16",
             "shapes": {"A": [4096, 4096], "B": [4096, 4096]}, "target": "cuda"},
}

DTYPES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "f64": "float64"}
DTYPE_BYTES = {"bf16": 2, "f16": 2, "f32": 4, "f64": 8}

# kevo's default comparisons: row operators per dtype (f32 per operator), gemm
# with atol scaled by K.
ROW_TOL = {"bf16": (1e-5, 1.6e-2), "f16": (1e-5, 2e-3), "f64": (1e-12, 1e-10)}
ROW_TOL_F32 = {"scaled_softmax": (1e-7, 1e-4)}  # others: (1e-6, 1e-5)
GEMM_TOL = {"bf16": (1e-3, 1.6e-2), "f16": (1e-4, 2e-3), "f32": (5e-7, 1e-5),
            "f64": (1e-14, 1e-12)}  # atol per unit of K, rtol
GEMM_SWIGLU_TOL = {"bf16": (4e-7, 1.6e-2), "f16": (4e-7, 2e-3), "f32": (4e-7, 1e-5),
                   "f64": (1e-14, 1e-12)}  # atol per unit of K, rtol (operators/gemm_swiglu.cpp says why)


def say(*args):
    print(*args, flush=True)


class BadInput(Exception):
    """Bad CLI or config input: one line on stderr, exit status 2."""


# ---------------------------------------------------------------- task setup

class Task:
    def __init__(self, config, source, scale_down=1):
        where = source
        if not isinstance(config, dict):
            raise BadInput(f"{where}: $: expected a JSON object")
        op = config.get("operator")
        if op not in OPERATORS:
            raise BadInput(f"{where}: $.operator: expected one of {', '.join(OPERATORS)}, "
                           f"got {op!r}")
        self.operator = op
        self.spec = OPERATORS[op]
        self.source = source
        self.dtype_name = config.get("dtype", "f32")
        if self.dtype_name not in DTYPES:
            raise BadInput(f"{where}: $.dtype: expected one of {', '.join(DTYPES)}, "
                           f"got {self.dtype_name!r}")
        self.target = config.get("target", "cpu")
        comp = config.get("compile") or {}
        if not isinstance(comp, dict):
            raise BadInput(f"{where}: $.compile: expected an object")
        # As kevo builds a cuda candidate (configs/defaults.json).
        self.arch = comp.get("arch", "sm_90a")
        self.flags = list(comp.get("flags", ["-O3", "-lineinfo"])) + list(comp.get("extra_flags", []))
        given = config.get("shapes")
        if not isinstance(given, dict) or not given:
            raise BadInput(f"{where}: $.shapes: expected an object of tensor shapes")
        for name, shape in given.items():
            if (not isinstance(shape, list) or not shape
                    or not all(isinstance(d, int) and not isinstance(d, bool) for d in shape)):
                raise BadInput(f"{where}: $.shapes.{name}: expected a list of integers")
            for i, d in enumerate(shape):
                if d < 1:
                    raise BadInput(f"{where}: $.shapes.{name}[{i}]: expected a size >= 1")
        self.scale_down = scale_down
        if scale_down > 1:
            given = {k: [max(1, d // scale_down) if d >= 256 else d for d in v]
                     for k, v in given.items()}
        self.shapes = derive_shapes(op, given, where)
        params = config.get("params", {}) or {}
        if not isinstance(params, dict):
            raise BadInput(f"{where}: $.params: expected an object")
        self.params = dict(self.spec["scalars"])
        for k, v in params.items():
            if k not in self.params:
                raise BadInput(f"{where}: $.params.{k}: unknown scalar (expected one of: "
                               f"{', '.join(self.params) or 'none'})")
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                raise BadInput(f"{where}: $.params.{k}: expected a number")
            self.params[k] = float(v)
        self.atol, self.rtol = self._tolerance(config.get("compare"), where)
        timing = config.get("timing") or {}
        self.l2 = timing.get("l2", "dirty") if isinstance(timing, dict) else "dirty"
        if self.l2 not in ("dirty", "clean"):
            raise BadInput(f"{where}: $.timing.l2: expected \"dirty\" or \"clean\", got {self.l2!r}")
        base = config.get("name") or f"{op}-" + "x".join(
            str(d) for d in self.shapes[self.spec["inputs"][0]])
        self.name = base + (f"/{scale_down}" if scale_down > 1 else "")

    def _tolerance(self, compare, where):
        if compare is not None:
            if not (isinstance(compare, str) and compare.startswith("tol:")):
                raise BadInput(f"{where}: $.compare: this script takes only \"tol:ATOL,RTOL\"")
            try:
                a, r = (float(s) for s in compare[4:].split(","))
            except ValueError:
                raise BadInput(f"{where}: $.compare: expected \"tol:ATOL,RTOL\"") from None
            return a, r
        dt = self.dtype_name
        if self.operator in ("gemm", "gemm_swiglu"):
            a, r = (GEMM_TOL if self.operator == "gemm" else GEMM_SWIGLU_TOL)[dt]
            return a * self.shapes["A"][1], r
        if dt == "f32":
            return ROW_TOL_F32.get(self.operator, (1e-6, 1e-5))
        return ROW_TOL[dt]

    @property
    def elem_bytes(self):
        return DTYPE_BYTES[self.dtype_name]

    def bytes_moved(self):
        names = self.spec["inputs"] + self.spec["outputs"]
        return sum(math.prod(self.shapes[n]) for n in names) * self.elem_bytes

    def flops(self):
        if self.operator == "gemm":
            (m, k), n = self.shapes["A"], self.shapes["B"][1]
            return 2.0 * m * n * k
        if self.operator == "gemm_swiglu":
            (m, k), n = self.shapes["A"], self.shapes["Wg"][1]
            return 4.0 * m * n * k + 5.0 * m * n
        return None

    def describe(self):
        shapes = ", ".join(f"{n} {self.shapes[n]}" for n in self.spec["inputs"])
        params = "".join(f", {k} {v:g}" for k, v in self.params.items())
        return f"{self.operator}, {self.dtype_name}, {shapes}{params}"


def derive_shapes(op, given, where):
    """All tensor shapes (inputs and outputs) from the given ones, as kevo binds them."""
    spec = OPERATORS[op]
    names = spec["inputs"] + spec["outputs"]
    for name in given:
        if name not in names:
            raise BadInput(f"{where}: $.shapes.{name}: unknown tensor for {op} "
                           f"(expected one of: {', '.join(names)})")
    if op == "gemm":
        for name in ("A", "B"):
            if name not in given:
                raise BadInput(f"{where}: $.shapes.{name}: missing: gemm needs the shapes "
                               f"of A [M, K] and B [K, N]")
            if len(given[name]) != 2:
                raise BadInput(f"{where}: $.shapes.{name}: expected rank 2, "
                               f"got {given[name]}")
        a, b = given["A"], given["B"]
        if a[1] != b[0]:
            raise BadInput(f"{where}: $.shapes.B: inner dimensions differ: A {a} and B {b}")
        c = [a[0], b[1]]
        if "C" in given and given["C"] != c:
            raise BadInput(f"{where}: $.shapes.C: shape {given['C']} does not match {c} "
                           f"= [M, N]")
        return {"A": list(a), "B": list(b), "C": c}
    if op == "gemm_swiglu":
        for name in ("A", "Wg"):
            if name not in given:
                raise BadInput(f"{where}: $.shapes.{name}: missing: gemm_swiglu needs the shapes "
                               f"of A [M, K] and Wg [K, N]")
            if len(given[name]) != 2:
                raise BadInput(f"{where}: $.shapes.{name}: expected rank 2, got {given[name]}")
        a, w = given["A"], given["Wg"]
        if a[1] != w[0]:
            raise BadInput(f"{where}: $.shapes.Wg: inner dimensions differ: A {a} and Wg {w}")
        shapes = {"A": list(a), "Wg": list(w), "Wu": list(w), "y": [a[0], w[1]]}
        for name in ("Wu", "y"):
            if name in given and given[name] != shapes[name]:
                raise BadInput(f"{where}: $.shapes.{name}: shape {given[name]} does not match "
                               f"{shapes[name]}")
        return shapes
    first = spec["inputs"][0]
    if first not in given:
        raise BadInput(f"{where}: $.shapes.{first}: missing: {op} needs the shape of {first}")
    x = list(given[first])
    if not 2 <= len(x) <= 8:
        raise BadInput(f"{where}: $.shapes.{first}: expected rank 2 to 8 ([rows..., N]), "
                       f"got {x}")
    shapes = {n: ([x[-1]] if n in VECTOR_TENSORS else list(x)) for n in names}
    for name, shape in given.items():
        if shape != shapes[name]:
            raise BadInput(f"{where}: $.shapes.{name}: expected {shapes[name]} "
                           f"(from {first} {x}), got {shape}")
    return shapes


def load_config(path, scale_down=1):
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except OSError as e:
        raise BadInput(f"{path}: cannot read: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise BadInput(f"{path}: not JSON: line {e.lineno} column {e.colno}: {e.msg}") from None
    return Task(config, path, scale_down)


# ------------------------------------------------------------ inputs, peers

YARDSTICKS = ("copy", "read")  # peers that move the task's bytes and compute nothing


def copy_elements(task):
    """Elements of each of the copy yardstick's two buffers: together they move
    the task's bytes (one read, one written), a multiple of 8 (16 bytes of bf16)."""
    n = task.bytes_moved() // 2 // task.elem_bytes
    return max(8, n // 8 * 8)


def read_elements(task):
    """Elements of the read yardstick's one buffer: the task's bytes, a multiple of 8."""
    n = task.bytes_moved() // task.elem_bytes
    return max(8, n // 8 * 8)


_READ_KERNEL = None


def triton_read_kernel():
    """A Triton kernel that reads n elements once in BLOCK strides per program and
    writes one fp32 sum per program; None where Triton does not import."""
    global _READ_KERNEL  # noqa: PLW0603 (built once per process)
    if _READ_KERNEL is None:
        try:
            import triton  # noqa: PLC0415 (optional)
            import triton.language as tl  # noqa: PLC0415
        except Exception:  # noqa: BLE001
            _READ_KERNEL = False
            return None

        @triton.jit
        def read_once(x_ptr, sink_ptr, n, BLOCK: tl.constexpr):
            pid = tl.program_id(0)
            step = tl.num_programs(0) * BLOCK
            acc = tl.zeros([BLOCK], dtype=tl.float32)
            for start in range(pid * BLOCK, n, step):
                offs = start + tl.arange(0, BLOCK)
                acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
            tl.store(sink_ptr + pid, tl.sum(acc, axis=0))

        _READ_KERNEL = read_once
    return _READ_KERNEL or None


def read_yardstick(n, dtype, device, timer, picks=7):
    """(call, what): the fastest of a few read-only streams over one buffer of n
    elements, each timed `picks` times through timer.call (same flush and cover
    as the peers) and compared by its median."""
    src = torch.ones(n, dtype=dtype, device=device)
    sink = torch.zeros((), dtype=torch.float32, device=device)
    cands = [(f"torch.sum(src, dtype=float32), {n} elements",
              lambda: torch.sum(src, dim=0, dtype=torch.float32, out=sink))]
    kernel = triton_read_kernel() if device.type == "cuda" else None
    if kernel is not None:
        sms = torch.cuda.get_device_properties(device).multi_processor_count
        sinks = torch.zeros(max(64 * sms, -(-n // 2048)), dtype=torch.float32, device=device)
        for block in (2048, 4096, 8192):
            # grids of 8 to 64 programs an SM loop over the buffer; the last,
            # a program per block, is the plain elementwise launch
            for mult in (8, 16, 32, 64, None):
                grid = (mult * sms,) if mult else (-(-n // block),)
                shape = f"grid {mult} x {sms} SMs" if mult else f"a program per block ({grid[0]})"
                cands.append((f"Triton read loop, BLOCK {block}, {shape}, {n} elements",
                              lambda g=grid, b=block: kernel[g](src, sinks, n, BLOCK=b, num_warps=8)))
    best = None
    for what, fn in cands:
        try:
            fn()
            timer.sync()
            us = statistics.median(timer.call(fn, ())[0] for _ in range(picks)) * 1e6
        except Exception as e:  # noqa: BLE001 (a stream that fails is not a candidate)
            say(f"   read yardstick: {what}: {type(e).__name__}: {e}")
            continue
        if best is None or us < best[0]:
            best = (us, what, fn)
    if best is None:
        raise RuntimeError("no read-only stream ran")

    def read_same_bytes(*_args, _fn=best[2]):
        return _fn()
    return read_same_bytes, (f"{best[1]}: the task's {n * src.element_size()} bytes read once "
                             f"(a yardstick, not checked; fastest of {len(cands)} streams, "
                             f"{best[0]:.2f} us at the pick)")


def make_inputs(task, device, seed):
    """Inputs by kevo's laws, from a torch.Generator per tensor, rounded to the dtype."""
    dtype = getattr(torch, DTYPES[task.dtype_name])
    gen_dtype = torch.float64 if task.dtype_name == "f64" else torch.float32
    inputs = {}
    for i, name in enumerate(task.spec["inputs"]):
        lo, hi, period, step = task.spec["laws"][i]
        shape = task.shapes[name]
        gen = torch.Generator(device=device)
        gen.manual_seed(seed * 1_000_003 + 7919 * i + 17)
        t = torch.rand(shape, generator=gen, device=device, dtype=gen_dtype)
        t.mul_(hi - lo).add_(lo)
        if period:
            n = shape[-1]
            rows = t.numel() // n
            offset = (torch.arange(rows, device=device) % period).to(gen_dtype) * step
            t.view(rows, n).add_(offset[:, None])
        inputs[name] = t.to(dtype)
        del t
    return [inputs[n] for n in task.spec["inputs"]]


def peer_function(task):
    """The eager function of the task; torch.compile wraps this same function."""
    op, p = task.operator, task.params
    if op == "scaled_softmax":
        scale = p["scale"]

        def scaled_softmax(x):
            return torch.softmax(x * scale, dim=-1)
        return scaled_softmax
    if op == "rmsnorm":
        eps = p["eps"]

        def rmsnorm(x, w):
            return F.rms_norm(x, (x.shape[-1],), w, eps)
        return rmsnorm
    if op == "layernorm":
        eps = p["eps"]

        def layernorm(x, w, b):
            return F.layer_norm(x, (x.shape[-1],), w, b, eps)
        return layernorm
    if op == "add_rmsnorm":
        eps = p["eps"]

        def add_rmsnorm(x, r, w):
            h = x + r
            return h, F.rms_norm(h, (h.shape[-1],), w, eps)
        return add_rmsnorm
    if op == "swiglu":
        def swiglu(g, u):
            return F.silu(g) * u
        return swiglu
    if op == "gemm":
        def gemm(a, b):
            return torch.matmul(a, b)
        return gemm
    if op == "gemm_swiglu":
        def gemm_swiglu(a, wg, wu):
            return F.silu(torch.matmul(a, wg)) * torch.matmul(a, wu)
        return gemm_swiglu
    raise AssertionError(op)


def reference(task, inputs):
    """The task's formula in fp64 on the inputs' device; a tuple of outputs."""
    d = [t.double() for t in inputs]
    op, p = task.operator, task.params

    def rms(h, w):
        return h * torch.rsqrt(h.square().mean(dim=-1, keepdim=True) + p["eps"]) * w

    if op == "scaled_softmax":
        return (torch.softmax(d[0] * p["scale"], dim=-1),)
    if op == "rmsnorm":
        return (rms(d[0], d[1]),)
    if op == "layernorm":
        x, w, b = d
        mean = x.mean(dim=-1, keepdim=True)
        var = (x - mean).square().mean(dim=-1, keepdim=True)
        return ((x - mean) * torch.rsqrt(var + p["eps"]) * w + b,)
    if op == "add_rmsnorm":
        # h is an output in the task dtype; y is the norm of that stored h (as kevo).
        h = (d[0] + d[1]).to(inputs[0].dtype).double()
        return (h, rms(h, d[2]))
    if op == "swiglu":
        g, u = d
        return (g / (1.0 + torch.exp(-g)) * u,)
    if op == "gemm":
        return (d[0] @ d[1],)
    if op == "gemm_swiglu":
        g, u = d[0] @ d[1], d[0] @ d[2]
        return (g / (1.0 + torch.exp(-g)) * u,)
    raise AssertionError(op)


def check(task, got, ref):
    """Compare a peer's outputs with the fp64 reference, in chunks to bound memory."""
    if not isinstance(got, (tuple, list)):
        got = (got,)
    report = {"ok": True, "atol": task.atol, "rtol": task.rtol, "outputs": {}}
    if len(got) != len(ref):
        report.update(ok=False, problem=f"{len(got)} outputs, expected {len(ref)}")
        return report
    chunk = 1 << 25
    for name, g, r in zip(task.spec["outputs"], got, ref):
        out = {"shape": list(g.shape), "dtype": str(g.dtype).replace("torch.", "")}
        report["outputs"][name] = out
        if list(g.shape) != list(r.shape):
            out["problem"] = f"shape {list(g.shape)}, expected {list(r.shape)}"
            report["ok"] = False
            continue
        gf, rf = g.reshape(-1), r.reshape(-1)
        sq_err = sq_ref = max_abs = worst = 0.0
        n_bad = n_nonfinite = 0
        for s in range(0, gf.numel(), chunk):
            gd, rd = gf[s:s + chunk].double(), rf[s:s + chunk]
            diff = (gd - rd).abs()
            nonfinite = ~torch.isfinite(gd)
            n_nonfinite += int(nonfinite.sum())
            diff = torch.where(nonfinite, torch.full_like(diff, math.inf), diff)
            bound = task.atol + task.rtol * rd.abs()
            sq_err += float(diff.square().sum())
            sq_ref += float(rd.square().sum())
            max_abs = max(max_abs, float(diff.max()))
            worst = max(worst, float((diff / bound).max()))
            n_bad += int((diff > bound).sum())
        out.update(rel_l2=math.sqrt(sq_err / sq_ref) if sq_ref > 0 else math.sqrt(sq_err),
                   max_abs=max_abs, worst_over_tol=worst, n_bad=n_bad,
                   n_nonfinite=n_nonfinite, n=gf.numel())
        if n_bad or n_nonfinite:
            report["ok"] = False
    return report


def check_summary(report):
    if report is None:
        return "check -"
    outs = report["outputs"]
    if "problem" in report:
        return f"check FAIL ({report['problem']})"
    parts = []
    for name, o in outs.items():
        if "problem" in o:
            parts.append(f"{name}: {o['problem']}")
        else:
            bad = f", {o['n_bad']} over tol" if o["n_bad"] else ""
            parts.append(f"{name} rel_l2 {o['rel_l2']:.1e} max_abs {o['max_abs']:.1e}{bad}")
    tag = "ok" if report["ok"] else "FAIL"
    return f"check {tag} ({'; '.join(parts)})"


# ------------------------------------------------------------------- timing

def quantile(sorted_samples, q):
    """Linear interpolation between closest ranks (type 7), as kevo computes it."""
    pos = q * (len(sorted_samples) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_samples) - 1)
    return sorted_samples[lo] + (sorted_samples[hi] - sorted_samples[lo]) * (pos - lo)


def cpu_l2_bytes():
    try:
        size = os.sysconf("SC_LEVEL2_CACHE_SIZE")
    except (ValueError, OSError, AttributeError):
        size = 0
    return size if size and size > 0 else 2 << 20


FLUSH_HOW = {"write": "zero_ a uint8 buffer of 2 x L2 bytes",
             "read": "sum a buffer of 2 x L2 bytes as int64 into one word"}


class Timer:
    """One timed call: sync, flush L2, [cover], event, call, event (perf_counter on CPU)."""

    def __init__(self, device, cover_us=0.0, flush_mode="write"):
        self.device = device
        self.flush_mode = flush_mode
        self.cuda = device.type == "cuda"
        self.gpu_state = gpu_state_of(device)  # read after each round's samples
        if self.cuda:
            props = torch.cuda.get_device_properties(device)
            self.l2_bytes = int(getattr(props, "L2_cache_size", 0) or 0)
            self.l2_source = "torch.cuda.get_device_properties().L2_cache_size"
            if self.l2_bytes <= 0:
                self.l2_bytes = 128 << 20
                self.l2_source = "unknown: assumed 128 MiB"
            self.start = torch.cuda.Event(enable_timing=True)
            self.end = torch.cuda.Event(enable_timing=True)
        else:
            self.l2_bytes = cpu_l2_bytes()
            self.l2_source = "os.sysconf(SC_LEVEL2_CACHE_SIZE) (or 2 MiB)"
        self.flush_bytes = 2 * self.l2_bytes
        self.flush_buf = torch.zeros(self.flush_bytes, dtype=torch.uint8, device=device)
        # read: sum the buffer as int64 words into one preallocated word, so the
        # L2 is left holding clean lines of the buffer and nothing to write back.
        self.flush_words = self.flush_buf.view(torch.int64)
        self.flush_sink = torch.zeros((), dtype=torch.int64, device=device)
        self.cover_us = cover_us if self.cuda else 0.0
        self.cover_cycles = 0
        self.flush_us_by_mode = {}
        if self.cuda:
            if self.cover_us > 0:
                cycles = 1_000_000
                us = statistics.median(self._gpu_us(lambda: torch.cuda._sleep(cycles))
                                       for _ in range(5))
                self.cover_cycles = int(cycles * self.cover_us / us)

    @property
    def flush_us(self):
        """How long the current flush keeps the GPU busy (None on cpu): host time
        spent in the call beyond this shows up in the sample (GPU idle after the
        start event). Measured once per flush mode, the median of 11."""
        if not self.cuda:
            return None
        if self.flush_mode not in self.flush_us_by_mode:
            self.flush_us_by_mode[self.flush_mode] = statistics.median(
                self._gpu_us(self.flush) for _ in range(11))
        return self.flush_us_by_mode[self.flush_mode]

    def _gpu_us(self, work):
        torch.cuda.synchronize(self.device)
        self.start.record()
        work()
        self.end.record()
        self.end.synchronize()
        return self.start.elapsed_time(self.end) * 1e3

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize(self.device)

    def flush(self):
        """Evicts the L2 (the CPU's L2 on cpu) through a buffer of twice its size:
        write zero_()s it, which leaves the L2 full of dirty lines that the timed
        call pays to write back; read sums it, which leaves clean lines."""
        if self.flush_mode == "read":
            torch.sum(self.flush_words, dim=0, out=self.flush_sink)
        else:
            self.flush_buf.zero_()

    def call(self, fn, args):
        """(seconds timed, seconds the host spent in fn) of one call after an L2 flush."""
        if self.cuda:
            torch.cuda.synchronize(self.device)
            self.flush()
            if self.cover_cycles:
                torch.cuda._sleep(self.cover_cycles)
            self.start.record()
            t0 = time.perf_counter()
            fn(*args)
            host = time.perf_counter() - t0
            self.end.record()
            self.end.synchronize()
            return self.start.elapsed_time(self.end) * 1e-3, host
        self.flush()
        t0 = time.perf_counter()
        fn(*args)
        host = time.perf_counter() - t0
        return host, host


class GpuState:
    """The GPU's clocks, power and temperature now, through the driver's NVML
    (libnvidia-ml.so.1, loaded with ctypes), as kevo's runner reads them for
    its samples: read() gives {} where there is no NVML or no such device."""

    CLOCK_SM, CLOCK_MEM, TEMP_GPU = 1, 2, 0  # nvmlClockType_t, nvmlTemperatureSensors_t

    def __init__(self, uuid=None, index=0, lib_name="libnvidia-ml.so.1"):
        self.lib, self.handle = None, None
        if not lib_name:
            return
        try:
            lib = ctypes.CDLL(lib_name)
            if lib.nvmlInit_v2() != 0:
                return
            handle = ctypes.c_void_p()
            found = False
            if uuid:
                found = lib.nvmlDeviceGetHandleByUUID(uuid.encode(), ctypes.byref(handle)) == 0
            if not found:
                found = lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(index), ctypes.byref(handle)) == 0
            if found:
                self.lib, self.handle = lib, handle
        except (OSError, AttributeError):
            pass

    def read(self):
        if self.handle is None:
            return {}
        out, v = {}, ctypes.c_uint()
        if self.lib.nvmlDeviceGetClockInfo(self.handle, self.CLOCK_SM, ctypes.byref(v)) == 0:
            out["sm_mhz"] = v.value
        if self.lib.nvmlDeviceGetClockInfo(self.handle, self.CLOCK_MEM, ctypes.byref(v)) == 0:
            out["mem_mhz"] = v.value
        if self.lib.nvmlDeviceGetPowerUsage(self.handle, ctypes.byref(v)) == 0:
            out["power_w"] = v.value / 1000.0
        if self.lib.nvmlDeviceGetTemperature(self.handle, self.TEMP_GPU, ctypes.byref(v)) == 0:
            out["gpu_temp_c"] = v.value
        return out


def gpu_state_of(device):
    """The GpuState of a torch device (matched by its UUID where torch gives one)."""
    if device.type != "cuda":
        return GpuState(lib_name=None)
    uuid = getattr(torch.cuda.get_device_properties(device), "uuid", None)
    uuid = f"GPU-{uuid}" if uuid is not None and not str(uuid).startswith("GPU-") else uuid
    return GpuState(str(uuid) if uuid is not None else None, device.index or 0)


def measure(timer, fn, args, opts):
    warm_calls = 0
    t0 = time.perf_counter()
    while warm_calls < opts.min_warmup or time.perf_counter() - t0 < opts.warmup_ms * 1e-3:
        timer.call(fn, args)
        warm_calls += 1
    warm_s = time.perf_counter() - t0
    samples, host, timed = [], [], 0.0
    while ((len(samples) < opts.min_samples or timed < opts.min_time_ms * 1e-3)
           and len(samples) < opts.max_samples):
        s, h = timer.call(fn, args)
        samples.append(s)
        host.append(h)
        timed += s
    if opts.profile_calls and timer.cuda:
        # Calls for a profiler started with --profile-from-start off (ncu, nsys):
        # only these, done exactly like timed calls, fall inside the range.
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()
        for _ in range(opts.profile_calls):
            timer.call(fn, args)
        torch.cuda.cudart().cudaProfilerStop()
    ordered = sorted(samples)
    return {
        "machine": timer.gpu_state.read(),
        "median_us": quantile(ordered, 0.5) * 1e6,
        "p20_us": quantile(ordered, 0.2) * 1e6,
        "p80_us": quantile(ordered, 0.8) * 1e6,
        "n": len(samples),
        "timed_s": timed,
        "warmup_calls": warm_calls,
        "warmup_s": warm_s,
        "host_median_us": statistics.median(host) * 1e6,
        "samples_us": [s * 1e6 for s in samples],  # in the order taken
    }


def rate(task, us, moved_only=False):
    """GB/s (or TFLOP/s for gemm, unless moved_only) at a time in microseconds."""
    if us is None or us <= 0:
        return None, ""
    if task.flops() is not None and not moved_only:
        v = task.flops() / (us * 1e-6) / 1e12
        return v, f"{v:8.1f} TFLOP/s"
    v = task.bytes_moved() / (us * 1e-6) / 1e9
    return v, f"{v:8.1f} GB/s"


# ---------------------------------------------------------------- running

def environment(device):
    env = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "hostname": socket.gethostname(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "device": str(device),
        "env": {k: v for k, v in os.environ.items()
                if k.startswith(("TORCHINDUCTOR_", "TORCH_", "CUDA_", "TRITON_"))},
    }
    try:
        import triton  # noqa: PLC0415 (optional)
        env["triton"] = triton.__version__
    except Exception:  # noqa: BLE001
        env["triton"] = None
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        env["gpu"] = {
            "name": props.name,
            "capability": f"{props.major}.{props.minor}",
            "multiprocessors": props.multi_processor_count,
            "memory_bytes": props.total_memory,
            "l2_cache_bytes": getattr(props, "L2_cache_size", None),
        }
        env["cudnn"] = torch.backends.cudnn.version()
        env["matmul"] = {
            "allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "allow_bf16_reduced_precision_reduction":
                torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
        }
        try:
            q = subprocess.run(
                ["nvidia-smi", f"--id={device.index or 0}",
                 "--query-gpu=driver_version,clocks.sm,clocks.max.sm,clocks.mem,"
                 "temperature.gpu,power.draw", "--format=csv,noheader"],
                capture_output=True, text=True, timeout=15, check=False)
            if q.returncode == 0:
                env["nvidia_smi"] = ("driver, sm clock, max sm clock, mem clock, temp, power: "
                                     + q.stdout.strip())
        except (OSError, subprocess.SubprocessError):
            pass
    return env


KEVO_DTYPES = {"f32": 0, "f64": 1, "f16": 2, "bf16": 3}
KEVO_MAX_RANK = 8


class KevoTensor(ctypes.Structure):
    """kevo_tensor of targets/abi/kevo_kernel.h."""
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("shape", ctypes.c_int64 * KEVO_MAX_RANK),
                ("stride", ctypes.c_int64 * KEVO_MAX_RANK)]


def kevo_descriptor(t):
    if t.dim() > KEVO_MAX_RANK or not t.is_contiguous():
        raise BadInput("kevo peer: tensors must be contiguous, rank <= 8")
    d = KevoTensor()
    d.data = t.data_ptr()
    d.dtype = KEVO_DTYPES[{torch.bfloat16: "bf16", torch.float16: "f16", torch.float32: "f32",
                           torch.float64: "f64"}[t.dtype]]
    d.rank = t.dim()
    for i, (n, st) in enumerate(zip(t.shape, t.stride())):
        d.shape[i], d.stride[i] = n, st
    return d


def kevo_peer(task, kevo_dir, workdir, cuda_only=False):
    """kevo's best kernel for `task` as a function like the peers': builds
    DIR/<config name>.best.cu into a shared library with kevo's nvcc flags and
    returns a function that allocates the outputs and calls kevo_launch."""
    stem = os.path.splitext(os.path.basename(task.source))[0]
    src = os.path.join(kevo_dir, stem + ".best.cu")
    triton_src = os.path.join(kevo_dir, stem + ".best.py")
    if not cuda_only and not os.path.isfile(src) and os.path.isfile(triton_src):
        call = kevo_triton_kernel(task, triton_src)
        call.kevo_source = triton_src
        return call
    if not os.path.isfile(src):
        raise BadInput(f"kevo peer: no {src} (kevo run CONFIG -o {src} writes it)")
    call = kevo_kernel(task, src, {}, workdir, stem)
    call.kevo_source = src
    return call


def source_record(path):
    """What names the kernel a kevo peer timed: its file and the SHA-256 of its
    bytes. bench/peers_verdict.py pools two calls' rounds into one verdict only
    where this hash matches (or neither call has one), so a repeat that timed
    another kernel (a later search's best, say) is never read as a repeat."""
    with open(path, "rb") as f:
        return {"source": path, "source_sha256": hashlib.sha256(f.read()).hexdigest()}


# While a kevo kernel's output is checked, kevo_outputs fills the outputs it
# hands the kernel with NaN (integers: -1) instead of leaving them as
# torch.empty found them: the caching allocator often hands back the block
# of the call before, which held a correct answer (eager's, or the same
# kernel's), so a kernel that leaves an output or part of one unwritten would
# pass. Timed calls keep torch.empty, as a peer's own allocation does.
_POISON = [False]


class poisoned_outputs:
    """`with poisoned_outputs(): out = call(*inputs)`: the check's call."""

    def __enter__(self):
        _POISON[0] = True
        return self

    def __exit__(self, *exc):
        _POISON[0] = False
        return False


def kevo_outputs(task, names, like):
    """The outputs a kevo kernel is handed: torch.empty, or poisoned while checking."""
    outs = []
    for n in names:
        if not _POISON[0]:
            outs.append(torch.empty(task.shapes[n], dtype=like.dtype, device=like.device))
            continue
        fill = math.nan if like.dtype.is_floating_point else -1
        outs.append(torch.full(task.shapes[n], fill, dtype=like.dtype, device=like.device))
    return outs


def kevo_triton_kernel(task, src):
    """A kevo Triton kernel (`kevo run -o BEST.py` writes it, knobs as module
    globals) wrapped as a function like the peers': it allocates the outputs
    and calls the module's kevo_launch(inputs, outputs, scalars)."""
    with open(src) as f:
        code = compile(f.read(), src, "exec")
    module = {"__name__": "kevo_best", "__file__": src}
    exec(code, module)
    launch = module["kevo_launch"]
    names = task.spec["outputs"]
    scalars = tuple(float(task.params[k]) for k in task.spec["scalars"])

    def kevo(*inputs):
        outs = tuple(kevo_outputs(task, names, inputs[0]))
        rc = launch(inputs, outs, scalars)
        if rc not in (None, 0):
            raise RuntimeError(f"kevo_launch returned {rc}")
        return outs[0] if len(outs) == 1 else outs
    kevo.__name__ = f"kevo:{os.path.basename(src)}"
    return kevo


def shape_defines(task):
    """The task's shapes as kevo passes them to the compiler (targets/target.h,
    shape_defines): KEVO_RANK_t, KEVO_DIM_t_d and KEVO_LAST_t for each tensor t,
    inputs then outputs, so that a kernel's fast path for the task's shape is
    built here as in kevo."""
    out = []
    for name in task.spec["inputs"] + task.spec["outputs"]:
        s = task.shapes[name]
        out.append(f"KEVO_RANK_{name}={len(s)}")
        out += [f"KEVO_DIM_{name}_{d}={n}" for d, n in enumerate(s)]
        out.append(f"KEVO_LAST_{name}={s[-1]}")
    return out


def kevo_lib_name(label, cmd, source):
    """The shared library's file name for one build: the label and a digest of
    the compile command and the source text. ctypes (dlopen) hands back the
    library already loaded from a path, so two kernels built to one path (the
    kevo and kevo_cuda peers of one task, or a rebuilt source) would both call
    the first one."""
    h = hashlib.sha256("\0".join(cmd).encode() + b"\0" + source).hexdigest()[:16]
    return f"{label}.{h}.kevo.so"


def kevo_nvcc_command(task, src, knobs, output_kind):
    """The nvcc command that builds a kevo kernel source (a best kernel, or a
    family file with `knobs` as -D defines) for the task as kevo builds it:
    kevo's flags and arch, the task's shape defines, kevo's include paths.
    output_kind: "shared" (a library with kevo_launch) or "cubin" (the device
    code alone, for reading its SASS). The output path is left to the caller."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    a = task.arch
    # kevo's form: -arch=sm_90a also runs a plain sm_90 pass that rejects wgmma.
    arch = f"-gencode=arch=compute_{a[3:]},code=sm_{a[3:]}" if a.startswith("sm_") else f"-arch={a}"
    kind = {"shared": ["-shared", "-Xcompiler", "-fPIC", "-cudart", "shared"], "cubin": ["-cubin"]}[output_kind]
    return [os.environ.get("NVCC", "nvcc"), arch, *task.flags, "-std=c++17", *kind,
            *[f"-D{k}={v}" for k, v in sorted(knobs.items())],
            *[f"-D{d}" for d in shape_defines(task)],
            "-I" + os.path.join(root, "targets", "abi"),
            "-I" + os.path.join(root, "targets", "cuda", "include"), src]


def kevo_kernel(task, src, knobs, workdir, label):
    """A kevo kernel source (a best kernel, or a family file with `knobs` as
    -D defines) built with kevo's nvcc flags into WORKDIR/<label>.kevo.so and
    wrapped as a function like the peers'."""
    cmd = kevo_nvcc_command(task, src, knobs, "shared")
    with open(src, "rb") as f:
        lib_path = os.path.join(workdir, kevo_lib_name(label, cmd, f.read()))
    cmd += ["-o", lib_path]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"nvcc failed on {src}: {(r.stderr or r.stdout).strip()[-400:]}")
    lib = ctypes.CDLL(lib_path)
    launch = lib.kevo_launch
    launch.restype = ctypes.c_int
    launch.argtypes = [ctypes.POINTER(KevoTensor), ctypes.c_int, ctypes.POINTER(KevoTensor),
                       ctypes.c_int, ctypes.POINTER(ctypes.c_double), ctypes.c_int, ctypes.c_void_p]
    names = task.spec["outputs"]
    scalars = [task.params[k] for k in task.spec["scalars"]]
    sc = (ctypes.c_double * max(1, len(scalars)))(*scalars)

    def kevo(*inputs):
        outs = kevo_outputs(task, names, inputs[0])
        ins = (KevoTensor * len(inputs))(*[kevo_descriptor(t) for t in inputs])
        od = (KevoTensor * len(outs))(*[kevo_descriptor(t) for t in outs])
        rc = launch(ins, len(inputs), od, len(outs), sc if scalars else None, len(scalars),
                    ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        if rc != 0:
            raise RuntimeError(f"kevo_launch returned {rc}")
        return outs[0] if len(outs) == 1 else tuple(outs)
    kevo.__name__ = f"kevo:{os.path.basename(src)}"
    return kevo


def task_flush(task, opts):
    """--flush when given, else as the config's timing.l2 says (kevo's runner does the same)."""
    return opts.flush or ("read" if task.l2 == "clean" else "write")


def run_task(task, device, opts, timer):
    """Measure the task's peers; returns its JSON record. Errors are per peer."""
    timer.flush_mode = task_flush(task, opts)
    say(f"== {task.name} ({task.describe()}); {task.bytes_moved() / 1e6:.1f} MB moved"
        + (f", {task.flops() / 1e9:.1f} GFLOP" if task.flops() else "")
        + f"; L2 flushed by {'reading' if timer.flush_mode == 'read' else 'writing'}"
        + (f" ({timer.flush_us:.0f} us on the GPU)" if timer.flush_us else "")
        + (f"  [config target {task.target!r}]" if task.target not in ("cuda", device.type)
           else ""))
    record = {
        "name": task.name, "source": task.source, "operator": task.operator,
        "dtype": task.dtype_name, "shapes": task.shapes, "params": task.params,
        "target": task.target, "scale_down": task.scale_down,
        "bytes": task.bytes_moved(), "flops": task.flops(),
        "tolerance": {"atol": task.atol, "rtol": task.rtol}, "flush": timer.flush_mode,
        "peers": {},
    }
    if device.type == "cuda":
        torch.cuda.empty_cache()
    try:
        inputs = make_inputs(task, device, opts.seed)
        timer.sync()
        ref = reference(task, inputs)
        timer.sync()
    except Exception as e:  # noqa: BLE001
        say(f"   inputs/reference failed: {type(e).__name__}: {e}")
        record["error"] = f"{type(e).__name__}: {e}"
        record["traceback"] = traceback.format_exc()
        return record

    fn = peer_function(task)
    peers = {}
    for peer in opts.peers:
        rec = {"peer": peer, "status": "ok", "rounds": []}
        record["peers"][peer] = rec
        try:
            if peer == "eager":
                rec["what"] = f"{fn.__name__} eager"
                call = fn
            elif peer == "kevo":
                call = kevo_peer(task, opts.kevo_dir, opts.workdir)
                rec["what"] = f"{call.__name__} through kevo_launch"
                rec.update(source_record(call.kevo_source))
            elif peer == "kevo_cuda":
                call = kevo_peer(task, opts.kevo_cuda_dir, opts.workdir, cuda_only=True)
                rec["what"] = f"{call.__name__} (CUDA) through kevo_launch"
                rec.update(source_record(call.kevo_source))
            elif peer == "copy":
                n = copy_elements(task)
                src = torch.ones(n, dtype=inputs[0].dtype, device=device)
                dst = torch.empty_like(src)

                def copy_same_bytes(*_args, _src=src, _dst=dst):
                    return _dst.copy_(_src)
                call = copy_same_bytes
                rec["what"] = (f"dst.copy_(src), {n} elements each: the task's "
                               f"{2 * n * task.elem_bytes} bytes moved (a yardstick, not checked)")
            elif peer == "read":
                call, rec["what"] = read_yardstick(read_elements(task), inputs[0].dtype,
                                                   device, timer)
            else:
                rec["what"] = (f"torch.compile({fn.__name__}, mode={COMPILE_MODE!r}, "
                               f"dynamic=False, fullgraph=True)")
                call = torch.compile(fn, mode=COMPILE_MODE, dynamic=False, fullgraph=True)
            timer.sync()
            t0 = time.perf_counter()
            with poisoned_outputs():
                out = call(*inputs)
            timer.sync()
            rec["first_call_s"] = time.perf_counter() - t0
            rec["check"] = None if peer in YARDSTICKS else check(task, out, ref)
            del out
            peers[peer] = call
        except Exception as e:  # noqa: BLE001
            rec.update(status="error", error=f"{type(e).__name__}: {e}",
                       traceback=traceback.format_exc())
            say(f"   {peer:8s} ERROR before timing: {type(e).__name__}: "
                f"{str(e).strip().splitlines()[0] if str(e).strip() else ''}")
    del ref
    if device.type == "cuda":
        torch.cuda.empty_cache()

    for r in range(opts.rounds):
        order = [p for p in opts.peers if p in peers]
        if r % 2 == 1:
            order.reverse()
        for peer in order:
            if peer not in peers:  # failed in an earlier round
                continue
            rec = record["peers"][peer]
            try:
                m = measure(timer, peers[peer], inputs, opts)
                m["round"] = r + 1
                rec["rounds"].append(m)
                if opts.rounds > 1:
                    clocks = m["machine"]
                    say(f"   {peer:8s} round {r + 1}/{opts.rounds}: median {m['median_us']:9.2f} us"
                        f"  p20 {m['p20_us']:9.2f}  p80 {m['p80_us']:9.2f}  n={m['n']}"
                        f"  host {m['host_median_us']:.0f} us"
                        + (f"  SM {clocks['sm_mhz']} MHz" if "sm_mhz" in clocks else ""))
            except Exception as e:  # noqa: BLE001
                rec.update(status="error", error=f"{type(e).__name__}: {e}",
                           traceback=traceback.format_exc())
                say(f"   {peer:8s} ERROR while timing: {type(e).__name__}: {e}")
                del peers[peer]
                if device.type == "cuda":
                    torch.cuda.empty_cache()

    for peer in opts.peers:
        rec = record["peers"][peer]
        rounds = rec["rounds"]
        if rec["status"] == "error" or not rounds:
            if rec["status"] != "error":
                rec.update(status="error", error="no measurement")
            say(f"   {task.name}  {peer:8s} ERROR: {rec.get('error', '')[:300]}")
            continue
        medians = [m["median_us"] for m in rounds]
        if len(rounds) == 1:
            rec.update(median_us=medians[0], p20_us=rounds[0]["p20_us"],
                       p80_us=rounds[0]["p80_us"], n=rounds[0]["n"])
            how = ""
        else:
            pooled = sorted(s for m in rounds for s in m["samples_us"])
            rec.update(median_us=statistics.median(medians), round_medians_us=medians,
                       p20_us=quantile(pooled, 0.2), p80_us=quantile(pooled, 0.8),
                       n=len(pooled))
            how = (f"  (median of {len(rounds)} round medians: "
                   + " ".join(f"{v:.2f}" for v in medians) + "; p20/p80 pooled)")
        moved_only = peer in YARDSTICKS  # they move the bytes and compute nothing
        value, rate_text = rate(task, rec["median_us"], moved_only)
        rec["tflops" if task.flops() is not None and not moved_only else "gbps"] = value
        rec["host_median_us"] = statistics.median(m["host_median_us"] for m in rounds)
        host = ""
        if timer.cuda:
            host = f"  host {rec['host_median_us']:.0f} us"
            # The GPU is kept busy for flush (+ cover) before the start event; a
            # call that takes the host longer leaves the GPU idle inside the sample.
            hidden = timer.flush_us + timer.cover_us
            rec["host_bound"] = rec["host_median_us"] > 0.8 * hidden
            if rec["host_bound"]:
                host += f" > 80% of the {hidden:.0f} us hidden: HOST-BOUND"
        say(f"   {task.name}  {peer:8s} median {rec['median_us']:9.2f} us  "
            f"p20 {rec['p20_us']:9.2f}  p80 {rec['p80_us']:9.2f}  {rate_text}  "
            f"n={rec['n']}{host}  {check_summary(rec.get('check'))}{how}")

    del inputs, peers
    if "compile" in opts.peers:
        try:
            torch._dynamo.reset()
        except Exception:  # noqa: BLE001
            pass
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return record


def write_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, allow_nan=True)
        f.write("\n")
    os.replace(tmp, path)


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Time PyTorch eager and torch.compile peers for kevo's GPU tasks, "
                    "the way kevo times (see the module docstring).")
    ap.add_argument("configs", nargs="*", metavar="CONFIG.json", help="kevo task configs")
    ap.add_argument("--task", action="append", default=[],
                    choices=list(DEFAULT_TASKS) + ["all"],
                    help="a default task (repeatable); 'all' for the six; with neither "
                         "configs nor --task, all six run")
    ap.add_argument("--json", metavar="OUT", help="write every result, samples included, here")
    ap.add_argument("--rounds", type=int, default=1, help="interleave the peers R times (1)")
    ap.add_argument("--peers", default="eager,compile",
                    help="comma-separated subset of eager,compile,kevo,kevo_cuda,copy,read "
                         "(eager,compile; kevo is added when --kevo-dir is given; copy and "
                         "read are yardsticks: the task's bytes moved by dst.copy_(src), "
                         "or read once)")
    ap.add_argument("--kevo-dir", metavar="DIR",
                    help="time kevo's kernel DIR/<config name>.best.cu as peer 'kevo' by this "
                         "same harness (configs only)")
    ap.add_argument("--kevo-cuda-dir", metavar="DIR",
                    help="also time kevo's CUDA kernel DIR/<config name>.best.cu as peer "
                         "'kevo_cuda' (beside a Triton kernel from --kevo-dir)")
    ap.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (cuda)")
    ap.add_argument("--min-time-ms", type=float, default=100.0,
                    help="sampling goes on until this much timed (100)")
    ap.add_argument("--min-samples", type=int, default=10, help="and this many samples (10)")
    ap.add_argument("--max-samples", type=int, default=20000, help="at most this many (20000)")
    ap.add_argument("--warmup-ms", type=float, default=25.0,
                    help="warm-up goes on until this much wall time (25)")
    ap.add_argument("--min-warmup", type=int, default=3, help="and this many calls (3)")
    ap.add_argument("--launch-cover-us", type=float, default=0.0, metavar="US",
                    help="queue a GPU sleep of US microseconds between the flush and the "
                         "start event, so that host launch overhead up to flush + US is not "
                         "timed (0: kevo's method exactly)")
    ap.add_argument("--flush", choices=("write", "read"), default=None,
                    help="how the L2 is evicted before each timed call: write zero_()s a "
                         "buffer of 2 x L2 bytes (triton.testing.do_bench's way; the L2 is "
                         "left full of dirty lines), read sums it (clean lines: nothing "
                         "for the timed call to write back) (default: as each config's "
                         "timing.l2 says, dirty: write, clean: read)")
    ap.add_argument("--profile-calls", type=int, default=0, metavar="N",
                    help="after timing each peer, N more calls between cudaProfilerStart and "
                         "cudaProfilerStop, for ncu --profile-from-start off (0)")
    ap.add_argument("--seed", type=int, default=1, help="input seed (1)")
    ap.add_argument("--scale-down", type=int, default=1, metavar="F",
                    help="divide every dimension >= 256 by F, for smoke tests (1)")
    opts = ap.parse_args(argv)
    peers = [p.strip() for p in opts.peers.split(",") if p.strip()]
    if opts.kevo_dir and "kevo" not in peers:
        peers.append("kevo")
    if opts.kevo_cuda_dir and "kevo_cuda" not in peers:
        peers.append("kevo_cuda")
    known = ("eager", "compile", "kevo", "kevo_cuda") + YARDSTICKS
    if (not peers or any(p not in known for p in peers)
            or len(set(peers)) != len(peers)):
        raise BadInput(f"--peers: expected a comma-separated subset of eager,compile,kevo,kevo_cuda,"
                       f"copy,read, got {opts.peers!r}")
    if "kevo" in peers and not (opts.kevo_dir and os.path.isdir(opts.kevo_dir)):
        raise BadInput("--peers kevo needs --kevo-dir DIR, an existing folder")
    if "kevo_cuda" in peers and not (opts.kevo_cuda_dir and os.path.isdir(opts.kevo_cuda_dir)):
        raise BadInput("--peers kevo_cuda needs --kevo-cuda-dir DIR, an existing folder")
    opts.peers = peers
    opts.workdir = None
    for name, low in (("rounds", 1), ("min_samples", 1), ("max_samples", 1),
                      ("min_warmup", 0), ("scale_down", 1), ("seed", 0),
                      ("profile_calls", 0)):
        if getattr(opts, name) < low:
            raise BadInput(f"--{name.replace('_', '-')}: expected >= {low}")
    if opts.min_time_ms < 0 or opts.warmup_ms < 0 or opts.launch_cover_us < 0:
        raise BadInput("--min-time-ms, --warmup-ms and --launch-cover-us must be >= 0")
    return opts


def task_passed(record):
    """Whether every peer of a task's record ran and matched the reference. The
    yardsticks (copy, read) compute nothing, so their check is None by design; a
    peer without a check entry at all did not get that far."""
    if "error" in record:
        return False
    for peer in record["peers"].values():
        if peer.get("status") != "ok" or "check" not in peer:
            return False
        if peer["check"] is not None and not peer["check"].get("ok", False):
            return False
    return True


def main(argv=None):
    try:
        opts = parse_args(sys.argv[1:] if argv is None else argv)
        tasks = [load_config(p, opts.scale_down) for p in opts.configs]
        names = opts.task or ([] if opts.configs else ["all"])
        for name in names:
            for n in (DEFAULT_TASKS if name == "all" else [name]):
                tasks.append(Task(DEFAULT_TASKS[n], f"--task {n}", opts.scale_down))
        if torch is None:
            raise BadInput("torch is not importable in this Python "
                           f"({sys.executable}); run it where PyTorch is installed")
        try:
            device = torch.device(opts.device)
        except RuntimeError as e:
            raise BadInput(f"--device: {e}") from None
        if device.type not in ("cuda", "cpu"):
            raise BadInput(f"--device: expected cuda, cuda:N or cpu, got {opts.device!r}")
        if device.type == "cuda" and not torch.cuda.is_available():
            raise BadInput("--device cuda: torch sees no CUDA device (use --device cpu to "
                           "test the control flow)")
    except BadInput as e:
        print(f"torch_peers: {e}", file=sys.stderr, flush=True)
        return 2

    if device.type == "cuda":
        if device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        torch.cuda.set_device(device)
    timer = Timer(device, opts.launch_cover_us, opts.flush or "write")
    if "kevo" in opts.peers or "kevo_cuda" in opts.peers:
        import tempfile  # noqa: PLC0415
        opts.workdir = tempfile.mkdtemp(prefix="kevo-peer-")
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    doc = {
        "tool": "bench/peers/torch_peers.py",
        "started": started,
        "argv": sys.argv[1:] if argv is None else list(argv),
        "method": {
            "per_call": ("synchronize; flush L2 (see flush); "
                         "record start event; call; record end event; elapsed")
                        if device.type == "cuda" else
                        "flush (see flush); perf_counter around the call",
            "flush": FLUSH_HOW,
            "flush_given": opts.flush,
            "l2_bytes": timer.l2_bytes, "l2_source": timer.l2_source,
            "flush_bytes": timer.flush_bytes, "flush_gpu_us": timer.flush_us_by_mode,
            "launch_cover_us": timer.cover_us, "launch_cover_cycles": timer.cover_cycles,
            "min_warmup": opts.min_warmup, "warmup_ms": opts.warmup_ms,
            "min_samples": opts.min_samples, "min_time_ms": opts.min_time_ms,
            "max_samples": opts.max_samples, "rounds": opts.rounds,
            "quantiles": "linear interpolation between closest ranks (type 7)",
            "rounds_summary": "median of round medians; p20/p80 of pooled samples",
            "rate": "GB/s = (inputs read once + outputs written once) bytes / median; "
                    "gemm TFLOP/s = 2*M*N*K / median",
            "compile": f"torch.compile(mode={COMPILE_MODE!r}, dynamic=False, fullgraph=True)",
            "check": "fp64 reference on the same inputs; rel_l2, max_abs, kevo tolerance",
            "seed": opts.seed,
        },
        "environment": environment(device),
        "tasks": [],
    }
    gpu = doc["environment"].get("gpu")
    say(f"torch {torch.__version__}, triton {doc['environment']['triton']}, "
        + (f"{gpu['name']} (sm {gpu['capability']}, {gpu['multiprocessors']} SMs, "
           f"L2 {timer.l2_bytes / 2**20:.0f} MiB)" if gpu else f"device {device}")
        + f"; flush ({opts.flush or 'as each config says'}) {timer.flush_bytes / 2**20:.0f} MiB"
        + (f" ({timer.flush_us:.0f} us on the GPU)" if opts.flush and timer.flush_us else "")
        + (f" + {timer.cover_us:g} us launch cover" if timer.cover_us else "")
        + f"; warm-up >= {opts.min_warmup} calls and "
          f"{opts.warmup_ms:g} ms; samples >= {opts.min_samples} and {opts.min_time_ms:g} ms; "
          f"quantiles type 7")
    all_ok = True
    try:
        for task in tasks:
            record = run_task(task, device, opts, timer)
            doc["tasks"].append(record)
            if not task_passed(record):
                all_ok = False
            if opts.json:
                write_json(opts.json, doc)
    finally:
        doc["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds")
        if opts.json:
            write_json(opts.json, doc)
            say(f"wrote {opts.json}")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
