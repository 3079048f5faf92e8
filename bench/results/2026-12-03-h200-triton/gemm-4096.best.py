# kevo run 3 best for gemm-4096: median 179 us (90% of roof)
# family persistent_tma (/work/main/targets/triton/kernels/gemm/persistent_tma.py), knobs baked in: BK=64 BM=128 BN=256 FLATTEN=1 GROUP_M=8 NUM_STAGES=3 NUM_WARPS=8 PROGRAMS=1
BK = 64
BM = 128
BN = 256
FLATTEN = 1
GROUP_M = 8
NUM_STAGES = 3
NUM_WARPS = 8
PROGRAMS = 1

# gemm / persistent_tma.py: C = A·B (row-major), fp32 accumulation, for
# Hopper: a persistent grid (one program per SM, or fewer) walks the tiles of
# C in grouped order; A's and B's tiles come through the tensor memory
# accelerator (host-side TMA descriptors, so no on-device allocation), and C
# goes out through one as well. The descriptors clip at the edges: any M, N,
# K whose rows are 16-byte aligned (K and N multiples of 8 for bf16);
# anything else falls back to plain masked loads in the same kernel
# structure (TMA 0).
# Knobs:
#   BM, BN, BK  the tile
#   GROUP_M     tile rows per L2 group
#   NUM_WARPS   warps per program
#   NUM_STAGES  pipeline depth
#   PROGRAMS    programs per SM (the persistent grid's size)
#   FLATTEN     1: Triton flattens the tile and K loops into one pipeline
#               (the next tile's loads overlap this tile's epilogue)
# (baked in) kevo knob BM 128 {64, 128, 256}
# (baked in) kevo knob BN 256 {64, 128, 256}
# (baked in) kevo knob BK 64 {32, 64, 128}
# (baked in) kevo knob GROUP_M 8 {1, 4, 8, 16}
# (baked in) kevo knob NUM_WARPS 8 {4, 8}
# (baked in) kevo knob NUM_STAGES 3 {2, 3, 4, 5}
# (baked in) kevo knob PROGRAMS 1 {1, 2}
# (baked in) kevo knob FLATTEN 1 {0, 1}
# (baked in) kevo require NUM_STAGES * (BM * BK + BK * BN) * 2 + BM * BN * 2 <= 229376
# (baked in) kevo require BM * BN <= 256 * 128
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def tile_of(t, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    group = GROUP_M * tiles_n
    first_m = (t // group) * GROUP_M
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
    pm = first_m + (t % group) % rows_in_group
    pn = (t % group) // rows_in_group
    return pm, pn


@triton.jit
def gemm_persistent(a_desc, b_desc, c_desc, a_ptr, b_ptr, c_ptr, M, N, K, PROGRAMS_TOTAL,
                    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
                    STAGES: tl.constexpr, TMA: tl.constexpr, FLATTEN: tl.constexpr, PRECISION: tl.constexpr):
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    k_steps = tl.cdiv(K, BK)
    for t in tl.range(tl.program_id(0), tiles_m * tiles_n, PROGRAMS_TOTAL, flatten=FLATTEN):
        pm, pn = tile_of(t, tiles_m, tiles_n, GROUP_M)
        acc = tl.zeros([BM, BN], dtype=tl.float32)
        if TMA:
            for ks in tl.range(0, k_steps, num_stages=STAGES):
                a = a_desc.load([pm * BM, ks * BK])
                b = b_desc.load([ks * BK, pn * BN])
                acc = tl.dot(a, b, acc, input_precision=PRECISION)
            c_desc.store([pm * BM, pn * BN], acc.to(c_desc.dtype))
        else:
            rm = pm * BM + tl.arange(0, BM)
            rn = pn * BN + tl.arange(0, BN)
            rk = tl.arange(0, BK)
            for ks in tl.range(0, k_steps, num_stages=STAGES):
                kk = ks * BK + rk
                a = tl.load(a_ptr + rm.to(tl.int64)[:, None] * K + kk[None, :],
                            mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
                b = tl.load(b_ptr + kk.to(tl.int64)[:, None] * N + rn[None, :],
                            mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
                acc = tl.dot(a, b, acc, input_precision=PRECISION)
            tl.store(c_ptr + rm.to(tl.int64)[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
                     mask=(rm[:, None] < M) & (rn[None, :] < N))


def precision(a):
    # fp32 inputs are multiplied in fp32 (not TF32: the check holds fp32 to
    # fp32's tolerance); bf16 and fp16 inputs go to the tensor cores as they are.
    return "ieee" if a.dtype == torch.float32 else "tf32"


def kevo_launch(inputs, outputs, scalars):
    a, b = inputs
    (c,) = outputs
    m, k = a.shape
    n = b.shape[1]
    if m == 0 or n == 0:
        return 0
    tiles = triton.cdiv(m, BM) * triton.cdiv(n, BN)
    sms = torch.cuda.get_device_properties(a.device).multi_processor_count if a.is_cuda else 4
    programs = min(tiles, sms * PROGRAMS)
    row_bytes = a.element_size()
    tma = a.is_cuda and (k * row_bytes) % 16 == 0 and (n * row_bytes) % 16 == 0
    if tma:
        a_desc = TensorDescriptor.from_tensor(a, [BM, BK])
        b_desc = TensorDescriptor.from_tensor(b, [BK, BN])
        c_desc = TensorDescriptor.from_tensor(c, [BM, BN])
    else:
        a_desc = b_desc = c_desc = a
    gemm_persistent[(programs,)](a_desc, b_desc, c_desc, a, b, c, m, n, k, programs, BM=BM, BN=BN,
                                 BK=BK, GROUP_M=GROUP_M, STAGES=NUM_STAGES, TMA=tma, FLATTEN=FLATTEN,
                                 PRECISION=precision(a), num_warps=NUM_WARPS)
    return 0
