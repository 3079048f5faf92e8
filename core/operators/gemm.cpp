// gemm: C = A·B, row-major, with an fp64 reference (kernels accumulate in fp32).
#include <fmt/format.h>

#include "core/error.h"
#include "core/operator.h"
#include "core/operators/builtin.h"
#include "core/operators/row_operator.h"

namespace kevo {

namespace {

class Gemm : public Operator {
 public:
  std::string_view name() const override { return "gemm"; }
  std::string_view formula() const override { return "C = A·B (row-major), fp32 accumulation"; }
  const std::vector<TensorDecl>& tensors() const override {
    static const std::vector<TensorDecl> t = {
        {"A", false, "[M, K]"}, {"B", false, "[K, N]"}, {"C", true, "[M, N]"}};
    return t;
  }
  const std::vector<ScalarDecl>& scalars() const override {
    static const std::vector<ScalarDecl> s;
    return s;
  }

  std::vector<Shape> bind_shapes(const ShapeMap& given, const std::string& path) const override {
    check_tensor_names(*this, given, path);
    auto get = [&](const char* name) -> const Shape& {
      auto it = given.find(name);
      if (it == given.end())
        throw ConfigError(fmt::format("{}.{}", path, name),
                          "missing: gemm needs the shapes of A [M, K] and B [K, N]");
      if (it->second.size() != 2)
        throw ConfigError(fmt::format("{}.{}", path, name),
                          fmt::format("expected rank 2, got {}", shape_str(it->second)));
      return it->second;
    };
    const Shape& a = get("A");
    const Shape& b = get("B");
    if (a[1] != b[0])
      throw ConfigError(fmt::format("{}.B", path),
                        fmt::format("inner dimensions differ: A {} and B {}", shape_str(a),
                                    shape_str(b)));
    Shape c = {a[0], b[1]};
    auto it = given.find("C");
    if (it != given.end() && it->second != c)
      throw ConfigError(fmt::format("{}.C", path),
                        fmt::format("shape {} does not match {} = [M, N]", shape_str(it->second),
                                    shape_str(c)));
    return {a, b, c};
  }

  double flops(const std::vector<Shape>& s) const override {
    return 2.0 * static_cast<double>(s[0][0]) * static_cast<double>(s[0][1]) *
           static_cast<double>(s[1][1]);
  }

  void reference(const std::vector<ConstTensorView>& in, const std::vector<double>&,
                 const std::vector<TensorView>& out) const override {
    const int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
    std::vector<double> b(static_cast<size_t>(k * n));
    for (int64_t i = 0; i < k * n; ++i) b[i] = in[1].at(i);
    parallel_for(m, [&](int64_t begin, int64_t end) {
      std::vector<double> row(static_cast<size_t>(n));
      for (int64_t i = begin; i < end; ++i) {
        std::fill(row.begin(), row.end(), 0.0);
        for (int64_t p = 0; p < k; ++p) {
          const double a = in[0].at(i * k + p);
          const double* brow = &b[static_cast<size_t>(p * n)];
          for (int64_t j = 0; j < n; ++j) row[j] += a * brow[j];
        }
        for (int64_t j = 0; j < n; ++j)
          store_element(out[0].dtype, out[0].data, static_cast<size_t>(i * n + j), row[j]);
      }
    }, 0, /*grain=*/1);  // a row of C is 2*K*N operations: one is worth a thread
  }

  CompareMode default_compare(DType dtype, const std::vector<Shape>& s) const override {
    // fp32 accumulation over K terms of size <= 1 loses about K * 2^-24 in the
    // worst order; allow 8x that (inputs are uniform in [-1, 1]).
    const double k = static_cast<double>(s[0][1]);
    CompareMode m;
    m.kind = CompareMode::tol;
    switch (dtype) {
      case DType::f64: m.atol = 1e-14 * k; m.rtol = 1e-12; break;
      case DType::f32: m.atol = 5e-7 * k; m.rtol = 1e-5; break;
      case DType::f16: m.atol = 1e-4 * k; m.rtol = 2e-3; break;
      case DType::bf16: m.atol = 1e-3 * k; m.rtol = 1.6e-2; break;
      default: m.kind = CompareMode::exact; break;
    }
    return m;
  }

  std::vector<ShapeMap> small_check_shapes() const override {
    return {ShapeMap{{"A", {7, 129}}, {"B", {129, 1003}}},
            ShapeMap{{"A", {130, 61}}, {"B", {61, 67}}}, ShapeMap{{"A", {1, 1}}, {"B", {1, 1}}}};
  }
};

}  // namespace

void register_row_operators(OperatorRegistry& registry);

void register_builtin_operators(OperatorRegistry& registry) {
  register_row_operators(registry);
  registry.add(std::make_unique<Gemm>());
}

}  // namespace kevo
