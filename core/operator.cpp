#include "core/operator.h"

#include <fmt/format.h>

#include "core/builtin_operators.h"
#include "core/error.h"
#include "core/rng.h"

namespace kevo {

size_t Operator::n_inputs() const {
  size_t n = 0;
  for (const auto& t : tensors()) n += t.is_output ? 0 : 1;
  return n;
}

size_t Operator::n_outputs() const { return tensors().size() - n_inputs(); }

std::vector<DType> Operator::tensor_dtypes(DType dtype) const {
  return std::vector<DType>(tensors().size(), dtype);
}

double Operator::bytes(const std::vector<Shape>& shapes, DType dtype) const {
  const std::vector<DType> dtypes = tensor_dtypes(dtype);
  double b = 0;
  for (size_t i = 0; i < shapes.size(); ++i)
    b += static_cast<double>(numel(shapes[i])) * dtype_size(i < dtypes.size() ? dtypes[i] : dtype);
  return b;
}

void generate_input(const Operator& op, size_t index, const TensorView& t, uint64_t seed) {
  const Distribution d = op.distribution(index);
  const int64_t n = numel(t.shape);
  const int64_t row_len = t.shape.empty() ? 1 : std::max<int64_t>(1, t.shape.back());
  parallel_for(n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      double v = d.lo + (d.hi - d.lo) * uniform01(seed, index, static_cast<uint64_t>(i));
      if (d.row_period > 0) v += static_cast<double>((i / row_len) % d.row_period) * d.row_step;
      store_element(t.dtype, t.data, static_cast<size_t>(i), v);
    }
  });
}

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

void OperatorRegistry::add(std::shared_ptr<const Operator> op) {
  KEVO_ASSERT(!find(op->name()));
  ops_.push_back(std::move(op));
}

const Operator* OperatorRegistry::find(std::string_view name) const {
  for (const auto& op : ops_)
    if (op->name() == name) return op.get();
  return nullptr;
}

const Operator& OperatorRegistry::get(std::string_view name) const {
  if (const Operator* op = find(name)) return *op;
  throw UserError(fmt::format("unknown operator '{}' (known: {})", name, fmt::join(names(), ", ")));
}

std::vector<std::string> OperatorRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& op : ops_) out.emplace_back(op->name());
  return out;
}

const OperatorRegistry& operators() {
  static const OperatorRegistry registry = [] {
    OperatorRegistry r;
    register_builtin_operators(r);
    return r;
  }();
  return registry;
}

}  // namespace kevo
