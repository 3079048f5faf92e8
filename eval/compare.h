// Correctness: compares a kernel's outputs with the reference, each under its
// own comparison mode, and reports max abs error, max ULP, mismatch count and the
// first mismatch.
#pragma once

#include <vector>

#include "core/compare_mode.h"
#include "core/eval_result.h"
#include "core/operator.h"
#include "core/tensor.h"

namespace kevo {

// `got` and `want` are the outputs in ABI order (same dtypes and shapes),
// `modes` one comparison per output. The report names the outputs that fail.
CheckReport compare_outputs(const Operator& op, const std::vector<ConstTensorView>& got,
                            const std::vector<ConstTensorView>& want,
                            const std::vector<CompareMode>& modes);

}  // namespace kevo
