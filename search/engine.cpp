#include "search/engine.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/json_reader.h"
#include "core/log.h"
#include "core/process.h"
#include "core/store.h"
#include "eval/roofline.h"
#include "search/timed.h"
#include "eval/slurm_backend.h"
#include "synth/llm/config.h"

namespace kevo {

namespace {

// What the strategy is told about proposal `p`, stored as `candidate`.
Observation observed(const EvalResult& r, int64_t candidate, const Proposal& p) {
  Observation o = observation_of(r);
  o.candidate = candidate;
  o.point = p.point;
  o.parents = p.parents;
  o.synthesizer = p.synthesizer;
  o.tag = p.tag;
  return o;
}

// Two candidates' confirmation rounds side by side (the same moment of the
// machine for both): how many rounds both have a figure for, and in how
// many of those `a` was the faster.
std::pair<int64_t, int64_t> rounds_won(const std::vector<double>& a, const std::vector<double>& b) {
  int64_t paired = 0, won = 0;
  for (size_t r = 0; r < std::min(a.size(), b.size()); ++r)
    if (std::isfinite(a[r]) && std::isfinite(b[r])) {
      ++paired;
      won += a[r] < b[r];
    }
  return {paired, won};
}

}  // namespace

// ---- config --------------------------------------------------------------

nlohmann::json SearchConfig::to_json() const {
  nlohmann::json stop_j = nlohmann::json::object();
  if (stop.max_evals) stop_j["max_evals"] = stop.max_evals;
  if (stop.max_seconds) stop_j["max_minutes"] = stop.max_seconds / 60;
  if (stop.stagnation) stop_j["stagnation"] = stop.stagnation;
  nlohmann::json target = nlohmann::json::object();
  if (stop.target_fraction) target["roof_fraction"] = stop.target_fraction;
  if (stop.target_seconds) target["time_us"] = stop.target_seconds * 1e6;
  if (stop.target_speedup) target["speedup"] = stop.target_speedup;
  if (!target.empty()) stop_j["target"] = target;
  return {{"strategy", strategy}, {"params", params},       {"families", families},
          {"batch", batch},       {"seeds_first", seeds_first}, {"stop", stop_j},
          {"seed", seed},         {"confirm", confirm}, {"confirm_rounds", confirm_rounds},
          {"profile_top", profile_top}, {"profile_share", profile_share},
          {"llm", llm}, {"backend", backend}};
}

SearchConfig parse_search_config(const nlohmann::json& search, const std::string& path) {
  SearchConfig c;
  JsonObject o(search, path);
  c.strategy = o.get_string("strategy", c.strategy);
  if (const nlohmann::json* p = o.get_raw("params")) {
    if (!p->is_object()) throw ConfigError(o.path_of("params"), "expected an object");
    c.params = *p;
  }
  c.families = o.get_string_list("families", std::vector<std::string>{});
  int64_t batch = o.get_int("batch", 0);
  if (batch < 0) throw ConfigError(o.path_of("batch"), "expected an integer >= 1 (or 0: 2 x CPUs)");
  c.batch = static_cast<size_t>(batch);
  c.seeds_first = o.get_bool("seeds_first", true);
  c.confirm = o.get_int("confirm", 3);
  if (c.confirm < 0) throw ConfigError(o.path_of("confirm"), "expected an integer >= 0");
  c.confirm_rounds = o.get_int("confirm_rounds", 3);
  if (c.confirm_rounds < 1)
    throw ConfigError(o.path_of("confirm_rounds"), "expected an integer >= 1");
  c.profile_top = o.get_int("profile_top", 3);
  if (c.profile_top < 0) throw ConfigError(o.path_of("profile_top"), "expected an integer >= 0");
  c.profile_share = o.get_number("profile_share", 0.25);
  if (!(c.profile_share > 0 && c.profile_share <= 1))
    throw ConfigError(o.path_of("profile_share"), "expected a number in (0, 1]");
  int64_t seed = o.get_int("seed", 1);
  if (seed < 0) throw ConfigError(o.path_of("seed"), "expected an integer >= 0");
  c.seed = static_cast<uint64_t>(seed);
  if (const nlohmann::json* l = o.get_raw("llm"); l && !l->is_null()) {
    llm::parse_llm_config(*l, o.path_of("llm"));  // checked now, not mid-run
    c.llm = *l;
  }
  if (const nlohmann::json* b = o.get_raw("backend"); b && !b->is_null()) {
    const std::string kind = b->is_object() ? b->value("kind", std::string()) : std::string();
    if (kind == "slurm")
      parse_slurm_config(*b, o.path_of("backend"));  // checked now, not mid-run
    else if (kind != "local")
      throw ConfigError(o.path_of("backend"), "expected {\"kind\": \"local\"} or {\"kind\": "
                                              "\"slurm\", \"dir\": ...}");
    c.backend = *b;
  }
  JsonObject stop = o.get_object("stop");
  auto non_negative = [&](JsonObject& j, const char* key, double v) {
    if (v < 0) throw ConfigError(j.path_of(key), "expected a number >= 0");
    return v;
  };
  c.stop.max_evals = static_cast<int64_t>(non_negative(stop, "max_evals", static_cast<double>(stop.get_int("max_evals", 0))));
  c.stop.max_seconds = 60 * non_negative(stop, "max_minutes", stop.get_number("max_minutes", 0));
  c.stop.stagnation = static_cast<int64_t>(non_negative(stop, "stagnation", static_cast<double>(stop.get_int("stagnation", 0))));
  JsonObject target = stop.get_object("target");
  c.stop.target_fraction = non_negative(target, "roof_fraction", target.get_number("roof_fraction", 0));
  c.stop.target_seconds = 1e-6 * non_negative(target, "time_us", target.get_number("time_us", 0));
  c.stop.target_speedup = non_negative(target, "speedup", target.get_number("speedup", 0));
  target.finish();
  stop.finish();
  o.finish();
  // Validates the strategy name and its parameters now, not mid-run.
  const StrategyInfo* info = StrategyRegistry::builtin().find(c.strategy);
  if (!info) {
    std::vector<std::string> names;
    for (const auto& i : StrategyRegistry::builtin().all()) names.push_back(i.name);
    throw ConfigError(o.path_of("strategy"), fmt::format("unknown strategy '{}' (expected one of: {})",
                                                         c.strategy, fmt::join(names, ", ")));
  }
  info->make(c.params, o.path_of("params"), StrategyEnv{});  // checks the parameters
  return c;
}

// ---- engine --------------------------------------------------------------

Engine::Engine(const Task& task, const SearchSpace& space, Store& store, EvalBackend& backend,
               SearchConfig config, EngineHost host)
    : task_(task),
      space_(space),
      store_(store),
      backend_(backend),
      config_(std::move(config)),
      synthesizers_(Synthesizers::offline(KnobRules::load_default())),
      host_(std::move(host)) {
  if (config_.batch == 0) config_.batch = 2 * static_cast<size_t>(std::max(1, online_cpus()));
  for (const auto& f : space_.families()) defaults_.push_back(f.space.defaults());
  StrategyEnv env;
  env.space = &space_;
  env.synthesizers = &synthesizers_;
  env.seed = config_.seed;
  env.known = [this](const Point& p) { return known_.count(space_.key(p)) > 0; };
  strategy_ = StrategyRegistry::builtin().make(config_.strategy, config_.params,
                                              "$.search.params", env);
}

Engine::~Engine() = default;

int64_t Engine::begin(nlohmann::json run_config, std::string_view kind) {
  Timed t(stats_.store_s);
  run_config["search"] = config_.to_json();
  run_ = store_.begin_run(kind, task_, run_config);
  for (const auto& f : space_.families()) store_.put_source(f.text, f.origin.string(), f.language);
  if (llm_) llm_->set_run(run_);
  return run_;
}

void Engine::resume(int64_t run) {
  Timed timer(stats_.store_s);
  const std::optional<RunRecord> r = store_.run(run);
  if (!r) throw UserError(fmt::format("no run {} in {}", run, store_.path().string()));
  if (r->kind != "search" && r->kind != "replay")
    throw UserError(fmt::format("run {} is a '{}' run, not a search", run, r->kind));
  if (r->task_hash != task_.hash)
    throw UserError(fmt::format("run {} searched another task ('{}', hash {}); this task's hash "
                                "is {}",
                                run, r->task_name, r->task_hash, task_.hash));
  run_ = run;
  if (const nlohmann::json j = r->summary(); j.is_object()) clock_offset_ = j.value("elapsed_s", 0.0);
  for (const auto& f : space_.families()) store_.put_source(f.text, f.origin.string(), f.language);
  if (llm_) {
    llm_->set_run(run_);
    llm_load_families();
  }

  std::map<std::string, int> family_by_hash;
  for (size_t i = 0; i < space_.families().size(); ++i)
    family_by_hash[space_.families()[i].source_hash] = static_cast<int>(i);
  tree_ = CandidateTree::load(store_, run);
  // A candidate's result is the earlier run's measurement it reused, else its
  // first evaluation; its later ones (all of them, for a reused one) are
  // confirmation rounds.
  std::vector<Observation> told;
  for (const CandidateRecord& c : store_.candidates(run)) {
    const int64_t id = c.id;
    ordinal_[id] = ordinal_.size();
    auto fam = family_by_hash.find(c.source_hash);
    if (fam == family_by_hash.end()) {
      log_warn("candidate {} of run {}: family '{}' has changed since; kept, not searched from",
               id, run, c.family);
      continue;
    }
    const Proposal prop{{fam->second, knobs_from_json(c.knobs_json)}, tree_.parents(id),
                        c.synthesizer, 0};
    known_[space_.key(prop.point)] = id;
    if (!c.result_evaluation) {
      pending_.push_back({id, prop});
      continue;
    }
    std::optional<EvalResult> res = store_.evaluation(*c.result_evaluation);
    if (!res) continue;
    Observation o = observed(*res, id, prop);
    const bool reused = c.reuses_evaluation.has_value();
    o.reused = reused;
    if (!reused) {
      ++stats_.evaluations;
      ++stats_.by_status[std::string(status_name(res->status))];
      stats_.compile_s += res->compile_s;
      stats_.run_s += res->run_s;
    } else {
      ++stats_.reused;
    }
    record(o);
    told.push_back(std::move(o));
  }
  store_.reopen_run(run);
  if (llm_) llm_resume(told);
  Timed s(stats_.searcher_s);
  strategy_->tell(told);
}

std::optional<int64_t> Engine::earlier_evaluation(const Point& p) {
  // The latest candidate of this point, in an earlier run of the task on this
  // machine by this version of kevo (another may have measured differently:
  // 0.1.0's cuda runner timed all but the first candidate ~6% slow), that has
  // a result...
  const Family& f = space_.family(p.family);
  const std::optional<int64_t> found = store_.latest_candidate_of_point(
      f.source_hash, knobs_to_json(p.knobs), task_.hash, host_.hostname, KEVO_VERSION, run_);
  if (!found) return std::nullopt;
  const int64_t candidate = *found;
  // ...and of it the measurement that stood for it: its confirmation (the
  // median round) where that run confirmed it, else its result. Not simply
  // its latest evaluation, which after a confirmation is the last round.
  if (auto confirmed = store_.confirming_evaluation(candidate)) return confirmed;
  return store_.result_evaluation(candidate);
}

void Engine::record(const Observation& o) {
  by_candidate_[o.candidate] = o;
  history_.push_back(o);
  tree_.set_result(o.candidate, o.status, o.seconds);
  if (o.ok() && (best_seconds_ == 0 || o.seconds < 0.99 * best_seconds_)) {
    best_seconds_ = o.seconds;
    since_improvement_ = 0;
  } else if (!o.reused) {
    ++since_improvement_;
  }
}

std::optional<std::string> Engine::should_stop() const {
  if (interrupted && interrupted()) return std::string("interrupted");
  const StopConditions& s = config_.stop;
  if (s.max_evals && stats_.evaluations >= s.max_evals)
    return fmt::format("reached the budget of {} evaluations", s.max_evals);
  const double elapsed = clock_offset_ + backend_.clock();
  // The confirmation at the end is inside the budget: the search stops early
  // enough to leave it the time its re-measurements took the first time.
  if (s.max_seconds && !script_ && elapsed + confirmation_estimate_s() >= s.max_seconds)
    return fmt::format("reached the time budget of {}", format_seconds(s.max_seconds));
  if (s.stagnation && since_improvement_ >= s.stagnation)
    return fmt::format("no 1% improvement in {} evaluations", s.stagnation);
  auto b = best();
  if (b) {
    if (s.target_fraction && b->obs.roof_fraction >= s.target_fraction)
      return fmt::format("target met: {:.0f}% of the roof", 100 * b->obs.roof_fraction);
    if (s.target_seconds && b->obs.seconds <= s.target_seconds)
      return fmt::format("target met: {} <= {}", format_seconds(b->obs.seconds),
                         format_seconds(s.target_seconds));
    if (s.target_speedup) {
      auto seed = best_seed();
      if (seed && seed->obs.seconds / b->obs.seconds >= s.target_speedup)
        return fmt::format("target met: {:.2f}x the seed", seed->obs.seconds / b->obs.seconds);
    }
  }
  return std::nullopt;
}

std::vector<Proposal> Engine::start_points(const std::vector<Proposal>& seeds) const {
  // Each family's `@kevo start` points at each timed shape: where a family's
  // author knows a good region for the shape (tiles that cover M, a split
  // that fills the SMs) the search begins there, not only at the default.
  std::set<Point> seen;
  for (const Proposal& p : seeds) seen.insert(p.point);
  std::vector<Proposal> out;
  std::set<std::string> said;  // one log line per reason, not one per shape
  auto dims = dimension_values(task_);
  for (auto& d : dims) d.insert(start_facts_.begin(), start_facts_.end());
  for (int f : space_.seed_order()) {
    const Family& fam = space_.family(f);
    for (const KnobStart& s : fam.space.starts()) {
      for (const auto& d : dims) {
        std::string why;
        auto knobs = fam.space.start_point(s, d, fam.origin.string(), &why);
        if (!knobs) {
          std::string line = fmt::format("family {}: the start of line {} is skipped: {}", fam.name,
                                         s.line, why);
          if (said.insert(line).second) log_info("{}", line);
          continue;
        }
        Point p{f, std::move(*knobs)};
        if (!space_.valid(p) || !seen.insert(p).second) continue;
        out.push_back({std::move(p), {}, "start", 0});
      }
    }
  }
  return out;
}

void Engine::process(std::vector<Proposal> proposals, std::vector<Observation>& told) {
  std::vector<std::pair<int64_t, Proposal>> jobs;
  std::vector<std::pair<int64_t, Proposal>> duplicates;
  for (auto& prop : proposals) {
    if (script_ && (script_ended_ || !divergence_.empty())) break;  // off the recording
    if (!space_.valid(prop.point)) {
      ++stats_.invalid;
      log_warn("strategy {} proposed a point outside the space: {} {} (skipped)",
               config_.strategy, space_.family(prop.point.family).name,
               knobs_to_string(prop.point.knobs));
      continue;
    }
    const std::string key = space_.key(prop.point);
    if (auto it = known_.find(key); it != known_.end()) {
      ++stats_.duplicates;
      duplicates.push_back({it->second, std::move(prop)});
      continue;
    }
    const Family& fam = space_.family(prop.point.family);
    int64_t cand = 0;
    std::optional<int64_t> earlier;
    bool unmeasured = false;  // a followed replay: the recording never measured it either
    if (script_) {
      if (!on_script(prop, earlier, unmeasured)) break;
    } else if (reuse_earlier_runs) {
      Timed t(stats_.store_s);
      earlier = earlier_evaluation(prop.point);
    }
    {
      Timed t(stats_.store_s);
      cand = store_.add_candidate(run_, fam.source_hash, prop.point.knobs, fam.name,
                                  prop.synthesizer, prop.parents, earlier);
    }
    ordinal_[cand] = ordinal_.size();
    TreeNode node;
    node.candidate = cand;
    node.family = fam.name;
    node.knobs = knobs_to_string(prop.point.knobs);
    node.synthesizer = prop.synthesizer;
    tree_.add(node, prop.parents);
    known_[key] = cand;
    if (unmeasured) continue;
    if (!earlier) {
      jobs.push_back({cand, std::move(prop)});
      continue;
    }
    std::optional<EvalResult> r;
    {
      Timed t(stats_.store_s);
      r = store_.evaluation(*earlier);
    }
    Observation o = observed(*r, cand, prop);
    o.reused = true;
    ++stats_.reused;
    record(o);
    if (on_result) on_result(*this, o);
    told.push_back(std::move(o));
  }
  evaluate_pending(std::move(jobs), told);
  // A proposal of a point this run already has is answered with its result.
  for (auto& [cand, prop] : duplicates) {
    auto it = by_candidate_.find(cand);
    if (it == by_candidate_.end()) continue;  // still unevaluated (stopped mid-batch)
    Observation o = it->second;
    o.duplicate_of = cand;
    o.parents = prop.parents;
    o.synthesizer = prop.synthesizer;
    o.tag = prop.tag;
    o.reused = true;
    told.push_back(std::move(o));
  }
}

void Engine::evaluate_pending(std::vector<std::pair<int64_t, Proposal>> pending,
                              std::vector<Observation>& told) {
  if (pending.empty()) return;
  std::vector<EvalJob> jobs;
  for (const auto& [cand, prop] : pending)
    jobs.push_back({&space_.family(prop.point.family), prop.point.knobs});
  evaluate_batch(
      backend_, jobs,
      [&](size_t i, EvalResult r) {
        const auto& [cand, prop] = pending[i];
        {
          Timed t(stats_.store_s);
          store_.add_evaluation(cand, r);
        }
        Observation o = observed(r, cand, prop);
        ++stats_.evaluations;
        ++stats_.by_status[std::string(status_name(r.status))];
        stats_.compile_s += r.compile_s;
        stats_.run_s += r.run_s;
        record(o);
        if (on_result) on_result(*this, o);
        told.push_back(std::move(o));
      },
      [&] { return !should_stop(); }, on_stage);
}

bool Engine::on_script(const Proposal& prop, std::optional<int64_t>& earlier, bool& unmeasured) {
  const size_t k = ordinal_.size();
  const Family& fam = space_.family(prop.point.family);
  if (k >= script_->candidates.size()) {
    script_ended_ = true;
    return false;
  }
  const RecordedCandidate& rc = script_->candidates[k];
  std::vector<size_t> parents;
  for (int64_t p : prop.parents)
    if (auto it = ordinal_.find(p); it != ordinal_.end()) parents.push_back(it->second);
  std::sort(parents.begin(), parents.end());
  const std::string knobs = knobs_to_json(prop.point.knobs);
  if (rc.source_hash == fam.source_hash && rc.knobs_json == knobs &&
      rc.synthesizer == prop.synthesizer && rc.parents == parents) {
    earlier = rc.reuses_evaluation;
    unmeasured = !rc.measured && !rc.reuses_evaluation;
    return true;
  }
  divergence_ = fmt::format("candidate {}: the recording made {}; the replay made {}; {}", k + 1,
                            describe_candidate(rc.family, rc.knobs_json, rc.synthesizer, rc.parents),
                            describe_candidate(fam.name, knobs, prop.synthesizer, parents),
                            why_off_script(rc));
  log_warn("the replay left the recording of run {} at {}", script_->run, divergence_);
  return false;
}

// Why a followed replay did not make the recording's candidate `rc`: the LLM
// could not be answered as it was then, another kevo, a family the space no
// longer has, or else the strategy's own choice.
std::string Engine::why_off_script(const RecordedCandidate& rc) const {
  const bool family_here = std::any_of(space_.families().begin(), space_.families().end(),
                                       [&](const Family& f) { return f.source_hash == rc.source_hash; });
  if (llm_ && !llm_->divergence().empty()) return llm_->divergence();
  if (!family_here && rc.synthesizer.rfind("llm", 0) != 0)
    return fmt::format("the recorded candidate's family '{}' is not in this search's space with the "
                       "same source (changed since, or another family list)",
                       rc.family);
  if (script_->kevo_version != KEVO_VERSION)
    return fmt::format("the recording was made by kevo {}, this is kevo {}: its strategy or "
                       "synthesizers may choose differently",
                       script_->kevo_version, KEVO_VERSION);
  return "the strategy chose differently from the same results (is the config the recording's?)";
}

std::optional<std::string> Engine::script_stop() const {
  if (!script_) return std::nullopt;
  if (!divergence_.empty())
    return fmt::format("the replay left the recording of run {} at {}", script_->run, divergence_);
  const size_t made = ordinal_.size();
  const bool all = made >= script_->candidates.size();
  if (all || script_ended_) {
    std::string said = script_->stop_reason.empty() ? "" : fmt::format("; it stopped: {}", script_->stop_reason);
    return all ? fmt::format("replayed run {} to its end, the same {} candidates{}", script_->run,
                             made, said)
               : fmt::format("replayed run {} to its last measured candidate ({} of {}){}",
                             script_->run, made, script_->candidates.size(), said);
  }
  return std::nullopt;
}

void Engine::save_progress() {
  Timed t(stats_.store_s);
  store_.set_run_summary(run_, summary(""));
}

std::string Engine::run() {
  KEVO_ASSERT(run_ != 0);
  const double wall0 = monotonic_seconds();
  const double wall_before = stats_.wall_s;
  std::string reason;
  std::vector<Observation> told;
  auto tell = [&] {
    Timed t(stats_.searcher_s);
    // In the order the candidates were made, not the order their results
    // came in, so that a replay is told the same and grows the same tree.
    std::stable_sort(told.begin(), told.end(),
                     [](const Observation& a, const Observation& b) { return a.candidate < b.candidate; });
    strategy_->tell(told);
    told.clear();
  };
  // What a kill left unevaluated goes first.
  evaluate_pending(std::exchange(pending_, {}), told);
  tell();
  if (config_.seeds_first && history_.empty()) {
    std::vector<Proposal> seeds;
    for (size_t f = 0; f < space_.size_families(); ++f) {
      Point p = space_.seed(static_cast<int>(f));
      if (space_.valid(p)) seeds.push_back({std::move(p), {}, "seed", 0});
    }
    std::vector<Proposal> starts = start_points(seeds);
    seeds.insert(seeds.end(), std::make_move_iterator(starts.begin()),
                 std::make_move_iterator(starts.end()));
    process(std::move(seeds), told);
    tell();
  }
  for (;;) {
    stats_.wall_s = wall_before + monotonic_seconds() - wall0;
    stats_.elapsed_s = clock_offset_ + backend_.clock();
    if (auto why = should_stop()) {
      reason = *why;
      break;
    }
    if (auto why = script_stop()) {
      reason = *why;
      break;
    }
    size_t n = config_.batch;
    if (config_.stop.max_evals)
      n = std::min<size_t>(n, static_cast<size_t>(config_.stop.max_evals - stats_.evaluations));
    std::vector<Proposal> proposals;
    {
      Timed t(stats_.searcher_s);
      proposals = strategy_->ask(n);
    }
    // The LLM's requests go out first and are answered while the strategy's
    // proposals are evaluated; its kernels follow them, in the order asked.
    std::optional<LlmRequests> requests;
    if (llm_) requests = llm_start();
    if (proposals.empty() && !requests) {
      reason = "the strategy has nothing left to propose (space exhausted)";
      break;
    }
    const int64_t before = stats_.evaluations + stats_.reused;
    size_t asked = proposals.size();
    const bool strategy_done = proposals.empty();
    process(std::move(proposals), told);
    if (requests) {
      std::map<std::string, LlmPending> made;
      std::vector<Proposal> more = llm_proposals(*requests, made);
      asked += more.size();
      if (asked == 0) {
        reason = "the strategy has nothing left to propose (space exhausted)";
        break;
      }
      process(std::move(more), told);
      llm_after(made, told);
    }
    tell();
    // The strategy has nothing left and the LLM gave nothing new to measure:
    // asking it again would only repeat itself.
    if (strategy_done && stats_.evaluations + stats_.reused == before) {
      reason = "the strategy has nothing left to propose and the LLM gave nothing new";
      break;
    }
    if (stats_.evaluations + stats_.reused == before) {
      idle_proposals_ += static_cast<int64_t>(asked);
      if (idle_proposals_ >= 5000) {
        reason = "the strategy keeps proposing points already measured";
        break;
      }
    } else {
      idle_proposals_ = 0;
    }
    save_progress();
  }
  // A followed replay that stopped before the recording's end, for a reason
  // of its own (the space, the LLM), left it where its next candidate was.
  if (script_ && divergence_.empty() && !script_ended_ && reason != "interrupted" &&
      ordinal_.size() < script_->candidates.size() &&
      !should_stop()) {
    const RecordedCandidate& rc = script_->candidates[ordinal_.size()];
    divergence_ = fmt::format("candidate {}: the recording made {}; the replay made none ({}); {}",
                              ordinal_.size() + 1,
                              describe_candidate(rc.family, rc.knobs_json, rc.synthesizer, rc.parents),
                              reason, why_off_script(rc));
    reason = *script_stop();
  }
  if (reason != "interrupted") confirm();
  stats_.wall_s = wall_before + monotonic_seconds() - wall0;
  stats_.elapsed_s = clock_offset_ + backend_.clock();
  {
    Timed t(stats_.store_s);
    store_.set_run_summary(run_, summary(reason));
    store_.finish_run(run_, reason == "interrupted" ? "interrupted" : "done");
  }
  return reason;
}

// The fastest candidates are re-measured at the end, with every family's
// default point (the seeds, the naive kernel): the minimum over many noisy
// measurements is biased low (the winner's curse), so the best is chosen, and
// reported, by measurements that did not select it. They are taken in
// `confirm_rounds` rounds over all of them, the order reversed every other
// round, and each candidate's figure is the median of its rounds: a machine
// that drifts while they are timed (clocks, temperature, a neighbour) moves
// every candidate alike instead of favouring whichever went first.
std::vector<const Observation*> Engine::confirmation_picks(int64_t* by_clock) const {
  std::vector<const Observation*> pick;
  if (config_.confirm <= 0 || backend_.name() == "replay") return pick;
  std::vector<const Observation*> ok;
  for (const auto& o : history_)
    if (o.ok()) ok.push_back(&o);
  std::sort(ok.begin(), ok.end(),
            [](const Observation* a, const Observation* b) { return a->seconds < b->seconds; });
  auto add = [&](const Observation* o) {
    if (o && std::none_of(pick.begin(), pick.end(), [&](auto* p) { return p->candidate == o->candidate; }))
      pick.push_back(o);
  };
  for (size_t i = 0; i < ok.size() && pick.size() < static_cast<size_t>(config_.confirm); ++i) add(ok[i]);
  if (pick.empty()) return pick;
  // A compute-bound kernel's time follows the SM clock, and a GPU under its
  // power cap moves the clock between one candidate's timing and the next's
  // (an H100 at 4096^3: 1665-1980 MHz in one search). The fastest `confirm`
  // at the run's highest clock join the picks too: a candidate that lost
  // only its clock is then timed beside the leaders in alternating rounds,
  // which decide. The scaled times choose whom to re-measure; no figure
  // kevo reports comes from them.
  double top_mhz = 0;
  for (const Observation* o : ok) top_mhz = std::max(top_mhz, o->sm_mhz);
  if (top_mhz > 0) {
    auto at_top_clock = [&](const Observation* o) {
      return o->bound == "compute" && o->sm_mhz > 0 ? o->seconds * o->sm_mhz / top_mhz : o->seconds;
    };
    std::vector<const Observation*> scaled = ok;
    std::stable_sort(scaled.begin(), scaled.end(), [&](const Observation* a, const Observation* b) {
      return at_top_clock(a) < at_top_clock(b);
    });
    const size_t before = pick.size();
    for (size_t i = 0; i < scaled.size() && i < static_cast<size_t>(config_.confirm); ++i) add(scaled[i]);
    if (by_clock) *by_clock = static_cast<int64_t>(pick.size() - before);
  }
  // Every family's default point too, so that best, seeds and naive are all
  // compared by measurements of the same kind.
  for (const Observation* o : ok)
    if (o->point.knobs == defaults_[static_cast<size_t>(o->point.family)]) add(o);
  return pick;
}

namespace {
// One confirmation round of `picks`, by how long each one's evaluation ran.
double one_round_s(const std::vector<const Observation*>& picks) {
  double s = 0;
  for (const Observation* o : picks) s += o->measure_s;
  return s;
}
}  // namespace

double Engine::confirmation_estimate_s() const {
  // should_stop() asks before every job; the picks change only with the history.
  if (estimate_for_ != history_.size()) {
    estimate_s_ = one_round_s(confirmation_picks()) * static_cast<double>(config_.confirm_rounds);
    estimate_for_ = history_.size();
  }
  return estimate_s_;
}

void Engine::confirm() {
  const std::vector<const Observation*> pick = confirmation_picks(&stats_.confirm_by_clock);
  if (pick.empty()) return;
  std::vector<std::vector<double>> rounds(pick.size());
  std::vector<bool> failed(pick.size(), false);
  // Compared with one another: on one machine (a cluster pins them to a node).
  struct OneMachine {
    EvalBackend& b;
    explicit OneMachine(EvalBackend& backend) : b(backend) { b.compare_on_one_machine(true); }
    ~OneMachine() { b.compare_on_one_machine(false); }
  } one_machine(backend_);
  const auto keep_going = [&] { return !(interrupted && interrupted()); };
  // Inside a time budget: as many rounds as the time left holds by the picks'
  // last runs, at least one (best, seeds and naive still measured alike).
  int64_t n_rounds = config_.confirm_rounds;
  if (config_.stop.max_seconds && !script_) {
    const double one_round = one_round_s(pick);
    const double left = config_.stop.max_seconds - (clock_offset_ + backend_.clock());
    // Rounded to the nearest: the search stopped once the rounds no longer
    // fit, often by a fraction of one, which may pass the budget by half a round.
    if (one_round > 0 && static_cast<double>(n_rounds) * one_round > left)
      n_rounds = std::clamp<int64_t>(std::lround(std::max(0.0, left) / one_round), 1, n_rounds);
  }
  stats_.confirm_rounds_run = n_rounds;
  for (int64_t round = 0; round < n_rounds && keep_going(); ++round) {
    std::vector<size_t> order(pick.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = round % 2 ? order.size() - 1 - i : i;
    std::vector<EvalJob> jobs;
    for (size_t i : order) jobs.push_back({&space_.family(pick[i]->point.family), pick[i]->point.knobs});
    if (on_stage)
      on_stage(fmt::format("re-measuring the best {} to confirm them{} (round {} of {}{})", jobs.size(),
                           stats_.confirm_by_clock > 0
                               ? fmt::format(", {} of them for their time at the run's highest GPU clock",
                                             stats_.confirm_by_clock)
                               : "",
                           round + 1, n_rounds,
                           n_rounds < config_.confirm_rounds
                               ? fmt::format("; {} asked, the time budget holds {}", config_.confirm_rounds, n_rounds)
                               : ""));
    evaluate_batch(
        backend_, jobs,
        [&](size_t j, EvalResult r) {
          const size_t i = order[j];
          {
            Timed t(stats_.store_s);
            store_.add_evaluation(pick[i]->candidate, r);
          }
          ++stats_.confirmations;
          if (r.status == Status::ok && r.timing)
            rounds[i].push_back(r.timing->median_s);
          else if (r.status == Status::suspect)  // a time below the floor: no figure, not a fault
            rounds[i].push_back(std::numeric_limits<double>::quiet_NaN());
          else
            failed[i] = true;
        },
        keep_going, on_stage);
  }
  for (size_t i = 0; i < pick.size(); ++i) {
    const int64_t cand = pick[i]->candidate;
    if (failed[i]) {
      confirmed_[cand] = std::numeric_limits<double>::infinity();  // failed when measured again
      continue;
    }
    std::vector<double> timed;
    for (double t : rounds[i])
      if (std::isfinite(t)) timed.push_back(t);
    if (!timed.empty()) {
      confirmed_[cand] = TimingStats::from_samples(timed, 1, 0).median_s;
      confirm_rounds_[cand] = rounds[i];  // one entry per round, NaN where it was suspect
    } else if (!rounds[i].empty()) {
      confirmed_[cand] = std::numeric_limits<double>::infinity();  // no credible time again
    }
  }
}

std::optional<Best> Engine::make_best(const Observation& o) const {
  Best b{o.candidate, o.point, o.synthesizer, o, o.seconds, false, {}};
  auto it = confirmed_.find(o.candidate);
  if (it != confirmed_.end()) {
    if (!std::isfinite(it->second)) return std::nullopt;  // failed when measured again
    b.confirmed = true;
    b.obs.roof_fraction = o.roof_fraction * o.seconds / it->second;
    b.obs.seconds = it->second;
    auto r = confirm_rounds_.find(o.candidate);
    if (r != confirm_rounds_.end()) b.rounds = r->second;
  }
  return b;
}

std::optional<Best> Engine::best() const {
  std::optional<Best> best;
  for (const auto& o : history_) {
    if (!o.ok()) continue;
    // Once confirmed, only re-measured candidates compete.
    if (!confirmed_.empty() && !confirmed_.count(o.candidate)) continue;
    auto b = make_best(o);
    if (b && (!best || b->obs.seconds < best->obs.seconds)) best = b;
  }
  return best;
}

std::optional<Best> Engine::runner_up() const {
  const std::optional<Best> b = best();
  if (!b || !b->confirmed) return std::nullopt;
  std::optional<Best> second;
  for (const auto& o : history_) {
    if (!o.ok() || o.candidate == b->candidate || !confirmed_.count(o.candidate)) continue;
    auto c = make_best(o);
    if (c && (!second || c->obs.seconds < second->obs.seconds)) second = c;
  }
  return second;
}

std::optional<Best> Engine::best_seed() const { return best_default(false); }
std::optional<Best> Engine::naive() const { return best_default(true); }

bool Engine::is_default(const Observation& o, bool naive) const {
  if ((space_.family(o.point.family).name == "naive") != naive) return false;
  // A kernel the LLM wrote is a result of the search, not a seed.
  if (space_.family(o.point.family).origin.string().rfind("llm:", 0) == 0) return false;
  return o.point.knobs == defaults_[static_cast<size_t>(o.point.family)];
}

std::optional<Best> Engine::best_default(bool naive) const {
  std::optional<Best> best;
  for (const auto& o : history_) {
    if (!o.ok() || !is_default(o, naive)) continue;
    if (!confirmed_.empty() && !confirmed_.count(o.candidate)) continue;
    auto b = make_best(o);
    if (b && (!best || b->obs.seconds < best->obs.seconds)) best = b;
  }
  return best;
}

nlohmann::json Engine::default_failures(bool naive) const {
  nlohmann::json counts = nlohmann::json::object();
  auto count = [&](const std::string& why) { counts[why] = counts.value(why, 0) + 1; };
  for (const auto& o : history_) {
    if (!is_default(o, naive)) continue;
    if (!o.ok()) {
      count(std::string(status_name(o.status)));
      continue;
    }
    auto it = confirmed_.find(o.candidate);
    if (it != confirmed_.end() && !std::isfinite(it->second)) count("failed when measured again");
  }
  return counts;
}

nlohmann::json Engine::shapes_summary(int64_t chosen) const {
  const std::map<int64_t, std::vector<ShapeTime>> times = store_.shape_times_of_run(run_);
  auto at = [&](int64_t candidate, size_t k) -> const ShapeTime* {
    auto it = times.find(candidate);
    if (it == times.end()) return nullptr;
    for (const ShapeTime& t : it->second)
      if (t.index == k) return &t;
    return nullptr;
  };
  nlohmann::json out = nlohmann::json::array();
  for (size_t k = 0; k < task_.timed.size(); ++k) {
    nlohmann::json row = {{"shape", shape_str(task_.timed[k].shapes[0])},
                          {"weight", task_.weights[k]}};
    const ShapeTime* mine = chosen ? at(chosen, k) : nullptr;
    if (mine)
      row["chosen"] = {{"candidate", chosen}, {"median_s", mine->median_s},
                       {"p20_s", mine->p20_s}, {"p80_s", mine->p80_s},
                       {"roof_pct", mine->roof_pct}};
    // The fastest candidate of the run at this shape alone (by its search
    // measurement, like the chosen one's figures here).
    const Observation* fastest = nullptr;
    const ShapeTime* fastest_t = nullptr;
    for (const auto& o : history_) {
      if (!o.ok() || o.duplicate_of) continue;
      const ShapeTime* t = at(o.candidate, k);
      if (t && (!fastest_t || t->median_s < fastest_t->median_s)) fastest = &o, fastest_t = t;
    }
    if (fastest) {
      row["best"] = {{"candidate", fastest->candidate},
                     {"family", space_.family(fastest->point.family).name},
                     {"knobs", fastest->point.knobs},
                     {"median_s", fastest_t->median_s},
                     {"p20_s", fastest_t->p20_s},
                     {"p80_s", fastest_t->p80_s}};
      if (mine) {
        row["chosen_over_best"] = mine->median_s / fastest_t->median_s;
        // Apart only where their p20-p80 ranges do not overlap: else a
        // second measurement could order them the other way.
        row["verdict"] = fastest->candidate == chosen       ? "the chosen kernel"
                         : fastest_t->p80_s < mine->p20_s ? "faster"
                                                          : "inconclusive";
      }
    }
    out.push_back(std::move(row));
  }
  return out;
}

nlohmann::json Engine::summary(const std::string& stop_reason) const {
  auto describe = [&](const std::optional<Best>& b) -> nlohmann::json {
    if (!b) return nullptr;
    return {{"candidate", b->candidate},
            {"family", space_.family(b->point.family).name},
            {"knobs", b->point.knobs},
            {"synthesizer", b->synthesizer},
            {"median_s", b->obs.seconds},
            {"search_median_s", b->search_seconds},
            {"confirmed", b->confirmed},
            {"confirm_rounds_s", b->rounds},
            {"roof_fraction", b->obs.roof_fraction},
            {"bound", b->obs.bound}};
  };
  nlohmann::json j;
  j["run"] = run_;
  j["task"] = task_.name;
  j["strategy"] = config_.strategy;
  j["backend"] = std::string(backend_.name());
  j["stop_reason"] = stop_reason;
  j["evaluations"] = stats_.evaluations;
  j["reused"] = stats_.reused;
  j["duplicates"] = stats_.duplicates;
  j["invalid_proposals"] = stats_.invalid;
  j["confirmations"] = stats_.confirmations;
  j["confirm_rounds_run"] = stats_.confirm_rounds_run;
  j["confirm_by_clock"] = stats_.confirm_by_clock;
  if (llm_)
    j["llm"] = {{"sources", stats_.llm_sources},      {"unusable_replies", stats_.llm_unusable},
                {"calls", llm_->calls()},            {"cached", llm_->cached_calls()},
                {"failed_calls", llm_->failed_calls()}, {"tokens", llm_->tokens()},
                {"cost_usd", llm_->cost_usd()}, {"failures", llm_->failures()},
                {"last_failure", llm_->last_failure()}};
  if (script_)
    j["replay"] = {{"of", script_->run},
                   {"exact", true},
                   {"candidates", ordinal_.size()},
                   {"recorded_candidates", script_->candidates.size()},
                   {"left_at", divergence_.empty() ? nlohmann::json() : nlohmann::json(divergence_)}};
  j["by_status"] = stats_.by_status;
  j["elapsed_s"] = stats_.elapsed_s;
  j["wall_s"] = stats_.wall_s;
  j["searcher_s"] = stats_.searcher_s;
  j["store_s"] = stats_.store_s;
  j["compile_s"] = stats_.compile_s;
  j["run_s"] = stats_.run_s;
  j["overhead_share"] =
      stats_.wall_s > 0 ? (stats_.searcher_s + stats_.store_s) / stats_.wall_s : 0.0;
  // The family default points are re-measured at the end whatever their luck
  // during the search, so how their figure moved between the two is drift
  // (the machine's, or the state the run leaves it in) plus noise, not the
  // winner's curse. Beside it, the state of the machine (clocks,
  // temperatures, power, load) where the two measurements stored one.
  nlohmann::json drift = nlohmann::json::array();
  for (const auto& o : history_) {
    if (!o.ok() || o.point.knobs != defaults_[static_cast<size_t>(o.point.family)]) continue;
    auto it = confirmed_.find(o.candidate);
    if (it == confirmed_.end() || !std::isfinite(it->second)) continue;
    nlohmann::json d = {{"candidate", o.candidate},
                        {"family", space_.family(o.point.family).name},
                        {"search_median_s", o.seconds},
                        {"confirmed_median_s", it->second},
                        {"change", it->second / o.seconds - 1}};
    if (std::optional<int64_t> e = store_.result_evaluation(o.candidate))
      if (auto state = store_.machine_state(*e); !state.empty()) d["machine_search"] = state;
    if (std::optional<int64_t> e = store_.confirming_evaluation(o.candidate))
      if (auto state = store_.machine_state(*e); !state.empty()) d["machine_confirmed"] = state;
    drift.push_back(std::move(d));
  }
  if (!drift.empty()) j["drift"] = drift;
  auto b = best();
  auto s = best_seed();
  auto n = naive();
  j["best"] = describe(b);
  j["seed"] = describe(s);
  j["naive"] = describe(n);
  // Without a figure, why: measured and failed, or never measured.
  if (!s)
    if (auto f = default_failures(false); !f.empty()) j["seed_failures"] = f;
  if (!n)
    if (auto f = default_failures(true); !f.empty()) j["naive_failures"] = f;
  if (b && s) j["speedup_over_seed"] = s->obs.seconds / b->obs.seconds;
  // Round by round (the same moment of the machine for both): in how many
  // rounds of the confirmation the best was faster than the best seed.
  if (b && s && b->candidate != s->candidate && !b->rounds.empty() &&
      b->rounds.size() == s->rounds.size()) {
    const auto [paired, faster] = rounds_won(b->rounds, s->rounds);
    if (paired) j["best_faster_than_seed"] = {{"rounds", paired}, {"faster", faster}};
  }
  // The best against the next best re-measured, round by round: "best" is a
  // verdict only where the two stayed apart in every round (each of the
  // best's rounds faster than each of the runner-up's, at least two rounds
  // each); else the noise between rounds is as large as the gap, and the
  // two are reported as inconclusive rather than ordered by one median.
  if (auto r = runner_up(); b && r) {
    nlohmann::json v = describe(r);
    const auto [paired, faster] = rounds_won(b->rounds, r->rounds);
    auto finite = [](const std::vector<double>& x) {
      std::vector<double> f;
      for (double t : x)
        if (std::isfinite(t)) f.push_back(t);
      return f;
    };
    const std::vector<double> bf = finite(b->rounds), rf = finite(r->rounds);
    v["best_over_runner_up"] = r->obs.seconds / b->obs.seconds;
    v["rounds"] = paired;
    v["best_faster"] = faster;
    bool apart = false;
    if (!bf.empty() && !rf.empty()) {
      const auto [b_lo, b_hi] = std::minmax_element(bf.begin(), bf.end());
      const auto [r_lo, r_hi] = std::minmax_element(rf.begin(), rf.end());
      apart = bf.size() >= 2 && rf.size() >= 2 && *b_hi < *r_lo;
      v["round_ranges_s"] = {{"best", {*b_lo, *b_hi}}, {"runner_up", {*r_lo, *r_hi}}};
    }
    v["verdict"] = apart ? "apart" : "inconclusive";
    j["runner_up"] = v;
  }
  if (b && n) j["speedup_over_naive"] = n->obs.seconds / b->obs.seconds;
  if (task_.multi_shape()) j["shapes"] = shapes_summary(b ? b->candidate : 0);
  if (b) {
    nlohmann::json lineage = nlohmann::json::array();
    for (int64_t c : tree_.lineage(b->candidate)) {
      const TreeNode* node = tree_.find(c);
      lineage.push_back({{"candidate", c},
                         {"family", node->family},
                         {"knobs", node->knobs},
                         {"synthesizer", node->synthesizer},
                         {"median_s", node->seconds}});
    }
    j["best_lineage"] = lineage;
  }
  return j;
}

}  // namespace kevo
