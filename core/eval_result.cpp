#include "core/eval_result.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "core/error.h"

namespace kevo {

std::string_view status_name(Status s) {
  switch (s) {
    case Status::ok: return "ok";
    case Status::compile_error: return "compile_error";
    case Status::mismatch: return "mismatch";
    case Status::crash: return "crash";
    case Status::timeout: return "timeout";
    case Status::suspect: return "suspect";
    case Status::rejected: return "rejected";
  }
  KEVO_ASSERT(false);
}

std::optional<Status> parse_status(std::string_view name) {
  for (Status s : {Status::ok, Status::compile_error, Status::mismatch, Status::crash,
                   Status::timeout, Status::suspect, Status::rejected})
    if (status_name(s) == name) return s;
  return std::nullopt;
}

namespace {
// Linear interpolation between closest ranks (the "type 7" quantile).
double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.size() == 1) return sorted[0];
  double pos = q * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}
}  // namespace

TimingStats TimingStats::from_samples(std::vector<double> samples, int64_t calls_per_sample,
                                      int64_t warmup_calls) {
  KEVO_ASSERT(!samples.empty());
  TimingStats t;
  t.samples_s = samples;
  t.calls_per_sample = calls_per_sample;
  t.warmup_calls = warmup_calls;
  std::sort(samples.begin(), samples.end());
  t.median_s = quantile(samples, 0.5);
  t.p20_s = quantile(samples, 0.2);
  t.p80_s = quantile(samples, 0.8);
  t.min_s = samples.front();
  t.max_s = samples.back();
  double sum = 0;
  for (double s : samples) sum += s;
  t.mean_s = sum / static_cast<double>(samples.size());
  return t;
}

double weighted_geomean(const std::vector<double>& values, const std::vector<double>& weights) {
  KEVO_ASSERT(!values.empty() && values.size() == weights.size());
  double log_sum = 0, weight_sum = 0;
  for (size_t k = 0; k < values.size(); ++k) {
    KEVO_ASSERT(values[k] > 0 && weights[k] > 0);
    log_sum += weights[k] * std::log(values[k]);
    weight_sum += weights[k];
  }
  return std::exp(log_sum / weight_sum);
}

TimingStats combine_shape_timings(const std::vector<TimingStats>& shapes,
                                  const std::vector<double>& weights) {
  KEVO_ASSERT(!shapes.empty() && shapes.size() == weights.size());
  if (shapes.size() == 1) return shapes.front();
  std::vector<double> medians;
  size_t n = shapes.front().samples_s.size();
  int64_t warmup = 0;
  for (const auto& t : shapes) {
    KEVO_ASSERT(!t.samples_s.empty() && t.median_s > 0);
    medians.push_back(t.median_s);
    n = std::min(n, t.samples_s.size());
    warmup += t.warmup_calls;
  }
  const double objective = weighted_geomean(medians, weights);
  // The i-th samples of every shape, each relative to its shape's median,
  // combined as the objective is: their spread is the objective's.
  std::vector<double> rounds;
  for (size_t i = 0; i < n; ++i) {
    std::vector<double> rel;
    for (size_t k = 0; k < shapes.size(); ++k) rel.push_back(shapes[k].samples_s[i] / medians[k]);
    rounds.push_back(weighted_geomean(rel, weights));
  }
  std::vector<double> sorted = rounds;
  std::sort(sorted.begin(), sorted.end());
  const double centre = quantile(sorted, 0.5);
  for (double& r : rounds) r *= objective / centre;
  TimingStats t = TimingStats::from_samples(rounds, 1, warmup);
  t.median_s = objective;  // exactly, not up to rounding of the scaling
  return t;
}

std::vector<ShapeTime> shape_times(const std::vector<ProfileMetric>& metrics) {
  std::map<size_t, ShapeTime> by_index;
  for (const auto& m : metrics) {
    if (m.metric.rfind("shape.", 0) != 0) continue;
    const size_t dot = m.metric.find('.', 6);
    if (dot == std::string::npos) continue;
    size_t k = 0;
    try {
      k = std::stoul(m.metric.substr(6, dot - 6));
    } catch (const std::exception&) {
      continue;
    }
    ShapeTime& t = by_index[k];
    t.index = k;
    const std::string what = m.metric.substr(dot + 1);
    if (what == "median_s") t.median_s = m.value;
    else if (what == "p20_s") t.p20_s = m.value;
    else if (what == "p80_s") t.p80_s = m.value;
    else if (what == "weight") t.weight = m.value;
    else if (what == "roof_pct") t.roof_pct = m.value;
  }
  std::vector<ShapeTime> out;
  for (auto& [k, t] : by_index)
    if (t.median_s > 0) out.push_back(t);
  return out;
}

nlohmann::json check_to_json(const CheckReport& c) {
  nlohmann::json j = {{"label", c.label},
                      {"passed", c.passed},
                      {"checked", c.checked},
                      {"mismatches", c.mismatches},
                      {"max_abs_err", std::isfinite(c.max_abs_err) ? nlohmann::json(c.max_abs_err)
                                                                   : nlohmann::json("inf")},
                      {"max_ulp", std::isfinite(c.max_ulp) ? nlohmann::json(c.max_ulp)
                                                           : nlohmann::json("inf")}};
  if (!c.note.empty()) j["note"] = c.note;
  if (!c.failed_outputs.empty()) j["failed_outputs"] = c.failed_outputs;
  if (c.first) {
    auto num = [](double v) {
      return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(std::to_string(v));
    };
    j["first_mismatch"] = {{"tensor", c.first->tensor}, {"compare", c.first->compare},
                           {"index", c.first->index},   {"coords", c.first->coords},
                           {"got", num(c.first->got)},  {"want", num(c.first->want)}};
  }
  return j;
}

nlohmann::json EvalResult::to_json() const {
  nlohmann::json j;
  j["status"] = std::string(status_name(status));
  j["detail"] = detail;
  j["compile_s"] = compile_s;
  j["compile_cached"] = compile_cached;
  j["run_s"] = run_s;
  j["checks"] = nlohmann::json::array();
  for (const auto& c : checks) j["checks"].push_back(check_to_json(c));
  if (timing) {
    j["timing"] = {{"median_s", timing->median_s},   {"p20_s", timing->p20_s},
                   {"p80_s", timing->p80_s},         {"mean_s", timing->mean_s},
                   {"min_s", timing->min_s},         {"max_s", timing->max_s},
                   {"samples", timing->samples_s.size()},
                   {"calls_per_sample", timing->calls_per_sample},
                   {"warmup_calls", timing->warmup_calls}};
  }
  if (diagnosis) {
    j["diagnosis"] = {{"bound", diagnosis->bound},
                      {"roof_fraction", diagnosis->roof_fraction},
                      {"floor_s", diagnosis->floor_s},
                      {"achieved_gbps", diagnosis->achieved_gbps},
                      {"achieved_gflops", diagnosis->achieved_gflops},
                      {"roof_gbps", diagnosis->roof_gbps},
                      {"roof_gflops", diagnosis->roof_gflops},
                      {"why", diagnosis->why}};
    if (!diagnosis->bottleneck.empty()) j["diagnosis"]["bottleneck"] = diagnosis->bottleneck;
  }
  if (!profile.empty()) {
    j["profile"] = nlohmann::json::array();
    for (const auto& m : profile) {
      nlohmann::json e = {{"metric", m.metric}, {"value", m.value}, {"unit", m.unit}};
      if (m.source_line) e["line"] = m.source_line;
      j["profile"].push_back(std::move(e));
    }
  }
  return j;
}

}  // namespace kevo
