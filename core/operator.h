// Operators: what a kernel must compute. Each has tensors in a fixed order, a
// CPU reference (fp64 accumulation), an input generator, FLOP and byte counts
// and a default comparison; the registry finds them by name. Every operator is
// a definition (core/defined_operator.h): kevo's own are shipped in operators/.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/compare_mode.h"
#include "core/dtype.h"
#include "core/tensor.h"

namespace kevo {

struct TensorDecl {
  std::string name;
  bool is_output = false;
  std::string doc;  // shape in words, e.g. "[M, N]"
};

struct ScalarDecl {
  std::string name;
  std::optional<double> default_value;
  std::string doc;
};

// Input values: lo + (hi - lo) * u + (row % row_period) * row_step, with u
// uniform in [0, 1) from a counter-based generator keyed by (seed, tensor,
// index), so every process generates the same inputs for the same seed.
struct Distribution {
  double lo = -1.0;
  double hi = 1.0;
  int64_t row_period = 0;  // 0: no per-row offset
  double row_step = 0.0;
};

// Shapes given by the task, by tensor name.
using ShapeMap = std::map<std::string, Shape>;

class Operator {
 public:
  virtual ~Operator() = default;

  virtual std::string_view name() const = 0;
  virtual std::string_view formula() const = 0;
  // Inputs first, then outputs: the order of kevo_tensor arrays in the ABI.
  virtual const std::vector<TensorDecl>& tensors() const = 0;
  virtual const std::vector<ScalarDecl>& scalars() const = 0;

  // All tensor shapes (ABI order) from the shapes a task gave. Throws
  // ConfigError at `path` when shapes are missing, extra or inconsistent.
  virtual std::vector<Shape> bind_shapes(const ShapeMap& given, const std::string& path) const = 0;
  virtual double flops(const std::vector<Shape>& shapes) const = 0;
  // Each tensor's element type (ABI order) in a task of dtype `dtype`: that
  // dtype for every tensor unless the operator fixes some (f32 statistics
  // next to a bf16 input, say).
  virtual std::vector<DType> tensor_dtypes(DType dtype) const;
  // Bytes an ideal kernel moves: every tensor read or written once, each at
  // its own dtype.
  virtual double bytes(const std::vector<Shape>& shapes, DType dtype) const;
  virtual Distribution distribution(size_t input) const { return {}; }

  // Computes the outputs (written in their dtype) from the inputs.
  virtual void reference(const std::vector<ConstTensorView>& in, const std::vector<double>& scalars,
                         const std::vector<TensorView>& out) const = 0;
  // One comparison per output (in output order) in a task of dtype `dtype`,
  // each at that output's own dtype.
  virtual std::vector<CompareMode> default_compares(DType dtype,
                                                    const std::vector<Shape>& shapes) const = 0;
  // Small shapes checked before the full one: ragged on purpose (row lengths
  // that are not a multiple of any vector width) so tail handling is tested.
  virtual std::vector<ShapeMap> small_check_shapes() const = 0;

  size_t n_inputs() const;
  size_t n_outputs() const;
  const TensorDecl& tensor(size_t i) const { return tensors()[i]; }
};

// Fills input `index` of `op` (a view of the right dtype and shape).
void generate_input(const Operator& op, size_t index, const TensorView& t, uint64_t seed);

// Checks a ShapeMap names only tensors of `op`, with sizes >= 1 (ConfigError
// at `path`.<tensor> otherwise).
void check_tensor_names(const Operator& op, const ShapeMap& given, const std::string& path);

class OperatorRegistry {
 public:
  void add(std::shared_ptr<const Operator> op);
  const Operator* find(std::string_view name) const;
  // Throws UserError naming the known operators.
  const Operator& get(std::string_view name) const;
  std::vector<std::string> names() const;

 private:
  std::vector<std::shared_ptr<const Operator>> ops_;
};

// The operators shipped with kevo (operators/*.json), parsed once on first use.
const OperatorRegistry& operators();

}  // namespace kevo
