// The cpu target's profile. The compiler's report: the vectorizer's remarks
// as gcc 12 and clang 14 print them (captured here), read per loop; end to
// end, a measured candidate among the best carries them in its profile and
// its diagnosis. The CPU's counters, read by kevo on a runner's threads.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/test_support.h"
#include "core/clock.h"
#include "targets/cpu/vectorizer_report.h"
#include "targets/runner/counters.h"

namespace kevo {
namespace {

// gcc 12.2 -O3 -march=native -fopt-info-vec-optimized-missed on a naive gemm
// (three nested loops, the inner one vectorized) and a remark on a header.
const char* kGcc =
    "/src/gemm/naive.c:24:25: missed: couldn't vectorize loop\n"
    "/src/gemm/naive.c:24:25: missed: not vectorized: multiple nested loops.\n"
    "/src/gemm/naive.c:25:27: missed: couldn't vectorize loop\n"
    "/src/gemm/naive.c:25:27: missed: not vectorized: control flow in loop.\n"
    "/src/gemm/naive.c:27:29: optimized: loop vectorized using 16 byte vectors\n"
    "/src/gemm/naive.c:27:29: optimized: loop vectorized using 32 byte vectors\n"
    "/src/gemm/naive.c:66:3: missed: statement clobbers memory: run_range (g_16, u_17);\n"
    "/abi/kevo_kernel.h:80:5: missed: couldn't vectorize loop\n";

// clang 14.0.6 -O3 -march=native -Rpass*=loop-vectorize on two loops.
const char* kClang =
    "l.c:1:43: remark: vectorized loop (vectorization width: 8, interleaved count: 4) "
    "[-Rpass=loop-vectorize]\n"
    "l.c:2:41: remark: loop not vectorized: value that could not be identified as reduction is "
    "used outside the loop [-Rpass-analysis=loop-vectorize]\n"
    "l.c:2:41: remark: loop not vectorized: could not determine number of loop iterations "
    "[-Rpass-analysis=loop-vectorize]\n"
    "l.c:2:41: remark: loop not vectorized [-Rpass-missed=loop-vectorize]\n";

double metric(const ProfileOutcome& p, const std::string& name, int64_t line = 0) {
  for (const auto& m : p.metrics)
    if (m.metric == name && m.source_line == line) return m.value;
  return -1;
}

TEST(VectorizerReport, GccRemarksPerLoop) {
  const ProfileOutcome p = parse_vectorizer_remarks(kGcc, "naive.c");
  ASSERT_TRUE(p.ok) << p.note;
  EXPECT_EQ(metric(p, "cc.vec.loops_vectorized"), 1);
  EXPECT_EQ(metric(p, "cc.vec.loops_missed"), 2);  // not the statement, not the header's loop
  EXPECT_EQ(metric(p, "cc.vec.line.vectorized", 27), 32);  // the widest version
  EXPECT_EQ(metric(p, "cc.vec.line.missed", 24), 1);
  EXPECT_EQ(metric(p, "cc.vec.line.missed", 66), -1);
  EXPECT_EQ(p.why,
            "the compiler vectorized 1 of 3 loops (up to 32-byte vectors); not vectorized: line 24 "
            "(multiple nested loops), line 25 (control flow in loop)");
}

TEST(VectorizerReport, ClangRemarksPerLoop) {
  const ProfileOutcome p = parse_vectorizer_remarks(kClang, "l.c");
  ASSERT_TRUE(p.ok) << p.note;
  EXPECT_EQ(metric(p, "cc.vec.line.vectorized", 1), 8);
  EXPECT_EQ(metric(p, "cc.vec.line.missed", 2), 1);
  EXPECT_EQ(p.why,
            "the compiler vectorized 1 of 2 loops (up to 8 lanes); not vectorized: line 2 (value "
            "that could not be identified as reduction is used outside the loop)");
}

TEST(VectorizerReport, NothingOnTheFileIsSaid) {
  const ProfileOutcome p = parse_vectorizer_remarks(kGcc, "other.c");
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.note.find("said nothing of this file"), std::string::npos) << p.note;
  EXPECT_FALSE(parse_vectorizer_remarks("", "naive.c").ok);
}

// kevo eval on the CPU: the candidate is the best so far, so it gets the
// compiler's report, in its profile and its diagnosis, with the lines of
// its own file.
TEST(VectorizerReport, AMeasuredCandidateCarriesIt) {
  const auto dir = test::temp_dir("vectorizer-report");
  const std::string db = (dir / "kevo.db").string();
  test::store_cpu_roof(db);
  std::ofstream(dir / "task.json") << nlohmann::json{{"operator", "swiglu"},
                                                     {"shapes", {{"g", {32, 257}}}},
                                                     {"timing", {{"min_time_ms", 2}}}}
                                          .dump();
  std::ofstream(dir / "k.c") << R"(#include <math.h>
#include "kevo_kernel.h"
KEVO_EXPORT int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                            const double* s, int n_s) {
  const int64_t n = kevo_numel(&in[0]);
  const float* g = (const float*)in[0].data;
  const float* u = (const float*)in[1].data;
  float* y = (float*)out[0].data;
  for (int64_t i = 0; i < n; ++i) y[i] = g[i] * u[i];
  for (int64_t i = 0; i < n; ++i) { if (g[i] != g[i]) return KEVO_ERR_ARGS; y[i] /= 1.0f + expf(-g[i]); }
  return KEVO_OK;
}
)";
  auto r = test::run_kevo(dir, db, {"eval", "--task", "task.json", "k.c", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out)["result"];
  std::map<std::string, int64_t> lines;
  for (const auto& m : j["profile"])
    if (m.contains("line")) lines[m["metric"].get<std::string>()] = m["line"].get<int64_t>();
  EXPECT_EQ(lines["cc.vec.line.vectorized"], 9) << j["profile"];
  EXPECT_EQ(lines["cc.vec.line.missed"], 10) << j["profile"];
  const std::string why = j["diagnosis"]["why"];
  EXPECT_NE(why.find("the compiler vectorized 1 of 2 loops"), std::string::npos) << why;
  EXPECT_NE(why.find("not vectorized: line 10 ("), std::string::npos) << why;
  // The CPU's counters over the timed calls: how many hardware events the
  // machine gave, and their figures where it gave them.
  std::map<std::string, double> value;
  for (const auto& m : j["profile"]) value[m["metric"].get<std::string>()] = m["value"].get<double>();
  ASSERT_TRUE(value.count("cpu.hardware_events")) << j["profile"];
  if (value["cpu.hardware_events"] > 0) {
    EXPECT_GT(value["cpu.instructions_per_call"], 0) << j["profile"];
  } else {
    EXPECT_FALSE(value.count("cpu.ipc")) << j["profile"];
  }
}

// Counters opened on another process's threads, one of which it starts
// after they were opened, count both; a machine without hardware counters
// says why and still counts the software event.
TEST(CpuCounters, CountAnotherProcessesThreadsFromOutside) {
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char c;
    if (read(go[0], &c, 1) != 1) _exit(1);
    // Busy on this thread and on one started now, then sleeps (switched out).
    std::atomic<bool> stop{false};
    std::thread t([&] {
      volatile double x = 1;
      while (!stop) x = x * 1.0000001 + 1e-9;
    });
    const double end = monotonic_seconds() + 0.2;
    volatile double y = 1;
    while (monotonic_seconds() < end) y = y * 1.0000001 + 1e-9;
    stop = true;
    t.join();
    for (int i = 0; i < 5; ++i) usleep(2000);
    _exit(0);
  }
  runner::ThreadCounters counters = runner::ThreadCounters::open(child);
  ASSERT_EQ(write(go[1], "g", 1), 1);
  usleep(300000);  // the child's work, before it exits and its counts go with it
  const std::map<std::string, double> counts = counters.read();
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  if (counts.empty()) GTEST_SKIP() << "no counter could be opened here: " << counters.why_not();
  EXPECT_GE(counts.at("context_switches"), 1);  // the sleeps
  if (!counters.why_not().empty()) {
    EXPECT_NE(counters.why_not().find("perf_event_open"), std::string::npos) << counters.why_not();
    EXPECT_EQ(counts.count("cycles"), 0u);
  } else {
    EXPECT_GT(counts.at("instructions"), 1e6);  // 0.2 s of two busy threads
    EXPECT_GT(counts.at("cycles"), 1e6);
  }
}

}  // namespace
}  // namespace kevo
