/* gemm / naive — the textbook triple loop, the baseline family.
 *
 * C[M,N] = A[M,K] · B[K,N], fp32, row-major. For every (i, j) a scalar fp32
 * accumulator runs over k; no blocking, packing, intrinsics or threads.
 * No knobs: the family is a single point.
 */
#include "kevo_kernel.h"

KEVO_EXPORT int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                            const double* scalars, int n_scalars) {
  (void)scalars;
  if (n_in != 2 || n_out != 1 || n_scalars != 0) return KEVO_ERR_ARGS;
  const kevo_tensor *ta = &in[0], *tb = &in[1], *tc = &out[0];
  if (ta->dtype != KEVO_F32 || tb->dtype != KEVO_F32 || tc->dtype != KEVO_F32)
    return KEVO_ERR_UNSUPPORTED;
  if (ta->rank != 2 || tb->rank != 2 || tc->rank != 2) return KEVO_ERR_UNSUPPORTED;
  if (!kevo_is_contiguous(ta) || !kevo_is_contiguous(tb) || !kevo_is_contiguous(tc))
    return KEVO_ERR_UNSUPPORTED;
  const int64_t M = ta->shape[0], K = ta->shape[1], N = tb->shape[1];
  if (tb->shape[0] != K || tc->shape[0] != M || tc->shape[1] != N) return KEVO_ERR_ARGS;
  const float* A = (const float*)ta->data;
  const float* B = (const float*)tb->data;
  float* C = (float*)tc->data;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc += A[i * K + k] * B[k * N + j];
      C[i * N + j] = acc;
    }
  return KEVO_OK;
}
