#include "core/task.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "core/error.h"
#include "core/json_reader.h"
#include "support/test_support.h"
#include "targets/target.h"

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

TEST(Task, CleanL2IsAnotherMeasurementDirtyTheOldOne) {
  Task a = parse_task(base());
  EXPECT_EQ(a.timing.l2, "dirty");
  nlohmann::json j = base();
  j["timing"] = {{"l2", "dirty"}};
  EXPECT_EQ(parse_task(j).hash, a.hash);  // tasks stored before the key keep their hash
  j["target"] = "cuda";
  a = parse_task(j);
  j["timing"] = {{"l2", "clean"}};
  Task c = parse_task(j);
  EXPECT_EQ(c.timing.l2, "clean");
  EXPECT_NE(c.hash, a.hash);
  Task back = parse_task(c.resolved);
  EXPECT_EQ(back.timing.l2, "clean");
  EXPECT_EQ(back.hash, c.hash);
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
  expect_error({{"timing", {{"l2", "flushed"}}}}, "$.timing.l2", "expected \"dirty\" or \"clean\"");
  expect_error({{"timing", {{"l2", "clean"}}}}, "$.timing.l2", "is not for target cpu, whose runner flushes by writing only (targets that time from a clean L2: cuda)");
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

// Several timed shapes: a list, weights beside it, the first is `main`.
nlohmann::json two_shapes() {
  nlohmann::json j = base();
  j["shapes"] = {{{"x", {64, 128}}}, {{"x", {8, 128}}}};
  j["shape_weights"] = {1, 3};
  return j;
}

TEST(Task, SeveralTimedShapesWithWeights) {
  Task t = parse_task(two_shapes());
  ASSERT_TRUE(t.multi_shape());
  ASSERT_EQ(t.timed.size(), 2u);
  EXPECT_EQ(t.main.shapes[0], (Shape{64, 128}));
  EXPECT_EQ(t.timed[1].shapes[0], (Shape{8, 128}));
  EXPECT_EQ(t.weights, (std::vector<double>{1, 3}));
  EXPECT_EQ(timed_shapes_str(t), "[64, 128] x1, [8, 128] x3");
  // The resolved config parses back to the same task; the weights and the
  // second shape are in the hash.
  Task back = parse_task(t.resolved);
  EXPECT_EQ(back.hash, t.hash);
  EXPECT_EQ(back.weights, t.weights);
  nlohmann::json j = two_shapes();
  j["shape_weights"] = {1, 2};
  EXPECT_NE(parse_task(j).hash, t.hash);
  j.erase("shape_weights");
  EXPECT_EQ(parse_task(j).weights, (std::vector<double>{1, 1}));
  EXPECT_NE(parse_task(j).hash, parse_task(base()).hash);
  // One shape written as a list of one is the same task as written plainly.
  nlohmann::json one = base();
  one["shapes"] = {{{"x", {64, 128}}}};
  EXPECT_FALSE(parse_task(one).multi_shape());
  EXPECT_EQ(parse_task(one).hash, parse_task(base()).hash);
  // A copy for one shape times that shape alone.
  Task second = t.for_shape(1);
  EXPECT_FALSE(second.multi_shape());
  EXPECT_EQ(second.main.shapes[0], (Shape{8, 128}));
}

TEST(Task, SeveralTimedShapesConfigErrors) {
  auto error = [](nlohmann::json j, const std::string& path, const std::string& fragment) {
    try {
      parse_task(j);
      ADD_FAILURE() << "no error for " << j.dump();
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.path(), path) << e.what();
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  nlohmann::json j = two_shapes();
  j["shapes"] = nlohmann::json::array();
  error(j, "$.shapes", "expected at least one shape object");
  j = two_shapes();
  j["shapes"][1] = {{"x", {64, 128}}};
  error(j, "$.shapes[1]", "the same shapes as shapes[0]");
  j = two_shapes();
  j["shapes"][1] = {{"x", {8, -1}}};
  error(j, "$.shapes[1].x[1]", "expected a size >= 1");
  j = two_shapes();
  j["shape_weights"] = {1};
  error(j, "$.shape_weights", "expected a list of 2 numbers");
  j["shape_weights"] = {1, 0};
  error(j, "$.shape_weights[1]", "expected a number > 0");
  j["shape_weights"] = {1, "two"};
  error(j, "$.shape_weights[1]", "expected a number > 0");
  j = base();
  j["shape_weights"] = {2};
  error(j, "$.shape_weights", "weights need a list of shapes");
}

TEST(Task, SeveralTimedShapesDefineOnlyWhatTheyShare) {
  // Both shapes have 128 columns, not the same rows: one compile serves both,
  // so only the shared size is a define (a fast path for one shape's rows
  // would be a kernel tuned for that shape alone).
  Task t = parse_task(two_shapes());
  const std::vector<std::string> d = shape_defines(t);
  auto has = [&](const std::string& s) { return std::find(d.begin(), d.end(), s) != d.end(); };
  EXPECT_TRUE(has("KEVO_LAST_x=128"));
  EXPECT_TRUE(has("KEVO_DIM_x_1=128"));
  EXPECT_TRUE(has("KEVO_RANK_x=2"));
  EXPECT_FALSE(has("KEVO_DIM_x_0=64"));
  EXPECT_FALSE(has("KEVO_DIM_x_0=8"));
  // One shape: every size, as before.
  const std::vector<std::string> one = shape_defines(parse_task(base()));
  EXPECT_NE(std::find(one.begin(), one.end(), "KEVO_DIM_x_0=64"), one.end());
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
