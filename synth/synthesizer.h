// Synthesizers make a new candidate from one or two measured ones. The
// offline ones here move inside the families' knob spaces: `knob` (a move
// guided by the parent's diagnosis, its rules kept as data), `family` (the
// same knobs in another seed family) and `crossover` (knob values of two
// parents of one family).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/eval_result.h"
#include "core/space.h"
// The synthesizers read measured candidates in the search's vocabulary; the
// header is core-only (no link to kevo_search, so no cycle).
#include "search/observation.h"

namespace kevo {

// The diagnosis rules of the knob synthesizer, read from
// knowledge/corpus/rules/knob.json: when the parent looks like this, prefer moving
// these knobs in this direction.
struct KnobMove {
  std::vector<std::string> knobs;
  int direction = 0;  // +1 up the declared list, -1 down, 0 either way
};
struct KnobRule {
  std::string id;   // short, goes into the synthesizer label: "knob:memory"
  std::string why;  // for people
  std::string bound;  // matches Observation::bound when not empty
  std::string bottleneck;  // matches Observation::bottleneck when not empty
  double max_roof_fraction = 1e9;
  double min_spread = 0;
  std::vector<KnobMove> moves;
};
struct KnobRules {
  double guided_probability = 0.75;  // else a uniformly random knob move
  std::vector<KnobRule> rules;

  static KnobRules parse(const nlohmann::json& j, const std::string& origin);
  // knowledge/corpus/rules/knob.json under kevo's home.
  static KnobRules load_default();
  std::vector<const KnobRule*> matching(const Observation& parent) const;
};

struct Synthesized {
  Point point;
  std::string label;  // synthesizer label stored with the candidate
};

class Synthesizer {
 public:
  virtual ~Synthesizer() = default;
  virtual std::string_view name() const = 0;
  virtual size_t arity() const = 0;  // parents it needs
  // A new valid point from `parents` (arity() of them), different from each
  // of them, or nullopt when none could be made.
  virtual std::optional<Synthesized> apply(const SearchSpace& space,
                                           const std::vector<const Observation*>& parents,
                                           std::mt19937_64& rng) const = 0;
};

std::unique_ptr<Synthesizer> make_knob_synthesizer(KnobRules rules);
std::unique_ptr<Synthesizer> make_family_synthesizer();
std::unique_ptr<Synthesizer> make_crossover_synthesizer();

// The offline synthesizers, by name.
struct Synthesizers {
  std::unique_ptr<Synthesizer> knob, family, crossover;
  static Synthesizers offline(KnobRules rules);
};

// A uniformly random valid point of family `f` (rejection sampling over the
// declared values, then enumeration), or nullopt when it has none.
std::optional<Point> random_point(const SearchSpace& space, int f, std::mt19937_64& rng);

}  // namespace kevo
