// rmsnorm's reference: y = x * rsqrt(mean(x^2) + eps) * w over the last dim, in f64.
#include <cmath>

#include "kevo_reference.h"

extern "C" int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                           const double* s, int n_s) {
  if (n_in != 2 || n_out != 1 || n_s != 1) return KEVO_ERR_ARGS;
  const double* x = static_cast<const double*>(in[0].data);
  const double* w = static_cast<const double*>(in[1].data);
  double* y = static_cast<double*>(out[0].data);
  const int64_t n = kevo_row_len(&in[0]);
  const double eps = s[0];
  kevo_parallel_for(kevo_rows(&in[0]), std::max<int64_t>(1, 4096 / n), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const double* xr = x + r * n;
      double ss = 0;
      for (int64_t j = 0; j < n; ++j) ss += xr[j] * xr[j];
      const double inv = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
      for (int64_t j = 0; j < n; ++j) y[r * n + j] = xr[j] * inv * w[j];
    }
  });
  return KEVO_OK;
}
