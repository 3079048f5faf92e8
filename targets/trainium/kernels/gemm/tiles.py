# gemm / tiles.py (NKI 0.4): C[M, N] = A[M, K] @ B[K, N] (row-major), fp32
# accumulation in PSUM.
#
# Output tiles of TM rows (partitions) by TN columns (at most 512: one PSUM
# bank of fp32). For each K step of 128: A's [TM, 128] tile is loaded and
# transposed on the Tensor engine (nc_matmul takes the stationary operand as
# [K, M]), B's [128, TN] tile is the moving operand, and nc_matmul accumulates
# into the PSUM tile; the finished tile is copied to SBUF in C's dtype and
# stored.
# Not verified on Trainium: checked in kevo's NumPy model of NKI only.
# Knobs:
#   TM      rows of C per tile (partitions of the PSUM tile; A's tile rows)
#   TN      columns of C per tile (the moving operand's free size)
#   LOOP    0: the tile loop is nl.affine_range (iterations independent: the
#           compiler may overlap one tile's DMA with another's compute, i.e.
#           double-buffer), 1: nl.sequential_range (one tile after another)
# @kevo knob TM 128 {32, 64, 128}
# @kevo knob TN 512 {128, 256, 512}
# @kevo knob LOOP 0 {0, 1}
import nki
import nki.isa as nisa
import nki.language as nl

TK = 128  # the contraction per matmul: the partitions of both operands


@nki.jit
def kevo_nki(A, B):
    M, K = A.shape
    N = B.shape[1]
    C = nl.ndarray((M, N), dtype=A.dtype, buffer=nl.shared_hbm)
    tiles = nl.affine_range if LOOP == 0 else nl.sequential_range
    for mi in tiles((M + TM - 1) // TM):
        m0 = mi * TM
        pm = min(TM, M - m0)
        for ni in tiles((N + TN - 1) // TN):
            n0 = ni * TN
            pn = min(TN, N - n0)
            acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for ki in nl.sequential_range((K + TK - 1) // TK):
                k0 = ki * TK
                pk = min(TK, K - k0)
                a = nl.ndarray((TM, TK), dtype=A.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=a[0:pm, 0:pk], src=A[m0:m0 + pm, k0:k0 + pk])
                a_t_ps = nl.ndarray((TK, TM), dtype=nl.float32, buffer=nl.psum)
                nisa.nc_transpose(dst=a_t_ps[0:pk, 0:pm], data=a[0:pm, 0:pk])
                a_t = nl.ndarray((TK, TM), dtype=A.dtype, buffer=nl.sbuf)
                nisa.tensor_copy(dst=a_t[0:pk, 0:pm], src=a_t_ps[0:pk, 0:pm])
                b = nl.ndarray((TK, TN), dtype=B.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=b[0:pk, 0:pn], src=B[k0:k0 + pk, n0:n0 + pn])
                nisa.nc_matmul(dst=acc[0:pm, 0:pn], stationary=a_t[0:pk, 0:pm], moving=b[0:pk, 0:pn],
                               accumulate=ki > 0)
            c = nl.ndarray((TM, TN), dtype=C.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=c[0:pm, 0:pn], src=acc[0:pm, 0:pn])
            nisa.dma_copy(dst=C[m0:m0 + pm, n0:n0 + pn], src=c[0:pm, 0:pn])
    return C
