#include "core/compare_mode.h"

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "core/error.h"

namespace kevo {

namespace {
bool to_double(const std::string& s, double& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(out) && out >= 0;
}
}  // namespace

CompareMode CompareMode::parse(std::string_view text) {
  const char* form = "expected exact, ulp:N or tol:ATOL,RTOL";
  std::string t(text);
  CompareMode m;
  if (t == "exact") {
    m.kind = exact;
    return m;
  }
  if (t.rfind("ulp:", 0) == 0) {
    std::string n = t.substr(4);
    char* end = nullptr;
    long long v = n.empty() ? -1 : std::strtoll(n.c_str(), &end, 10);
    if (n.empty() || end != n.c_str() + n.size() || v < 0)
      throw UserError(fmt::format("bad comparison '{}': ulp needs a count >= 0 ({})", t, form));
    m.kind = ulp;
    m.max_ulp = v;
    return m;
  }
  if (t.rfind("tol:", 0) == 0) {
    std::string rest = t.substr(4);
    size_t comma = rest.find(',');
    if (comma == std::string::npos || !to_double(rest.substr(0, comma), m.atol) ||
        !to_double(rest.substr(comma + 1), m.rtol))
      throw UserError(
          fmt::format("bad comparison '{}': tol needs two numbers >= 0 ({})", t, form));
    m.kind = tol;
    return m;
  }
  throw UserError(fmt::format("bad comparison '{}' ({})", t, form));
}

std::string CompareMode::str() const {
  switch (kind) {
    case exact: return "exact";
    case ulp: return fmt::format("ulp:{}", max_ulp);
    case tol: return fmt::format("tol:{:g},{:g}", atol, rtol);
  }
  return "?";
}

}  // namespace kevo
