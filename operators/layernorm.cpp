// layernorm's reference: y = (x - mean) * rsqrt(var + eps) * w + b over the
// last dim, in f64, the variance from a second pass over x - mean. Row means
// of the inputs run from -6 to +6, which tests that the variance survives
// cancellation.
#include <cmath>

#include "kevo_reference.h"

extern "C" int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                           const double* s, int n_s) {
  if (n_in != 3 || n_out != 1 || n_s != 1) return KEVO_ERR_ARGS;
  const double* x = static_cast<const double*>(in[0].data);
  const double* w = static_cast<const double*>(in[1].data);
  const double* bias = static_cast<const double*>(in[2].data);
  double* y = static_cast<double*>(out[0].data);
  const int64_t n = kevo_row_len(&in[0]);
  const double eps = s[0];
  kevo_parallel_for(kevo_rows(&in[0]), std::max<int64_t>(1, 4096 / n), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const double* xr = x + r * n;
      double mean = 0;
      for (int64_t j = 0; j < n; ++j) mean += xr[j];
      mean /= static_cast<double>(n);
      double var = 0;
      for (int64_t j = 0; j < n; ++j) var += (xr[j] - mean) * (xr[j] - mean);
      var /= static_cast<double>(n);
      const double inv = 1.0 / std::sqrt(var + eps);
      for (int64_t j = 0; j < n; ++j) y[r * n + j] = (xr[j] - mean) * inv * w[j] + bias[j];
    }
  });
  return KEVO_OK;
}
