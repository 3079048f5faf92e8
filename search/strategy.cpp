#include "search/strategy.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace kevo {

StrategyRegistry& StrategyRegistry::builtin() {
  static StrategyRegistry* r = [] {
    auto* reg = new StrategyRegistry;
    register_grid(*reg);
    register_random(*reg);
    register_evolution(*reg);
    register_mcts(*reg);
    register_surrogate(*reg);
    return reg;
  }();
  return *r;
}

void StrategyRegistry::add(StrategyInfo info) {
  KEVO_ASSERT(!find(info.name));
  infos_.push_back(std::move(info));
}

const StrategyInfo* StrategyRegistry::find(std::string_view name) const {
  for (const auto& i : infos_)
    if (i.name == name) return &i;
  return nullptr;
}

std::unique_ptr<Strategy> StrategyRegistry::make(std::string_view name,
                                                 const nlohmann::json& params,
                                                 const std::string& path,
                                                 const StrategyEnv& env) const {
  const StrategyInfo* info = find(name);
  if (!info) {
    std::vector<std::string> names;
    for (const auto& i : infos_) names.push_back(i.name);
    throw UserError(fmt::format("unknown strategy '{}' (expected one of: {})", name,
                                fmt::join(names, ", ")));
  }
  return info->make(params.is_null() ? nlohmann::json::object() : params, path, env);
}

const Observation* best_of(const std::vector<Observation>& obs) {
  const Observation* best = nullptr;
  for (const auto& o : obs)
    if (o.ok() && (!best || o.seconds < best->seconds)) best = &o;
  return best;
}

}  // namespace kevo
