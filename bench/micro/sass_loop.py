#!/usr/bin/env python3
"""How many SASS instructions a TMA family's consumer spends per k tile.

A diagnostic for the CPU machine (no GPU needed): builds each point as kevo
builds it for the task (bench/peers/torch_peers.py's nvcc command, with
-cubin), disassembles it (cuobjdump -sass) and reads the consumer's main
loop: the innermost loop (a backward branch) that waits on full barriers
(SYNCS.PHASECHK ... TRYWAIT, one per k tile) and issues wgmmas (HGMMA). For
each point it prints the loop's instructions per k tile (its length over its
waits, so an unrolled loop counts alike), its HGMMAs and R2UR moves per k
tile, and whether the waits' barrier address is held in a uniform register
([URn...]): where it is not, ptxas did not prove the loop
warp-uniform, and each k tile rebuilds its wgmma descriptors in ordinary
registers and moves them over (R2UR) - about twice the instructions
(bench/results/2026-12-06-h100-decode-gemm-13.md and -14.md).

Usage:
  sass_loop.py CONFIG --point LABEL=SOURCE[:KNOB=V,...] [--point ...] [--json OUT]
  e.g. sass_loop.py configs/cuda/gemm-4096.json \\
         --point start=targets/cuda/kernels/gemm/wgmma.cu:BN=128,WGM=128,NCONS=2,STAGES=4,EPI=2,EPIB=1,EPIR=1,PERSIST=1,CLUSTER=2,CDIM=1,GROUP_M=8,DYN=1

cuobjdump is taken from $CUOBJDUMP, then PATH, then $CUDA_HOME/bin, then the
Triton that kevo's setup installs ($KEVO_TRITON_VENV, as scripts/setup.sh
places it; Triton ships one). The counts depend on the
nvcc and ptxas versions: compare points built by one toolkit.
Exit status: 0; 1 when a point did not build or has no such loop; 2 for bad input.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_peers as tp  # noqa: E402
from harness_points import parse_point  # noqa: E402

INSTR = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
WAIT = re.compile(r"SYNCS\.PHASECHK\.TRANS64\.TRYWAIT\s+\S+,\s*\[([^\]]*)\]")
BRANCH = re.compile(r"\bBRA(?:\.\S+)?\s+(?:!?U?P\d,\s*)?(0x[0-9a-f]+)")


def instructions(sass):
    """(function name, [(address, instruction text)]) for each function of a
    cuobjdump -sass listing."""
    funcs, name, body = [], None, []
    for line in sass.splitlines():
        m = re.match(r"\s*Function\s*:\s*(\S+)", line)
        if m:
            if name is not None:
                funcs.append((name, body))
            name, body = m.group(1), []
            continue
        m = INSTR.match(line)
        if m and name is not None:
            body.append((int(m.group(1), 16), m.group(2)))
    if name is not None:
        funcs.append((name, body))
    return funcs


def main_loop(body):
    """The innermost loop (a backward branch and the instructions from its
    target to it) that holds full-barrier waits and wgmmas: the consumer's
    k-tile loop, unrolled or not. None if there is none. A wait's retry
    branch jumps back to the wait from a stub after the function's end; its
    span holds the whole kernel, so the innermost loop is the main loop."""
    index = {addr: i for i, (addr, _) in enumerate(body)}
    best = None
    for j, (addr, ins) in enumerate(body):
        m = BRANCH.search(ins)
        if not m:
            continue
        target = int(m.group(1), 16)
        if target > addr or target not in index:
            continue
        i = index[target]
        span = body[i:j + 1]
        waits = [WAIT.search(t).group(1) for _, t in span if WAIT.search(t)]
        hgmma = sum(1 for _, t in span if "HGMMA" in t)
        if waits and hgmma and (best is None or len(span) < best["instructions"]):
            best = {"instructions": len(span), "waits": waits, "hgmma": hgmma,
                    "r2ur": sum(1 for _, t in span if re.search(r"(^|\s)R2UR\s", t))}
    return best


def summarize(funcs):
    """The main loop of the first function that has one: instructions per k
    tile (the loop's length over its full-barrier waits: one per k tile),
    wgmmas per k tile, whether every wait's barrier address is uniform, and
    the loop's R2UR moves."""
    for name, body in funcs:
        loop = main_loop(body)
        if loop is None:
            continue
        k = len(loop["waits"])
        return {
            "function": name,
            "loop_instructions": loop["instructions"],
            "k_tiles_per_pass": k,
            "per_k_tile": loop["instructions"] / k,
            "hgmma_per_k_tile": loop["hgmma"] / k,
            "uniform_barrier_address": all(a.startswith("UR") for a in loop["waits"]),
            "r2ur_per_k_tile": loop["r2ur"] / k,
        }
    return None


def find_cuobjdump():
    for cand in [os.environ.get("CUOBJDUMP"), shutil.which("cuobjdump"),
                 os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "cuobjdump")]:
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    # the Triton venv where scripts/setup.sh puts it
    venv = os.environ.get("KEVO_TRITON_VENV") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kevo", "triton-venv")
    for cand in sorted(glob.glob(os.path.join(venv, "lib", "python3*", "site-packages",
                                              "triton", "backends", "nvidia", "bin", "cuobjdump"))):
        if os.access(cand, os.X_OK):
            return cand
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config")
    ap.add_argument("--point", action="append", default=[], metavar="LABEL=SRC[:K=V,...]")
    ap.add_argument("--json")
    o = ap.parse_args(argv)
    try:
        task = tp.load_config(o.config)
        if not o.point:
            raise tp.BadInput("at least one --point")
        points = [parse_point(p) for p in o.point]
        if len({label for label, _, _ in points}) != len(points):
            raise tp.BadInput("two points with one label")
    except (tp.BadInput, OSError, ValueError) as e:
        print(f"sass_loop: {e}", file=sys.stderr)
        return 2
    cuobjdump = find_cuobjdump()
    if cuobjdump is None:
        print("sass_loop: no cuobjdump (set CUOBJDUMP, or install the CUDA toolkit's)", file=sys.stderr)
        return 2
    status, report = 0, {"config": o.config, "cuobjdump": cuobjdump, "points": {}}
    with tempfile.TemporaryDirectory(prefix="kevo-sass-") as work:
        for label, src, knobs in points:
            cubin = os.path.join(work, f"{label}.cubin")
            cmd = tp.kevo_nvcc_command(task, src, knobs, "cubin") + ["-o", cubin]
            r = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if r.returncode != 0:
                print(f"{label}: nvcc failed: {(r.stderr or r.stdout).strip()[-400:]}")
                status = 1
                continue
            d = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True, check=False)
            s = summarize(instructions(d.stdout)) if d.returncode == 0 else None
            if s is None:
                print(f"{label}: no k-tile loop found (no full-barrier waits around HGMMAs)")
                status = 1
                continue
            report["points"][label] = {"source": src, "knobs": knobs, **s}
            print(f"{label:14s} {s['per_k_tile']:6.1f} instructions per k tile "
                  f"({s['loop_instructions']} in a loop of {s['k_tiles_per_pass']}), "
                  f"HGMMA {s['hgmma_per_k_tile']:g}, R2UR {s['r2ur_per_k_tile']:g}, barrier address "
                  f"{'uniform' if s['uniform_barrier_address'] else 'NOT uniform'}", flush=True)
    if o.json:
        with open(o.json, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=1)
    return status


if __name__ == "__main__":
    sys.exit(main())
