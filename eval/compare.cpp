#include "eval/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>

#include <fmt/format.h>

#include "core/error.h"

namespace kevo {

namespace {

struct Tally {
  int64_t mismatches = 0;
  int64_t nan_where_number = 0;
  double max_abs = 0;
  double max_ulp = 0;
  int64_t first = -1;  // flat index of the first mismatch in this chunk
};

bool element_ok(const CompareMode& mode, DType dt, const void* g, const void* w, size_t i,
                double gv, double wv, double abs_err, double ulp) {
  if (std::isnan(wv)) return std::isnan(gv);
  if (std::isnan(gv)) return false;
  switch (mode.kind) {
    case CompareMode::exact:
      return std::memcmp(static_cast<const char*>(g) + i * dtype_size(dt),
                         static_cast<const char*>(w) + i * dtype_size(dt), dtype_size(dt)) == 0;
    case CompareMode::ulp: return ulp <= static_cast<double>(mode.max_ulp);
    case CompareMode::tol:
      if (std::isinf(wv)) return gv == wv;
      return abs_err <= mode.atol + mode.rtol * std::fabs(wv);
  }
  return false;
}

// One chunk of a float output, element by element as element_ok() and
// ulp_distance() define it, with the dtype known at compile time (the
// generic loop calls out of line for every load: several times slower, and
// a big output's check is a good part of an evaluation). `Bits` is the
// storage, `value` decodes it exactly.
template <class Bits, float (*value)(Bits)>
void tally_float(const CompareMode& mode, const Bits* g, const Bits* w, int64_t begin, int64_t end,
                 Tally& local) {
  constexpr int width = static_cast<int>(sizeof(Bits) * 8);
  constexpr uint64_t sign = uint64_t{1} << (width - 1);
  auto ordered = [](Bits b) {
    const int64_t magnitude = static_cast<int64_t>(static_cast<uint64_t>(b) & (sign - 1));
    return (static_cast<uint64_t>(b) & sign) ? -magnitude : magnitude;
  };
  for (int64_t i = begin; i < end; ++i) {
    const double gv = value(g[i]), wv = value(w[i]);
    const bool gnan = std::isnan(gv), wnan = std::isnan(wv);
    double abs_err = (gv == wv) ? 0.0 : std::fabs(gv - wv);
    double ulp = (gnan || wnan) ? std::numeric_limits<double>::infinity()
                                : std::fabs(static_cast<double>(ordered(g[i]) - ordered(w[i])));
    if (gnan && wnan) abs_err = ulp = 0;
    bool ok;
    if (wnan) ok = gnan;
    else if (gnan) ok = false;
    else if (mode.kind == CompareMode::exact) ok = g[i] == w[i];
    else if (mode.kind == CompareMode::ulp) ok = ulp <= static_cast<double>(mode.max_ulp);
    else if (std::isinf(wv)) ok = gv == wv;
    else ok = abs_err <= mode.atol + mode.rtol * std::fabs(wv);
    if (!gnan && !wnan) {
      local.max_abs = std::max(local.max_abs, abs_err);
      local.max_ulp = std::max(local.max_ulp, ulp);
    }
    if (!ok) {
      ++local.mismatches;
      if (gnan && !wnan) ++local.nan_where_number;
      if (local.first < 0) local.first = i;
    }
  }
}

float f32_value(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
float bf16_value(uint16_t b) { return f32_value(static_cast<uint32_t>(b) << 16); }

}  // namespace

CheckReport compare_outputs(const Operator& op, const std::vector<ConstTensorView>& got,
                            const std::vector<ConstTensorView>& want,
                            const std::vector<CompareMode>& modes) {
  KEVO_ASSERT(got.size() == want.size() && got.size() == modes.size());
  CheckReport report;
  report.passed = true;
  int64_t nan_total = 0;
  for (size_t t = 0; t < got.size(); ++t) {
    const ConstTensorView& g = got[t];
    const ConstTensorView& w = want[t];
    const CompareMode& mode = modes[t];
    const std::string& name = op.tensor(op.n_inputs() + t).name;
    KEVO_ASSERT(g.dtype == w.dtype && g.shape == w.shape);
    const int64_t n = numel(g.shape);
    std::mutex m;
    Tally total;
    parallel_for(n, [&](int64_t begin, int64_t end) {
      Tally local;
      if (g.dtype == DType::bf16)
        tally_float<uint16_t, bf16_value>(mode, static_cast<const uint16_t*>(g.data),
                                          static_cast<const uint16_t*>(w.data), begin, end, local);
      else if (g.dtype == DType::f32)
        tally_float<uint32_t, f32_value>(mode, static_cast<const uint32_t*>(g.data),
                                         static_cast<const uint32_t*>(w.data), begin, end, local);
      else  // f16, f64, integers: the generic loads
        for (int64_t i = begin; i < end; ++i) {
          const size_t k = static_cast<size_t>(i);
          double gv = g.at(i), wv = w.at(i);
          double abs_err = (gv == wv) ? 0.0 : std::fabs(gv - wv);
          double ulp = dtype_is_float(g.dtype) ? ulp_distance(g.dtype, g.data, w.data, k)
                                               : abs_err;
          if (std::isnan(gv) && std::isnan(wv)) abs_err = ulp = 0;
          bool ok = element_ok(mode, g.dtype, g.data, w.data, k, gv, wv, abs_err, ulp);
          if (!std::isnan(gv) && !std::isnan(wv)) {
            local.max_abs = std::max(local.max_abs, abs_err);
            local.max_ulp = std::max(local.max_ulp, ulp);
          }
          if (!ok) {
            ++local.mismatches;
            if (std::isnan(gv) && !std::isnan(wv)) ++local.nan_where_number;
            if (local.first < 0) local.first = i;
          }
        }
      std::lock_guard<std::mutex> lock(m);
      total.mismatches += local.mismatches;
      total.nan_where_number += local.nan_where_number;
      total.max_abs = std::max(total.max_abs, local.max_abs);
      total.max_ulp = std::max(total.max_ulp, local.max_ulp);
      if (local.first >= 0 && (total.first < 0 || local.first < total.first))
        total.first = local.first;
    });
    report.checked += n;
    report.mismatches += total.mismatches;
    report.max_abs_err = std::max(report.max_abs_err, total.max_abs);
    report.max_ulp = std::max(report.max_ulp, total.max_ulp);
    nan_total += total.nan_where_number;
    if (total.mismatches > 0) report.failed_outputs.push_back(name);
    if (total.first >= 0 && !report.first) {
      Mismatch mm;
      mm.tensor = name;
      mm.compare = mode.str();
      mm.index = total.first;
      mm.coords = coords_str(g.shape, total.first);
      mm.got = g.at(total.first);
      mm.want = w.at(total.first);
      report.first = mm;
    }
  }
  report.passed = report.mismatches == 0;
  if (nan_total > 0)
    report.note = fmt::format("{} NaN output{} where the reference has a number{}", nan_total,
                              nan_total == 1 ? "" : "s",
                              nan_total == report.checked ? " (were the outputs written at all?)"
                                                          : "");
  return report;
}

}  // namespace kevo
