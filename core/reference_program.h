// A reference kernel given as C or C++ source with the CPU kernel ABI: kevo
// compiles it once into a shared library (cached by source hash; -pthread, so
// it may use threads) and calls it in a forked child on f64 tensors, so a
// reference that crashes or hangs is one UserError instead of the end of kevo.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"

namespace kevo {

class ReferenceProgram {
 public:
  // `language`: "c" or "c++"; `origin` names the source in messages.
  ReferenceProgram(std::string op_name, std::string source, std::string language,
                   std::string origin);

  // Compiles and loads the library unless done; throws UserError with the
  // compiler's first error line. Called by run(); callers may call it early.
  void prepare() const;

  // Calls kevo_reference (kevo_reference.h) or else kevo_kernel on contiguous
  // f64 tensors; `out` must be sized to `out_shapes`. `dtypes`: each tensor's
  // dtype in the task, inputs then outputs (empty: all f64), for
  // kevo_reference. Throws UserError when the reference crashes, returns
  // non-zero or runs longer than `timeout_s`.
  void run(const std::vector<std::vector<double>>& in, const std::vector<Shape>& in_shapes,
           std::vector<std::vector<double>>& out, const std::vector<Shape>& out_shapes,
           const std::vector<double>& scalars, double timeout_s = 600,
           const std::vector<DType>& dtypes = {}) const;

  const std::string& source_hash() const { return hash_; }

 private:
  struct Loaded;
  std::string op_name_, source_, language_, origin_, hash_;
  std::shared_ptr<Loaded> loaded_;  // shared by copies: compiled and opened once
};

}  // namespace kevo
