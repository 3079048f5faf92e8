// kevo kb as a user runs it, on the fixture corpus: --json output, exit
// codes and one-line errors.
#include <fstream>

#include <gtest/gtest.h>

#include "core/process.h"
#include "support/test_support.h"

namespace kevo {
namespace {

namespace fs = std::filesystem;

class KbCli : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::temp_dir("kb-cli"); }

  ProcessResult kevo(std::vector<std::string> args, bool with_corpus = true) {
    SpawnOptions o;
    o.argv = {test::kevo_binary().string(), "kb"};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    if (with_corpus) {
      o.argv.push_back("--corpus");
      o.argv.push_back((test::source_dir() / "knowledge" / "corpus_fixture").string());
    }
    o.cwd = dir_;
    o.env = {"KEVO_CACHE_DIR=" + (dir_ / "cache").string()};
    return run_process(o, 120, 1 << 20);
  }

  fs::path dir_;
};

TEST_F(KbCli, SearchJsonRanksTheFixture) {
  auto r = kevo({"search", "warp shuffles registers", "--target", "cuda", "-k", "2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u) << r.out;
  EXPECT_EQ(j[0]["id"], "fx-warp-reduce");
  EXPECT_EQ(j[0]["kind"], "pattern");
  EXPECT_EQ(j[0]["targets"], nlohmann::json({"cuda"}));
  EXPECT_GT(j[0]["score"].get<double>(), j[1]["score"].get<double>());
  EXPECT_NE(j[0]["snippet"].get<std::string>().find("**"), std::string::npos);
  EXPECT_EQ(j[0]["source"], "test fixture");
  for (const auto& hit : j)  // cuda or any: no cpu-only document
    EXPECT_NE(hit["targets"], nlohmann::json({"cpu"})) << hit["id"];

  auto text = kevo({"search", "warp shuffles"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out.rfind("1. fx-warp-reduce  [pattern, score ", 0), 0u) << text.out;
}

TEST_F(KbCli, ShowStatsAndErrors) {
  auto show = kevo({"show", "fx-gpu", "--json"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  auto doc = nlohmann::json::parse(show.out);
  EXPECT_EQ(doc["figures"]["sm_count"], 10);
  EXPECT_EQ(doc["kind"], "hardware");

  auto stats = kevo({"stats", "--json"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  auto st = nlohmann::json::parse(stats.out);
  EXPECT_EQ(st["documents"], 14);
  EXPECT_EQ(st["by_kind"]["pattern"], 4);
  EXPECT_EQ(st["rules_files"], 1);

  std::ofstream(dir_ / "out.txt")
      << "b.cpp:7:3: error: \xe2\x80\x98undeclared_thing\xe2\x80\x99 was not declared in this "
         "scope\n";
  auto errors = kevo({"errors", "out.txt", "--json"});
  ASSERT_EQ(errors.exit_code, 0) << errors.err;
  auto e = nlohmann::json::parse(errors.out);
  ASSERT_GE(e.size(), 1u) << errors.out;
  EXPECT_EQ(e[0]["id"], "fx-gcc-undeclared");
  auto plain = kevo({"errors", "out.txt"});
  EXPECT_EQ(plain.out.rfind("fx-gcc-undeclared (gcc): ", 0), 0u) << plain.out;
}

TEST_F(KbCli, HelpAndBadInput) {
  for (std::vector<std::string> args : {std::vector<std::string>{"--help"},
                                        {"search", "--help"},
                                        {"show", "--help"},
                                        {"stats", "--help"},
                                        {"errors", "--help"}}) {
    auto r = kevo(args, false);
    EXPECT_EQ(r.exit_code, 0) << args[0] << r.err;
    EXPECT_NE(r.out.find("usage: kevo kb"), std::string::npos) << r.out;
  }
  for (std::vector<std::string> args : {std::vector<std::string>{"search", "x", "--bogus"},
                                        {"search"},
                                        {"search", "x", "-k", "0"},
                                        {"search", "x", "--target", "gpu"},
                                        {"search", "x", "--kind", "recipe"},
                                        {"show", "no-such-doc"},
                                        {"errors", "missing.txt"},
                                        {"frobnicate"}}) {
    auto r = kevo(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << " " << r.out << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind("kevo: ", 0), 0u) << r.err;
  }
  auto missing = kevo({"stats", "--corpus", "/nonexistent"}, false);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.err.rfind("kevo: no knowledge corpus at '/nonexistent'", 0), 0u) << missing.err;
  // A malformed corpus names the file and line.
  fs::copy(test::source_dir() / "knowledge" / "corpus_fixture", dir_ / "corpus",
           fs::copy_options::recursive);
  std::ofstream(dir_ / "corpus" / "patterns" / "fx-fusion.md") << "---\nid: fx-fusion\nkind: x\n";
  auto r = kevo({"stats", "--corpus", (dir_ / "corpus").string()}, false);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("fx-fusion.md:1: front matter is not closed"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kevo
