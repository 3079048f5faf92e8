#include "core/task.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "core/json_reader.h"
#include "support/test_support.h"

namespace kevo {
namespace {

nlohmann::json base() {
  return {{"operator", "scaled_softmax"}, {"shapes", {{"x", {64, 128}}}}, {"params", {{"scale", 0.5}}}};
}

TEST(Task, DefaultsFillIn) {
  Task t = parse_task(base());
  EXPECT_EQ(t.op->name(), "scaled_softmax");
  EXPECT_EQ(t.dtype, DType::f32);
  EXPECT_EQ(t.main.shapes[1], (Shape{64, 128}));
  EXPECT_EQ(t.scalars, (std::vector<double>{0.5}));
  EXPECT_EQ(t.target, "cpu");
  EXPECT_EQ(t.compile.flags, (std::vector<std::string>{"-O3", "-march=native"}));
  EXPECT_DOUBLE_EQ(t.timing.min_time_s, 0.1);
  EXPECT_EQ(t.timing.min_samples, 10);
  EXPECT_FALSE(t.check_shapes.empty());
  EXPECT_EQ(t.compare_str(), "tol:1e-07,0.0001");
  EXPECT_EQ(t.hash.size(), 16u);
}

TEST(Task, HashFollowsWhatChangesAMeasurement) {
  Task a = parse_task(base());
  nlohmann::json j = base();
  j["name"] = "renamed";
  j["limits"] = {{"timeout_s", 3}};
  EXPECT_EQ(parse_task(j).hash, a.hash);
  j["params"]["scale"] = 0.25;
  EXPECT_NE(parse_task(j).hash, a.hash);
}

TEST(Task, ResolvedConfigParsesBack) {
  Task a = parse_task(base());
  Task b = parse_task(a.resolved);
  EXPECT_EQ(a.hash, b.hash);
}

void expect_error(nlohmann::json patch, const std::string& path, const std::string& fragment) {
  nlohmann::json j = base();
  j.merge_patch(patch);
  try {
    parse_task(j);
    FAIL() << "no error for " << patch.dump();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), path) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Task, ErrorsNameTheJsonPath) {
  expect_error({{"operatr", "x"}}, "$.operatr", "unknown key (expected one of:");
  expect_error({{"operator", "softmax"}}, "$.operator", "unknown operator 'softmax' (known:");
  expect_error({{"dtype", "fp32"}}, "$.dtype", "unknown dtype 'fp32'");
  expect_error({{"dtype", 32}}, "$.dtype", "expected a string, got 32");
  expect_error({{"timing", {{"min_tme_ms", 5}}}}, "$.timing.min_tme_ms", "unknown key");
  expect_error({{"timing", {{"min_samples", 0}}}}, "$.timing.min_samples", "expected an integer >= 1");
  expect_error({{"timing", {{"min_time_ms", "fast"}}}}, "$.timing.min_time_ms", "expected a number");
  expect_error({{"limits", {{"timeout_s", -1}}}}, "$.limits.timeout_s", "expected a number > 0");
  expect_error({{"params", {{"scael", 1}}}}, "$.params.scael", "unknown key");
  expect_error({{"params", {{"scale", "big"}}}}, "$.params.scale", "expected a number");
  expect_error({{"shapes", {{"x", {1, 1, 1, 1, 1, 1, 1, 1, 64}}}}}, "$.shapes.x",
               "expected rank 1 to 8");
  expect_error({{"shapes", {{"x", {64, -1}}}}}, "$.shapes.x[1]", "expected a size >= 1");
  expect_error({{"shapes", {{"x", "64x64"}}}}, "$.shapes.x", "expected a shape like");
  expect_error({{"compare", "ulp"}}, "$.compare", "bad comparison 'ulp'");
  expect_error({{"compile", {{"flags", "-O2"}}}}, "$.compile.flags", "expected a list of strings");
  expect_error({{"knobs", {{"THREADS", "one"}}}}, "$.knobs.THREADS", "expected an integer");
  expect_error({{"check_shapes", {{{"x", {1, 1, 1, 1, 1, 1, 1, 1, 3}}}}}}, "$.check_shapes[0].x",
               "expected rank 1 to 8");
}

TEST(Task, MissingRequiredKeys) {
  try {
    parse_task({{"shapes", {{"x", {1, 1}}}}});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "$.operator");
  }
  try {
    parse_task({{"operator", "rmsnorm"}});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "$.shapes");
  }
}

TEST(Task, KnobRestrictions) {
  nlohmann::json j = base();
  j["knobs"] = {{"THREADS", 1}, {"VEC", {8, 16}}};
  Task t = parse_task(j);
  EXPECT_EQ(t.knob_restrictions.at("THREADS"), (std::vector<int64_t>{1}));
  EXPECT_EQ(t.knob_restrictions.at("VEC"), (std::vector<int64_t>{8, 16}));
}

TEST(Task, FileErrors) {
  EXPECT_THROW(load_task("/nonexistent/task.json"), UserError);
}

// Found with the fuzz harness tests/fuzz/fuzz_task (a hand-made input):
// nlohmann::json parses any depth but copies values recursively, and parse_task
// copies the config, so a config nested a few hundred thousand deep overflowed
// kevo's stack. The loader now refuses JSON nested more than kMaxJsonDepth
// deep.
TEST(Task, DeeplyNestedConfigIsAnErrorNotACrash) {
  const auto file = test::temp_dir("deep-config") / "deep.json";
  {
    std::ofstream out(file);
    out << R"({"operator": "scaled_softmax", "shapes": {"x": )" << std::string(300000, '[')
        << std::string(300000, ']') << "}}";
  }
  try {
    load_task(file);
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("deep.json: JSON nested more than 64 deep"),
              std::string::npos)
        << e.what();
  }
  // 64 levels parse; the 65th is refused.
  EXPECT_NO_THROW(parse_json_text(std::string(64, '[') + std::string(64, ']'), "t"));
  EXPECT_THROW(parse_json_text(std::string(65, '[') + std::string(65, ']'), "t"), UserError);
}

// Found by fuzz_task (a random run, in CI's smoke run): a number beyond a
// double's range is no syntax error to nlohmann but an out_of_range
// exception, which escaped the loader as something other than a UserError.
TEST(Task, NumberOutOfRangeIsAUserError) {
  const auto file = test::temp_dir("number-overflow") / "big.json";
  std::ofstream(file) << R"({"operator": "gemm", "shapes": {"A": [1021e308, 4]}})";
  try {
    load_task(file);
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("big.json: invalid JSON: number overflow parsing"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kevo
