#include "core/operators/row_operator.h"

#include <fmt/format.h>

#include "core/error.h"

namespace kevo {

void check_tensor_names(const Operator& op, const ShapeMap& given, const std::string& path) {
  for (const auto& [name, shape] : given) {
    bool known = false;
    for (const auto& t : op.tensors()) known = known || t.name == name;
    if (!known) {
      std::vector<std::string> names;
      for (const auto& t : op.tensors()) names.push_back(t.name);
      throw ConfigError(fmt::format("{}.{}", path, name),
                        fmt::format("unknown tensor (the tensors of {} are: {})", op.name(),
                                    fmt::join(names, ", ")));
    }
    for (size_t i = 0; i < shape.size(); ++i)
      if (shape[i] < 1)
        throw ConfigError(fmt::format("{}.{}[{}]", path, name, i),
                          fmt::format("expected a size >= 1, got {}", shape[i]));
  }
}

std::vector<Shape> RowOperator::bind_shapes(const ShapeMap& given, const std::string& path) const {
  check_tensor_names(*this, given, path);
  const std::string& first = spec_.tensors[0].name;
  auto it = given.find(first);
  if (it == given.end())
    throw ConfigError(fmt::format("{}.{}", path, first),
                      fmt::format("missing: {} needs the shape of {}, e.g. [4096, 4096]",
                                  spec_.name, first));
  const Shape& x = it->second;
  if (x.size() < 2 || x.size() > 8)
    throw ConfigError(fmt::format("{}.{}", path, first),
                      fmt::format("expected rank 2 to 8 ([rows..., N]), got {}", shape_str(x)));
  std::vector<Shape> shapes;
  for (size_t i = 0; i < spec_.tensors.size(); ++i) {
    Shape s = is_vec(i) ? Shape{x.back()} : x;
    auto g = given.find(spec_.tensors[i].name);
    if (g != given.end() && g->second != s)
      throw ConfigError(fmt::format("{}.{}", path, spec_.tensors[i].name),
                        fmt::format("shape {} does not match {} implied by {} {}",
                                    shape_str(g->second), shape_str(s), first, shape_str(x)));
    shapes.push_back(std::move(s));
  }
  return shapes;
}

double RowOperator::flops(const std::vector<Shape>& shapes) const {
  return spec_.flops_per_element * static_cast<double>(numel(shapes[0]));
}

Distribution RowOperator::distribution(size_t input) const {
  return input < spec_.inputs.size() ? spec_.inputs[input] : Distribution{};
}

void RowOperator::reference(const std::vector<ConstTensorView>& in,
                            const std::vector<double>& scalars,
                            const std::vector<TensorView>& out) const {
  const int64_t n = in[0].shape.back();
  const int64_t rows = numel(in[0].shape) / n;
  // Vec tensors are the same for every row: convert them once.
  std::vector<std::vector<double>> vecs(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    if (is_vec(i)) {
      vecs[i].resize(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) vecs[i][j] = in[i].at(j);
    }
  parallel_for(rows, [&](int64_t begin, int64_t end) {
    std::vector<std::vector<double>> rin(in.size()), rout(out.size());
    std::vector<const double*> pin(in.size());
    std::vector<double*> pout(out.size());
    for (size_t i = 0; i < in.size(); ++i) {
      if (!is_vec(i)) rin[i].resize(static_cast<size_t>(n));
      pin[i] = is_vec(i) ? vecs[i].data() : rin[i].data();
    }
    for (size_t j = 0; j < out.size(); ++j) {
      rout[j].resize(static_cast<size_t>(n));
      pout[j] = rout[j].data();
    }
    for (int64_t r = begin; r < end; ++r) {
      for (size_t i = 0; i < in.size(); ++i)
        if (!is_vec(i))
          for (int64_t j = 0; j < n; ++j) rin[i][j] = in[i].at(r * n + j);
      row_(pin, pout, n, scalars);
      for (size_t o = 0; o < out.size(); ++o)
        for (int64_t j = 0; j < n; ++j)
          store_element(out[o].dtype, out[o].data, static_cast<size_t>(r * n + j), rout[o][j]);
    }
  }, 0, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, n)));  // rows, not elements
}

CompareMode RowOperator::default_compare(DType dtype, const std::vector<Shape>&) const {
  switch (dtype) {
    case DType::f32: return spec_.f32_compare;
    case DType::f64: return CompareMode::parse("tol:1e-12,1e-10");
    case DType::f16: return CompareMode::parse("tol:1e-5,2e-3");
    case DType::bf16: return CompareMode::parse("tol:1e-5,1.6e-2");
    default: return CompareMode::parse("exact");
  }
}

std::vector<ShapeMap> RowOperator::small_check_shapes() const {
  const std::string& x = spec_.tensors[0].name;
  return {ShapeMap{{x, {7, 1003}}}, ShapeMap{{x, {3, 2, 17}}}, ShapeMap{{x, {5, 1}}}};
}

}  // namespace kevo
