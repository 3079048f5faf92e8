# kevo_triton.py — the contract every kevo Triton candidate implements.
#
# A candidate is one Python module: @triton.jit kernels and one launch
# function. kevo's runner sets the module's knobs (and the task's shape
# constants of the timed shape: KEVO_RANK_<tensor>, KEVO_DIM_<tensor>_<axis>,
# KEVO_LAST_<tensor>) as module globals, runs the module, then calls
# kevo_launch once per check and many times while timing. Knobs are declared
# in comments:
#
#   # @kevo knob BLOCK_N 4096 {1024, 2048, 4096}
#   # @kevo require BLOCK_N >= 1024
#
# Imports: torch, triton, triton.language (as tl) and math only. No files,
# processes, network, environment, reflection, private (_name) attributes,
# own streams or devices, and no triton.autotune: kevo is the tuner.
import torch
import triton
import triton.language as tl


def kevo_launch(inputs, outputs, scalars):
    """Launches the kernels that compute `outputs` from `inputs`.

    inputs, outputs: tuples of torch tensors on the GPU, in the operator's
        tensor order (inputs first as the task lists them, then outputs),
        row-major and contiguous, with the task's dtypes and shapes (the timed
        shape and smaller ragged ones: read sizes from .shape).
    scalars: tuple of floats, in the operator's scalar order.

    Launch on torch's current stream (the default: pass no stream). Write
    every element of every output: kevo poisons them before each call and
    checks them against its CPU reference. Do not write to inputs or past
    the outputs' ends. Return 0 on success; any other value is a failure.
    """
    return 0
