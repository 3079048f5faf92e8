// The roofline diagnosis: where a measured kernel stands against the roof of
// the machine it ran on, in numbers and in one sentence.
#pragma once

#include "core/eval_result.h"
#include "core/roof.h"
#include "core/task.h"

namespace kevo {

// A median below this fraction of the roofline floor cannot be real: the
// candidate is `suspect`. The margin covers the roof's own measurement noise.
inline constexpr double kSuspectMargin = 0.9;

Diagnosis diagnose(const Task& task, const TimingStats& timing, const Roof& roof);
bool is_suspect(const Diagnosis& d, const TimingStats& timing);

// "12.3 ms", "850 us", "2.1 s".
std::string format_seconds(double s);

}  // namespace kevo
