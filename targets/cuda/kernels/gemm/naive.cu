/* gemm / naive — one thread per output element, the baseline family.
 *
 * C[M,N] = A[M,K] · B[K,N]; A, B, C row-major bf16. Thread (i, j) runs a
 * scalar fp32 accumulator over k and writes bf16(acc). Consecutive threads
 * take consecutive columns j, so the B loads and C stores of a warp are
 * coalesced and its A loads are (mostly) one broadcast. No shared memory,
 * no tensor cores. Any shape and alignment.
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
    gemm_naive_kernel(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                      __nv_bfloat16* __restrict__ C, int64_t M, int64_t N, int64_t K) {
  const int64_t idx = (int64_t)blockIdx.x * THREADS + threadIdx.x;
  if (idx >= M * N) return;
  const int64_t i = idx / N;
  const int64_t j = idx - i * N;
  const __nv_bfloat16* a = A + i * K;
  const __nv_bfloat16* b = B + j;
  float acc = 0.0f;
  for (int64_t k = 0; k < K; ++k) acc = fmaf(__bfloat162float(a[k]), __bfloat162float(b[k * N]), acc);
  C[idx] = __float2bfloat16_rn(acc);
}

}  // namespace

extern "C" KEVO_EXPORT int kevo_launch(const kevo_tensor* in, int n_in, kevo_tensor* out,
                                       int n_out, const double* scalars, int n_scalars,
                                       cudaStream_t stream) {
  (void)scalars;
  if (n_in != 2 || n_out != 1 || n_scalars != 0) return KEVO_ERR_ARGS;
  const kevo_tensor *ta = &in[0], *tb = &in[1], *tc = &out[0];
  if (ta->dtype != KEVO_BF16 || tb->dtype != KEVO_BF16 || tc->dtype != KEVO_BF16)
    return KEVO_ERR_UNSUPPORTED;
  if (ta->rank != 2 || tb->rank != 2 || tc->rank != 2) return KEVO_ERR_UNSUPPORTED;
  if (!kevo_is_contiguous(ta) || !kevo_is_contiguous(tb) || !kevo_is_contiguous(tc))
    return KEVO_ERR_UNSUPPORTED;
  const int64_t M = ta->shape[0], K = ta->shape[1], N = tb->shape[1];
  if (tb->shape[0] != K || tc->shape[0] != M || tc->shape[1] != N) return KEVO_ERR_ARGS;
  if (M == 0 || N == 0) return KEVO_OK;
  const int64_t blocks = (M * N + THREADS - 1) / THREADS;
  if (blocks > INT32_MAX) return KEVO_ERR_UNSUPPORTED;
  gemm_naive_kernel<<<(unsigned)blocks, THREADS, 0, stream>>>(
      static_cast<const __nv_bfloat16*>(ta->data), static_cast<const __nv_bfloat16*>(tb->data),
      static_cast<__nv_bfloat16*>(tc->data), M, N, K);
  return cudaGetLastError() == cudaSuccess ? KEVO_OK : KEVO_ERR_RUNTIME;
}
