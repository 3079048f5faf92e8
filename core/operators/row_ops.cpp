// scaled_softmax, rmsnorm, layernorm, add_rmsnorm and swiglu: their fp64
// reference rows, input distributions and default comparisons.
#include <cmath>

#include "core/operator.h"
#include "core/operators/builtin.h"
#include "core/operators/row_operator.h"

namespace kevo {

namespace {

void softmax_row(const std::vector<const double*>& in, const std::vector<double*>& out, int64_t n,
                 const std::vector<double>& s) {
  const double* x = in[0];
  double* y = out[0];
  const double scale = s[0];
  double m = -INFINITY;
  for (int64_t j = 0; j < n; ++j) m = std::max(m, x[j] * scale);
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += (y[j] = std::exp(x[j] * scale - m));
  for (int64_t j = 0; j < n; ++j) y[j] /= sum;
}

double inv_rms(const double* x, int64_t n, double eps) {
  double ss = 0;
  for (int64_t j = 0; j < n; ++j) ss += x[j] * x[j];
  return 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
}

void rmsnorm_row(const std::vector<const double*>& in, const std::vector<double*>& out, int64_t n,
                 const std::vector<double>& s) {
  const double* x = in[0];
  const double* w = in[1];
  const double r = inv_rms(x, n, s[0]);
  for (int64_t j = 0; j < n; ++j) out[0][j] = x[j] * r * w[j];
}

void layernorm_row(const std::vector<const double*>& in, const std::vector<double*>& out,
                   int64_t n, const std::vector<double>& s) {
  const double *x = in[0], *w = in[1], *b = in[2];
  double mean = 0;
  for (int64_t j = 0; j < n; ++j) mean += x[j];
  mean /= static_cast<double>(n);
  double var = 0;
  for (int64_t j = 0; j < n; ++j) var += (x[j] - mean) * (x[j] - mean);
  var /= static_cast<double>(n);
  const double r = 1.0 / std::sqrt(var + s[0]);
  for (int64_t j = 0; j < n; ++j) out[0][j] = (x[j] - mean) * r * w[j] + b[j];
}

void swiglu_row(const std::vector<const double*>& in, const std::vector<double*>& out, int64_t n,
                const std::vector<double>&) {
  for (int64_t j = 0; j < n; ++j) {
    double g = in[0][j];
    out[0][j] = g / (1.0 + std::exp(-g)) * in[1][j];
  }
}

// add_rmsnorm's h is an output in the task dtype; y is the rmsnorm of that
// stored h, so h is rounded to the dtype before the norm (as a framework that
// materialises h would).
class AddRmsnorm : public RowOperator {
 public:
  using RowOperator::RowOperator;
  void reference(const std::vector<ConstTensorView>& in, const std::vector<double>& scalars,
                 const std::vector<TensorView>& out) const override {
    const DType dt = out[0].dtype;
    const int64_t n = in[0].shape.back();
    const int64_t rows = numel(in[0].shape) / n;
    std::vector<double> w(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) w[j] = in[2].at(j);
    parallel_for(rows, [&](int64_t begin, int64_t end) {
      std::vector<double> h(static_cast<size_t>(n));
      for (int64_t r = begin; r < end; ++r) {
        for (int64_t j = 0; j < n; ++j) {
          size_t i = static_cast<size_t>(r * n + j);
          store_element(dt, out[0].data, i, in[0].at(i) + in[1].at(i));
          h[j] = load_element(dt, out[0].data, i);
        }
        const double inv = inv_rms(h.data(), n, scalars[0]);
        for (int64_t j = 0; j < n; ++j)
          store_element(out[1].dtype, out[1].data, static_cast<size_t>(r * n + j),
                        h[j] * inv * w[j]);
      }
    }, 0, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, n)));  // rows, not elements
  }
};

}  // namespace

void register_row_operators(OperatorRegistry& registry) {
  const CompareMode norm_tol = CompareMode::parse("tol:1e-6,1e-5");
  {
    RowOperator::Spec s;
    s.name = "scaled_softmax";
    s.formula = "y = softmax(x * scale) over the last dim";
    s.tensors = {{"x", false, "[..., N]"}, {"y", true, "[..., N]"}};
    s.scalars = {{"scale", 1.0, "multiplies x before the softmax"}};
    // Row offsets of up to 600 make x * scale reach ~80 at scale 0.125: exp
    // overflows fp32 unless the row max is subtracted.
    s.inputs = {{-64.0, 64.0, 7, 100.0}};
    s.flops_per_element = 5;  // scale, max, exp, sum, divide
    s.f32_compare = CompareMode::parse("tol:1e-7,1e-4");
    registry.add(std::make_unique<RowOperator>(s, softmax_row));
  }
  {
    RowOperator::Spec s;
    s.name = "rmsnorm";
    s.formula = "y = x * rsqrt(mean(x^2) + eps) * w";
    s.tensors = {{"x", false, "[M, N]"}, {"w", false, "[N]"}, {"y", true, "[M, N]"}};
    s.scalars = {{"eps", 1e-6, "added to the mean square"}};
    s.inputs = {{-2.0, 2.0, 0, 0.0}, {0.5, 1.5, 0, 0.0}};
    s.flops_per_element = 4;
    s.f32_compare = norm_tol;
    registry.add(std::make_unique<RowOperator>(s, rmsnorm_row));
  }
  {
    RowOperator::Spec s;
    s.name = "layernorm";
    s.formula = "y = (x - mean) * rsqrt(var + eps) * w + b";
    s.tensors = {{"x", false, "[M, N]"},
                 {"w", false, "[N]"},
                 {"b", false, "[N]"},
                 {"y", true, "[M, N]"}};
    s.scalars = {{"eps", 1e-5, "added to the variance"}};
    // Row means from -6 to +6 test that the variance survives cancellation.
    s.inputs = {{-8.0, -4.0, 5, 3.0}, {0.5, 1.5, 0, 0.0}, {-1.0, 1.0, 0, 0.0}};
    s.flops_per_element = 7;
    s.f32_compare = norm_tol;
    registry.add(std::make_unique<RowOperator>(s, layernorm_row));
  }
  {
    RowOperator::Spec s;
    s.name = "add_rmsnorm";
    s.formula = "h = x + r; y = h * rsqrt(mean(h^2) + eps) * w";
    s.tensors = {{"x", false, "[M, N]"},
                 {"r", false, "[M, N]"},
                 {"w", false, "[N]"},
                 {"h", true, "[M, N]"},
                 {"y", true, "[M, N]"}};
    s.scalars = {{"eps", 1e-6, "added to the mean square"}};
    s.inputs = {{-2.0, 2.0, 0, 0.0}, {-1.0, 1.0, 0, 0.0}, {0.5, 1.5, 0, 0.0}};
    s.flops_per_element = 5;
    s.f32_compare = norm_tol;
    registry.add(std::make_unique<AddRmsnorm>(s, nullptr));
  }
  {
    RowOperator::Spec s;
    s.name = "swiglu";
    s.formula = "y = silu(g) * u = g / (1 + exp(-g)) * u";
    s.tensors = {{"g", false, "[M, N]"}, {"u", false, "[M, N]"}, {"y", true, "[M, N]"}};
    s.inputs = {{-6.0, 6.0, 0, 0.0}, {-6.0, 6.0, 0, 0.0}};
    s.flops_per_element = 5;
    s.f32_compare = norm_tol;
    registry.add(std::make_unique<RowOperator>(s, swiglu_row));
  }
}

}  // namespace kevo
