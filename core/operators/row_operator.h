// Base for operators over the rows of one tensor (softmax, norms, swiglu): the
// first input fixes the shape [..., N]; other tensors are either that shape
// ("row" tensors) or a vector [N] broadcast over rows ("vec" tensors).
#pragma once

#include <functional>

#include "core/operator.h"

namespace kevo {

class RowOperator : public Operator {
 public:
  struct Spec {
    std::string name;
    std::string formula;
    std::vector<TensorDecl> tensors;  // "[N]" in doc marks a vec tensor
    std::vector<ScalarDecl> scalars;
    std::vector<Distribution> inputs;
    double flops_per_element = 0;
    CompareMode f32_compare;
  };
  // Computes one row: `in[i]` points at row data of input i (vec tensors at
  // their start), `out[j]` receives row j of output j, n the row length.
  using RowFn = std::function<void(const std::vector<const double*>& in,
                                   const std::vector<double*>& out, int64_t n,
                                   const std::vector<double>& scalars)>;

  RowOperator(Spec spec, RowFn row) : spec_(std::move(spec)), row_(std::move(row)) {}

  std::string_view name() const override { return spec_.name; }
  std::string_view formula() const override { return spec_.formula; }
  const std::vector<TensorDecl>& tensors() const override { return spec_.tensors; }
  const std::vector<ScalarDecl>& scalars() const override { return spec_.scalars; }
  std::vector<Shape> bind_shapes(const ShapeMap& given, const std::string& path) const override;
  double flops(const std::vector<Shape>& shapes) const override;
  Distribution distribution(size_t input) const override;
  void reference(const std::vector<ConstTensorView>& in, const std::vector<double>& scalars,
                 const std::vector<TensorView>& out) const override;
  CompareMode default_compare(DType dtype, const std::vector<Shape>& shapes) const override;
  std::vector<ShapeMap> small_check_shapes() const override;

 protected:
  bool is_vec(size_t i) const { return spec_.tensors[i].doc == "[N]"; }

 private:
  Spec spec_;
  RowFn row_;
};

// Checks a ShapeMap names only tensors of `op` (error at `path` otherwise).
void check_tensor_names(const Operator& op, const ShapeMap& given, const std::string& path);

}  // namespace kevo
