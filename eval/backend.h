// Evaluation backends: where the engine's candidates are evaluated. The local
// backend compiles a batch in parallel on all cores (Boost.Asio thread pool),
// then runs the candidates one at a time, so no timing shares the machine
// with a compile or another timing. The replay backend answers from a
// recorded run instead of running anything.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/eval_result.h"
#include "core/space.h"
#include "eval/evaluator.h"

namespace kevo {

class Store;

struct EvalJob {
  const Family* family = nullptr;
  KnobValues knobs;
};

class EvalBackend {
 public:
  virtual ~EvalBackend() = default;
  virtual std::string_view name() const = 0;
  // Evaluates `jobs`, calling `done(i, result)` on the calling thread as each
  // finishes. Before each run it asks `keep_going()`; when that says no, the
  // remaining jobs are left unevaluated (done is not called for them).
  virtual void evaluate(const std::vector<EvalJob>& jobs,
                        const std::function<void(size_t, EvalResult)>& done,
                        const std::function<bool()>& keep_going, const ProgressFn& stage) = 0;
  // Seconds charged to the time budget so far: wall time for the local
  // backend, the recorded compile and run times for a replay.
  virtual double clock() const = 0;
};

// Compiles with `threads` workers (0: all CPUs), runs one at a time.
std::unique_ptr<EvalBackend> make_local_backend(Evaluator& evaluator, size_t threads = 0);

// Answers from the evaluations of `run` in `store`, keyed by (source hash,
// knobs): each point's first evaluation, what the recorded search saw. Throws UserError when the run has no evaluations.
class ReplayBackend final : public EvalBackend {
 public:
  ReplayBackend(Store& store, int64_t run);
  std::string_view name() const override { return "replay"; }
  void evaluate(const std::vector<EvalJob>& jobs,
                const std::function<void(size_t, EvalResult)>& done,
                const std::function<bool()>& keep_going, const ProgressFn& stage) override;
  double clock() const override { return charged_s_; }
  void reset_clock() { charged_s_ = 0; }
  // Answers without their roof id, for storing them in another store.
  bool detach_roofs = false;
  // The keys ("source_hash|knobs json") the recording holds.
  const std::map<std::string, EvalResult>& recorded() const { return recorded_; }
  std::set<std::string> recorded_keys() const;

 private:
  std::map<std::string, EvalResult> recorded_;
  double charged_s_ = 0;
};

}  // namespace kevo
