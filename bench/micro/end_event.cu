// What the timing method itself costs on a GPU: the same kernel timed with
// the end event on the kernel's stream and on the legacy default stream (which
// kevo's runner uses so that work on other streams stays inside a sample),
// alternately, after an L2 flush each time, as kevo-cuda-runner times. Then,
// for a decode-sized copy (34 MB, ~15 us) after a reading flush: samples with
// the device synchronized before each one (kevo-cuda-runner's way: the GPU
// idles between samples) against samples queued back to back (the peers'
// harness's way), to see whether the idle gaps alone explain the runner's
// figures being above the harness's.
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
// A reading flush, as kevo-cuda-runner's "read" mode: every line of the buffer
// is read and the sum kept, so the L2 ends up holding clean lines of it.
__global__ void read_flush(const uint4* __restrict__ p, size_t n, unsigned* sink) {
  unsigned acc = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    acc ^= p[i].x ^ p[i].w;
  if (acc == 0x9e3779b9u) *sink = acc;
}
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
  // Idle gaps against back to back, a 34 MB copy (17 MB read, 17 MB written).
  {
    const size_t small = size_t(17) << 20, ns = small / 16, nf = flush_bytes / 16;
    unsigned* sink;
    cudaMalloc(&sink, sizeof(unsigned));
    const int samples = 300;
    std::vector<cudaEvent_t> ev(2 * samples);
    for (auto& e : ev) cudaEventCreate(&e);
    std::vector<double> synced, queued;
    for (int round = 0; round < 3; ++round) {
      // Synchronized before each sample: the device idles while the host
      // records and waits.
      for (int i = 0; i < samples; ++i) {
        cudaDeviceSynchronize();
        read_flush<<<prop.multiProcessorCount * 4, 512, 0, blocking>>>((const uint4*)flush, nf, sink);
        cudaEventRecord(e0, blocking);
        copy16<<<grid, 512, 0, blocking>>>((const uint4*)a, (uint4*)b, ns);
        cudaEventRecord(e1, nullptr);
        cudaEventSynchronize(e1);
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        synced.push_back(ms * 1e3);
      }
      // Queued back to back: flush, start, copy, end for every sample, one
      // wait at the end.
      for (int i = 0; i < samples; ++i) {
        read_flush<<<prop.multiProcessorCount * 4, 512, 0, blocking>>>((const uint4*)flush, nf, sink);
        cudaEventRecord(ev[2 * i], blocking);
        copy16<<<grid, 512, 0, blocking>>>((const uint4*)a, (uint4*)b, ns);
        cudaEventRecord(ev[2 * i + 1], blocking);
      }
      cudaDeviceSynchronize();
      for (int i = 0; i < samples; ++i) {
        float ms = 0;
        cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]);
        queued.push_back(ms * 1e3);
      }
    }
    printf("copy 17 MiB -> 17 MiB after a reading flush: median us: device synchronized before each "
           "sample %.2f | queued back to back %.2f\n",
           median(synced), median(queued));
  }
  printf("error: %s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
