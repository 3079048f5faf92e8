"""nki.language in kevo's NumPy model (see nki/__init__.py): buffers,
dtypes, tensors, loop ranges, and the functions the ISA operations take as
their `op`."""
import numpy as np


class NkiModelError(Exception):
    """A rule of NKI that the kernel broke (as the model sees it)."""


class _Buffer:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "nl." + self.name


shared_hbm = _Buffer("shared_hbm")
private_hbm = _Buffer("private_hbm")
hbm = _Buffer("hbm")
sbuf = _Buffer("sbuf")
psum = _Buffer("psum")
ON_CHIP = ("sbuf", "psum")


def _dtype(name, storage):
    # A NumPy dtype that carries its NKI name: tensors keep it through
    # slices, so a kernel's `x.dtype` names the NKI dtype as on Neuron.
    return np.dtype(storage, metadata={"nki": name})


float32 = _dtype("float32", np.float32)
bfloat16 = _dtype("bfloat16", np.float32)  # held as float32, rounded to bf16 on every write
float16 = _dtype("float16", np.float16)
int32 = _dtype("int32", np.int32)
DTYPES = {"f32": float32, "bf16": bfloat16, "f16": float16, "i32": int32}
ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2, "int32": 4}


def nki_name(dtype):
    """The NKI name of a dtype ("bfloat16"); a plain NumPy dtype by its own name."""
    md = getattr(dtype, "metadata", None) or {}
    return md.get("nki", np.dtype(dtype).name)


class tile_size:
    pmax = 128
    psum_fmax = 512
    gemm_stationary_fmax = 128
    gemm_moving_fmax = 512


PSUM_BYTES_PER_PARTITION = 16 * 1024
PSUM_BANK_BYTES = 2 * 1024


def round_bf16(a):
    """float32 values rounded to the nearest bfloat16 (ties to even)."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    u = a.view(np.uint32).astype(np.uint64)
    nan = np.isnan(a)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    out = u.astype(np.uint32).view(np.float32)
    return np.where(nan, a, out)


class Tensor(np.ndarray):
    """A NumPy array that knows its NKI buffer (slices keep it)."""

    def __array_finalize__(self, obj):
        self.buffer = getattr(obj, "buffer", "hbm")


def _make(shape, dtype, buffer_name):
    shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    if buffer_name in ON_CHIP:
        if not shape or shape[0] > tile_size.pmax:
            raise NkiModelError("a %s tile has at most %d partitions (its first dimension); got shape %s"
                                % (buffer_name, tile_size.pmax, shape))
        free = 1
        for s in shape[1:]:
            free *= s
        if buffer_name == "psum" and free * 4 > PSUM_BYTES_PER_PARTITION:
            raise NkiModelError("a psum tile holds at most %d bytes per partition; shape %s needs %d"
                                % (PSUM_BYTES_PER_PARTITION, shape, free * 4))
    # Memory a kernel has not written holds NaN (floats) or a pattern
    # (integers), not zeros: on a device it holds whatever was there, and a
    # kernel that leaves part of an output or reads a tile before writing it
    # must not pass by luck.
    t = np.empty(shape, dtype=dtype).view(Tensor)
    t.fill(np.nan if np.dtype(dtype).kind == "f" else -0x5A5A5A5A)
    t.buffer = buffer_name
    return t


def ndarray(shape, dtype, buffer=sbuf, name="", address=None):
    if nki_name(dtype) not in ITEMSIZE:
        raise NkiModelError("nl.ndarray: dtype %s is not one the model holds (nl.float32, nl.bfloat16, "
                            "nl.float16, nl.int32)" % nki_name(dtype))
    return _make(shape, dtype, buffer.name if isinstance(buffer, _Buffer) else str(buffer))


def zeros(shape, dtype, buffer=sbuf, name=""):
    t = ndarray(shape, dtype, buffer, name)
    t.fill(0)
    return t


def hbm_tensor(array, dtype):
    """An input or output in HBM (the model's harness makes these)."""
    t = np.empty(np.shape(array), dtype=dtype).view(Tensor)
    t[...] = round_bf16(array) if nki_name(dtype) == "bfloat16" else array
    t.buffer = "hbm"
    return t


def affine_range(start, stop=None, step=1):
    return range(start, stop, step) if stop is not None else range(start)


sequential_range = affine_range
static_range = affine_range


# The functions an ISA operation applies (`op=`), also callable on arrays.
def exp(x):
    return np.exp(x)


def rsqrt(x):
    return 1.0 / np.sqrt(x)


def sqrt(x):
    return np.sqrt(x)


def square(x):
    return np.square(x)


def reciprocal(x):
    return 1.0 / x


def copy(x):
    return np.array(x, copy=True)


def silu(x):
    return x / (1.0 + np.exp(-x))


def add(x, y):
    return np.add(x, y)


def subtract(x, y):
    return np.subtract(x, y)


def multiply(x, y):
    return np.multiply(x, y)


def maximum(x, y):
    return np.maximum(x, y)


def minimum(x, y):
    return np.minimum(x, y)
