/* kevo_cuda_gemm_fallback.cuh — the plain bf16 GEMM that kevo's gemm families
 * run where their fast path does not apply (K or N not a multiple of 8, base
 * pointers not 16-byte aligned): C[M,N] = A[M,K] · B[K,N], row-major bf16, fp32
 * accumulation, a 32 x 32 tile of C per block of 32 x 8 threads, 32-deep K
 * slices staged in shared memory as fp32, scalar loads. Correct on any shape;
 * not fast. Includes cuda_bf16.h, cuda_runtime.h and stdint.h.
 *
 *   kv_gemm_fallback(A, B, C, M, N, K, stream)  launch it on stream; KEVO_OK,
 *                                     or KEVO_ERR_UNSUPPORTED when the grid
 *                                     would be too large (launch errors are
 *                                     the caller's cudaGetLastError)
 */
#ifndef KEVO_CUDA_GEMM_FALLBACK_CUH
#define KEVO_CUDA_GEMM_FALLBACK_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kevo_kernel.h"

constexpr int kv_gemm_fb_tile = 32;

__global__ void __launch_bounds__(256)
    kv_gemm_fallback_kernel(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                            __nv_bfloat16* __restrict__ C, int M, int N, int K, int tiles_n) {
  constexpr int T = kv_gemm_fb_tile;
  __shared__ float As[T][T + 1];
  __shared__ float Bs[T][T + 1];
  const int tx = threadIdx.x;  // 0..31: column
  const int ty = threadIdx.y;  // 0..7
  const int m0 = (blockIdx.x / tiles_n) * T;
  const int n0 = (blockIdx.x % tiles_n) * T;
  float acc[T / 8] = {};
  for (int k0 = 0; k0 < K; k0 += T) {
#pragma unroll
    for (int r = ty; r < T; r += 8) {
      const int gm = m0 + r, gk = k0 + tx;
      As[r][tx] = (gm < M && gk < K) ? __bfloat162float(A[(size_t)gm * K + gk]) : 0.0f;
      const int bk = k0 + r, bn = n0 + tx;
      Bs[r][tx] = (bk < K && bn < N) ? __bfloat162float(B[(size_t)bk * N + bn]) : 0.0f;
    }
    __syncthreads();
#pragma unroll 8
    for (int kk = 0; kk < T; ++kk) {
      const float b = Bs[kk][tx];
#pragma unroll
      for (int i = 0; i < T / 8; ++i) acc[i] = fmaf(As[ty + 8 * i][kk], b, acc[i]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < T / 8; ++i) {
    const int gm = m0 + ty + 8 * i, gn = n0 + tx;
    if (gm < M && gn < N) C[(size_t)gm * N + gn] = __float2bfloat16_rn(acc[i]);
  }
}

inline int kv_gemm_fallback(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                            int K, cudaStream_t stream) {
  constexpr int T = kv_gemm_fb_tile;
  const int tiles_n = (N + T - 1) / T;
  const int64_t tiles = (int64_t)((M + T - 1) / T) * tiles_n;
  if (tiles > INT32_MAX) return KEVO_ERR_UNSUPPORTED;
  kv_gemm_fallback_kernel<<<(unsigned)tiles, dim3(32, 8), 0, stream>>>(A, B, C, M, N, K, tiles_n);
  return KEVO_OK;
}

#endif  // KEVO_CUDA_GEMM_FALLBACK_CUH
