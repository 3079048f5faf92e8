// kevo explain and kevo query's named queries on a store written here: a seed
// and a child candidate, the child profiled (kernel metrics and per-line stall
// shares), with a known roof.
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/process.h"
#include "core/store.h"
#include "support/test_support.h"

namespace kevo {
namespace {

// Lines 3 and 5 are the hot ones.
const char* kSource =
    "// @kevo knob VEC 4 {1, 2, 4}\n"
    "for (int64_t i = 0; i < n; ++i) {\n"
    "  float g = x[i] * scale;   // the hottest line\n"
    "  float s = g / (1 + expf(-g));\n"
    "  y[i] = s * u[i];          // the second\n"
    "}\n";

class Explain : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::temp_dir("explain");
    db_ = (dir_ / "kevo.db").string();
    Store s(db_);
    roof_id_ = s.add_roof(test::fake_roof(50, 400));
    task_ = test::quick_task("swiglu", {{"g", {256, 4096}}});
    run_ = s.begin_run("search", task_, nlohmann::json::object());
    const std::string hash = s.put_source(kSource, "swiglu_vec.c", "c");
    seed_ = s.add_candidate(run_, hash, {{"VEC", 4}}, "swiglu_vec", "seed");
    child_ = s.add_candidate(run_, hash, {{"VEC", 2}}, "swiglu_vec", "knob", {seed_});
    s.add_evaluation(seed_, result(2e-3, {}));
    s.add_evaluation(child_, result(1e-3, {{"ncu.dram_pct", 87.5, "%", 0},
                                           {"ptxas.registers", 32, "register/thread", 0},
                                           {"ncu.line.stall_share", 0.6, "fraction", 3},
                                           {"ncu.line.stall_share", 0.1, "fraction", 2},
                                           {"ncu.line.stall_share", 0.3, "fraction", 5}}));
  }

  EvalResult result(double median_s, std::vector<ProfileMetric> profile) {
    EvalResult r;
    r.timing = TimingStats::from_samples({median_s * 0.99, median_s, median_s * 1.01}, 1, 2);
    Diagnosis d;
    d.bound = "memory";
    d.floor_s = task_.bytes() / 50e9;
    d.roof_fraction = d.floor_s / median_s;
    d.achieved_gbps = task_.bytes() / median_s / 1e9;
    d.why = "memory-bound: synthetic";
    d.bottleneck = profile.empty() ? "" : "dram-bandwidth";
    r.diagnosis = d;
    r.roof_id = roof_id_;
    r.profile = std::move(profile);
    return r;
  }

  ProcessResult kevo(std::vector<std::string> args) {
    SpawnOptions o;
    o.argv = {test::kevo_binary().string()};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    o.argv.insert(o.argv.end(), {"--db", db_});
    o.cwd = dir_;
    return run_process(o, 60, 1 << 20);
  }
  // kevo ARGS --json, which must succeed, parsed.
  nlohmann::json json(std::vector<std::string> args) {
    args.push_back("--json");
    auto r = kevo(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  }

  std::filesystem::path dir_;
  std::string db_;
  Task task_;
  int64_t roof_id_ = 0, run_ = 0, seed_ = 0, child_ = 0;
};

TEST_F(Explain, ShowsBoundsMetricsHotLinesAndLineage) {
  auto r = kevo({"explain", std::to_string(child_)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* s :
       {"swiglu_vec", "VEC=2", "status      ok", "memory", "compute", "dram-bandwidth",
        "ncu.dram_pct", "87.5 %", "ptxas.registers", "hot lines", "60.0%",
        "float g = x[i] * scale;   // the hottest line", "y[i] = s * u[i];", "lineage"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  // The hottest line comes first, the child before its parent.
  EXPECT_LT(r.out.find("the hottest line"), r.out.find("the second"));
  EXPECT_LT(r.out.find(fmt::format("#{} ", child_)), r.out.find(fmt::format("#{} ", seed_)));
}

// One median per candidate: re-measured, its bound line and diagnosis are
// those of the confirmation, the figure the bounds divide by too (they once
// quoted the search's diagnosis beside the confirmation's median).
TEST_F(Explain, TheBoundAndTheBoundsQuoteOneMedian) {
  {
    Store s(db_);
    for (double m : {1.3e-3, 1.25e-3, 1.2e-3}) s.add_evaluation(child_, result(m, {}));
  }
  auto j = json({"explain", std::to_string(child_)});
  EXPECT_EQ(j["diagnosis_of"], "confirmation");
  const double measured = j["bounds"]["measured_s"].get<double>();
  EXPECT_DOUBLE_EQ(measured, 1.25e-3);
  EXPECT_DOUBLE_EQ(j["roof_fraction"].get<double>(), j["bounds"]["memory"]["fraction"].get<double>());
  EXPECT_DOUBLE_EQ(j["roof_fraction"].get<double>(), task_.bytes() / 50e9 / measured);
  auto text = kevo({"explain", std::to_string(child_)});
  EXPECT_NE(text.out.find("of the roof at the re-measured median"), std::string::npos) << text.out;
  // Measured once: the search's figure, said as such.
  auto once = json({"explain", std::to_string(seed_)});
  EXPECT_EQ(once["diagnosis_of"], "search");
  EXPECT_DOUBLE_EQ(once["roof_fraction"].get<double>(),
                   once["bounds"]["memory"]["fraction"].get<double>());
}

TEST_F(Explain, JsonHasTheEvidence) {
  auto r = kevo({"explain", std::to_string(child_), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["candidate"], child_);
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["knobs"]["VEC"], 2);
  EXPECT_EQ(j["bottleneck"], "dram-bandwidth");
  // The memory floor is the task's bytes over the roof's 50 GB/s, against the 1 ms median.
  const auto& b = j["bounds"];
  EXPECT_DOUBLE_EQ(b["bytes"].get<double>(), task_.bytes());
  EXPECT_DOUBLE_EQ(b["memory"]["floor_s"].get<double>(), task_.bytes() / 50e9);
  EXPECT_DOUBLE_EQ(b["memory"]["fraction"].get<double>(), task_.bytes() / 50e9 / 1e-3);
  EXPECT_DOUBLE_EQ(b["compute"]["floor_s"].get<double>(), task_.flops() / 400e9);
  ASSERT_EQ(j["profile"].size(), 2u);
  ASSERT_EQ(j["hot_lines"].size(), 3u);
  EXPECT_EQ(j["hot_lines"][0]["line"], 3);
  EXPECT_EQ(j["hot_lines"][0]["text"], "float g = x[i] * scale;   // the hottest line");
  EXPECT_EQ(j["hot_lines"][1]["line"], 5);
  ASSERT_EQ(j["lineage"].size(), 2u);
  EXPECT_EQ(j["lineage"][0]["candidate"], child_);
  EXPECT_EQ(j["lineage"][0]["parents"], nlohmann::json::array({seed_}));
  EXPECT_EQ(j["lineage"][1]["candidate"], seed_);

  // Without a profile: said so, nothing invented.
  auto s = kevo({"explain", std::to_string(seed_), "--json"});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  auto sj = nlohmann::json::parse(s.out);
  EXPECT_TRUE(sj["profile"].empty());
  EXPECT_TRUE(sj["hot_lines"].empty());
  EXPECT_EQ(sj["lineage"].size(), 1u);
}

// Every measured evaluation stores the compiler's figures: the confirmation's
// re-measurements, later than the profiled evaluation, have ptxas.* rows only
// (and the machine's state, and what measuring them cost). The profiler's metrics and hot lines stay shown.
TEST_F(Explain, ShowsTheProfiledEvaluationAfterTheConfirmation) {
  {
    Store s(db_);
    for (int round = 0; round < 3; ++round)
      s.add_evaluation(child_, result(1e-3, {{"ptxas.registers", 32, "register/thread", 0},
                                             {"machine.sm_mhz", 1980, "MHz", 0},
                                             {"eval.check_compare_s", 0.4, "s", 0}}));
  }
  auto r = kevo({"explain", std::to_string(child_), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  std::set<std::string> metrics;
  for (const auto& m : j["profile"]) metrics.insert(m["metric"].get<std::string>());
  EXPECT_EQ(metrics, (std::set<std::string>{"ncu.dram_pct", "ptxas.registers"})) << j["profile"];
  EXPECT_EQ(j["profile_evaluation"], j["evaluation"]);
  EXPECT_EQ(j["hot_lines"].size(), 3u);
  auto text = kevo({"explain", std::to_string(child_)});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("ncu.dram_pct"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("the hottest line"), std::string::npos) << text.out;
}

// Without a profiler's metrics the compiler's are shown, of the latest
// evaluation; the machine's state is never among them.
TEST_F(Explain, ShowsTheCompilersFiguresWithoutAProfile) {
  {
    Store s(db_);
    s.add_evaluation(seed_, result(2e-3, {{"ptxas.registers", 40, "register/thread", 0},
                                          {"machine.sm_mhz", 1980, "MHz", 0}}));
  }
  auto j = nlohmann::json::parse(kevo({"explain", std::to_string(seed_), "--json"}).out);
  ASSERT_EQ(j["profile"].size(), 1u) << j["profile"];
  EXPECT_EQ(j["profile"][0]["metric"], "ptxas.registers");
  EXPECT_EQ(j["profile"][0]["value"], 40);
}

// A candidate of a later run that reuses an earlier measurement: that is its
// result, and each of its own evaluations is a round of its confirmation.
TEST_F(Explain, AReusedCandidatesResultIsTheEarlierMeasurement) {
  const int64_t earlier =
      nlohmann::json::parse(kevo({"explain", std::to_string(child_), "--json"}).out)["evaluation"];
  int64_t again = 0, median_round = 0;
  {
    Store s(db_);
    const int64_t run = s.begin_run("search", task_, nlohmann::json::object());
    again = s.add_candidate(run, s.put_source(kSource, "swiglu_vec.c", "c"), {{"VEC", 2}},
                            "swiglu_vec", "seed", {}, earlier);
    median_round = s.add_evaluation(again, result(1.2e-3, {}));
    s.add_evaluation(again, result(1.1e-3, {}));
    s.add_evaluation(again, result(1.3e-3, {}));
  }
  auto r = kevo({"explain", std::to_string(again), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["evaluation"], earlier);
  EXPECT_DOUBLE_EQ(j["timing"]["median_s"].get<double>(), 1e-3);
  EXPECT_EQ(j["confirmation"]["measurements"], 3);
  EXPECT_EQ(j["confirmation"]["evaluation"], median_round);
  // The profile of the measurement it reuses.
  EXPECT_EQ(j["profile_evaluation"], earlier);
}

// The machine's state at the end of the search's measurement and of the
// confirming one (the median round), only the figures that were read.
TEST_F(Explain, ShowsTheMachineAtTheSearchAndTheConfirmation) {
  auto gpu = [](double hbm_c, double throttle) {
    return std::vector<ProfileMetric>{{"machine.sm_mhz", 1980, "MHz", 0},
                                      {"machine.mem_mhz", 3201, "MHz", 0},
                                      {"machine.gpu_temp_c", 41, "C", 0},
                                      {"machine.mem_temp_c", hbm_c, "C", 0},
                                      {"machine.power_w", 355, "W", 0},
                                      {"machine.throttle", throttle, "mask", 0},
                                      {"ptxas.registers", 32, "register/thread", 0}};
  };
  int64_t gpu_cand = 0, cpu_cand = 0;
  {
    Store s(db_);
    const std::string hash = s.put_source(kSource, "swiglu_vec.c", "c");
    gpu_cand = s.add_candidate(run_, hash, {{"VEC", 1}}, "swiglu_vec", "knob", {seed_});
    s.add_evaluation(gpu_cand, result(1e-3, gpu(52, 0)));
    s.add_evaluation(gpu_cand, result(1.1e-3, gpu(58, 0)));
    s.add_evaluation(gpu_cand, result(1.2e-3, gpu(61, 4)));  // the median round
    s.add_evaluation(gpu_cand, result(1.3e-3, gpu(64, 0)));
    cpu_cand = s.add_candidate(run_, hash, {{"VEC", 8}}, "swiglu_vec", "knob", {seed_});
    s.add_evaluation(cpu_cand, result(1e-3, {{"machine.load1", 1.02, "", 0},
                                             {"machine.cpu_mhz", 2600, "MHz", 0}}));
  }
  auto r = kevo({"explain", std::to_string(gpu_cand)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("machine     search: SM clock 1980 MHz, memory clock 3201 MHz, GPU 41 C, "
                       "HBM 52 C, 355 W, not throttled; confirmation: SM clock 1980 MHz, memory "
                       "clock 3201 MHz, GPU 41 C, HBM 61 C, 355 W, throttled (mask 0x4)\n"),
            std::string::npos)
      << r.out;
  auto j = nlohmann::json::parse(kevo({"explain", std::to_string(gpu_cand), "--json"}).out);
  EXPECT_EQ(j["machine"]["search"]["machine.mem_temp_c"], 52);
  EXPECT_EQ(j["machine"]["confirmation"]["machine.mem_temp_c"], 61);
  EXPECT_EQ(j["machine"]["confirmation"]["machine.throttle"], 4);
  EXPECT_EQ(j["machine"]["confirmation"].size(), 6u);
  for (const auto& m : j["profile"])
    EXPECT_NE(m["metric"].get<std::string>().rfind("machine.", 0), 0u) << m;

  // A CPU's load and clock, measured once: no confirmation part.
  auto c = kevo({"explain", std::to_string(cpu_cand)});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("machine     search: load 1.02, CPU clock 2600 MHz\n"), std::string::npos)
      << c.out;
  auto cj = nlohmann::json::parse(kevo({"explain", std::to_string(cpu_cand), "--json"}).out);
  EXPECT_EQ(cj["machine"],
            (nlohmann::json{{"search", {{"machine.load1", 1.02}, {"machine.cpu_mhz", 2600}}}}));
  EXPECT_TRUE(cj["profile"].empty());

  // Nothing read: no line, no key.
  auto none = kevo({"explain", std::to_string(child_)});
  EXPECT_EQ(none.out.find("machine "), std::string::npos) << none.out;
  EXPECT_FALSE(nlohmann::json::parse(kevo({"explain", std::to_string(child_), "--json"}).out)
                   .contains("machine"));
}

// The lineage gives each candidate the time its median line stands at: the
// median round of its confirmation, not the round that happened to be last.
TEST_F(Explain, LineageGivesTheConfirmedFigure) {
  {
    Store s(db_);
    s.add_evaluation(child_, result(1.2e-3, {}));  // the median round
    s.add_evaluation(child_, result(1.1e-3, {}));
    s.add_evaluation(child_, result(1.3e-3, {}));
  }
  auto j = nlohmann::json::parse(kevo({"explain", std::to_string(child_), "--json"}).out);
  ASSERT_EQ(j["lineage"].size(), 2u);
  EXPECT_EQ(j["lineage"][0]["candidate"], child_);
  EXPECT_DOUBLE_EQ(j["lineage"][0]["median_s"].get<double>(), 1.2e-3);
  EXPECT_DOUBLE_EQ(j["lineage"][0]["median_s"].get<double>(),
                   j["bounds"]["measured_s"].get<double>());
  EXPECT_EQ(j["lineage"][0]["confirmed"], true);
  EXPECT_DOUBLE_EQ(j["lineage"][1]["median_s"].get<double>(), 2e-3);  // measured once
  EXPECT_FALSE(j["lineage"][1].contains("confirmed"));
  auto r = kevo({"explain", std::to_string(child_)});
  EXPECT_NE(r.out.find(fmt::format("#{} swiglu_vec VEC=2 (knob): 1.2 ms re-measured <- {}\n",
                                   child_, seed_)),
            std::string::npos)
      << r.out;
}

// A candidate that reuses an earlier run's measurement and was re-measured
// since: every named query shows it with the reused measurement, its result,
// not with a confirmation round (they once took the opposite order).
TEST_F(Explain, NamedQueriesShowAReusedCandidateWithItsResult) {
  int64_t run2 = 0, reusing = 0;
  {
    Store s(db_);
    run2 = s.begin_run("search", task_, nlohmann::json::object());
    const std::string hash = s.put_source(kSource, "swiglu_vec.c", "c");
    const int64_t earlier = *s.result_evaluation(child_);
    reusing = s.add_candidate(run2, hash, {{"VEC", 2}}, "swiglu_vec", "knob", {}, earlier);
    s.add_evaluation(reusing, result(7e-3, {}));  // a confirmation round, 7x slower
  }
  auto top = json({"query", "top-k", std::to_string(run2), "5"});
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0]["candidate"], reusing);
  EXPECT_DOUBLE_EQ(top[0]["median_s"].get<double>(), 1e-3);
  auto best = json({"query", "best-per-run"});
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[1]["candidate"], reusing);
  EXPECT_DOUBLE_EQ(best[1]["median_s"].get<double>(), 1e-3);
  auto lineage = json({"query", "lineage", std::to_string(reusing)});
  ASSERT_EQ(lineage.size(), 1u);
  EXPECT_DOUBLE_EQ(lineage[0]["median_s"].get<double>(), 1e-3);
  auto e = json({"explain", std::to_string(reusing)});
  EXPECT_EQ(e["evaluation"], *Store(db_, true).result_evaluation(child_));
}

// `rounds CANDIDATE`: each evaluation of the candidate in order, with what
// can tell two rounds apart: the medians of the first and last quarter of its
// samples in measurement order, the machine's state, the launch cover and the
// runner's timing line (the line alone, out of the rest of stderr); NULL
// where there is none.
TEST_F(Explain, RoundsShowEachEvaluationsDriftStateAndTimingLine) {
  int64_t cand = 0;
  {
    Store s(db_);
    const std::string hash = s.put_source(kSource, "swiglu_vec.c", "c");
    cand = s.add_candidate(run_, hash, {{"VEC", 1}}, "swiglu_vec", "knob", {seed_});
    EvalResult first = result(5e-6, {{"machine.sm_mhz", 1980, "MHz", 0},
                                     {"machine.load1", 0.5, "", 0},
                                     {"launch.cover_us", 45, "us", 0},
                                     {"launch.outlasted", 0, "samples", 0},
                                     {"launch.retaken", 1, "samples", 0}});
    // In measurement order: a fast start, a slow end.
    first.timing = TimingStats::from_samples({4e-6, 3e-6, 5e-6, 5e-6, 5e-6, 5e-6, 7e-6, 6e-6}, 1, 2);
    first.stderr_text =
        "a line of the kernel's own\n"
        "kevo-cuda-runner: timing: host time per call 12.0 us (median), 0 of 8 samples' calls "
        "outlasted the flush and cover (host at most 20 us), 1 taken again under a longer cover\n"
        "another line\n";
    s.add_evaluation(cand, first);
    EvalResult second = result(6e-6, {});
    second.stderr_text = "no timing line here";
    s.add_evaluation(cand, second);
  }
  auto rows = json({"query", "rounds", std::to_string(cand)});
  ASSERT_EQ(rows.size(), 2u) << rows;
  EXPECT_DOUBLE_EQ(rows[0]["median_s"].get<double>(), 5e-6);
  EXPECT_EQ(rows[0]["samples"], 8);
  EXPECT_DOUBLE_EQ(rows[0]["first_quarter_median_s"].get<double>(), 4e-6);
  EXPECT_DOUBLE_EQ(rows[0]["last_quarter_median_s"].get<double>(), 7e-6);
  EXPECT_DOUBLE_EQ(rows[0]["sm_mhz"].get<double>(), 1980);
  EXPECT_DOUBLE_EQ(rows[0]["load1"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(rows[0]["cover_us"].get<double>(), 45);
  EXPECT_DOUBLE_EQ(rows[0]["outlasted"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(rows[0]["retaken"].get<double>(), 1);
  EXPECT_EQ(rows[0]["runner_timing"],
            "host time per call 12.0 us (median), 0 of 8 samples' calls outlasted the flush and "
            "cover (host at most 20 us), 1 taken again under a longer cover");
  EXPECT_DOUBLE_EQ(rows[1]["median_s"].get<double>(), 6e-6);
  EXPECT_TRUE(rows[1]["sm_mhz"].is_null()) << rows[1];
  EXPECT_TRUE(rows[1]["runner_timing"].is_null()) << rows[1];
  EXPECT_LT(rows[0]["evaluation"].get<int64_t>(), rows[1]["evaluation"].get<int64_t>());
}

TEST_F(Explain, BadInputIsOneLineAndExitTwo) {
  for (std::vector<std::string> args : {std::vector<std::string>{"explain", "99"},
                                        {"explain", "x"},
                                        {"explain"},
                                        {"query", "top-k", "1"},
                                        {"query", "SELECT 1", "2"},
                                        {"query"}}) {
    auto r = kevo(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST_F(Explain, NamedQueriesAnswerTheSameQuestions) {
  auto list = kevo({"query", "--list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  for (const char* n : {"best-per-run", "failures-by-status RUN", "top-k RUN K",
                        "profile CANDIDATE", "hot-lines CANDIDATE", "rounds CANDIDATE", "lineage CANDIDATE",
                        "roofs"})
    EXPECT_NE(list.out.find(n), std::string::npos) << n;
  auto listed = nlohmann::json::parse(kevo({"query", "--list", "--json"}).out);
  EXPECT_GE(listed.size(), 8u);
  for (const auto& q : listed) EXPECT_FALSE(q["sql"].get<std::string>().empty());

  const std::string child = std::to_string(child_);
  auto hot = json({"query", "hot-lines", child});
  ASSERT_EQ(hot.size(), 3u);
  EXPECT_EQ(hot[0]["line"], 3);
  EXPECT_EQ(hot[0]["text"], "float g = x[i] * scale;   // the hottest line");
  auto profile = json({"query", "profile", child});
  ASSERT_EQ(profile.size(), 2u);
  EXPECT_EQ(profile[0]["metric"], "ncu.dram_pct");
  auto lineage = json({"query", "lineage", child});
  ASSERT_EQ(lineage.size(), 2u);
  EXPECT_EQ(lineage[1]["candidate"], seed_);
  EXPECT_EQ(lineage[1]["depth"], 1);
  auto top = json({"query", "top-k", std::to_string(run_), "1"});
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0]["candidate"], child_);
  auto best = json({"query", "best-per-run"});
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(best[0]["candidate"], child_);
  EXPECT_DOUBLE_EQ(best[0]["median_s"].get<double>(), 1e-3);
  auto statuses = json({"query", "failures-by-status", std::to_string(run_)});
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_EQ(statuses[0]["n"], 2);
  auto roofs = json({"query", "roofs"});
  ASSERT_EQ(roofs.size(), 1u);
  EXPECT_DOUBLE_EQ(roofs[0]["best_gbps"].get<double>(), 50);
  // Plain SQL still works.
  auto sql = json({"query", "SELECT COUNT(*) AS n FROM candidates"});
  EXPECT_EQ(sql[0]["n"], 2);
}

}  // namespace
}  // namespace kevo
