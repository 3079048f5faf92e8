#include "eval/compare.h"

#include <cmath>
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
