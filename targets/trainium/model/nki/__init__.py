"""kevo's NumPy model of the NKI 0.4 operations its Trainium kernels use.

NOT the Neuron compiler, NOT the Neuron simulator (nki.simulate), NOT
hardware: a model, written for kevo from the NKI documentation, that runs a
kernel's arithmetic on the CPU so that kevo can check its numerics against
kevo's own reference on machines without the Neuron SDK (every machine but a
Trainium host: the Neuron packages on PyPI are placeholders). It also holds
kernels to the rules the documentation states and a model can see: tiles in
SBUF and PSUM have at most 128 partitions; the engines read and write SBUF
and PSUM, never HBM (dma_copy moves data between them); nc_matmul writes
PSUM from a stationary [K <= 128, M <= 128] and a moving [K, N <= 512] tile;
a PSUM tile holds at most 2 KiB per partition per bank; the partition axis
is not reduced. What it cannot see (instruction counts, engine placement,
timing, the compiler's own limits) only the real tools can: a kernel the
model runs may still fail to compile on a Trainium host.

Only on sys.path when kevo runs a kernel in the model (never on a Trainium
host, where `import nki` is the SDK's).
"""
from . import language, isa  # noqa: F401

__version__ = "0.4-model"
MODEL = True


def jit(fn=None, **_options):
    """@nki.jit: the model runs the function on NumPy arrays as it is."""
    if fn is None:
        return lambda f: f
    return fn
