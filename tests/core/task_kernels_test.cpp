// What a task brings besides its operator: seed files by glob, knobs declared
// in the config (tune_params, restrictions), and a plain kernel's entry.
#include <fstream>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/space.h"
#include "core/task.h"
#include "search/families.h"
#include "support/test_support.h"

namespace kevo {
namespace {

void write(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

nlohmann::json swiglu(nlohmann::json extra) {
  nlohmann::json c = {{"operator", "swiglu"}, {"shapes", {{"g", {32, 257}}}}};
  c.update(extra);
  return c;
}

// The message of the ConfigError `config` raises, or "" when it loads.
std::string config_error(const nlohmann::json& config) {
  try {
    parse_task(config);
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    return e.what();
  }
  return "";
}

std::vector<std::string> stems(const std::vector<std::filesystem::path>& files) {
  std::vector<std::string> out;
  for (const auto& f : files) out.push_back(f.stem().string());
  return out;
}

TEST(TaskKernels, GlobsFormTheFamilies) {
  auto dir = test::temp_dir("task-kernels");
  write(dir / "kernels" / "b.c", "int x;\n");
  write(dir / "kernels" / "a.c", "int x;\n");
  write(dir / "kernels" / "notes.txt", "not a kernel\n");
  write(dir / "extra" / "fast.c", "int x;\n");
  write(dir / "task.json", swiglu({{"kernels", {"kernels/*.c", "extra/fast.c"}}}).dump());
  Task t = load_task(dir / "task.json");
  EXPECT_EQ(stems(t.kernel_files), (std::vector<std::string>{"a", "b", "fast"}));
  // They replace the shipped families; search.families still filters.
  EXPECT_EQ(stems(family_files(t, {})), (std::vector<std::string>{"a", "b", "fast"}));
  EXPECT_EQ(stems(family_files(t, {"fast"})), (std::vector<std::string>{"fast"}));
  EXPECT_THROW(family_files(t, {"naive"}), UserError);

  write(dir / "none.json", swiglu({{"kernels", {"kernels/*.c", "missing/*.cu"}}}).dump());
  try {
    load_task(dir / "none.json");
    FAIL() << "a glob that matches nothing loaded";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "$.kernels[1]") << e.what();
  }
  write(dir / "extra" / "a.c", "int y;\n");
  write(dir / "dup.json", swiglu({{"kernels", {"kernels/*.c", "extra/*.c"}}}).dump());
  try {
    load_task(dir / "dup.json");
    FAIL() << "two families named 'a' loaded";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'a'"), std::string::npos) << e.what();
  }
}

TEST(TaskKernels, ConfigKnobsSpanTheSpace) {
  const std::vector<int64_t> bx = {32, 64, 128, 256}, tile = {1, 2, 4};
  Task t =
      parse_task(swiglu({{"tune_params", {{"block_size_x", bx}, {"tile", tile}}},
                         {"restrictions", nlohmann::json::array({"block_size_x * tile <= 256"})}}));
  Family f = make_family("plain", "plain.c", "void f(void) {}\n", "c", t.config_knobs);
  size_t brute = 0;
  for (int64_t b : bx)
    for (int64_t k : tile) brute += b * k <= 256;
  EXPECT_EQ(f.space.enumerate_valid().size(), brute);
  // Kernel Tuner's convention: the first value listed is the default.
  EXPECT_EQ(f.space.defaults(), (KnobValues{{"block_size_x", 32}, {"tile", 1}}));
  // The family's text (and so its hash) is the file's own.
  EXPECT_EQ(f.text, "void f(void) {}\n");

  // A source's own declaration wins; the restriction still applies.
  Family own = make_family("own", "own.c", "// @kevo knob tile 8 {8, 16}\n", "c", t.config_knobs);
  ASSERT_TRUE(own.space.find("tile"));
  EXPECT_EQ(own.space.find("tile")->values, (std::vector<int64_t>{8, 16}));
  brute = 0;
  for (int64_t b : bx)
    for (int64_t k : {8, 16}) brute += b * k <= 256;
  EXPECT_EQ(own.space.enumerate_valid().size(), brute);

  // Which points are searched is not how one is measured: same hash.
  EXPECT_EQ(t.hash, parse_task(swiglu(nlohmann::json::object())).hash);
  EXPECT_TRUE(t.resolved.contains("tune_params"));
}

TEST(TaskKernels, BadKnobDeclarationsNameTheKey) {
  EXPECT_EQ(config_error(swiglu({{"tune_params", {{"X", {1, 2}}}},
                                 {"restrictions", nlohmann::json::array({"X * Y < 4"})}}))
                .rfind("$.restrictions[0]: ", 0),
            0u);
  EXPECT_EQ(config_error(swiglu({{"tune_params", {{"X", nlohmann::json::array()}}}}))
                .rfind("$.tune_params.X: ", 0),
            0u);
  EXPECT_EQ(
      config_error(swiglu({{"tune_params", {{"X", {1, 2.5}}}}})).rfind("$.tune_params.X[1]: ", 0),
      0u);
  EXPECT_EQ(
      config_error(swiglu({{"tune_params", {{"X", {1, 1}}}}})).rfind("$.tune_params.X[1]: ", 0),
      0u);
  EXPECT_EQ(config_error(swiglu({{"tune_params", {{"a-b", {1}}}}})).rfind("$.tune_params.a-b: ", 0),
            0u);
}

nlohmann::json cuda_entry(nlohmann::json grid, nlohmann::json args) {
  return swiglu({{"target", "cuda"},
                 {"dtype", "bf16"},
                 {"tune_params", {{"block_size_x", {128, 256}}}},
                 {"entry",
                  {{"kind", "global"},
                   {"function", "swiglu_kernel"},
                   {"args", args},
                   {"sizes", {{"N", "g[1]"}, {"M", "g[0]"}}},
                   {"block", nlohmann::json::array({"block_size_x"})},
                   {"grid", grid}}}});
}

TEST(TaskKernels, EntryNamesMustBeDeclared) {
  const nlohmann::json args = {"y", "g", "u", "M", "N"};
  Task t = parse_task(cuda_entry({"ceil_div(N, block_size_x)", "M"}, args));
  EXPECT_EQ(t.entry.function, "swiglu_kernel");
  EXPECT_EQ(t.entry.grid, (std::vector<std::string>{"ceil_div(N, block_size_x)", "M", "1"}));
  EXPECT_EQ(t.entry.block, (std::vector<std::string>{"block_size_x", "1", "1"}));
  // The entry changes the compiled program: it is part of the hash.
  EXPECT_NE(t.hash, parse_task(swiglu({{"target", "cuda"}, {"dtype", "bf16"}})).hash);

  EXPECT_EQ(config_error(cuda_entry(nlohmann::json::array({"ceil_div(N, block_size_y)"}), args))
                .rfind("$.entry.grid[0]: ", 0),
            0u);
  EXPECT_EQ(config_error(cuda_entry(nlohmann::json::array({"N; abort()"}), args))
                .rfind("$.entry.grid[0]: ", 0),
            0u);
  EXPECT_EQ(config_error(cuda_entry(nlohmann::json::array({"M"}), {"y", "g", "v"}))
                .rfind("$.entry.args[2]: ", 0),
            0u);
  nlohmann::json bad_size = cuda_entry(nlohmann::json::array({"M"}), args);
  bad_size["entry"]["sizes"]["K"] = "w[0]";
  EXPECT_EQ(config_error(bad_size).rfind("$.entry.sizes.K: ", 0), 0u);
  nlohmann::json cpu_kind = cuda_entry(nlohmann::json::array({"M"}), args);
  cpu_kind["target"] = "cpu";
  EXPECT_EQ(config_error(cpu_kind).rfind("$.entry.kind: ", 0), 0u);
}

// Found with the fuzz harness tests/fuzz/fuzz_task (a hand-made input): launch
// expressions, knob names, the entry's function and its sizes were matched with
// std::regex, which recurses per character: a long string in the config
// overflowed kevo's stack.
TEST(TaskKernels, LongStringsAreCheckedNotACrash) {
  const nlohmann::json args = {"y", "g", "u", "M", "N"};
  const std::string huge(1 << 20, 'N');
  EXPECT_EQ(config_error(cuda_entry(nlohmann::json::array({"1 + " + huge + "$"}), args))
                .rfind("$.entry.grid[0]: ", 0),
            0u);
  EXPECT_EQ(
      config_error(cuda_entry(nlohmann::json::array({huge}), args)).rfind("$.entry.grid[0]: ", 0),
      0u);  // names 'NNN...', neither a size nor a knob
  std::string sum = "M";
  for (int i = 0; i < 100000; ++i) sum += " + 1u";
  EXPECT_EQ(config_error(cuda_entry(nlohmann::json::array({sum}), args)), "");
  nlohmann::json long_size = cuda_entry(nlohmann::json::array({"M"}), args);
  long_size["entry"]["sizes"]["K"] = huge + "[0]";
  EXPECT_EQ(config_error(long_size).rfind("$.entry.sizes.K: ", 0), 0u);
  nlohmann::json long_function = cuda_entry(nlohmann::json::array({"M"}), args);
  long_function["entry"]["function"] = huge + "-";
  EXPECT_EQ(config_error(long_function).rfind("$.entry.function: ", 0), 0u);
  EXPECT_EQ(config_error(swiglu({{"tune_params", {{huge + "-", {1}}}}})).rfind("$.tune_params.", 0),
            0u);
}

}  // namespace
}  // namespace kevo
