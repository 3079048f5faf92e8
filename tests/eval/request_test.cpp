// An evaluation as data: a request that carries everything to evaluate a
// candidate elsewhere, and a result that comes back whole. The requests are
// evaluated for real (compile, runner, check) after a trip through text.
#include <cmath>
#include <fstream>
#include <limits>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/paths.h"
#include "eval/request.h"
#include "targets/target.h"
#include "support/test_support.h"

namespace kevo {
namespace {

using json = nlohmann::json;

EvalResult full_result() {
  EvalResult r;
  r.status = Status::mismatch;
  r.detail = "y[3] is 2, want 1";
  r.compile_s = 0.25;
  r.compile_cached = true;
  r.compile_log = "warning: unused\n";
  r.run_s = 1.5;
  r.stdout_text = "out";
  r.stderr_text = "err";
  r.roof_id = 7;
  CheckReport c;
  c.label = "[7, 1003] seed 1";
  c.passed = false;
  c.checked = 7021;
  c.mismatches = 2;
  c.max_abs_err = std::numeric_limits<double>::infinity();
  c.max_ulp = std::numeric_limits<double>::quiet_NaN();
  c.note = "NaN where the reference has none";
  c.failed_outputs = {"y"};
  c.first = Mismatch{"y", 3, "[0, 3]", std::numeric_limits<double>::quiet_NaN(), 1.0, "ulp:2"};
  r.checks = {c};
  r.timing = TimingStats::from_samples({3e-6, 1e-6, 2e-6, 2.5e-6}, 4, 12);
  Diagnosis d;
  d.bound = "memory";
  d.roof_fraction = 0.61;
  d.floor_s = 1.2e-6;
  d.achieved_gbps = 100;
  d.roof_gbps = 164;
  d.achieved_gflops = 3;
  d.roof_gflops = 285;
  d.why = "memory-bound at 61% of peak bandwidth";
  d.bottleneck = "dram-bandwidth";
  r.diagnosis = d;
  r.profile = {{"ncu.dram_pct", 61.5, "%", 0}, {"ncu.line.stall_samples", 12, "samples", 42}};
  return r;
}

TEST(EvalRequest, AResultSurvivesTheTripWhole) {
  const EvalResult r = full_result();
  const EvalResult back = result_from_wire(json::parse(result_to_wire(r).dump()));
  EXPECT_EQ(status_name(back.status), "mismatch");
  EXPECT_EQ(back.detail, r.detail);
  EXPECT_EQ(back.compile_s, r.compile_s);
  EXPECT_TRUE(back.compile_cached);
  EXPECT_EQ(back.compile_log, r.compile_log);
  EXPECT_EQ(back.run_s, r.run_s);
  EXPECT_EQ(back.stdout_text, "out");
  EXPECT_EQ(back.stderr_text, "err");
  EXPECT_EQ(back.roof_id, 7);
  ASSERT_EQ(back.checks.size(), 1u);
  const CheckReport& c = back.checks[0];
  EXPECT_EQ(c.label, r.checks[0].label);
  EXPECT_EQ(c.checked, 7021);
  EXPECT_EQ(c.mismatches, 2);
  EXPECT_TRUE(std::isinf(c.max_abs_err));
  EXPECT_TRUE(std::isnan(c.max_ulp));
  EXPECT_EQ(c.note, r.checks[0].note);
  EXPECT_EQ(c.failed_outputs, std::vector<std::string>{"y"});
  ASSERT_TRUE(c.first.has_value());
  EXPECT_EQ(c.first->coords, "[0, 3]");
  EXPECT_TRUE(std::isnan(c.first->got));
  EXPECT_EQ(c.first->want, 1.0);
  EXPECT_EQ(c.first->compare, "ulp:2");
  ASSERT_TRUE(back.timing.has_value());
  EXPECT_EQ(back.timing->samples_s, r.timing->samples_s);  // in measurement order
  EXPECT_EQ(back.timing->median_s, r.timing->median_s);
  EXPECT_EQ(back.timing->calls_per_sample, 4);
  EXPECT_EQ(back.timing->warmup_calls, 12);
  ASSERT_TRUE(back.diagnosis.has_value());
  EXPECT_EQ(back.diagnosis->why, r.diagnosis->why);
  EXPECT_EQ(back.diagnosis->roof_fraction, 0.61);
  EXPECT_EQ(back.diagnosis->bottleneck, "dram-bandwidth");
  ASSERT_EQ(back.profile.size(), 2u);
  EXPECT_EQ(back.profile[1].metric, "ncu.line.stall_samples");
  EXPECT_EQ(back.profile[1].source_line, 42);
  // And the same text again: nothing drifts on a second trip.
  EXPECT_EQ(result_to_wire(back).dump(), result_to_wire(r).dump());
}

TEST(EvalRequest, AMalformedOneSaysWhatIsWrong) {
  try {
    request_from_json({{"source", {{"text", ""}, {"language", "c"}}}, {"knobs", json::object()}});
    ADD_FAILURE() << "a request without a task was read";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("'task'"), std::string::npos) << e.what();
  }
  json bad_knob = {{"task", json::object()},
                   {"source", {{"text", ""}, {"language", "c"}}},
                   {"knobs", {{"BLOCK", "big"}}},
                   {"roof", json::object()}};
  try {
    request_from_json(bad_knob);
    ADD_FAILURE() << "a non-integer knob was read";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("BLOCK"), std::string::npos) << e.what();
  }
  EXPECT_THROW(result_from_wire({{"status", "fine"}}), UserError);
}

class EvalRequestRun : public ::testing::Test {
 protected:
  // Builds a request the way a backend would, sends it through text, and
  // evaluates what arrives: nothing but the JSON reaches the evaluation.
  EvalResult evaluate_after_trip(const std::string& kernel) {
    const Task task = test::quick_task("swiglu", {{"g", {64, 1000}}},
                                       {{"limits", {{"timeout_s", 5}, {"max_total_s", 30}}}});
    const auto path = test::source_dir() / "eval" / "kernels" / (kernel + ".c");
    EvalRequest req;
    req.task = task.resolved;
    req.source = {read_text_file(path), path, "c"};
    req.name = kernel;
    req.roof = test::fake_roof(1000, 1e6);  // a floor far below any real time
    req.roof.id = 11;
    const std::string text = request_to_json(req).dump();
    const EvalRequest arrived = request_from_json(json::parse(text));
    EXPECT_EQ(parse_task(arrived.task).hash, task.hash);
    const EvalResult r = evaluate_request(arrived, cache_dir());
    return result_from_wire(json::parse(result_to_wire(r).dump()));
  }
};

TEST_F(EvalRequestRun, TheCheckRunsWhereTheRequestIsEvaluated) {
  const EvalResult ok = evaluate_after_trip("right");
  EXPECT_EQ(status_name(ok.status), "ok") << ok.detail;
  EXPECT_EQ(ok.roof_id, 11);  // stamped with the submitting host's roof
  ASSERT_EQ(ok.checks.size(), 6u);
  for (const auto& c : ok.checks) EXPECT_TRUE(c.passed) << c.label;
  ASSERT_TRUE(ok.timing.has_value());
  EXPECT_GE(ok.timing->samples_s.size(), 3u);
  ASSERT_TRUE(ok.diagnosis.has_value());

  const EvalResult wrong = evaluate_after_trip("wrong");
  EXPECT_EQ(status_name(wrong.status), "mismatch") << wrong.detail;
  ASSERT_FALSE(wrong.checks.empty());
  EXPECT_FALSE(wrong.checks.front().passed);
  EXPECT_TRUE(wrong.checks.front().first.has_value());
}

// A cluster's request: the node takes its own node type's roof from the
// request's list (its id stamps the result), else the one it calibrated
// before; it calibrates only when it has neither (the slurm tests do that).
TEST(EvalRequestRoof, ANodeTakesItsOwnTypesRoof) {
  std::unique_ptr<Target> cpu = make_target("cpu");
  EvalRequest req;
  req.roof_by_node = true;
  Roof other = test::fake_roof(10, 100);
  other.target = "cpu";
  other.host_key = "another node type";
  other.id = 5;
  Roof mine = test::fake_roof(20, 200);
  mine.target = "cpu";
  mine.host_key = cpu->host_key();
  mine.id = 9;
  req.roofs = {other, mine};
  const EvalRequest arrived = request_from_json(json::parse(request_to_json(req).dump()));
  ASSERT_EQ(arrived.roofs.size(), 2u);
  const auto dir = test::temp_dir("node-roof");
  int calibrations = 0;
  auto said = [&](std::string_view) { ++calibrations; };
  Roof got = roof_here(arrived, *cpu, dir, said);
  EXPECT_EQ(got.id, 9);
  EXPECT_EQ(got.host_key, cpu->host_key());
  // Not in the request, but kept from an earlier calibration on this node.
  Roof kept = mine;
  kept.measured_at = "2026-01-01T00:00:00Z";
  json k = kept.to_json();
  std::filesystem::create_directories(dir / "roofs");
  std::ofstream(dir / "roofs" / ("cpu-" + sha256_hex(cpu->host_key()).substr(0, 16) + ".json"))
      << k.dump();
  req.roofs = {other};
  got = roof_here(req, *cpu, dir, said);
  EXPECT_EQ(got.id, 0);  // the submitting store adds it
  EXPECT_EQ(got.measured_at, "2026-01-01T00:00:00Z");
  EXPECT_EQ(calibrations, 0);
}

}  // namespace
}  // namespace kevo
