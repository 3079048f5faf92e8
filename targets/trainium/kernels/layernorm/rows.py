# layernorm / rows.py (NKI 0.4): y = (x - mean) * rsqrt(var + eps) * w + b
# over the last dim; x is [rows, n] (kevo folds the leading dims), fp32 math.
#
# P rows per tile, one per partition, the whole row in the free dimension;
# w and b copied into every partition once. Two passes over the tile in
# SBUF: the mean, then the variance of the centred row (not E[x^2] - mean^2,
# which cancels when the mean is large against the spread).
# Not verified on Trainium: checked in kevo's NumPy model of NKI only.
# Knobs:
#   P       rows per tile (partitions used)
#   MEAN    0: the row sums on the Vector engine (tensor_reduce), 1: on the
#           Scalar engine (activation copy with an add-reduce)
#   LOOP    0: the tile loop is nl.affine_range (iterations independent: the
#           compiler may overlap one tile's DMA with another's compute, i.e.
#           double-buffer), 1: nl.sequential_range (one tile after another)
# @kevo knob P 128 {32, 64, 128}
# @kevo knob LOOP 0 {0, 1}
# @kevo knob MEAN 0 {0, 1}
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kevo_nki(x, w, b, eps):
    rows, n = x.shape
    y = nl.ndarray((rows, n), dtype=x.dtype, buffer=nl.shared_hbm)
    w_all = nl.ndarray((P, n), dtype=w.dtype, buffer=nl.sbuf)
    b_all = nl.ndarray((P, n), dtype=b.dtype, buffer=nl.sbuf)
    w_row = w.reshape((1, n))
    b_row = b.reshape((1, n))
    for p in nl.affine_range(P):
        nisa.dma_copy(dst=w_all[p:p + 1, 0:n], src=w_row[0:1, 0:n])
        nisa.dma_copy(dst=b_all[p:p + 1, 0:n], src=b_row[0:1, 0:n])
    tiles = nl.affine_range if LOOP == 0 else nl.sequential_range
    for t in tiles((rows + P - 1) // P):
        r0 = t * P
        pr = min(P, rows - r0)
        xt = nl.ndarray((P, n), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt[0:pr, 0:n], src=x[r0:r0 + pr, 0:n])
        s1 = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        if MEAN == 0:
            nisa.tensor_reduce(dst=s1[0:pr, 0:1], op=nl.add, data=xt[0:pr, 0:n], axis=1, keepdims=True)
        else:
            junk = nl.ndarray((P, n), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=junk[0:pr, 0:n], op=nl.copy, data=xt[0:pr, 0:n], reduce_op=nl.add,
                            reduce_res=s1[0:pr, 0:1])
        neg_mean = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=neg_mean[0:pr, 0:1], data=s1[0:pr, 0:1], op0=nl.multiply,
                           operand0=-1.0 / n)
        xc = nl.ndarray((P, n), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=xc[0:pr, 0:n], data=xt[0:pr, 0:n], op0=nl.add,
                           operand0=neg_mean[0:pr, 0:1])
        sq = nl.ndarray((P, n), dtype=nl.float32, buffer=nl.sbuf)
        s2 = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=sq[0:pr, 0:n], op=nl.square, data=xc[0:pr, 0:n], reduce_op=nl.add,
                        reduce_res=s2[0:pr, 0:1])
        var = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=var[0:pr, 0:1], data=s2[0:pr, 0:1], op0=nl.multiply,
                           operand0=1.0 / n, op1=nl.add, operand1=eps)
        inv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=inv[0:pr, 0:1], op=nl.rsqrt, data=var[0:pr, 0:1])
        nisa.tensor_scalar(dst=xc[0:pr, 0:n], data=xc[0:pr, 0:n], op0=nl.multiply,
                           operand0=inv[0:pr, 0:1])
        nisa.tensor_tensor(dst=sq[0:pr, 0:n], data1=xc[0:pr, 0:n], data2=w_all[0:pr, 0:n],
                           op=nl.multiply)
        yt = nl.ndarray((P, n), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=yt[0:pr, 0:n], data1=sq[0:pr, 0:n], data2=b_all[0:pr, 0:n],
                           op=nl.add)
        nisa.dma_copy(dst=y[r0:r0 + pr, 0:n], src=yt[0:pr, 0:n])
    return y
