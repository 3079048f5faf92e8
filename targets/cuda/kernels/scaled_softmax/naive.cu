/* scaled_softmax / naive.cu — baseline bf16 softmax(x * scale) over the last dim.
 *
 * One block per row (grid-stride over rows), three passes over the row in
 * global memory, scalar 2-byte loads, fp32 math with the accurate expf:
 *   1. m = max_j x_j*scale          (block tree reduction in shared memory)
 *   2. s = sum_j exp(x_j*scale - m) (block tree reduction)
 *   3. y_j = exp(x_j*scale - m) / s
 * Simple and obviously correct; the reference kevo compares against.
 * Knobs:
 *   THREADS  threads per block (a power of two).
 */
// @kevo knob THREADS 256 {32, 64, 128, 256, 512, 1024}
#ifndef THREADS
#define THREADS 256
#endif

#include "kevo_kernel.h"
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <float.h>
#include <limits.h>
#include <stdint.h>

static_assert(THREADS >= 32 && THREADS <= 1024 && (THREADS & (THREADS - 1)) == 0, "THREADS: power of two");

/* Tree reduction of v over the block; all threads must call it; returns the
 * result to every thread. red has THREADS entries. */
template <bool IS_MAX>
__device__ float block_reduce(float v, float* red) {
  const int t = threadIdx.x;
  red[t] = v;
  __syncthreads();
  for (int s = THREADS / 2; s > 0; s >>= 1) {
    if (t < s) red[t] = IS_MAX ? fmaxf(red[t], red[t + s]) : red[t] + red[t + s];
    __syncthreads();
  }
  const float r = red[0];
  __syncthreads(); /* red is reused by the next reduction */
  return r;
}

__global__ void __launch_bounds__(THREADS) softmax_naive(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t rows,
                                                         int64_t n, float scale) {
  __shared__ float red[THREADS];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) { /* block-uniform */
    const __nv_bfloat16* xr = x + row * n;
    __nv_bfloat16* yr = y + row * n;
    float m = -FLT_MAX;
    for (int64_t j = threadIdx.x; j < n; j += THREADS) m = fmaxf(m, __bfloat162float(xr[j]) * scale);
    m = block_reduce<true>(m, red);
    float s = 0.0f;
    for (int64_t j = threadIdx.x; j < n; j += THREADS) s += expf(__bfloat162float(xr[j]) * scale - m);
    s = block_reduce<false>(s, red);
    for (int64_t j = threadIdx.x; j < n; j += THREADS)
      yr[j] = __float2bfloat16_rn(expf(__bfloat162float(xr[j]) * scale - m) / s);
  }
}

extern "C" KEVO_EXPORT int kevo_launch(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                                       const double* scalars, int n_scalars, cudaStream_t stream) {
  if (n_in != 1 || n_out != 1 || n_scalars < 1 || !in || !out || !scalars) return KEVO_ERR_ARGS;
  const kevo_tensor* xt = &in[0];
  kevo_tensor* yt = &out[0];
  if (xt->dtype != KEVO_BF16 || yt->dtype != KEVO_BF16) return KEVO_ERR_UNSUPPORTED;
  if (xt->rank < 1 || xt->rank > KEVO_MAX_RANK || yt->rank < 1 || yt->rank > KEVO_MAX_RANK)
    return KEVO_ERR_UNSUPPORTED;
  if (!kevo_is_contiguous(xt) || !kevo_is_contiguous(yt)) return KEVO_ERR_UNSUPPORTED;
  const int64_t n = kevo_row_len(xt);
  const int64_t numel = kevo_numel(xt);
  if (kevo_numel(yt) != numel || kevo_row_len(yt) != n) return KEVO_ERR_ARGS;
  if (numel == 0 || n <= 0) return KEVO_OK;
  const int64_t rows = numel / n;
  const unsigned int grid = (unsigned int)(rows < INT_MAX ? rows : INT_MAX);
  softmax_naive<<<grid, THREADS, 0, stream>>>(static_cast<const __nv_bfloat16*>(xt->data),
                                              static_cast<__nv_bfloat16*>(yt->data), rows, n,
                                              (float)scalars[0]);
  return cudaGetLastError() == cudaSuccess ? KEVO_OK : KEVO_ERR_RUNTIME;
}
