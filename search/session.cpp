#include "search/session.h"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/paths.h"
#include "core/process.h"
#include "core/store.h"
#include "core/terminal.h"
#include "eval/roofline.h"
#include "eval/roofs.h"
#include "eval/slurm_backend.h"
#include "knowledge/knowledge_base.h"
#include "search/families.h"
#include "synth/llm/config.h"

namespace kevo {

namespace {
volatile std::sig_atomic_t g_interrupted = 0;
void on_signal(int) { g_interrupted = 1; }
}  // namespace

bool search_interrupted() { return g_interrupted != 0; }

std::string llm_hardware_text(const std::optional<KbDoc>& sheet, const Roof& roof) {
  std::string out;
  if (sheet) {
    std::vector<std::string> figures;
    for (const auto& [name, value] : sheet->figures.items())
      figures.push_back(fmt::format("{} {}", name, value.dump()));
    out += fmt::format("- Datasheet ({}): {}: {}\n", sheet->id, sheet->title, fmt::join(figures, ", "));
    out += fmt::format("- Features of the part: {}\n",
                       sheet->features.empty() ? std::string("none that kevo's patterns need")
                                               : fmt::format("{}", fmt::join(sheet->features, ", ")));
  } else {
    out += "- Datasheet: none in kevo's knowledge base for this part\n";
  }
  if (roof.bandwidth.empty() && roof.peak.empty()) return out + "- Measured roof: none yet\n";
  out += fmt::format("- Measured by kevo on this machine ({}):\n", roof.host_key);
  // Per kind and thread count: the smallest and the largest working set
  // measured (in cache, and from memory).
  std::map<std::pair<std::string, int>, std::vector<const BandwidthPoint*>> by;
  for (const auto& p : roof.bandwidth) by[{p.kind, p.threads}].push_back(&p);
  for (auto& [key, points] : by) {
    std::sort(points.begin(), points.end(),
              [](const BandwidthPoint* a, const BandwidthPoint* b) { return a->bytes < b->bytes; });
    const BandwidthPoint* lo = points.front();
    const BandwidthPoint* hi = points.back();
    out += fmt::format("  - {} bandwidth on {} thread{}: {:.1f} GB/s at {:.3g} MB", key.first,
                       key.second, key.second > 1 ? "s" : "", lo->gbps, lo->bytes / 1e6);
    if (hi != lo) out += fmt::format(" .. {:.1f} GB/s at {:.3g} MB", hi->gbps, hi->bytes / 1e6);
    out += "\n";
  }
  for (const auto& p : roof.peak)
    out += fmt::format("  - {} peak on {} thread{}: {:.1f} GFLOP/s\n", p.kind, p.threads,
                       p.threads > 1 ? "s" : "", p.gflops);
  return out;
}

EngineHost this_machine() {
  return {hostname(), kevo_home() / "targets" / "abi" / "kevo_kernel.h"};
}

std::string result_text(const Observation& o) {
  if (o.ok())
    return fmt::format("{} ({:.0f}% of roof)", format_seconds(o.seconds), 100 * o.roof_fraction);
  return std::string(status_name(o.status));
}

std::string failures_text(const EngineStats& s) {
  std::string out;
  for (const auto& [status, n] : s.by_status) {
    if (status == "ok") continue;
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", n, status);
  }
  return out.empty() ? "no failures" : out;
}

SearchSession::SearchSession(Store& store, SearchRequest request)
    : store_(store), request_(std::move(request)) {
  const Task& task = request_.task;
  const SearchConfig& cfg = request_.config;
  target_ = make_target(task.target);
  space_ = load_space(family_files(task, cfg.families), task.knob_restrictions,
                      [&](const std::filesystem::path& f) { return target_->language_of(f); },
                      task.config_knobs);

  // The backend: the machine, or a recorded run.
  if (request_.replay) {
    const int64_t replayed = *request_.replay;
    const std::optional<RunRecord> r = store.run(replayed);
    if (!r)
      throw UserError(fmt::format("--replay: no run {} in {}", replayed, store.path().string()));
    if (r->task_hash != task.hash)
      throw UserError(fmt::format("--replay: run {} measured another task", replayed));
    auto replay = std::make_unique<ReplayBackend>(store, replayed);
    // The recording's strategy, parameters and seed: an exact replay, which
    // follows the recording candidate by candidate (with its batch size,
    // unless the config sets one) and grows the same tree. Another strategy
    // or seed: a what-if on the recorded points only.
    const nlohmann::json recorded = r->config().value("search", nlohmann::json::object());
    SearchConfig& cfg = request_.config;
    const bool same = recorded.value("strategy", std::string()) == cfg.strategy &&
                      recorded.value("params", nlohmann::json::object()) == cfg.params &&
                      recorded.value("seed", nlohmann::json()) == nlohmann::json(cfg.seed);
    const int64_t recorded_batch = recorded.value("batch", int64_t{0});
    if (same && (cfg.batch == 0 || static_cast<int64_t>(cfg.batch) == recorded_batch)) {
      if (recorded_batch > 0) cfg.batch = static_cast<size_t>(recorded_batch);
      script_ = std::make_unique<ReplayScript>(load_replay_script(store, replayed));
    } else {
      space_.restrict_to(replay->recorded_keys());
    }
    own_backend_ = std::move(replay);
    request_.run_config["replay"] = replayed;
  } else if (cfg.backend.is_object() && cfg.backend.value("kind", std::string()) == "slurm") {
    // Timed on the nodes, judged against each node type's roof: the store's
    // (one per host key), or one a node calibrates and sends back. This host
    // (a login node, maybe without the device) is not calibrated.
    std::vector<Roof> roofs = roofs_by_host(store, target_->name());
    if (!roofs.empty()) {
      roof_ = roofs.front();
    } else {
      roof_.target = target_->name();
      roof_.host_key = "(none yet: calibrated on the nodes)";
    }
    auto slurm = std::make_unique<SlurmBackend>(request_.task, roof_, std::move(roofs),
                                                parse_slurm_config(cfg.backend, "$.search.backend"));
    if (request_.job_slots) slurm->set_slots(request_.job_slots);
    slurm->set_roof_store([this](const Roof& r) { return store_.add_roof(r); });
    slurm->set_profile_top(static_cast<int>(cfg.profile_top));
    own_backend_ = std::move(slurm);
  } else {
    roof_ = roof_for(store, *target_, [](std::string_view line) { log_debug("{}", line); });
    references_ = std::make_unique<ReferenceCache>(cache_dir() / "ref");
    compiles_ = std::make_unique<CompileCache>(cache_dir());
    evaluator_ = std::make_unique<Evaluator>(request_.task, *target_, roof_, *references_, *compiles_);
    evaluator_->profile_top = static_cast<int>(cfg.profile_top);
    evaluator_->profile_share = cfg.profile_share;
    evaluator_->remeasure_roof = [this](double bytes) {
      return remeasure(store_, *target_, bytes, [](std::string_view line) { log_debug("{}", line); });
    };
    own_backend_ = make_local_backend(*evaluator_);
  }
  start(space_, *own_backend_);
}

SearchSession::SearchSession(Store& store, SearchRequest request, const SearchSpace& space,
                             EvalBackend& backend)
    : store_(store), request_(std::move(request)) {
  start(space, backend);
}

void SearchSession::start(const SearchSpace& space, EvalBackend& backend) {
  const SearchConfig& cfg = request_.config;
  backend_ = &backend;
  engine_ = std::make_unique<Engine>(request_.task, space, store_, backend, cfg, this_machine());
  engine_->reuse_earlier_runs = !request_.replay;
  // What the device is, for the families' `@kevo start` lines: from the
  // target where this process times on it, else as the recorded run kept it
  // (a replay here has no device; its first batch must be the recording's).
  std::map<std::string, int64_t> facts;
  if (request_.replay) {
    const std::optional<RunRecord> r = store_.run(*request_.replay);
    const nlohmann::json c = r ? r->config() : nlohmann::json();
    if (c.is_object() && c.contains("start_facts") && c["start_facts"].is_object())
      for (auto it = c["start_facts"].begin(); it != c["start_facts"].end(); ++it)
        if (it.value().is_number_integer()) facts[it.key()] = it.value().get<int64_t>();
  } else if (target_ && evaluator_) {
    facts = target_->start_facts();
  }
  request_.run_config["start_facts"] = facts;
  engine_->set_start_facts(facts);
  if (script_) engine_->follow(script_.get());
  if (!cfg.llm.is_null()) {
    // The LLM synthesizer; a replay is answered from the recorded calls only.
    llm::LlmConfig lc = llm::parse_llm_config(cfg.llm, "$.search.llm");
    if (request_.replay) lc.cache = "only";
    // A key variable that is not set fails every call the same way: said once,
    // here, not once per batch of the night.
    if (lc.cache != "only") {
      std::vector<llm::ModelConfig> keyed;
      for (const auto& m : lc.models) {
        const char* key = m.api_key_env.empty() ? "set" : std::getenv(m.api_key_env.c_str());
        if (key && *key) {
          keyed.push_back(m);
          continue;
        }
        const std::string why = fmt::format(
            "llm model '{}': environment variable {} is not set (it should hold the API key)",
            m.name, m.api_key_env);
        if (!lc.optional)
          throw UserError(why + "; set it, or mark the LLM optional (\"llm\": {\"optional\": "
                                "true}) to search without it");
        log_warn("{}: this run goes on without that model (the LLM is optional)", why);
      }
      lc.models = std::move(keyed);
    }
    if (lc.models.empty()) {
      log_warn("no LLM model has its key: this run searches with the offline synthesizers only");
    } else {
      knowledge_ = std::make_unique<KnowledgeBase>(KnowledgeBase::open());
      llm_ = std::make_unique<LlmSynthesizer>(std::move(lc), store_, knowledge_.get());
      // An exact replay asks the recorded calls in order; a resumed one
      // has asked some already.
      if (script_) {
        llm_->follow(store_.llm_calls_of_run(*request_.replay));
        if (request_.resume) llm_->follow_from(store_.llm_calls_of_run(*request_.resume).size());
      }
      engine_->set_llm(llm_.get());
      // The hardware the prompts describe: a replay says what the replayed
      // run said (its prompts must come out byte for byte the same).
      std::string hardware;
      std::optional<std::vector<std::string>> features;
      if (request_.replay) {
        const std::optional<RunRecord> r = store_.run(*request_.replay);
        const nlohmann::json c = r ? r->config() : nlohmann::json();
        if (c.is_object() && c.contains("llm_hardware") && c["llm_hardware"].is_string())
          hardware = c["llm_hardware"].get<std::string>();
        // A recording from before features were kept retrieved unfiltered.
        if (c.is_object() && c.contains("llm_features") && c["llm_features"].is_array())
          features = c["llm_features"].get<std::vector<std::string>>();
      } else {
        std::unique_ptr<Target> own = target_ ? nullptr : make_target(request_.task.target);
        Target& target = target_ ? *target_ : *own;
        std::optional<KbDoc> sheet;
        try {
          if (std::optional<std::string> id = target.hardware_sheet()) sheet = knowledge_->hardware(*id);
        } catch (const std::exception& e) {  // a corpus without the sheet: said, not fatal
          log_warn("knowledge base: {}", e.what());
        }
        hardware = llm_hardware_text(sheet, roof_);
        // Patterns that need a feature only for a part whose sheet has it
        // (no sheet: none that needs one).
        features = sheet ? sheet->features : std::vector<std::string>{};
      }
      request_.run_config["llm_hardware"] = hardware;
      if (features) request_.run_config["llm_features"] = *features;
      engine_->set_llm_hardware(hardware, features);
    }
  }
  // The slurm backend names its batches by the run, uniquely among the
  // stores whose runs share its directory.
  auto* slurm = dynamic_cast<SlurmBackend*>(backend_);
  auto run_tag = [&](int64_t run) {
    const std::optional<RunRecord> r = store_.run(run);
    return fmt::format("{}-{}", run,
                       sha256_hex(fmt::format("{}|{}", std::filesystem::absolute(store_.path()).string(),
                                              r ? r->started_at : ""))
                           .substr(0, 10));
  };
  if (request_.resume) {
    if (slurm) slurm->set_run(run_tag(*request_.resume));  // before the pending are submitted
    engine_->resume(*request_.resume);
    progress(fmt::format("resuming run {}: {} evaluations already stored", *request_.resume,
                         engine_->stats().evaluations));
  } else {
    engine_->begin(request_.run_config, request_.replay ? "replay" : "search");
    if (slurm) slurm->set_run(run_tag(engine_->run_id()));
  }
}

SearchSession::~SearchSession() = default;

std::string SearchSession::run(const std::string& label) {
  const SearchConfig& cfg = request_.config;
  Engine& engine = *engine_;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  engine.interrupted = [] { return g_interrupted != 0; };
  StatusLine status;
  const bool tty = stderr_is_tty() && !request_.lines_only;
  const bool quiet = request_.replay.has_value() && !tty;
  auto budget = [&](const Engine& e) {
    std::string b = fmt::format("{}", e.stats().evaluations);
    if (cfg.stop.max_evals) b += fmt::format("/{}", cfg.stop.max_evals);
    return b;
  };
  auto eta = [&](const Engine& e) -> std::string {
    const EngineStats& s = e.stats();
    const double elapsed = s.elapsed_s > 0 ? s.elapsed_s : backend_->clock();
    double left = cfg.stop.max_seconds ? cfg.stop.max_seconds - elapsed : 1e300;
    if (cfg.stop.max_evals && s.evaluations > 0)
      left = std::min(left, elapsed / s.evaluations * (cfg.stop.max_evals - s.evaluations));
    return left < 1e299 ? ", ETA " + format_seconds(std::max(0.0, left)) : "";
  };
  engine.on_stage = [&](std::string_view stage) {
    if (tty) status.set(fmt::format("{}[{} evals] {}", label, budget(engine), stage));
  };
  engine.on_result = [&](const Engine& e, const Observation& o) {
    auto best = e.best();
    std::string best_text = best ? result_text(best->obs) : "none yet";
    if (tty) {
      status.set(fmt::format("{}[{} evals; {}] best {}{}", label, budget(e),
                             failures_text(e.stats()), best_text, eta(e)));
    } else if (!quiet) {
      progress(fmt::format("{}[{}] {} {} {}: {}{} | best {}", label, budget(e),
                           e.space().family(o.point.family).name, knobs_to_string(o.point.knobs),
                           o.synthesizer, result_text(o), o.reused ? " (stored earlier)" : "",
                           best_text));
    }
  };
  std::string reason = engine.run();
  status.clear();
  engine.on_stage = nullptr;
  engine.on_result = nullptr;
  return reason;
}

}  // namespace kevo
