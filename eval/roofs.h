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
// This machine's roof: the best figures of every calibration stored for it
// (see Roof::best_of), calibrating first when there is none.
Roof roof_for(Store& store, Target& target, const std::function<void(std::string_view)>& progress);

}  // namespace kevo
