// add_rmsnorm's reference: h = x + r; y = h * rsqrt(mean(h^2) + eps) * w, in
// f64. h is an output in the task dtype and y is the norm of that stored h, so
// h is rounded to h's dtype before the norm (as a framework that materialises
// h would): kevo_reference gets the dtypes and kevo's rounding.
#include <cmath>

#include "kevo_reference.h"

extern "C" int kevo_reference(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                              const double* s, int n_s, const kevo_reference_context* ctx) {
  if (n_in != 3 || n_out != 2 || n_s != 1) return KEVO_ERR_ARGS;
  const double* x = static_cast<const double*>(in[0].data);
  const double* res = static_cast<const double*>(in[1].data);
  const double* w = static_cast<const double*>(in[2].data);
  double* h = static_cast<double*>(out[0].data);
  double* y = static_cast<double*>(out[1].data);
  const int32_t h_dtype = ctx->dtypes[n_in];
  const int64_t n = kevo_row_len(&in[0]);
  const double eps = s[0];
  kevo_parallel_for(kevo_rows(&in[0]), std::max<int64_t>(1, 4096 / n), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      double* hr = h + r * n;
      for (int64_t j = 0; j < n; ++j) hr[j] = ctx->round(x[r * n + j] + res[r * n + j], h_dtype);
      double ss = 0;
      for (int64_t j = 0; j < n; ++j) ss += hr[j] * hr[j];
      const double inv = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
      for (int64_t j = 0; j < n; ++j) y[r * n + j] = hr[j] * inv * w[j];
    }
  });
  return KEVO_OK;
}
