# The triton target's hostile set: swiglu (y = silu(g) * u) done right (MODE
# 0) or wrong in one of the ways a candidate can be, each of which kevo must
# classify without losing the runner for the next candidate.
#   1  kevo_launch raises                     -> crash, with the message
#   2  kevo_launch never returns              -> timeout; a fresh runner
#   3  kevo_launch returns 3                  -> crash (KEVO_ERR_...)
#   4  the kernel writes its input g          -> crash, input 'g' written
#   5  right on the first five calls only     -> mismatch on the last timed calls
#      (the first call, which compiles, and the four checks)
#   6  a kernel Triton refuses to compile     -> compile_error with the line
#   7  replaces torch.cuda.synchronize        -> crash, tampering; a fresh runner
#   8  writes far outside every buffer (GPU)  -> crash, CUDA error (sticky)
#   9  writes 16 elements past y's end        -> crash, past the end
# @kevo knob MODE 0 {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
# @kevo knob BLOCK 1024 {1024}
import torch
import triton
import triton.language as tl

CALLS = [0]


@triton.jit
def swiglu_k(g_ptr, u_ptr, y_ptr, n, BLOCK: tl.constexpr, MODE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(g_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(u_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = g / (1.0 + tl.exp(-g)) * u
    if MODE == 6:
        tl.static_assert(BLOCK < 0, "hostile: this kernel does not compile")
    if MODE == 4:
        tl.store(g_ptr + offs, y.to(g_ptr.dtype.element_ty), mask=mask)
    if MODE == 8:
        tl.store(y_ptr + offs + (1 << 40), y.to(y_ptr.dtype.element_ty), mask=mask)
    if MODE == 9:
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=offs < n + 16)
    else:
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def kevo_launch(inputs, outputs, scalars):
    g, u = inputs
    (y,) = outputs
    n = g.numel()
    CALLS[0] += 1
    if MODE == 1:
        raise ValueError("hostile: refusing to compute")
    while MODE == 2:
        pass
    if MODE == 3:
        return 3
    if MODE == 5 and CALLS[0] > 5:
        return 0
    if MODE == 7:
        c = torch.cuda
        c.synchronize = lambda: None
    swiglu_k[(triton.cdiv(n, BLOCK),)](g, u, y, n, BLOCK=BLOCK, MODE=MODE)
    return 0
