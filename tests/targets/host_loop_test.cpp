// The host loop (targets/runner/host_loop.h) against scripted runners: a
// shell script that writes events to descriptor 3 and echoes each answer it
// reads on stdin to its stdout, so the outcome shows what kevo answered.
#include "targets/runner/host_loop.h"

#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/clock.h"
#include "core/task.h"
#include "targets/runner/sandbox.h"

namespace kevo {
namespace {

// A runner that runs `script` (sh) with its event pipe as descriptor 3.
struct ScriptedRunner {
  std::unique_ptr<ChildProcess> child;
  std::unique_ptr<EventReader> events;
  explicit ScriptedRunner(const std::string& script) {
    const runner::EventPipe ev = runner::make_event_pipe();
    SpawnOptions opt;
    opt.argv = {"/bin/sh", "-c", script};
    opt.extra_fds = {ev.write_fd};
    child = std::make_unique<ChildProcess>(opt);
    close(ev.write_fd);
    events = std::make_unique<EventReader>(ev.read_fd);
  }
};

// Writes one event line; reads kevo's answer and prints it.
std::string event(const std::string& json) {
  return "echo '" + json + "' >&3\n";
}
const char* kAnswer = "read a; echo \"answer: $a\"\n";

class RunnerHostLoop : public ::testing::Test {
 protected:
  void SetUp() override {
    task_ = parse_task({{"name", "t"}, {"operator", "swiglu"}, {"shapes", {{"g", {2, 2}}}}});
    for (uint64_t seed : {1, 2})
      phases_.push_back({RunPhase::check, task_.main, seed, fmt::format("check {}", seed)});
    phases_.push_back({RunPhase::time, task_.main, 3, "timing"});
  }

  // Runs `script` as a kernel job whose outputs are `outputs_`.
  RunOutcome run(const std::string& script, runner::JobLoop loop = {}) {
    ScriptedRunner r(script);
    const double now = monotonic_seconds();
    loop.start = now;
    loop.first_deadline = now + 60;
    loop.timeout_s = 60;
    loop.max_total_s = 120;
    loop.finish = [&](runner::LoopEnd end, RunOutcome&) {
      ends_.push_back(end);
      r.child->wait();
      r.child->drain(so_, se_);
    };
    runner::KernelJob k;
    k.task = &task_;
    k.phases = &phases_;
    k.check = [&](size_t ph, const std::vector<ConstTensorView>& views) {
      CheckReport rep;
      EXPECT_EQ(views.size(), 1u);  // swiglu: one output, y
      seen_.push_back(views.at(0).at(3));
      rep.passed = ph == 0;  // the second check fails
      return rep;
    };
    k.outputs = [&](size_t, size_t) {
      runner::CheckOutputs o;
      o.base = reinterpret_cast<const char*>(outputs_);
      return o;
    };
    k.timing_timeout = [&](const nlohmann::json&, const RunPhase&) { return 60.0; };
    CappedBuffer so, se;
    RunOutcome out = runner::drive_job(*r.child, *r.events, so, se, loop, runner::kernel_events(k));
    return out;
  }

  Task task_;
  std::vector<RunPhase> phases_;
  float outputs_[4] = {1, 2, 3, 4.5f};
  std::vector<double> seen_;
  std::vector<runner::LoopEnd> ends_;
  CappedBuffer so_, se_;
};

TEST_F(RunnerHostLoop, AnswersChecksAndStopsAtTheFirstWrongOne) {
  RunOutcome out =
      run(event(R"({"event":"ready"})") + event(R"({"event":"check","phase":0})") + kAnswer +
          event(R"({"event":"check","phase":1})") + kAnswer + event(R"({"event":"done"})"));
  EXPECT_EQ(out.kind, RunOutcome::check_failed) << out.detail;
  EXPECT_EQ(out.detail, "wrong result on check 2");
  ASSERT_EQ(out.checks.size(), 2u);
  EXPECT_EQ(out.checks[1].label, "check 2");  // an empty label is the phase's
  EXPECT_EQ(seen_, (std::vector<double>{4.5, 4.5}));
  ASSERT_EQ(ends_.size(), 1u);
  EXPECT_EQ(ends_[0], runner::LoopEnd::settled);
  // The answers, in order; the script printed them after kevo wrote them.
  EXPECT_EQ(out.stdout_text + so_.text(), "answer: continue\nanswer: stop\n");
}

TEST_F(RunnerHostLoop, KeepsTheSamplesAndMachineOfATimingEvent) {
  RunOutcome out =
      run(event(R"({"event":"not json)") +           // skipped: a kernel may write to descriptor 3
          event(R"({"event":"check","phase":7})") +  // no such phase: not checked
          event(R"({"event":"check","phase":0})") + kAnswer +
          event(R"({"event":"timing_start","phase":2,"estimate_s":0.001})") +
          event(R"({"event":"timing","phase":2,"samples":[0.5,0.25],"calls_per_sample":4,)"
                R"("warmup_calls":3,"machine":{"load1":0.5,"bogus":1}})") +
          event(R"({"event":"done"})"));
  EXPECT_EQ(out.kind, RunOutcome::finished) << out.detail;
  EXPECT_EQ(out.samples_s, (std::vector<double>{0.5, 0.25}));
  EXPECT_EQ(out.calls_per_sample, 4);
  EXPECT_EQ(out.warmup_calls, 3);
  ASSERT_EQ(out.machine.size(), 1u);
  EXPECT_EQ(out.machine[0].metric, "machine.load1");
  EXPECT_EQ(out.checks.size(), 1u);
  EXPECT_EQ(out.stdout_text + so_.text(), "answer: continue\n");
}

TEST_F(RunnerHostLoop, NamesErrorsInTheTargetsWords) {
  runner::JobLoop loop;
  loop.load_error = "cannot load the module";
  RunOutcome out = run(event(R"({"event":"load_error","what":"no such file"})"), loop);
  EXPECT_EQ(out.kind, RunOutcome::crashed);
  EXPECT_EQ(out.detail, "cannot load the module: no such file");

  out = run(event(R"({"event":"kernel_error","phase":1,"rc":3})"));
  EXPECT_EQ(out.kind, RunOutcome::kernel_error);
  EXPECT_EQ(out.detail, "the kernel returned 3 (KEVO_ERR_RUNTIME) on check 2");

  out = run(event(R"({"event":"signal","signal":11})"));
  EXPECT_EQ(out.kind, RunOutcome::crashed);
  EXPECT_NE(out.detail.find("SIGSEGV"), std::string::npos) << out.detail;
}

// The runner's containment note: a layer it did not get is one line of the
// stderr kevo keeps; when it got them all, nothing is added.
TEST_F(RunnerHostLoop, AMissingLayerOfContainmentIsSaidInStderr) {
  std::vector<runner::ContainmentLayer> layers = {
      {"environment", true, "clean"},
      {"landlock", true, ""},
      {"network namespace", false, "unshare: Operation not permitted"},
      {"seccomp", true, "deny-by-default"},
      {"limits", true, ""}};
  RunOutcome out = run(event(R"({"event":"ready"})") +
                       event(runner::containment_event(layers).dump()) +
                       event(R"({"event":"done"})"));
  EXPECT_EQ(out.kind, RunOutcome::finished) << out.detail;
  EXPECT_EQ(out.stderr_text,
            "kevo: containment: no network namespace (unshare: Operation not permitted)\n");
  layers[2] = {"network namespace", true, ""};
  out = run(event(R"({"event":"ready"})") + event(runner::containment_event(layers).dump()) +
            event(R"({"event":"done"})"));
  EXPECT_EQ(out.kind, RunOutcome::finished) << out.detail;
  EXPECT_EQ(out.stderr_text, "");
}

TEST_F(RunnerHostLoop, ARunnerThatExitsWithoutReportingCrashed) {
  RunOutcome out = run(event(R"({"event":"ready"})") + "echo bye\nexit 0\n");
  EXPECT_EQ(out.kind, RunOutcome::crashed);
  EXPECT_EQ(out.detail, "the runner exited without reporting");
  ASSERT_EQ(ends_.size(), 1u);
  EXPECT_EQ(ends_[0], runner::LoopEnd::closed);
}

}  // namespace
}  // namespace kevo
