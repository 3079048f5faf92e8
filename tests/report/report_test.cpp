// kevo report on a store filled by a small real search: the structure of
// each format (the Markdown tables, the JSON, the SVG elements) checked
// against the store, and the HTML rendered in headless Chromium.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>

#include "core/process.h"
#include "core/store.h"
#include "report/export.h"
#include "support/test_support.h"
#include "targets/target.h"

namespace kevo {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t pos = 0; (pos = text.find(what, pos)) != std::string::npos; pos += what.size()) ++n;
  return n;
}

class Report : public ::testing::Test {
 protected:
  // One search for every test: swiglu's families plus three that fail
  // (wrong results, a crash, a compile error), from a kernel home that
  // links the real one.
  static void SetUpTestSuite() {
    dir_ = test::temp_dir("report");
    const fs::path repo = test::repo_dir();
    const fs::path home = dir_ / "home";
    const fs::path kernels = home / "targets" / "cpu" / "kernels" / "swiglu";
    fs::create_directories(kernels);
    fs::create_directory_symlink(repo / "targets" / "abi", home / "targets" / "abi");
    fs::create_directory_symlink(repo / "targets" / "cpu" / "include",
                                 home / "targets" / "cpu" / "include");
    fs::create_directory_symlink(repo / "knowledge", home / "knowledge");
    fs::create_directory_symlink(repo / "configs", home / "configs");
    for (const auto& f : fs::directory_iterator(repo / "targets" / "cpu" / "kernels" / "swiglu"))
      fs::create_symlink(f.path(), kernels / f.path().filename());
    for (const char* bad : {"wrong", "segfault", "compile_error"})
      fs::copy_file(test::source_dir() / "eval" / "kernels" / (std::string(bad) + ".c"),
                    kernels / (std::string(bad) + ".c"));
    // The kevo processes started below inherit it.
    setenv("KEVO_HOME", home.c_str(), 1);

    db_ = (dir_ / "kevo.db").string();
    {
      // A roof no candidate can beat: one that did (a small task in this
      // CPU's caches) would make kevo measure the roof again, which this
      // kernel home cannot (it has no calibration sources).
      Store s(db_);
      Roof roof = test::fake_roof(1000, 1e6);
      roof.host_key = make_target("cpu")->host_key();
      s.add_roof(roof);
    }
    std::ofstream(dir_ / "search.json") << R"({"name": "swiglu-small", "operator": "swiglu",
        "shapes": {"g": [64, 1000]}, "timing": {"min_time_ms": 2, "min_samples": 3},
        "knobs": {"THREADS": [1]},
        "search": {"strategy": "evolution", "batch": 2, "stop": {"max_evals": 9}}})";
    auto r = kevo({"run", "search.json", "--json"});
    if (r.exit_code != 0) {
      setup_error_ = "the suite's search failed (exit " +
                     (r.exit_code ? std::to_string(*r.exit_code) : std::string("none")) + "):\n" + r.err;
      return;
    }
    run_ = json::parse(r.out)["run"].get<int64_t>();
  }
  // A failure in SetUpTestSuite would mark every test skipped, and CTest
  // counts skipped tests as passing: each test fails instead.
  void SetUp() override { ASSERT_TRUE(setup_error_.empty()) << setup_error_; }

  static ProcessResult kevo(std::vector<std::string> args) {
    return test::run_kevo(dir_, db_, std::move(args), {}, 1 << 22);
  }

  static int64_t scalar(const std::string& sql) {
    Store s(db_, true);
    return std::get<int64_t>(s.query(sql, {SqlValue(run_)}).rows.at(0).at(0));
  }

  // Candidates of the run whose result (their first evaluation, or the one
  // they reused) has `condition`.
  static int64_t candidates_where(const std::string& condition) {
    return scalar(
        "SELECT COUNT(*) FROM candidates c JOIN evaluations e ON e.id = "
        "COALESCE(c.reuses_evaluation, (SELECT MIN(x.id) FROM evaluations x "
        "WHERE x.candidate_id = c.id)) WHERE c.run_id = ? AND " +
        condition);
  }

  static json report_json() {
    auto r = kevo({"report", std::to_string(run_), "--format", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
  }

  static inline fs::path dir_;
  static inline std::string setup_error_;
  static inline std::string db_;
  static inline int64_t run_ = 0;
};

// The top table's order: candidates with a re-measured time first, by it;
// then those not re-measured, by the search's time; then those that failed
// when measured again.
void expect_ranked_as_the_run_chose(const json& top) {
  auto group = [](const json& t) {
    if (t["confirmed_median_s"].is_number()) return 0;
    return t["confirm_status"].get<std::string>().empty() ? 1 : 2;
  };
  for (size_t i = 0; i < top.size(); ++i) {
    if (group(top[i]) == 0) {
      EXPECT_EQ(top[i]["confirm_status"], "ok");
    }
    if (i == 0) continue;
    const int g = group(top[i]), before = group(top[i - 1]);
    EXPECT_LE(before, g) << "rank " << i + 1;
    const char* key = g == 0 ? "confirmed_median_s" : "median_s";
    if (before == g) {
      EXPECT_LE(top[i - 1][key].get<double>(), top[i][key].get<double>()) << "rank " << i + 1;
    }
  }
}

TEST_F(Report, JsonHoldsEverySectionAsTheStoreHasIt) {
  const json j = report_json();
  EXPECT_EQ(j["kind"], "run");
  EXPECT_EQ(j["run"]["id"], run_);
  EXPECT_EQ(j["run"]["task"], "swiglu-small");
  EXPECT_EQ(j["run"]["strategy"], "evolution");
  const int64_t ok = candidates_where("e.status = 'ok'");
  const int64_t failed = candidates_where("e.status != 'ok'");
  ASSERT_GT(ok, 0);
  EXPECT_EQ(j["ok_candidates"], ok);

  // The best: the summary's, with its knobs baked into its source.
  const json& best = j["best"];
  ASSERT_TRUE(best.is_object());
  EXPECT_EQ(best["candidate"],
            scalar("SELECT json_extract(summary_json, '$.best.candidate') FROM runs WHERE id = ?"));
  EXPECT_LE(best["p20_s"].get<double>(), best["median_s"].get<double>());
  EXPECT_LE(best["median_s"].get<double>(), best["p80_s"].get<double>());
  for (auto it = best["knobs"].begin(); it != best["knobs"].end(); ++it)
    EXPECT_NE(best["source"].get<std::string>().find("#define " + it.key() + " " +
                                                     std::to_string(it.value().get<int64_t>())),
              std::string::npos)
        << it.key();
  // and the shape it was searched at, as kevo run -o writes it
  EXPECT_NE(best["source"].get<std::string>().find("#ifndef KEVO_LAST_g\n#define KEVO_LAST_g 1000\n"),
            std::string::npos);
  ASSERT_TRUE(j["seed"].is_object());
  EXPECT_GT(j["seed"]["speedup"].get<double>(), 0);
  ASSERT_TRUE(j["naive"].is_object());

  // Failures: every status but ok, counted, with examples that say why.
  std::set<std::string> statuses;
  int64_t failures = 0;
  for (const auto& f : j["failures"]) {
    statuses.insert(f["status"].get<std::string>());
    failures += f["count"].get<int64_t>();
    ASSERT_FALSE(f["examples"].empty());
    EXPECT_FALSE(f["examples"][0]["detail"].get<std::string>().empty());
  }
  EXPECT_EQ(failures, failed);
  for (const char* s : {"mismatch", "crash", "compile_error"}) EXPECT_TRUE(statuses.count(s)) << s;

  // Top candidates: the fastest correct ones, ranked as the run chose its
  // best: the re-measured ones by their confirmation, then the others.
  const json& top = j["top"];
  ASSERT_EQ(top.size(), std::min<size_t>(10, ok));
  expect_ranked_as_the_run_chose(top);
  EXPECT_EQ(top[0]["candidate"], best["candidate"]);
  EXPECT_EQ(top[0]["confirmed_median_s"], best["median_s"]);
  EXPECT_FALSE(top[0]["diagnosis"].get<std::string>().empty());

  // Convergence of this run: one point per result from the first correct
  // one, the best never getting worse; then the confirmed best, which is
  // the figure the headline quotes: the plot and the headline agree.
  json points = j["convergence"][0]["points"];
  ASSERT_GE(points.size(), 2u);
  ASSERT_TRUE(best["confirmed"].get<bool>());
  const json last = points.back();
  EXPECT_TRUE(last["confirmed"].get<bool>());
  EXPECT_DOUBLE_EQ(last["best_s"].get<double>(), best["median_s"].get<double>());
  points.erase(points.size() - 1);
  EXPECT_EQ(last["n"], points.back()["n"]);
  EXPECT_EQ(points.back()["n"].get<int64_t>(), ok + failed);
  for (size_t i = 1; i < points.size(); ++i) {
    EXPECT_FALSE(points[i]["confirmed"].get<bool>());
    EXPECT_EQ(points[i]["n"].get<int64_t>(), points[i - 1]["n"].get<int64_t>() + 1);
    EXPECT_LE(points[i]["best_s"].get<double>(), points[i - 1]["best_s"].get<double>());
  }

  // The roofline has every correct candidate and the stored roofs.
  EXPECT_EQ(j["roofline"]["points"].size(), static_cast<size_t>(ok));
  EXPECT_EQ(j["roofline"]["roofs"].size(), 2u);  // the fake roof: one bandwidth, one peak

  EXPECT_EQ(j["lineage"][0]["candidate"], best["candidate"]);
  EXPECT_EQ(j["time"]["evaluations"],
            scalar("SELECT COUNT(*) FROM evaluations e JOIN candidates c ON c.id = "
                   "e.candidate_id WHERE c.run_id = ?"));
}

// The rows of the Markdown table whose header starts with `first` (a header
// is the line above a |---| rule).
std::vector<std::vector<std::string>> md_table(const std::string& md, const std::string& first) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> lines;
  std::istringstream in(md);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  size_t i = 0;
  while (i + 1 < lines.size() &&
         !(lines[i].rfind("| " + first + " |", 0) == 0 && lines[i + 1].rfind("|---", 0) == 0))
    ++i;
  for (i += 2; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (line.empty() || line[0] != '|') break;
    std::vector<std::string> cells;
    std::string cell;
    auto trimmed = [](const std::string& t) {
      const size_t a = t.find_first_not_of(' '), b = t.find_last_not_of(' ');
      return a == std::string::npos ? std::string() : t.substr(a, b - a + 1);
    };
    for (size_t c = 1; c < line.size(); ++c) {
      if (line[c] == '\\' && c + 1 < line.size() && line[c + 1] == '|') {
        cell += '|';  // an escaped bar inside a cell
        ++c;
      } else if (line[c] == '|') {
        cells.push_back(trimmed(cell));
        cell.clear();
      } else {
        cell += line[c];
      }
    }
    rows.push_back(cells);
  }
  return rows;
}

TEST_F(Report, MarkdownTablesMatchTheJsonAndPlotsSitBesideIt) {
  const json j = report_json();
  auto r = kevo({"report", std::to_string(run_), "-o", "out/report.md"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string md = read(dir_ / "out" / "report.md");

  auto top = md_table(md, "rank");
  ASSERT_EQ(top.size(), j["top"].size());
  for (size_t i = 0; i < top.size(); ++i) {
    ASSERT_EQ(top[i].size(), 11u) << i;
    EXPECT_EQ(top[i][0], std::to_string(i + 1));
    EXPECT_EQ(top[i][1], std::to_string(j["top"][i]["candidate"].get<int64_t>()));
    EXPECT_EQ(top[i][2], j["top"][i]["family"].get<std::string>());
  }
  auto failures = md_table(md, "status");
  ASSERT_EQ(failures.size(), j["failures"].size());
  for (size_t i = 0; i < failures.size(); ++i) {
    EXPECT_EQ(failures[i][0], j["failures"][i]["status"].get<std::string>());
    EXPECT_EQ(failures[i][1], std::to_string(j["failures"][i]["count"].get<int64_t>()));
  }
  EXPECT_EQ(md_table(md, "stage").size(), 6u);
  EXPECT_NE(md.find("```\n/* kevo run"), std::string::npos);
  for (const char* plot : {"convergence-evals", "convergence-time", "roofline"}) {
    EXPECT_NE(md.find(std::string("(report-") + plot + ".svg)"), std::string::npos) << plot;
    EXPECT_TRUE(fs::exists(dir_ / "out" / (std::string("report-") + plot + ".svg"))) << plot;
  }

  // On stdout there is nowhere to put the plots: the report says so.
  auto s = kevo({"report", std::to_string(run_)});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_NE(s.out.find("Plots left out"), std::string::npos);
  EXPECT_EQ(md_table(s.out, "rank").size(), j["top"].size());
}

namespace pt = boost::property_tree;

// Every element of `tree` (recursively) named `name` whose class list has `cls`.
void collect(const pt::ptree& tree, const std::string& name, const std::string& cls,
             std::vector<const pt::ptree*>& out) {
  for (const auto& [key, child] : tree) {
    if (key == name) {
      const std::string c = child.get<std::string>("<xmlattr>.class", "");
      std::istringstream words(c);
      std::string w;
      while (words >> w)
        if (w == cls) out.push_back(&child);
    }
    collect(child, name, cls, out);
  }
}

std::vector<const pt::ptree*> elements(const pt::ptree& t, const std::string& name,
                                       const std::string& cls) {
  std::vector<const pt::ptree*> out;
  collect(t, name, cls, out);
  return out;
}

// A candidate lucky once in the search (its first time far below the
// others) but not when re-measured ranks by its re-measured time, below the
// best the run confirmed: the table agrees with the best section.
TEST_F(Report, TopCandidatesRankByTheConfirmationNotTheLuckyFirstTime) {
  const json before = report_json();
  const int64_t best = before["best"]["candidate"].get<int64_t>();
  int64_t lucky = 0;
  for (const auto& t : before["top"])
    if (t["confirmed_median_s"].is_number() && t["candidate"].get<int64_t>() != best)
      lucky = t["candidate"].get<int64_t>();
  ASSERT_NE(lucky, 0) << "the run re-measured no candidate but its best";

  const fs::path copy = dir_ / "lucky.db";
  fs::copy_file(db_, copy, fs::copy_options::overwrite_existing);
  {
    Store s(copy.string());
    s.query("UPDATE evaluations SET median_s = median_s / 1000, p20_s = p20_s / 1000, "
            "p80_s = p80_s / 1000 WHERE id = (SELECT MIN(id) FROM evaluations "
            "WHERE candidate_id = ?)",
            {SqlValue(lucky)});
  }
  auto r = test::run_kevo(dir_, copy.string(), {"report", std::to_string(run_), "--format", "json"},
                          {}, 1 << 22);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json top = json::parse(r.out)["top"];
  ASSERT_FALSE(top.empty());
  EXPECT_EQ(top[0]["candidate"], best);
  expect_ranked_as_the_run_chose(top);
  bool seen = false;
  for (const auto& t : top)
    if (t["candidate"] == lucky) {
      seen = true;
      EXPECT_LT(t["median_s"].get<double>(), top[0]["median_s"].get<double>());
      EXPECT_GT(t["rank"].get<int64_t>(), 1);
    }
  EXPECT_TRUE(seen);
  // ... and the report says its search figure did not hold.
  const json unheld = json::parse(r.out)["did_not_hold"];
  bool listed = false;
  for (const auto& u : unheld) {
    const bool timed = u["confirmed_median_s"].is_number();
    if (timed) {
      const double ratio = u["ratio"].get<double>();
      EXPECT_TRUE(ratio > 1.25 || ratio < 1 / 1.25) << u.dump();  // only what did not hold
      EXPECT_DOUBLE_EQ(ratio, u["confirmed_median_s"].get<double>() /
                                  u["search_median_s"].get<double>());
    } else {
      EXPECT_NE(u["confirm_status"], "ok") << u.dump();
    }
    if (u["candidate"] == lucky) {
      listed = true;
      EXPECT_GT(u["ratio"].get<double>(), 100);
    }
  }
  EXPECT_TRUE(listed) << unheld.dump(2);

  // The Markdown table shows both figures: the search's and the re-measured.
  auto md = test::run_kevo(dir_, copy.string(), {"report", std::to_string(run_)}, {}, 1 << 22);
  ASSERT_EQ(md.exit_code, 0) << md.err;
  const auto rows = md_table(md.out, "rank");
  ASSERT_FALSE(rows.empty());
  ASSERT_EQ(rows[0].size(), 11u);
  EXPECT_EQ(rows[0][1], std::to_string(best));
  EXPECT_NE(rows[0][7], "-");
  EXPECT_NE(md.out.find("## Figures that did not hold"), std::string::npos) << md.out;
  bool in_md = false;
  for (const auto& row : md_table(md.out, "candidate"))
    if (!row.empty() && row[0] == std::to_string(lucky)) in_md = true;
  EXPECT_TRUE(in_md) << md.out;
}

// The best section shows the evidence behind its figure: the confirmation's
// rounds (the figure is their median), round by round against the seed, and
// how the family defaults drifted over the run.
TEST_F(Report, TheBestShowsItsRoundsItsWinsAndTheDrift) {
  const json j = report_json();
  const json& best = j["best"];
  ASSERT_TRUE(best["confirmed"].get<bool>());
  std::vector<double> rounds;
  for (const auto& x : best["rounds_s"])
    if (x.is_number()) rounds.push_back(x.get<double>());
  ASSERT_EQ(best["rounds_s"].size(), 3u);  // the default confirm_rounds
  if (rounds.size() == 3) {
    std::sort(rounds.begin(), rounds.end());
    EXPECT_DOUBLE_EQ(best["median_s"].get<double>(), rounds[1]);
  }
  auto md = kevo({"report", std::to_string(run_)});
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("confirmation rounds: "), std::string::npos) << md.out;
  if (j["seed"].is_object() && j["seed"]["rounds_s"].size() == 3) {
    EXPECT_NE(md.out.find(" rounds)"), std::string::npos) << md.out;
    EXPECT_NE(md.out.find("; faster in "), std::string::npos) << md.out;
  }
  ASSERT_FALSE(j["drift"].empty());  // the family defaults were re-measured
  EXPECT_NE(md.out.find("drift: the family defaults re-measured "), std::string::npos) << md.out;
  // The next best re-measured, with the verdict the run stored.
  ASSERT_TRUE(j["runner_up"].is_object()) << j.dump();
  EXPECT_NE(md.out.find(fmt::format("runner-up: candidate {} ", j["runner_up"]["candidate"].get<int64_t>())),
            std::string::npos)
      << md.out;
  EXPECT_NE(md.out.find(j["runner_up"]["verdict"] == "apart" ? "apart in every round" : ": inconclusive, "),
            std::string::npos)
      << md.out;
}

TEST_F(Report, SvgPlotsAreWellFormedWithAxesAndAPointPerCorrectCandidate) {
  const json j = report_json();
  ASSERT_EQ(kevo({"report", std::to_string(run_), "-o", "svg/report.md"}).exit_code, 0);
  for (const char* plot : {"convergence-evals", "convergence-time", "roofline"}) {
    pt::ptree t;
    std::ifstream in(dir_ / "svg" / (std::string("report-") + plot + ".svg"));
    ASSERT_NO_THROW(pt::read_xml(in, t)) << plot;  // well-formed XML
    const pt::ptree& svg = t.get_child("svg");
    EXPECT_EQ(svg.get<std::string>("<xmlattr>.id"), std::string("plot-") + plot);
    EXPECT_EQ(svg.get<std::string>("<xmlattr>.xmlns"), "http://www.w3.org/2000/svg");
    for (const char* axis : {"x-axis", "y-axis"}) {
      auto a = elements(svg, "g", axis);
      ASSERT_EQ(a.size(), 1u) << plot << " " << axis;
      EXPECT_GE(elements(*a[0], "g", "tick").size(), 2u) << plot << " " << axis;
      EXPECT_EQ(elements(*a[0], "text", "axis-label").size(), 1u) << plot << " " << axis;
    }
    if (std::string(plot) == "roofline") {
      auto points = elements(svg, "circle", "point");
      EXPECT_EQ(points.size(), j["roofline"]["points"].size());
      std::set<int64_t> want, got;
      for (const auto& p : j["roofline"]["points"]) want.insert(p["candidate"].get<int64_t>());
      for (const auto* p : points) got.insert(p->get<int64_t>("<xmlattr>.data-candidate"));
      EXPECT_EQ(got, want);
      EXPECT_EQ(elements(svg, "g", "roof").size(), j["roofline"]["roofs"].size());
    } else {
      auto series = elements(svg, "g", "series");
      EXPECT_EQ(series.size(), j["convergence"].size());
      EXPECT_EQ(series[0]->get<std::string>("<xmlattr>.data-name"),
                "evolution (run " + std::to_string(run_) + ")");
      EXPECT_EQ(series[0]->count("path"), 1u);
    }
  }
}

TEST_F(Report, HtmlIsOnePageWithNothingToFetchAndNoScript) {
  auto r = kevo({"report", std::to_string(run_), "--format", "html"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string& html = r.out;
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "<script"), 0u);
  EXPECT_EQ(count(html, " src="), 0u);
  EXPECT_EQ(count(html, "<link"), 0u);
  // Nothing refers outside the page: no links, and url() only to the
  // plots' own clip paths.
  EXPECT_EQ(count(html, "href="), 0u);
  EXPECT_EQ(count(html, "url("), count(html, "url(#"));
  for (const char* id : {"plot-convergence-evals", "plot-convergence-time", "plot-roofline"})
    EXPECT_EQ(count(html, std::string("id=\"") + id + "\""), 1u) << id;
  for (const char* section :
       {"summary", "best", "convergence", "roofline", "lineage", "failures", "top", "time"})
    EXPECT_EQ(count(html, std::string("<section id=\"") + section + "\""), 1u) << section;
}

TEST_F(Report, UnknownRunsAndBadOptionsAreOneLineErrors) {
  for (std::vector<std::string> args : {std::vector<std::string>{"report", "999"},
                                        {"report", "batch:7"},
                                        {"report", "nightly"},
                                        {"report", std::to_string(run_), "--format", "pdf"}}) {
    auto r = kevo(args);
    EXPECT_EQ(r.exit_code, 2) << args[1] << r.err;
    EXPECT_EQ(count(r.err, "\n"), 1u) << r.err;
  }
}

// A run whose only non-naive family is wrong: the best seed has no figure
// because its default point was measured and failed, and both the report
// and kevo run's summary say so rather than "not measured".
// The roofline's lines are the roof as measured, one pair per thread count:
// a two-thread rate below the one-thread rate stays below it (never the
// one-thread rate times two), and a thread count with its own bandwidth has
// its own memory line.
TEST(ReportRoof, OneLinePairPerThreadCountAsMeasured) {
  auto dir = test::temp_dir("report-roof");
  const std::string db = (dir / "kevo.db").string();
  {
    Store s(db);
    Roof roof = test::fake_roof(1000, 1e6);
    roof.host_key = make_target("cpu")->host_key();
    roof.bandwidth = {{"copy", 1, 1.0, 900}, {"copy", 1, 1e12, 900},
                      {"copy", 2, 1.0, 1400}, {"copy", 2, 1e12, 1400}};
    roof.peak = {{"fp32_fma", 1, 142.9e3}, {"fp32_fma", 2, 100.5e3}};
    s.add_roof(roof);
  }
  std::ofstream(dir / "search.json") << R"({"name": "swiglu-small", "operator": "swiglu",
      "shapes": {"g": [16, 512]}, "timing": {"min_time_ms": 1, "min_samples": 3},
      "knobs": {"THREADS": [1]}, "search": {"strategy": "evolution", "batch": 1,
      "families": ["stream"], "confirm": 0, "stop": {"max_evals": 1}}})";
  auto ran = test::run_kevo(dir, db, {"run", "search.json", "--json"});
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  const int64_t run = json::parse(ran.out)["run"].get<int64_t>();
  auto r = test::run_kevo(dir, db, {"report", std::to_string(run), "--format", "json"}, {}, 1 << 22);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::pair<std::string, int>, double> lines;
  const json report = json::parse(r.out);
  for (const auto& l : report["roofline"]["roofs"])
    lines[{l["kind"].get<std::string>(), l["threads"].get<int>()}] = l["value"].get<double>();
  EXPECT_EQ(lines.size(), 4u) << r.out;
  EXPECT_DOUBLE_EQ((lines[{"memory", 1}]), 900);
  EXPECT_DOUBLE_EQ((lines[{"memory", 2}]), 1400);
  EXPECT_DOUBLE_EQ((lines[{"compute", 1}]), 142.9e3);
  EXPECT_DOUBLE_EQ((lines[{"compute", 2}]), 100.5e3);
}

// A grid search of at most two points of swiglu at 64 x 1000 over `kernels`
// (THREADS from `threads`, a JSON list), in a store of its own in `dir` with
// the CPU roof: what kevo run printed.
ProcessResult small_swiglu_run(const fs::path& dir, const std::string& db,
                               const std::vector<std::string>& kernels, const std::string& threads) {
  test::store_cpu_roof(db);
  std::string list;
  for (const auto& k : kernels) list += (list.empty() ? "\"" : ", \"") + k + "\"";
  std::ofstream(dir / "task.json") << R"({"operator": "swiglu", "shapes": {"g": [64, 1000]},
      "timing": {"min_time_ms": 2, "min_samples": 3}, "knobs": {"THREADS": )" + threads + R"(},
      "kernels": [)" + list + R"(],
      "search": {"strategy": "grid", "stop": {"max_evals": 2}}})";
  return test::run_kevo(dir, db, {"run", "task.json"});
}

const std::string kNaiveSwiglu =
    (test::repo_dir() / "targets" / "cpu" / "kernels" / "swiglu" / "naive.c").string();

TEST(ReportSeed, MeasuredAndFailedSeedsSayHowTheyFailed) {
  const fs::path dir = test::temp_dir("report-seed");
  const std::string db = (dir / "kevo.db").string();
  const std::string wrong = (test::source_dir() / "eval" / "kernels" / "wrong.c").string();
  auto run = small_swiglu_run(dir, db, {kNaiveSwiglu, wrong}, "[1]");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("failed (1 mismatch)"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("not measured"), std::string::npos) << run.out;
  const std::string id = run.out.substr(run.out.find("kevo run ") + 9);

  auto j = test::run_kevo(dir, db, {"report", std::to_string(std::stoll(id)), "--format", "json"},
                          {}, 1 << 22);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const json r = json::parse(j.out);
  ASSERT_TRUE(r["best"].is_object());
  EXPECT_TRUE(r["seed"].is_null());
  EXPECT_EQ(r["seed_failures"], json({{"mismatch", 1}}));
  EXPECT_TRUE(r["naive"].is_object());  // the naive family is measured and correct
  EXPECT_TRUE(r["naive_failures"].is_null());

  auto md = test::run_kevo(dir, db, {"report", std::to_string(std::stoll(id))}, {}, 1 << 22);
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("- seed: failed (1 mismatch)\n"), std::string::npos) << md.out;
  EXPECT_EQ(md.out.find("not measured"), std::string::npos) << md.out;
}

// Where the GPU's clocks were held back while a run timed (a power cap), the
// report says so beside the figures, with the reasons in words and the SM
// clock's range; a run whose evaluations carry no GPU state has no such line.
TEST(ReportMachine, ThrottledClocksAreShownBesideTheFigures) {
  const fs::path dir = test::temp_dir("report-machine");
  const std::string db = (dir / "kevo.db").string();
  auto run = small_swiglu_run(dir, db, {kNaiveSwiglu}, "[1, 2]");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string id = std::to_string(std::stoll(run.out.substr(run.out.find("kevo run ") + 9)));
  auto report = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"report", id};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = test::run_kevo(dir, db, args, {}, 1 << 22);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };
  // A CPU run: no GPU state, no machine line.
  EXPECT_TRUE(json::parse(report({"--format", "json"}))["machine"].is_null());
  EXPECT_EQ(report({}).find("- machine: "), std::string::npos);

  // The runner's state at the end of each evaluation, as a GPU runner stores
  // it: the first evaluation at full clock, the others under the power cap
  // and, once, thermal slowdown as well.
  std::vector<int64_t> evaluations;
  {
    Store s(db);
    for (const auto& [candidate, evs] : s.evaluations_of_run(std::stoll(id)))
      for (const int64_t e : evs) evaluations.push_back(e);
  }
  ASSERT_GE(evaluations.size(), 2u);
  {
    Store s(db);
    for (size_t i = 0; i < evaluations.size(); ++i) {
      const double mhz = i == 0 ? 1980 : 1620 + 10.0 * static_cast<double>(i);
      const int mask = i == 0 ? 0 : (i == 1 ? 0x24 : 0x4);
      s.query("INSERT INTO profiles(evaluation_id, metric, value, unit) VALUES (?, 'machine.sm_mhz', ?, 'MHz'), "
              "(?, 'machine.throttle', ?, 'mask')",
              {SqlValue(evaluations[i]), SqlValue(mhz), SqlValue(evaluations[i]), SqlValue(static_cast<double>(mask))});
    }
  }
  const json m = json::parse(report({"--format", "json"}))["machine"];
  ASSERT_TRUE(m.is_object()) << m.dump();
  const auto n = static_cast<int64_t>(evaluations.size());
  EXPECT_EQ(m["evaluations"], n);
  EXPECT_EQ(m["with_throttle"], n);
  EXPECT_EQ(m["throttled"], n - 1);
  EXPECT_EQ(m["throttle_mask"], 0x24);
  EXPECT_EQ(m["sm_mhz"]["min"], 1630);
  EXPECT_EQ(m["sm_mhz"]["max"], 1980);
  const std::string md = report({});
  EXPECT_NE(md.find(fmt::format("- machine: the GPU's clocks were held back (the software power cap, "
                                "software thermal slowdown) in {} of {} evaluations; SM clock 1630-1980 MHz",
                                n - 1, n)),
            std::string::npos)
      << md;
}

// T4 results of failed points carry kevo's status and what went wrong, in one
// short line; a correct point's carries its status and no error.
TEST(ReportT4, FailedPointsCarryTheirStatusAndAOneLineError) {
  std::string log = "kernel.c: In function 'kevo_kernel':\n  kernel.c:3:1: error: expected ';'\n";
  for (int i = 0; i < 40; ++i) log += "  note: \xc3\xa9t\xc3\xa9 ";  // two-byte characters
  const json run = {
      {"run", 1},
      {"task", {{"name", "t"}, {"hash", "h"}, {"target", "cpu"}, {"operator", "swiglu"}}},
      {"candidates",
       {{{"id", 1}, {"family", "a"}, {"knobs", json::object()}, {"status", "compile_error"},
         {"detail", log}, {"timing", nullptr}},
        {{"id", 2}, {"family", "b"}, {"knobs", json::object()}, {"status", "mismatch"},
         {"detail", "y[3, 17]: got 1.5,\nwant 2.0 (ulp:2)"}, {"timing", nullptr}},
        {{"id", 3}, {"family", "c"}, {"knobs", json::object()}, {"status", "crash"},
         {"detail", ""}, {"timing", nullptr}},
        {{"id", 4}, {"family", "d"}, {"knobs", json::object()}, {"status", "ok"},
         {"detail", ""},
         {"timing", {{"median_s", 1e-3}, {"samples_s", {1e-3}}}}}}}};
  const json t4 = to_t4(run);
  ASSERT_EQ(t4["results"].size(), 4u);
  auto measurement = [](const json& result, const std::string& name) -> json {
    for (const auto& m : result["measurements"])
      if (m["name"] == name) return m["value"];
    return nullptr;
  };
  const std::vector<std::string> statuses = {"compile_error", "mismatch", "crash", "ok"};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(measurement(t4["results"][i], "status"), statuses[i]);

  const std::string compile = measurement(t4["results"][0], "error").get<std::string>();
  EXPECT_EQ(compile.rfind("kernel.c: In function 'kevo_kernel': kernel.c:3:1: error: expected ';'",
                          0),
            0u)
      << compile;
  EXPECT_EQ(compile.find('\n'), std::string::npos);
  EXPECT_LE(compile.size(), 160u + 3);
  EXPECT_EQ(compile.substr(compile.size() - 3), "...");
  EXPECT_NO_THROW(t4.dump());  // cut on a character boundary: still UTF-8
  EXPECT_EQ(measurement(t4["results"][1], "error"), "y[3, 17]: got 1.5, want 2.0 (ulp:2)");
  EXPECT_EQ(measurement(t4["results"][2], "error"), "crash");  // no detail: its status
  EXPECT_TRUE(measurement(t4["results"][3], "error").is_null());
}

// Chromium from Debian's package (scripts/setup.sh test-browser), or none.
std::optional<std::string> chromium() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (access(p, X_OK) == 0) return std::string(p);
  return std::nullopt;
}

// Width and height from a PNG's IHDR chunk (bytes 16..23, big-endian).
std::pair<uint32_t, uint32_t> png_size(const std::string& png) {
  auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(png[at + i]);
    return v;
  };
  if (png.size() < 24 || png.compare(1, 3, "PNG") != 0) return {0, 0};
  return {be32(16), be32(20)};
}

TEST_F(Report, ChromiumRendersTheHtmlWithItsPlotsAndNoConsoleErrors) {
  auto browser = chromium();
  if (!browser) GTEST_SKIP() << "chromium is not installed (scripts/setup.sh test-browser)";
  ASSERT_EQ(kevo({"report", std::to_string(run_), "-o", "report.html"}).exit_code, 0);
  const json j = report_json();
  // The screenshot stays in the build tree for people to look at.
  const fs::path artifacts = fs::path(KEVO_TEST_BINARY_DIR) / "artifacts";
  fs::create_directories(artifacts);
  const fs::path shot = artifacts / "report.png";
  fs::remove(shot);
  const std::string url = "file://" + (dir_ / "report.html").string();
  auto run = [&](std::vector<std::string> extra) {
    SpawnOptions o;
    o.argv = {*browser,
              "--headless=new",
              "--no-sandbox",
              "--disable-gpu",
              "--user-data-dir=" + (dir_ / "chromium-profile").string(),
              "--enable-logging=stderr",
              "--v=0"};
    o.argv.insert(o.argv.end(), extra.begin(), extra.end());
    o.argv.push_back(url);
    return run_process(o, 120, 1 << 24);
  };
  auto page = run({"--screenshot=" + shot.string(), "--window-size=1200,2000"});
  ASSERT_EQ(page.exit_code, 0) << page.err;
  EXPECT_EQ(png_size(read(shot)), (std::pair<uint32_t, uint32_t>{1200, 2000}));
  auto dom = run({"--dump-dom"});
  ASSERT_EQ(dom.exit_code, 0) << dom.err;

  // The page's console: any message (an error, a blocked fetch) fails.
  for (const std::string& log : {page.err, dom.err}) {
    EXPECT_EQ(count(log, ":CONSOLE"), 0u) << log;
    EXPECT_EQ(count(log, "Uncaught"), 0u) << log;
  }
  // The plots as the browser parsed them: each svg element, the roofline's
  // points one per correct candidate, both axes everywhere.
  const std::string& d = dom.out;
  for (const char* id : {"plot-convergence-evals", "plot-convergence-time", "plot-roofline"})
    EXPECT_NE(d.find(std::string("<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"") + id),
              std::string::npos)
        << id;
  EXPECT_EQ(count(d, "class=\"point\""), j["roofline"]["points"].size());
  EXPECT_EQ(count(d, "class=\"axis x-axis\""), 3u);
  EXPECT_EQ(count(d, "class=\"axis y-axis\""), 3u);
}

}  // namespace
}  // namespace kevo
