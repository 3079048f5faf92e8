/* gemm_swiglu / naive — the textbook loops, the baseline family.
 *
 * y[M,N] = silu(A·Wg) * (A·Wu), silu(g) = g / (1 + exp(-g)); A[M,K],
 * Wg[K,N], Wu[K,N], fp32, row-major. For every (i, j) two scalar fp32
 * accumulators run over k, one per weight, and libm's expf gives silu.
 * No blocking, packing, intrinsics or threads. No knobs: the family is a
 * single point.
 */
#include <math.h>

#include "kevo_kernel.h"

KEVO_EXPORT int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                            const double* scalars, int n_scalars) {
  (void)scalars;
  if (n_in != 3 || n_out != 1 || n_scalars != 0) return KEVO_ERR_ARGS;
  const kevo_tensor *ta = &in[0], *tg = &in[1], *tu = &in[2], *ty = &out[0];
  for (int t = 0; t < 4; ++t) {
    const kevo_tensor* x = t < 3 ? &in[t] : ty;
    if (x->dtype != KEVO_F32 || x->rank != 2 || !kevo_is_contiguous(x)) return KEVO_ERR_UNSUPPORTED;
  }
  const int64_t M = ta->shape[0], K = ta->shape[1], N = tg->shape[1];
  if (tg->shape[0] != K || tu->shape[0] != K || tu->shape[1] != N || ty->shape[0] != M ||
      ty->shape[1] != N)
    return KEVO_ERR_ARGS;
  const float* A = (const float*)ta->data;
  const float* Wg = (const float*)tg->data;
  const float* Wu = (const float*)tu->data;
  float* y = (float*)ty->data;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float g = 0.0f, u = 0.0f;
      for (int64_t k = 0; k < K; ++k) {
        g += A[i * K + k] * Wg[k * N + j];
        u += A[i * K + k] * Wu[k * N + j];
      }
      y[i * N + j] = g / (1.0f + expf(-g)) * u;
    }
  return KEVO_OK;
}
