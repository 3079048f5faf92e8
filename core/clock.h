// Clocks: monotonic seconds for measuring, ISO 8601 UTC for records.
#pragma once

#include <string>

namespace kevo {

// Monotonic seconds since an arbitrary epoch.
double monotonic_seconds();
// The current time as "2026-11-30T07:27:27Z".
std::string now_iso8601();

}  // namespace kevo
