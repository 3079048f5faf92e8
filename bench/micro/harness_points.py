#!/usr/bin/env python3
"""Time several kevo kernels of one task beside torch.compile, in one harness.

A diagnostic for the GPU host: where kevo's best and the compiled peer are a
few percent apart, it times knob points of a family (or any kevo kernel
source) and the peer in the same process, by bench/peers/torch_peers.py's
method (synchronize, flush, start event, call, end event), round after round
in rotated order, and under several L2 flushes:

  fill    zero_() a buffer of 2 x L2 bytes (torch_peers' flush: L2 left dirty)
  fillv   fill_() it with a new nonzero byte each call (kevo's runner's way)
  fill4   the same over 4 x L2 bytes   } do lines the last call marked
  fill8   the same over 8 x L2 bytes   } evict_last outlive a 2 x L2 fill?
  reset   cudaCtxResetPersistingL2Cache(), then fill
  read    read 2 x L2 bytes (amax): L2 left full of clean lines

A calibrated GPU sleep of --launch-cover-us (300) follows the flush, as in
bench/gpu_lanes.sh, so that host time never leaves the GPU idle in a sample.

Usage:
  harness_points.py configs/cuda/rmsnorm-16384x4096.json \\
      --point best=build/best/rmsnorm-16384x4096.best.cu \\
      --point h4=targets/cuda/kernels/rmsnorm/fused.cu:HINT=4,MINB=2 \\
      [--no-compile] [--eager] [--flush fill,read] [--rounds 3] [--json out.json]

--eager times the task's eager PyTorch function too (cuBLAS for a GEMM); it is
the ratios' base where torch.compile is left out (--no-compile).
Prints, per flush, each kernel's median of round medians and base / kernel.
Each kernel's output is checked once against the fp64 reference (kevo kernels'
outputs filled with NaN first: one left unwritten fails).
Exit status: 0, 1 when a kernel failed its check or errored, 2 for bad input.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import ctypes
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))
import torch_peers as tp  # noqa: E402

FLUSHES = ("fill", "fillv", "fill4", "fill8", "reset", "read")


class FlushTimer(tp.Timer):
    """torch_peers' Timer (sync, flush, cover, events) with a choice of flush."""

    def __init__(self, device, kind, cover_us):
        super().__init__(device, cover_us)
        self.kind = kind
        if kind in ("fill4", "fill8"):
            self.flush_buf = tp.torch.empty(int(kind[4:]) * self.l2_bytes, dtype=tp.torch.uint8,
                                            device=device)
        self.words = self.flush_buf.view(tp.torch.int32) if kind == "read" else None
        self.reset = None
        self.value = 0
        if kind == "reset":
            for name in ("libcudart.so", "libcudart.so.13", "libcudart.so.12"):
                try:
                    self.reset = ctypes.CDLL(name).cudaCtxResetPersistingL2Cache
                    break
                except (OSError, AttributeError):
                    continue
            if self.reset is None:
                raise RuntimeError("flush reset: no libcudart with cudaCtxResetPersistingL2Cache")

    def flush(self):
        if self.kind == "read":
            self.words.amax()
            return
        if self.reset is not None and self.reset() != 0:
            raise RuntimeError("cudaCtxResetPersistingL2Cache failed")
        if self.kind == "fillv":
            self.value = self.value % 255 + 1
            self.flush_buf.fill_(self.value)
        else:
            self.flush_buf.zero_()


def parse_point(text):
    label, sep, rest = text.partition("=")
    if not sep or not label or not rest:
        raise tp.BadInput(f"--point {text!r}: expected LABEL=SOURCE[:KNOB=V,...]")
    src, _, knobs_text = rest.partition(":")
    if not os.path.isfile(src):
        raise tp.BadInput(f"--point {label}: no file {src}")
    knobs = {}
    for kv in filter(None, knobs_text.split(",")):
        k, eq, v = kv.partition("=")
        if not eq or not k.isidentifier() or not v.lstrip("-").isdigit():
            raise tp.BadInput(f"--point {label}: {kv!r} is not KNOB=INTEGER")
        knobs[k] = int(v)
    return label, src, knobs


def build_points(task, points, work):
    """Each point's kernel built by kevo_kernel, nvcc running for every point at
    once (a wgmma family takes half a minute to build). Returns ({label: kernel}
    in the order given, leaving out the points that failed; the labels that
    failed), each failure printed as one ERROR line."""
    kernels, failed = {}, []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        built = [(label, pool.submit(tp.kevo_kernel, task, src, knobs, work, label))
                 for label, src, knobs in points]
        for label, future in built:
            try:
                kernels[label] = future.result()
            except Exception as e:  # noqa: BLE001
                print(f"{label}: ERROR {type(e).__name__}: {str(e)[:300]}", flush=True)
                failed.append(label)
    return kernels, failed


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config")
    ap.add_argument("--point", action="append", default=[], metavar="LABEL=SRC[:K=V,...]")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--eager", action="store_true",
                    help="time the eager function too (the base of the ratios without torch.compile)")
    ap.add_argument("--flush", default="fill", help="comma-separated subset of " + ",".join(FLUSHES) + " (default fill)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--launch-cover-us", type=float, default=300.0)
    ap.add_argument("--min-time-ms", type=float, default=100.0)
    ap.add_argument("--json")
    ap.add_argument("--profile-calls", type=int, default=0, metavar="N",
                    help="after timing, N calls of each kernel (flush first) between "
                         "cudaProfilerStart/Stop, for ncu --profile-from-start off")
    o = ap.parse_args(argv)
    try:
        task = tp.load_config(o.config)
        points = [parse_point(p) for p in o.point]
        flushes = [f for f in o.flush.split(",") if f]
        if not flushes or any(f not in FLUSHES for f in flushes):
            raise tp.BadInput(f"--flush: expected a comma-separated subset of {','.join(FLUSHES)}")
        if o.rounds < 1 or (not points and o.no_compile and not o.eager):
            raise tp.BadInput("--rounds must be >= 1, and something must be timed")
        if tp.torch is None or not tp.torch.cuda.is_available():
            raise tp.BadInput("needs torch with a CUDA device")
    except tp.BadInput as e:
        print(f"harness_points: {e}", file=sys.stderr)
        return 2

    device = tp.torch.device("cuda", tp.torch.cuda.current_device())
    opts = argparse.Namespace(min_warmup=3, warmup_ms=25.0, min_samples=10,
                              min_time_ms=o.min_time_ms, max_samples=20000, profile_calls=0)
    inputs = tp.make_inputs(task, device, 1)
    ref = tp.reference(task, inputs)
    work = tempfile.mkdtemp(prefix="kevo-points-")
    calls, status = {}, 0
    if not o.no_compile:
        fn = tp.peer_function(task)
        calls["compile"] = tp.torch.compile(fn, mode=tp.COMPILE_MODE, dynamic=False,
                                            fullgraph=True)
    if o.eager:
        calls["eager"] = tp.peer_function(task)
    kernels, failed = build_points(task, points, work)
    calls.update(kernels)
    status = 1 if failed else status
    checks = {}
    for label, fn in list(calls.items()):
        try:
            with tp.poisoned_outputs():  # an output left unwritten fails
                out = fn(*inputs)
            tp.torch.cuda.synchronize()
            checks[label] = tp.check(task, out, ref)
            print(f"{label}: check {tp.check_summary(checks[label])}", flush=True)
            if not checks[label].get("ok", True):
                status = 1
        except Exception as e:  # noqa: BLE001
            print(f"{label}: ERROR {type(e).__name__}: {str(e)[:300]}", flush=True)
            del calls[label]
            status = 1
    del ref
    results = {f: {label: [] for label in calls} for f in flushes}
    clocks = {f: {label: [] for label in calls} for f in flushes}  # SM MHz after each round's samples
    for f in flushes:
        timer = FlushTimer(device, f, o.launch_cover_us)
        labels = list(calls)
        for r in range(o.rounds):
            k = r % len(labels)
            order = labels[k:] + labels[:k]
            if r % 2:
                order.reverse()
            for label in order:
                m = tp.measure(timer, calls[label], inputs, opts)
                results[f][label].append(m["median_us"])
                clocks[f][label].append(m["machine"].get("sm_mhz"))
        if o.profile_calls:
            for label in labels:
                tp.torch.cuda.synchronize()
                tp.torch.cuda.cudart().cudaProfilerStart()
                for _ in range(o.profile_calls):
                    timer.call(calls[label], inputs)
                tp.torch.cuda.cudart().cudaProfilerStop()
        del timer
        tp.torch.cuda.empty_cache()
        base_label = next((b for b in ("compile", "eager") if b in results[f]), None)
        base = statistics.median(results[f][base_label]) if base_label else None
        print(f"== flush {f}: median of {o.rounds} round medians (us)"
              + (f", {base_label} / kernel" if base_label else ""))
        for label in labels:
            med = statistics.median(results[f][label])
            ratio = f"  {base / med:.3f}x" if base else ""
            rounds = " ".join(f"{v:.2f}" for v in results[f][label])
            mhz = [c for c in clocks[f][label] if c is not None]
            sm = f"  SM {min(mhz)}-{max(mhz)} MHz" if mhz else ""
            print(f"   {label:14s} {med:9.2f}{ratio}   [{rounds}]{sm}", flush=True)
    if o.json:
        with open(o.json, "w", encoding="utf-8") as fh:
            json.dump({"config": o.config, "points": [[l, s, k] for l, s, k in points],
                       "round_medians_us": results, "round_sm_mhz": clocks, "checks": checks}, fh, indent=1,
                      default=str)
    return status


if __name__ == "__main__":
    sys.exit(main())
