// What one evaluation of a candidate found: its status (a failing candidate
// is data, never an exception), correctness report, timing and diagnosis.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kevo {

enum class Status { ok, compile_error, mismatch, crash, timeout, suspect, rejected };

std::string_view status_name(Status s);
std::optional<Status> parse_status(std::string_view name);

struct Mismatch {
  std::string tensor;  // the output
  int64_t index = 0;   // flat index
  std::string coords;  // "[3, 17]"
  double got = 0;
  double want = 0;
  std::string compare;  // the mode the output is held to, e.g. "ulp:2"
};

// The comparison of one call's outputs with the reference.
struct CheckReport {
  std::string label;  // "[7, 1003] seed 1"
  bool passed = false;
  int64_t checked = 0;
  int64_t mismatches = 0;
  double max_abs_err = 0;
  double max_ulp = 0;
  std::optional<Mismatch> first;
  std::string note;  // e.g. "NaN where the reference has none"
  std::vector<std::string> failed_outputs;  // the outputs with mismatches, in order
};

struct TimingStats {
  double median_s = 0, p20_s = 0, p80_s = 0, mean_s = 0, min_s = 0, max_s = 0;
  int64_t calls_per_sample = 1;
  int64_t warmup_calls = 0;
  std::vector<double> samples_s;  // seconds per call, in measurement order

  // From raw per-call samples (not empty).
  static TimingStats from_samples(std::vector<double> samples, int64_t calls_per_sample,
                                  int64_t warmup_calls);
};

// exp(sum w_k ln v_k / sum w_k): values and weights > 0, as many of each.
double weighted_geomean(const std::vector<double>& values, const std::vector<double>& weights);

// The timing of a kernel tuned for several shapes: its median is the
// weighted geometric mean of the shapes' medians (the objective); its
// samples pair the shapes' i-th samples (measurement order, as many as the
// shortest has), each relative to its shape's median, combined the same way
// and scaled so that their median is the objective: their spread is the
// objective's, for the statistics that compare two kernels' samples. One
// shape: its timing unchanged.
TimingStats combine_shape_timings(const std::vector<TimingStats>& shapes,
                                  const std::vector<double>& weights);

// Where a kernel stands against the measured roof.
struct Diagnosis {
  std::string bound;          // "memory" or "compute"
  double roof_fraction = 0;   // floor time / measured median
  double floor_s = 0;         // bytes / bandwidth roof, or FLOPs / peak rate
  double achieved_gbps = 0;
  double achieved_gflops = 0;
  double roof_gbps = 0;
  double roof_gflops = 0;
  std::string why;  // one sentence
  // What a profiler (or the compiler's resource report) says limits the
  // kernel: "dram-bandwidth", "l2-bandwidth", "memory-latency", "occupancy", "spills",
  // "compute", "launch" or "" when nothing was profiled.
  std::string bottleneck;
};

// One figure from a profiler or the compiler's resource report: for the whole
// kernel (source_line 0) or for one line of the candidate's source.
struct ProfileMetric {
  std::string metric;  // "ncu.dram_pct", "ptxas.registers", "ncu.line.stall_samples"
  double value = 0;
  std::string unit;
  int64_t source_line = 0;
};

// One timed shape's figures in a multi-shape evaluation, read back from its
// shape.K.* metrics (K: the shape's index in the task's "shapes" list).
struct ShapeTime {
  size_t index = 0;
  double median_s = 0, p20_s = 0, p80_s = 0, weight = 0, roof_pct = 0;
};
// The shapes' figures among `metrics`, by index; empty for one timed shape.
std::vector<ShapeTime> shape_times(const std::vector<ProfileMetric>& metrics);

struct EvalResult {
  Status status = Status::ok;
  std::string detail;  // one line: why it failed, or notes
  double compile_s = 0;
  bool compile_cached = false;
  std::string compile_log;
  double run_s = 0;
  std::vector<CheckReport> checks;
  std::optional<TimingStats> timing;
  std::optional<Diagnosis> diagnosis;
  std::string stdout_text, stderr_text;
  int64_t roof_id = 0;
  std::vector<ProfileMetric> profile;  // stored in the profiles table

  nlohmann::json to_json() const;
};

nlohmann::json check_to_json(const CheckReport& c);

}  // namespace kevo
