// What the timing method itself costs on a GPU: the same kernel timed with
// the end event on the kernel's stream and on the legacy default stream (which
// kevo's runner uses so that work on other streams stays inside a sample),
// alternately, after an L2 flush each time, as kevo-cuda-runner times.
//   nvcc -O3 -arch=sm_90a bench/micro/end_event.cu -o end_event && ./end_event
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

__global__ void copy16(const uint4* __restrict__ a, uint4* __restrict__ b, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    b[i] = a[i];
}
__global__ void empty() {}
// Keeps the GPU busy (one thread) for about `ns` nanoseconds, as torch.cuda._sleep.
__global__ void spin(long long ns) {
  const long long t0 = clock64();
  const long long cycles = ns * 2;  // ~2 GHz; only "a few hundred us" matters
  while (clock64() - t0 < cycles) {
  }
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main() {
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  const size_t bytes = size_t(128) << 20, flush_bytes = size_t(2) * prop.l2CacheSize;
  void *a, *b, *flush;
  cudaMalloc(&a, bytes);
  cudaMalloc(&b, bytes);
  cudaMalloc(&flush, flush_bytes);
  cudaMemset(a, 1, bytes);
  cudaStream_t blocking, nonblocking;
  cudaStreamCreate(&blocking);
  cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking);
  cudaEvent_t e0, e1, e2;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  cudaEventCreate(&e2);
  const size_t n = bytes / 16;
  const int grid = prop.multiProcessorCount * 8;
  for (int kernel = 0; kernel < 2; ++kernel) {
    // modes: 0 end on the stream; 1 end on the legacy stream (blocking stream);
    // 2 both, one after the other (what the stream event sees vs the legacy one)
    std::vector<double> same, legacy, both_s, both_l, nb, idle;
    for (int i = 0; i < 750; ++i) {
      const int mode = i % 5;
      cudaStream_t s = mode == 3 ? nonblocking : blocking;
      cudaDeviceSynchronize();
      cudaMemsetAsync(flush, i & 0xff, flush_bytes, s);
      // mode 4: a 300 us sleep between the flush and the start event (the
      // peers' --launch-cover-us 300): does an idle GPU change the L2's state?
      if (mode == 4) spin<<<1, 1, 0, s>>>(300000);
      cudaEventRecord(e0, s);
      if (kernel == 0) copy16<<<grid, 512, 0, s>>>((const uint4*)a, (uint4*)b, n);
      else empty<<<1, 32, 0, s>>>();
      float ms = 0, ms2 = 0;
      if (mode == 0 || mode == 3 || mode == 4) {
        cudaEventRecord(e1, s);
        cudaEventSynchronize(e1);
        cudaEventElapsedTime(&ms, e0, e1);
        (mode == 0 ? same : mode == 3 ? nb : idle).push_back(ms * 1e3);
      } else if (mode == 1) {
        cudaEventRecord(e1, nullptr);
        cudaEventSynchronize(e1);
        cudaEventElapsedTime(&ms, e0, e1);
        legacy.push_back(ms * 1e3);
      } else {
        cudaEventRecord(e1, s);
        cudaEventRecord(e2, nullptr);
        cudaEventSynchronize(e2);
        cudaEventElapsedTime(&ms, e0, e1);
        cudaEventElapsedTime(&ms2, e0, e2);
        both_s.push_back(ms * 1e3);
        both_l.push_back(ms2 * 1e3);
      }
    }
    printf("%s: median us: end on stream %.2f | end on legacy stream %.2f | both: stream %.2f legacy %.2f"
           " | non-blocking stream, end on it %.2f | 300 us sleep after the flush %.2f\n",
           kernel == 0 ? "copy 128 MiB -> 128 MiB" : "empty kernel", median(same), median(legacy),
           median(both_s), median(both_l), median(nb), median(idle));
  }
  printf("error: %s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
