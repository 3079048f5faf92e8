#include "bench/strategy_bench.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>

#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/paths.h"
#include "core/process.h"
#include "core/store.h"
#include "core/task.h"
#include "eval/backend.h"
#include "search/engine.h"
#include "search/session.h"

namespace kevo {

namespace {

double log_choose(double n, double k) {
  return std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1);
}

// The families of a recorded run, from the sources the store kept (not the
// files of today's checkout, which may have changed since).
SearchSpace recorded_space(Store& store, int64_t run, const Task& task) {
  std::set<std::pair<std::string, std::string>> used;  // (family, source hash), by family
  for (const CandidateRecord& c : store.candidates(run)) used.emplace(c.family, c.source_hash);
  std::vector<Family> families;
  for (const auto& [name, hash] : used) {
    const std::optional<SourceRecord> s = store.source(hash);
    if (!s) continue;
    Family f;
    f.name = name;
    f.source_hash = hash;
    f.text = s->text;
    f.origin = s->origin;
    f.language = s->language;
    f.space = KnobSpace::parse_source(f.text, f.origin.string());
    for (const auto& [name, values] : task.knob_restrictions)
      if (f.space.find(name)) f.space.restrict(name, values);
    families.push_back(std::move(f));
  }
  return SearchSpace(std::move(families));
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t i = static_cast<size_t>(pos);
  const double frac = pos - static_cast<double>(i);
  return i + 1 < v.size() ? v[i] * (1 - frac) + v[i + 1] * frac : v[i];
}

// Median and a 95% bootstrap interval of the median.
void median_ci(const std::vector<double>& v, std::mt19937_64& rng, CurveSummary& out) {
  out.median = percentile(v, 0.5);
  std::vector<double> medians;
  std::uniform_int_distribution<size_t> pick(0, v.size() - 1);
  for (int b = 0; b < 400; ++b) {
    std::vector<double> s(v.size());
    for (auto& x : s) x = v[pick(rng)];
    medians.push_back(percentile(s, 0.5));
  }
  out.lo = percentile(medians, 0.025);
  out.hi = percentile(medians, 0.975);
}

// Scores `curves` (best-so-far after each evaluation, each of the budget's
// length) against random sampling, as Willemsen et al. do.
StrategyScore score_curves(const std::string& name, const std::vector<std::vector<double>>& curves,
                           const SpaceScore& s, std::mt19937_64& boot) {
  StrategyScore sc;
  sc.strategy = name;
  sc.runs = curves.size();
  if (curves.empty()) return sc;
  const double n = static_cast<double>(curves.size());
  sc.mean_curve.assign(s.budget, 0);
  std::vector<double> to5;
  for (const auto& c : curves) {
    for (size_t t = 0; t < s.budget; ++t) sc.mean_curve[t] += c[t] / n;
    if (c.back() <= s.f_opt) sc.found_optimum += 1 / n;
    for (size_t t = 0; t < s.budget; ++t)
      if (c[t] <= 1.05 * s.f_opt) {
        to5.push_back(static_cast<double>(t + 1));
        break;
      }
  }
  sc.to_5pct_reached = static_cast<double>(to5.size()) / n;
  if (!to5.empty()) sc.to_5pct_median = percentile(to5, 0.5);
  // P(t) of a mean curve, and its mean over t.
  auto p_of = [&](const std::vector<double>& mean, std::vector<double>& p) {
    double sum = 0;
    size_t counted = 0;
    p.assign(s.budget, 1.0);
    for (size_t t = 0; t < s.budget; ++t) {
      const double denom = s.random_curve[t] - s.f_opt;
      if (denom <= 1e-12 * s.f_opt) continue;  // random has surely found it by now
      p[t] = (s.random_curve[t] - mean[t]) / denom;
      sum += p[t];
      ++counted;
    }
    return counted ? sum / static_cast<double>(counted) : 1.0;
  };
  std::vector<double> p;
  sc.score = p_of(sc.mean_curve, p);
  // The score's spread: a 95% bootstrap interval over the repeats.
  {
    std::vector<double> scores, q;
    std::uniform_int_distribution<size_t> pick(0, curves.size() - 1);
    for (int b = 0; b < 200; ++b) {
      std::vector<double> mean(s.budget, 0);
      for (size_t r = 0; r < curves.size(); ++r) {
        const auto& c = curves[pick(boot)];
        for (size_t t = 0; t < s.budget; ++t) mean[t] += c[t] / n;
      }
      scores.push_back(p_of(mean, q));
    }
    sc.score_lo = percentile(scores, 0.025);
    sc.score_hi = percentile(scores, 0.975);
  }
  for (double frac : {0.1, 0.25, 0.5, 1.0}) {
    CurveSummary cs;
    cs.t = std::max<size_t>(1, static_cast<size_t>(std::round(frac * s.budget)));
    std::vector<double> at;
    for (const auto& c : curves) at.push_back(c[cs.t - 1]);
    median_ci(at, boot, cs);
    cs.p = p[cs.t - 1];
    sc.checkpoints.push_back(cs);
  }
  return sc;
}

// Kernel Tuner's strategies on the recorded points of `space` (values[i]:
// point i's median, infinite where it failed), through
// bench/peers/kernel_tuner_peer.py: one Kernel Tuner space, with a `family`
// parameter where there are several families and -1 for a knob a family
// lacks; every recorded point a configuration, nothing else.
std::vector<StrategyScore> kernel_tuner_scores(const SearchSpace& space, const std::vector<double>& values,
                                               const std::vector<Status>& statuses, const SpaceScore& s,
                                               const StrategyBenchOptions& o, double worst,
                                               std::mt19937_64& boot,
                                               const std::function<void(std::string_view)>& progress) {
  std::set<std::string> knob_names;
  for (const Family& f : space.families())
    for (const KnobDecl& k : f.space.knobs()) knob_names.insert(k.name);
  const bool several = space.families().size() > 1;
  nlohmann::json params = nlohmann::json::array();
  nlohmann::json domain = nlohmann::json::object();
  if (several) {
    params.push_back("family");
    nlohmann::json ids = nlohmann::json::array();
    for (size_t i = 0; i < space.families().size(); ++i) ids.push_back(i);
    domain["family"] = ids;
  }
  std::map<std::string, std::set<int64_t>> vals;
  nlohmann::json points = nlohmann::json::array();
  for (uint64_t i = 0; i < space.size(); ++i) {
    const Point pt = space.at(i);
    nlohmann::json key = nlohmann::json::array();
    if (several) key.push_back(pt.family);
    for (const std::string& k : knob_names) {
      auto it = pt.knobs.find(k);
      const int64_t v = it == pt.knobs.end() ? -1 : it->second;
      vals[k].insert(v);
      key.push_back(v);
    }
    nlohmann::json p = {{"key", key}};
    if (std::isfinite(values[i]))
      p["time_s"] = values[i];
    else {
      p["time_s"] = nullptr;
      p["error"] = statuses[i] == Status::compile_error ? "CompilationFailedConfig" : "RuntimeFailedConfig";
    }
    points.push_back(std::move(p));
  }
  for (const std::string& k : knob_names) {
    params.push_back(k);
    domain[k] = std::vector<int64_t>(vals[k].begin(), vals[k].end());
  }
  const auto dir = cache_dir() / "bench" / fmt::format("kt-{}-{}", getpid(), s.run);
  std::filesystem::create_directories(dir);
  struct Remove {
    std::filesystem::path p;
    ~Remove() {
      std::error_code e;
      std::filesystem::remove_all(p, e);
    }
  } remove_after{dir};
  const std::string text =
      nlohmann::json{{"name", s.task}, {"params", params}, {"values", domain}, {"points", points}}.dump();
  write_file_atomic(dir / "space.json", text.data(), text.size());
  if (progress)
    progress(fmt::format("{}: Kernel Tuner's {} x {} in simulation mode", s.task, fmt::join(o.kernel_tuner, ", "),
                         o.repeats));
  SpawnOptions opt;
  opt.argv = {kernel_tuner_python(o.kernel_tuner_python),
              (kevo_home() / "bench" / "peers" / "kernel_tuner_peer.py").string(),
              (dir / "space.json").string(),
              "--strategies",
              fmt::format("{}", fmt::join(o.kernel_tuner, ",")),
              "--repeats",
              std::to_string(o.repeats),
              "--budget",
              std::to_string(s.budget),
              "--time-limit",
              fmt::format("{}", o.kernel_tuner_time_limit_s),
              "--out",
              (dir / "curves.json").string()};
  // Python's string hashing fixed: Kernel Tuner iterates sets, and a run must
  // repeat exactly.
  opt.env.push_back("PYTHONHASHSEED=0");
  const double limit = (o.kernel_tuner_time_limit_s + 5) * o.repeats * static_cast<double>(o.kernel_tuner.size()) + 120;
  ProcessResult r = run_process(opt, limit, 1 << 20);
  std::ifstream in(dir / "curves.json");
  const auto got = nlohmann::json::parse(in, nullptr, false);
  if (!r.exit_code || *r.exit_code != 0 || !got.is_object())
    throw UserError(fmt::format("Kernel Tuner's peer failed on {} (exit {}): {}", s.task, r.exit_code.value_or(-1),
                                r.err.size() > 800 ? "..." + r.err.substr(r.err.size() - 800) : r.err));
  std::vector<StrategyScore> out;
  for (const std::string& name : o.kernel_tuner) {
    const nlohmann::json& e = got["strategies"].value(name, nlohmann::json::object());
    std::vector<std::vector<double>> curves;
    size_t stopped = 0;
    for (const auto& c : e.value("curves", nlohmann::json::array())) {
      std::vector<double> curve;
      double best = worst;
      for (const auto& v : c) {
        if (v.is_number()) best = std::min(best, v.get<double>());
        curve.push_back(best);
      }
      if (curve.size() < s.budget) ++stopped;
      curve.resize(s.budget, best);
      curves.push_back(std::move(curve));
    }
    StrategyScore sc = score_curves("kt:" + name, curves, s, boot);
    sc.stopped_early = stopped;
    std::vector<std::string> notes;
    if (const auto errors = e.value("errors", std::vector<std::string>{}); !errors.empty())
      notes.push_back("cannot run here: " + errors.front());
    if (const int t = e.value("timed_out", 0); t > 0)
      notes.push_back(fmt::format("{} run(s) cut at {:g} s of wall time", t, o.kernel_tuner_time_limit_s));
    sc.note = fmt::format("{}", fmt::join(notes, "; "));
    out.push_back(std::move(sc));
  }
  return out;
}

}  // namespace

const std::vector<std::string>& kernel_tuner_strategies() {
  static const std::vector<std::string> names = {
      "basinhopping", "bayes_opt",  "diff_evo", "dual_annealing", "firefly_algorithm", "genetic_algorithm",
      "greedy_ils",   "greedy_mls", "mls",      "pso",            "random_sample",     "simulated_annealing"};
  return names;
}

std::string kernel_tuner_python(const std::string& given) {
  if (!given.empty()) return given;
  if (const char* p = std::getenv("KEVO_KT_PYTHON"); p && *p) return p;
  // Where scripts/setup.sh peers makes it (not under KEVO_CACHE_DIR: tests move that).
  std::filesystem::path venv;
  if (const char* v = std::getenv("KEVO_KT_VENV"); v && *v)
    venv = v;
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    venv = std::filesystem::path(x) / "kevo" / "kt-venv";
  else
    venv = std::filesystem::path(std::getenv("HOME") ? std::getenv("HOME") : "/root") / ".cache" / "kevo" / "kt-venv";
  venv /= "bin/python";
  if (std::filesystem::exists(venv)) return venv.string();
  throw UserError(fmt::format("Kernel Tuner's peer needs its virtual environment ({} not found): run "
                              "scripts/setup.sh peers, or set KEVO_KT_PYTHON",
                              venv.string()));
}

std::vector<double> expected_random_best(std::vector<double> values, size_t budget) {
  KEVO_ASSERT(!values.empty());
  double worst = -std::numeric_limits<double>::infinity();
  for (double v : values)
    if (std::isfinite(v)) worst = std::max(worst, v);
  for (double& v : values)
    if (!std::isfinite(v)) v = worst;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  std::vector<double> out;
  for (size_t t = 1; t <= budget && t <= n; ++t) {
    // P(the minimum is the i-th smallest) = C(n - i, t - 1) / C(n, t), i from 1.
    double e = 0;
    const double lc = log_choose(static_cast<double>(n), static_cast<double>(t));
    for (size_t i = 1; i + t - 1 <= n; ++i)
      e += values[i - 1] *
           std::exp(log_choose(static_cast<double>(n - i), static_cast<double>(t - 1)) - lc);
    out.push_back(e);
  }
  while (out.size() < budget) out.push_back(values.front());
  return out;
}

nlohmann::json save_space(Store& store, int64_t run) {
  const std::optional<RunRecord> stored = store.run(run);
  if (!stored) throw UserError(fmt::format("no run {} in {}", run, store.path().string()));
  const nlohmann::json cfg = stored->config();
  if (!cfg.is_object() || !cfg.contains("config"))
    throw UserError(fmt::format("run {} is not a search run", run));
  nlohmann::json families = nlohmann::json::array(), points = nlohmann::json::array();
  std::set<std::string> sources;
  for (const CandidateRecord& c : store.candidates(run)) {
    if (sources.insert(c.source_hash).second) {
      const std::optional<SourceRecord> src = store.source(c.source_hash);
      if (!src) throw UserError(fmt::format("run {}: the source of candidate {} is missing", run, c.id));
      families.push_back({{"name", c.family},
                          {"hash", c.source_hash},
                          {"origin", src->origin},
                          {"language", src->language},
                          {"text", src->text}});
    }
    if (!c.result_evaluation) continue;
    const std::optional<EvalResult> r = store.evaluation(*c.result_evaluation);
    if (!r) continue;
    nlohmann::json p = {{"family", c.family},
                        {"hash", c.source_hash},
                        {"knobs", knobs_from_json(c.knobs_json)},
                        {"status", std::string(status_name(r->status))}};
    if (r->timing && std::isfinite(r->timing->median_s)) {
      p["median_s"] = r->timing->median_s;
      p["p20_s"] = r->timing->p20_s;
      p["p80_s"] = r->timing->p80_s;
    }
    if (r->diagnosis) {
      p["roof_fraction"] = r->diagnosis->roof_fraction;
      p["bound"] = r->diagnosis->bound;
    }
    points.push_back(std::move(p));
  }
  if (points.empty()) throw UserError(fmt::format("run {} has no measured candidates", run));
  return {{"format", kSpaceFormat},
          {"format_version", 1},
          {"recorded",
           {{"run", run},
            {"task", stored->task_name},
            {"target", stored->target},
            {"hostname", stored->hostname},
            {"kevo_version", stored->kevo_version},
            {"started_at", stored->started_at},
            {"stop_reason", stored->summary().is_object()
                                ? stored->summary().value("stop_reason", nlohmann::json(nullptr))
                                : nlohmann::json(nullptr)}}},
          {"config", cfg},
          {"families", families},
          {"points", points}};
}

int64_t load_space(Store& store, const nlohmann::json& doc, const std::string& what) {
  auto bad = [&](const std::string& key, const std::string& why) {
    return UserError(fmt::format("{}: {}: {}", what, key, why));
  };
  if (!doc.is_object() || doc.value("format", std::string()) != kSpaceFormat)
    throw bad("format", "not a kevo space file (kevo bench space RUN -o FILE writes one)");
  if (doc.value("format_version", 0) != 1)
    throw bad("format_version", "expected 1");
  for (const char* k : {"config", "families", "points"})
    if (!doc.contains(k)) throw bad(k, "missing");
  const nlohmann::json& cfg = doc["config"];
  if (!cfg.is_object() || !cfg.contains("config")) throw bad("config", "expected the run's config");
  Task task = parse_task(cfg["config"], what);
  const int64_t run = store.begin_run("search", task, cfg);
  std::map<std::string, std::string> hashes;  // as recorded -> as stored (the same text: the same)
  if (!doc["families"].is_array()) throw bad("families", "expected a list");
  for (size_t i = 0; i < doc["families"].size(); ++i) {
    const nlohmann::json& f = doc["families"][i];
    const std::string at = fmt::format("families[{}]", i);
    if (!f.is_object() || !f.contains("text") || !f["text"].is_string() || !f.contains("hash"))
      throw bad(at, "expected {name, hash, origin, language, text}");
    hashes[f["hash"].get<std::string>()] =
        store.put_source(f["text"].get<std::string>(), f.value("origin", std::string()),
                         f.value("language", std::string()));
  }
  if (!doc["points"].is_array() || doc["points"].empty()) throw bad("points", "expected a list of points");
  for (size_t i = 0; i < doc["points"].size(); ++i) {
    const nlohmann::json& p = doc["points"][i];
    const std::string at = fmt::format("points[{}]", i);
    if (!p.is_object() || !p.contains("hash") || !hashes.count(p["hash"].get<std::string>()))
      throw bad(at, "a point of no family of the file");
    const std::optional<Status> status = parse_status(p.value("status", std::string()));
    if (!status) throw bad(at + ".status", "unknown status");
    EvalResult r;
    r.status = *status;
    if (p.contains("median_s")) {
      const double m = p["median_s"].get<double>();
      if (!(m > 0)) throw bad(at + ".median_s", "expected a number > 0");
      r.timing = TimingStats::from_samples({p.value("p20_s", m), m, p.value("p80_s", m)}, 1, 0);
      r.timing->median_s = m;
      r.timing->p20_s = p.value("p20_s", m);
      r.timing->p80_s = p.value("p80_s", m);
    } else if (r.status == Status::ok) {
      throw bad(at, "an ok point without a median_s");
    }
    if (p.contains("bound")) {
      r.diagnosis = Diagnosis{};
      r.diagnosis->bound = p["bound"].get<std::string>();
      r.diagnosis->roof_fraction = p.value("roof_fraction", 0.0);
    }
    r.detail = "from a recorded space";
    const int64_t cand = store.add_candidate(run, hashes[p["hash"].get<std::string>()],
                                             p.value("knobs", KnobValues{}), p.value("family", std::string()),
                                             "recorded");
    store.add_evaluation(cand, r);
  }
  store.set_run_summary(run, {{"stop_reason", doc.contains("recorded")
                                                  ? doc["recorded"].value("stop_reason", nlohmann::json(""))
                                                  : nlohmann::json("")},
                              {"evaluations", doc["points"].size()}});
  store.finish_run(run, "done");
  return run;
}

std::vector<SpaceScore> bench_strategies(Store& store, const StrategyBenchOptions& o,
                                         const std::function<void(std::string_view)>& progress) {
  std::vector<int64_t> runs = o.runs.empty() ? store.exhaustive_grid_runs() : o.runs;
  if (runs.empty())
    throw UserError(fmt::format("no exhaustive grid run in {} to replay (record some with "
                                "bench/record_spaces.sh)",
                                store.path().string()));
  std::vector<SpaceScore> out;
  for (int64_t run : runs) {
    const std::optional<RunRecord> stored = store.run(run);
    if (!stored) throw UserError(fmt::format("no run {} in {}", run, store.path().string()));
    auto cfg = stored->config();
    if (!cfg.is_object() || !cfg.contains("config"))
      throw UserError(fmt::format("run {} is not a search run", run));
    Task task = parse_task(cfg["config"], cfg.value("origin", std::string("task")));
    ReplayBackend replay(store, run);
    replay.detach_roofs = true;  // the scratch stores hold no roofs
    SearchSpace space = recorded_space(store, run, task);
    space.restrict_to(replay.recorded_keys());

    SpaceScore s;
    s.run = run;
    s.task = task.name;
    s.points = static_cast<size_t>(space.size());
    if (s.points < 2) throw UserError(fmt::format("run {} recorded fewer than 2 points", run));
    std::vector<double> values;
    std::vector<Status> statuses;
    for (uint64_t i = 0; i < space.size(); ++i) {
      const EvalResult& r = replay.recorded().at(space.key(space.at(i)));
      values.push_back(r.status == Status::ok && r.timing ? r.timing->median_s
                                                          : std::numeric_limits<double>::infinity());
      statuses.push_back(r.status);
    }
    s.f_opt = *std::min_element(values.begin(), values.end());
    if (!std::isfinite(s.f_opt)) throw UserError(fmt::format("run {} has no correct point", run));
    s.budget = o.budget < 1 ? std::max<size_t>(2, static_cast<size_t>(std::ceil(o.budget * s.points)))
                            : std::min<size_t>(s.points, static_cast<size_t>(o.budget));
    s.random_curve = expected_random_best(values, s.budget);
    double worst = 0;
    for (double v : values)
      if (std::isfinite(v)) worst = std::max(worst, v);

    std::vector<std::vector<uint64_t>> by_family(space.size_families());  // recorded points per family
    for (uint64_t i = 0; i < space.size(); ++i) by_family[static_cast<size_t>(space.at(i).family)].push_back(i);
    std::mt19937_64 boot(12345);
    for (const auto& name : o.strategies) {
      if (progress) progress(fmt::format("{}: {} x {} in replay", task.name, name, o.repeats));
      std::vector<std::vector<double>> curves;
      for (int rep = 0; rep < o.repeats; ++rep) {
        Store scratch(":memory:");
        replay.reset_clock();
        SearchConfig c;
        c.strategy = name;
        if (auto it = o.params.find(name); it != o.params.end()) c.params = it->second;
        c.seed = static_cast<uint64_t>(rep + 1);
        c.stop.max_evals = static_cast<int64_t>(s.budget);
        c.seeds_first = false;
        c.batch = o.batch;
        // The recording and its space are built once above, not per repeat,
        // and the engine runs quietly: the benchmark has its own status line.
        SearchSpace started = space;
        if (o.random_start) {
          std::mt19937_64 pick(static_cast<uint64_t>(rep + 1) * 7919);
          for (int f = 0; f < static_cast<int>(space.size_families()); ++f)
            if (!by_family[f].empty())
              started.set_seed(space.at(by_family[f][std::uniform_int_distribution<size_t>(
                  0, by_family[f].size() - 1)(pick)]));
        }
        SearchSession session(scratch, {task, c, {}, std::nullopt, run}, started, replay);
        Engine& e = session.engine();
        e.run();
        std::vector<double> curve;
        double best = worst;
        for (const auto& ob : e.observations()) {
          if (ob.ok()) best = std::min(best, ob.seconds);
          curve.push_back(best);
        }
        curve.resize(s.budget, best);
        curves.push_back(std::move(curve));
      }
      StrategyScore sc = score_curves(name, curves, s, boot);
      s.strategies.push_back(std::move(sc));
    }
    if (!o.kernel_tuner.empty())
      for (StrategyScore& sc : kernel_tuner_scores(space, values, statuses, s, o, worst, boot, progress))
        s.strategies.push_back(std::move(sc));
    out.push_back(std::move(s));
  }
  return out;
}

nlohmann::json to_json(const std::vector<SpaceScore>& scores) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : scores) {
    nlohmann::json j = {{"run", s.run},       {"task", s.task},
                        {"points", s.points}, {"budget", s.budget},
                        {"f_opt_s", s.f_opt}, {"random_expected_best_s", s.random_curve}};
    if (!s.source.empty()) j["space_file"] = s.source;
    for (const auto& st : s.strategies) {
      nlohmann::json cps = nlohmann::json::array();
      for (const auto& c : st.checkpoints)
        cps.push_back({{"t", c.t}, {"median_best_s", c.median}, {"ci95", {c.lo, c.hi}}, {"P", c.p}});
      j["strategies"][st.strategy] = {{"score", st.score},
                                      {"score_ci95", {st.score_lo, st.score_hi}},
                                      {"found_optimum", st.found_optimum},
                                      {"runs", st.runs},
                                      {"stopped_early", st.stopped_early},
                                      {"evaluations_to_5pct", {{"median", st.to_5pct_median},
                                                               {"reached", st.to_5pct_reached}}},
                                      {"note", st.note},
                                      {"checkpoints", cps},
                                      {"mean_best_s", st.mean_curve}};
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace kevo
