# scaled_softmax / rows.py (NKI 0.4): y = softmax(x * scale) over the last
# dim; x is [rows, n] (kevo folds the leading dims), fp32 math.
#
# P rows per tile, one per partition, the whole row in the free dimension.
# Per tile: s = x * scale; m = max(s) (kept negated, as the exponent's bias);
# e = exp(s - m) with its row sum from the same instruction (Scalar engine);
# y = e * (1 / sum).
# Not verified on Trainium: checked in kevo's NumPy model of NKI only.
# Knobs:
#   P       rows per tile (partitions used)
#   LOOP    0: the tile loop is nl.affine_range (iterations independent: the
#           compiler may overlap one tile's DMA with another's compute, i.e.
#           double-buffer), 1: nl.sequential_range (one tile after another)
# @kevo knob P 128 {32, 64, 128}
# @kevo knob LOOP 0 {0, 1}
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kevo_nki(x, scale):
    rows, n = x.shape
    y = nl.ndarray((rows, n), dtype=x.dtype, buffer=nl.shared_hbm)
    tiles = nl.affine_range if LOOP == 0 else nl.sequential_range
    for t in tiles((rows + P - 1) // P):
        r0 = t * P
        pr = min(P, rows - r0)
        xt = nl.ndarray((P, n), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt[0:pr, 0:n], src=x[r0:r0 + pr, 0:n])
        s = nl.ndarray((P, n), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=s[0:pr, 0:n], data=xt[0:pr, 0:n], op0=nl.multiply, operand0=scale)
        neg_max = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_max[0:pr, 0:1], op=nl.maximum, data=s[0:pr, 0:n], axis=1,
                           negate=True, keepdims=True)
        total = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=s[0:pr, 0:n], op=nl.exp, data=s[0:pr, 0:n], bias=neg_max[0:pr, 0:1],
                        reduce_op=nl.add, reduce_res=total[0:pr, 0:1])
        inv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv[0:pr, 0:1], data=total[0:pr, 0:1])
        yt = nl.ndarray((P, n), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=yt[0:pr, 0:n], data=s[0:pr, 0:n], op0=nl.multiply,
                           operand0=inv[0:pr, 0:1])
        nisa.dma_copy(dst=y[r0:r0 + pr, 0:n], src=yt[0:pr, 0:n])
    return y
