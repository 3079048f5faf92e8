"""nki.isa in kevo's NumPy model (see nki/__init__.py): each operation
writes its `dst` (the first argument), as in NKI 0.4."""
import numpy as np

from . import language as nl
from .language import NkiModelError, Tensor


def _need(t, what, buffers):
    if not isinstance(t, Tensor):
        raise NkiModelError("%s: expected an NKI tensor, got %s" % (what, type(t).__name__))
    where = "hbm" if t.buffer.endswith("hbm") else t.buffer  # shared_hbm, private_hbm, hbm
    if where not in buffers:
        raise NkiModelError("%s is in %s; it must be in %s" % (what, t.buffer, " or ".join(buffers)))


def _write(dst, value, op):
    value = np.asarray(value, dtype=np.float64)
    try:
        value = np.broadcast_to(value, dst.shape)
    except ValueError:
        raise NkiModelError("%s: the result's shape %s does not fit dst %s" % (op, value.shape, dst.shape))
    if nl.nki_name(dst.dtype) == "bfloat16":
        dst[...] = nl.round_bf16(value.astype(np.float32))
    else:
        dst[...] = value.astype(dst.dtype)


def _operand(x, data, what):
    """A scalar, or a (P, 1) tile broadcast along the free axes."""
    if isinstance(x, Tensor):
        _need(x, what, nl.ON_CHIP)
        if x.shape[0] != data.shape[0] or any(s != 1 for s in x.shape[1:]):
            raise NkiModelError("%s: a tile operand must be (partitions, 1), got %s for data %s"
                                % (what, x.shape, data.shape))
        return np.asarray(x, dtype=np.float64).reshape((x.shape[0],) + (1,) * (data.ndim - 1))
    return float(x)


def dma_copy(dst, src, **_kw):
    """Moves data between HBM and SBUF (the model: any pair but PSUM)."""
    _need(dst, "dma_copy dst", ("hbm", "sbuf"))
    _need(src, "dma_copy src", ("hbm", "sbuf"))
    if dst.shape != src.shape:
        raise NkiModelError("dma_copy: dst %s and src %s differ in shape" % (dst.shape, src.shape))
    _write(dst, src, "dma_copy")


def tensor_copy(dst, src, **_kw):
    _need(dst, "tensor_copy dst", nl.ON_CHIP)
    _need(src, "tensor_copy src", nl.ON_CHIP)
    _write(dst, src, "tensor_copy")


def memset(dst, value, **_kw):
    _need(dst, "memset dst", nl.ON_CHIP)
    _write(dst, value, "memset")


def activation(dst, op, data, bias=None, scale=1.0, reduce_op=None, reduce_res=None, **_kw):
    """dst = op(data * scale + bias); with reduce_res, also its sum along the free axes."""
    _need(dst, "activation dst", nl.ON_CHIP)
    _need(data, "activation data", nl.ON_CHIP)
    x = np.asarray(data, dtype=np.float64) * _operand(scale, data, "activation scale")
    if bias is not None:
        x = x + _operand(bias, data, "activation bias")
    _write(dst, op(x), "activation")
    if reduce_res is not None:
        if reduce_op is not nl.add:
            raise NkiModelError("activation: reduce_op must be nl.add")
        _need(reduce_res, "activation reduce_res", nl.ON_CHIP)
        axes = tuple(range(1, dst.ndim))
        _write(reduce_res, np.sum(np.asarray(dst, dtype=np.float64), axis=axes, keepdims=True), "activation")


def tensor_scalar(dst, data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False, **_kw):
    """dst = op1(op0(data, operand0), operand1), operands scalars or (P, 1) tiles."""
    _need(dst, "tensor_scalar dst", nl.ON_CHIP)
    _need(data, "tensor_scalar data", nl.ON_CHIP)
    x = np.asarray(data, dtype=np.float64)
    a = _operand(operand0, data, "tensor_scalar operand0")
    x = op0(a, x) if reverse0 else op0(x, a)
    if op1 is not None:
        b = _operand(operand1, data, "tensor_scalar operand1")
        x = op1(b, x) if reverse1 else op1(x, b)
    _write(dst, x, "tensor_scalar")


def tensor_tensor(dst, data1, data2, op, **_kw):
    _need(dst, "tensor_tensor dst", nl.ON_CHIP)
    _need(data1, "tensor_tensor data1", nl.ON_CHIP)
    _need(data2, "tensor_tensor data2", nl.ON_CHIP)
    if data1.shape != data2.shape:
        raise NkiModelError("tensor_tensor: data1 %s and data2 %s differ in shape (no broadcasting)"
                            % (data1.shape, data2.shape))
    _write(dst, op(np.asarray(data1, dtype=np.float64), np.asarray(data2, dtype=np.float64)), "tensor_tensor")


def tensor_reduce(dst, op, data, axis, negate=False, keepdims=False, **_kw):
    _need(dst, "tensor_reduce dst", nl.ON_CHIP)
    _need(data, "tensor_reduce data", nl.ON_CHIP)
    axes = tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)
    if 0 in axes:
        raise NkiModelError("tensor_reduce: the partition axis (0) cannot be reduced")
    fn = {nl.add: np.sum, nl.maximum: np.max, nl.minimum: np.min, nl.multiply: np.prod}.get(op)
    if fn is None:
        raise NkiModelError("tensor_reduce: op must be nl.add, nl.maximum, nl.minimum or nl.multiply")
    r = fn(np.asarray(data, dtype=np.float64), axis=axes, keepdims=keepdims)
    _write(dst, -r if negate else r, "tensor_reduce")


def nc_matmul(dst, stationary, moving, accumulate=None, **_kw):
    """dst (PSUM) = stationary.T @ moving, or += with accumulate=True."""
    _need(dst, "nc_matmul dst", ("psum",))
    _need(stationary, "nc_matmul stationary", ("sbuf",))
    _need(moving, "nc_matmul moving", ("sbuf",))
    if stationary.ndim != 2 or moving.ndim != 2:
        raise NkiModelError("nc_matmul: stationary and moving are 2-D tiles")
    k, m = stationary.shape
    k2, n = moving.shape
    if k != k2 or k > nl.tile_size.pmax or m > nl.tile_size.gemm_stationary_fmax \
            or n > nl.tile_size.gemm_moving_fmax:
        raise NkiModelError("nc_matmul: stationary [K<=128, M<=128] and moving [K, N<=512]; got %s and %s"
                            % (stationary.shape, moving.shape))
    if dst.shape != (m, n):
        raise NkiModelError("nc_matmul: dst must be [M, N] = [%d, %d], got %s" % (m, n, dst.shape))
    if n * 4 > nl.PSUM_BANK_BYTES:
        raise NkiModelError("nc_matmul: dst's free size %d fp32 is over a PSUM bank (512)" % n)
    if accumulate is None:
        raise NkiModelError("nc_matmul: kevo's model needs accumulate=True or False stated")
    r = np.asarray(stationary, dtype=np.float64).T @ np.asarray(moving, dtype=np.float64)
    if accumulate:
        r = r + np.asarray(dst, dtype=np.float64)
    _write(dst, r, "nc_matmul")


def nc_transpose(dst, data, **_kw):
    """dst (PSUM) = data.T, on the Tensor engine."""
    _need(dst, "nc_transpose dst", ("psum",))
    _need(data, "nc_transpose data", ("sbuf",))
    if data.ndim != 2 or dst.shape != (data.shape[1], data.shape[0]):
        raise NkiModelError("nc_transpose: dst must be data's transpose, got %s for %s" % (dst.shape, data.shape))
    _write(dst, np.asarray(data, dtype=np.float64).T, "nc_transpose")


def reciprocal(dst, data, **_kw):
    _need(dst, "reciprocal dst", nl.ON_CHIP)
    _need(data, "reciprocal data", nl.ON_CHIP)
    _write(dst, 1.0 / np.asarray(data, dtype=np.float64), "reciprocal")
