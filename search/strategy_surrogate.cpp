// surrogate: model-based search, in the manner of Bayesian optimization with
// a cheap model (search/time_model.h): every result so far fits a
// nearest-neighbour model of log-time over the knobs, and each proposal is
// the unmeasured point with the lowest bound mu - kappa * sigma (fast, or
// unexplored), among all valid points or a random pool of them in large
// spaces; a batch's earlier picks count as measured at their prediction
// ("kriging believer"), so one batch spreads. It starts with each family's
// default point and a few random points.
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
#include "search/time_model.h"

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
  SurrogateStrategy(const StrategyEnv& env, SurrogateParams p)
      : env_(env), p_(p), rng_(env.seed), model_(env.space, p.neighbours),
        random_left_(p.initial_random) {}

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
        const TimeModel::Guess g = model_.predict(x, believed);
        const double bound = g.mu - p_.kappa * g.sigma;
        if (bound < lowest) lowest = bound, pick = i, pick_mu = g.mu;
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
      model_.add(o.point, o);
    }
  }

 private:
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
    return features_.emplace(i, model_.features(env_.space->at(i))).first->second;
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

  StrategyEnv env_;
  SurrogateParams p_;
  std::mt19937_64 rng_;
  TimeModel model_;
  uint64_t indexed_ = 0;
  std::set<int> seeded_;
  int64_t random_left_;  // random points still to propose before the model
  std::unordered_set<uint64_t> proposed_;
  std::map<std::string, uint64_t> index_;
  std::map<uint64_t, std::vector<double>> features_;
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
           return std::make_unique<SurrogateStrategy>(env, p);
         }});
}

}  // namespace kevo
