#include "eval/compile_cache.h"

#include <gtest/gtest.h>

#include "core/paths.h"
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
