# rmsnorm / rows.py (NKI 0.4): y = x * rsqrt(mean(x^2) + eps) * w over the
# last dim; x is [rows, n] (kevo folds the leading dims), fp32 math.
#
# P rows per tile, one per partition; the whole row in the tile's free
# dimension (n * 14 bytes per partition: up to ~13k columns in SBUF). w is
# copied into every partition once. Per tile: the sum of squares (Scalar
# engine: square with an add-reduce, or Vector engine: multiply then reduce),
# 1 / sqrt(ss / n + eps), then x * inv * w.
# Not verified on Trainium: checked in kevo's NumPy model of NKI only.
# Knobs:
#   P       rows per tile (partitions used)
#   SUMSQ   0: sum of squares on the Scalar engine (activation + reduce),
#           1: on the Vector engine (tensor_tensor, tensor_reduce)
#   LOOP    0: the tile loop is nl.affine_range (iterations independent: the
#           compiler may overlap one tile's DMA with another's compute, i.e.
#           double-buffer), 1: nl.sequential_range (one tile after another)
# @kevo knob P 128 {32, 64, 128}
# @kevo knob SUMSQ 0 {0, 1}
# @kevo knob LOOP 0 {0, 1}
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kevo_nki(x, w, eps):
    rows, n = x.shape
    y = nl.ndarray((rows, n), dtype=x.dtype, buffer=nl.shared_hbm)
    w_all = nl.ndarray((P, n), dtype=w.dtype, buffer=nl.sbuf)
    w_row = w.reshape((1, n))
    for p in nl.affine_range(P):
        nisa.dma_copy(dst=w_all[p:p + 1, 0:n], src=w_row[0:1, 0:n])
    tiles = nl.affine_range if LOOP == 0 else nl.sequential_range
    for t in tiles((rows + P - 1) // P):
        r0 = t * P
        pr = min(P, rows - r0)
        xt = nl.ndarray((P, n), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt[0:pr, 0:n], src=x[r0:r0 + pr, 0:n])
        sq = nl.ndarray((P, n), dtype=nl.float32, buffer=nl.sbuf)
        ss = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        if SUMSQ == 0:
            nisa.activation(dst=sq[0:pr, 0:n], op=nl.square, data=xt[0:pr, 0:n],
                            reduce_op=nl.add, reduce_res=ss[0:pr, 0:1])
        else:
            nisa.tensor_tensor(dst=sq[0:pr, 0:n], data1=xt[0:pr, 0:n], data2=xt[0:pr, 0:n],
                               op=nl.multiply)
            nisa.tensor_reduce(dst=ss[0:pr, 0:1], op=nl.add, data=sq[0:pr, 0:n], axis=1,
                               keepdims=True)
        ms = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=ms[0:pr, 0:1], data=ss[0:pr, 0:1], op0=nl.multiply,
                           operand0=1.0 / n, op1=nl.add, operand1=eps)
        inv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=inv[0:pr, 0:1], op=nl.rsqrt, data=ms[0:pr, 0:1])
        nisa.tensor_scalar(dst=sq[0:pr, 0:n], data=xt[0:pr, 0:n], op0=nl.multiply,
                           operand0=inv[0:pr, 0:1])
        yt = nl.ndarray((P, n), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=yt[0:pr, 0:n], data1=sq[0:pr, 0:n], data2=w_all[0:pr, 0:n],
                           op=nl.multiply)
        nisa.dma_copy(dst=y[r0:r0 + pr, 0:n], src=yt[0:pr, 0:n])
    return y
