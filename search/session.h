// One search of one task wired up, as `kevo run`, `kevo batch` and the
// strategy benchmark (bench/strategy_bench.cpp) drive it: the target, the
// search space, the roof, the evaluation backend (this machine or a replay)
// and the engine, begun or resumed, with progress on stderr.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/roof.h"
#include "core/space.h"
#include "core/task.h"
#include "eval/backend.h"
#include "eval/compile_cache.h"
#include "eval/evaluator.h"
#include "eval/reference_cache.h"
#include "eval/slurm_backend.h"
#include "knowledge/knowledge_base.h"
#include "search/engine.h"
#include "search/replay.h"
#include "targets/target.h"

namespace kevo {

class Store;

struct SearchRequest {
  Task task;
  SearchConfig config;
  nlohmann::json run_config;      // kept with a new run (what --resume reads)
  std::optional<int64_t> resume;  // continue this run instead of beginning one
  std::optional<int64_t> replay;  // answer from this run's measurements
  // A cap on cluster jobs in flight that this run shares with others (kevo
  // batch's runs side by side); null: the backend config's own.
  std::shared_ptr<JobSlots> job_slots = nullptr;
  // A progress line per result even on a terminal, not one status line
  // rewritten in place: runs side by side would overwrite each other's.
  bool lines_only = false;
};

class SearchSession {
 public:
  // Builds the target, the space and the backend (calibrating the roof once
  // when the store has none for this machine), then begins or resumes the
  // run. Throws UserError for a replay of an unknown run or another task.
  SearchSession(Store& store, SearchRequest request);
  // A search over a space and a backend the caller built and keeps, in
  // `store`: the strategy benchmark replays one recording many times, each
  // time into a scratch store. `request.replay` says whether the backend is a
  // replay (of that run); nothing is calibrated or checked here.
  SearchSession(Store& store, SearchRequest request, const SearchSpace& space,
                EvalBackend& backend);
  ~SearchSession();
  SearchSession(const SearchSession&) = delete;
  SearchSession& operator=(const SearchSession&) = delete;

  // Searches until a stop condition or Ctrl-C (SIGINT, SIGTERM), keeping one
  // status line on a terminal or logging a line per result elsewhere, both
  // prefixed with `label` ("[2/7 gemm-1024] "). Returns why it stopped.
  std::string run(const std::string& label = "");

  Engine& engine() { return *engine_; }
  const Task& task() const { return request_.task; }
  const SearchConfig& config() const { return request_.config; }

 private:
  // The engine over `space` and `backend`, with the LLM synthesizer when the
  // config has one; begun or resumed.
  void start(const SearchSpace& space, EvalBackend& backend);

  Store& store_;
  SearchRequest request_;
  std::unique_ptr<Target> target_;
  SearchSpace space_;
  Roof roof_;
  std::unique_ptr<ReferenceCache> references_;
  std::unique_ptr<CompileCache> compiles_;
  std::unique_ptr<Evaluator> evaluator_;
  std::unique_ptr<EvalBackend> own_backend_;
  std::unique_ptr<ReplayScript> script_;  // an exact replay's recording
  EvalBackend* backend_ = nullptr;  // own_backend_ or the caller's
  std::unique_ptr<KnowledgeBase> knowledge_;  // with an LLM synthesizer
  std::unique_ptr<LlmSynthesizer> llm_;
  std::unique_ptr<Engine> engine_;
};

// This process's machine and installation, as the engine is told them: the
// hostname and KEVO_HOME's ABI header.
EngineHost this_machine();

// Whether SIGINT or SIGTERM arrived during a SearchSession::run.
bool search_interrupted();

// What an LLM prompt says of the hardware: the knowledge base's sheet of the
// part (or that there is none) and the roof kevo measured, per kind and
// thread count, in cache and from memory.
std::string llm_hardware_text(const std::optional<KbDoc>& sheet, const Roof& roof);

// "1.23 ms (45% of roof)" for an ok result, its status otherwise.
std::string result_text(const Observation& o);
// "2 compile-error, 1 timeout" (or "no failures").
std::string failures_text(const EngineStats& s);

}  // namespace kevo
