# scaled_softmax / online.py: y = softmax(x * scale) over the last dim, fp32
# math, any float storage (bf16 on the GPU).
#
# ROWS rows per program as a [ROWS, BLOCK_N] tile. A row that fits is read
# once: max, exp2 of the scaled differences and their sum in registers, one
# write. Longer rows use the online softmax: one streaming pass keeps a
# running max and a rescaled running sum, the second pass writes y (reading x
# back from L2).
# Knobs:
#   BLOCK_N     columns per tile (a power of two)
#   ROWS        rows per program
#   NUM_WARPS   warps per program
#   NUM_STAGES  software pipelining of the streaming loops
#   EVICT       x loads in the single-pass tile: 0 plain, 1 evict-first,
#               2 evict-last (an L2 evict_last cache-hint policy)
# @kevo knob BLOCK_N 4096 {512, 1024, 2048, 4096, 8192}
# @kevo knob ROWS 1 {1, 2, 4, 8}
# @kevo knob NUM_WARPS 8 {1, 2, 4, 8, 16, 32}
# @kevo knob NUM_STAGES 1 {1, 2, 3}
# @kevo knob EVICT 1 {0, 1, 2}
# @kevo require ROWS * BLOCK_N <= 16384
# @kevo require NUM_WARPS * 32 <= ROWS * BLOCK_N
import math

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_rows(x_ptr, y_ptr, M, N, scale_log2e, BLOCK_N: tl.constexpr, ROWS: tl.constexpr,
                 WHOLE: tl.constexpr, STAGES: tl.constexpr, EVICT: tl.constexpr, WIDE: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    row_ok = rows < M
    cols = tl.arange(0, BLOCK_N)
    # 64-bit offsets only where M * N needs them (fewer registers otherwise)
    if WIDE:
        base = rows.to(tl.int64)[:, None] * N
    else:
        base = rows[:, None] * N
    policy: tl.constexpr = "evict_last" if EVICT == 2 else ("evict_first" if EVICT == 1 else "")
    if WHOLE:
        mask = row_ok[:, None] & (cols[None, :] < N)
        x = tl.load(x_ptr + base + cols[None, :], mask=mask, other=-float("inf"),
                    eviction_policy=policy).to(tl.float32) * scale_log2e
        mx = tl.max(x, axis=1)
        e = tl.exp2(x - mx[:, None])
        e = tl.where(mask, e, 0.0)
        inv = 1.0 / tl.sum(e, axis=1)
        tl.store(y_ptr + base + cols[None, :], (e * inv[:, None]).to(y_ptr.dtype.element_ty), mask=mask)
    else:
        m_run = tl.full([ROWS, BLOCK_N], -float("inf"), tl.float32)
        s_run = tl.zeros([ROWS, BLOCK_N], dtype=tl.float32)
        for start in tl.range(0, N, BLOCK_N, num_stages=STAGES):
            c = start + cols
            mask = row_ok[:, None] & (c[None, :] < N)
            x = tl.load(x_ptr + base + c[None, :], mask=mask, other=-float("inf")).to(tl.float32) * scale_log2e
            m_new = tl.maximum(m_run, x)
            safe = tl.where(m_new == -float("inf"), 0.0, m_new)
            s_run = s_run * tl.exp2(m_run - safe) + tl.exp2(x - safe)
            m_run = m_new
        mx = tl.max(m_run, axis=1)
        safe_mx = tl.where(mx == -float("inf"), 0.0, mx)
        total = tl.sum(s_run * tl.exp2(m_run - safe_mx[:, None]), axis=1)
        inv = 1.0 / total
        for start in tl.range(0, N, BLOCK_N, num_stages=STAGES):
            c = start + cols
            mask = row_ok[:, None] & (c[None, :] < N)
            x = tl.load(x_ptr + base + c[None, :], mask=mask, other=-float("inf")).to(tl.float32) * scale_log2e
            y = tl.exp2(x - safe_mx[:, None]) * inv[:, None]
            tl.store(y_ptr + base + c[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


def kevo_launch(inputs, outputs, scalars):
    (x,) = inputs
    (y,) = outputs
    n = x.shape[-1]
    m = x.numel() // max(n, 1)
    if m == 0 or n == 0:
        return 0
    wide = (m + ROWS) * n + BLOCK_N >= 2**31  # offsets past int32
    softmax_rows[(triton.cdiv(m, ROWS),)](x, y, m, n, scalars[0] * math.log2(math.e), BLOCK_N=BLOCK_N,
                                          ROWS=ROWS, WHOLE=n <= BLOCK_N, STAGES=NUM_STAGES,
                                          EVICT=EVICT, WIDE=wide, num_warps=NUM_WARPS)
    return 0
