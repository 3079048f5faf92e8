// rmsnorm, one row per block of block_size_x threads (a multiple of 32):
// y = x * rsqrt(mean(x^2) + eps) * w.
__global__ void rms_rows(float *y, float *x, float *w, int rows, int cols, double eps) {
  __shared__ float partial[block_size_x / 32];
  const int row = blockIdx.x;
  if (row >= rows) return;
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += block_size_x) {
    const float v = x[(long)row * cols + c];
    s += v * v;
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = s;
  __syncthreads();
  float total = 0.0f;
  for (int i = 0; i < block_size_x / 32; ++i) total += partial[i];
  const float inv = rsqrtf(total / cols + (float)eps);
  for (int c = threadIdx.x; c < cols; c += block_size_x)
    y[(long)row * cols + c] = x[(long)row * cols + c] * inv * w[c];
}
