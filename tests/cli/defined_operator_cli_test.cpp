// A user's own operator end to end through the kevo binary: fused bias +
// GELU(tanh), defined in the task's directory with its C reference and two
// seed families; kevo eval's verdicts and kevo run's choice of family.
#include <gtest/gtest.h>

#include "core/process.h"
#include "core/store.h"
#include "support/bias_gelu.h"
#include "support/test_support.h"
#include "targets/target.h"

namespace kevo {
namespace {

class DefinedOpCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::temp_dir("defined-op-cli");
    db_ = (dir_ / "kevo.db").string();
    // A stored roof for this machine spares each eval the calibration.
    test::store_cpu_roof(db_);  // no command calibrates
    test::write_file(dir_ / "ops" / "bias_gelu.json", test::kBiasGeluDefinition);
    test::write_file(dir_ / "ops" / "bias_gelu_ref.c", test::kBiasGeluReference);
    test::write_file(dir_ / "kernels" / "naive.c", test::bias_gelu_naive());
    test::write_file(dir_ / "kernels" / "fast.c", test::bias_gelu_fast());
    test::write_file(dir_ / "other" / "wrong.c", test::bias_gelu_wrong());
    test::write_file(dir_ / "other" / "crash.c", test::bias_gelu_crash());
    test::write_file(dir_ / "task.json", R"({"name": "bias-gelu", "operator": "ops/bias_gelu.json",
        "shapes": {"x": [64, 1000]}, "kernels": ["kernels/*.c"],
        "timing": {"min_time_ms": 2, "min_samples": 3},
        "search": {"strategy": "random", "stop": {"max_evals": 2}}})");
  }

  ProcessResult kevo(std::vector<std::string> args) {
    return test::run_kevo(dir_, db_, std::move(args));
  }

  std::string status_of_eval(const std::string& kernel) {
    auto r = kevo({"eval", "--task", "task.json", kernel, "--json"});
    if (r.out.empty()) return "(no output: " + r.err + ")";
    return nlohmann::json::parse(r.out)["result"]["status"].get<std::string>();
  }

  std::filesystem::path dir_;
  std::string db_;
};

TEST_F(DefinedOpCli, EvalGivesTheRightVerdicts) {
  auto ok = kevo({"eval", "--task", "task.json", "kernels/fast.c"});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("verdict   ok"), std::string::npos) << ok.out;
  EXPECT_EQ(status_of_eval("kernels/naive.c"), "ok");
  EXPECT_EQ(status_of_eval("other/wrong.c"), "mismatch");
  EXPECT_EQ(status_of_eval("other/crash.c"), "crash");
}

TEST_F(DefinedOpCli, RunFindsTheFasterFamily) {
  auto r = kevo({"run", "task.json", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["best"].is_null()) << r.out;
  // naive does the same work 32 times over: no machine makes it the faster.
  EXPECT_EQ(j["best"]["family"], "fast") << r.out;
}

TEST_F(DefinedOpCli, ExplainReportAndExportCountItsBytesAfterTheFilesMoved) {
  auto r = kevo({"run", "task.json", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto summary = nlohmann::json::parse(r.out);
  ASSERT_FALSE(summary["best"].is_null()) << r.out;
  const std::string run = std::to_string(summary["run"].get<int64_t>());
  const std::string best = std::to_string(summary["best"]["candidate"].get<int64_t>());
  // The store keeps the task self-contained: the definition, its reference
  // file (named relatively) and the kernels may all be gone.
  std::filesystem::remove_all(dir_ / "ops");
  std::filesystem::remove_all(dir_ / "kernels");
  std::filesystem::remove(dir_ / "task.json");
  const double bytes = 4.0 * (2 * 64 * 1000 + 1000);  // x, y and b in f32
  const double flops = 10.0 * 64 * 1000;

  auto e = kevo({"explain", best, "--json"});
  ASSERT_EQ(e.exit_code, 0) << e.out << e.err;
  auto j = nlohmann::json::parse(e.out);
  const auto& b = j["bounds"];
  EXPECT_EQ(b.value("bytes", 0.0), bytes) << b.dump(2);
  EXPECT_EQ(b.value("flops", 0.0), flops) << b.dump(2);
  ASSERT_TRUE(b.contains("memory")) << b.dump(2);
  EXPECT_GT(b["memory"]["floor_s"].get<double>(), 0);
  ASSERT_TRUE(b.contains("compute")) << b.dump(2);
  EXPECT_GT(b["compute"]["floor_s"].get<double>(), 0);
  EXPECT_EQ(j["task"]["shape"], "[64, 1000]");
  auto text = kevo({"explain", best});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("516.0 kB / "), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("unknown"), std::string::npos) << text.out;

  auto x = kevo({"export", run});
  ASSERT_EQ(x.exit_code, 0) << x.err;
  auto task = nlohmann::json::parse(x.out)["runs"][0]["task"];
  EXPECT_EQ(task["bytes"], bytes);
  EXPECT_EQ(task["flops"], flops);
  EXPECT_EQ(task["operator"], "bias_gelu");

  auto rep = kevo({"report", run, "--format", "json"});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  EXPECT_EQ(nlohmann::json::parse(rep.out)["run"]["bytes"], bytes);
}

TEST_F(DefinedOpCli, BadDefinitionsAndCrashingReferencesAreOneLine) {
  auto lines = [](const std::string& s) { return std::count(s.begin(), s.end(), '\n'); };
  test::write_file(dir_ / "bad.json", R"({"operator": {"name": "f", "sizes": ["N"],
      "tensors": [{"name": "x", "role": "in", "shape": ["N", "K"]},
                  {"name": "y", "role": "out", "shape": ["N"]}], "source": ""},
      "shapes": {"x": [8, 8]}})");
  auto bad = kevo({"eval", "--task", "bad.json", "kernels/fast.c"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(lines(bad.err), 1) << bad.err;
  EXPECT_NE(bad.err.find("$.operator.tensors[0].shape[1]: unknown size 'K' (declared: N)"),
            std::string::npos)
      << bad.err;

  test::write_file(dir_ / "ops" / "bias_gelu_ref.c", R"(#include "kevo_kernel.h"
int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                const double* s, int n_s) { *(volatile int*)0 = 1; return 0; })");
  auto crash = kevo({"eval", "--task", "task.json", "kernels/fast.c"});
  EXPECT_EQ(crash.exit_code, 2) << crash.out << crash.err;
  EXPECT_EQ(lines(crash.err), 1) << crash.err;
  EXPECT_NE(crash.err.find("the reference of bias_gelu crashed"), std::string::npos) << crash.err;
}

}  // namespace
}  // namespace kevo
