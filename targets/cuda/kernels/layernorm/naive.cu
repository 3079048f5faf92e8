/* layernorm / naive.cu — simple baseline: y = (x - mean) * rsqrt(var + eps) * w + b
 * over the last dim (biased variance), bf16 storage, fp32 math.
 *
 * One block per row (grid-stride over the rows when there are more rows than
 * blocks), scalar bf16 loads, three passes over the row: the sum (-> mean),
 * the sum of (x - mean)^2 (-> var, exact two-pass: no cancellation however far
 * the mean is from 0), then the output. Each sum is a shared-memory tree
 * reduction returned to every thread. Any row length and alignment works.
 * Knobs:
 *   THREADS  threads per block (a power of two).
 */
// @kevo knob THREADS 256 {32, 64, 128, 256, 512, 1024}
#ifndef THREADS
#define THREADS 256
#endif

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kevo_kernel.h"

#if (THREADS & (THREADS - 1)) != 0 || THREADS < 32 || THREADS > 1024
#error "THREADS must be a power of two in [32, 1024]"
#endif

typedef __nv_bfloat16 bf16;

/* sum of v over the block, returned to every thread; called by all threads */
__device__ __forceinline__ float block_sum(float v, float* red) {
  red[threadIdx.x] = v;
  __syncthreads();
  for (int o = THREADS / 2; o > 0; o >>= 1) {
    if ((int)threadIdx.x < o) red[threadIdx.x] += red[threadIdx.x + o];
    __syncthreads();
  }
  const float s = red[0];
  __syncthreads(); /* every thread has read red[0] before red is reused */
  return s;
}

__global__ void __launch_bounds__(THREADS) ln_naive(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                                    const bf16* __restrict__ b, bf16* __restrict__ y, int64_t M,
                                                    int64_t N, float eps) {
  __shared__ float red[THREADS];
  for (int64_t row = blockIdx.x; row < M; row += gridDim.x) { /* uniform over the block */
    const bf16* xr = x + row * N;
    bf16* yr = y + row * N;
    float s = 0.f;
    for (int64_t j = threadIdx.x; j < N; j += THREADS) s += __bfloat162float(xr[j]);
    const float mean = block_sum(s, red) / (float)N;
    float q = 0.f;
    for (int64_t j = threadIdx.x; j < N; j += THREADS) {
      const float d = __bfloat162float(xr[j]) - mean;
      q += d * d;
    }
    const float rstd = rsqrtf(block_sum(q, red) / (float)N + eps);
    for (int64_t j = threadIdx.x; j < N; j += THREADS)
      yr[j] = __float2bfloat16_rn((__bfloat162float(xr[j]) - mean) * rstd * __bfloat162float(w[j]) +
                                  __bfloat162float(b[j]));
  }
}

static int kv_check(const kevo_tensor* t) {
  if (t->dtype != KEVO_BF16) return KEVO_ERR_UNSUPPORTED;
  if (t->rank < 1 || t->rank > KEVO_MAX_RANK || !kevo_is_contiguous(t)) return KEVO_ERR_UNSUPPORTED;
  return KEVO_OK;
}

extern "C" KEVO_EXPORT int kevo_launch(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                                       const double* scalars, int n_scalars, cudaStream_t stream) {
  if (n_in != 3 || n_out != 1 || n_scalars < 1) return KEVO_ERR_ARGS;
  int rc;
  if ((rc = kv_check(&in[0])) || (rc = kv_check(&in[1])) || (rc = kv_check(&in[2])) || (rc = kv_check(&out[0])))
    return rc;
  const int64_t N = kevo_row_len(&in[0]);
  const int64_t M = kevo_rows(&in[0]);
  if (kevo_numel(&in[1]) != N || kevo_numel(&in[2]) != N || kevo_numel(&out[0]) != M * N ||
      kevo_row_len(&out[0]) != N)
    return KEVO_ERR_ARGS;
  if (M <= 0 || N <= 0) return KEVO_OK;
  const int64_t grid = M < 2147483647LL ? M : 2147483647LL;
  ln_naive<<<(unsigned)grid, THREADS, 0, stream>>>((const bf16*)in[0].data, (const bf16*)in[1].data,
                                                    (const bf16*)in[2].data, (bf16*)out[0].data, M, N,
                                                    (float)scalars[0]);
  return cudaGetLastError() == cudaSuccess ? KEVO_OK : KEVO_ERR_RUNTIME;
}
