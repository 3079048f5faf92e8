// Benchmark regression comparison: two sets of results (kevo exports), task
// by task. The unit of replication is an independent round (a confirmation
// round of the search, each in a runner of its own): where both sides have
// two or more, a change must clear the threshold in every pairing of a
// baseline round with a current one; else the raw samples of the one round
// each side has give a bootstrap interval on the ratio of medians, and the
// verdict says it is judged without the run-to-run spread. Rendered as a
// Markdown table, JUnit XML and JSON for CI.
#pragma once

#include <cstdint>
#include <map>
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
  // The median of each independent round it was measured in at the end of
  // the search (its confirmation rounds that were ok); empty where none.
  std::vector<double> rounds_s;
  std::string failures;  // when not ok: "3 compile_error, 1 mismatch"

  // What kevo compare --retime needs to build the best kernel again: the
  // export's task config (its `resolved` JSON), the kernel's source (empty
  // where the export carries none: one written by an older kevo) and knobs.
  nlohmann::json task_config;
  std::string target;
  std::string source_text, source_language, source_origin;
  std::map<std::string, int64_t> knob_values;

  // (p80 - p20) / median: how wide its own measurements spread.
  double spread() const { return median_s > 0 ? (p80_s - p20_s) / median_s : 0; }
  // (max - min) / median of its rounds: how far one round lands from another.
  double round_spread() const;
};

// The tasks of a kevo export (check_export'ed), one per task: each task's
// best kernel (as the search chose it, after its confirmation; else the
// fastest correct one) with the samples of its latest measurement, so that a
// confirmed best is judged by its re-measurement, not by the search's luckiest
// one. A task exported by several runs keeps its fastest.
std::vector<TaskResult> tasks_of_export(const nlohmann::json& doc);

enum class Verdict {
  faster,
  slower,
  unchanged,
  inconclusive,
  added,
  missing,
  now_failing,
  now_passing,
  failing
};
// "faster", "slower", "unchanged", "inconclusive", "new", "missing",
// "now-failing", "now-passing", "still-failing".
std::string_view verdict_name(Verdict v);

struct CompareOptions {
  double threshold = 0.05;   // a change smaller than this is "unchanged"
  double confidence = 0.95;  // of the bootstrap interval
  int resamples = 2000;
  uint64_t seed = 1;  // the bootstrap's: the same inputs give the same verdicts
  bool fail_inconclusive = false;  // an inconclusive task fails the gate too
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

// From independent rounds (each one round's median): the ratio of the
// medians of the rounds, and the range of the ratio over every pairing of a
// baseline round with a current one (min current / max baseline .. max
// current / min baseline). When both sides are the same, the chance that
// every current round lands above every baseline round is 1 / C(n+m, n):
// 1 in 20 for three rounds a side, before the threshold's margin.
RatioInterval round_ratio_range(const std::vector<double>& baseline,
                                const std::vector<double>& current);

// From rounds taken side by side (kevo compare --retime: round i timed the
// baseline's and the current kernel one right after the other, in an order
// that alternates): the ratio current / baseline of each round, their median,
// and their range (min .. max). Drift between rounds cancels in each ratio.
// When both sides are the same, the chance that all n ratios land on one side
// of 1 is 2 / 2^n (1 in 16 for five rounds), before the threshold's margin.
// Needs as many rounds on each side, at least one.
RatioInterval paired_ratio_range(const std::vector<double>& baseline,
                                 const std::vector<double>& current);

// How a verdict was reached: from one round's samples a side, from the
// search's independent rounds, or from rounds re-timed side by side here.
enum class Basis { samples, rounds, retimed };
std::string_view basis_name(Basis b);  // "samples", "rounds", "retimed"

struct TaskComparison {
  std::string task;
  Verdict verdict = Verdict::unchanged;
  std::optional<TaskResult> baseline, current;
  RatioInterval interval;  // when both sides are ok
  Basis basis = Basis::samples;
  bool noisy = false;      // a side's spread (rounds', else samples') is wider than the threshold
  bool gate_inconclusive = false;  // CompareOptions::fail_inconclusive
  std::string note;        // e.g. that the task's config changed between the sides

  // A JUnit failure: slower, now failing, gone from the current results, or
  // inconclusive where that fails the gate.
  bool failed() const;
  // What fails the CI gate (exit status 1): slower with confidence, now
  // failing, or inconclusive where that fails the gate.
  bool regressed() const;
};

// Matches tasks by hash, then what is left by name (a task whose config
// changed: the note says so), and gives each a verdict: faster or slower when
// the whole interval (the rounds' range where both sides have two or more
// rounds, else the bootstrap interval) lies beyond 1 -/+ threshold, unchanged
// when it lies within, inconclusive when it straddles a bound (the noise is
// larger than the change); new, missing, now-failing, now-passing,
// still-failing by which side has a correct kernel. Baseline order first,
// then new tasks.
std::vector<TaskComparison> compare_tasks(const std::vector<TaskResult>& baseline,
                                          const std::vector<TaskResult>& current,
                                          const CompareOptions& options);

// Gives `r` (both sides ok, its interval set) its verdict: faster or slower
// when the whole interval lies beyond 1 -/+ threshold, unchanged when it lies
// within, inconclusive when it straddles a bound.
void judge_interval(TaskComparison& r, const CompareOptions& o);

// A headline, then one table row per task:
// | task | verdict | baseline | current | change | interval | spread | note |
std::string comparison_markdown(const std::vector<TaskComparison>& rows, const CompareOptions& o);
// One <testsuite> with one <testcase> per task; slower, now-failing and
// missing (and inconclusive where it fails the gate) carry a <failure>,
// still-failing a <skipped>.
std::string comparison_junit(const std::vector<TaskComparison>& rows, const CompareOptions& o);
nlohmann::json comparison_json(const std::vector<TaskComparison>& rows, const CompareOptions& o);
// 1 when any task regressed(), else 0.
int comparison_exit_status(const std::vector<TaskComparison>& rows);

}  // namespace kevo
