// gemm's reference: C = A·B, row-major, accumulated in f64 (kernels accumulate
// in fp32: fp32 accumulation over K terms of size <= 1 loses about K * 2^-24 in
// the worst order, and the default comparison allows 8x that; inputs are
// uniform in [-1, 1]). A row of C is 2*K*N operations: one is worth a thread.
#include <vector>

#include "kevo_reference.h"

extern "C" int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                           const double*, int n_s) {
  if (n_in != 2 || n_out != 1 || n_s != 0) return KEVO_ERR_ARGS;
  const double* a = static_cast<const double*>(in[0].data);
  const double* bm = static_cast<const double*>(in[1].data);
  double* c = static_cast<double*>(out[0].data);
  const int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
  kevo_parallel_for(m, 1, [&](int64_t begin, int64_t end) {
    std::vector<double> row(static_cast<size_t>(n));
    for (int64_t i = begin; i < end; ++i) {
      std::fill(row.begin(), row.end(), 0.0);
      for (int64_t p = 0; p < k; ++p) {
        const double av = a[i * k + p];
        const double* brow = bm + p * n;
        for (int64_t j = 0; j < n; ++j) row[j] += av * brow[j];
      }
      for (int64_t j = 0; j < n; ++j) c[i * n + j] = row[j];
    }
  });
  return KEVO_OK;
}
