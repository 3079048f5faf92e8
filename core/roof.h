// A machine's measured roof: bandwidth at several working-set sizes and
// thread counts, and the peak arithmetic rate, with where and when.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kevo {

struct BandwidthPoint {
  std::string kind;   // "copy", "copy_nt" (non-temporal stores), "triad"
  int threads = 1;
  double bytes = 0;   // working set: all arrays together
  double gbps = 0;    // bytes read + written per second / 1e9
};

struct PeakPoint {
  std::string kind;   // "fp32_fma"
  int threads = 1;
  double gflops = 0;
};

struct Roof {
  int64_t id = 0;
  std::string target;
  std::string host_key;  // what must match for the roof to apply: CPU model and count
  std::string hostname;
  std::string cpu_model;
  int ncpu = 1;
  std::string measured_at;  // ISO 8601, UTC
  std::vector<BandwidthPoint> bandwidth;
  std::vector<PeakPoint> peak;

  // The best bandwidth measured at the largest working set not above
  // `bytes` (the smallest one measured when `bytes` is below all), over every
  // kind and thread count (or only `threads` when > 0): an upper bound for a
  // kernel that moves `bytes`.
  const BandwidthPoint* bandwidth_for(double bytes, int threads = 0) const;
  // The peak rate with `threads` (> 0: the best measured with that many);
  // with 0, the best measured at any thread count, with the count it was
  // measured with. Never extrapolated: where two threads measured below one
  // (two vCPUs on one core, or a disturbed calibration), the roof is the
  // one-thread figure, not twice it (kevo calibrate again to retake it).
  std::optional<PeakPoint> peak_for(int threads = 0) const;
  // The same among the rates that a kernel computing in `dtype` ("f32",
  // "bf16", ...) can reach: a tensor-core rate ("bf16_tensor") only for the
  // dtypes those units take (bf16, f16), an fp32 FMA rate for any. An f32
  // kernel is judged against the fp32 rate, not the bf16 tensor peak. Where
  // none applies (a roof calibrated before kevo measured the fp32 rate of a
  // GPU), the best of any kind.
  std::optional<PeakPoint> peak_for_dtype(std::string_view dtype, int threads = 0) const;

  nlohmann::json to_json() const;
  static Roof from_json(const nlohmann::json& j);

  // One roof from several calibrations of the same machine: per point the
  // highest figure. Noise only ever makes a bandwidth or rate measurement
  // lower, so the best one measured is the closest to the machine's roof.
  // Keeps the newest roof's identity (id, date). `roofs` must not be empty.
  static Roof best_of(const std::vector<Roof>& roofs);
  int calibrations = 1;  // how many were merged
  // The vendor's figures for this machine, shown beside the measured ones
  // (never used as the roof); empty when kevo knows none.
  std::string datasheet;
};

}  // namespace kevo
