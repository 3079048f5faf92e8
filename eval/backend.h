// Evaluation backends: where the engine's candidates are evaluated. A backend
// takes jobs with submit() and hands back results with poll(), so that one
// interface fits a backend that evaluates on this machine and one that sends
// jobs away (a cluster) and collects their results as they land. The local
// backend compiles what was submitted in parallel on all cores (Boost.Asio
// thread pool), then runs the candidates one at a time, so no timing shares
// the machine with a compile or another timing. The replay backend answers
// from a recorded run instead of running anything.
//
// Where the check runs: wherever the job is evaluated, beside the runner and
// its outputs. A remote backend ships an EvalRequest (eval/request.h: the
// resolved task, the source, the knobs, the roof) and gets an EvalResult
// back; outputs never travel.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
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

// A job's result, known by the ticket submit() gave the job.
struct FinishedJob {
  uint64_t ticket = 0;
  EvalResult result;
};

class EvalBackend {
 public:
  virtual ~EvalBackend() = default;
  virtual std::string_view name() const = 0;
  // Takes `jobs` over and returns one ticket each, in order. Work may start
  // at once (elsewhere) or only when poll() is called (the local backend).
  virtual std::vector<uint64_t> submit(const std::vector<EvalJob>& jobs) = 0;
  // Waits until some submitted job has its result, and returns every result
  // ready by then, on the calling thread. Returns nothing only when no job is
  // outstanding. `stage` hears what is being done ("compiling 8 candidates").
  virtual std::vector<FinishedJob> poll(const ProgressFn& stage) = 0;
  // Drops the outstanding jobs that have not begun to run; those that have
  // are still returned by poll().
  virtual void cancel() = 0;
  // Jobs submitted whose results poll() has not returned yet (after a cancel,
  // only those already running).
  virtual size_t outstanding() const = 0;
  // Seconds charged to the time budget so far: wall time for the local
  // backend, the recorded compile and run times for a replay.
  virtual double clock() const = 0;
  // While on, the jobs submitted are compared with one another (the
  // confirmation rounds): a backend that spreads jobs over machines should
  // run them all on one. This machine's backends are one machine already.
  virtual void compare_on_one_machine(bool on) { (void)on; }
};

// The batch loop every caller uses: submits `jobs`, then polls, calling
// `done(i, result)` for jobs[i] on the calling thread as each result comes.
// Before each poll it asks `keep_going()`; when that says no, the jobs not yet
// begun are cancelled (done is not called for them) and those running are
// still collected.
void evaluate_batch(EvalBackend& backend, const std::vector<EvalJob>& jobs,
                    const std::function<void(size_t, EvalResult)>& done,
                    const std::function<bool()>& keep_going, const ProgressFn& stage);

// A backend that answers each job on the calling thread, one per poll():
// what replays and test doubles need. Subclasses give answer().
class ImmediateBackend : public EvalBackend {
 public:
  std::vector<uint64_t> submit(const std::vector<EvalJob>& jobs) override;
  std::vector<FinishedJob> poll(const ProgressFn& stage) override;
  void cancel() override { queue_.clear(); }
  size_t outstanding() const override { return queue_.size(); }

 protected:
  virtual EvalResult answer(const EvalJob& job) = 0;

 private:
  std::deque<std::pair<uint64_t, EvalJob>> queue_;
  uint64_t tickets_ = 0;
};

// Compiles with `threads` workers (0: all CPUs), runs one at a time (one per
// device where the target has several).
std::unique_ptr<EvalBackend> make_local_backend(Evaluator& evaluator, size_t threads = 0);

// Answers from the evaluations of `run` in `store`, keyed by (source hash,
// knobs): each point's first evaluation, what the recorded search saw. Throws UserError when the run has no evaluations.
class ReplayBackend final : public ImmediateBackend {
 public:
  ReplayBackend(Store& store, int64_t run);
  std::string_view name() const override { return "replay"; }
  double clock() const override { return charged_s_; }
  void reset_clock() { charged_s_ = 0; }
  // Answers without their roof id, for storing them in another store.
  bool detach_roofs = false;
  // The keys ("source_hash|knobs json") the recording holds.
  const std::map<std::string, EvalResult>& recorded() const { return recorded_; }
  std::set<std::string> recorded_keys() const;

 protected:
  EvalResult answer(const EvalJob& job) override;

 private:
  std::map<std::string, EvalResult> recorded_;
  double charged_s_ = 0;
};

}  // namespace kevo
