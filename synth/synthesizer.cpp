#include "synth/synthesizer.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json_reader.h"
#include "core/paths.h"
#include "knowledge/knowledge_base.h"

namespace kevo {

// ---- rules -------------------------------------------------------------

KnobRules KnobRules::parse(const nlohmann::json& j, const std::string& origin) {
  KnobRules out;
  JsonObject root(j, origin + ": $");
  root.get_string("about", "");
  out.guided_probability = root.get_number("guided_probability", 0.75);
  if (out.guided_probability < 0 || out.guided_probability > 1)
    throw ConfigError(root.path_of("guided_probability"), "expected a probability in [0, 1]");
  const nlohmann::json* rules = root.get_raw("rules");
  if (!rules || !rules->is_array())
    throw ConfigError(root.path_of("rules"), "expected a list of rules");
  for (size_t i = 0; i < rules->size(); ++i) {
    JsonObject r((*rules)[i], fmt::format("{}[{}]", root.path_of("rules"), i));
    KnobRule rule;
    rule.id = r.get_string("id");
    rule.why = r.get_string("why", "");
    JsonObject when = r.get_object("when");
    // A word outside the diagnosis vocabulary would never match a parent, so
    // the rule would sit there silently unused: say so when the file is read.
    auto diagnosis_word = [&](const char* key) {
      std::string word = when.get_string(key, "");
      if (word == "any") return std::string();  // as `kevo kb search --bound any`: no filter
      if (!word.empty())
        if (auto why = kb_tag_word_error("bound", word); !why.empty()) throw ConfigError(when.path_of(key), why);
      return word;
    };
    rule.bound = diagnosis_word("bound");
    rule.bottleneck = diagnosis_word("bottleneck");
    rule.max_roof_fraction = when.get_number("max_roof_fraction", 1e9);
    rule.min_spread = when.get_number("min_spread", 0);
    when.finish();
    const nlohmann::json* moves = r.get_raw("moves");
    if (!moves || !moves->is_array() || moves->empty())
      throw ConfigError(r.path_of("moves"), "expected a non-empty list of moves");
    for (size_t m = 0; m < moves->size(); ++m) {
      JsonObject mv((*moves)[m], fmt::format("{}[{}]", r.path_of("moves"), m));
      KnobMove move;
      move.knobs = mv.get_string_list("knobs");
      std::string dir = mv.get_string("direction", "any");
      if (dir == "up") move.direction = 1;
      else if (dir == "down") move.direction = -1;
      else if (dir == "any") move.direction = 0;
      else throw ConfigError(mv.path_of("direction"), "expected up, down or any");
      mv.finish();
      rule.moves.push_back(std::move(move));
    }
    r.finish();
    out.rules.push_back(std::move(rule));
  }
  root.finish();
  return out;
}

KnobRules KnobRules::load_default() {
  const auto path = kevo_home() / "knowledge" / "corpus" / "rules" / "knob.json";
  return parse(read_json_file(path.string()), path.string());
}

std::vector<const KnobRule*> KnobRules::matching(const Observation& parent) const {
  std::vector<const KnobRule*> out;
  for (const auto& r : rules) {
    if (!r.bound.empty() && r.bound != parent.bound) continue;
    if (!r.bottleneck.empty() && r.bottleneck != parent.bottleneck) continue;
    if (parent.roof_fraction > r.max_roof_fraction) continue;
    if (parent.spread < r.min_spread) continue;
    out.push_back(&r);
  }
  return out;
}

// ---- helpers -----------------------------------------------------------

namespace {

size_t pick(size_t n, std::mt19937_64& rng) {
  return std::uniform_int_distribution<size_t>(0, n - 1)(rng);
}

// Moves knob `d` one step in `direction`; direction 0 is a step either way
// (declared values are mostly ordered: widths, unrolls, tile sizes) or, one
// time in four, a jump to any other value.
bool move_knob(const KnobDecl& d, int direction, KnobValues& knobs, std::mt19937_64& rng) {
  const auto& vals = d.values;
  if (vals.size() < 2) return false;
  auto pos = std::find(vals.begin(), vals.end(), knobs.at(d.name));
  const size_t i = static_cast<size_t>(pos - vals.begin());
  if (direction == 0) {
    if (std::uniform_int_distribution<int>(0, 3)(rng) == 0) {
      size_t j = pick(vals.size() - 1, rng);
      knobs[d.name] = vals[j >= i ? j + 1 : j];
      return true;
    }
    direction = std::bernoulli_distribution(0.5)(rng) ? 1 : -1;
    if (i == 0) direction = 1;
    if (i + 1 == vals.size()) direction = -1;
  }
  if (direction > 0) {
    if (i + 1 >= vals.size()) return false;
    knobs[d.name] = vals[i + 1];
  } else {
    if (i == 0) return false;
    knobs[d.name] = vals[i - 1];
  }
  return true;
}

// When a move breaks a constraint, tries moving one other knob too.
bool repair(const SearchSpace& space, int family, const std::string& moved, KnobValues& knobs,
            std::mt19937_64& rng) {
  if (space.valid({family, knobs})) return true;
  const KnobSpace& ks = space.family(family).space;
  for (int attempt = 0; attempt < 24; ++attempt) {
    const KnobDecl& d = ks.knobs()[pick(ks.knobs().size(), rng)];
    if (d.name == moved) continue;
    Point p{family, knobs};
    p.knobs[d.name] = d.values[pick(d.values.size(), rng)];
    if (space.valid(p)) {
      knobs = std::move(p.knobs);
      return true;
    }
  }
  return false;
}

class KnobSynthesizer final : public Synthesizer {
 public:
  explicit KnobSynthesizer(KnobRules rules) : rules_(std::move(rules)) {}
  std::string_view name() const override { return "knob"; }
  size_t arity() const override { return 1; }

  std::optional<Synthesized> apply(const SearchSpace& space,
                                   const std::vector<const Observation*>& parents,
                                   std::mt19937_64& rng) const override {
    const Observation& parent = *parents.at(0);
    const KnobSpace& ks = space.family(parent.point.family).space;
    if (ks.knobs().empty()) return std::nullopt;
    // The moves the diagnosis suggests, among the knobs this family has.
    struct Option {
      const KnobDecl* decl;
      int direction;
      const KnobRule* rule;
    };
    std::vector<Option> guided;
    for (const KnobRule* rule : rules_.matching(parent))
      for (const KnobMove& m : rule->moves)
        for (const auto& name : m.knobs)
          if (const KnobDecl* d = ks.find(name); d && d->values.size() > 1)
            guided.push_back({d, m.direction, rule});
    std::uniform_real_distribution<double> u(0, 1);
    for (int attempt = 0; attempt < 32; ++attempt) {
      Option o{nullptr, 0, nullptr};
      if (!guided.empty() && u(rng) < rules_.guided_probability) {
        o = guided[pick(guided.size(), rng)];
      } else {
        o.decl = &ks.knobs()[pick(ks.knobs().size(), rng)];
      }
      KnobValues k = parent.point.knobs;
      if (!move_knob(*o.decl, o.direction, k, rng)) continue;
      if (!repair(space, parent.point.family, o.decl->name, k, rng)) continue;
      if (k == parent.point.knobs) continue;
      return Synthesized{{parent.point.family, std::move(k)},
                         o.rule ? "knob:" + o.rule->id : std::string("knob:random")};
    }
    return std::nullopt;
  }

 private:
  KnobRules rules_;
};

class FamilySynthesizer final : public Synthesizer {
 public:
  std::string_view name() const override { return "family"; }
  size_t arity() const override { return 1; }

  std::optional<Synthesized> apply(const SearchSpace& space,
                                   const std::vector<const Observation*>& parents,
                                   std::mt19937_64& rng) const override {
    const Observation& parent = *parents.at(0);
    std::vector<int> others;
    for (size_t f = 0; f < space.size_families(); ++f)
      if (static_cast<int>(f) != parent.point.family) others.push_back(static_cast<int>(f));
    std::shuffle(others.begin(), others.end(), rng);
    for (int f : others) {
      const KnobSpace& ks = space.family(f).space;
      // Knobs both families declare keep their value where the other allows it.
      Point p = space.seed(f);
      for (auto& [name, value] : p.knobs) {
        auto it = parent.point.knobs.find(name);
        const KnobDecl* d = ks.find(name);
        if (it != parent.point.knobs.end() &&
            std::find(d->values.begin(), d->values.end(), it->second) != d->values.end())
          value = it->second;
      }
      if (!space.valid(p)) p = space.seed(f);
      if (!space.valid(p)) {
        auto r = random_point(space, f, rng);
        if (!r) continue;
        p = *r;
      }
      return Synthesized{std::move(p), "family"};
    }
    return std::nullopt;
  }
};

class CrossoverSynthesizer final : public Synthesizer {
 public:
  std::string_view name() const override { return "crossover"; }
  size_t arity() const override { return 2; }

  std::optional<Synthesized> apply(const SearchSpace& space,
                                   const std::vector<const Observation*>& parents,
                                   std::mt19937_64& rng) const override {
    const Point& a = parents.at(0)->point;
    const Point& b = parents.at(1)->point;
    if (a.family != b.family || a.knobs == b.knobs) return std::nullopt;
    std::bernoulli_distribution coin(0.5);
    for (int attempt = 0; attempt < 32; ++attempt) {
      Point c{a.family, {}};
      for (const auto& [name, value] : a.knobs) c.knobs[name] = coin(rng) ? value : b.knobs.at(name);
      if (c.knobs == a.knobs || c.knobs == b.knobs) continue;
      if (space.valid(c)) return Synthesized{std::move(c), "crossover"};
    }
    return std::nullopt;
  }
};

}  // namespace

std::optional<Point> random_point(const SearchSpace& space, int f, std::mt19937_64& rng) {
  const KnobSpace& ks = space.family(f).space;
  Point p{f, {}};
  for (int attempt = 0; attempt < 256; ++attempt) {
    p.knobs.clear();
    for (const auto& d : ks.knobs()) p.knobs[d.name] = d.values[pick(d.values.size(), rng)];
    if (space.valid(p)) return p;
  }
  // A sparse space: choose among the enumerated points of this family.
  auto [first, last] = space.family_range(f);
  if (first == last) return std::nullopt;
  return space.at(first + std::uniform_int_distribution<uint64_t>(0, last - first - 1)(rng));
}

std::unique_ptr<Synthesizer> make_knob_synthesizer(KnobRules rules) {
  return std::make_unique<KnobSynthesizer>(std::move(rules));
}
std::unique_ptr<Synthesizer> make_family_synthesizer() {
  return std::make_unique<FamilySynthesizer>();
}
std::unique_ptr<Synthesizer> make_crossover_synthesizer() {
  return std::make_unique<CrossoverSynthesizer>();
}

Synthesizers Synthesizers::offline(KnobRules rules) {
  Synthesizers s;
  s.knob = make_knob_synthesizer(std::move(rules));
  s.family = make_family_synthesizer();
  s.crossover = make_crossover_synthesizer();
  return s;
}

}  // namespace kevo
