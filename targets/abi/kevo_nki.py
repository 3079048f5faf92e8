# kevo_nki.py — the contract every kevo NKI (Trainium) candidate implements.
#
# A candidate is one Python module in NKI 0.4 (`import nki`), with one
# kernel, kevo_nki. kevo sets the module's knobs as module globals, runs the
# module, then calls kevo_nki once per check (on the Neuron device, or in
# kevo's NumPy model of NKI under KEVO_NKI_MODEL=1) and, on a device, many
# times while timing. Knobs are declared in comments:
#
#   # @kevo knob P 128 {32, 64, 128}
#   # @kevo require P >= 32
#
# Imports: nki, nki.isa, nki.language and math only. No files, processes,
# network, environment, reflection or private (_name) attributes.
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kevo_nki(x, w, eps):
    """Computes the operator's outputs from its inputs (here rmsnorm's).

    Arguments: the inputs as HBM tensors, in the operator's tensor order,
    with the task's dtypes and shapes (the timed shape and smaller ragged
    ones: read sizes from .shape); tensors of rank 3 or more arrive as
    [rows, last dimension]. Then the scalars, as floats, in the operator's
    order.

    Returns the output (a tuple of them, in the operator's order when it has
    several), each made with nl.ndarray(shape, dtype, buffer=nl.shared_hbm)
    in the task's dtype and written in every element: kevo checks them
    against its CPU reference. The engines compute on SBUF and PSUM tiles of
    at most 128 partitions (nl.ndarray(..., buffer=nl.sbuf or nl.psum));
    nisa.dma_copy moves data between HBM and SBUF; nisa.nc_matmul writes PSUM.
    """
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    return y
