// What the search knows about one candidate once it was evaluated: the
// vocabulary the engine, the strategies and the synthesizers share. Header
// only, on core alone, so that synth/ may speak it without linking search/.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/eval_result.h"
#include "core/space.h"

namespace kevo {

struct Observation {
  int64_t candidate = 0;  // store id
  Point point;
  std::vector<int64_t> parents;  // candidate ids
  std::string synthesizer;
  uint64_t tag = 0;  // echoed from the proposal that asked for it (0: not asked)
  Status status = Status::ok;
  double seconds = std::numeric_limits<double>::infinity();  // median, when ok
  double roof_fraction = 0;
  double spread = 0;  // (p80 - p20) / median
  std::string bound;  // "memory" | "compute" | ""
  std::string bottleneck;  // from a profile: Diagnosis::bottleneck
  bool reused = false;  // answered from an earlier measurement, not measured now
  int64_t duplicate_of = 0;  // the candidate of this run that already has this point
  double measure_s = 0;  // how long its evaluation ran (the runner's time): what re-measuring it costs
  double sm_mhz = 0;     // the GPU's SM clock when it was timed (machine.sm_mhz; 0: not known)

  bool ok() const { return status == Status::ok; }
};

// An evaluation's result as the search sees it (candidate, point and lineage
// left for the caller to fill).
inline Observation observation_of(const EvalResult& r) {
  Observation o;
  o.status = r.status;
  o.measure_s = r.run_s;
  if (r.status == Status::ok && r.timing) {
    o.seconds = r.timing->median_s;
    o.spread = r.timing->median_s > 0 ? (r.timing->p80_s - r.timing->p20_s) / r.timing->median_s
                                      : 0;
  }
  for (const auto& m : r.profile)
    if (m.metric == "machine.sm_mhz") o.sm_mhz = m.value;
  if (r.diagnosis) {
    o.roof_fraction = r.diagnosis->roof_fraction;
    o.bound = r.diagnosis->bound;
    o.bottleneck = r.diagnosis->bottleneck;
  }
  return o;
}

}  // namespace kevo
