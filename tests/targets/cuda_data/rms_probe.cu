#include <cstdio>
#include <cuda_runtime.h>
#include <cuda_profiler_api.h>
#include <cuda_bf16.h>
__global__ void rms(const __nv_bfloat16* x, __nv_bfloat16* y, int n) {
  int row = blockIdx.x;
  float ss = 0;
  for (int j = threadIdx.x; j < n; j += blockDim.x) { float v = __bfloat162float(x[row*n+j]); ss += v*v; }
  __shared__ float red[32];
  for (int o = 16; o; o >>= 1) ss += __shfl_xor_sync(0xffffffff, ss, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = ss;
  __syncthreads();
  if (threadIdx.x < 32) { ss = threadIdx.x < blockDim.x/32 ? red[threadIdx.x] : 0;
    for (int o = 16; o; o >>= 1) ss += __shfl_xor_sync(0xffffffff, ss, o);
    if (threadIdx.x == 0) red[0] = ss; }
  __syncthreads();
  float r = rsqrtf(red[0] / n + 1e-6f);
  for (int j = threadIdx.x; j < n; j += blockDim.x) y[row*n+j] = __float2bfloat16(__bfloat162float(x[row*n+j]) * r);
}
int main() {
  int m = 16384, n = 4096;
  __nv_bfloat16 *x, *y; cudaMalloc(&x, m*n*2); cudaMalloc(&y, m*n*2); cudaMemset(x, 0x3f, m*n*2);
  rms<<<m, 256>>>(x, y, n); cudaDeviceSynchronize();
  cudaProfilerStart();
  rms<<<m, 256>>>(x, y, n);
  cudaDeviceSynchronize();
  cudaProfilerStop();
  printf("done %s\n", cudaGetErrorString(cudaGetLastError()));
}
