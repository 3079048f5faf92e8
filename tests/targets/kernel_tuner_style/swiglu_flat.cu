// swiglu over the flat tensor: each thread tile_size_x elements, strided by
// the block so that a warp's loads stay contiguous.
__global__ void swiglu_flat(float *y, float *g, float *u, int rows, int cols) {
  const long n = (long)rows * cols;
  const long base = (long)blockIdx.x * block_size_x * tile_size_x + threadIdx.x;
  for (int t = 0; t < tile_size_x; ++t) {
    const long i = base + (long)t * block_size_x;
    if (i < n) {
      const float a = g[i];
      y[i] = a / (1.0f + __expf(-a)) * u[i];
    }
  }
}
