// Every seed kernel family: its knob space parses, and its default point plus
// points spread across the valid space compile and are right on ragged shapes.
#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "core/paths.h"
#include "eval/evaluator.h"
#include "support/test_support.h"

namespace kevo {
namespace {

// Small main shapes: the checks of every task also run the ragged ones.
nlohmann::json shapes_for(const std::string& op) {
  if (op == "gemm") return {{"A", {67, 131}}, {"B", {131, 97}}};
  if (op == "gemm_swiglu") return {{"A", {67, 131}}, {"Wg", {131, 97}}};
  if (op == "swiglu") return {{"g", {33, 515}}};
  return {{"x", {33, 515}}};
}

std::vector<std::filesystem::path> families() {
  std::vector<std::filesystem::path> out;
  auto root = test::repo_dir() / "targets" / "cpu" / "kernels";
  std::error_code ec;  // a missing folder yields no families; the test below fails then
  for (const auto& op : std::filesystem::directory_iterator(root, ec))
    for (const auto& f : std::filesystem::directory_iterator(op.path(), ec))
      if (f.path().extension() == ".c" || f.path().extension() == ".cpp") out.push_back(f.path());
  std::sort(out.begin(), out.end());
  return out;
}

class SeedFamily : public ::testing::TestWithParam<std::filesystem::path> {};

TEST_P(SeedFamily, PointsAcrossTheSpaceAreCorrect) {
  const auto path = GetParam();
  const std::string op = path.parent_path().filename().string();
  Task task = test::quick_task(op, shapes_for(op),
                               {{"timing", {{"min_time_ms", 1}, {"min_samples", 2}}}});
  auto target = make_target("cpu");
  CandidateSource src{read_text_file(path), path, target->language_of(path)};
  KnobSpace space = KnobSpace::parse_source(src.text, path.string());

  // The defaults, then points spread evenly through the valid space.
  std::vector<KnobValues> points = {space.defaults()};
  size_t count = 0;
  space.for_each_valid([&](const KnobValues&) { return ++count < 2'000'000; });
  ASSERT_GT(count, 0u);
  const size_t want = std::min<size_t>(count, 6);
  size_t index = 0, next = 0, taken = 0;
  space.for_each_valid([&](const KnobValues& v) {
    if (index++ == next) {
      points.push_back(v);
      next = ++taken * (count - 1) / std::max<size_t>(want - 1, 1);
    }
    return taken < want;
  });

  Roof roof = test::fake_roof(1e6, 1e9);
  ReferenceCache refs("");
  CompileCache compiles(cache_dir());
  Evaluator ev(task, *target, roof, refs, compiles);
  for (const auto& knobs : points) {
    EvalResult r = ev.evaluate(src, knobs);
    EXPECT_EQ(r.status, Status::ok) << path.filename() << " " << knobs_to_string(knobs) << ": "
                                    << status_name(r.status) << " " << r.detail << "\n"
                                    << r.compile_log;
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, SeedFamily, ::testing::ValuesIn(families()),
                         [](const auto& info) {
                           std::string n = info.param.parent_path().filename().string() + "_" +
                                           info.param.stem().string();
                           for (auto& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

TEST(SeedFamilies, EveryOperatorHasANaiveAndAFastFamily) {
  for (const auto& op : operators().names()) {
    auto dir = test::repo_dir() / "targets" / "cpu" / "kernels" / op;
    ASSERT_TRUE(std::filesystem::exists(dir / "naive.c")) << op;
    size_t n = 0;
    for (const auto& f : std::filesystem::directory_iterator(dir)) n += f.path().extension() == ".c";
    EXPECT_GE(n, 2u) << op;
  }
}

}  // namespace
}  // namespace kevo
