// kevo export and kevo compare: the export's JSON and T4 structure on a store
// filled by a small real search, and the comparison's verdicts on synthetic
// samples with known outcomes, in every output format (Markdown, JUnit XML,
// JSON) and exit status.
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>

#include "core/process.h"
#include "core/rng.h"
#include "core/store.h"
#include "report/compare.h"
#include "report/export.h"
#include "support/test_support.h"
#include "targets/target.h"

namespace kevo {
namespace {

ProcessResult kevo(const std::filesystem::path& dir, const std::string& db,
                   std::vector<std::string> args) {
  return test::run_kevo(dir, db, std::move(args), {}, 4 << 20);
}

std::string read(const std::filesystem::path& p) {
  std::ifstream f(p);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

int lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

// `n` per-call times around `median_s`: log-normal with a relative spread of
// about `sigma`, from the counter-based generator (the same every run).
std::vector<double> samples(double median_s, double sigma, int n, uint64_t stream) {
  std::vector<double> out;
  for (int i = 0; i < n; ++i) {
    const double u1 = std::max(uniform01(7, stream, 2 * static_cast<uint64_t>(i)), 1e-12);
    const double u2 = uniform01(7, stream, 2 * static_cast<uint64_t>(i) + 1);
    const double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
    out.push_back(median_s * std::exp(sigma * z));
  }
  return out;
}

TaskResult ok_task(const std::string& name, std::vector<double> s) {
  TaskResult t;
  t.name = name;
  t.hash = "hash-" + name;
  t.origin = "run 1";
  t.ok = true;
  t.candidate = 1;
  t.family = "online";
  std::vector<double> sorted = s;
  std::sort(sorted.begin(), sorted.end());
  auto q = [&](double p) {  // type 7, as the comparison computes it
    const double pos = p * static_cast<double>(sorted.size() - 1);
    const size_t lo = static_cast<size_t>(pos);
    const size_t hi = std::min(lo + 1, sorted.size() - 1);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
  };
  t.median_s = q(0.5), t.p20_s = q(0.2), t.p80_s = q(0.8);
  t.samples_s = std::move(s);
  return t;
}

TaskResult failing_task(const std::string& name) {
  TaskResult t;
  t.name = name;
  t.hash = "hash-" + name;
  t.origin = "run 1";
  t.failures = "2 compile_error";
  return t;
}

const TaskComparison& row(const std::vector<TaskComparison>& rows, const std::string& task) {
  for (const auto& r : rows)
    if (r.task == task) return r;
  throw std::runtime_error("no row for " + task);
}

TEST(Compare, ClearRegressionIsSlowerAndFailsTheGate) {
  auto rows = compare_tasks({ok_task("t", samples(1e-3, 0.01, 200, 1))},
                            {ok_task("t", samples(1.3e-3, 0.01, 200, 2))}, {});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].verdict, Verdict::slower);
  EXPECT_GT(rows[0].interval.low, 1.05);
  EXPECT_NEAR(rows[0].interval.ratio, 1.3, 0.02);
  EXPECT_LE(rows[0].interval.low, rows[0].interval.ratio);
  EXPECT_GE(rows[0].interval.high, rows[0].interval.ratio);
  EXPECT_FALSE(rows[0].noisy);
  EXPECT_TRUE(rows[0].regressed());
  EXPECT_EQ(comparison_exit_status(rows), 1);
}

TEST(Compare, ClearImprovementIsFaster) {
  auto rows = compare_tasks({ok_task("t", samples(1e-3, 0.01, 200, 1))},
                            {ok_task("t", samples(0.7e-3, 0.01, 200, 2))}, {});
  EXPECT_EQ(rows[0].verdict, Verdict::faster);
  EXPECT_LT(rows[0].interval.high, 0.95);
  EXPECT_EQ(comparison_exit_status(rows), 0);
}

// Both sides drawn from one distribution: whatever the draw, nothing changed.
TEST(Compare, PureNoiseIsUnchanged) {
  for (uint64_t k = 0; k < 20; ++k) {
    auto rows = compare_tasks({ok_task("t", samples(1e-3, 0.03, 100, 100 + k))},
                              {ok_task("t", samples(1e-3, 0.03, 100, 200 + k))}, {});
    EXPECT_EQ(rows[0].verdict, Verdict::unchanged) << "draw " << k;
    EXPECT_LT(rows[0].interval.low, 1.0 + 0.05);
    EXPECT_EQ(comparison_exit_status(rows), 0);
  }
}

// A small change inside the threshold is unchanged even when it is certain.
TEST(Compare, AChangeWithinTheThresholdIsUnchanged) {
  auto rows = compare_tasks({ok_task("t", samples(1e-3, 0.002, 500, 1))},
                            {ok_task("t", samples(1.02e-3, 0.002, 500, 2))}, {});
  EXPECT_GT(rows[0].interval.low, 1.0);            // certain...
  EXPECT_EQ(rows[0].verdict, Verdict::unchanged);  // ...but under 5%
  CompareOptions tight;
  tight.threshold = 0.01;
  EXPECT_EQ(compare_tasks({ok_task("t", samples(1e-3, 0.002, 500, 1))},
                          {ok_task("t", samples(1.02e-3, 0.002, 500, 2))}, tight)[0]
                .verdict,
            Verdict::slower);
}

// A 10% slowdown measured with a wide spread: the medians differ by more than
// the threshold, but the interval says it could be noise: inconclusive, which
// fails the gate only when asked to.
TEST(Compare, AnUncertainChangeIsInconclusive) {
  auto b = ok_task("t", samples(1e-3, 0.25, 30, 1));
  auto c = ok_task("t", samples(1.1e-3, 0.25, 30, 2));
  auto rows = compare_tasks({b}, {c}, {});
  ASSERT_GT(rows[0].interval.ratio, 1.05);  // a point estimate alone would call it slower
  EXPECT_LT(rows[0].interval.low, 1.05);
  EXPECT_EQ(rows[0].verdict, Verdict::inconclusive);
  EXPECT_TRUE(rows[0].noisy);
  EXPECT_FALSE(rows[0].failed());
  EXPECT_EQ(comparison_exit_status(rows), 0);
  CompareOptions strict;
  strict.fail_inconclusive = true;
  auto gated = compare_tasks({b}, {c}, strict);
  EXPECT_EQ(gated[0].verdict, Verdict::inconclusive);
  EXPECT_TRUE(gated[0].failed());
  EXPECT_EQ(comparison_exit_status(gated), 1);
}

TEST(Compare, NoisyTaskIsFlaggedNotHidden) {
  // A 30% shift measured with a spread as wide: flagged noisy, and the table says so.
  auto rows = compare_tasks({ok_task("wild", samples(1e-3, 0.25, 60, 1))},
                            {ok_task("wild", samples(1e-3, 0.25, 60, 2))}, {});
  EXPECT_TRUE(rows[0].noisy);
  EXPECT_GT(rows[0].baseline->spread(), 0.05);
  EXPECT_EQ(rows[0].verdict, Verdict::inconclusive);  // not "unchanged": it could be 10% either way
  const std::string md = comparison_markdown(rows, {});
  EXPECT_NE(md.find("noisy"), std::string::npos) << md;
  // Said once, with the spread it was judged against (JUnit's message too).
  const std::string xml = comparison_junit(rows, {});
  EXPECT_EQ(xml.find("noisy: noisy"), std::string::npos) << xml;
  EXPECT_NE(xml.find("spread noisy: samples p20-p80"), std::string::npos) << xml;
  auto quiet = compare_tasks({ok_task("calm", samples(1e-3, 0.005, 60, 1))},
                             {ok_task("calm", samples(1e-3, 0.005, 60, 2))}, {});
  EXPECT_FALSE(quiet[0].noisy);
}

// Independent rounds (the confirmation rounds, each in a runner of its own)
// `n` medians around `median_s` with a relative spread of about `sigma`.
TaskResult with_rounds(TaskResult t, double median_s, double sigma, int n, uint64_t stream) {
  t.rounds_s = samples(median_s, sigma, n, stream);
  return t;
}

// The same kernel measured twice, on a machine whose rounds land 10% apart
// while each round's samples agree within 1%: judged from the samples, most
// pairs would be "slower" or "faster" with a tight interval (the false alarms
// kevo compare gave before it judged by rounds); judged from the rounds, at
// most the rank test's 1 in 20 before the threshold's margin, here none of
// 200 pairs.
TEST(Compare, IdenticalRoundsDoNotAlarm) {
  int alarms = 0, by_samples_alarms = 0, inconclusive = 0;
  for (uint64_t k = 0; k < 200; ++k) {
    const double b_level = samples(1e-3, 0.10, 1, 1000 + k)[0];
    const double c_level = samples(1e-3, 0.10, 1, 2000 + k)[0];
    TaskResult b = with_rounds(ok_task("t", samples(b_level, 0.01, 100, 3000 + k)), 1e-3, 0.10, 3,
                               4000 + k);
    TaskResult c = with_rounds(ok_task("t", samples(c_level, 0.01, 100, 5000 + k)), 1e-3, 0.10, 3,
                               6000 + k);
    auto rows = compare_tasks({b}, {c}, {});
    EXPECT_EQ(rows[0].basis, Basis::rounds);
    alarms += rows[0].regressed();
    inconclusive += rows[0].verdict == Verdict::inconclusive;
    b.rounds_s.clear();
    c.rounds_s.clear();
    by_samples_alarms += compare_tasks({b}, {c}, {})[0].regressed();
  }
  std::cout << "of 200 A/A pairs, alarms judged by rounds: " << alarms
            << "; by one round's samples: " << by_samples_alarms
            << "; inconclusive: " << inconclusive << "\n";
  EXPECT_LE(alarms, 2);
  EXPECT_GT(by_samples_alarms, 40);  // what one round's samples alone would have said
  EXPECT_GT(inconclusive, 100);      // a 10% round spread cannot show a 5% change
}

// A real 30% regression whose rounds spread 2%: every pairing says so.
TEST(Compare, AShiftBeyondTheRoundsSpreadIsSlower) {
  for (uint64_t k = 0; k < 50; ++k) {
    TaskResult b = with_rounds(ok_task("t", samples(1e-3, 0.01, 50, 1)), 1e-3, 0.02, 3, 100 + k);
    TaskResult c = with_rounds(ok_task("t", samples(1.3e-3, 0.01, 50, 2)), 1.3e-3, 0.02, 3, 200 + k);
    auto rows = compare_tasks({b}, {c}, {});
    ASSERT_EQ(rows[0].basis, Basis::rounds);
    EXPECT_EQ(rows[0].verdict, Verdict::slower) << "draw " << k;
    EXPECT_NEAR(rows[0].interval.ratio, 1.3, 0.1);
    EXPECT_LE(rows[0].interval.low, rows[0].interval.ratio);
    EXPECT_GE(rows[0].interval.high, rows[0].interval.ratio);
  }
  // The verdict quotes the rounds' range and spread; a one-round side says
  // the run-to-run spread was not known.
  TaskResult b = with_rounds(ok_task("t", samples(1e-3, 0.01, 50, 1)), 1e-3, 0.02, 3, 7);
  TaskResult c = with_rounds(ok_task("t", samples(1.3e-3, 0.01, 50, 2)), 1.3e-3, 0.02, 3, 8);
  const std::string xml = comparison_junit(compare_tasks({b}, {c}, {}), {});
  EXPECT_NE(xml.find("range over the rounds"), std::string::npos) << xml;
  EXPECT_NE(xml.find("rounds "), std::string::npos) << xml;
  EXPECT_NE(xml.find("(3 rounds)"), std::string::npos) << xml;
  c.rounds_s.resize(1);
  auto one = compare_tasks({b}, {c}, {});
  EXPECT_EQ(one[0].basis, Basis::samples);
  EXPECT_NE(comparison_junit(one, {}).find("the run-to-run spread is not known"),
            std::string::npos);
}

// Rounds timed side by side (kevo compare --retime): a machine whose level
// moves 10% from round to round moves both kernels of a round alike. Judged
// by each round's ratio, the same kernel twice is unchanged and a planted 15%
// regression is slower; judged by the rounds as if they were independent,
// both would be inconclusive.
TEST(Compare, SideBySideRoundsCancelTheDrift) {
  int alarms = 0, unchanged = 0, caught = 0, unpaired_resolved = 0;
  for (uint64_t k = 0; k < 200; ++k) {
    std::vector<double> drift = samples(1.0, 0.10, 5, 9000 + k);
    std::vector<double> b_noise = samples(1.0, 0.01, 5, 10000 + k);
    std::vector<double> c_noise = samples(1.0, 0.01, 5, 11000 + k);
    for (double slowdown : {1.0, 1.15}) {
      TaskComparison r;
      r.baseline = ok_task("t", samples(1e-3, 0.01, 20, 1));
      r.current = ok_task("t", samples(1e-3, 0.01, 20, 2));
      for (size_t i = 0; i < 5; ++i) {
        r.baseline->rounds_s.push_back(1e-3 * drift[i] * b_noise[i]);
        r.current->rounds_s.push_back(1e-3 * slowdown * drift[i] * c_noise[i]);
      }
      r.interval = paired_ratio_range(r.baseline->rounds_s, r.current->rounds_s);
      judge_interval(r, {});
      if (slowdown == 1.0) {
        alarms += r.verdict == Verdict::slower;
        unchanged += r.verdict == Verdict::unchanged;
      } else {
        caught += r.verdict == Verdict::slower;
      }
      TaskComparison unpaired = r;
      unpaired.interval = round_ratio_range(r.baseline->rounds_s, r.current->rounds_s);
      judge_interval(unpaired, {});
      unpaired_resolved += unpaired.verdict != Verdict::inconclusive;
    }
  }
  std::cout << "of 200 side-by-side A/A pairs: " << alarms << " slower, " << unchanged
            << " unchanged; planted +15%: " << caught << " of 200 slower; judged unpaired, "
            << unpaired_resolved << " of 400 resolved\n";
  EXPECT_EQ(alarms, 0);
  EXPECT_GE(unchanged, 190);
  EXPECT_GE(caught, 190);
  EXPECT_LT(unpaired_resolved, 100);
}

TEST(Compare, PairedRangeIsEachRoundsRatio) {
  RatioInterval r = paired_ratio_range({1.0, 2.0, 4.0}, {1.1, 2.4, 4.2});
  EXPECT_DOUBLE_EQ(r.low, 1.05);
  EXPECT_DOUBLE_EQ(r.ratio, 1.1);
  EXPECT_DOUBLE_EQ(r.high, 1.2);
}

TEST(Compare, RoundRangeIsEveryPairing) {
  RatioInterval r = round_ratio_range({1.0, 1.2, 1.1}, {1.5, 1.3, 1.4});
  EXPECT_DOUBLE_EQ(r.ratio, 1.4 / 1.1);
  EXPECT_DOUBLE_EQ(r.low, 1.3 / 1.2);
  EXPECT_DOUBLE_EQ(r.high, 1.5 / 1.0);
}

TEST(Compare, NewMissingAndFailingTasks) {
  std::vector<TaskResult> base = {
      ok_task("kept", samples(1e-3, 0.01, 50, 1)), ok_task("gone", samples(1e-3, 0.01, 50, 2)),
      ok_task("broke", samples(1e-3, 0.01, 50, 3)), failing_task("fixed"), failing_task("stuck")};
  std::vector<TaskResult> cur = {ok_task("kept", samples(1e-3, 0.01, 50, 4)), failing_task("broke"),
                                 ok_task("fixed", samples(1e-3, 0.01, 50, 5)),
                                 failing_task("stuck"),
                                 ok_task("added", samples(1e-3, 0.01, 50, 6))};
  auto rows = compare_tasks(base, cur, {});
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(row(rows, "kept").verdict, Verdict::unchanged);
  EXPECT_EQ(row(rows, "gone").verdict, Verdict::missing);
  EXPECT_EQ(row(rows, "broke").verdict, Verdict::now_failing);
  EXPECT_EQ(row(rows, "fixed").verdict, Verdict::now_passing);
  EXPECT_EQ(row(rows, "stuck").verdict, Verdict::failing);
  EXPECT_EQ(row(rows, "added").verdict, Verdict::added);
  EXPECT_EQ(rows.back().task, "added");  // baseline order, then what is new
  EXPECT_TRUE(row(rows, "gone").failed());
  EXPECT_FALSE(row(rows, "gone").regressed());  // reported, does not fail the gate by itself
  EXPECT_TRUE(row(rows, "broke").regressed());
  EXPECT_EQ(comparison_exit_status(rows), 1);
}

TEST(Compare, ATaskWhoseConfigChangedIsMatchedByNameAndSaysSo) {
  TaskResult b = ok_task("softmax", samples(1e-3, 0.01, 50, 1));
  TaskResult c = ok_task("softmax", samples(1e-3, 0.01, 50, 2));
  c.hash = "another-hash";
  auto rows = compare_tasks({b}, {c}, {});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].verdict, Verdict::unchanged);
  EXPECT_NE(rows[0].note.find("config changed"), std::string::npos);
  EXPECT_EQ(rows[0].note.find("L2"), std::string::npos);  // the same (default) L2 state
  // A task now timed from a clean L2: the note says that is what changed.
  b.task_config = {{"timing", {{"min_time_ms", 100}}}};
  c.task_config = {{"timing", {{"min_time_ms", 100}, {"l2", "clean"}}}};
  rows = compare_tasks({b}, {c}, {});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NE(rows[0].note.find("timed from a clean L2, was dirty"), std::string::npos) << rows[0].note;
}

TEST(Compare, TheBootstrapIsReproducible) {
  auto b = samples(1e-3, 0.05, 80, 1), c = samples(1.1e-3, 0.05, 80, 2);
  RatioInterval x = bootstrap_median_ratio(b, c, 0.95, 2000, 1);
  RatioInterval y = bootstrap_median_ratio(b, c, 0.95, 2000, 1);
  EXPECT_EQ(x.low, y.low);
  EXPECT_EQ(x.high, y.high);
  RatioInterval wide = bootstrap_median_ratio(b, c, 0.99, 2000, 1);
  EXPECT_LE(wide.low, x.low);
  EXPECT_GE(wide.high, x.high);
}

// --- the command line, on export files ----------------------------------

// A kevo export with one run per task: its best candidate's samples, or a
// failing candidate.
nlohmann::json export_doc(const std::vector<std::pair<std::string, std::vector<double>>>& tasks,
                          const std::vector<std::string>& failing = {}) {
  nlohmann::json runs = nlohmann::json::array();
  int64_t id = 1;
  for (const auto& [name, s] : tasks) {
    runs.push_back({{"run", id},
                    {"task", {{"name", name}, {"hash", "hash-" + name}}},
                    {"best", id},
                    {"candidates",
                     {{{"id", id},
                       {"family", "online"},
                       {"knobs", {{"VEC", 4}}},
                       {"status", "ok"},
                       {"timing", {{"median_s", s[s.size() / 2]}, {"samples_s", s}}},
                       {"confirmation", nullptr}}}}});
    ++id;
  }
  for (const auto& name : failing) {
    runs.push_back(
        {{"run", id},
         {"task", {{"name", name}, {"hash", "hash-" + name}}},
         {"best", nullptr},
         {"candidates",
          {{{"id", id}, {"family", "online"}, {"status", "compile_error"}, {"timing", nullptr}}}}});
    ++id;
  }
  return {{"format", "kevo-export"}, {"format_version", 1}, {"runs", runs}};
}

// The rows of the Markdown table: cells by column name.
std::vector<std::map<std::string, std::string>> table_rows(const std::string& md) {
  std::vector<std::vector<std::string>> cells;
  std::istringstream in(md);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| ", 0) != 0) continue;
    std::vector<std::string> row;
    std::string cell;
    for (size_t i = 1; i < line.size(); ++i) {
      if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
        cell += '|';
        ++i;
      } else if (line[i] == '|') {
        row.push_back(cell.substr(cell.find_first_not_of(' ') == std::string::npos
                                      ? cell.size()
                                      : cell.find_first_not_of(' ')));
        while (!row.back().empty() && row.back().back() == ' ') row.back().pop_back();
        cell.clear();
      } else {
        cell += line[i];
      }
    }
    cells.push_back(row);
  }
  std::vector<std::map<std::string, std::string>> out;
  if (cells.empty()) return out;
  for (size_t r = 1; r < cells.size(); ++r) {
    EXPECT_EQ(cells[r].size(), cells[0].size()) << md;
    std::map<std::string, std::string> m;
    for (size_t c = 0; c < cells[0].size() && c < cells[r].size(); ++c)
      m[cells[0][c]] = cells[r][c];
    out.push_back(m);
  }
  return out;
}

class CompareCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::temp_dir("compare-cli");
    db_ = (dir_ / "kevo.db").string();
  }
  void write(const std::string& name, const nlohmann::json& j) {
    std::ofstream(dir_ / name) << j.dump();
  }
  ProcessResult run(std::vector<std::string> args) { return kevo(dir_, db_, std::move(args)); }
  std::filesystem::path dir_;
  std::string db_;
};

TEST_F(CompareCli, MarkdownJunitJsonAndExitStatus) {
  write("base.json", export_doc({{"steady", samples(1e-3, 0.01, 100, 1)},
                                 {"regressed", samples(2e-3, 0.01, 100, 2)},
                                 {"improved", samples(3e-3, 0.01, 100, 3)},
                                 {"gone", samples(1e-3, 0.01, 100, 4)},
                                 {"breaks", samples(1e-3, 0.01, 100, 5)}}));
  write("cur.json", export_doc({{"steady", samples(1e-3, 0.01, 100, 11)},
                                {"regressed", samples(2.6e-3, 0.01, 100, 12)},
                                {"improved", samples(2e-3, 0.01, 100, 13)},
                                {"fresh", samples(1e-3, 0.01, 100, 14)}},
                               {"breaks"}));
  auto r = run({"compare", "base.json", "cur.json", "--junit", "out/junit.xml"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  auto rows = table_rows(r.out);
  ASSERT_EQ(rows.size(), 6u) << r.out;
  std::map<std::string, std::string> verdicts;
  for (auto& row : rows) verdicts[row["task"]] = row["verdict"];
  EXPECT_EQ(verdicts["steady"], "unchanged");
  EXPECT_EQ(verdicts["regressed"], "slower");
  EXPECT_EQ(verdicts["improved"], "faster");
  EXPECT_EQ(verdicts["gone"], "missing");
  EXPECT_EQ(verdicts["breaks"], "now-failing");
  EXPECT_EQ(verdicts["fresh"], "new");
  for (auto& row : rows) {
    for (const char* col : {"baseline", "current", "change", "interval", "spread", "note"})
      EXPECT_TRUE(row.count(col)) << col;
    if (row["task"] == "regressed") {
      EXPECT_EQ(row["change"].rfind("+30", 0), 0u) << row["change"];
    }
  }

  // JUnit: one test case per task; slower, now-failing and missing fail.
  boost::property_tree::ptree xml;
  boost::property_tree::read_xml((dir_ / "out" / "junit.xml").string(), xml);
  const auto& suite = xml.get_child("testsuites.testsuite");
  EXPECT_EQ(suite.get<int>("<xmlattr>.tests"), 6);
  EXPECT_EQ(suite.get<int>("<xmlattr>.failures"), 3);
  int cases = 0, failures = 0;
  std::set<std::string> failed;
  for (const auto& [tag, tc] : suite) {
    if (tag != "testcase") continue;
    ++cases;
    if (auto f = tc.get_child_optional("failure")) {
      ++failures;
      failed.insert(tc.get<std::string>("<xmlattr>.name"));
      EXPECT_FALSE(f->get<std::string>("<xmlattr>.message").empty());
    }
  }
  EXPECT_EQ(cases, 6);
  EXPECT_EQ(failures, 3);
  EXPECT_EQ(failed, (std::set<std::string>{"regressed", "breaks", "gone"}));

  auto j = run({"compare", "base.json", "cur.json", "--json"});
  EXPECT_EQ(j.exit_code, 1);
  auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["counts"]["slower"], 1);
  EXPECT_EQ(doc["regressed"], true);
  EXPECT_EQ(doc["tasks"].size(), 6u);

  // Without the regressions the gate passes; a higher threshold forgives 30%.
  auto same = run({"compare", "base.json", "base.json"});
  EXPECT_EQ(same.exit_code, 0) << same.out;
  auto lenient = run({"compare", "base.json", "cur.json", "--threshold", "50"});
  EXPECT_EQ(lenient.exit_code, 1);  // "breaks" still fails
  EXPECT_EQ(table_rows(lenient.out)[1]["verdict"], "unchanged");
}

// A change the noise can hide: inconclusive, which fails the gate only with
// --fail-inconclusive; the table shows the spread it was judged against.
TEST_F(CompareCli, InconclusiveFailsTheGateOnlyWhenAsked) {
  write("base.json", export_doc({{"wild", samples(1e-3, 0.25, 30, 1)}}));
  write("cur.json", export_doc({{"wild", samples(1.1e-3, 0.25, 30, 2)}}));
  auto r = run({"compare", "base.json", "cur.json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  auto rows = table_rows(r.out);
  ASSERT_EQ(rows.size(), 1u) << r.out;
  EXPECT_EQ(rows[0]["verdict"], "inconclusive");
  EXPECT_NE(rows[0]["spread"].find("samples p20-p80"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("which does not fail the gate"), std::string::npos) << r.out;
  auto strict = run({"compare", "base.json", "cur.json", "--fail-inconclusive", "--json"});
  EXPECT_EQ(strict.exit_code, 1) << strict.out << strict.err;
  auto doc = nlohmann::json::parse(strict.out);
  EXPECT_EQ(doc["fail_inconclusive"], true);
  EXPECT_EQ(doc["tasks"][0]["verdict"], "inconclusive");
  EXPECT_EQ(doc["tasks"][0]["basis"], "samples");
}

TEST_F(CompareCli, BadInputIsOneLineAndExitTwo) {
  write("base.json", export_doc({{"t", samples(1e-3, 0.01, 20, 1)}}));
  write("other.json", nlohmann::json{{"results", nlohmann::json::array()}});
  std::ofstream(dir_ / "text.json") << "not json";
  nlohmann::json bad_samples = export_doc({{"t", samples(1e-3, 0.01, 20, 1)}});
  bad_samples["runs"][0]["candidates"][0]["timing"]["samples_s"][3] = "fast";
  write("bad_samples.json", bad_samples);
  for (std::vector<std::string> args : {std::vector<std::string>{"compare", "base.json"},
                                        {"compare", "base.json", "missing.json"},
                                        {"compare", "base.json", "other.json"},
                                        {"compare", "base.json", "text.json"},
                                        {"compare", "base.json", "bad_samples.json"},
                                        {"compare", "base.json", "base.json", "--threshold", "-3"},
                                        {"compare", "base.json", "base.json", "--confidence", "95"},
                                        {"compare", "base.json", "7"},  // no store, no run 7
                                        {"export", "7"},
                                        {"export", "1", "--format", "csv"}}) {
    auto r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args[1] << " " << args.back() << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("kevo: ", 0), 0u) << r.err;
  }
  auto r = run({"compare", "base.json", "bad_samples.json"});
  EXPECT_NE(r.err.find("$.runs[0].candidates[0].timing.samples_s"), std::string::npos) << r.err;
  for (const char* c : {"export", "compare"}) {
    auto h = run({c, "--help"});
    EXPECT_EQ(h.exit_code, 0);
    EXPECT_NE(h.out.find("usage: kevo "), std::string::npos);
  }
}

// --- a small real search, exported ------------------------------------

// search.json in `dir`: a small real search of swiglu's families, confirming
// its best `confirm` candidates after `max_evals` evaluations.
void write_small_search(const std::filesystem::path& dir, int confirm, int max_evals) {
  std::ofstream(dir / "search.json") << fmt::format(
      R"({{"name": "swiglu-small", "operator": "swiglu",
      "shapes": {{"g": [64, 1000]}}, "timing": {{"min_time_ms": 2, "min_samples": 3}},
      "knobs": {{"THREADS": [1]}},
      "search": {{"strategy": "evolution", "batch": 2, "confirm": {}, "stop": {{"max_evals": {}}}}}}})",
      confirm, max_evals);
}

TEST(Export, ARealRunAsKevoJsonAndT4AndComparedWithItself) {
  auto dir = test::temp_dir("export-real");
  const std::string db = (dir / "kevo.db").string();
  test::store_cpu_roof(db);  // no command calibrates
  write_small_search(dir, 2, 4);
  auto ran = kevo(dir, db, {"run", "search.json", "--json"});
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  const int64_t run = nlohmann::json::parse(ran.out)["run"].get<int64_t>();

  auto e = kevo(dir, db, {"export", std::to_string(run), "-o", "export.json"});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  auto doc = nlohmann::json::parse(read(dir / "export.json"));
  EXPECT_NO_THROW(check_export(doc, "export.json"));
  EXPECT_EQ(doc["format"], "kevo-export");
  ASSERT_EQ(doc["runs"].size(), 1u);
  const auto& r = doc["runs"][0];
  EXPECT_EQ(r["run"], run);
  EXPECT_EQ(r["kind"], "search");
  EXPECT_EQ(r["task"]["name"], "swiglu-small");
  EXPECT_EQ(r["task"]["operator"], "swiglu");
  EXPECT_EQ(r["task"]["target"], "cpu");
  EXPECT_GT(r["task"]["bytes"].get<double>(), 0);
  EXPECT_FALSE(r["host"]["hostname"].get<std::string>().empty());
  ASSERT_TRUE(r["roof"].is_object());
  EXPECT_FALSE(r["roof"]["bandwidth"].empty());
  ASSERT_TRUE(r["summary"].is_object());
  EXPECT_EQ(r["best"], r["summary"]["best"]["candidate"]);
  ASSERT_GE(r["candidates"].size(), 4u);
  int confirmed = 0;
  for (const auto& c : r["candidates"]) {
    for (const char* k :
         {"id", "family", "knobs", "source_hash", "synthesizer", "parents", "lineage", "status",
          "timing", "roof_fraction", "bound", "diagnosis", "bottleneck", "confirmation"})
      EXPECT_TRUE(c.contains(k)) << k;
    EXPECT_EQ(c["lineage"][0], c["id"]);  // itself first, then up to the seed
    if (c["status"] != "ok") continue;
    const auto& t = c["timing"];
    EXPECT_GE(t["samples_s"].size(), 3u);
    EXPECT_LE(t["p20_s"].get<double>(), t["median_s"].get<double>());
    EXPECT_LE(t["median_s"].get<double>(), t["p80_s"].get<double>());
    EXPECT_GT(c["roof_fraction"].get<double>(), 0);
    EXPECT_EQ(c["bound"], "memory");
    if (c["confirmation"].is_object()) {
      ++confirmed;
      EXPECT_GE(c["confirmation"]["timing"]["samples_s"].size(), 3u);
      // The confirmation exported is the median of the re-measurements (one per
      // round, after the search's own), not the last one.
      Store ro(db, /*read_only=*/true);
      QueryResult q = ro.query(
          "SELECT median_s FROM evaluations WHERE candidate_id = ? AND status = 'ok' AND id > "
          "(SELECT MIN(id) FROM evaluations WHERE candidate_id = ?) ORDER BY median_s",
          {c["id"].get<int64_t>(), c["id"].get<int64_t>()});
      // The default three rounds; under load one may read below the roofline
      // floor (suspect): it counts as a round but gives no figure.
      QueryResult rounds = ro.query(
          "SELECT COUNT(*) FROM evaluations WHERE candidate_id = ? AND status IN ('ok', 'suspect') "
          "AND id > (SELECT MIN(id) FROM evaluations WHERE candidate_id = ?)",
          {c["id"].get<int64_t>(), c["id"].get<int64_t>()});
      EXPECT_EQ(std::get<int64_t>(rounds.rows[0][0]), 3);
      if (!q.rows.empty()) {
        EXPECT_DOUBLE_EQ(c["confirmation"]["timing"]["median_s"].get<double>(),
                         std::get<double>(q.rows[(q.rows.size() - 1) / 2][0]));
      }
    }
  }
  EXPECT_GE(confirmed, 1);
  // The best's rounds: each re-measurement, for kevo compare.
  for (const auto& c : r["candidates"])
    if (c["id"] == r["best"] && c["confirmation"].is_object()) {
      ASSERT_TRUE(c["rounds"].is_array());
      EXPECT_EQ(c["rounds"].size(), 3u);
      for (const auto& round : c["rounds"]) {
        EXPECT_TRUE(round["evaluation"].is_number_integer());
        if (round["status"] == "ok") {
          EXPECT_GT(round["median_s"].get<double>(), 0);
        }
      }
    }

  // T4: the required keys of every result, times in milliseconds.
  auto t4run = kevo(dir, db, {"export", std::to_string(run), "--format", "t4"});
  ASSERT_EQ(t4run.exit_code, 0) << t4run.err;
  auto t4 = nlohmann::json::parse(t4run.out);
  EXPECT_EQ(t4["schema_version"], "1.0.0");
  EXPECT_EQ(t4["metadata"]["timeunit"], "milliseconds");
  ASSERT_EQ(t4["results"].size(), r["candidates"].size());
  for (size_t i = 0; i < t4["results"].size(); ++i) {
    const auto& x = t4["results"][i];
    const auto& c = r["candidates"][i];
    for (const char* k : {"configuration", "times", "invalidity", "correctness", "measurements",
                          "objectives", "timestamp"})
      EXPECT_TRUE(x.contains(k)) << k;
    EXPECT_EQ(x["configuration"]["family"], c["family"]);
    for (auto it = c["knobs"].begin(); it != c["knobs"].end(); ++it)
      EXPECT_EQ(x["configuration"][it.key()], it.value());
    const std::set<std::string> reasons = {"timeout",     "compile",     "runtime",
                                           "correctness", "constraints", "correct"};
    EXPECT_TRUE(reasons.count(x["invalidity"].get<std::string>())) << x["invalidity"];
    EXPECT_EQ(x["invalidity"] == "correct", c["status"] == "ok");
    if (c["status"] != "ok") continue;
    EXPECT_EQ(x["correctness"], 1);
    EXPECT_EQ(x["times"]["runtimes"].size(), c["timing"]["samples_s"].size());
    EXPECT_DOUBLE_EQ(x["times"]["runtimes"][0].get<double>(),
                     1e3 * c["timing"]["samples_s"][0].get<double>());
    bool time = false;
    for (const auto& m : x["measurements"])
      if (m["name"] == "time") {
        time = true;
        EXPECT_EQ(m["unit"], "ms");
        EXPECT_DOUBLE_EQ(m["value"].get<double>(), 1e3 * c["timing"]["median_s"].get<double>());
      }
    EXPECT_TRUE(time);
  }

  // The run against its own export: the gate passes. Unchanged where its
  // rounds agree within the threshold; under parallel test load they may
  // not, and then it cannot tell (inconclusive), which does not fail.
  auto same = kevo(dir, db, {"compare", "export.json", std::to_string(run), "--junit", "j.xml"});
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  auto rows = table_rows(same.out);
  ASSERT_EQ(rows.size(), 1u) << same.out;
  EXPECT_EQ(rows[0]["task"], "swiglu-small");
  EXPECT_TRUE(rows[0]["verdict"] == "unchanged" || rows[0]["verdict"] == "inconclusive")
      << same.out;
  EXPECT_NE(rows[0]["spread"].find("rounds"), std::string::npos) << same.out;

  // The same export with every best sample 40% slower: a regression. The
  // samples are first made steady (1% apart around each median): a real run
  // under parallel test load can spread them so wide that no change of 40%
  // would be resolved, which is the compare's business, not this test's.
  nlohmann::json steady = doc, slow = doc;
  for (auto* d : {&steady, &slow}) {
    const double factor = d == &slow ? 1.4 : 1.0;
    for (auto& c : (*d)["runs"][0]["candidates"]) {
      for (auto* t :
           {&c["timing"], c["confirmation"].is_object() ? &c["confirmation"]["timing"] : nullptr}) {
        if (!t || !t->is_object()) continue;
        const double m = (*t)["median_s"].get<double>() * factor;
        auto& samples = (*t)["samples_s"];
        for (size_t i = 0; i < samples.size(); ++i) samples[i] = m * (1 + 0.01 * (static_cast<int>(i % 3) - 1));
        (*t)["median_s"] = m;
      }
      // ... and so are its rounds, around the confirmation's median.
      if (c["confirmation"].is_object()) {
        const double m = c["confirmation"]["timing"]["median_s"].get<double>();
        int i = 0;
        for (auto& round : c["rounds"]) {
          round["status"] = "ok";
          round["median_s"] = m * (1 + 0.01 * (i++ % 3 - 1));
        }
      }
    }
  }
  std::ofstream(dir / "steady.json") << steady.dump();
  std::ofstream(dir / "slow.json") << slow.dump();
  auto calm = kevo(dir, db, {"compare", "steady.json", "steady.json"});
  EXPECT_EQ(calm.exit_code, 0) << calm.out << calm.err;
  EXPECT_EQ(table_rows(calm.out).at(0)["verdict"], "unchanged") << calm.out;
  auto worse = kevo(dir, db, {"compare", "steady.json", "slow.json"});
  EXPECT_EQ(worse.exit_code, 1) << worse.out << worse.err;
  EXPECT_EQ(table_rows(worse.out).at(0)["verdict"], "slower") << worse.out;

  // ... and with no correct candidate left: now failing.
  nlohmann::json broken = doc;
  for (auto& c : broken["runs"][0]["candidates"]) {
    c["status"] = "mismatch";
    c["confirmation"] = nullptr;
  }
  broken["runs"][0]["best"] = nullptr;
  std::ofstream(dir / "broken.json") << broken.dump();
  auto fails = kevo(dir, db, {"compare", std::to_string(run), "broken.json"});
  EXPECT_EQ(fails.exit_code, 1);
  EXPECT_EQ(table_rows(fails.out).at(0)["verdict"], "now-failing") << fails.out;
  // A file that is not a kevo export, however it is broken, is bad input
  // (exit 2, one line naming the file), never an internal error.
  for (const char* text : {"{\"runs\": [1e309]}", "{\"runs\": ", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                                                              "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]"}) {
    std::ofstream(dir / "bad.json") << text;
    auto bad = kevo(dir, db, {"compare", std::to_string(run), "bad.json"});
    EXPECT_EQ(bad.exit_code, 2) << text << ": " << bad.err;
    EXPECT_NE(bad.err.find("bad.json"), std::string::npos) << bad.err;
    EXPECT_NE(bad.err.find("expected a file written by kevo export"), std::string::npos) << bad.err;
    EXPECT_EQ(bad.err.find("internal error"), std::string::npos) << bad.err;
  }
}

// kevo compare --retime on a real run: both best kernels are built from the
// export and timed here in alternating rounds, stored as a compare run; the
// verdict is judged from the rounds' ratios (which way it goes is the
// machine's business, not this test's). A kernel that fails here is
// now-failing; an export without sources is judged as before and says why.
TEST(CompareRetime, BothKernelsAreTimedSideBySideHere) {
  auto dir = test::temp_dir("compare-retime");
  const std::string db = (dir / "kevo.db").string();
  test::store_cpu_roof(db);
  write_small_search(dir, 1, 2);
  auto ran = kevo(dir, db, {"run", "search.json", "--json"});
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  const int64_t run = nlohmann::json::parse(ran.out)["run"].get<int64_t>();
  ASSERT_EQ(kevo(dir, db, {"export", std::to_string(run), "-o", "a.json"}).exit_code, 0);
  const nlohmann::json doc = nlohmann::json::parse(read(dir / "a.json"));
  const auto& best_source = doc["runs"][0]["best_source"];
  ASSERT_TRUE(best_source.is_object()) << doc["runs"][0].dump();
  EXPECT_FALSE(best_source["text"].get<std::string>().empty());
  for (const auto& c : doc["runs"][0]["candidates"])
    if (c["id"] == doc["runs"][0]["best"]) {
      EXPECT_EQ(c["source_hash"], best_source["hash"]);
    }

  auto same = kevo(dir, db, {"compare", "a.json", "a.json", "--retime", "--rounds", "3", "--json"});
  ASSERT_TRUE(same.exit_code == 0 || same.exit_code == 1) << same.err;
  EXPECT_NE(same.err.find("re-timing swiglu-small (1 of 1)"), std::string::npos) << same.err;
  const auto j = nlohmann::json::parse(same.out);
  const auto& t = j["tasks"][0];
  ASSERT_EQ(t["basis"], "retimed") << t.dump(2);
  ASSERT_EQ(t["baseline"]["rounds_s"].size(), 3u);
  ASSERT_EQ(t["current"]["rounds_s"].size(), 3u);
  // The interval is each round's ratio, the figure each side's median round.
  std::vector<double> ratios;
  for (size_t i = 0; i < 3; ++i)
    ratios.push_back(t["current"]["rounds_s"][i].get<double>() /
                     t["baseline"]["rounds_s"][i].get<double>());
  std::sort(ratios.begin(), ratios.end());
  EXPECT_DOUBLE_EQ(t["ci_low"].get<double>(), ratios[0]);
  EXPECT_DOUBLE_EQ(t["ratio"].get<double>(), ratios[1]);
  EXPECT_DOUBLE_EQ(t["ci_high"].get<double>(), ratios[2]);
  std::vector<double> b_rounds = t["baseline"]["rounds_s"].get<std::vector<double>>();
  std::sort(b_rounds.begin(), b_rounds.end());
  EXPECT_DOUBLE_EQ(t["baseline"]["median_s"].get<double>(), b_rounds[1]);
  EXPECT_NE(t["baseline"]["origin"].get<std::string>().find("re-timed"), std::string::npos);
  // Stored: a compare run whose two candidates were measured in alternating
  // order, every measurement checked and timed.
  {
    Store ro(db, /*read_only=*/true);
    QueryResult runs = ro.query("SELECT id FROM runs WHERE kind = 'compare'", {});
    ASSERT_EQ(runs.rows.size(), 1u);
    const int64_t compare_run = std::get<int64_t>(runs.rows[0][0]);
    QueryResult order = ro.query(
        "SELECT e.candidate_id, e.status FROM evaluations e JOIN candidates c ON c.id = "
        "e.candidate_id WHERE c.run_id = ? ORDER BY e.id",
        {compare_run});
    ASSERT_EQ(order.rows.size(), 6u);
    std::vector<int64_t> who;
    for (const auto& row : order.rows) {
      who.push_back(std::get<int64_t>(row[0]));
      EXPECT_EQ(std::get<std::string>(row[1]), "ok");
    }
    EXPECT_NE(who[0], who[1]);
    EXPECT_EQ(who[1], who[2]);  // round 2 starts with the current kernel
    EXPECT_EQ(who[3], who[0]);
    EXPECT_EQ(who[4], who[0]);  // round 3 with the baseline again
    EXPECT_EQ(who[5], who[1]);
  }
  auto md = kevo(dir, db, {"compare", "a.json", "a.json", "--retime", "--rounds", "3"});
  EXPECT_NE(md.out.find("re-timed on this machine, both kernels side by side in 3 rounds"),
            std::string::npos)
      << md.out;
  EXPECT_NE(table_rows(md.out).at(0)["spread"].find("re-timed rounds"), std::string::npos)
      << md.out;

  // The current kernel does not build here: now failing, and the gate fails.
  nlohmann::json broken = doc;
  broken["runs"][0]["best_source"]["text"] = "#error a planted fault\n";
  std::ofstream(dir / "broken.json") << broken.dump();
  auto fails = kevo(dir, db, {"compare", "a.json", "broken.json", "--retime", "--rounds", "3"});
  EXPECT_EQ(fails.exit_code, 1) << fails.out << fails.err;
  auto row = table_rows(fails.out).at(0);
  EXPECT_EQ(row["verdict"], "now-failing") << fails.out;
  EXPECT_NE(row["note"].find("the current kernel failed here"), std::string::npos) << fails.out;

  // An export written before sources were exported: judged from the stored
  // figures, and the note says why.
  nlohmann::json old = doc;
  old["runs"][0].erase("best_source");
  std::ofstream(dir / "old.json") << old.dump();
  auto stored = kevo(dir, db, {"compare", "a.json", "old.json", "--retime", "--json"});
  ASSERT_TRUE(stored.exit_code == 0 || stored.exit_code == 1) << stored.err;
  const auto s = nlohmann::json::parse(stored.out)["tasks"][0];
  EXPECT_NE(s["basis"], "retimed");
  EXPECT_NE(s["note"].get<std::string>().find("carries no kernel source"), std::string::npos)
      << s.dump(2);

  // Bad rounds are bad input.
  for (std::vector<std::string> args :
       {std::vector<std::string>{"compare", "a.json", "a.json", "--retime", "--rounds", "2"},
        std::vector<std::string>{"compare", "a.json", "a.json", "--rounds", "5"}}) {
    auto bad = kevo(dir, db, args);
    EXPECT_EQ(bad.exit_code, 2) << bad.err;
    EXPECT_NE(bad.err.find("--rounds"), std::string::npos) << bad.err;
  }
}

// A second run of a task reuses the first run's measurements of the points it
// proposes again (the seeds); its confirmation rounds are then the only
// evaluations such a candidate has of its own. The export gives the reused
// measurement as the candidate's result and the median round as its
// confirmation, not the first round as its result.
TEST(Export, AReusedMeasurementIsTheCandidatesResult) {
  auto dir = test::temp_dir("export-reused");
  const std::string db = (dir / "kevo.db").string();
  test::store_cpu_roof(db);
  write_small_search(dir, 1, 2);
  ASSERT_EQ(kevo(dir, db, {"run", "search.json"}).exit_code, 0);
  auto again = kevo(dir, db, {"run", "search.json", "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const int64_t run = nlohmann::json::parse(again.out)["run"].get<int64_t>();
  auto e = kevo(dir, db, {"export", std::to_string(run), "-o", "export.json"});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  auto doc = nlohmann::json::parse(read(dir / "export.json"));
  Store ro(db, /*read_only=*/true);
  int reused = 0;
  for (const auto& c : doc["runs"][0]["candidates"]) {
    if (!c["reused_evaluation"].is_number()) continue;
    ++reused;
    const int64_t from = c["reused_evaluation"].get<int64_t>();
    QueryResult q = ro.query("SELECT median_s FROM evaluations WHERE id = ?", {from});
    ASSERT_EQ(q.rows.size(), 1u);
    ASSERT_TRUE(c["timing"].is_object()) << c.dump();
    EXPECT_DOUBLE_EQ(c["timing"]["median_s"].get<double>(), std::get<double>(q.rows[0][0]));
    // Its own evaluations are the rounds: the confirmation is one of them.
    ASSERT_TRUE(c["confirmation"].is_object()) << c.dump();
    QueryResult own = ro.query("SELECT COUNT(*) FROM evaluations WHERE candidate_id = ? AND id = ?",
                               {c["id"].get<int64_t>(), c["confirmation"]["evaluation"].get<int64_t>()});
    EXPECT_EQ(std::get<int64_t>(own.rows[0][0]), 1);
  }
  EXPECT_GE(reused, 1);
}

}  // namespace
}  // namespace kevo
