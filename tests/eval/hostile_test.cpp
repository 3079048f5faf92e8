// Hostile candidates: each must end with the right status while kevo itself
// carries on. Runs real compiles and real child processes.
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>
#include <functional>

#include <gtest/gtest.h>

#include "core/paths.h"
#include "core/redact.h"
#include "eval/evaluator.h"
#include "support/bias_gelu.h"  // test::write_file
#include "support/test_support.h"
#include "targets/runner/sandbox.h"

namespace kevo {
namespace {

class Hostile : public ::testing::Test {
 protected:
  EvalResult eval(const std::string& kernel, const nlohmann::json& overrides = {}) {
    nlohmann::json o = {{"limits", {{"timeout_s", 2}, {"max_total_s", 30}, {"memory_mb", 512}}}};
    if (!overrides.is_null()) o.merge_patch(overrides);
    task_ = test::quick_task("swiglu", {{"g", {64, 1000}}}, o);
    auto path = test::source_dir() / "eval" / "kernels" / (kernel + ".c");
    CandidateSource src{read_text_file(path), path, "c"};
    Evaluator ev(task_, *target_, roof_, refs_, compiles_);
    ev.remeasure_roof = remeasure_;
    return ev.evaluate(src, {});
  }

  Task task_;
  std::unique_ptr<Target> target_ = make_target("cpu");
  Roof roof_ = test::fake_roof(1000, 1e6);  // a floor far below any real time
  ReferenceCache refs_{""};
  CompileCache compiles_{cache_dir()};
  std::function<Roof(double)> remeasure_;
};

#define EXPECT_STATUS(r, s) EXPECT_EQ(status_name((r).status), status_name(s)) << (r).detail

// Whether a cpu runner gets the layer `name` on this machine (what `kevo
// targets` prints), and why not.
std::string layer_missing(const std::string& name) {
  for (const auto& l : runner::probe_containment(runner::FilterProfile::cpu))
    if (l.name == name) return l.on ? "" : "no " + name + " here (" + l.detail + ")";
  return "no layer named " + name;
}

TEST_F(Hostile, RightKernelIsOk) {
  EvalResult r = eval("right");
  EXPECT_STATUS(r, Status::ok);
  ASSERT_TRUE(r.timing.has_value());
  EXPECT_GE(r.timing->samples_s.size(), 3u);
  ASSERT_TRUE(r.diagnosis.has_value());
  // 3 small, the full shape, the last timed calls, and the re-check after timing.
  EXPECT_EQ(r.checks.size(), 6u);
  for (const auto& c : r.checks) EXPECT_TRUE(c.passed) << c.label;
  EXPECT_NE(r.checks[4].label.find("the last timed calls"), std::string::npos) << r.checks[4].label;
  EXPECT_NE(r.checks.back().label.find("after timing"), std::string::npos);
}

// The evaluation's stderr names a layer of containment the runner did not
// get, and stays clean when it got them all.
TEST_F(Hostile, StderrSaysWhichLayersAreMissing) {
  EvalResult r = eval("right");
  EXPECT_STATUS(r, Status::ok);
  bool all_on = true;
  for (const auto& l : runner::probe_containment(runner::FilterProfile::cpu)) {
    all_on = all_on && l.on;
    if (!l.on) {
      EXPECT_NE(r.stderr_text.find("no " + l.name + " ("), std::string::npos) << r.stderr_text;
    }
  }
  if (all_on) {
    EXPECT_EQ(r.stderr_text, "");
  } else {
    EXPECT_EQ(r.stderr_text.rfind("kevo: containment: no ", 0), 0u) << r.stderr_text;
  }
}

TEST_F(Hostile, Bf16KernelIsJudgedInBf16) {
  EvalResult r = eval("swiglu_bf16", {{"dtype", "bf16"}});
  EXPECT_STATUS(r, Status::ok);
  for (const auto& c : r.checks) EXPECT_LE(c.max_ulp, 2) << c.label;
  // An f32 kernel handed bf16 tensors reads twice the bytes it was given.
  EvalResult f = eval("right", {{"dtype", "bf16"}});
  EXPECT_STATUS(f, Status::crash);
  EXPECT_NE(f.detail.find("guard page after input 'g'"), std::string::npos) << f.detail;
}

// A kernel that reads its environment finds only the runner's allowlist:
// no key of the user's, whatever its name, and only what KEVO_RUNNER_ENV adds.
TEST_F(Hostile, EnvironmentHoldsNoSecrets) {
  setenv("KEVO_HOSTILE_TEST_API_KEY", "sk-planted-4f2a9c", 1);
  setenv("KEVO_HOSTILE_TEST_SHARED", "named-by-the-user", 1);
  setenv("KEVO_RUNNER_ENV", "KEVO_HOSTILE_TEST_SHARED", 1);
  EvalResult r = eval("env_secret");
  unsetenv("KEVO_HOSTILE_TEST_API_KEY");
  unsetenv("KEVO_HOSTILE_TEST_SHARED");
  unsetenv("KEVO_RUNNER_ENV");
  EXPECT_STATUS(r, Status::ok);
  // It did print what it had (so the test sees its view)...
  EXPECT_NE(r.stderr_text.find("env: PATH="), std::string::npos) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("env: KEVO_HOSTILE_TEST_SHARED=named-by-the-user"),
            std::string::npos)
      << r.stderr_text;
  // ...and the key was not among it.
  EXPECT_EQ(r.stderr_text.find("sk-planted-4f2a9c"), std::string::npos) << r.stderr_text;
  EXPECT_EQ(r.stderr_text.find("KEVO_HOSTILE_TEST_API_KEY"), std::string::npos) << r.stderr_text;
  EXPECT_EQ(r.stderr_text.find("env: KEVO_RUNNER_ENV"), std::string::npos) << r.stderr_text;
}

// A key the user shares with the runners after all (KEVO_RUNNER_ENV) and the
// kernel prints: kevo keeps "[redacted]" in its place.
TEST_F(Hostile, ASecretThatReachesTheKernelIsRedacted) {
  setenv("KEVO_HOSTILE_TEST_SHARED_KEY", "sk-shared-by-mistake-6c7d", 1);
  setenv("KEVO_RUNNER_ENV", "KEVO_HOSTILE_TEST_SHARED_KEY", 1);
  add_secret_from_env("KEVO_HOSTILE_TEST_SHARED_KEY");  // as an LLM config's api_key_env does
  EvalResult r = eval("env_secret");
  unsetenv("KEVO_HOSTILE_TEST_SHARED_KEY");
  unsetenv("KEVO_RUNNER_ENV");
  EXPECT_STATUS(r, Status::ok);
  EXPECT_NE(r.stderr_text.find("env: KEVO_HOSTILE_TEST_SHARED_KEY=[redacted]"), std::string::npos)
      << r.stderr_text;
  EXPECT_EQ(r.stderr_text.find("sk-shared-by-mistake-6c7d"), std::string::npos) << r.stderr_text;
}

// Files out of reach: a write anywhere and a read of what is not the
// runner's (a user's file, kevo's environment through /proc) are refused, and
// the candidate, right otherwise, is still measured.
TEST_F(Hostile, TheFileSystemIsOutOfReach) {
  if (syscall(SYS_landlock_create_ruleset, nullptr, 0, 1U) < 1)
    GTEST_SKIP() << "this kernel has no Landlock: the runner goes on without file-system "
                    "confinement (and says so)";
  const std::filesystem::path written = "/tmp/kevo_hostile_written.txt";
  std::filesystem::remove(written);
  EvalResult w = eval("writes_file");
  EXPECT_STATUS(w, Status::ok);
  EXPECT_FALSE(std::filesystem::exists(written)) << w.stderr_text;
  EXPECT_NE(w.stderr_text.find("hostile: cannot write"), std::string::npos) << w.stderr_text;
  std::filesystem::remove(written);

  const std::filesystem::path secret = "/tmp/kevo_hostile_secret.txt";
  test::write_file(secret, "the-user-s-secret-7d1e\n");
  setenv("KEVO_HOSTILE_TEST_TOKEN", "tok-planted-93b1", 1);
  EvalResult r = eval("reads_file");
  unsetenv("KEVO_HOSTILE_TEST_TOKEN");
  std::filesystem::remove(secret);
  EXPECT_STATUS(r, Status::ok);
  EXPECT_NE(r.stderr_text.find("hostile: cannot read /tmp/kevo_hostile_secret.txt"),
            std::string::npos)
      << r.stderr_text;
  EXPECT_EQ(r.stderr_text.find("the-user-s-secret-7d1e"), std::string::npos) << r.stderr_text;
  EXPECT_EQ(r.stderr_text.find("tok-planted-93b1"), std::string::npos) << r.stderr_text;
}

TEST_F(Hostile, Segfault) {
  EvalResult r = eval("segfault");
  EXPECT_STATUS(r, Status::crash);
  EXPECT_NE(r.detail.find("SIGSEGV"), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("null pointer"), std::string::npos) << r.detail;
}

TEST_F(Hostile, Abort) {
  EvalResult r = eval("abort");
  EXPECT_STATUS(r, Status::crash);
  EXPECT_NE(r.detail.find("SIGABRT"), std::string::npos) << r.detail;
}

TEST_F(Hostile, InfiniteLoopTimesOut) {
  EvalResult r = eval("infinite_loop");
  EXPECT_STATUS(r, Status::timeout);
}

TEST_F(Hostile, SleepPastTheTimeout) {
  EvalResult r = eval("sleep");
  EXPECT_STATUS(r, Status::timeout);
  EXPECT_NE(r.detail.find("no progress within"), std::string::npos) << r.detail;
}

TEST_F(Hostile, HugeAllocationHitsTheMemoryLimit) {
  EvalResult r = eval("huge_alloc");
  EXPECT_STATUS(r, Status::crash);
}

TEST_F(Hostile, StackOverflow) {
  EvalResult r = eval("stack_overflow");
  EXPECT_STATUS(r, Status::crash);
  EXPECT_NE(r.detail.find("SIGSEGV"), std::string::npos) << r.detail;
}

TEST_F(Hostile, WrongResult) {
  EvalResult r = eval("wrong");
  EXPECT_STATUS(r, Status::mismatch);
  ASSERT_FALSE(r.checks.empty());
  EXPECT_FALSE(r.checks.back().passed);
  EXPECT_TRUE(r.checks.back().first.has_value());
  EXPECT_FALSE(r.timing.has_value());  // a wrong kernel is not timed
}

TEST_F(Hostile, NanOutput) {
  EvalResult r = eval("nan_output");
  EXPECT_STATUS(r, Status::mismatch);
  EXPECT_NE(r.detail.find("NaN"), std::string::npos) << r.detail;
}

TEST_F(Hostile, WritePastTheEndOfTheOutput) {
  EvalResult r = eval("overrun");
  EXPECT_STATUS(r, Status::crash);
  EXPECT_NE(r.detail.find("past the end of output 'y'"), std::string::npos) << r.detail;
}

TEST_F(Hostile, ReturnsWithoutWriting) {
  EvalResult r = eval("no_write");
  EXPECT_STATUS(r, Status::mismatch);
  EXPECT_NE(r.detail.find("were the outputs written at all?"), std::string::npos) << r.detail;
}

TEST_F(Hostile, RightOnTheFirstInputsOnly) {
  EvalResult r = eval("first_only");
  EXPECT_STATUS(r, Status::mismatch);
  EXPECT_NE(r.detail.find("right on the first inputs"), std::string::npos) << r.detail;
}

TEST_F(Hostile, WritesToItsInput) {
  EvalResult r = eval("write_input");
  EXPECT_STATUS(r, Status::crash);
  EXPECT_NE(r.detail.find("input 'g' (inputs are read-only)"), std::string::npos) << r.detail;
}

TEST_F(Hostile, ReturnsAnError) {
  EvalResult r = eval("error_return");
  EXPECT_STATUS(r, Status::crash);
  EXPECT_NE(r.detail.find("KEVO_ERR_UNSUPPORTED"), std::string::npos) << r.detail;
}

TEST_F(Hostile, ExitsTheProcess) {
  EvalResult r = eval("exits");
  EXPECT_STATUS(r, Status::crash);
  EXPECT_NE(r.detail.find("did the kernel call exit()"), std::string::npos) << r.detail;
}

TEST_F(Hostile, ReplayingResultsIsCaught) {
  // It skips work on repeated calls: the re-check's poisoned outputs expose it.
  EvalResult r = eval("memoize");
  EXPECT_NE(r.status, Status::ok) << r.detail;
}

TEST_F(Hostile, ReplayingAnEarlierAnswerIsCaughtOnInputsItHasNotSeen) {
  // Timing uses inputs the checks never saw, and the last timed calls are
  // checked: the replayed answer is wrong there.
  EvalResult r = eval("replay");
  EXPECT_STATUS(r, Status::mismatch);
  EXPECT_NE(r.detail.find("right on the first inputs"), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("the last timed calls"), std::string::npos) << r.detail;
}

// Work skipped while timed, on inputs the kernel has seen (every timed call
// repeats them): the last sample's outputs, poisoned before it, show it.
TEST_F(Hostile, SkippingWorkOnRepeatedInputsIsCaught) {
  EvalResult r = eval("skip_rows");
  EXPECT_STATUS(r, Status::mismatch);
  EXPECT_NE(r.detail.find("the last timed calls"), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("right on the first inputs"), std::string::npos) << r.detail;
}

// Events the kernel writes itself: a timing report and "done" before any
// check. No verdict rests on a stream that lacks the plan's checks.
TEST_F(Hostile, AForgedEventStreamIsNoVerdict) {
  EvalResult r = eval("forged_done");
  EXPECT_STATUS(r, Status::crash);
  EXPECT_NE(r.detail.find("without the checks of"), std::string::npos) << r.detail;
  EXPECT_FALSE(r.timing.has_value());
}

TEST_F(Hostile, AMalformedEventEndsTheJobNotKevo) {
  EvalResult r = eval("forged_phase");
  EXPECT_STATUS(r, Status::crash);
  EXPECT_NE(r.detail.find("an event kevo cannot read"), std::string::npos) << r.detail;
}

// A kernel that hooks the runner's own write() and reports a fifth of its
// time: kevo's clock around the samples does not agree, the candidate is
// measured again in a fresh runner, and stays suspect (never a best).
TEST_F(Hostile, AForgedTimeDoesNotHoldAgainstKevosClock) {
  // Samples of 200 ms in all: the lie (160 ms) is far past the clock's
  // allowance for the runner's own steps (20 ms and a quarter).
  EvalResult r = eval("forged_timing", {{"timing", {{"min_time_ms", 200}}}});
  ASSERT_NE(r.stderr_text.find("forger: the runner's write is hooked"), std::string::npos)
      << "the forger could not hook the runner, so this test shows nothing: " << r.stderr_text;
  EXPECT_STATUS(r, Status::suspect);
  EXPECT_NE(r.detail.find("kevo's clock saw them take"), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("measured again in a fresh runner"), std::string::npos) << r.detail;
}

// A kernel that puts its own pipe where the runner's event descriptor was
// (a man in the middle, who could rewrite any report) ends as a crash.
TEST_F(Hostile, AManInTheMiddleOfTheRunnersPipesIsCaught) {
  EvalResult r = eval("interposed_events");
  ASSERT_NE(r.stderr_text.find("interposer: taking descriptor 3"), std::string::npos)
      << r.stderr_text;
  EXPECT_EQ(r.stderr_text.find("interposer: could not"), std::string::npos) << r.stderr_text;
  EXPECT_STATUS(r, Status::crash);
  EXPECT_NE(r.detail.find("tampered with the runner's pipes"), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("descriptor 3 (kevo's event pipe) is now "), std::string::npos)
      << r.detail;
}

TEST_F(Hostile, ForkIsRejectedBeforeCompiling) {
  EvalResult r = eval("forks");
  EXPECT_STATUS(r, Status::rejected);
  EXPECT_NE(r.detail.find("fork()"), std::string::npos) << r.detail;
}

TEST_F(Hostile, ProcessesAreRefusedAtRunTime) {
  // Past the static check (a function pointer), the system-call filter
  // refuses every fork: the kernel then computes and is ok.
  EvalResult r = eval("fork_bomb");
  EXPECT_STATUS(r, Status::ok);
}

// Every other way to a process (another entry point, a raw clone, clone3,
// exec) is refused by the system-call filter; the kernel then computes.
TEST_F(Hostile, ProcessesAreRefusedEveryWay) {
  if (std::string why = layer_missing("seccomp"); !why.empty()) GTEST_SKIP() << why;
  EvalResult r = eval("spawns");
  EXPECT_STATUS(r, Status::ok);
  for (const char* way : {"_Fork", "fork", "vfork", "clone"})
    EXPECT_NE(r.stderr_text.find(std::string("hostile: ") + way +
                                 " refused: Operation not permitted"),
              std::string::npos)
        << way << "\n" << r.stderr_text;
  // clone3 "does not exist" (glibc then falls back to clone, whose flags the filter reads).
  if (r.stderr_text.find("hostile: clone3") != std::string::npos) {
    EXPECT_NE(r.stderr_text.find("hostile: clone3 refused: Function not implemented"),
              std::string::npos)
        << r.stderr_text;
  }
  EXPECT_NE(r.stderr_text.find("hostile: execve refused: Operation not permitted"),
            std::string::npos)
      << r.stderr_text;
  EXPECT_EQ(r.stderr_text.find("started a process"), std::string::npos) << r.stderr_text;
}

// Raw system calls a kernel never needs come back refused (EPERM), not
// killed: the kernel goes on and is ok.
TEST_F(Hostile, RawSystemCallsAreRefused) {
  if (std::string why = layer_missing("seccomp"); !why.empty()) GTEST_SKIP() << why;
  EvalResult r = eval("raw_syscalls");
  EXPECT_STATUS(r, Status::ok);
  for (const char* name : {"ptrace", "process_vm_readv", "unshare", "setns", "mount", "bpf",
                           "keyctl", "perf_event_open", "io_uring_setup", "finit_module",
                           "personality", "kill"})
    EXPECT_NE(r.stderr_text.find(std::string("hostile: ") + name + " refused\n"),
              std::string::npos)
        << name << "\n" << r.stderr_text;
  EXPECT_EQ(r.stderr_text.find("allowed"), std::string::npos) << r.stderr_text;
}

// No network: the candidate's socket is refused (the filter), it sees no
// interface but loopback (its own network namespace), and the test's
// listener on 127.0.0.1 never hears from it.
TEST_F(Hostile, TheNetworkIsOutOfReach) {
  const std::string no_filter = layer_missing("seccomp");
  const std::string no_namespace = layer_missing("network namespace");
  if (!no_filter.empty() && !no_namespace.empty())
    GTEST_SKIP() << no_filter << "; " << no_namespace;
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0) << strerror(errno);
  const int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(47311);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(listener, 4) != 0) {
    close(listener);
    GTEST_SKIP() << "cannot listen on 127.0.0.1:47311: " << strerror(errno);
  }
  EvalResult r = eval("connects");
  const int heard = accept(listener, nullptr, nullptr);
  if (heard >= 0) close(heard);
  close(listener);
  EXPECT_STATUS(r, Status::ok);
  EXPECT_LT(heard, 0) << "the candidate reached 127.0.0.1:47311\n" << r.stderr_text;
  EXPECT_EQ(r.stderr_text.find("hostile: connected"), std::string::npos) << r.stderr_text;
  if (no_filter.empty()) {
    EXPECT_NE(r.stderr_text.find("hostile: socket refused: Operation not permitted"),
              std::string::npos)
        << r.stderr_text;
  }
  if (no_namespace.empty()) {
    EXPECT_NE(r.stderr_text.find("hostile: interface lo\n"), std::string::npos) << r.stderr_text;
    size_t interfaces = 0;
    for (size_t p = 0; (p = r.stderr_text.find("hostile: interface ", p)) != std::string::npos;
         ++p)
      ++interfaces;
    EXPECT_EQ(interfaces, 1u) << "more than loopback in sight\n" << r.stderr_text;
  }
}

TEST_F(Hostile, CompileError) {
  EvalResult r = eval("compile_error");
  EXPECT_STATUS(r, Status::compile_error);
  EXPECT_NE(r.detail.find("undeclared_thing"), std::string::npos) << r.detail;
}

TEST_F(Hostile, TimeBelowTheRoofIsSuspect) {
  roof_ = test::fake_roof(1e-6, 1e-6);  // a roof so low that any real time beats it
  EvalResult r = eval("right");
  EXPECT_STATUS(r, Status::suspect);
  EXPECT_TRUE(r.timing.has_value());
}

TEST_F(Hostile, ALowStoredRoofIsMeasuredAgainBeforeCallingATimeSuspect) {
  roof_ = test::fake_roof(1e-6, 1e-6);
  int calls = 0;
  double asked = 0;
  remeasure_ = [&](double bytes) {
    ++calls;
    asked = bytes;
    Roof r = test::fake_roof(1000, 1e6);
    r.id = 42;
    return r;
  };
  EvalResult r = eval("right");
  EXPECT_STATUS(r, Status::ok);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(asked, 1.0);  // the size of the point the stored roof used
  EXPECT_EQ(r.roof_id, 42);
  // When the roof measured again is no higher, the time stays suspect.
  remeasure_ = [&](double) {
    ++calls;
    return test::fake_roof(1e-6, 1e-6);
  };
  EXPECT_STATUS(eval("right"), Status::suspect);
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace kevo
