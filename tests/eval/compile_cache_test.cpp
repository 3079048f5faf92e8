#include "eval/compile_cache.h"

#include <gtest/gtest.h>

#include "core/paths.h"
#include "support/bias_gelu.h"
#include "support/test_support.h"

namespace kevo {
namespace {

TEST(CompileCache, SecondCompileIsAHit) {
  auto dir = test::temp_dir("ccache");
  CompileCache cache(dir);
  auto target = make_target("cpu");
  Task task = test::quick_task("swiglu", {{"g", {4, 8}}});
  auto src_path = test::source_dir() / "eval" / "kernels" / "right.c";
  std::string src = read_text_file(src_path);
  auto first = cache.get(*target, task, src, src_path, "c", {{"VEC", 4}});
  ASSERT_TRUE(first.ok) << first.log;
  EXPECT_FALSE(first.cache_hit);
  EXPECT_TRUE(std::filesystem::exists(first.artifact));
  auto second = cache.get(*target, task, src, src_path, "c", {{"VEC", 4}});
  EXPECT_TRUE(second.ok);
  EXPECT_TRUE(second.cache_hit);
  EXPECT_EQ(second.artifact, first.artifact);
  // Anything that changes the artifact changes the key.
  auto other_knobs = cache.key(*target, task, src, "c", {{"VEC", 8}});
  EXPECT_NE(other_knobs, first.key);
  EXPECT_NE(cache.key(*target, task, src + " ", "c", {{"VEC", 4}}), first.key);
  Task o2 = test::quick_task("swiglu", {{"g", {4, 8}}}, {{"compile", {{"flags", {"-O2"}}}}});
  EXPECT_NE(cache.key(*target, o2, src, "c", {{"VEC", 4}}), first.key);
}

// The task's timed shapes reach the compiler as defines (a kernel may build a
// fast path for them), and so reach the key: the same source at another shape
// is another artifact.
TEST(CompileCache, TheTasksShapesReachTheCompilerAndTheKey) {
  Task task = test::quick_task("rmsnorm", {{"x", {8, 64}}});
  EXPECT_EQ(shape_defines(task),
            (std::vector<std::string>{"KEVO_RANK_x=2", "KEVO_DIM_x_0=8", "KEVO_DIM_x_1=64",
                                      "KEVO_LAST_x=64", "KEVO_RANK_w=1", "KEVO_DIM_w_0=64",
                                      "KEVO_LAST_w=64", "KEVO_RANK_y=2", "KEVO_DIM_y_0=8",
                                      "KEVO_DIM_y_1=64", "KEVO_LAST_y=64"}));
  auto dir = test::temp_dir("ccache-shapes");
  CompileCache cache(dir);
  auto target = make_target("cpu");
  auto src_path = dir / "shaped.c";
  const std::string src =
      "#include \"kevo_kernel.h\"\n"
      "#if !defined(KEVO_LAST_x) || KEVO_LAST_x != 64 || KEVO_DIM_x_0 != 8 || KEVO_RANK_w != 1\n"
      "#error \"not the task's shape\"\n"
      "#endif\n"
      "int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,\n"
      "                const double* s, int ns) { return KEVO_OK; }\n";
  auto right = cache.get(*target, task, src, src_path, "c", {});
  EXPECT_TRUE(right.ok) << right.log;
  Task other = test::quick_task("rmsnorm", {{"x", {8, 96}}});
  auto wrong = cache.get(*target, other, src, src_path, "c", {});
  EXPECT_FALSE(wrong.ok);
  EXPECT_FALSE(wrong.cache_hit);
  EXPECT_NE(wrong.log.find("not the task's shape"), std::string::npos) << wrong.log;
  EXPECT_NE(wrong.key, right.key);
}

// A defined operator may name a tensor so that no define can carry it: that
// tensor is left out, the others are passed.
TEST(CompileCache, TensorsWhoseNamesAreNotIdentifiersAreLeftOut) {
  auto dir = test::temp_dir("ccache-shape-names");
  test::write_file(dir / "bias_gelu_ref.c", test::kBiasGeluReference);
  nlohmann::json def = nlohmann::json::parse(test::kBiasGeluDefinition);
  def["tensors"][1]["name"] = "b.0";
  Task task = parse_task({{"operator", def}, {"shapes", {{"x", {4, 10}}}}}, dir / "task.json");
  const auto defines = shape_defines(task);
  EXPECT_EQ(defines, (std::vector<std::string>{"KEVO_RANK_x=2", "KEVO_DIM_x_0=4",
                                               "KEVO_DIM_x_1=10", "KEVO_LAST_x=10",
                                               "KEVO_RANK_y=2", "KEVO_DIM_y_0=4",
                                               "KEVO_DIM_y_1=10", "KEVO_LAST_y=10"}));
}

TEST(CompileCache, ErrorsAreCachedWithTheUsersFileName) {
  auto dir = test::temp_dir("ccache-err");
  CompileCache cache(dir);
  auto target = make_target("cpu");
  Task task = test::quick_task("swiglu", {{"g", {4, 8}}});
  auto src_path = test::source_dir() / "eval" / "kernels" / "compile_error.c";
  std::string src = read_text_file(src_path);
  auto first = cache.get(*target, task, src, src_path, "c", {});
  EXPECT_FALSE(first.ok);
  EXPECT_NE(first.log.find("undeclared_thing"), std::string::npos) << first.log;
  EXPECT_NE(first.log.find(src_path.string()), std::string::npos) << first.log;
  auto second = cache.get(*target, task, src, src_path, "c", {});
  EXPECT_FALSE(second.ok);
  EXPECT_TRUE(second.cache_hit);
  EXPECT_EQ(second.log, first.log);
}

}  // namespace
}  // namespace kevo
