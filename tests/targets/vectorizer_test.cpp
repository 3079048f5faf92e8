// The cpu target's compiler report: the vectorizer's remarks as gcc 12 and
// clang 14 print them (captured here), read per loop; and end to end, a
// measured candidate among the best carries them in its profile and its
// diagnosis.
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/test_support.h"
#include "targets/cpu/vectorizer_report.h"

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
}

}  // namespace
}  // namespace kevo
