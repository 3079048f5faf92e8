// A user's own operator end to end through the kevo binary: fused bias +
// GELU(tanh), defined in the task's directory with its C reference and two
// seed families; kevo eval's verdicts and kevo run's choice of family. And an
// operator whose tensors have dtypes of their own and whose outputs are
// compared each its own way.
#include <gtest/gtest.h>

#include "core/process.h"
#include "core/store.h"
#include "support/bias_gelu.h"
#include "support/scale_rowmax.h"
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

// bf16 and f32 tensors side by side (task dtype f32), y compared within
// f32's tolerance and z exactly.
class MixedDtypeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::temp_dir("mixed-dtype-cli");
    db_ = (dir_ / "kevo.db").string();
    test::store_cpu_roof(db_);  // no command calibrates
    test::write_file(dir_ / "ops" / "scale_rowmax.json", test::kScaleRowmaxDefinition);
    test::write_file(dir_ / "ops" / "scale_rowmax_ref.c", test::kScaleRowmaxReference);
    test::write_file(dir_ / "right.c", test::scale_rowmax_right());
    test::write_file(dir_ / "wrong.c", test::scale_rowmax_wrong());
    test::write_file(dir_ / "near.c", test::scale_rowmax_near());
    write_task("task.json", nlohmann::json::object());
  }

  void write_task(const std::string& name, const nlohmann::json& extra) {
    nlohmann::json t = {{"name", "scale-rowmax"},
                        {"operator", "ops/scale_rowmax.json"},
                        {"shapes", {{"x", {64, 300}}}},
                        {"timing", {{"min_time_ms", 2}, {"min_samples", 3}}}};
    t.update(extra);
    test::write_file(dir_ / name, t.dump());
  }

  // kevo eval --json's result.
  nlohmann::json eval(const std::string& kernel, const std::string& task = "task.json") {
    auto r = test::run_kevo(dir_, db_, {"eval", "--task", task, kernel, "--json"});
    if (r.out.empty()) {
      ADD_FAILURE() << "no output: " << r.err;
      return nlohmann::json::object();
    }
    return nlohmann::json::parse(r.out)["result"];
  }

  std::filesystem::path dir_;
  std::string db_;
};

TEST_F(MixedDtypeCli, EachTensorHasItsOwnDtype) {
  // The kernel refuses any other dtypes than the definition's: ok means the
  // runner passed bf16 x, f32 s, f32 y and bf16 z, sized and compared as such.
  nlohmann::json right = eval("right.c");
  EXPECT_EQ(right["status"], "ok") << right.dump();
  EXPECT_EQ(right["checks"].size(), 5u) << right.dump();  // with the last timed calls

  nlohmann::json wrong = eval("wrong.c");
  EXPECT_EQ(wrong["status"], "mismatch") << wrong.dump();
  const auto& bad = wrong["checks"].back();
  EXPECT_EQ(bad["first_mismatch"]["tensor"], "y") << wrong.dump();
  EXPECT_EQ(bad["failed_outputs"], nlohmann::json({"y"})) << wrong.dump();
}

TEST_F(MixedDtypeCli, OnlyTheStrictOutputFailsAndTheReportNamesIt) {
  nlohmann::json near = eval("near.c");
  EXPECT_EQ(near["status"], "mismatch") << near.dump();
  const auto& bad = near["checks"].back();
  EXPECT_EQ(bad["failed_outputs"], nlohmann::json({"z"})) << near.dump();
  EXPECT_EQ(bad["first_mismatch"]["tensor"], "z") << near.dump();
  EXPECT_EQ(bad["first_mismatch"]["compare"], "exact") << near.dump();
  const std::string detail = near["detail"].get<std::string>();
  EXPECT_NE(detail.find("first at z["), std::string::npos) << detail;
  EXPECT_NE(detail.find("(compared by exact)"), std::string::npos) << detail;

  // The store's first mismatch names the output too.
  Store store(db_, true);
  QueryResult q = store.query(
      "SELECT first_mismatch FROM evaluations WHERE status = 'mismatch' "
      "ORDER BY id DESC LIMIT 1");
  ASSERT_EQ(q.rows.size(), 1u);
  const std::string first = sql_text(q.rows[0][0]);
  EXPECT_EQ(first.rfind("output z[", 0), 0u) << first;
  EXPECT_NE(first.find("compared by exact"), std::string::npos) << first;

  // The task relaxes z alone: one ulp is then right, and y keeps its tolerance.
  write_task("ulp.json", {{"compare", {{"z", "ulp:1"}}}});
  EXPECT_EQ(eval("near.c", "ulp.json")["status"], "ok");
  EXPECT_EQ(eval("wrong.c", "ulp.json")["status"], "mismatch");
  // One mode for every output: exact fails y as well.
  write_task("exact.json", {{"compare", "exact"}});
  nlohmann::json all = eval("near.c", "exact.json");
  EXPECT_EQ(all["checks"].back()["failed_outputs"], nlohmann::json({"y", "z"})) << all.dump();
}

TEST_F(MixedDtypeCli, BadDtypeAndCompareKeysAreOneLineNamingTheKey) {
  auto error_of = [&](const nlohmann::json& extra, const nlohmann::json& definition_edit) {
    nlohmann::json d = nlohmann::json::parse(test::kScaleRowmaxDefinition);
    d.merge_patch(definition_edit);
    test::write_file(dir_ / "ops" / "edited.json", d.dump());
    nlohmann::json t = extra;
    t["operator"] = "ops/edited.json";
    write_task("bad.json", t);
    auto r = test::run_kevo(dir_, db_, {"eval", "--task", "bad.json", "right.c"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    return r.err;
  };
  nlohmann::json tensors = nlohmann::json::parse(test::kScaleRowmaxDefinition)["tensors"];
  tensors[0]["dtype"] = "fp8";
  std::string e = error_of(nlohmann::json::object(), {{"tensors", tensors}});
  EXPECT_NE(e.find("edited.json: $.tensors[0].dtype: unknown dtype 'fp8' (expected one of: f32"),
            std::string::npos)
      << e;
  e = error_of({{"compare", {{"w", "exact"}}}}, nlohmann::json::object());
  EXPECT_NE(e.find("$.compare.w: no output 'w' to compare (outputs: y, z)"), std::string::npos)
      << e;
  e = error_of({{"compare", {{"z", "ulp"}}}}, nlohmann::json::object());
  EXPECT_NE(e.find("$.compare.z: bad comparison 'ulp'"), std::string::npos) << e;
}

}  // namespace
}  // namespace kevo
