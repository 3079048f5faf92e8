// kevo bench strategies: each strategy run many times (different seeds) in
// replay on recorded exhaustive spaces, scored by the methodology of
// Willemsen et al. (2024): P(t) = (f_random(t) - f_strategy(t)) /
// (f_random(t) - f_opt) for minimized times, with f_random the analytic
// expectation of the best of t draws without replacement, f_strategy the
// mean best-so-far over the repeats and t counted in evaluations. P = 0 is
// as good as random sampling, 1 finds the optimum at once.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kevo {

class Store;

// Expected best (minimum) of t draws without replacement from `values`
// (infinite = failed; counted as the worst finite value), for t = 1..budget.
std::vector<double> expected_random_best(std::vector<double> values, size_t budget);

struct StrategyBenchOptions {
  std::vector<int64_t> runs;  // empty: every exhaustive grid run in the store
  std::vector<std::string> strategies = {"random", "evolution", "mcts", "surrogate"};
  std::map<std::string, nlohmann::json> params;  // by strategy; default: its defaults
  int repeats = 50;
  double budget = 0.25;  // < 1: a fraction of the space; else a number of evaluations
  size_t batch = 4;
  // kevo's strategies start from each family's default point (as they do in
  // a search: the seeds are evaluated first). Kernel Tuner's have no default
  // point; with random_start, each repeat of kevo's strategies gets a random
  // recorded point of each family as its seed instead (seeded by the repeat),
  // so that a default that happens to be the optimum is not a head start.
  bool random_start = false;
  // Kernel Tuner's strategies to score beside kevo's ("genetic_algorithm",
  // ...), run by bench/peers/kernel_tuner_peer.py in Kernel Tuner's
  // simulation mode on the same recorded points and budget.
  std::vector<std::string> kernel_tuner;
  std::string kernel_tuner_python;  // "": KEVO_KT_PYTHON, else the venv scripts/setup.sh peers makes
  double kernel_tuner_time_limit_s = 20;  // wall time per Kernel Tuner run
};

// Kernel Tuner's strategies, as its own documentation lists them (1.5).
const std::vector<std::string>& kernel_tuner_strategies();
// The interpreter of Kernel Tuner's virtual environment: `given`, else
// KEVO_KT_PYTHON, else the one scripts/setup.sh peers makes
// (${KEVO_KT_VENV:-$XDG_CACHE_HOME/kevo/kt-venv}); UserError naming the setup
// step where there is none.
std::string kernel_tuner_python(const std::string& given);

struct CurveSummary {
  size_t t = 0;
  double median = 0, lo = 0, hi = 0;  // best-so-far median, 95% bootstrap CI
  double p = 0;                       // P(t)
};

struct StrategyScore {
  std::string strategy;
  double score = 0;  // mean P(t) over t = 1..budget
  double score_lo = 0, score_hi = 0;  // its 95% bootstrap interval over the repeats
  double found_optimum = 0;  // fraction of repeats that found f_opt
  // Evaluations until the best is within 5% of f_opt: the median over the
  // repeats that got there, and the fraction that did within the budget.
  double to_5pct_median = 0;
  double to_5pct_reached = 0;
  size_t runs = 0;           // repeats scored
  size_t stopped_early = 0;  // runs that ended before the budget (peers: by their own rules)
  std::string note;          // a peer that could not run, or ran with limits
  std::vector<CurveSummary> checkpoints;
  std::vector<double> mean_curve;  // f_strategy(t)
};

struct SpaceScore {
  int64_t run = 0;
  std::string source;  // the space file it came from ("": the store's run)
  std::string task;
  size_t points = 0;
  size_t budget = 0;
  double f_opt = 0;
  std::vector<double> random_curve;  // f_random(t)
  std::vector<StrategyScore> strategies;
};

// A recorded space as a file anyone can replay without the hardware: the
// run's task and search config, its families' sources as the store kept
// them, and every point's status and median (p20, p80, roof fraction):
//   {"format": "kevo-space", "format_version": 1, "recorded": {"run",
//    "task", "target", "hostname", "kevo_version", "started_at"},
//    "config": {...}, "families": [{"name", "hash", "origin", "language",
//    "text"}], "points": [{"family", "knobs", "status", "median_s", "p20_s",
//    "p80_s", "roof_fraction", "bound"}]}
// UserError for an unknown run or one without candidates.
inline constexpr const char* kSpaceFormat = "kevo-space";
nlohmann::json save_space(Store& store, int64_t run);
// Writes a space file's run into `store` (a scratch store: in memory) and
// returns its id; UserError naming `what` and the key where the document is
// not a space file this kevo reads.
int64_t load_space(Store& store, const nlohmann::json& doc, const std::string& what);

// Grid runs of `store` that measured their whole space.
std::vector<int64_t> exhaustive_runs(Store& store);

std::vector<SpaceScore> bench_strategies(Store& store, const StrategyBenchOptions& options,
                                         const std::function<void(std::string_view)>& progress);

nlohmann::json to_json(const std::vector<SpaceScore>& scores);

}  // namespace kevo
