// The submit/poll contract of evaluation backends and the batch loop over it,
// with backends that answer out of order and in groups as a cluster would.
#include <algorithm>
#include <stdexcept>

#include <gtest/gtest.h>

#include "eval/backend.h"

namespace kevo {
namespace {

Family family_named(const std::string& name) {
  Family f;
  f.name = name;
  return f;
}

// Answers every job in the order submitted; fails on the family "boom".
class Echo final : public ImmediateBackend {
 public:
  std::string_view name() const override { return "echo"; }
  double clock() const override { return 0; }
  int answered = 0;

 protected:
  EvalResult answer(const EvalJob& job) override {
    if (job.family->name == "boom") throw std::runtime_error("kevo's own trouble");
    ++answered;
    EvalResult r;
    r.detail = job.family->name;
    return r;
  }
};

// Holds what was submitted, and on each poll hands back two results, the
// later-submitted first: the results of a pool of remote nodes.
class Scrambled final : public EvalBackend {
 public:
  std::string_view name() const override { return "scrambled"; }
  std::vector<uint64_t> submit(const std::vector<EvalJob>& jobs) override {
    std::vector<uint64_t> t;
    for (const EvalJob& j : jobs) {
      held_.push_back({next_ += 10, j.family->name});  // tickets need not be 0, 1, 2...
      t.push_back(next_);
    }
    return t;
  }
  std::vector<FinishedJob> poll(const ProgressFn&) override {
    ++polls;
    std::vector<FinishedJob> out;
    for (int k = 0; k < 2 && !held_.empty(); ++k) {
      EvalResult r;
      r.detail = held_.back().second;
      out.push_back({held_.back().first, std::move(r)});
      held_.pop_back();
    }
    return out;
  }
  void cancel() override { held_.clear(); }
  size_t outstanding() const override { return held_.size(); }
  double clock() const override { return 0; }
  int polls = 0;

 private:
  std::vector<std::pair<uint64_t, std::string>> held_;
  uint64_t next_ = 0;
};

TEST(EvalBackend, ResultsReachTheirJobsWhateverTheOrder) {
  std::vector<Family> fams = {family_named("a"), family_named("b"), family_named("c"),
                              family_named("d"), family_named("e")};
  std::vector<EvalJob> jobs;
  for (const Family& f : fams) jobs.push_back({&f, {}});
  Scrambled backend;
  std::vector<std::string> got(jobs.size());
  std::vector<size_t> order;
  evaluate_batch(
      backend, jobs,
      [&](size_t i, EvalResult r) {
        got[i] = r.detail;
        order.push_back(i);
      },
      {}, {});
  EXPECT_EQ(got, (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  EXPECT_EQ(order, (std::vector<size_t>{4, 3, 2, 1, 0}));
  EXPECT_EQ(backend.polls, 3);
  EXPECT_EQ(backend.outstanding(), 0u);
}

TEST(EvalBackend, AStopLeavesTheRestUnevaluated) {
  std::vector<Family> fams = {family_named("a"), family_named("b"), family_named("c")};
  std::vector<EvalJob> jobs;
  for (const Family& f : fams) jobs.push_back({&f, {}});
  Echo backend;
  std::vector<size_t> done;
  evaluate_batch(
      backend, jobs, [&](size_t i, EvalResult) { done.push_back(i); },
      [&] { return done.size() < 2; }, {});
  EXPECT_EQ(done, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(backend.answered, 2);
  EXPECT_EQ(backend.outstanding(), 0u);  // cancelled, not left for the next batch
  // A stop asked for before anything ran: nothing runs.
  evaluate_batch(backend, jobs, [&](size_t i, EvalResult) { done.push_back(i); },
                 [] { return false; }, {});
  EXPECT_EQ(backend.answered, 2);
}

TEST(EvalBackend, AnErrorLeavesNothingQueued) {
  std::vector<Family> fams = {family_named("a"), family_named("boom"), family_named("c")};
  std::vector<EvalJob> jobs;
  for (const Family& f : fams) jobs.push_back({&f, {}});
  Echo backend;
  EXPECT_THROW(evaluate_batch(backend, jobs, [](size_t, EvalResult) {}, {}, {}), std::runtime_error);
  EXPECT_EQ(backend.outstanding(), 0u);
  // The next batch measures only its own jobs.
  std::vector<EvalJob> next = {{&fams[0], {}}};
  int n = 0;
  evaluate_batch(backend, next, [&](size_t, EvalResult) { ++n; }, {}, {});
  EXPECT_EQ(n, 1);
  EXPECT_EQ(backend.answered, 2);
}

}  // namespace
}  // namespace kevo
