# add_rmsnorm / rows.py: h = x + r; y = h * rsqrt(mean(h^2) + eps) * w over
# the last dim, fp32 math, any float storage (bf16 on the GPU).
#
# As rmsnorm/rows.py: ROWS rows per program as a [ROWS, BLOCK_N] tile; a row
# that fits is read once (x and r), h is rounded to the storage type as the
# reference does and written, and y is computed from the registers. Longer
# rows stream: the first pass writes h and sums its squares, the second reads
# h back (from L2) for y.
# Knobs:
#   BLOCK_N     columns per tile (a power of two)
#   ROWS        rows per program
#   NUM_WARPS   warps per program
#   NUM_STAGES  software pipelining of the streaming loops
#   EVICT       x and r loads: 0 plain, 1 evict-first (they are read once),
#               2 evict-last: an L2 evict_last cache-hint policy (the default:
#               the CUDA family's HINT 4, the same instruction, was worth 3%
#               on the H200, bench/results/2026-12-01-h200-l2-policy-loads.md)
# @kevo knob BLOCK_N 4096 {512, 1024, 2048, 4096, 8192}
# @kevo knob ROWS 1 {1, 2, 4, 8}
# @kevo knob NUM_WARPS 8 {1, 2, 4, 8, 16, 32}
# @kevo knob NUM_STAGES 1 {1, 2, 3}
# @kevo knob EVICT 2 {0, 1, 2}
# @kevo require ROWS * BLOCK_N <= 16384
# @kevo require NUM_WARPS * 32 <= ROWS * BLOCK_N
import torch
import triton
import triton.language as tl


@triton.jit
def add_rms_rows(x_ptr, r_ptr, w_ptr, h_ptr, y_ptr, M, N, eps, BLOCK_N: tl.constexpr,
                 ROWS: tl.constexpr, WHOLE: tl.constexpr, STAGES: tl.constexpr,
                 EVICT: tl.constexpr, WIDE: tl.constexpr):
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
        x = tl.load(x_ptr + base + cols[None, :], mask=mask, other=0.0, eviction_policy=policy)
        r = tl.load(r_ptr + base + cols[None, :], mask=mask, other=0.0, eviction_policy=policy)
        h = (x.to(tl.float32) + r.to(tl.float32)).to(h_ptr.dtype.element_ty)
        tl.store(h_ptr + base + cols[None, :], h, mask=mask)
        hf = h.to(tl.float32)
        w = tl.load(w_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
        inv = 1.0 / tl.sqrt(tl.sum(hf * hf, axis=1) / N + eps)
        tl.store(y_ptr + base + cols[None, :], (hf * inv[:, None] * w[None, :]).to(y_ptr.dtype.element_ty),
                 mask=mask)
    else:
        acc = tl.zeros([ROWS, BLOCK_N], dtype=tl.float32)
        for start in tl.range(0, N, BLOCK_N, num_stages=STAGES):
            c = start + cols
            mask = row_ok[:, None] & (c[None, :] < N)
            x = tl.load(x_ptr + base + c[None, :], mask=mask, other=0.0, eviction_policy=policy)
            r = tl.load(r_ptr + base + c[None, :], mask=mask, other=0.0, eviction_policy=policy)
            h = (x.to(tl.float32) + r.to(tl.float32)).to(h_ptr.dtype.element_ty)
            tl.store(h_ptr + base + c[None, :], h, mask=mask)
            hf = h.to(tl.float32)
            acc += hf * hf
        inv = 1.0 / tl.sqrt(tl.sum(acc, axis=1) / N + eps)
        for start in tl.range(0, N, BLOCK_N, num_stages=STAGES):
            c = start + cols
            mask = row_ok[:, None] & (c[None, :] < N)
            hf = tl.load(h_ptr + base + c[None, :], mask=mask, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + c, mask=c < N, other=0.0).to(tl.float32)
            tl.store(y_ptr + base + c[None, :], (hf * inv[:, None] * w[None, :]).to(y_ptr.dtype.element_ty),
                     mask=mask)


def kevo_launch(inputs, outputs, scalars):
    x, r, w = inputs
    h, y = outputs
    n = x.shape[-1]
    m = x.numel() // max(n, 1)
    if m == 0 or n == 0:
        return 0
    wide = (m + ROWS) * n + BLOCK_N >= 2**31  # offsets past int32
    add_rms_rows[(triton.cdiv(m, ROWS),)](x, r, w, h, y, m, n, scalars[0], BLOCK_N=BLOCK_N, ROWS=ROWS,
                                          WHOLE=n <= BLOCK_N, STAGES=NUM_STAGES, EVICT=EVICT, WIDE=wide,
                                          num_warps=NUM_WARPS)
    return 0
