/* gemm_swiglu / naive — one thread per output element, the baseline family.
 *
 * y[M,N] = silu(A·Wg) * (A·Wu), silu(g) = g / (1 + exp(-g)); A, Wg, Wu, y
 * row-major bf16. Thread (i, j) runs two scalar fp32 accumulators over k, one
 * per weight, applies silu(g) * u in fp32 (accurate expf, IEEE division) and
 * writes bf16(y). Consecutive threads take consecutive columns j, so the Wg,
 * Wu loads and y stores of a warp are coalesced and its A loads are (mostly)
 * one broadcast. No shared memory, no tensor cores. Any shape and alignment.
 *
 * Knobs:
 *   THREADS  threads per block (1-D grid over the M*N outputs).
 */
// @kevo knob THREADS 256 {32, 64, 128, 256, 512, 1024}
#ifndef THREADS
#define THREADS 256
#endif

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kevo_kernel.h"

namespace {

__global__ void __launch_bounds__(THREADS)
    gemm_swiglu_naive_kernel(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ Wg,
                             const __nv_bfloat16* __restrict__ Wu, __nv_bfloat16* __restrict__ y,
                             int64_t M, int64_t N, int64_t K) {
  const int64_t idx = (int64_t)blockIdx.x * THREADS + threadIdx.x;
  if (idx >= M * N) return;
  const int64_t i = idx / N;
  const int64_t j = idx - i * N;
  const __nv_bfloat16* a = A + i * K;
  float g = 0.0f, u = 0.0f;
  for (int64_t k = 0; k < K; ++k) {
    const float av = __bfloat162float(a[k]);
    g = fmaf(av, __bfloat162float(Wg[k * N + j]), g);
    u = fmaf(av, __bfloat162float(Wu[k * N + j]), u);
  }
  y[idx] = __float2bfloat16_rn(g / (1.0f + expf(-g)) * u);
}

}  // namespace

extern "C" KEVO_EXPORT int kevo_launch(const kevo_tensor* in, int n_in, kevo_tensor* out,
                                       int n_out, const double* scalars, int n_scalars,
                                       cudaStream_t stream) {
  (void)scalars;
  if (n_in != 3 || n_out != 1 || n_scalars != 0) return KEVO_ERR_ARGS;
  for (int t = 0; t < 4; ++t) {
    const kevo_tensor* x = t < 3 ? &in[t] : &out[0];
    if (x->dtype != KEVO_BF16 || x->rank != 2 || !kevo_is_contiguous(x)) return KEVO_ERR_UNSUPPORTED;
  }
  const kevo_tensor *ta = &in[0], *tg = &in[1], *tu = &in[2], *ty = &out[0];
  const int64_t M = ta->shape[0], K = ta->shape[1], N = tg->shape[1];
  if (tg->shape[0] != K || tu->shape[0] != K || tu->shape[1] != N || ty->shape[0] != M ||
      ty->shape[1] != N)
    return KEVO_ERR_ARGS;
  if (M == 0 || N == 0) return KEVO_OK;
  const int64_t blocks = (M * N + THREADS - 1) / THREADS;
  if (blocks > INT32_MAX) return KEVO_ERR_UNSUPPORTED;
  gemm_swiglu_naive_kernel<<<(unsigned)blocks, THREADS, 0, stream>>>(
      static_cast<const __nv_bfloat16*>(ta->data), static_cast<const __nv_bfloat16*>(tg->data),
      static_cast<const __nv_bfloat16*>(tu->data), static_cast<__nv_bfloat16*>(ty->data), M, N, K);
  return cudaGetLastError() == cudaSuccess ? KEVO_OK : KEVO_ERR_RUNTIME;
}
