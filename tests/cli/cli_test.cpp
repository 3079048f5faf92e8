// The kevo binary as a user runs it: exit codes, one-line errors, --help,
// --json, and what it stores.
#include <fstream>

#include <gtest/gtest.h>

#include "core/process.h"
#include "core/store.h"
#include "support/test_support.h"
#include "targets/target.h"

namespace kevo {
namespace {

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::temp_dir("cli");
    db_ = (dir_ / "kevo.db").string();
    // A stored roof for this machine spares each eval the calibration.
    Store s(db_);
    Roof roof = test::fake_roof(1000, 1e6);
    roof.host_key = make_target("cpu")->host_key();
    s.add_roof(roof);
    write("task.json", R"({"operator": "swiglu", "shapes": {"g": [32, 257]},
                           "timing": {"min_time_ms": 2, "min_samples": 3}})");
  }

  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }

  ProcessResult kevo(std::vector<std::string> args) {
    SpawnOptions o;
    o.argv = {test::kevo_binary().string()};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    o.cwd = dir_;
    o.env = {"KEVO_DB=" + db_};
    return run_process(o, 300, 1 << 20);
  }

  std::string kernel(const std::string& name) {
    return (test::source_dir() / "eval" / "kernels" / (name + ".c")).string();
  }

  std::filesystem::path dir_;
  std::string db_;
};

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

TEST_F(Cli, HelpListsTheCommands) {
  auto r = kevo({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* c : {"eval", "calibrate", "query", "targets", "operators", "knobs"})
    EXPECT_NE(r.out.find(c), std::string::npos) << c;
  for (const char* c : {"eval", "calibrate", "query", "targets", "operators", "knobs"}) {
    auto h = kevo({c, "--help"});
    EXPECT_EQ(h.exit_code, 0) << c;
    EXPECT_NE(h.out.find("usage: kevo "), std::string::npos) << c;
  }
}

TEST_F(Cli, BadInputIsOneLineAndExitTwo) {
  for (std::vector<std::string> args :
       {std::vector<std::string>{"frobnicate"}, {"eval", kernel("right")},
        {"eval", "--task", "missing.json", kernel("right")}, {"eval", "--bogus"},
        {"eval", "--task", "task.json", kernel("right"), "--knob", "VEC"},
        {"eval", "--task", "task.json", kernel("right"), "--knob", "VEC=4"},
        {"query", "SELEKT 1"}, {"calibrate", "--target", "tpu"}, {"knobs", "nope.c"}}) {
    auto r = kevo(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << " " << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("kevo: ", 0), 0u) << r.err;
  }
}

TEST_F(Cli, ConfigErrorsNameTheJsonPath) {
  write("bad.json", R"({"operator": "swiglu", "shapes": {"g": [32, 257]}, "timing": {"min_tme_ms": 2}})");
  auto r = kevo({"eval", "--task", "bad.json", kernel("right")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("$.timing.min_tme_ms: unknown key"), std::string::npos) << r.err;
  write("syntax.json", "{\"operator\": \n\"swiglu\",, }");
  r = kevo({"eval", "--task", "syntax.json", kernel("right")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("syntax.json:2:"), std::string::npos) << r.err;
}

TEST_F(Cli, EvalPrintsAVerdictAndStoresIt) {
  auto r = kevo({"eval", "--task", "task.json", kernel("right")});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict   ok"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("median"), std::string::npos);
  EXPECT_NE(r.out.find("roofline"), std::string::npos);

  auto q = kevo({"query", "SELECT e.status, c.family, COUNT(s.seq) AS n FROM evaluations e "
                          "JOIN candidates c ON c.id = e.candidate_id "
                          "JOIN samples s ON s.evaluation_id = e.id GROUP BY e.id",
                 "--json"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  auto rows = nlohmann::json::parse(q.out);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["status"], "ok");
  EXPECT_EQ(rows[0]["family"], "right");
  EXPECT_GE(rows[0]["n"].get<int>(), 3);

  auto csv = kevo({"query", "SELECT status, family FROM evaluations JOIN candidates "
                            "ON candidates.id = candidate_id", "--csv"});
  EXPECT_EQ(csv.out, "status,family\nok,right\n");
  auto table = kevo({"query", "SELECT status FROM evaluations"});
  EXPECT_NE(table.out.find("(1 row)"), std::string::npos) << table.out;
}

TEST_F(Cli, EvalJsonAndFailingVerdicts) {
  auto r = kevo({"eval", "--task", "task.json", kernel("wrong"), "--json"});
  EXPECT_EQ(r.exit_code, 1);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["result"]["status"], "mismatch");
  EXPECT_FALSE(j["result"]["checks"].back()["passed"].get<bool>());
  auto c = kevo({"eval", "--task", "task.json", kernel("segfault")});
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_NE(c.out.find("verdict   crash"), std::string::npos) << c.out;
}

TEST_F(Cli, KnobsOperatorsTargets) {
  write("k.c", "// @kevo knob A 2 {1, 2, 4}\n// @kevo knob B 1 {1, 2}\n// @kevo require A * B <= 4\n");
  auto k = kevo({"knobs", "k.c", "--json"});
  ASSERT_EQ(k.exit_code, 0) << k.err;
  auto j = nlohmann::json::parse(k.out);
  EXPECT_EQ(j["points"], 6);
  EXPECT_EQ(j["valid_points"], 5);
  auto o = kevo({"operators", "--json"});
  ASSERT_EQ(o.exit_code, 0);
  auto ops = nlohmann::json::parse(o.out);
  EXPECT_EQ(ops.size(), 6u);
  auto t = kevo({"targets"});
  EXPECT_EQ(t.exit_code, 0);
  EXPECT_NE(t.out.find("cpu       available"), std::string::npos) << t.out;
}

TEST_F(Cli, CalibrateMeasuresAndStores) {
  auto r = kevo({"calibrate", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["bandwidth"].empty());
  for (const auto& p : j["bandwidth"]) EXPECT_GT(p["gbps"].get<double>(), 0);
  ASSERT_FALSE(j["peak"].empty());
  EXPECT_GT(j["peak"][0]["gflops"].get<double>(), 0);
  auto q = kevo({"query", "SELECT COUNT(*) AS n FROM roofs", "--json"});
  EXPECT_EQ(nlohmann::json::parse(q.out)[0]["n"], 2);
}

}  // namespace
}  // namespace kevo
