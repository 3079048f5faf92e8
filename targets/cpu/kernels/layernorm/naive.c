/* layernorm / naive.c — plain-loop reference family for
 * y = (x - mean) * rsqrt(var + eps) * w + b over the last dim (biased variance):
 * per row a loop for the mean, a loop for the variance (double accumulators,
 * two-pass) and a loop writing y.
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
  if (n_in != 3 || n_out != 1 || n_scalars != 1) return KEVO_ERR_ARGS;
  for (int i = 0; i < 3; ++i)
    if (in[i].dtype != KEVO_F32 || !kevo_is_contiguous(&in[i])) return KEVO_ERR_UNSUPPORTED;
  if (out[0].dtype != KEVO_F32 || !kevo_is_contiguous(&out[0])) return KEVO_ERR_UNSUPPORTED;
  const int64_t n = kevo_row_len(&in[0]), rows = kevo_rows(&in[0]);
  if (kevo_numel(&in[1]) != n || kevo_numel(&in[2]) != n || kevo_numel(&out[0]) != rows * n) return KEVO_ERR_ARGS;
  const float* x = (const float*)in[0].data;
  const float* w = (const float*)in[1].data;
  const float* b = (const float*)in[2].data;
  float* y = (float*)out[0].data;
  const double eps = scalars[0];
#pragma omp parallel for num_threads(THREADS) schedule(static) if (THREADS > 1)
  for (int64_t i = 0; i < rows; ++i) {
    const float* xr = x + i * n;
    float* yr = y + i * n;
    double s = 0.0;
    for (int64_t j = 0; j < n; ++j) s += xr[j];
    const double mean = s / (double)n;
    double v = 0.0;
    for (int64_t j = 0; j < n; ++j) v += (xr[j] - mean) * (xr[j] - mean);
    const float rstd = (float)(1.0 / sqrt(v / (double)n + eps));
    const float m = (float)mean;
    for (int64_t j = 0; j < n; ++j) yr[j] = (xr[j] - m) * rstd * w[j] + b[j];
  }
  return KEVO_OK;
}
