// kevo knobs --task through the binary: the knob space a task's search uses
// (the config's tune_params and restrictions merged with each family's own
// @kevo knobs, the task's knob restrictions applied), for one family or all.
#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "core/process.h"
#include "support/bias_gelu.h"
#include "support/test_support.h"

namespace kevo {
namespace {

int lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

class KnobsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::temp_dir("knobs-cli");
    db_ = (dir_ / "kevo.db").string();
    // a declares VEC itself ({4, 8}, which wins over tune_params' VEC); b declares nothing.
    test::write_file(dir_ / "kernels" / "a.c", "// @kevo knob VEC 4 {4, 8}\nint a;\n");
    test::write_file(dir_ / "kernels" / "b.c", "int b;\n");
    test::write_file(dir_ / "task.json", R"({"name": "own", "operator": "swiglu",
        "shapes": {"g": [64, 64]}, "kernels": ["kernels/*.c"],
        "tune_params": {"BLOCK": [64, 128, 256], "VEC": [1, 2, 4]},
        "restrictions": ["BLOCK * VEC <= 512"]})");
  }

  ProcessResult kevo(std::vector<std::string> args) {
    return test::run_kevo(dir_, db_, std::move(args));
  }

  nlohmann::json json_of(std::vector<std::string> args) {
    args.push_back("--json");
    auto r = kevo(args);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
  }

  std::filesystem::path dir_;
  std::string db_;
};

const nlohmann::json* knob(const nlohmann::json& family, const std::string& name) {
  for (const auto& k : family["knobs"])
    if (k["name"] == name) return &k;
  return nullptr;
}

// The starts of a family at the task's shape: without the device's facts a
// start that reads SMS is skipped and says why; --fact gives them.
TEST_F(KnobsCli, StartsShowTheirPointAtTheTasksShape) {
  test::write_file(dir_ / "kernels" / "a.c",
                   "// @kevo knob VEC 4 {4, 8}\n// @kevo knob U 1 {1, 64, 128}\n"
                   "// @kevo start VEC = DIM_g_1 / 8\n// @kevo start U = SMS\nint a;\n");
  auto j = json_of({"knobs", "--task", "task.json", "a"});
  const auto& starts = j["families"][0]["start"];
  ASSERT_EQ(starts.size(), 2u) << j.dump(2);
  EXPECT_EQ(starts[0]["points"][0]["knobs"]["VEC"], 8);  // 64 / 8
  EXPECT_NE(starts[1]["points"][0]["skipped"].get<std::string>().find("SMS"), std::string::npos);
  auto f = json_of({"knobs", "--task", "task.json", "a", "--fact", "SMS=100"});
  EXPECT_EQ(f["families"][0]["start"][1]["points"][0]["knobs"]["U"], 128);  // nearest 100
  auto text = kevo({"knobs", "--task", "task.json", "a"});
  EXPECT_NE(text.out.find("  start VEC = DIM_g_1 / 8\n    -> BLOCK=64 U=1 VEC=8\n"), std::string::npos)
      << text.out;
  auto bad = kevo({"knobs", "--task", "task.json", "--fact", "SM=1"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--fact SM=1: unknown"), std::string::npos) << bad.err;
}

TEST_F(KnobsCli, TaskKnobsMergeWithTheSourcesOwn) {
  auto j = json_of({"knobs", "--task", "task.json"});
  ASSERT_EQ(j["families"].size(), 2u) << j.dump(2);
  const auto& a = j["families"][0];
  const auto& b = j["families"][1];
  EXPECT_EQ(a["family"], "a");
  EXPECT_EQ(b["family"], "b");
  // a: BLOCK {64,128,256} x its own VEC {4,8} = 6 points; BLOCK * VEC <= 512
  // holds for 64*4, 64*8 and 128*4 only.
  EXPECT_EQ(a["points"], 6);
  EXPECT_EQ(a["valid_points"], 3);
  ASSERT_NE(knob(a, "VEC"), nullptr);
  EXPECT_EQ((*knob(a, "VEC"))["values"], nlohmann::json({4, 8}));
  EXPECT_EQ((*knob(a, "VEC"))["from"], "source");
  EXPECT_EQ((*knob(a, "BLOCK"))["from"], "tune_params");
  EXPECT_EQ((*knob(a, "BLOCK"))["default"], 64);  // the first value listed
  // b: BLOCK x VEC {1,2,4} = 9 points; all but 256*4 = 1024 valid.
  EXPECT_EQ(b["points"], 9);
  EXPECT_EQ(b["valid_points"], 8);
  EXPECT_EQ((*knob(b, "VEC"))["from"], "tune_params");
  EXPECT_EQ(b["require"], nlohmann::json({"BLOCK * VEC <= 512"}));
  EXPECT_EQ(b["restrictions"], nlohmann::json({"BLOCK * VEC <= 512"}));
  EXPECT_EQ(j["valid_points"], 11);

  // One family, by name or by file; the text view says where each knob is from.
  auto one = json_of({"knobs", "--task", "task.json", "b"});
  ASSERT_EQ(one["families"].size(), 1u);
  EXPECT_EQ(one["families"][0]["valid_points"], 8);
  auto text = kevo({"knobs", "--task", "task.json", "kernels/a.c"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("3 of 6 points valid"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("(@kevo, over tune_params)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("require BLOCK * VEC <= 512  (restrictions)"), std::string::npos)
      << text.out;

  // Without the task, a.c's space is its own VEC alone.
  auto plain = json_of({"knobs", "kernels/a.c"});
  EXPECT_EQ(plain["points"], 2);
}

TEST_F(KnobsCli, TheTasksKnobRestrictionsApply) {
  test::write_file(dir_ / "pinned.json", R"({"operator": "swiglu", "shapes": {"g": [64, 64]},
      "kernels": ["kernels/*.c"], "tune_params": {"BLOCK": [64, 128, 256], "VEC": [1, 2, 4]},
      "restrictions": ["BLOCK * VEC <= 512"], "knobs": {"BLOCK": [128, 256]},
      "search": {"families": ["b"]}})");
  auto j = json_of({"knobs", "--task", "pinned.json"});
  ASSERT_EQ(j["families"].size(), 2u);
  // a: BLOCK {128,256} x VEC {4,8}: only 128*4 is valid.
  EXPECT_EQ(j["families"][0]["points"], 4);
  EXPECT_EQ(j["families"][0]["valid_points"], 1);
  EXPECT_FALSE(j["families"][0]["searched"].get<bool>());
  // b: BLOCK {128,256} x VEC {1,2,4}: 256*4 is not.
  EXPECT_EQ(j["families"][1]["points"], 6);
  EXPECT_EQ(j["families"][1]["valid_points"], 5);
  EXPECT_TRUE(j["families"][1]["searched"].get<bool>());
  EXPECT_EQ((*knob(j["families"][1], "BLOCK"))["default"], 128);
}

TEST_F(KnobsCli, EveryShippedFamilyOfTheOperator) {
  test::write_file(dir_ / "plain.json", R"({"operator": "swiglu", "shapes": {"g": [64, 64]}})");
  auto j = json_of({"knobs", "--task", "plain.json"});
  // The operator's shipped cpu families, as kevo operators lists them.
  std::vector<std::string> want;
  for (const auto& op : json_of({"operators"}))
    if (op["name"] == "swiglu") want = op["cpu_families"].get<std::vector<std::string>>();
  ASSERT_FALSE(want.empty());
  std::vector<std::string> got;
  for (const auto& f : j["families"]) got.push_back(f["family"].get<std::string>());
  EXPECT_EQ(got, want);
  // No tune_params: each family's space is its source's own.
  for (const auto& f : j["families"]) {
    auto own = json_of({"knobs", f["kernel"].get<std::string>()});
    EXPECT_EQ(f["points"], own["points"]) << f["family"];
    EXPECT_EQ(f["valid_points"], own["valid_points"]) << f["family"];
  }
}

TEST_F(KnobsCli, ADefinedOperatorsFamilies) {
  test::write_file(dir_ / "ops" / "bias_gelu.json", test::kBiasGeluDefinition);
  test::write_file(dir_ / "ops" / "bias_gelu_ref.c", test::kBiasGeluReference);
  test::write_file(dir_ / "bg" / "fast.c", test::bias_gelu_fast());
  test::write_file(dir_ / "bg" / "naive.c", test::bias_gelu_naive());
  test::write_file(dir_ / "bg.json", R"({"operator": "ops/bias_gelu.json",
      "shapes": {"x": [64, 1000]}, "kernels": ["bg/*.c"], "tune_params": {"UNROLL": [1, 2, 4, 8]},
      "restrictions": ["UNROLL != 2"]})");
  auto j = json_of({"knobs", "--task", "bg.json"});
  ASSERT_EQ(j["families"].size(), 2u);
  EXPECT_EQ(j["operator"], "bias_gelu");
  for (const auto& f : j["families"]) {
    EXPECT_EQ(f["points"], 4) << f["family"];
    EXPECT_EQ(f["valid_points"], 3) << f["family"];
  }
}

// --compile builds the task's points as a search would and reports each
// one: a point that does not compile is listed and makes the exit status 1;
// --where and --limit choose the points. (The CPU compiler gives no
// register figures; the spill check on CUDA is in cuda_test.cpp.)
TEST_F(KnobsCli, CompileListsThePointsThatDoNotBuild) {
  test::write_file(dir_ / "fam" / "v.c",
                   "// @kevo knob V 1 {1, 2, 3}\n#if V == 2\n#error V 2 does not build\n#endif\n"
                   "int v_is = V;\n");
  test::write_file(dir_ / "vtask.json", R"({"name": "v", "operator": "swiglu",
      "shapes": {"g": [64, 64]}, "kernels": ["fam/v.c"]})");
  auto all = kevo({"knobs", "--task", "vtask.json", "--compile", "--json"});
  EXPECT_EQ(all.exit_code, 1) << all.err;
  const auto j = nlohmann::json::parse(all.out);
  ASSERT_EQ(j["families"].size(), 1u);
  const auto& f = j["families"][0];
  EXPECT_EQ(f["matching_points"], 3);
  EXPECT_EQ(f["compiled_points"], 3);
  EXPECT_EQ(f["failed"], 1);
  EXPECT_EQ(f["spilled"], 0);
  for (const auto& p : f["points"]) {
    EXPECT_EQ(p["compiled"], p["knobs"]["V"] != 2) << p.dump();
    if (p["knobs"]["V"] == 2) {
      EXPECT_NE(p["log"].get<std::string>().find("does not build"), std::string::npos);
    }
  }
  // progress on stderr, one line per point
  EXPECT_NE(all.err.find("[3/3]"), std::string::npos) << all.err;

  auto text = kevo({"knobs", "--task", "vtask.json", "--compile"});
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.out.find("failed to compile: V=2"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("0 spill, 1 failed to compile"), std::string::npos) << text.out;

  auto good = json_of({"knobs", "--task", "vtask.json", "--compile", "--where", "V != 2"});
  ASSERT_EQ(good["families"].size(), 1u);
  EXPECT_EQ(good["families"][0]["matching_points"], 2);
  EXPECT_EQ(good["families"][0]["failed"], 0);

  auto one = kevo({"knobs", "--task", "vtask.json", "--compile", "--limit", "1", "--json"});
  const auto o = nlohmann::json::parse(one.out);
  EXPECT_EQ(o["families"][0]["matching_points"], 3);
  EXPECT_EQ(o["families"][0]["compiled_points"], 1);
  EXPECT_EQ(one.exit_code, o["families"][0]["failed"] == 1 ? 1 : 0);
}

TEST_F(KnobsCli, BadInputIsOneLine) {
  test::write_file(dir_ / "bad.json", R"({"operator": "swiglu", "shapes": {"g": [64, 64]},
      "tune_params": {"BLOCK": []}})");
  test::write_file(dir_ / "badr.json", R"({"operator": "swiglu", "shapes": {"g": [64, 64]},
      "tune_params": {"BLOCK": [1]}, "restrictions": ["BLOK > 0"]})");
  struct Case {
    std::vector<std::string> args;
    std::string fragment;
  };
  for (const Case& c : std::vector<Case>{
           {{"knobs", "--task", "bad.json"}, "$.tune_params.BLOCK: expected a non-empty list"},
           {{"knobs", "--task", "badr.json"}, "$.restrictions[0]: 'BLOK > 0'"},
           {{"knobs", "--task", "missing.json"}, "missing.json"},
           {{"knobs", "--task", "task.json", "c"}, "c: no such file, and no family of task own"},
           {{"knobs", "--task", "task.json", "a", "b"}, "unexpected argument 'b'"},
           {{"knobs"}, "KERNEL is required (or --task TASK)"},
           {{"knobs", "kernels/a.c", "--compile"}, "--compile needs --task TASK"},
           {{"knobs", "--task", "task.json", "--where", "VEC > 4"}, "--where goes with --compile"},
           {{"knobs", "--task", "task.json", "a", "--compile", "--where", "VEX > 4"},
            "--where 'VEX > 4': unknown name 'VEX'"},
           {{"knobs", "--task", "task.json", "a", "--compile", "--limit", "0"},
            "--limit expects a positive integer"}}) {
    auto r = kevo(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("kevo: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(c.fragment), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace kevo
