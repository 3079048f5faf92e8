// The evaluation cascade for one candidate: static check -> compile (cached)
// -> small ragged-shape checks -> full check -> timing -> re-check on fresh
// inputs -> roofline diagnosis. Every failure becomes a status in the result.
#pragma once

#include <filesystem>
#include <functional>
#include <limits>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/eval_result.h"
#include "core/knobs.h"
#include "core/roof.h"
#include "core/task.h"
#include "eval/compile_cache.h"
#include "eval/reference_cache.h"
#include "targets/target.h"

namespace kevo {

// The share of its timing a runner's timing thread waited for a CPU while
// ready to run (percent, a machine.* figure stored with the evaluation), and
// the share beyond which the measurement is taken again.
inline constexpr const char* kCpuWaitMetric = "machine.cpu_wait_pct";
inline constexpr double kContendedPct = 10;

struct CandidateSource {
  std::string text;
  std::filesystem::path origin;  // the file it came from, if any
  std::string language;          // from the target, by extension
};

// A candidate through static check and compile, ready to run (or already
// failed: `ready` false and `result` says why).
struct PreparedCandidate {
  EvalResult result;
  CompiledCandidate compiled;
  CandidateSource source;  // what was compiled (for the compiler's report)
  KnobValues knobs;
  bool ready = false;
};

class Evaluator {
 public:
  Evaluator(const Task& task, Target& target, const Roof& roof, ReferenceCache& references,
            CompileCache& compiles);

  EvalResult evaluate(const CandidateSource& source, const KnobValues& knobs);

  // evaluate() in two steps, so that compiles can run in parallel while runs
  // stay one at a time: prepare() is safe to call from several threads at
  // once (for different candidates); measure() is not.
  PreparedCandidate prepare(const CandidateSource& source, const KnobValues& knobs) const;
  EvalResult measure(PreparedCandidate prepared);

  // The phases every candidate runs, in order, for the first timed shape
  // (each further timed shape has a plan of its own: check, time, re-check).
  const std::vector<RunPhase>& plan() const { return plans_.front(); }
  // Told as each stage starts ("compiling", "checking [7, 1003] seed 1",
  // "timing ..."); may be empty.
  ProgressFn on_stage;
  // Called once per evaluator when a time beats the roof, with the working
  // set whose bandwidth the roof used: returns the roof measured again (may
  // be empty: the candidate is then suspect at once).
  std::function<Roof(double bytes)> remeasure_roof;

  const Roof& roof() const { return roof_; }
  // How many candidates measure() may run at once (one per GPU).
  int run_slots() const { return target_.run_slots(); }

  // Profiling: candidates whose time ranks among the best `profile_top` this
  // evaluator has measured are run again under the target's profiler (0: never),
  // once per compiled kernel: re-measuring one (the confirmation rounds) does
  // not profile it again.
  int profile_top = 3;
  // And only those faster than this (a remote evaluation's request carries
  // the submitting side's k-th best time: the rank among all of the run's).
  double profile_below_s = std::numeric_limits<double>::infinity();
  // And only while profiling has taken at most this share of the time this
  // evaluator spent (measuring and profiling), the first profile excepted: a
  // profile costs seconds (a Triton one about ten), several measurements'
  // worth, and early in a search nearly every candidate ranks among the best
  // few. One passed over is profiled when measured again (a confirmation
  // round) if the share allows it then. 1: no limit.
  double profile_share = 0.25;
  // How many candidates this evaluator has profiled.
  size_t profiled() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return profiled_.size();
  }

 private:
  const Task& task_;
  Target& target_;
  Roof roof_;
  bool remeasured_ = false;
  ReferenceCache& references_;
  CompileCache& compiles_;
  std::vector<std::vector<RunPhase>> plans_;  // one per timed shape
  std::vector<Task> shape_tasks_;  // with several timed shapes: the task at each
  // The labels of the checks in `plan` that `checks` lacks (or has failed),
  // "; "-joined: empty when every one is there and passed.
  std::string unchecked_phases(const std::vector<CheckReport>& checks,
                               const std::vector<RunPhase>& plan) const;
  // Every plan run and its verdict (status, timing, diagnosis; no profile):
  // `r` carries what prepare() found. With several timed shapes the timing
  // is their combination (combine_shape_timings) and the per-shape figures
  // are shape.K.* metrics.
  EvalResult run_and_judge(const CompiledCandidate& c, EvalResult r, const ProgressFn& stage);
  // One timed shape's plan, run and judged.
  EvalResult run_plan(const CompiledCandidate& c, EvalResult r, size_t shape,
                      const ProgressFn& stage);
  mutable std::mutex mutex_;      // measure() runs on several threads (one per GPU)
  std::mutex stage_mutex_;
  std::vector<double> best_times_;  // the best medians so far, ascending
  std::set<std::string> profiled_;  // compile keys of the kernels profiled
  double measuring_s_ = 0, profiling_s_ = 0;  // this evaluator's time, for profile_share
  // Whether to profile the kernel `key` measured at `median_s`; `over_share`
  // says when only profile_share stood in the way.
  bool should_profile(double median_s, const std::string& key, bool& over_share);
  void add_profile(const PreparedCandidate& p, EvalResult& r);
};

// The first line of a compiler log that says "error", or its first line.
std::string first_error_line(const std::string& log);

}  // namespace kevo
