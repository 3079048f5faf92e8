# swiglu / stream.py: y = silu(g) * u = g / (1 + exp(-g)) * u, elementwise,
# fp32 math, any float storage (bf16 on the GPU).
#
# A flat stream: each program handles BLOCK elements per step, STEPS steps
# (a grid of about numel / (BLOCK * STEPS) programs), so that large tensors
# are covered by fewer, longer-lived programs.
# Knobs:
#   BLOCK       elements per program per step (a power of two)
#   STEPS       steps per program
#   NUM_WARPS   warps per program
#   EVICT       g and u loads: 0 plain, 1 evict-first (they are read once),
#               2 evict-last: an L2 evict_last cache-hint policy on the loads
#               (the default: the same instruction as the CUDA family's LD 4,
#               which read 1.013x torch.compile against 0.996-1.000x with plain
#               loads on the H200, bench/results/2026-12-01-h200-l2-policy-loads.md)
# @kevo knob BLOCK 4096 {1024, 2048, 4096, 8192, 16384}
# @kevo knob STEPS 1 {1, 2, 4, 8}
# @kevo knob NUM_WARPS 8 {2, 4, 8, 16}
# @kevo knob EVICT 2 {0, 1, 2}
# @kevo require NUM_WARPS * 32 * 4 <= BLOCK
import torch
import triton
import triton.language as tl


@triton.jit
def swiglu_stream(g_ptr, u_ptr, y_ptr, n, BLOCK: tl.constexpr, STEPS: tl.constexpr,
                  EVICT: tl.constexpr, WIDE: tl.constexpr):
    # 32-bit offsets where the tensors allow them (fewer registers and
    # instructions per element); 64-bit only past 2^31 elements.
    if WIDE:
        start = tl.program_id(0).to(tl.int64) * (BLOCK * STEPS)
    else:
        start = tl.program_id(0) * (BLOCK * STEPS)
    offs = tl.arange(0, BLOCK)
    policy: tl.constexpr = "evict_last" if EVICT == 2 else ("evict_first" if EVICT == 1 else "")
    for s in tl.static_range(STEPS):
        o = start + s * BLOCK + offs
        mask = o < n
        g = tl.load(g_ptr + o, mask=mask, other=0.0, eviction_policy=policy).to(tl.float32)
        u = tl.load(u_ptr + o, mask=mask, other=0.0, eviction_policy=policy).to(tl.float32)
        y = g / (1.0 + tl.exp(-g)) * u
        tl.store(y_ptr + o, y.to(y_ptr.dtype.element_ty), mask=mask)


def kevo_launch(inputs, outputs, scalars):
    g, u = inputs
    (y,) = outputs
    n = g.numel()
    if n == 0:
        return 0
    programs = triton.cdiv(n, BLOCK * STEPS)
    wide = programs * BLOCK * STEPS >= 2**31
    swiglu_stream[(programs,)](g, u, y, n, BLOCK=BLOCK, STEPS=STEPS, EVICT=EVICT, WIDE=wide,
                               num_warps=NUM_WARPS)
    return 0
