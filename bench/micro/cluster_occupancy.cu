// How many clusters of 1, 2, 4 and 8 CTAs can be resident at once for a
// kernel shaped like the 4096^3 wgmma kernel (384 threads, 230 KB of
// dynamic shared memory, one CTA per SM): a 2 x 2 cluster multicasting both
// operands would read a quarter less from L2 than a cluster of two, but a
// GPC whose SM count does not divide by the cluster size leaves SMs idle.
//   nvcc -arch=sm_90a -o /tmp/cluster_occupancy bench/micro/cluster_occupancy.cu && /tmp/cluster_occupancy
#include <cuda_runtime.h>
#include <cstdio>

__global__ void one_cta_per_sm() {}

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int smem = 230460;  // the kernel's, as ncu reports it (230.46 KB)
  cudaFuncSetAttribute(one_cta_per_sm, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  if (cudaFuncSetAttribute(one_cta_per_sm, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess) {
    printf("shared memory: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  printf("SMs %d, 384 threads, %d bytes of shared memory a CTA\n", sms, smem);
  for (int c : {1, 2, 4, 8, 16}) {
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr = {};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = c;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cfg.gridDim = dim3(c * 64, 1, 1);
    cfg.blockDim = dim3(384, 1, 1);
    cfg.dynamicSmemBytes = smem;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    int clusters = 0;
    cudaError_t e = cudaOccupancyMaxActiveClusters(&clusters, one_cta_per_sm, &cfg);
    printf("cluster %2d: %s, %d clusters resident, %d CTAs, %d of %d SMs idle\n", c,
           e == cudaSuccess ? "ok" : cudaGetErrorString(e), clusters, clusters * c, sms - clusters * c, sms);
    (void)cudaGetLastError();
  }
  return 0;
}
