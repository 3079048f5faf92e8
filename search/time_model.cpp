#include "search/time_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace kevo {

TimeModel::TimeModel(const SearchSpace* space, int64_t neighbours)
    : space_(space),
      neighbours_(static_cast<size_t>(std::max<int64_t>(neighbours, 1))),
      worst_(-std::numeric_limits<double>::infinity()),
      best_(std::numeric_limits<double>::infinity()) {
  if (!space) return;
  std::set<std::string> names;
  for (const Family& f : space->families())
    for (const KnobDecl& k : f.space.knobs()) names.insert(k.name);
  for (const auto& n : names) knob_index_[n] = knob_index_.size();
  families_ = space->size_families();
  dims_ = families_ + knob_index_.size();
}

std::vector<double> TimeModel::features(const Point& p) const {
  std::vector<double> x(dims_, 0.0);
  if (!space_) return x;
  if (p.family >= 0 && static_cast<size_t>(p.family) < families_) x[static_cast<size_t>(p.family)] = 1.0;
  for (const auto& [name, k] : knob_index_) x[families_ + k] = -0.5;
  const Family& f = space_->family(p.family);
  for (const KnobDecl& k : f.space.knobs()) {
    auto v = p.knobs.find(k.name);
    auto at = knob_index_.find(k.name);
    if (v == p.knobs.end() || at == knob_index_.end()) continue;
    std::vector<int64_t> sorted = k.values;
    std::sort(sorted.begin(), sorted.end());
    const auto rank = std::lower_bound(sorted.begin(), sorted.end(), v->second) - sorted.begin();
    x[families_ + at->second] =
        sorted.size() > 1 ? static_cast<double>(rank) / static_cast<double>(sorted.size() - 1) : 0.0;
  }
  return x;
}

void TimeModel::add(const Point& p, const Observation& o) {
  if (o.ok() && o.seconds > 0 && std::isfinite(o.seconds)) {
    const double y = std::log(o.seconds);
    worst_ = std::max(worst_, y);
    best_ = std::min(best_, y);
    measured_.push_back({features(p), y, false});
  } else {
    measured_.push_back({features(p), 0, true});
  }
}

TimeModel::Guess TimeModel::predict(
    const std::vector<double>& x, const std::vector<std::pair<std::vector<double>, double>>& believed) const {
  if (measured_.empty() && believed.empty()) return {};
  const double fail_y = std::isfinite(worst_) ? worst_ + 0.5 : 0;
  std::vector<std::pair<double, double>> near;  // (squared distance, y)
  near.reserve(measured_.size() + believed.size());
  auto dist2 = [&](const std::vector<double>& a) {
    double d = 0;
    for (size_t j = 0; j < a.size() && j < x.size(); ++j) d += (a[j] - x[j]) * (a[j] - x[j]);
    return d;
  };
  for (const Measured& m : measured_) near.push_back({dist2(m.x), m.failed ? fail_y : m.y});
  for (const auto& [bx, by] : believed) near.push_back({dist2(bx), by});
  const size_t k = std::min(near.size(), neighbours_);
  std::partial_sort(near.begin(), near.begin() + static_cast<std::ptrdiff_t>(k), near.end());
  double wsum = 0, ysum = 0;
  for (size_t j = 0; j < k; ++j) {
    const double w = 1.0 / (near[j].first + 1e-3);
    wsum += w;
    ysum += w * near[j].second;
  }
  // The spread of the measured log-times, scaled by how far the nearest
  // measured point is (a step of one knob value is about 0.25 away).
  const double spread = worst_ > best_ ? worst_ - best_ : 1.0;
  const double d = std::sqrt(near.front().first);
  return {ysum / wsum, spread * d / (d + 0.25)};
}

}  // namespace kevo
