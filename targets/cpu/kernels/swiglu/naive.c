/* swiglu / naive.c — plain-loop reference family for
 * y = silu(g) * u = g / (1 + exp(-g)) * u, elementwise with libm expf.
 * Knobs:
 *   THREADS  OpenMP threads, elements split statically.
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
  (void)scalars;
  if (n_in != 2 || n_out != 1 || n_scalars != 0) return KEVO_ERR_ARGS;
  for (int i = 0; i < 2; ++i)
    if (in[i].dtype != KEVO_F32 || !kevo_is_contiguous(&in[i])) return KEVO_ERR_UNSUPPORTED;
  if (out[0].dtype != KEVO_F32 || !kevo_is_contiguous(&out[0])) return KEVO_ERR_UNSUPPORTED;
  const int64_t total = kevo_numel(&in[0]);
  if (kevo_numel(&in[1]) != total || kevo_numel(&out[0]) != total) return KEVO_ERR_ARGS;
  const float* g = (const float*)in[0].data;
  const float* u = (const float*)in[1].data;
  float* y = (float*)out[0].data;
#pragma omp parallel for num_threads(THREADS) schedule(static) if (THREADS > 1)
  for (int64_t i = 0; i < total; ++i) y[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
  return KEVO_OK;
}
