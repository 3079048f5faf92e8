// search::Engine — the loop: the strategy proposes a batch (ask), proposals
// become candidates (deduplicated against this run and earlier runs of the
// same task in the store), the backend evaluates them, every result is
// stored as it finishes, and the strategy is told (tell), until a stop
// condition holds. A killed run resumes from the store with nothing that
// finished measured again.
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/space.h"
#include "core/task.h"
#include "eval/backend.h"
#include "search/observation.h"
#include "search/replay.h"
#include "search/strategy.h"
#include "search/tree.h"
#include "synth/llm_synthesizer.h"
#include "synth/synthesizer.h"

namespace kevo {

class Store;

// Composable: the run stops when any one holds. Zero means "not set".
struct StopConditions {
  int64_t max_evals = 0;         // unique evaluations (answers from the store are free)
  double max_seconds = 0;        // on the backend's clock
  int64_t stagnation = 0;        // evaluations without a 1% improvement of the best
  double target_fraction = 0;    // best reaches this fraction of the roof
  double target_seconds = 0;     // best median at or below this
  double target_speedup = 0;     // best / best seed at or above this
};

struct SearchConfig {
  std::string strategy = "mcts";
  nlohmann::json params = nlohmann::json::object();
  std::vector<std::string> families;  // empty: every family of the operator
  size_t batch = 0;                   // 0: 2 x CPUs
  bool seeds_first = true;            // evaluate each family's default point first
  int64_t confirm = 3;                // re-measure the best k (and the seeds) at the end
  int64_t confirm_rounds = 3;         // ... in this many rounds, the order reversed every other round
  int64_t profile_top = 3;            // profile candidates among the best k so far (targets with a profiler)
  double profile_share = 0.25;        // ...while profiles take at most this share of the measuring time
  nlohmann::json llm;                 // the "llm" section (null: no LLM synthesizer)
  nlohmann::json backend;             // the "backend" section (null: this machine)
  StopConditions stop;
  uint64_t seed = 1;

  nlohmann::json to_json() const;
};

// The task's "search" section, strictly (paths in errors start at `path`).
SearchConfig parse_search_config(const nlohmann::json& search, const std::string& path);

struct EngineStats {
  int64_t evaluations = 0;  // measured by this run (the budget)
  int64_t reused = 0;       // answered from earlier runs' measurements
  int64_t duplicates = 0;   // proposals of points this run already had
  int64_t invalid = 0;      // proposals outside the space (a strategy bug; never evaluated)
  int64_t confirmations = 0;  // re-measurements of the best at the end (in the time budget)
  int64_t confirm_rounds_run = 0;  // confirmation rounds planned (fewer than asked where the budget held fewer)
  int64_t confirm_by_clock = 0;  // candidates re-measured for their time at the run's highest GPU clock
  int64_t llm_sources = 0;    // new kernels the LLM synthesizer wrote
  int64_t llm_unusable = 0;   // its replies that gave no kernel (or one that cannot be searched)
  std::map<std::string, int64_t> by_status;
  double elapsed_s = 0;     // on the backend's clock, including before a resume
  double searcher_s = 0;    // strategy ask/tell and synthesizers
  double store_s = 0;       // writes and look-ups in the store
  double compile_s = 0;     // of this run's evaluations (recorded)
  double run_s = 0;
  double wall_s = 0;        // real time of this process's part of the run
};

struct Best {
  int64_t candidate = 0;
  Point point;
  std::string synthesizer;
  Observation obs;  // seconds and roof fraction as re-measured when confirmed
  double search_seconds = 0;  // as first measured during the search
  bool confirmed = false;
  std::vector<double> rounds;  // the confirmation's median in each round (NaN: suspect); obs.seconds
                               // is the median of the others
};

// What the engine knows of the machine and the installation it runs on,
// given by its caller (SearchSession: this_machine() in search/session.h);
// the engine reads neither the process nor the environment itself.
struct EngineHost {
  // The machine's hostname as the store records runs: what earlier runs of
  // the task measured on it answers the same points again.
  std::string hostname;
  // targets/abi/kevo_kernel.h, shown to the LLM synthesizer.
  std::filesystem::path abi_header;
};

class Engine {
 public:
  Engine(const Task& task, const SearchSpace& space, Store& store, EvalBackend& backend,
         SearchConfig config, EngineHost host);
  ~Engine();

  // Starts a new run in the store; `run_config` is kept with it (to resume).
  int64_t begin(nlohmann::json run_config, std::string_view kind = "search");
  // Continues `run`: its candidates and results are loaded (not re-measured),
  // the strategy is told them, and candidates left unevaluated by a kill are
  // evaluated first.
  void resume(int64_t run);

  // Runs until a stop condition; returns why it stopped.
  std::string run();

  int64_t run_id() const { return run_; }
  const EngineStats& stats() const { return stats_; }
  const CandidateTree& tree() const { return tree_; }
  const std::vector<Observation>& observations() const { return history_; }
  std::optional<Best> best() const;
  // The next best of the candidates the confirmation re-measured, when the
  // best was re-measured beside at least one other: what the best has to
  // beat again for "best" to mean something.
  std::optional<Best> runner_up() const;
  // The best evaluated default point of any non-naive family, and of the
  // family named "naive", when they were measured.
  std::optional<Best> best_seed() const;
  std::optional<Best> naive() const;
  // The default points that best_seed() (naive: naive()) weighs and that
  // failed, as {status: count}; "failed when measured again" counts those
  // correct in the search whose confirmation failed. Empty when none failed.
  nlohmann::json default_failures(bool naive) const;
  const SearchSpace& space() const { return space_; }

  // Whether points measured by earlier runs of the task are answered from
  // the store (true) or evaluated (false: a replay, whose recording is
  // itself in the store, must charge its budget for every point).
  bool reuse_earlier_runs = true;
  // Checked between evaluations: true stops the run ("interrupted").
  std::function<bool()> interrupted;
  // Called after each result is stored.
  std::function<void(const Engine&, const Observation&)> on_result;
  // Told what the backend is doing ("compiling 4 candidates", "running ...").
  ProgressFn on_stage;
  // The LLM synthesizer (owned by the caller), asked for config.llm's
  // per_batch new kernels in each batch beside the strategy's proposals; its
  // kernels become families of their own, and those that fail to compile or
  // are wrong go back to it for repair. Set before begin() or resume().
  void set_llm(LlmSynthesizer* llm);
  // An exact replay (the recording's strategy, seed and batch, the backend a
  // ReplayBackend of the same run): each new candidate must be the
  // recording's candidate of the same rank (source, knobs, synthesizer,
  // parents), and reuses what that one reused. The run stops where the
  // recording ends, or at the first candidate that differs, saying which and
  // why; the time budget does not apply (the recording's clock was not the
  // replay's). `script` is the caller's and outlives the run. Set before
  // begin() or resume().
  void follow(const ReplayScript* script) { script_ = script; }
  // Where a followed replay left its recording ("" while it has not).
  const std::string& divergence() const { return divergence_; }
  // What the target says of its device, for the families' `@kevo start`
  // lines ("SMS" -> 132). Without it, a start that reads one is skipped.
  void set_start_facts(std::map<std::string, int64_t> facts) { start_facts_ = std::move(facts); }
  // What the LLM's prompts say of the hardware (LlmTaskInfo::hardware).
  // `features`: what the part's sheet says it has (LlmTaskInfo::features).
  void set_llm_hardware(std::string text, std::optional<std::vector<std::string>> features) {
    llm_hardware_ = std::move(text);
    llm_features_ = std::move(features);
  }

  // The summary of the run as JSON (kept in runs.summary_json too).
  nlohmann::json summary(const std::string& stop_reason) const;

 private:
  std::optional<std::string> should_stop() const;
  // What the confirmation would re-measure now (the best `confirm`, the best
  // `confirm` at the run's highest GPU clock where it moved, and every
  // family's default point), and how long that would take by their last runs.
  // by_clock: how many were picked for their time at the run's highest GPU clock.
  std::vector<const Observation*> confirmation_picks(int64_t* by_clock = nullptr) const;
  double confirmation_estimate_s() const;  // all rounds; kept per history length (asked per job)
  void confirm();
  std::optional<Best> make_best(const Observation& o) const;
  std::optional<Best> best_default(bool naive) const;
  // A multi-shape task's figures per timed shape: the chosen candidate's,
  // and the fastest of the run at that shape alone.
  nlohmann::json shapes_summary(int64_t chosen) const;
  // Whether `o` is a default point of a family that best_default(naive) weighs.
  bool is_default(const Observation& o, bool naive) const;
  void process(std::vector<Proposal> proposals, std::vector<Observation>& told);
  // The families' `@kevo start` points at the task's shapes (and the
  // device's start_facts_), less `seeds`.
  std::vector<Proposal> start_points(const std::vector<Proposal>& seeds) const;
  void evaluate_pending(std::vector<std::pair<int64_t, Proposal>> pending,
                        std::vector<Observation>& told);
  void record(const Observation& o);
  std::optional<int64_t> earlier_evaluation(const Point& p);
  // A followed replay: whether `prop` is the recording's next candidate; if
  // so `earlier` is what that one reused and `unmeasured` whether the
  // recording left it unmeasured (stopped first); if not, divergence_ says
  // why (or the recording ended).
  bool on_script(const Proposal& prop, std::optional<int64_t>& earlier, bool& unmeasured);
  std::string why_off_script(const RecordedCandidate& rc) const;
  std::optional<std::string> script_stop() const;
  void save_progress();

  // The LLM synthesizer's part (search/engine_llm.cpp).
  struct LlmChain {  // one new kernel and its repairs
    int attempts = 0;
    int failed_in_row = 0;  // repairs that failed since the last correct kernel
    std::vector<std::string> failures;
  };
  struct LlmPending {
    int64_t call = 0;
    int64_t chain = 0;  // 0: a new chain, named by the candidate it makes
  };
  // A batch's LLM requests: asked (and sent) before the strategy's proposals
  // are evaluated, turned into proposals after, so that the network's time
  // hides behind the evaluations; in the order asked, whatever the timing.
  struct LlmRequests {
    std::vector<LlmAsk> asks;
    std::vector<int64_t> chains;  // per ask: the chain a repair continues (0: new)
    std::shared_ptr<LlmSynthesizer::InFlight> flight;  // shared: its type is the synthesizer's own
  };
  std::optional<LlmRequests> llm_start();
  std::vector<Proposal> llm_proposals(LlmRequests& requests, std::map<std::string, LlmPending>& made);
  void llm_after(const std::map<std::string, LlmPending>& made, const std::vector<Observation>& told);
  LlmTaskInfo llm_task_info() const;
  LlmAsk llm_ask(const Observation& o, LlmAsk::Mode mode) const;
  int llm_family(const std::string& source, const std::string& model, const std::string& language,
                 std::string& why_not);
  void llm_load_families();
  void llm_resume(const std::vector<Observation>& told);

  LlmSynthesizer* llm_ = nullptr;
  std::string llm_hardware_;
  std::optional<std::vector<std::string>> llm_features_;
  std::map<int64_t, int64_t> llm_chain_of_;  // LLM-born candidate -> its chain
  std::map<int64_t, LlmChain> llm_chains_;   // by the chain's first candidate
  std::deque<int64_t> llm_repairs_;          // failed LLM-born candidates to repair
  std::mt19937_64 llm_rng_;

  const Task& task_;
  std::map<std::string, int64_t> start_facts_;
  SearchSpace space_;
  Store& store_;
  EvalBackend& backend_;
  SearchConfig config_;
  Synthesizers synthesizers_;
  std::unique_ptr<Strategy> strategy_;
  CandidateTree tree_;
  int64_t run_ = 0;
  EngineHost host_;
  std::unordered_map<std::string, int64_t> known_;  // point key -> candidate of this run
  std::map<int64_t, Observation> by_candidate_;
  std::vector<Observation> history_;  // evaluated (or reused), in order
  // confirmation_estimate_s() as of history_.size() == estimate_for_ (history_ only grows).
  mutable size_t estimate_for_ = static_cast<size_t>(-1);
  mutable double estimate_s_ = 0;
  EngineStats stats_;
  std::vector<KnobValues> defaults_;  // each family's default point
  std::map<int64_t, double> confirmed_;  // candidate -> median of its rounds' medians (inf: failed)
  std::map<int64_t, std::vector<double>> confirm_rounds_;  // candidate -> each round's median
  double clock_offset_ = 0;  // elapsed before a resume
  double best_seconds_ = 0;  // for stagnation
  int64_t since_improvement_ = 0;
  int64_t idle_proposals_ = 0;
  std::vector<std::pair<int64_t, Proposal>> pending_;  // left unevaluated by a kill
  std::map<int64_t, size_t> ordinal_;  // this run's candidates, by the order they were made
  const ReplayScript* script_ = nullptr;
  bool script_ended_ = false;  // a followed replay made every candidate the recording had
  std::string divergence_;
};

}  // namespace kevo
