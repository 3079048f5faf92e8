/* swiglu / naive.cu — baseline bf16 SwiGLU: y = g / (1 + exp(-g)) * u.
 *
 * One element per thread (grid-stride only when the element count needs more
 * than 2^31-1 blocks), scalar 2-byte loads and stores, fp32 math with the
 * accurate expf and an IEEE division. The reference kevo compares against.
 * Knobs:
 *   THREADS  threads per block.
 */
// @kevo knob THREADS 256 {64, 128, 256, 512, 1024}
#ifndef THREADS
#define THREADS 256
#endif

#include "kevo_kernel.h"
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <limits.h>
#include <stdint.h>

__global__ void __launch_bounds__(THREADS) swiglu_naive(const __nv_bfloat16* g, const __nv_bfloat16* u,
                                                        __nv_bfloat16* y, int64_t numel) {
  const int64_t stride = (int64_t)gridDim.x * THREADS;
  for (int64_t i = (int64_t)blockIdx.x * THREADS + threadIdx.x; i < numel; i += stride) {
    const float gv = __bfloat162float(g[i]);
    const float uv = __bfloat162float(u[i]);
    y[i] = __float2bfloat16_rn(gv / (1.0f + expf(-gv)) * uv);
  }
}

extern "C" KEVO_EXPORT int kevo_launch(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                                       const double* scalars, int n_scalars, cudaStream_t stream) {
  (void)scalars;
  (void)n_scalars;
  if (n_in != 2 || n_out != 1 || !in || !out) return KEVO_ERR_ARGS;
  for (int i = 0; i < 3; ++i) {
    const kevo_tensor* t = i < 2 ? &in[i] : &out[0];
    if (t->dtype != KEVO_BF16) return KEVO_ERR_UNSUPPORTED;
    if (t->rank < 1 || t->rank > KEVO_MAX_RANK || !kevo_is_contiguous(t)) return KEVO_ERR_UNSUPPORTED;
  }
  const int64_t numel = kevo_numel(&in[0]);
  if (kevo_numel(&in[1]) != numel || kevo_numel(&out[0]) != numel) return KEVO_ERR_ARGS;
  if (numel == 0) return KEVO_OK;
  int64_t grid = (numel + THREADS - 1) / THREADS;
  if (grid > INT_MAX) grid = INT_MAX;
  swiglu_naive<<<(unsigned int)grid, THREADS, 0, stream>>>(static_cast<const __nv_bfloat16*>(in[0].data),
                                                           static_cast<const __nv_bfloat16*>(in[1].data),
                                                           static_cast<__nv_bfloat16*>(out[0].data), numel);
  return cudaGetLastError() == cudaSuccess ? KEVO_OK : KEVO_ERR_RUNTIME;
}
