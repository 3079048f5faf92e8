// The roof a measurement is judged against: the latest calibration of this
// machine in the store, or a fresh one when there is none.
#pragma once

#include <functional>
#include <string_view>

#include "core/roof.h"
#include "core/store.h"
#include "targets/target.h"

namespace kevo {

// Measures the roof now and stores it.
Roof calibrate_and_store(Store& store, Target& target,
                         const std::function<void(std::string_view)>& progress);
// Measures again the bandwidth at working set `bytes` and the peak rate,
// stores them, and returns this machine's roof with them merged in: what a
// time that beats the stored roof is judged against before it is called
// suspect (the stored figures may have been measured on a busy machine).
Roof remeasure(Store& store, Target& target, double bytes,
               const std::function<void(std::string_view)>& progress);
// This machine's roof: the best figures of every calibration stored for it
// (see Roof::best_of), calibrating first when there is none (and saying so
// on stderr: it takes a while, once per machine).
Roof roof_for(Store& store, Target& target, const std::function<void(std::string_view)>& progress);
// Every node type's roof for `target_name` in the store (the best figures of
// each host key's calibrations), the most recently calibrated first: what a
// cluster's workers choose theirs from.
std::vector<Roof> roofs_by_host(Store& store, std::string_view target_name);

}  // namespace kevo
