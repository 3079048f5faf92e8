// libFuzzer target: a knob constraint expression (core/expr.h) over the knob
// names kevo's shipped kernels use, parsed and evaluated at points chosen from
// awkward values. ExprError is the documented answer to bad text; evaluation
// never throws (overflow and division by zero are nullopt).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/expr.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<std::string> names = {
      "UNROLL",  "TPR",   "VEC",    "MINB",      "ROWS",      "BN",      "WLOAD",  "BM",
      "PIPE",    "HINT",  "WN",     "WM",        "REG_ELEMS", "CACHE",   "GRID",   "BK",
      "THREADS", "RB",    "PIN",    "CACHE_ROW", "WGM",       "STAGES",  "PF",     "OB",
      "EPI",     "WAVES", "ONLINE", "NCONS",     "VAR",       "SPEC",    "PFHINT", "PAR",
      "NR",      "NCPU",  "MR",     "LD",        "COL",       "CLUSTER", "BLOCK",  "ALGO"};
  static const int64_t awkward[] = {0, 1, -1, 2, 7, 256, INT64_MAX, INT64_MIN};
  std::string_view text(reinterpret_cast<const char*>(data), size);
  kevo::Expr e;
  try {
    e = kevo::Expr::parse(text, names);
  } catch (const kevo::ExprError& err) {
    if (err.column() < 1 || static_cast<size_t>(err.column()) > size + 1) std::abort();
    return 0;
  }
  for (const auto& n : e.names())
    if (std::find(names.begin(), names.end(), n) == names.end()) std::abort();
  // A few points: all equal, then a spread keyed on the input's length.
  for (int64_t a : awkward) {
    std::vector<int64_t> v(names.size(), a);
    (void)e.evaluate(v.data());
  }
  std::vector<int64_t> v(names.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = awkward[(size + i * 3) % 8];
  (void)e.evaluate(v.data());
  return 0;
}
