// swiglu's reference: y = silu(g) * u = g / (1 + exp(-g)) * u, in f64.
#include <cmath>

#include "kevo_reference.h"

extern "C" int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                           const double*, int n_s) {
  if (n_in != 2 || n_out != 1 || n_s != 0) return KEVO_ERR_ARGS;
  const double* g = static_cast<const double*>(in[0].data);
  const double* u = static_cast<const double*>(in[1].data);
  double* y = static_cast<double*>(out[0].data);
  kevo_parallel_for(kevo_numel(&in[0]), 4096, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
  });
  return KEVO_OK;
}
