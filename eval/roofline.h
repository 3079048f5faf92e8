// The roofline diagnosis: where a measured kernel stands against the roof of
// the machine it ran on, in numbers and in one sentence.
#pragma once

#include <optional>
#include <vector>

#include "core/eval_result.h"
#include "core/roof.h"
#include "core/task.h"

namespace kevo {

// A median below this fraction of the roofline floor cannot be real: the
// candidate is `suspect`. The margin covers the roof's own measurement noise.
inline constexpr double kSuspectMargin = 0.9;

Diagnosis diagnose(const Task& task, const TimingStats& timing, const Roof& roof);

// Several timed shapes' diagnoses (each against its own floor) as one for
// the objective: the floor is the weighted geometric mean of theirs, set
// against the objective's median as one shape's against its time; the bound
// is theirs where they agree ("mixed" where not); the sentence gives each
// shape's share of its roof.
Diagnosis combine_diagnoses(const std::vector<Diagnosis>& shapes, const std::vector<double>& weights,
                            const std::vector<std::string>& labels, const TimingStats& objective);

// Samples that fall in two groups: sorted, a step of at least kBimodalGap
// between neighbours with a tenth or more of them on each side (10 samples
// or more). What a neighbour that takes turns on the machine leaves, and
// what the median of such samples hides; the diagnosis says so.
inline constexpr double kBimodalGap = 1.3;
struct Modes {
  double slow_share = 0;  // of the samples, in the slower group
  double ratio = 0;       // the slower group's median over the faster's
};
std::optional<Modes> two_modes(const std::vector<double>& samples);
bool is_suspect(const Diagnosis& d, const TimingStats& timing);

// "12.3 ms", "850 us", "2.1 s".
std::string format_seconds(double s);

}  // namespace kevo
