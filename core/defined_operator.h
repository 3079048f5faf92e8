// Operators a task defines itself (JSON): tensors with shapes as expressions
// of named sizes and optionally a dtype of their own, scalars, FLOP and byte
// counts, input distributions, the comparison per output, and a reference in
// C or C++ with the CPU kernel ABI.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/expr.h"
#include "core/operator.h"
#include "core/reference_program.h"

namespace kevo {

class DefinedOperator : public Operator {
 public:
  struct Tensor {
    TensorDecl decl;
    std::vector<Expr> shape;  // over the operator's sizes
    Distribution distribution;
    std::optional<DType> dtype;          // absent: the task's dtype
    std::optional<CompareMode> compare;  // outputs only
  };

  // Validates `definition` (ConfigError naming the key under `path`). A
  // "reference" file is read relative to `base_dir` and inlined, so
  // definition() is self-contained: runners rebuild the operator from it.
  static std::shared_ptr<const DefinedOperator> parse(const nlohmann::json& definition,
                                                      const std::string& path,
                                                      const std::filesystem::path& base_dir);

  // Compiles the reference now (cached by source hash), so a compile error is
  // a UserError at task load, not in the middle of an evaluation.
  void prepare_reference() const { reference_.prepare(); }

  // The definition with its reference source inlined.
  const nlohmann::json& definition() const { return definition_; }
  // A hash of the definition: part of the task hash and reference cache key.
  const std::string& identity_hash() const { return identity_; }
  const std::vector<std::string>& size_names() const { return sizes_; }

  std::string_view name() const override { return name_; }
  std::string_view formula() const override { return formula_; }
  const std::vector<TensorDecl>& tensors() const override { return decls_; }
  const std::vector<ScalarDecl>& scalars() const override { return scalars_; }
  std::vector<Shape> bind_shapes(const ShapeMap& given, const std::string& path) const override;
  double flops(const std::vector<Shape>& shapes) const override;
  std::vector<DType> tensor_dtypes(DType dtype) const override;
  double bytes(const std::vector<Shape>& shapes, DType dtype) const override;
  Distribution distribution(size_t input) const override;
  void reference(const std::vector<ConstTensorView>& in, const std::vector<double>& scalars,
                 const std::vector<TensorView>& out) const override;
  CompareMode default_compare(DType dtype, const std::vector<Shape>& shapes) const override;
  std::vector<CompareMode> default_compares(DType dtype,
                                            const std::vector<Shape>& shapes) const override;
  std::vector<ShapeMap> small_check_shapes() const override;

 private:
  DefinedOperator(std::string name, ReferenceProgram reference)
      : name_(std::move(name)), reference_(std::move(reference)) {}
  // Size values (in size_names() order) from bound shapes, for expressions.
  std::vector<int64_t> size_values(const std::vector<Shape>& shapes) const;
  double count(const std::optional<Expr>& e, const std::vector<Shape>& shapes) const;
  ShapeMap shapes_of(const std::vector<int64_t>& sizes) const;

  std::string name_, formula_;
  std::vector<std::string> sizes_;
  std::vector<Tensor> tensors_;
  std::vector<TensorDecl> decls_;  // ABI order: inputs, then outputs
  std::vector<ScalarDecl> scalars_;
  std::optional<Expr> flops_, bytes_;
  std::vector<std::vector<int64_t>> check_sizes_;
  // Where each size is a whole dimension: (tensor in ABI order, dimension).
  std::vector<std::pair<int, int>> size_source_;
  ReferenceProgram reference_;
  nlohmann::json definition_;
  std::string identity_;
};

// Reads the "operator" value of a task: an inline definition (object) or a
// path ending in .json relative to `base_dir`; nullptr for a plain name.
std::shared_ptr<const DefinedOperator> parse_operator_definition(
    const nlohmann::json& value, const std::string& path, const std::filesystem::path& base_dir);

// What a runner needs to rebuild `op` (its definition), null for a built-in.
nlohmann::json operator_definition(const Operator& op);
// The operator a runner job names: rebuilt from `definition` when there is
// one (kept alive by `holder`), else the registered `name`.
const Operator& job_operator(const std::string& name, const nlohmann::json& definition,
                             std::shared_ptr<const Operator>& holder);

}  // namespace kevo
