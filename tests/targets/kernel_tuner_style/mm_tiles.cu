// C = A * B for square n x n matrices (n a multiple of block_size_x): each
// block computes a block_size_x x block_size_x tile of C, each thread
// tile_size_y of its rows in one column. Knobs come as -D defines.
__global__ void mm_tiles(float *C, float *A, float *B, int n) {
  __shared__ float sA[block_size_x][block_size_x];
  __shared__ float sB[block_size_x][block_size_x];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int col = blockIdx.x * block_size_x + tx;
  const int row0 = blockIdx.y * block_size_x;
  float acc[tile_size_y];
  for (int i = 0; i < tile_size_y; ++i) acc[i] = 0.0f;
  for (int k0 = 0; k0 < n; k0 += block_size_x) {
    for (int i = 0; i < tile_size_y; ++i) {
      const int r = ty + i * block_size_y;
      sA[r][tx] = A[(row0 + r) * n + k0 + tx];
      sB[r][tx] = B[(k0 + r) * n + col];
    }
    __syncthreads();
    for (int k = 0; k < block_size_x; ++k)
      for (int i = 0; i < tile_size_y; ++i) acc[i] += sA[ty + i * block_size_y][k] * sB[k][tx];
    __syncthreads();
  }
  for (int i = 0; i < tile_size_y; ++i) C[(row0 + ty + i * block_size_y) * n + col] = acc[i];
}
