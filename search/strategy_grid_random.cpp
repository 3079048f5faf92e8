// grid: every valid point, family by family, in declaration order.
// random: uniform over the valid points, without replacement.
#include <unordered_map>

#include "core/json_reader.h"
#include "search/strategy.h"

namespace kevo {

namespace {

class GridStrategy final : public Strategy {
 public:
  explicit GridStrategy(const StrategyEnv& env) : env_(env) {}

  std::vector<Proposal> ask(size_t n) override {
    std::vector<Proposal> out;
    const uint64_t size = env_.space->size();
    while (out.size() < n && next_ < size) {
      Point p = env_.space->at(next_++);
      if (env_.known && env_.known(p)) continue;
      out.push_back({std::move(p), {}, "grid", 0});
    }
    return out;
  }
  void tell(const std::vector<Observation>&) override {}

 private:
  StrategyEnv env_;
  uint64_t next_ = 0;
};

// A lazy Fisher-Yates shuffle of [0, size): only swapped slots are stored.
class RandomStrategy final : public Strategy {
 public:
  RandomStrategy(const StrategyEnv& env, uint64_t seed) : env_(env), rng_(seed) {}

  std::vector<Proposal> ask(size_t n) override {
    std::vector<Proposal> out;
    const uint64_t size = env_.space->size();
    while (out.size() < n && drawn_ < size) {
      uint64_t j = std::uniform_int_distribution<uint64_t>(drawn_, size - 1)(rng_);
      uint64_t a = slot(drawn_), b = slot(j);
      swapped_[j] = a;
      swapped_.erase(drawn_);
      ++drawn_;
      Point p = env_.space->at(b);
      if (env_.known && env_.known(p)) continue;
      out.push_back({std::move(p), {}, "random", 0});
    }
    return out;
  }
  void tell(const std::vector<Observation>&) override {}

 private:
  uint64_t slot(uint64_t i) const {
    auto it = swapped_.find(i);
    return it == swapped_.end() ? i : it->second;
  }
  StrategyEnv env_;
  std::mt19937_64 rng_;
  uint64_t drawn_ = 0;
  std::unordered_map<uint64_t, uint64_t> swapped_;
};

}  // namespace

void register_grid(StrategyRegistry& r) {
  r.add({"grid", "every valid point of every family, in order (exhaustive)",
         [](const nlohmann::json& params, const std::string& path, const StrategyEnv& env) {
           JsonObject(params, path).finish();
           return std::make_unique<GridStrategy>(env);
         }});
}

void register_random(StrategyRegistry& r) {
  r.add({"random", "uniform over the valid points, without replacement",
         [](const nlohmann::json& params, const std::string& path, const StrategyEnv& env) {
           JsonObject(params, path).finish();
           return std::make_unique<RandomStrategy>(env, env.seed);
         }});
}

}  // namespace kevo
