#include "core/store.h"

#include <sqlite3.h>

#include <cmath>

#include <gtest/gtest.h>

#include "core/error.h"
#include "support/test_support.h"

namespace kevo {
namespace {

TEST(Store, CreatesTheSchemaAndRecordsAnEvaluation) {
  auto dir = test::temp_dir("store");
  Task task = test::quick_task("swiglu", {{"g", {4, 8}}});
  int64_t eval_id;
  {
    Store s(dir / "k.db");
    EXPECT_EQ(s.schema_version(), Store::latest_schema_version());
    int64_t run = s.begin_run("eval", task, {{"kernel", "k.c"}});
    std::string h = s.put_source("int x;", "k.c", "c");
    EXPECT_EQ(s.put_source("int x;", "k.c", "c"), h);  // stored once by content
    int64_t c = s.add_candidate(run, h, {{"VEC", 8}}, "k", "manual");
    int64_t child = s.add_candidate(run, h, {{"VEC", 16}}, "k", "knob", {c});
    EvalResult r;
    r.status = Status::ok;
    r.timing = TimingStats::from_samples({3e-3, 1e-3, 2e-3}, 1, 2);
    r.checks.push_back({"[4, 8] seed 1", true, 32, 0, 1e-7, 2, std::nullopt, "", {}});
    eval_id = s.add_evaluation(child, r);
    s.finish_run(run, "done");
  }
  Store ro(dir / "k.db", /*read_only=*/true);
  auto q = ro.query("SELECT status, median_s, n_samples, max_ulp FROM evaluations WHERE id = ?",
                    {eval_id});
  ASSERT_EQ(q.rows.size(), 1u);
  EXPECT_EQ(std::get<std::string>(q.rows[0][0]), "ok");
  EXPECT_DOUBLE_EQ(std::get<double>(q.rows[0][1]), 2e-3);
  EXPECT_EQ(std::get<int64_t>(q.rows[0][2]), 3);
  auto samples = ro.query("SELECT seconds FROM samples WHERE evaluation_id = ? ORDER BY seq", {eval_id});
  ASSERT_EQ(samples.rows.size(), 3u);
  EXPECT_DOUBLE_EQ(std::get<double>(samples.rows[0][0]), 3e-3);  // measurement order kept
  auto lineage = ro.query("SELECT COUNT(*) FROM lineage");
  EXPECT_EQ(std::get<int64_t>(lineage.rows[0][0]), 1);
  auto run = ro.query("SELECT status, task_hash FROM runs");
  EXPECT_EQ(std::get<std::string>(run.rows[0][0]), "done");
  EXPECT_EQ(std::get<std::string>(run.rows[0][1]), task.hash);
  // Read-only means read-only.
  EXPECT_THROW(ro.query("DELETE FROM runs"), UserError);
}

// One measurement of t seconds.
EvalResult timed(double t, Status status = Status::ok) {
  EvalResult r;
  r.status = status;
  r.timing = TimingStats::from_samples({t, t, t}, 1, 0);
  return r;
}

// A store with one run and one source, for candidates measured several times.
struct MeasuredCandidates {
  explicit MeasuredCandidates(const std::string& name)
      : dir(test::temp_dir(name)), store(dir / "k.db") {
    run = store.begin_run("run", test::quick_task("swiglu", {{"g", {4, 8}}}), {});
    source = store.put_source("int x;", "k.c", "c");
  }
  int64_t candidate(int64_t vec) { return store.add_candidate(run, source, {{"VEC", vec}}, "k", "knob"); }
  std::filesystem::path dir;
  Store store;
  int64_t run = 0;
  std::string source;
};

// A confirmation takes one measurement per round after the search's own: the
// one that stands for it is the median round, or the first that failed.
TEST(Store, TheConfirmingEvaluationIsTheMedianRound) {
  MeasuredCandidates m("store-confirm");
  Store& s = m.store;
  int64_t once = m.candidate(4);
  s.add_evaluation(once, timed(1e-3));
  EXPECT_FALSE(s.confirming_evaluation(once).has_value());

  int64_t c = m.candidate(8);
  s.add_evaluation(c, timed(0.5e-3));  // the search's measurement: never the confirmation
  s.add_evaluation(c, timed(3e-3));
  const int64_t mid = s.add_evaluation(c, timed(2e-3));
  s.add_evaluation(c, timed(1e-3));
  EXPECT_EQ(s.confirming_evaluation(c), std::optional<int64_t>(mid));
  s.add_evaluation(c, timed(4e-3));  // even count: the lower middle one
  EXPECT_EQ(s.confirming_evaluation(c), std::optional<int64_t>(mid));

  int64_t bad = m.candidate(16);
  s.add_evaluation(bad, timed(1e-3));
  s.add_evaluation(bad, timed(1e-3));
  EvalResult crash;
  crash.status = Status::crash;
  const int64_t crashed = s.add_evaluation(bad, crash);
  s.add_evaluation(bad, timed(1e-3));
  EXPECT_EQ(s.confirming_evaluation(bad), std::optional<int64_t>(crashed));
}

TEST(Store, ASuspectRoundStandsForTheConfirmationOnlyWhenNoRoundIsOk) {
  MeasuredCandidates m("store-confirm-suspect");
  Store& s = m.store;
  const EvalResult ok = timed(1e-3);
  const EvalResult low = timed(1e-3, Status::suspect);
  int64_t c = m.candidate(8);
  s.add_evaluation(c, ok);
  const int64_t first_low = s.add_evaluation(c, low);
  s.add_evaluation(c, low);
  EXPECT_EQ(s.confirming_evaluation(c), std::optional<int64_t>(first_low));
  const int64_t good = s.add_evaluation(c, ok);
  EXPECT_EQ(s.confirming_evaluation(c), std::optional<int64_t>(good));
}

// A candidate that reuses an earlier run's measurement has no search
// measurement of its own: every one of its evaluations is a confirmation round.
TEST(Store, AReusedCandidatesEvaluationsAreAllConfirmationRounds) {
  MeasuredCandidates m("store-confirm-reused");
  Store& s = m.store;
  const int64_t earlier = s.add_evaluation(m.candidate(8), timed(1e-3));
  const int64_t c = s.add_candidate(m.run, m.source, {{"VEC", 8}}, "k", "knob", {}, earlier);
  EXPECT_FALSE(s.confirming_evaluation(c).has_value());
  const int64_t mid = s.add_evaluation(c, timed(2e-3));  // the first round
  EXPECT_EQ(s.confirming_evaluation(c), std::optional<int64_t>(mid));
  s.add_evaluation(c, timed(1e-3));
  s.add_evaluation(c, timed(3e-3));
  EXPECT_EQ(s.confirming_evaluation(c), std::optional<int64_t>(mid));
}

// A candidate's result is one rule for every reader (the candidate_results
// view, Store::result_evaluation and the typed reads): the earlier run's
// measurement it reuses, else its own first evaluation, never a later round.
TEST(Store, ACandidatesResultIsTheReusedMeasurementElseItsFirst) {
  MeasuredCandidates m("store-result-rule");
  Store& s = m.store;
  const int64_t measured = m.candidate(8);
  const int64_t earlier = s.add_evaluation(measured, timed(1e-3));
  const int64_t own_later = s.add_evaluation(measured, timed(9e-3));  // a round
  const int64_t reusing = s.add_candidate(m.run, m.source, {{"VEC", 8}}, "k", "knob", {}, earlier);
  s.add_evaluation(reusing, timed(5e-3));  // a confirmation round of its own
  const int64_t pending = m.candidate(16);

  EXPECT_EQ(s.result_evaluation(measured), std::optional<int64_t>(earlier));
  EXPECT_EQ(s.result_evaluation(reusing), std::optional<int64_t>(earlier));
  EXPECT_FALSE(s.result_evaluation(pending).has_value());

  auto view = s.query("SELECT candidate_id, evaluation_id FROM candidate_results ORDER BY 1");
  ASSERT_EQ(view.rows.size(), 3u);
  EXPECT_EQ(view.rows[0][1], SqlValue(earlier));
  EXPECT_EQ(view.rows[1][1], SqlValue(earlier));
  EXPECT_EQ(view.rows[2][1], SqlValue(nullptr));

  const std::vector<CandidateResult> results = s.results(m.run);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[1].candidate.id, reusing);
  EXPECT_EQ(results[1].candidate.reuses_evaluation, std::optional<int64_t>(earlier));
  EXPECT_DOUBLE_EQ(results[1].median_s.value_or(0), 1e-3);  // not the 5 ms round
  EXPECT_EQ(results[1].status, "ok");
  EXPECT_TRUE(results[2].status.empty());
  EXPECT_FALSE(results[2].median_s.has_value());
  EXPECT_EQ(s.evaluations_of(measured), (std::vector<int64_t>{earlier, own_later}));
  EXPECT_EQ(s.candidates(m.run).size(), 3u);
  EXPECT_EQ(s.candidate(reusing)->result_evaluation, std::optional<int64_t>(earlier));
}

// A store of the schema before the view, opened read-only (not migrated),
// still answers through it: the connection gets it as a temporary view.
TEST(Store, AnOlderStoreReadOnlyHasTheResultView) {
  MeasuredCandidates m("store-old-view");
  const int64_t c = m.candidate(8);
  const int64_t e = m.store.add_evaluation(c, timed(1e-3));
  m.store.query("DROP VIEW candidate_results");
  m.store.query("PRAGMA user_version = 4");
  Store ro(m.dir / "k.db", /*read_only=*/true);
  EXPECT_EQ(ro.schema_version(), 4);
  EXPECT_EQ(ro.result_evaluation(c), std::optional<int64_t>(e));
  auto q = ro.query("SELECT evaluation_id FROM candidate_results");
  ASSERT_EQ(q.rows.size(), 1u);
  EXPECT_EQ(q.rows[0][0], SqlValue(e));
}

// The typed reads return what the writes stored.
TEST(Store, TypedReadsOfRunsSourcesProfilesAndBatches) {
  MeasuredCandidates m("store-typed");
  Store& s = m.store;
  std::optional<RunRecord> r = s.run(m.run);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->kind, "run");
  EXPECT_EQ(r->status, "running");
  EXPECT_TRUE(r->finished_at.empty());
  EXPECT_TRUE(r->summary().is_null());
  s.set_run_summary(m.run, {{"elapsed_s", 2.5}});
  s.finish_run(m.run, "done");
  r = s.run(m.run);
  EXPECT_EQ(r->status, "done");
  EXPECT_FALSE(r->finished_at.empty());
  EXPECT_DOUBLE_EQ(r->summary()["elapsed_s"].get<double>(), 2.5);
  s.reopen_run(m.run);
  EXPECT_EQ(s.run(m.run)->status, "running");
  EXPECT_FALSE(s.run(m.run + 1).has_value());

  EXPECT_EQ(s.source(m.source)->text, "int x;");
  EXPECT_FALSE(s.source("nope").has_value());
  const std::string other = s.put_source("int y;", "y.c", "c");
  s.add_candidate(m.run, other, {}, "y", "seed");
  m.candidate(4);
  const std::vector<SourceRecord> used = s.sources_of_run(m.run);
  ASSERT_EQ(used.size(), 2u);
  EXPECT_EQ(used[0].hash, other);  // in the order first used
  EXPECT_EQ(used[1].hash, m.source);

  EvalResult p = timed(1e-3);
  p.profile = {{"ncu.dram_pct", 80, "%", 0}, {"ncu.line.stall_share", 0.5, "fraction", 7}};
  const int64_t e = s.add_evaluation(m.candidate(2), p);
  const std::vector<ProfileRow> rows = s.profile(e);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].metric, "ncu.line.stall_share");
  EXPECT_EQ(rows[1].source_line, 7);
  EXPECT_EQ(s.run_cost(m.run).evaluations, 1);

  const nlohmann::json config = {{"name", "a"}};
  const int64_t b = s.add_batch("nightly", "suite.json", "{}", {{0, "a", "a.json", config, {}, "", ""},
                                                               {0, "b", "b.json", config, {}, "", ""}});
  s.set_batch_task(b, 2, m.run, "done", "budget");
  std::optional<BatchRecord> batch = s.batch(b);
  ASSERT_TRUE(batch.has_value());
  ASSERT_EQ(batch->tasks.size(), 2u);
  EXPECT_EQ(batch->tasks[0].seq, 1);
  EXPECT_EQ(batch->tasks[0].status, "pending");
  EXPECT_EQ(batch->tasks[0].config, config);
  EXPECT_EQ(batch->tasks[1].run, std::optional<int64_t>(m.run));
  EXPECT_EQ(batch->tasks[1].detail, "budget");
  EXPECT_EQ(s.batch_task_run(b, 2), std::optional<int64_t>(m.run));
  EXPECT_FALSE(s.batch_task_run(b, 1).has_value());
  EXPECT_EQ(s.latest_batch_named("nightly"), std::optional<int64_t>(b));
  EXPECT_FALSE(s.latest_batch_named("weekly").has_value());
}

// The machine's state at the end of a timing is stored as machine.* profile
// rows and read back by itself, without the profiler's or compiler's rows.
TEST(Store, MachineStateIsTheMachineRowsOfAnEvaluation) {
  MeasuredCandidates m("store-machine");
  Store& s = m.store;
  const int64_t c = m.candidate(8);
  EvalResult r = timed(1e-3);
  r.profile = {{"ptxas.registers", 32, "register/thread", 0},
               {"machine.sm_mhz", 1980, "MHz", 0},
               {"machine.throttle", 0, "mask", 0},
               {"machine.power_w", NAN, "W", 0},  // not readable: stored as NULL
               {"ncu.dram_pct", 87.5, "%", 0}};
  const int64_t e = s.add_evaluation(c, r);
  EXPECT_EQ(s.machine_state(e),
            (std::map<std::string, double>{{"machine.sm_mhz", 1980}, {"machine.throttle", 0}}));
  EXPECT_TRUE(s.machine_state(s.add_evaluation(c, timed(1e-3))).empty());
}

TEST(Store, RoofsByHost) {
  auto dir = test::temp_dir("store-roof");
  Store s(dir / "k.db");
  EXPECT_TRUE(s.roofs("cpu", "x").empty());
  Roof r = test::fake_roof(10, 100);
  r.host_key = "x";
  s.add_roof(r);
  r.bandwidth[0].gbps = 20;
  int64_t second = s.add_roof(r);
  auto got = s.roofs("cpu", "x");
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got.back().id, second);  // oldest first
  EXPECT_DOUBLE_EQ(got.back().bandwidth[0].gbps, 20);
  EXPECT_DOUBLE_EQ(got.front().bandwidth[0].gbps, 10);
  EXPECT_TRUE(s.roofs("cpu", "y").empty());
  auto metrics = s.query("SELECT COUNT(*) FROM roof_metrics WHERE roof_id = ?", {second});
  EXPECT_EQ(std::get<int64_t>(metrics.rows[0][0]), 3);
}

TEST(Store, RefusesANewerSchema) {
  auto dir = test::temp_dir("store-new");
  {
    sqlite3* db;
    ASSERT_EQ(sqlite3_open((dir / "k.db").c_str(), &db), SQLITE_OK);
    sqlite3_exec(db, "PRAGMA user_version = 999", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }
  try {
    Store s(dir / "k.db");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("newer than this kevo"), std::string::npos);
  }
}

TEST(Store, MissingStoreForReading) {
  EXPECT_THROW(Store("/nonexistent/dir/k.db", true), UserError);
}

TEST(Store, WalModeAndIntegrity) {
  auto dir = test::temp_dir("store-wal");
  Store s(dir / "k.db");
  EXPECT_EQ(std::get<std::string>(s.query("PRAGMA journal_mode").rows[0][0]), "wal");
  EXPECT_EQ(std::get<std::string>(s.query("PRAGMA integrity_check").rows[0][0]), "ok");
}

}  // namespace
}  // namespace kevo
