// mcts: Monte Carlo tree search over the candidate tree. A node is an
// evaluated candidate; an action applies a synthesizer (knob move, family
// switch, crossover with the best of the same family) at a node. Selection
// descends by UCT (or PUCT, with a prior per action from the parent's
// diagnosis) until a node may still grow a child under progressive widening
// (children <= widen_c * visits^widen_alpha); that node is expanded. A node's
// value is the normalized performance of its subtree: the best time found
// anywhere divided by the best time in the subtree (1 for the subtree holding
// the best, 0 where nothing in it ran correctly).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "core/error.h"
#include "core/json_reader.h"
#include "search/strategy.h"
#include "search/time_model.h"

namespace kevo {

namespace {

struct MctsParams {
  double exploration = 0.5;  // c in UCT
  double widen_c = 1.0;
  double widen_alpha = 0.5;
  double root_widen_c = 1.5;  // the root's children: seeds, then random points
  bool puct = true;  // weight exploration by a prior per action
  // How many distinct children an expansion (or the root's widening) draws
  // before choosing one: with more than one, the one a model of the results
  // so far (search/time_model.h) predicts fastest, less kappa times its
  // uncertainty. 1: the first drawn, no model.
  int64_t model_choices = 8;
  double kappa = 1.0;
};

class MctsStrategy final : public Strategy {
 public:
  MctsStrategy(const StrategyEnv& env, MctsParams p)
      : env_(env), p_(p), rng_(env.seed), model_(env.space, 5) {
    nodes_.emplace_back();  // the root: its children are the families' seeds
  }

  std::vector<Proposal> ask(size_t n) override {
    std::vector<Proposal> out;
    std::set<Point> batch;
    int misses = 0;
    while (out.size() < n && misses < 64) {
      auto prop = expand_once(batch);
      // A tree that keeps landing on measured points restarts at a random one.
      if (!prop && misses >= 8) prop = random_child(batch);
      if (!prop) {
        ++misses;
        continue;
      }
      batch.insert(prop->point);
      out.push_back(std::move(*prop));
    }
    return out;
  }

  void tell(const std::vector<Observation>& results) override {
    for (const Observation& o : results) {
      auto pending = pending_.find(o.tag);
      std::vector<size_t> path;
      if (pending != pending_.end()) {
        path = pending->second;
        pending_.erase(pending);
        for (size_t i : path) --nodes_[i].virtual_visits;
      }
      if (o.ok()) best_ = std::min(best_, o.seconds);
      if (p_.model_choices > 1) model_.add(o.point, o);
      size_t node = 0;
      const int64_t id = o.duplicate_of ? o.duplicate_of : o.candidate;
      auto it = by_candidate_.find(id);
      if (it != by_candidate_.end()) {
        node = it->second;  // a point the tree already holds: a visit, no new node
      } else {
        size_t parent = 0;
        if (!o.parents.empty()) {
          auto p = by_candidate_.find(o.parents[0]);
          if (p != by_candidate_.end()) parent = p->second;
        }
        node = nodes_.size();
        Node fresh;
        fresh.obs = o;
        fresh.parent = parent;
        nodes_.push_back(std::move(fresh));
        nodes_[parent].children.push_back(node);
        by_candidate_[id] = node;
        if (o.ok()) nodes_[node].subtree_best = o.seconds;
      }
      if (path.empty()) path = path_to(node);
      // Backpropagate along the path that asked (or the tree path).
      for (size_t i : path) {
        nodes_[i].visits += 1;
        if (o.ok()) nodes_[i].subtree_best = std::min(nodes_[i].subtree_best, o.seconds);
      }
      if (node != path.back()) {
        nodes_[node].visits += 1;
      }
    }
  }

 private:
  struct Node {
    Observation obs;  // empty for the root
    size_t parent = 0;
    std::vector<size_t> children;
    double visits = 0;
    double virtual_visits = 0;  // proposals in flight below this node
    double subtree_best = std::numeric_limits<double>::infinity();
    bool saturated = false;  // its synthesizers keep giving known points
  };

  // Nothing left to grow below: not correct (or saturated), and every child too.
  bool dead(size_t i, int depth = 0) const {
    const Node& n = nodes_[i];
    if (i != 0 && n.obs.ok() && !n.saturated) return false;
    if (depth > 64) return false;
    return std::all_of(n.children.begin(), n.children.end(),
                       [&](size_t c) { return dead(c, depth + 1); });
  }

  std::vector<size_t> path_to(size_t node) const {
    std::vector<size_t> path;
    for (size_t i = node; i != 0; i = nodes_[i].parent) path.push_back(i);
    path.push_back(0);
    std::reverse(path.begin(), path.end());
    return path;
  }

  double value(const Node& n) const {
    if (!std::isfinite(n.subtree_best) || !std::isfinite(best_)) return 0;
    return best_ / n.subtree_best;
  }

  bool can_widen(const Node& n) const {
    if (n.saturated) return false;
    const double visits = n.visits + n.virtual_visits;
    const double c = &n == &nodes_[0] ? p_.root_widen_c : p_.widen_c;
    return static_cast<double>(n.children.size()) <
           std::max(1.0, c * std::pow(std::max(visits, 1.0), p_.widen_alpha));
  }

  // PUCT prior of a child: the parent's diagnosis favours what moved it.
  double prior(const Node& child, size_t siblings) const {
    if (!p_.puct) return 1.0;
    const std::string& s = child.obs.synthesizer;
    double w = s.rfind("knob:", 0) == 0 && s != "knob:random" ? 2.0 : 1.0;
    return w / std::max<size_t>(siblings, 1);
  }

  size_t select_child(const Node& n) const {
    const double parent_visits = std::max(1.0, n.visits + n.virtual_visits);
    double best_score = -1;
    size_t best = n.children.front();
    for (size_t c : n.children) {
      const Node& ch = nodes_[c];
      if (dead(c)) continue;
      const double v = ch.visits + ch.virtual_visits;
      const double explore =
          p_.puct ? p_.exploration * prior(ch, n.children.size()) * std::sqrt(parent_visits) / (1 + v)
                  : p_.exploration * std::sqrt(std::log(parent_visits + 1) / std::max(v, 1e-9));
      const double score = value(ch) + explore;
      if (score > best_score) best_score = score, best = c;
    }
    return best;
  }

  std::optional<Proposal> expand_once(const std::set<Point>& batch) {
    // Seeds first: one child of the root per family.
    while (next_seed_ < static_cast<int>(env_.space->size_families())) {
      Point p = env_.space->seed(env_.space->seed_order()[next_seed_++]);
      if (env_.known && env_.known(p)) continue;  // the engine ran the seeds already
      if (!env_.space->valid(p)) {
        auto r = random_point(*env_.space, p.family, rng_);
        if (!r) continue;
        p = *r;
      }
      if (batch.count(p)) continue;
      return finish({std::move(p), {}, "seed", 0}, {0});
    }
    // The root widens too: its new children are uniform random points, so
    // the tree keeps a way out of the seeds' neighbourhoods.
    if (can_widen(nodes_[0]) || dead(0)) {
      if (auto p = random_child(batch)) return p;
      if (dead(0)) return std::nullopt;
    }
    // Descend while the node may not widen; expand where it may.
    std::vector<size_t> path = {0};
    size_t cur = select_child(nodes_[0]);
    path.push_back(cur);
    for (int depth = 0; depth < 64; ++depth) {
      const Node& n = nodes_[cur];
      if (n.obs.ok() && can_widen(n)) break;
      if (dead(cur)) return std::nullopt;
      cur = select_child(n);
      path.push_back(cur);
    }
    Node& at = nodes_[cur];
    if (!at.obs.ok() || at.saturated) return std::nullopt;
    // A few tries for a point nobody has measured (model_choices of them,
    // to choose from); a node whose moves all land on known points is
    // saturated and selection goes past it.
    std::vector<Proposal> options;
    for (int attempt = 0; attempt < 12 * p_.model_choices &&
                          static_cast<int64_t>(options.size()) < p_.model_choices;
         ++attempt) {
      auto prop = action(at);
      if (!prop || batch.count(prop->point) || (env_.known && env_.known(prop->point))) continue;
      if (std::any_of(options.begin(), options.end(),
                      [&](const Proposal& o) { return o.point == prop->point; }))
        continue;
      options.push_back(std::move(*prop));
    }
    if (options.empty()) {
      at.saturated = true;
      return std::nullopt;
    }
    return finish(choose(std::move(options)), path);
  }

  // The option the model ranks first (lowest predicted log-time less kappa
  // times its uncertainty), or the first while it knows too little.
  Proposal choose(std::vector<Proposal> options) const {
    if (options.size() == 1 || model_.size() < 3) return std::move(options.front());
    size_t pick = 0;
    double lowest = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < options.size(); ++i) {
      const TimeModel::Guess g = model_.predict(model_.features(options[i].point));
      if (const double bound = g.mu - p_.kappa * g.sigma; bound < lowest) lowest = bound, pick = i;
    }
    return std::move(options[pick]);
  }

  // A uniformly random point nobody has measured, as a child of the root.
  std::optional<Proposal> random_child(const std::set<Point>& batch) {
    const uint64_t size = env_.space->size();
    if (size == 0) return std::nullopt;
    std::vector<Proposal> options;
    for (int attempt = 0; attempt < 16 * p_.model_choices &&
                          static_cast<int64_t>(options.size()) < p_.model_choices;
         ++attempt) {
      Point p = env_.space->at(std::uniform_int_distribution<uint64_t>(0, size - 1)(rng_));
      if (batch.count(p) || (env_.known && env_.known(p))) continue;
      if (std::any_of(options.begin(), options.end(), [&](const Proposal& o) { return o.point == p; }))
        continue;
      options.push_back({std::move(p), {}, "random", 0});
    }
    if (options.empty()) return std::nullopt;
    return finish(choose(std::move(options)), {0});
  }

  std::optional<Proposal> action(const Node& at) {
    const Synthesizers& s = *env_.synthesizers;
    std::uniform_real_distribution<double> u(0, 1);
    const double r = u(rng_);
    std::optional<Synthesized> child;
    std::vector<int64_t> parents = {at.obs.candidate};
    if (r < 0.15) {
      child = s.family->apply(*env_.space, {&at.obs}, rng_);
    } else if (r < 0.35) {
      // Crossover with the best other candidate of the same family.
      const Observation* mate = nullptr;
      for (size_t i = 1; i < nodes_.size(); ++i)
        if (const Node& n = nodes_[i]; n.obs.ok() && n.obs.candidate != at.obs.candidate &&
            n.obs.point.family == at.obs.point.family && (!mate || n.obs.seconds < mate->seconds))
          mate = &n.obs;
      if (mate) {
        child = s.crossover->apply(*env_.space, {&at.obs, mate}, rng_);
        parents.push_back(mate->candidate);
      }
    }
    if (!child) {
      parents.resize(1);
      child = s.knob->apply(*env_.space, {&at.obs}, rng_);
    }
    if (!child) return std::nullopt;
    return Proposal{std::move(child->point), parents, child->label, 0};
  }

  std::optional<Proposal> finish(Proposal p, const std::vector<size_t>& path) {
    p.tag = next_tag_++;
    for (size_t i : path) ++nodes_[i].virtual_visits;
    pending_[p.tag] = path;
    return p;
  }

  StrategyEnv env_;
  MctsParams p_;
  std::mt19937_64 rng_;
  TimeModel model_;
  std::vector<Node> nodes_;
  std::map<int64_t, size_t> by_candidate_;
  std::map<uint64_t, std::vector<size_t>> pending_;
  uint64_t next_tag_ = 1;
  int next_seed_ = 0;
  double best_ = std::numeric_limits<double>::infinity();
};

}  // namespace

void register_mcts(StrategyRegistry& r) {
  MctsParams d;
  r.add({"mcts",
         "Monte Carlo tree search over the candidate tree: UCT (or PUCT) selection, synthesizers "
         "as actions, progressive widening",
         [d](const nlohmann::json& params, const std::string& path, const StrategyEnv& env) {
           JsonObject o(params, path);
           MctsParams p;
           p.exploration = o.get_number("exploration", d.exploration);
           if (p.exploration < 0) throw ConfigError(o.path_of("exploration"), "expected >= 0");
           p.widen_c = o.get_number("widen_c", d.widen_c);
           if (p.widen_c <= 0) throw ConfigError(o.path_of("widen_c"), "expected > 0");
           p.widen_alpha = o.get_number("widen_alpha", d.widen_alpha);
           if (p.widen_alpha < 0 || p.widen_alpha > 1)
             throw ConfigError(o.path_of("widen_alpha"), "expected a number in [0, 1]");
           p.root_widen_c = o.get_number("root_widen_c", d.root_widen_c);
           if (p.root_widen_c < 0) throw ConfigError(o.path_of("root_widen_c"), "expected >= 0");
           p.puct = o.get_bool("puct", d.puct);
           p.model_choices = o.get_int("model_choices", d.model_choices);
           if (p.model_choices < 1 || p.model_choices > 64)
             throw ConfigError(o.path_of("model_choices"), "expected an integer in 1 .. 64");
           p.kappa = o.get_number("kappa", d.kappa);
           if (!(p.kappa >= 0)) throw ConfigError(o.path_of("kappa"), "expected a number >= 0");
           o.finish();
           return std::make_unique<MctsStrategy>(env, p);
         }});
}

}  // namespace kevo
