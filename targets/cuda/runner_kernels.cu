// The device code of kevo-cuda-runner itself (not of candidates): an input
// integrity check and the copy kernel of the roof calibration. Kept apart so
// that runner_main.cpp is plain C++20 built by the host compiler.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace {

// The CUDA-core fp32 rate: every thread runs 8 independent chains of
// `iters` fused multiply-adds (16 FLOP per step), enough in flight to hide
// the FMA latency; the sum goes to `sink` so that nothing is left out.
__global__ void fma_chains(float a, float b, int iters, float* sink) {
  float x[8];
#pragma unroll
  for (int k = 0; k < 8; ++k) x[k] = 1e-3f * static_cast<float>(threadIdx.x + k);
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int k = 0; k < 8; ++k) x[k] = fmaf(x[k], a, b);
  }
  float sum = 0;
#pragma unroll
  for (int k = 0; k < 8; ++k) sum += x[k];
  if (sum == 12345.678f) *sink = sum;  // never true for these a, b: the store stays
}

// Counts words of `a` that differ from `b`.
__global__ void count_diff(const uint32_t* a, const uint32_t* b, size_t n, unsigned long long* out) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    local += a[i] != b[i];
  if (local) atomicAdd(out, local);
}

// 16 bytes per thread per step, grid-stride.
__global__ void copy16(const int4* __restrict__ src, int4* __restrict__ dst, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

// Writes `v` to every 16-byte word: the L2 flush (as a framework's zero_()).
__global__ void fill16(int4* __restrict__ dst, size_t n, int v) {
  const int4 w = make_int4(v, v, v, v);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    dst[i] = w;
}

// Reads every 16-byte word: an L2 flush that leaves no dirty lines behind.
__global__ void read16(const int4* __restrict__ src, size_t n, int* sink) {
  int x = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const int4 w = src[i];
    x ^= w.x ^ w.y ^ w.z ^ w.w;
  }
  if (x == 0x7fffffff) *sink = x;  // never in practice; keeps the loads
}

// Keeps the GPU busy for `ns` nanoseconds of its global timer (one thread).
__global__ void spin_ns(long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (static_cast<long long>(t - t0) < ns);
}

}  // namespace

// Queues `us` microseconds of GPU time on `stream` (the launch cover).
void kevo_spin(double us, cudaStream_t stream) {
  spin_ns<<<1, 1, 0, stream>>>(static_cast<long long>(us * 1e3));
}

// L2 flush of `bytes` (a multiple of 16): mode 0 writes `value` with a kernel,
// 1 cudaMemsetAsync, 2 only reads (sink: 4 bytes of device memory).
void kevo_flush(void* p, size_t bytes, int mode, int value, int* sink, int blocks,
                cudaStream_t stream) {
  if (mode == 1)
    cudaMemsetAsync(p, value & 0xFF, bytes, stream);
  else if (mode == 2)
    read16<<<blocks, 512, 0, stream>>>(static_cast<const int4*>(p), bytes / 16, sink);
  else
    fill16<<<blocks, 512, 0, stream>>>(static_cast<int4*>(p), bytes / 16, value);
}

// Adds to *count the number of 4-byte words where a and b differ.
void kevo_count_diff(const void* a, const void* b, size_t words, unsigned long long* count,
                     cudaStream_t stream) {
  count_diff<<<1024, 256, 0, stream>>>(static_cast<const uint32_t*>(a),
                                       static_cast<const uint32_t*>(b), words, count);
}

// fp32 FMA chains on `blocks` blocks of 256 threads: 16 * iters FLOP per thread.
void kevo_fma_chains(int blocks, int iters, float* sink, cudaStream_t stream) {
  fma_chains<<<blocks, 256, 0, stream>>>(0.999f, 1e-4f, iters, sink);
}

// Copies `bytes` (a multiple of 16) from src to dst.
void kevo_copy16(const void* src, void* dst, size_t bytes, int blocks, cudaStream_t stream) {
  copy16<<<blocks, 512, 0, stream>>>(static_cast<const int4*>(src), static_cast<int4*>(dst),
                                     bytes / 16);
}
