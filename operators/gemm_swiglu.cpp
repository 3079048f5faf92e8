// gemm_swiglu's reference: the gate/up MLP of a Llama-style block,
// y = silu(A·Wg) * (A·Wu), silu(g) = g / (1 + exp(-g)), row-major, in f64.
//
// The weights are uniform in [-1/8, 1/8] (A in [-1, 1]): g and u then have a
// standard deviation of sqrt(K)/24 (2.7 at K = 4096, the hidden size of a
// Llama 8B), about what a trained gate sees, so the comparison covers the bend
// of silu. With weights in [-1, 1] it would be 21: 85% of the g beyond +-4,
// where silu is about 0 or g, so y would be mostly a relu(g) * u of size up to
// ~4000 (bf16 steps of 16 there), its sigmoid part seen by few elements.
//
// Tolerances. Kernels accumulate g and u in fp32: with terms of size <= 1/8,
// that loses about K * 2^-24 / 8 in each (gemm's estimate, scaled). y moves
// by at most 1.1 * |u| * dg + |silu(g)| * du (silu' lies in [-0.1, 1.1]), and
// |g|, |u| stay below 4 standard deviations, 21 up to K = 16384: about
// 44 * K * 2^-27 = 3.3e-7 * K, so atol is 4e-7 * K for every float dtype (an
// absolute term: where silu(g) is near 0, y is small but its error follows
// |u| * dg). rtol is that of the output's rounding, two units in its last
// place as for gemm and swiglu (1.6e-2 bf16, 2e-3 f16) and 1e-5 in f32 for
// exp and the division. Simulated (sequential, FMA, 8-lane and K-blocked
// orders, K from 1 to 14336) the worst error is 0.14 of this in f32 and 0.47
// in bf16 and f16. A kernel that rounds g and u to bf16 before the epilogue
// (the unfused gate/up-then-silu path) reached 0.87 in bf16: the epilogue is
// meant to take them in fp32. A row of y is 4*K*N operations: a thread's.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kevo_reference.h"

extern "C" int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                           const double*, int n_s) {
  if (n_in != 3 || n_out != 1 || n_s != 0) return KEVO_ERR_ARGS;
  const double* a = static_cast<const double*>(in[0].data);
  const double* wg = static_cast<const double*>(in[1].data);
  const double* wu = static_cast<const double*>(in[2].data);
  double* y = static_cast<double*>(out[0].data);
  const int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
  kevo_parallel_for(m, 1, [&](int64_t begin, int64_t end) {
    std::vector<double> g(static_cast<size_t>(n)), u(static_cast<size_t>(n));
    for (int64_t i = begin; i < end; ++i) {
      std::fill(g.begin(), g.end(), 0.0);
      std::fill(u.begin(), u.end(), 0.0);
      for (int64_t p = 0; p < k; ++p) {
        const double av = a[i * k + p];
        const double* grow = wg + p * n;
        const double* urow = wu + p * n;
        for (int64_t j = 0; j < n; ++j) {
          g[j] += av * grow[j];
          u[j] += av * urow[j];
        }
      }
      for (int64_t j = 0; j < n; ++j) y[i * n + j] = g[j] / (1.0 + std::exp(-g[j])) * u[j];
    }
  });
  return KEVO_OK;
}
