// Search strategies: the ask/tell interface and the registry of strategies
// by name. A strategy proposes a batch of points (ask), the engine has them
// synthesized into candidates and evaluated, and the strategy is told the
// results (tell) — including results it did not ask for (the seeds, a resumed
// run's history, points answered from the store).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/space.h"
#include "search/observation.h"
#include "synth/synthesizer.h"

namespace kevo {

struct Proposal {
  Point point;
  std::vector<int64_t> parents;  // candidate ids it was made from
  std::string synthesizer;       // "grid", "random", "knob:memory", "crossover", ...
  uint64_t tag = 0;              // the strategy's own reference, echoed in the observation
};

// What every strategy may use.
struct StrategyEnv {
  const SearchSpace* space = nullptr;
  const Synthesizers* synthesizers = nullptr;
  uint64_t seed = 1;
  // Whether the engine already knows a result for this point (this run, or
  // an earlier run of the same task in the store).
  std::function<bool(const Point&)> known;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  // Up to n proposals; none when the strategy has nothing left to try.
  virtual std::vector<Proposal> ask(size_t n) = 0;
  // Results, in the order they finished.
  virtual void tell(const std::vector<Observation>& results) = 0;
};

// Builds a strategy from its parameters (a JSON object, checked strictly:
// unknown keys are errors naming `path`).
using StrategyFactory = std::function<std::unique_ptr<Strategy>(
    const nlohmann::json& params, const std::string& path, const StrategyEnv& env)>;

struct StrategyInfo {
  std::string name;
  std::string summary;
  StrategyFactory make;
};

class StrategyRegistry {
 public:
  // The built-in strategies (grid, random, evolution, mcts).
  static StrategyRegistry& builtin();
  void add(StrategyInfo info);
  const StrategyInfo* find(std::string_view name) const;
  const std::vector<StrategyInfo>& all() const { return infos_; }
  // Throws UserError naming the known strategies when `name` is unknown.
  std::unique_ptr<Strategy> make(std::string_view name, const nlohmann::json& params,
                                 const std::string& path, const StrategyEnv& env) const;

 private:
  std::vector<StrategyInfo> infos_;
};

// Registration of the built-in strategies (each in its own file).
void register_grid(StrategyRegistry& r);
void register_random(StrategyRegistry& r);
void register_evolution(StrategyRegistry& r);
void register_mcts(StrategyRegistry& r);
void register_surrogate(StrategyRegistry& r);

// The best (fastest ok) among `obs`, or nullptr.
const Observation* best_of(const std::vector<Observation>& obs);

}  // namespace kevo
