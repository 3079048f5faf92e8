// surrogate: model-based search, in the manner of Bayesian optimization with
// a cheap model. Every result so far (log of the median time; a failed point
// as slower than the slowest correct one) fits a nearest-neighbour model over
// the knobs: a point's predicted log-time is the distance-weighted mean of its
// k nearest measured points, and its uncertainty grows with the distance to
// the nearest one. Each proposal is the unmeasured point with the lowest
// bound mu - kappa * sigma (fast, or unexplored), among all valid points or
// a random pool of them in large spaces; a batch's earlier picks count as
// measured at their prediction ("kriging believer"), so one batch spreads.
// It starts with each family's default point and a few random points.
//
// Features: a family's one-hot, and each knob's value as its rank among the
// knob's declared values scaled to [0, 1] (-0.5 where the family lacks the
// knob), so that a step of one value is a step whatever the values are.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <unordered_set>

#include "core/error.h"
#include "core/json_reader.h"
#include "search/strategy.h"

namespace kevo {

namespace {

struct SurrogateParams {
  int64_t initial_random = 4;  // random points after the defaults, before the model
  int64_t neighbours = 5;      // k of the nearest-neighbour model
  double kappa = 1.0;          // weight of the uncertainty in the bound
  int64_t pool = 4096;         // candidates scored per proposal in spaces larger than this
};

class SurrogateStrategy final : public Strategy {
 public:
  SurrogateStrategy(const StrategyEnv& env, SurrogateParams p) : env_(env), p_(p), rng_(env.seed) {
    // The feature layout: families first, then every knob name of any family.
    std::set<std::string> names;
    for (const Family& f : env_.space->families())
      for (const KnobDecl& k : f.space.knobs()) names.insert(k.name);
    for (const auto& n : names) knob_index_[n] = knob_index_.size();
    families_ = env_.space->size_families();
    dims_ = families_ + knob_index_.size();
  }

  std::vector<Proposal> ask(size_t n) override {
    std::vector<Proposal> out;
    const uint64_t size = env_.space->size();
    auto take = [&](uint64_t index, const char* how) {
      if (proposed_.count(index)) return false;
      Point p = env_.space->at(index);
      proposed_.insert(index);
      if (env_.known && env_.known(p)) return false;  // its result comes through tell()
      out.push_back({std::move(p), {}, how, index + 1});
      return true;
    };
    // The families' default points, then a few random ones.
    for (int f : env_.space->seed_order()) {
      if (out.size() >= n) return out;
      if (seeded_.insert(f).second) {
        const auto idx = index_of(env_.space->seed(f));
        if (idx) take(*idx, "seed");
      }
    }
    while (out.size() < n && random_left_ > 0 && proposed_.size() < size) {
      --random_left_;
      take(std::uniform_int_distribution<uint64_t>(0, size - 1)(rng_), "random");
    }
    // The model's picks.
    std::vector<std::pair<std::vector<double>, double>> believed;  // this batch's picks
    while (out.size() < n && proposed_.size() < size) {
      const std::vector<uint64_t> pool = candidates(size);
      if (pool.empty()) break;
      uint64_t pick = pool.front();
      double lowest = std::numeric_limits<double>::infinity(), pick_mu = 0;
      for (uint64_t i : pool) {
        const std::vector<double>& x = features(i);
        auto [mu, sigma] = predict(x, believed);
        const double bound = mu - p_.kappa * sigma;
        if (bound < lowest) lowest = bound, pick = i, pick_mu = mu;
      }
      if (!take(pick, "surrogate")) continue;
      believed.push_back({features(pick), pick_mu});
    }
    return out;
  }

  void tell(const std::vector<Observation>& results) override {
    for (const Observation& o : results) {
      const auto idx = index_of(o.point);
      if (!idx) continue;
      proposed_.insert(*idx);
      if (o.ok() && o.seconds > 0 && std::isfinite(o.seconds)) {
        const double y = std::log(o.seconds);
        worst_ = std::max(worst_, y);
        measured_.push_back({features(*idx), y, false});
      } else {
        measured_.push_back({features(*idx), 0, true});
      }
    }
  }

 private:
  struct Measured {
    std::vector<double> x;
    double y;
    bool failed;  // its y is the slowest correct one's, plus a margin, when predicting
  };

  std::optional<uint64_t> index_of(const Point& p) {
    // The space grows when a synthesizer writes a family during the search:
    // indices are rebuilt then (a new family's points are appended).
    if (indexed_ != env_.space->size()) {
      indexed_ = env_.space->size();
      index_.clear();
      for (uint64_t i = 0; i < indexed_; ++i) index_[env_.space->key(env_.space->at(i))] = i;
    }
    auto it = index_.find(env_.space->key(p));
    if (it == index_.end()) return std::nullopt;
    return it->second;
  }

  const std::vector<double>& features(uint64_t i) {
    auto it = features_.find(i);
    if (it != features_.end()) return it->second;
    const Point p = env_.space->at(i);
    const Family& f = env_.space->family(p.family);
    // A family (or a knob) that appeared after the start has no dimension of
    // its own: it is placed by the knobs it shares with the others.
    std::vector<double> x(dims_, 0.0);
    if (static_cast<size_t>(p.family) < families_) x[static_cast<size_t>(p.family)] = 1.0;
    for (const auto& [name, k] : knob_index_) x[families_ + k] = -0.5;
    for (const KnobDecl& k : f.space.knobs()) {
      auto v = p.knobs.find(k.name);
      auto at = knob_index_.find(k.name);
      if (v == p.knobs.end() || at == knob_index_.end()) continue;
      // The value's rank among the declared ones, sorted.
      std::vector<int64_t> sorted = k.values;
      std::sort(sorted.begin(), sorted.end());
      const auto rank = std::lower_bound(sorted.begin(), sorted.end(), v->second) - sorted.begin();
      x[families_ + at->second] =
          sorted.size() > 1 ? static_cast<double>(rank) / static_cast<double>(sorted.size() - 1) : 0.0;
    }
    return features_.emplace(i, std::move(x)).first->second;
  }

  // The unproposed points to score: all of them, or a random pool.
  std::vector<uint64_t> candidates(uint64_t size) {
    std::vector<uint64_t> pool;
    if (size <= static_cast<uint64_t>(p_.pool)) {
      for (uint64_t i = 0; i < size; ++i)
        if (!proposed_.count(i)) pool.push_back(i);
      return pool;
    }
    for (int64_t tries = 0; tries < 4 * p_.pool && static_cast<int64_t>(pool.size()) < p_.pool; ++tries) {
      const uint64_t i = std::uniform_int_distribution<uint64_t>(0, size - 1)(rng_);
      if (!proposed_.count(i)) pool.push_back(i);
    }
    return pool;
  }

  // Predicted log-time and its uncertainty at x, from the measured points and
  // this batch's believed picks.
  std::pair<double, double> predict(const std::vector<double>& x,
                                    const std::vector<std::pair<std::vector<double>, double>>& believed) const {
    if (measured_.empty() && believed.empty()) return {0, 1};
    const double fail_y = std::isfinite(worst_) ? worst_ + 0.5 : 0;
    std::vector<std::pair<double, double>> near;  // (squared distance, y)
    auto dist2 = [&](const std::vector<double>& a) {
      double d = 0;
      for (size_t j = 0; j < a.size(); ++j) d += (a[j] - x[j]) * (a[j] - x[j]);
      return d;
    };
    for (const Measured& m : measured_) near.push_back({dist2(m.x), m.failed ? fail_y : m.y});
    for (const auto& [bx, by] : believed) near.push_back({dist2(bx), by});
    const size_t k = std::min(near.size(), static_cast<size_t>(p_.neighbours));
    std::partial_sort(near.begin(), near.begin() + static_cast<std::ptrdiff_t>(k), near.end());
    double wsum = 0, ysum = 0;
    for (size_t j = 0; j < k; ++j) {
      const double w = 1.0 / (near[j].first + 1e-3);
      wsum += w;
      ysum += w * near[j].second;
    }
    // Uncertainty: the spread of the measured log-times, scaled by how far the
    // nearest measured point is (a knob step away is about 0.25).
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const Measured& m : measured_)
      if (!m.failed) lo = std::min(lo, m.y), hi = std::max(hi, m.y);
    const double spread = hi > lo ? hi - lo : 1.0;
    const double d = std::sqrt(near.front().first);
    return {ysum / wsum, spread * d / (d + 0.25)};
  }

  StrategyEnv env_;
  SurrogateParams p_;
  std::mt19937_64 rng_;
  std::map<std::string, size_t> knob_index_;
  size_t families_ = 0, dims_ = 0;
  uint64_t indexed_ = 0;
  std::set<int> seeded_;
  int64_t random_left_ = 0;
  std::unordered_set<uint64_t> proposed_;
  std::map<std::string, uint64_t> index_;
  std::map<uint64_t, std::vector<double>> features_;
  std::vector<Measured> measured_;
  double worst_ = -std::numeric_limits<double>::infinity();

 public:
  void set_random(int64_t n) { random_left_ = n; }
};

int64_t non_negative(JsonObject& o, const char* key, int64_t dflt) {
  const int64_t v = o.get_int(key, dflt);
  if (v < 0) throw ConfigError(o.path_of(key), "expected an integer >= 0");
  return v;
}

}  // namespace

void register_surrogate(StrategyRegistry& r) {
  SurrogateParams d;
  r.add({"surrogate",
         "model-based: a nearest-neighbour model of log-time over the knobs, fitted to every "
         "result, proposes the point with the lowest predicted time minus kappa times its "
         "uncertainty",
         [d](const nlohmann::json& params, const std::string& path, const StrategyEnv& env) {
           JsonObject o(params, path);
           SurrogateParams p;
           p.initial_random = non_negative(o, "initial_random", d.initial_random);
           p.neighbours = o.get_int("neighbours", d.neighbours);
           if (p.neighbours < 1) throw ConfigError(o.path_of("neighbours"), "expected an integer >= 1");
           p.kappa = o.get_number("kappa", d.kappa);
           if (!(p.kappa >= 0)) throw ConfigError(o.path_of("kappa"), "expected a number >= 0");
           p.pool = o.get_int("pool", d.pool);
           if (p.pool < 1) throw ConfigError(o.path_of("pool"), "expected an integer >= 1");
           o.finish();
           auto s = std::make_unique<SurrogateStrategy>(env, p);
           s->set_random(p.initial_random);
           return s;
         }});
}

}  // namespace kevo
