// evolution: islands of candidates, each evolving (steady state) by
// tournament selection, elitism, mutation (the knob and family synthesizers) and crossover, with
// migration of the best between islands in a ring, and a MAP-Elites archive
// (the best candidate of each cell of kernel features: family, vector width,
// tile size, threads) that parents are also drawn from to keep diversity.
#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"
#include "core/json_reader.h"
#include "search/strategy.h"

namespace kevo {

namespace {

struct EvolutionParams {
  int64_t islands = 2;
  int64_t population = 8;
  int64_t tournament = 3;
  int64_t elites = 1;
  double crossover = 0.3;      // probability an offspring is a crossover
  double family_switch = 0.1;  // probability it moves to another family
  double archive_parent = 0.2;  // probability a parent comes from the archive
  int64_t migration_interval = 4;  // generations between migrations
  int64_t migrants = 1;
  double random_init = 0.5;  // share of the first generation drawn at random
};

struct Member {
  Observation obs;
  double fitness() const { return obs.ok() ? obs.seconds : std::numeric_limits<double>::infinity(); }
};

class EvolutionStrategy final : public Strategy {
 public:
  EvolutionStrategy(const StrategyEnv& env, EvolutionParams p)
      : env_(env), p_(p), rng_(env.seed), islands_(static_cast<size_t>(p.islands)) {}

  std::vector<Proposal> ask(size_t n) override {
    std::vector<Proposal> out;
    // Until every family's seed has been proposed, start from the seeds.
    while (out.size() < n && next_seed_ < static_cast<int>(env_.space->size_families())) {
      Point p = env_.space->seed(env_.space->seed_order()[next_seed_++]);
      if (env_.known && env_.known(p)) continue;  // the engine ran the seeds already
      if (!env_.space->valid(p)) {
        auto r = random_point(*env_.space, p.family, rng_);
        if (!r) continue;
        p = *r;
      }
      out.push_back({std::move(p), {}, "seed", make_tag(out.size())});
    }
    // Then random immigrants, for a diverse first generation.
    const uint64_t size = env_.space->size();
    for (int tries = 0; out.size() < n && immigrants_ < initial_immigrants() && tries < 64; ++tries) {
      Point p = env_.space->at(std::uniform_int_distribution<uint64_t>(0, size - 1)(rng_));
      if (env_.known && env_.known(p)) continue;
      ++immigrants_;
      out.push_back({std::move(p), {}, "random", make_tag(immigrants_)});
    }
    int stalls = 0;
    while (out.size() < n && stalls < 256) {
      size_t island = next_island_++ % islands_.size();
      auto prop = offspring(island);
      // A child someone already measured teaches nothing: try again.
      if (!prop || (env_.known && env_.known(prop->point)) ||
          std::any_of(out.begin(), out.end(), [&](const Proposal& q) { return q.point == prop->point; })) {
        ++stalls;
        continue;
      }
      prop->tag = make_tag(island);
      out.push_back(std::move(*prop));
    }
    return out;
  }

  void tell(const std::vector<Observation>& results) override {
    for (const Observation& o : results) {
      size_t island = o.tag ? static_cast<size_t>((o.tag - 1) % islands_.size())
                            : static_cast<size_t>(o.candidate) % islands_.size();
      add(island, o);
      archive_add(o);
    }
  }

 private:
  uint64_t make_tag(size_t island) { return 1 + island % islands_.size(); }
  int64_t initial_immigrants() const {
    return static_cast<int64_t>(std::ceil(p_.random_init * static_cast<double>(p_.islands * p_.population)));
  }

  static void sort(std::vector<Member>& v) {
    std::stable_sort(v.begin(), v.end(),
                     [](const Member& a, const Member& b) { return a.fitness() < b.fitness(); });
  }
  static bool contains(const std::vector<Member>& v, const Point& p) {
    return std::any_of(v.begin(), v.end(), [&](const Member& m) { return m.obs.point == p; });
  }

  // Steady state: the population fills first; then each result takes the
  // place of the worst of `tournament` members drawn outside the elites,
  // when it is better. The elites are never replaced, so the best survive.
  void add(size_t island, const Observation& o) {
    Island& isl = islands_[island];
    const size_t size = static_cast<size_t>(p_.population);
    if (contains(isl.pop, o.point)) return;
    Member m{o};
    if (isl.pop.size() < size) {
      isl.pop.push_back(std::move(m));
      sort(isl.pop);
    } else {
      const size_t elites = std::min<size_t>(static_cast<size_t>(p_.elites), size - 1);
      std::uniform_int_distribution<size_t> pick(elites, size - 1);
      size_t worst = pick(rng_);
      for (int64_t k = 1; k < p_.tournament; ++k) {
        size_t j = pick(rng_);
        if (isl.pop[j].fitness() > isl.pop[worst].fitness()) worst = j;
      }
      if (m.fitness() < isl.pop[worst].fitness()) {
        isl.pop[worst] = std::move(m);
        sort(isl.pop);
      }
    }
    if (++isl.born % size == 0 && ++isl.generation % static_cast<uint64_t>(p_.migration_interval) == 0)
      migrate(island);
  }

  // The island's best go to the next island in the ring, replacing its worst.
  void migrate(size_t from) {
    if (islands_.size() < 2) return;
    Island& to = islands_[(from + 1) % islands_.size()];
    const auto& src = islands_[from].pop;
    for (int64_t k = 0; k < p_.migrants && k < static_cast<int64_t>(src.size()); ++k) {
      if (contains(to.pop, src[k].obs.point)) continue;
      if (to.pop.size() >= static_cast<size_t>(p_.population)) to.pop.pop_back();
      to.pop.push_back(src[k]);
      sort(to.pop);
    }
  }

  void archive_add(const Observation& o) {
    if (!o.ok()) return;
    Features f = env_.space->features(o.point);
    auto it = archive_.find(f);
    if (it == archive_.end() || o.seconds < it->second.seconds) archive_[f] = o;
  }

  const Observation* tournament(size_t island) {
    const auto& pop = islands_[island].pop;
    if (pop.empty()) return nullptr;
    std::uniform_int_distribution<size_t> pick(0, pop.size() - 1);
    const Member* best = nullptr;
    for (int64_t k = 0; k < p_.tournament; ++k) {
      const Member& m = pop[pick(rng_)];
      if (!best || m.fitness() < best->fitness()) best = &m;
    }
    return &best->obs;
  }

  const Observation* parent(size_t island) {
    std::uniform_real_distribution<double> u(0, 1);
    if (!archive_.empty() && u(rng_) < p_.archive_parent) {
      auto it = archive_.begin();
      std::advance(it, std::uniform_int_distribution<size_t>(0, archive_.size() - 1)(rng_));
      return &it->second;
    }
    const Observation* p = tournament(island);
    if (!p) {  // an empty island borrows from another
      for (size_t i = 0; i < islands_.size() && !p; ++i) p = tournament(i);
    }
    return p;
  }

  std::optional<Proposal> offspring(size_t island) {
    const Observation* a = parent(island);
    if (!a) return std::nullopt;
    std::uniform_real_distribution<double> u(0, 1);
    const double r = u(rng_);
    const Synthesizers& s = *env_.synthesizers;
    std::optional<Synthesized> child;
    std::vector<int64_t> parents = {a->candidate};
    if (r < p_.crossover) {
      const Observation* b = nullptr;
      for (int k = 0; k < 4 && (!b || b == a || b->point.family != a->point.family); ++k)
        b = tournament(island);
      if (b && b != a && b->point.family == a->point.family) {
        child = s.crossover->apply(*env_.space, {a, b}, rng_);
        parents.push_back(b->candidate);
      }
    } else if (r < p_.crossover + p_.family_switch) {
      child = s.family->apply(*env_.space, {a}, rng_);
    }
    if (!child) {
      parents.resize(1);
      child = s.knob->apply(*env_.space, {a}, rng_);
    }
    if (!child) return std::nullopt;
    return Proposal{std::move(child->point), parents, child->label, 0};
  }

  StrategyEnv env_;
  EvolutionParams p_;
  std::mt19937_64 rng_;
  struct Island {
    std::vector<Member> pop;
    uint64_t born = 0;        // results added, for counting generations
    uint64_t generation = 0;  // `population` results make one
  };
  std::vector<Island> islands_;
  std::map<Features, Observation> archive_;
  size_t next_island_ = 0;
  int next_seed_ = 0;
  int64_t immigrants_ = 0;
};

double probability(JsonObject& o, const char* key, double dflt) {
  double v = o.get_number(key, dflt);
  if (v < 0 || v > 1) throw ConfigError(o.path_of(key), "expected a probability in [0, 1]");
  return v;
}

int64_t positive_int(JsonObject& o, const char* key, int64_t dflt) {
  int64_t v = o.get_int(key, dflt);
  if (v < 1) throw ConfigError(o.path_of(key), "expected an integer >= 1");
  return v;
}

}  // namespace

void register_evolution(StrategyRegistry& r) {
  EvolutionParams d;
  r.add({"evolution",
         "islands with migration, tournament selection, elitism, mutation and crossover, and a "
         "MAP-Elites archive over kernel features",
         [d](const nlohmann::json& params, const std::string& path, const StrategyEnv& env) {
           JsonObject o(params, path);
           EvolutionParams p;
           p.islands = positive_int(o, "islands", d.islands);
           p.population = positive_int(o, "population", d.population);
           p.tournament = positive_int(o, "tournament", d.tournament);
           p.elites = o.get_int("elites", d.elites);
           if (p.elites < 0 || p.elites > p.population)
             throw ConfigError(o.path_of("elites"), "expected 0 .. population");
           p.crossover = probability(o, "crossover", d.crossover);
           p.family_switch = probability(o, "family_switch", d.family_switch);
           if (p.crossover + p.family_switch > 1)
             throw ConfigError(o.path_of("family_switch"),
                               "crossover + family_switch must not exceed 1");
           p.archive_parent = probability(o, "archive_parent", d.archive_parent);
           p.migration_interval = positive_int(o, "migration_interval", d.migration_interval);
           p.migrants = positive_int(o, "migrants", d.migrants);
           p.random_init = probability(o, "random_init", d.random_init);
           o.finish();
           return std::make_unique<EvolutionStrategy>(env, p);
         }});
}

}  // namespace kevo
