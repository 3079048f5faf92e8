// The device code of kevo-cuda-runner itself (not of candidates): an input
// integrity check and the copy kernel of the roof calibration. Kept apart so
// that runner_main.cpp is plain C++20 built by the host compiler.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace {

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

}  // namespace

// Adds to *count the number of 4-byte words where a and b differ.
void kevo_count_diff(const void* a, const void* b, size_t words, unsigned long long* count,
                     cudaStream_t stream) {
  count_diff<<<1024, 256, 0, stream>>>(static_cast<const uint32_t*>(a),
                                       static_cast<const uint32_t*>(b), words, count);
}

// Copies `bytes` (a multiple of 16) from src to dst.
void kevo_copy16(const void* src, void* dst, size_t bytes, int blocks, cudaStream_t stream) {
  copy16<<<blocks, 512, 0, stream>>>(static_cast<const int4*>(src), static_cast<int4*>(dst),
                                     bytes / 16);
}
