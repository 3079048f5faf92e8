/* scaled_softmax / naive.c — plain-loop reference family for softmax(x * scale)
 * over the last dim: the classic three passes per row (max of x*scale; exp via
 * libm expf written to y with a running sum; divide by the sum). No intrinsics,
 * the compiler vectorises what it can.
 * Knobs:
 *   THREADS  OpenMP threads, rows split statically.
 */
// @kevo knob THREADS 1 {1, 2, 4, 8}
// @kevo require THREADS <= NCPU
#ifndef THREADS
#define THREADS 1
#endif

#include <math.h>
#include <stdint.h>
#include "kevo_kernel.h"

KEVO_EXPORT int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                            const double* scalars, int n_scalars) {
  if (n_in != 1 || n_out != 1 || n_scalars != 1) return KEVO_ERR_ARGS;
  if (in[0].dtype != KEVO_F32 || out[0].dtype != KEVO_F32) return KEVO_ERR_UNSUPPORTED;
  if (!kevo_is_contiguous(&in[0]) || !kevo_is_contiguous(&out[0]) || in[0].rank < 2) return KEVO_ERR_UNSUPPORTED;
  const int64_t n = kevo_row_len(&in[0]), rows = kevo_rows(&in[0]);
  if (kevo_numel(&out[0]) != rows * n) return KEVO_ERR_ARGS;
  const float* x = (const float*)in[0].data;
  float* y = (float*)out[0].data;
  const float s = (float)scalars[0];
#pragma omp parallel for num_threads(THREADS) schedule(static) if (THREADS > 1)
  for (int64_t i = 0; i < rows; ++i) {
    const float* xr = x + i * n;
    float* yr = y + i * n;
    float m = -INFINITY;
    for (int64_t j = 0; j < n; ++j) m = fmaxf(m, xr[j] * s);
    float sum = 0.0f;
    for (int64_t j = 0; j < n; ++j) {
      yr[j] = expf(xr[j] * s - m);
      sum += yr[j];
    }
    for (int64_t j = 0; j < n; ++j) yr[j] /= sum;
  }
  return KEVO_OK;
}
