// How an output is compared with the reference: exact, ulp:N or tol:ATOL,RTOL.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kevo {

struct CompareMode {
  enum Kind { exact, ulp, tol } kind = tol;
  int64_t max_ulp = 0;  // ulp: allowed distance in units in the last place
  double atol = 0;      // tol: |got - want| <= atol + rtol * |want|
  double rtol = 0;

  // Parses "exact", "ulp:4", "tol:1e-6,1e-5"; throws UserError naming the form.
  static CompareMode parse(std::string_view text);
  std::string str() const;
};

}  // namespace kevo
