// Rules about where things live, checked on kevo's own sources: a rule that
// is only written down drifts (the copies of "a candidate's result" once
// disagreed between the store and the named queries).
#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/paths.h"
#include "support/test_support.h"

namespace kevo {
namespace {

// kevo's C++ sources (not the tests, not the kernels it searches).
std::vector<std::filesystem::path> kevo_sources() {
  std::vector<std::filesystem::path> out;
  for (const char* dir :
       {"core", "targets", "eval", "knowledge", "synth", "search", "report", "bench", "cli"})
    for (const auto& e : std::filesystem::recursive_directory_iterator(test::repo_dir() / dir)) {
      const auto ext = e.path().extension();
      if (!e.is_regular_file() || (ext != ".cpp" && ext != ".h")) continue;
      if (e.path().string().find("/kernels/") != std::string::npos) continue;
      out.push_back(std::filesystem::relative(e.path(), test::repo_dir()));
    }
  std::sort(out.begin(), out.end());
  return out;
}

// Every read and write of the store is a method of core/store.cpp; SQL
// stands elsewhere only in kevo query's named queries, the knowledge base's
// own index and help text.
TEST(Layering, SqlLivesInTheStore) {
  const std::set<std::string> allowed = {"core/store.cpp", "cli/cmd_query.cpp", "cli/main.cpp",
                                         "knowledge/knowledge_base.cpp"};
  const std::regex sql(R"(\"[^\"\n]*\b(SELECT|INSERT INTO|DELETE FROM|UPDATE \w+ SET)\b)");
  const std::regex query_call(R"(\b(store_?|s|st)\s*(\.|->)\s*query\s*\()");
  std::vector<std::string> found;
  for (const auto& f : kevo_sources()) {
    if (allowed.count(f.string())) continue;
    const std::string text = read_text_file(test::repo_dir() / f);
    if (std::regex_search(text, sql)) found.push_back(f.string() + " (SQL in a string)");
    if (std::regex_search(text, query_call)) found.push_back(f.string() + " (Store::query)");
  }
  EXPECT_TRUE(found.empty()) << "outside core/store.cpp: " << testing::PrintToString(found);
  // and the check sees what it looks for
  EXPECT_TRUE(std::regex_search(std::string(R"(q("SELECT id FROM runs"))"), sql));
  EXPECT_TRUE(std::regex_search(std::string("store_.query(x)"), query_call));
}

// A line of C++ without its // comment.
std::string code_of(const std::string& line) {
  const size_t c = line.find("//");
  return c == std::string::npos ? line : line.substr(0, c);
}

// Generic code asks the target (targets/traits.h, Target) what is particular
// to it: no target's name, entry point or compiler figure is spelled outside
// targets/. The LLM reply parser's Markdown fence tags are language names
// that happen to match ("```cuda").
TEST(Layering, NoTargetNameOutsideTargets) {
  const std::regex name(R"re("(cpu|cuda|trainium|kevo_launch|ptxas\.[a-z_]+)")re");
  const std::set<std::string> allowed = {"synth/llm/reply.cpp"};
  std::vector<std::string> found;
  for (const auto& f : kevo_sources()) {
    if (f.begin()->string() == "targets" || allowed.count(f.string())) continue;
    std::istringstream in(read_text_file(test::repo_dir() / f));
    std::string line;
    for (int n = 1; std::getline(in, line); ++n)
      if (std::regex_search(code_of(line), name))
        found.push_back(fmt::format("{}:{}: {}", f.string(), n, line));
  }
  EXPECT_TRUE(found.empty()) << testing::PrintToString(found);
  // and the check sees what it looks for
  EXPECT_TRUE(std::regex_search(code_of(R"(if (task.target == "cuda") {)"), name));
  EXPECT_FALSE(std::regex_search(code_of(R"(x = 1;  // "cuda" in a comment)"), name));
}

}  // namespace
}  // namespace kevo
