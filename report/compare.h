// Benchmark regression comparison: two sets of results (kevo exports), task
// by task, from the raw timing samples of each task's best kernel, with a
// bootstrap confidence interval on the ratio of medians; rendered as a
// Markdown table, JUnit XML and JSON for CI.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kevo {

// One task as one side of a comparison measured it.
struct TaskResult {
  std::string name;
  std::string hash;
  std::string origin;     // "run 12"
  bool ok = false;        // a correct kernel was found
  int64_t candidate = 0;  // the best (when ok)
  std::string family;
  std::string knobs;              // "THREADS=4 VEC=8"
  std::vector<double> samples_s;  // its raw per-call samples
  double median_s = 0, p20_s = 0, p80_s = 0;
  std::string failures;  // when not ok: "3 compile_error, 1 mismatch"

  // (p80 - p20) / median: how wide its own measurements spread.
  double spread() const { return median_s > 0 ? (p80_s - p20_s) / median_s : 0; }
};

// The tasks of a kevo export (check_export'ed), one per task: each task's
// best kernel (as the search chose it, after its confirmation; else the
// fastest correct one) with the samples of its latest measurement, so that a
// confirmed best is judged by its re-measurement, not by the search's luckiest
// one. A task exported by several runs keeps its fastest.
std::vector<TaskResult> tasks_of_export(const nlohmann::json& doc);

enum class Verdict { faster, slower, unchanged, added, missing, now_failing, now_passing, failing };
// "faster", "slower", "unchanged", "new", "missing", "now-failing",
// "now-passing", "still-failing".
std::string_view verdict_name(Verdict v);

struct CompareOptions {
  double threshold = 0.05;   // a change smaller than this is "unchanged"
  double confidence = 0.95;  // of the bootstrap interval
  int resamples = 2000;
  uint64_t seed = 1;  // the bootstrap's: the same inputs give the same verdicts
};

// The ratio of medians current / baseline and its percentile-bootstrap
// confidence interval: both sample sets resampled with replacement
// `resamples` times from a counter-based generator keyed by `seed`.
struct RatioInterval {
  double ratio = 0, low = 0, high = 0;
};
RatioInterval bootstrap_median_ratio(const std::vector<double>& baseline,
                                     const std::vector<double>& current, double confidence,
                                     int resamples, uint64_t seed);

struct TaskComparison {
  std::string task;
  Verdict verdict = Verdict::unchanged;
  std::optional<TaskResult> baseline, current;
  RatioInterval interval;  // when both sides are ok
  bool noisy = false;      // a side's own spread is wider than the threshold
  std::string note;        // e.g. that the task's config changed between the sides

  // A JUnit failure: slower, now failing, or gone from the current results.
  bool failed() const;
  // What fails the CI gate (exit status 1): slower with confidence, or now failing.
  bool regressed() const;
};

// Matches tasks by hash, then what is left by name (a task whose config
// changed: the note says so), and gives each a verdict: faster or slower when
// the whole interval lies beyond 1 -/+ threshold, else unchanged; new,
// missing, now-failing, now-passing, still-failing by which side has a
// correct kernel. Baseline order first, then new tasks.
std::vector<TaskComparison> compare_tasks(const std::vector<TaskResult>& baseline,
                                          const std::vector<TaskResult>& current,
                                          const CompareOptions& options);

// A headline, then one table row per task:
// | task | verdict | baseline | current | change | CI | noise | note |
std::string comparison_markdown(const std::vector<TaskComparison>& rows, const CompareOptions& o);
// One <testsuite> with one <testcase> per task; slower, now-failing and
// missing carry a <failure>, still-failing a <skipped>.
std::string comparison_junit(const std::vector<TaskComparison>& rows, const CompareOptions& o);
nlohmann::json comparison_json(const std::vector<TaskComparison>& rows, const CompareOptions& o);
// 1 when any task regressed(), else 0.
int comparison_exit_status(const std::vector<TaskComparison>& rows);

}  // namespace kevo
