// The search engine on synthetic spaces through a fake backend (no compiler):
// each strategy finds a known optimum, stop conditions, dedup across a
// resumed run and across runs, constraints, replay.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "bench/strategy_bench.h"
#include "core/hash.h"
#include "core/store.h"
#include "eval/backend.h"
#include "knowledge/knowledge_base.h"
#include "search/engine.h"
#include "search/session.h"
#include "search/tree.h"
#include "support/test_support.h"

namespace kevo {
namespace {

// Two families over knobs A, B (0..7) and C (0..3), with a constraint. The
// optimum is family "fast" at A=5 B=2 C=3; "slow" is 3 s slower everywhere.
// Some points fail to "compile".
const char* kFast =
    "// @kevo knob A 0 {0, 1, 2, 3, 4, 5, 6, 7}\n"
    "// @kevo knob B 0 {0, 1, 2, 3, 4, 5, 6, 7}\n"
    "// @kevo knob C 0 {0, 1, 2, 3}\n"
    "// @kevo require A + B != 6\n"
    "int kevo_kernel(void) { return 0; }  /* fast */\n";
const char* kSlow =
    "// @kevo knob A 0 {0, 1, 2, 3, 4, 5, 6, 7}\n"
    "// @kevo knob C 1 {0, 1, 2, 3}\n"
    "int kevo_kernel(void) { return 0; }  /* slow */\n";

Family family(const std::string& name, const std::string& text) {
  Family f;
  f.name = name;
  f.origin = name + ".c";
  f.text = text;
  f.language = "c";
  f.source_hash = sha256_hex(text);
  f.space = KnobSpace::parse_source(text, f.origin.string());
  return f;
}

SearchSpace synthetic_space() {
  return SearchSpace({family("fast", kFast), family("slow", kSlow)});
}

double synthetic_time(const std::string& fam, const KnobValues& k) {
  auto sq = [](double x) { return x * x; };
  double t = 1 + 0.5 * sq(k.at("A") - 5) + 0.3 * sq(k.at("C") - 3);
  if (fam == "fast") return t + 0.4 * sq(k.at("B") - 2);
  return t + 3;
}

class FakeBackend final : public ImmediateBackend {
 public:
  std::string_view name() const override { return "fake"; }
  EvalResult answer(const EvalJob& job) override {
    const Family& f = *job.family;
    if (!f.space.valid(job.knobs)) ++invalid;
    ++calls;
    measured.push_back(f.source_hash + "|" + knobs_to_json(job.knobs));
    clock_s += 1;
    EvalResult r;
    r.compile_s = 0.25;
    r.run_s = 0.75;
    if (f.name == "fast" && job.knobs.at("A") == 0 && job.knobs.at("C") == 1) {  // NOLINT
      r.status = Status::compile_error;
      r.detail = "synthetic compile error";
    } else {
      const bool synthetic = f.name == "fast" || f.name == "slow";
      const std::string key = f.source_hash + "|" + knobs_to_json(job.knobs);
      const bool lucky = key == lucky_key && ++lucky_calls == 1;
      double t = lucky      ? 0.5e-3  // a measurement that caught the machine at its best
                 : synthetic ? synthetic_time(f.name, job.knobs) * 1e-3
                           : (1 + static_cast<double>(std::hash<std::string>{}(
                                      knobs_to_json(job.knobs)) % 1000) / 100) * 1e-3;
      // A machine that slows down call after call, from call drift_after on.
      if (!lucky && drift > 0 && calls > drift_after)
        t *= 1 + drift * static_cast<double>(calls - drift_after - 1);
      if (key == wobble_key && ++wobble_calls == 3) t *= 1.4;  // its second re-measurement
      r.timing = TimingStats::from_samples({t * 0.99, t, t * 1.01, t * 1.02, t}, 1, 2);
      if (key == suspect_key && ++suspect_calls == 2) {  // its first re-measurement
        r.status = Status::suspect;
        r.detail = "synthetic: below the floor";
      }
      // The machine's state at the end of the timing, from call
      // machine_from on: warmer with every call.
      if (machine_from > 0 && calls >= machine_from)
        r.profile = {{"machine.sm_mhz", 1980, "MHz", 0},
                     {"machine.gpu_temp_c", static_cast<double>(calls), "C", 0},
                     {"ptxas.registers", 32, "register/thread", 0}};
      Diagnosis d;
      d.bound = "memory";
      // A compute-bound task on a GPU under its power cap: capped_key's first
      // measurement ran at 1500 MHz, so it took 1980/1500 as long; every
      // other measurement ran at 1980 MHz.
      if (!capped_key.empty()) {
        d.bound = "compute";
        const bool capped = key == capped_key && ++capped_calls == 1;
        if (capped) r.timing = TimingStats::from_samples({t * 1.32 * 0.99, t * 1.32, t * 1.32 * 1.01}, 1, 2);
        r.profile.push_back({"machine.sm_mhz", capped ? 1500.0 : 1980.0, "MHz", 0});
      }
      d.roof_fraction = 1e-3 / r.timing->median_s;
      d.floor_s = 1e-3;
      r.diagnosis = d;
    }
    return r;
  }
  double clock() const override { return clock_s; }

  std::string lucky_key;  // its first measurement is far too fast
  std::string suspect_key;  // its second measurement is suspect (below the floor)
  std::string wobble_key;   // its third measurement is 1.4x slower (a noisy round)
  int wobble_calls = 0;
  int suspect_calls = 0;
  double drift = 0;       // each call after drift_after is this much slower than the last
  int drift_after = 0;
  int machine_from = 0;  // the call from which results carry the machine's state (0: none)
  std::string capped_key;  // its first measurement ran at a lower SM clock (see answer)
  int capped_calls = 0;
  int lucky_calls = 0;
  int invalid = 0;
  int calls = 0;
  double clock_s = 0;
  std::vector<std::string> measured;
};

Task synthetic_task() { return test::quick_task("scaled_softmax", {{"x", {4, 64}}}); }

SearchConfig config(const std::string& strategy, int64_t max_evals, uint64_t seed = 1) {
  SearchConfig c;
  c.strategy = strategy;
  c.stop.max_evals = max_evals;
  c.seed = seed;
  c.batch = 4;
  c.confirm = 0;  // the confirmation has its own test
  return c;
}

struct Fixture {
  explicit Fixture(const std::string& name) : dir(test::temp_dir(name)), store(dir / "s.db") {}
  std::filesystem::path dir;
  Store store;
  Task task = synthetic_task();
  SearchSpace space = synthetic_space();
  FakeBackend backend;
};

bool found_optimum(const Engine& e) {
  auto b = e.best();
  return b && e.space().family(b->point.family).name == "fast" &&
         b->point.knobs == KnobValues{{"A", 5}, {"B", 2}, {"C", 3}};
}

TEST(Search, SpaceEnumeratesOnlyValidPoints) {
  SearchSpace s = synthetic_space();
  // fast: 8*8*4 minus the 7 (A, B) pairs with A + B == 6, times 4; slow: 8*4.
  EXPECT_EQ(s.size(), (64u - 7u) * 4u + 32u);
  for (uint64_t i = 0; i < s.size(); ++i) ASSERT_TRUE(s.valid(s.at(i))) << i;
}

TEST(Search, GridVisitsEverythingOnceAndFindsTheOptimum) {
  Fixture f("grid");
  Engine e(f.task, f.space, f.store, f.backend, config("grid", 10000), this_machine());
  e.begin({});
  std::string why = e.run();
  EXPECT_NE(why.find("exhausted"), std::string::npos) << why;
  EXPECT_EQ(static_cast<uint64_t>(f.backend.calls), f.space.size());
  EXPECT_EQ(std::set<std::string>(f.backend.measured.begin(), f.backend.measured.end()).size(),
            f.backend.measured.size());
  EXPECT_TRUE(found_optimum(e));
  EXPECT_EQ(f.backend.invalid, 0);
  EXPECT_EQ(e.stats().by_status.at("compile_error"), 7);  // A=0 C=1, B in 0..7 except B=6
}

TEST(Search, RandomSamplesWithoutReplacement) {
  Fixture f("random");
  Engine e(f.task, f.space, f.store, f.backend, config("random", 10000, 7), this_machine());
  e.begin({});
  e.run();
  EXPECT_EQ(static_cast<uint64_t>(f.backend.calls), f.space.size());
  EXPECT_EQ(std::set<std::string>(f.backend.measured.begin(), f.backend.measured.end()).size(),
            f.backend.measured.size());
  EXPECT_TRUE(found_optimum(e));
}

// The device's facts reach the starts through the engine: without them a
// start that reads SMS is skipped, with them it is measured.
TEST(Search, TheDevicesFactsReachTheStarts) {
  for (int with = 0; with < 2; ++with) {
    Fixture f("start-facts" + std::to_string(with));
    f.space = SearchSpace({family("fast", std::string(kFast) + "// @kevo start A = SMS / 16, C = 2\n"),
                           family("slow", kSlow)});
    Engine e(f.task, f.space, f.store, f.backend, config("grid", 3), this_machine());
    if (with) e.set_start_facts({{"SMS", 66}});  // A = 4
    e.begin({});
    e.run();
    size_t starts = 0;
    for (const auto& o : e.observations())
      if (o.synthesizer == "start") {
        ++starts;
        EXPECT_EQ(o.point.knobs, (KnobValues{{"A", 4}, {"B", 0}, {"C", 2}}));
      }
    EXPECT_EQ(starts, static_cast<size_t>(with));
  }
}

// A family's `@kevo start` lines are measured right after the seeds, one
// point per timed shape, marked "start"; a start that breaks a constraint,
// or repeats a seed or another start, is not.
TEST(Search, TheFamiliesStartsFollowTheSeeds) {
  Fixture f("starts");
  const std::string fast = std::string(kFast) +
                           "// @kevo start A = DIM_x_1 / 16 + 1, C = 3\n"  // x [4, 64]: A=5 C=3
                           "// @kevo start A = 6, B = 0\n"                 // breaks A + B != 6
                           "// @kevo start A = DIM_x_0 / 8\n";             // 0: the seed itself
  f.space = SearchSpace({family("fast", fast), family("slow", kSlow)});
  for (int k = 0; k < 2; ++k) {
    Engine e(f.task, f.space, f.store, f.backend, config(k == 0 ? "grid" : "mcts", 3), this_machine());
    e.begin({});
    e.reuse_earlier_runs = false;
    e.run();
    ASSERT_GE(e.observations().size(), 3u);
    const Observation& start = e.observations()[2];
    EXPECT_EQ(start.synthesizer, "start");
    EXPECT_EQ(e.space().family(start.point.family).name, "fast");
    EXPECT_EQ(start.point.knobs, (KnobValues{{"A", 5}, {"B", 0}, {"C", 3}}));
    EXPECT_EQ(e.observations()[0].synthesizer, "seed");
    EXPECT_EQ(e.observations()[1].synthesizer, "seed");
    size_t starts = 0;
    for (const auto& o : e.observations()) starts += o.synthesizer == "start";
    EXPECT_EQ(starts, 1u);
  }
}

// The guided strategies find the optimum of this smooth space in well under
// half its size, for every seed tried.
class Guided : public ::testing::TestWithParam<std::string> {};

TEST_P(Guided, FindsTheOptimumWithinBudget) {
  for (uint64_t seed : {1, 2, 3}) {
    Fixture f("guided-" + GetParam() + std::to_string(seed));
    Engine e(f.task, f.space, f.store, f.backend, config(GetParam(), 100, seed), this_machine());
    e.begin({});
    std::string why = e.run();
    SCOPED_TRACE(why + " evals " + std::to_string(e.stats().evaluations) + " dups " + std::to_string(e.stats().duplicates));
    EXPECT_TRUE(found_optimum(e)) << GetParam() << " seed " << seed << ": best "
                                  << (e.best() ? knobs_to_string(e.best()->point.knobs) : "none");
    EXPECT_EQ(f.backend.invalid, 0);
    EXPECT_EQ(e.stats().invalid, 0);
    EXPECT_LE(e.stats().evaluations, 100);
  }
}
INSTANTIATE_TEST_SUITE_P(Strategies, Guided, ::testing::Values("evolution", "mcts", "surrogate"));

// The model-based parameters are checked like every strategy's: a bad value
// or an unknown key names its JSON path. The config check builds the
// strategy with no space at all (parse_search_config), which must not crash.
TEST(Search, ModelParametersAreChecked) {
  StrategyEnv env;  // no space, as when a config is checked
  auto error_at = [&](const char* strategy, const nlohmann::json& params) -> std::string {
    try {
      StrategyRegistry::builtin().make(strategy, params, "$.search.params", env);
    } catch (const ConfigError& e) {
      return e.path();
    }
    return "";
  };
  EXPECT_EQ(error_at("surrogate", {{"kappa", -1}}), "$.search.params.kappa");
  EXPECT_EQ(error_at("surrogate", {{"neighbours", 0}}), "$.search.params.neighbours");
  EXPECT_EQ(error_at("surrogate", {{"initial_random", -2}}), "$.search.params.initial_random");
  EXPECT_EQ(error_at("surrogate", {{"kapa", 1}}), "$.search.params.kapa");
  EXPECT_EQ(error_at("surrogate", {{"kappa", 0.5}, {"pool", 64}}), "");
  EXPECT_EQ(error_at("mcts", {{"model_choices", 0}}), "$.search.params.model_choices");
  EXPECT_EQ(error_at("mcts", {{"kappa", -0.1}}), "$.search.params.kappa");
  EXPECT_EQ(error_at("mcts", {{"model_choices", 1}}), "");
  EXPECT_EQ(error_at("mcts", nlohmann::json::object()), "");
}

TEST(Search, StopConditions) {
  {
    Fixture f("stop-evals");
    Engine e(f.task, f.space, f.store, f.backend, config("random", 17), this_machine());
    e.begin({});
    EXPECT_NE(e.run().find("17 evaluations"), std::string::npos);
    EXPECT_EQ(e.stats().evaluations, 17);
  }
  {
    Fixture f("stop-time");
    SearchConfig c = config("random", 0);
    c.stop.max_seconds = 10;  // the fake backend charges 1 s per evaluation
    Engine e(f.task, f.space, f.store, f.backend, c, this_machine());
    e.begin({});
    EXPECT_NE(e.run().find("time budget"), std::string::npos);
    EXPECT_EQ(e.stats().evaluations, 10);
  }
  {
    Fixture f("stop-target");
    SearchConfig c = config("grid", 0);
    c.stop.target_seconds = 1.0001e-3;  // only the optimum meets it
    Engine e(f.task, f.space, f.store, f.backend, c, this_machine());
    e.begin({});
    EXPECT_NE(e.run().find("target met"), std::string::npos);
    EXPECT_TRUE(found_optimum(e));
  }
  {
    Fixture f("stop-fraction");
    SearchConfig c = config("mcts", 500);
    c.stop.target_fraction = 0.9;  // roof_fraction = 1 ms / time: near the optimum only
    Engine e(f.task, f.space, f.store, f.backend, c, this_machine());
    e.begin({});
    EXPECT_NE(e.run().find("of the roof"), std::string::npos);
    EXPECT_GE(e.best()->obs.roof_fraction, 0.9);
  }
  {
    Fixture f("stop-speedup");
    SearchConfig c = config("mcts", 500);
    c.stop.target_speedup = 2;  // the fast seed (A=B=C=0) takes 17.2: 2x is 8.6
    Engine e(f.task, f.space, f.store, f.backend, c, this_machine());
    e.begin({});
    EXPECT_NE(e.run().find("x the seed"), std::string::npos);
    EXPECT_GE(e.best_seed()->obs.seconds / e.best()->obs.seconds, 2);
  }
  {
    Fixture f("stop-stagnation");
    SearchConfig c = config("grid", 0);
    c.stop.stagnation = 5;
    Engine e(f.task, f.space, f.store, f.backend, c, this_machine());
    e.begin({});
    EXPECT_NE(e.run().find("no 1% improvement in 5"), std::string::npos);
    EXPECT_LT(e.stats().evaluations, 100);
  }
}

int64_t count(Store& s, const std::string& sql, int64_t run) {
  return std::get<int64_t>(s.query(sql, {SqlValue(run)}).rows.at(0).at(0));
}

TEST(Search, ResumeMeasuresNothingTwice) {
  Fixture f("resume");
  int64_t run = 0;
  {
    Engine e(f.task, f.space, f.store, f.backend, config("evolution", 20), this_machine());
    run = e.begin({});
    e.run();
    EXPECT_EQ(e.stats().evaluations, 20);
  }
  // A candidate left unevaluated, as a kill between storing it and its result leaves it.
  const Point pending{0, {{"A", 7}, {"B", 7}, {"C", 3}}};
  f.store.add_candidate(run, f.space.family(0).source_hash, pending.knobs, "fast", "knob:memory");
  const int calls_before = f.backend.calls;
  Engine e(f.task, f.space, f.store, f.backend, config("evolution", 45, 2), this_machine());
  e.resume(run);
  EXPECT_EQ(e.stats().evaluations, 20);
  e.run();
  EXPECT_EQ(e.stats().evaluations, 45);
  EXPECT_EQ(f.backend.calls - calls_before, 25);
  // The left-over candidate was evaluated first, once.
  EXPECT_EQ(f.backend.measured[calls_before], f.space.key(pending));
  // Every point of the run was measured once.
  EXPECT_EQ(std::set<std::string>(f.backend.measured.begin(), f.backend.measured.end()).size(),
            f.backend.measured.size());
  EXPECT_EQ(count(f.store,
                  "SELECT COUNT(*) - COUNT(DISTINCT c.source_hash || c.knobs_json) FROM candidates c "
                  "WHERE c.run_id = ?",
                  run),
            0);
  EXPECT_EQ(count(f.store,
                  "SELECT COUNT(*) FROM evaluations e JOIN candidates c ON c.id = e.candidate_id "
                  "WHERE c.run_id = ?",
                  run),
            45);
}

TEST(Search, ANewRunReusesEarlierMeasurementsOfTheSameTask) {
  Fixture f("reuse");
  {
    Engine e(f.task, f.space, f.store, f.backend, config("random", 30, 5), this_machine());
    e.begin({});
    e.run();
  }
  const int calls_before = f.backend.calls;
  Engine e(f.task, f.space, f.store, f.backend, config("grid", 100000), this_machine());
  e.begin({});
  e.run();
  EXPECT_EQ(e.stats().reused, 30);
  EXPECT_EQ(static_cast<uint64_t>(f.backend.calls - calls_before), f.space.size() - 30);
  // A different task (another shape) does not share measurements.
  Task other = test::quick_task("scaled_softmax", {{"x", {8, 64}}});
  Engine o(other, f.space, f.store, f.backend, config("random", 5), this_machine());
  o.begin({});
  o.run();
  EXPECT_EQ(o.stats().reused, 0);
}

// Another version of kevo may have measured differently: its runs are not reused.
TEST(Search, MeasurementsOfAnotherKevoAreNotReused) {
  Fixture f("reuse-version");
  {
    Engine e(f.task, f.space, f.store, f.backend, config("random", 30, 5), this_machine());
    e.begin({});
    e.run();
  }
  f.store.query("UPDATE runs SET kevo_version = '0.0.1'");
  Engine e(f.task, f.space, f.store, f.backend, config("random", 30, 5), this_machine());
  e.begin({});
  e.run();
  EXPECT_EQ(e.stats().reused, 0);
  EXPECT_EQ(e.stats().evaluations, 30);
}

// A grid search of the synthetic space with one candidate confirmed in 3
// rounds, compute-bound; capped_key's first measurement at a lower clock.
struct ConfirmedRun {
  bool optimum = false, confirmed = false;
  double seconds = 0;
  int64_t confirmations = 0, by_clock = 0;
};
ConfirmedRun confirm_one(const std::string& name, const std::string& capped_key) {
  Fixture f(name);
  f.backend.capped_key = capped_key;
  SearchConfig c = config("grid", 100000);
  c.confirm = 1;
  c.confirm_rounds = 3;
  Engine e(f.task, f.space, f.store, f.backend, c, this_machine());
  e.begin({});
  e.run();
  ConfirmedRun r;
  if (!e.best()) return r;
  r.optimum = found_optimum(e);
  r.confirmed = e.best()->confirmed;
  r.seconds = e.best()->obs.seconds;
  r.confirmations = e.stats().confirmations;
  r.by_clock = e.stats().confirm_by_clock;
  return r;
}

// A compute-bound candidate timed while the GPU's power cap held the clock
// back lost only its clock: it is re-measured beside the fastest, and the
// alternating rounds make it the best, at the time they measured.
TEST(Search, ACandidateTimedAtALowerClockIsConfirmedBesideTheLeaders) {
  const SearchSpace space = synthetic_space();
  ASSERT_EQ(space.family(0).name, "fast");
  // By the search's figures A=5 B=2 C=2 leads (1.3 ms against the optimum's
  // 1.32 ms at 1500 MHz); at 1980 MHz the optimum would have taken 1.0 ms.
  auto r = confirm_one("capped-clock",
                       space.family(0).source_hash + "|" + knobs_to_json({{"A", 5}, {"B", 2}, {"C", 3}}));
  EXPECT_TRUE(r.optimum);
  EXPECT_TRUE(r.confirmed);
  EXPECT_NEAR(r.seconds, 1e-3, 1e-6);  // the rounds' median, not a scaled time
  // The leader, the clock-held one and the two family defaults, 3 rounds each.
  EXPECT_EQ(r.confirmations, 4 * 3);
  EXPECT_EQ(r.by_clock, 1);
}

// With every candidate timed at one clock the picks are the fastest alone.
TEST(Search, OneClockAddsNoPicks) {
  auto r = confirm_one("one-clock", "none");  // compute-bound, every measurement at 1980 MHz
  EXPECT_TRUE(r.optimum);
  EXPECT_EQ(r.confirmations, 3 * 3);
  EXPECT_EQ(r.by_clock, 0);
}

// A point an earlier run confirmed is reused with the measurement that stood
// for it there, its median round, not the last round it happened to take.
TEST(Search, ANewRunReusesTheConfirmedMeasurement) {
  Fixture f("reuse-confirmed");
  f.backend.drift = 0.5;  // each confirmation round slower than the one before
  f.backend.drift_after = static_cast<int>(f.space.size());
  SearchConfig c = config("grid", 100000);
  c.confirm = 1;
  c.confirm_rounds = 3;
  int64_t best = 0;
  {
    Engine e(f.task, f.space, f.store, f.backend, c, this_machine());
    e.begin({});
    e.run();
    ASSERT_TRUE(e.best()->confirmed);
    best = e.best()->candidate;
  }
  const auto rounds = f.store.query(
      "SELECT id FROM evaluations WHERE candidate_id = ? ORDER BY id", {SqlValue(best)});
  ASSERT_EQ(rounds.rows.size(), 4u);  // the search's measurement and three rounds
  const int64_t median_round = std::get<int64_t>(rounds.rows[2][0]);
  ASSERT_EQ(f.store.confirming_evaluation(best), median_round);
  // A point measured once is reused with that measurement.
  const auto once = f.store.query(
      "SELECT c.id, MIN(e.id) FROM candidates c JOIN evaluations e ON e.candidate_id = c.id "
      "GROUP BY c.id HAVING COUNT(*) = 1 LIMIT 1");
  ASSERT_EQ(once.rows.size(), 1u);

  SearchConfig again = config("grid", 100000);
  Engine e(f.task, f.space, f.store, f.backend, again, this_machine());
  const int64_t run = e.begin({});
  e.run();
  ASSERT_EQ(e.stats().evaluations, 0);
  auto reused = [&](int64_t earlier) {
    return f.store.query(
        "SELECT c.reuses_evaluation FROM candidates c JOIN candidates o "
        "ON o.source_hash = c.source_hash AND o.knobs_json = c.knobs_json "
        "WHERE c.run_id = ? AND o.id = ?",
        {SqlValue(run), SqlValue(earlier)});
  };
  auto r = reused(best);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(std::get<int64_t>(r.rows[0][0]), median_round)
      << "the last round is " << std::get<int64_t>(rounds.rows[3][0]);
  r = reused(std::get<int64_t>(once.rows[0][0]));
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0][0], once.rows[0][1]);
}

TEST(Search, TreeIsPersistedAndExportsDot) {
  Fixture f("tree");
  Engine e(f.task, f.space, f.store, f.backend, config("evolution", 40), this_machine());
  const int64_t run = e.begin({});
  e.run();
  CandidateTree t = CandidateTree::load(f.store, run);
  EXPECT_EQ(t.size(), e.tree().size());
  bool crossover = false;
  for (const auto& o : e.observations()) {
    EXPECT_EQ(t.parents(o.candidate).size(), e.tree().parents(o.candidate).size());
    if (t.parents(o.candidate).size() == 2) crossover = true;
  }
  EXPECT_TRUE(crossover) << "a crossover joins two parents";
  std::ostringstream dot;
  t.write_dot(dot, e.best()->candidate);
  EXPECT_NE(dot.str().find("digraph"), std::string::npos);
  EXPECT_NE(dot.str().find("->"), std::string::npos);
  EXPECT_NE(dot.str().find("penwidth=3"), std::string::npos);
}

TEST(Search, ReplayReproducesTheRecordedNumbersExactly) {
  Fixture f("replay");
  int64_t grid = 0;
  {
    Engine e(f.task, f.space, f.store, f.backend, config("grid", 100000), this_machine());
    grid = e.begin({});
    e.run();
  }
  ReplayBackend replay(f.store, grid);
  SearchSpace space = synthetic_space();
  space.restrict_to(replay.recorded_keys());
  // The recording is in this store: a replay charges every point it asks for.
  SearchConfig c = config("mcts", 60);
  Engine e(f.task, space, f.store, replay, c, this_machine());
  e.reuse_earlier_runs = false;
  e.begin({}, "replay");
  e.run();
  EXPECT_EQ(e.stats().evaluations, 60);
  EXPECT_EQ(e.stats().reused, 0);
  EXPECT_EQ(static_cast<int64_t>(e.observations().size()), 60);
  for (const auto& o : e.observations()) {
    const EvalResult& rec = replay.recorded().at(space.key(o.point));
    EXPECT_EQ(o.status, rec.status);
    if (o.ok()) {
      EXPECT_EQ(o.seconds, rec.timing->median_s);  // bit for bit
    }
  }
  // The charged time is the recorded compile + run time of what was replayed.
  EXPECT_DOUBLE_EQ(replay.clock(), 1.0 * e.stats().evaluations);
}

TEST(Search, BadStrategyParametersNameTheKey) {
  try {
    parse_search_config({{"strategy", "evolution"}, {"params", {{"islandz", 2}}}}, "$.search");
    SearchConfig c = parse_search_config({{"strategy", "evolution"}, {"params", {{"islandz", 2}}}},
                                         "$.search");
    Fixture f("badparams");
    Engine e(f.task, f.space, f.store, f.backend, c, this_machine());
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("islandz"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_search_config({{"strategy", "anneal"}}, "$.search"), UserError);
  EXPECT_THROW(parse_search_config({{"stop", {{"max_evals", -1}}}}, "$.search"), UserError);
  EXPECT_THROW(parse_search_config({{"stop", {{"target", {{"gflops", 1}}}}}}, "$.search"), UserError);
}

TEST(StrategyBench, RandomExpectationIsExact) {
  // Brute force over all 3-subsets of 6 values (one failed).
  std::vector<double> v = {5, 3, 9, std::numeric_limits<double>::infinity(), 1, 7};
  auto e = expected_random_best(v, 6);
  std::vector<double> finite = {5, 3, 9, 9, 1, 7};  // the failure counts as the worst
  double sum = 0;
  int n = 0;
  for (int a = 0; a < 6; ++a)
    for (int b = a + 1; b < 6; ++b)
      for (int c = b + 1; c < 6; ++c, ++n) sum += std::min({finite[a], finite[b], finite[c]});
  EXPECT_NEAR(e[2], sum / n, 1e-12);
  EXPECT_NEAR(e[0], (5 + 3 + 9 + 9 + 1 + 7) / 6.0, 1e-12);
  EXPECT_NEAR(e[5], 1, 1e-12);
}

TEST(StrategyBench, ScoresStrategiesAgainstRandomInReplay) {
  Fixture f("bench");
  {
    Engine e(f.task, f.space, f.store, f.backend, config("grid", 100000), this_machine());
    e.begin({{"config", f.task.config}});
    e.run();
  }
  StrategyBenchOptions o;
  o.repeats = 30;
  o.budget = 0.2;
  auto scores = bench_strategies(f.store, o, nullptr);
  ASSERT_EQ(scores.size(), 1u);
  const SpaceScore& s = scores[0];
  EXPECT_EQ(s.points, f.space.size());
  EXPECT_DOUBLE_EQ(s.f_opt, 1e-3);
  std::map<std::string, double> score;
  for (const auto& st : s.strategies) score[st.strategy] = st.score;
  // Random sampling in replay scores near its own analytic expectation...
  EXPECT_NEAR(score["random"], 0, 0.2);
  // ...and the guided strategies beat it on this smooth space.
  EXPECT_GT(score["evolution"], 0.1);
  EXPECT_GT(score["mcts"], 0.1);
  EXPECT_GT(score["surrogate"], 0.1);
  for (const auto& [name, v] : score) std::printf("P %s %.3f\n", name.c_str(), v);
  auto j = to_json(scores);
  EXPECT_EQ(j[0]["strategies"]["mcts"]["checkpoints"].size(), 4u);

  // From random points of each family instead of the defaults: every repeat
  // runs, and the guided strategies still beat random sampling.
  o.random_start = true;
  scores = bench_strategies(f.store, o, nullptr);
  for (const auto& st : scores[0].strategies) {
    EXPECT_EQ(st.runs, 30u) << st.strategy;
    if (st.strategy != "random") {
      EXPECT_GT(st.score, 0.05) << st.strategy;
    }
  }
}

// mcts's model (model_choices > 1) chooses among the synthesizers' children
// the one it predicts fastest: on a smooth space that must show against the
// same tree search taking the first child drawn (model_choices 1).
TEST(StrategyBench, MctsWithItsModelBeatsMctsWithout) {
  Fixture f("bench-model");
  {
    Engine e(f.task, f.space, f.store, f.backend, config("grid", 100000), this_machine());
    e.begin({{"config", f.task.config}});
    e.run();
  }
  StrategyBenchOptions o;
  o.strategies = {"mcts"};
  o.repeats = 30;
  o.budget = 0.2;
  o.random_start = true;  // no head start from a default point
  auto mcts_score = [&](const nlohmann::json& params) {
    o.params["mcts"] = params;
    return bench_strategies(f.store, o, nullptr).at(0).strategies.at(0).score;
  };
  const double with_model = mcts_score(nlohmann::json::object());
  const double without = mcts_score({{"model_choices", 1}});
  std::printf("P mcts with the model %.3f, without %.3f\n", with_model, without);
  EXPECT_GT(with_model, without + 0.05);
}

// A recorded space written as a file and read back into another store
// replays as the store's run did: the same points, optimum and scores.
TEST(StrategyBench, ASpaceFileReplaysAsTheRecordedRun) {
  Fixture f("bench-file");
  {
    Engine e(f.task, f.space, f.store, f.backend, config("grid", 100000), this_machine());
    e.begin({{"config", f.task.config}});
    e.run();
  }
  const nlohmann::json doc = save_space(f.store, f.store.exhaustive_grid_runs().at(0));
  EXPECT_EQ(doc["format"], "kevo-space");
  EXPECT_EQ(doc["points"].size(), f.space.size());
  ASSERT_FALSE(doc["families"].empty());
  // Through text, as a file holds it.
  const nlohmann::json back = nlohmann::json::parse(doc.dump());
  Store other(":memory:");
  const int64_t run = load_space(other, back, "space.json");
  StrategyBenchOptions o;
  o.repeats = 8;
  o.budget = 0.2;
  o.strategies = {"random", "mcts"};
  auto from_store = bench_strategies(f.store, o, nullptr);
  o.runs = {run};
  auto from_file = bench_strategies(other, o, nullptr);
  ASSERT_EQ(from_file.size(), 1u);
  EXPECT_EQ(from_file[0].points, from_store[0].points);
  EXPECT_DOUBLE_EQ(from_file[0].f_opt, from_store[0].f_opt);
  for (size_t i = 0; i < from_file[0].strategies.size(); ++i)
    EXPECT_DOUBLE_EQ(from_file[0].strategies[i].score, from_store[0].strategies[i].score)
        << from_file[0].strategies[i].strategy;
  // Not a space file, or a point of no family: one clear error.
  EXPECT_THROW(load_space(other, nlohmann::json{{"format", "kevo-export"}}, "x.json"), UserError);
  nlohmann::json broken = back;
  broken["points"][0]["hash"] = "nope";
  try {
    load_space(other, broken, "b.json");
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("b.json: points[0]: a point of no family"), std::string::npos)
        << e.what();
  }
}

// Kernel Tuner's strategies beside kevo's on the same recorded points, through
// bench/peers/kernel_tuner_peer.py in Kernel Tuner's simulation mode (the
// virtual environment of scripts/setup.sh peers; skipped without it). The
// space has two families with different knobs and 7 compile errors: the
// conversion gives Kernel Tuner exactly the recorded points. With the whole
// space as the budget, its random sampling must find the optimum every time.
TEST(StrategyBench, KernelTunersStrategiesRunOnTheSameRecordedPoints) {
  try {
    kernel_tuner_python("");
  } catch (const UserError& e) {
    GTEST_SKIP() << e.what();
  }
  Fixture f("bench-kt");
  {
    Engine e(f.task, f.space, f.store, f.backend, config("grid", 100000), this_machine());
    e.begin({{"config", f.task.config}});
    e.run();
  }
  StrategyBenchOptions o;
  o.strategies = {"random"};
  o.kernel_tuner = {"random_sample", "genetic_algorithm"};
  o.repeats = 3;
  o.budget = static_cast<double>(f.space.size());
  auto all = bench_strategies(f.store, o, nullptr);
  ASSERT_EQ(all.size(), 1u);
  std::map<std::string, const StrategyScore*> by;
  for (const auto& st : all[0].strategies) by[st.strategy] = &st;
  ASSERT_TRUE(by.count("kt:random_sample") && by.count("kt:genetic_algorithm"));
  const StrategyScore& rs = *by["kt:random_sample"];
  EXPECT_EQ(rs.runs, 3u) << rs.note;
  EXPECT_EQ(rs.found_optimum, 1.0) << rs.note;  // every point visited once
  EXPECT_EQ(rs.stopped_early, 0u) << rs.note;
  EXPECT_EQ(by["kt:genetic_algorithm"]->runs, 3u) << by["kt:genetic_algorithm"]->note;

  // A fifth of the space: Kernel Tuner's random sampling scores near random's
  // expectation, as kevo's does.
  o.budget = 0.2;
  o.repeats = 20;
  o.kernel_tuner = {"random_sample"};
  all = bench_strategies(f.store, o, nullptr);
  for (const auto& st : all[0].strategies)
    if (st.strategy == "kt:random_sample") {
      EXPECT_NEAR(st.score, 0, 0.3) << st.note;
    }
  auto j = to_json(all);
  EXPECT_TRUE(j[0]["strategies"].contains("kt:random_sample"));
  EXPECT_TRUE(j[0]["strategies"]["kt:random_sample"].contains("evaluations_to_5pct"));

  // A repeat gives the same curves: the strategies that start from scipy's
  // Latin hypercube (diff_evo's first population, bayes_opt's initial
  // sample) are seeded too. Unseeded, diff_evo's first points differ.
  o.budget = 0.5;
  o.repeats = 4;
  o.strategies = {};
  o.kernel_tuner = {"diff_evo", "bayes_opt"};
  const auto first = bench_strategies(f.store, o, nullptr);
  const auto again = bench_strategies(f.store, o, nullptr);
  ASSERT_EQ(first[0].strategies.size(), again[0].strategies.size());
  for (size_t i = 0; i < first[0].strategies.size(); ++i) {
    const StrategyScore& a = first[0].strategies[i];
    EXPECT_EQ(a.runs, 4u) << a.strategy << ": " << a.note;
    EXPECT_EQ(a.mean_curve, again[0].strategies[i].mean_curve) << a.strategy;
  }
}

// The real gemm family has constraints that most random moves break: every
// synthesizer and every strategy still only proposes valid points.
TEST(Search, ConstraintsNeverProduceAnInvalidCandidate) {
  const auto file = test::repo_dir() / "targets" / "cpu" / "kernels" / "gemm" / "blocked.c";
  SearchSpace space = load_space({file}, {}, [](const std::filesystem::path&) { return "c"; });
  Synthesizers synth = Synthesizers::offline(KnobRules::load_default());
  std::mt19937_64 rng(3);
  Observation a, b;
  a.point = space.seed(0);
  a.bound = "compute";
  b.point = *random_point(space, 0, rng);
  int made = 0;
  for (int i = 0; i < 2000; ++i) {
    for (const Synthesizer* s : {synth.knob.get(), synth.crossover.get()}) {
      std::vector<const Observation*> parents = {&a};
      if (s->arity() == 2) parents.push_back(&b);
      auto child = s->apply(space, parents, rng);
      if (!child) continue;
      ++made;
      ASSERT_TRUE(space.valid(child->point)) << knobs_to_string(child->point.knobs);
      ASSERT_NE(child->point, a.point);
      (i % 2 ? a : b).point = child->point;  // wander
    }
  }
  EXPECT_GT(made, 2000);
  for (const char* strategy : {"random", "evolution", "mcts", "surrogate"}) {
    Fixture f(std::string("constraints-") + strategy);
    Engine e(f.task, space, f.store, f.backend, config(strategy, 150), this_machine());
    e.begin({});
    e.run();
    EXPECT_EQ(f.backend.invalid, 0) << strategy;
    EXPECT_EQ(e.stats().invalid, 0) << strategy;
    EXPECT_EQ(e.stats().evaluations, 150) << strategy;
  }
}

// The knob rules speak every target's knobs: a Triton row family's parent,
// memory-bound, or spilling by its profile, gets moves the rule chose (not
// only random ones), on the knobs the rule names, in its direction.
TEST(Search, TheKnobRulesGuideTritonFamilies) {
  const auto file = test::repo_dir() / "targets" / "triton" / "kernels" / "rmsnorm" / "rows.py";
  SearchSpace space = load_space({file}, {}, [](const std::filesystem::path&) { return "triton"; });
  Synthesizers synth = Synthesizers::offline(KnobRules::load_default());
  std::mt19937_64 rng(5);
  Observation parent;
  parent.point = space.seed(0);
  auto moved = [&](const Synthesized& c) {
    std::set<std::string> names;
    for (const auto& [k, v] : c.point.knobs)
      if (parent.point.knobs.at(k) != v) names.insert(k);
    return names;
  };
  parent.bound = "memory";
  std::set<std::string> memory_knobs;
  for (int i = 0; i < 200; ++i)
    if (auto c = synth.knob->apply(space, {&parent}, rng); c && c->label == "knob:memory")
      for (const std::string& k : moved(*c)) memory_knobs.insert(k);
  EXPECT_TRUE(memory_knobs.count("NUM_WARPS")) << fmt::format("{}", fmt::join(memory_knobs, ", "));
  EXPECT_TRUE(memory_knobs.count("EVICT")) << fmt::format("{}", fmt::join(memory_knobs, ", "));
  parent.bound = "";
  parent.bottleneck = "spills";
  int guided = 0;
  for (int i = 0; i < 200; ++i) {
    auto c = synth.knob->apply(space, {&parent}, rng);
    if (!c || c->label != "knob:gpu-spills") continue;
    ++guided;
    for (const std::string& k : moved(*c)) {
      const int64_t before = parent.point.knobs.at(k), after = c->point.knobs.at(k);
      if (k == "NUM_WARPS") {
        EXPECT_GT(after, before);
      } else if (k == "BLOCK_N") {
        EXPECT_LT(after, before);
      }
    }
  }
  EXPECT_GT(guided, 50);
}

// A rule's bound or bottleneck outside the diagnosis vocabulary could never
// match a parent: reading the rules refuses it and names where it is, and
// "any" is no filter, as in `kevo kb search`. The shipped rules load.
TEST(Search, TheKnobRulesSpeakTheBoundVocabulary) {
  const KnobRules shipped = KnobRules::load_default();
  EXPECT_FALSE(shipped.rules.empty());
  auto rules_with = [](const char* key, const char* word) {
    return nlohmann::json{
        {"rules",
         {{{"id", "r"}, {"when", {{key, word}}}, {"moves", {{{"knobs", {"BN"}}, {"direction", "up"}}}}}}}};
  };
  auto error_at = [&](const char* key, const char* word) -> std::string {
    try {
      KnobRules::parse(rules_with(key, word), "rules.json");
    } catch (const ConfigError& e) {
      return e.path();
    }
    return "";
  };
  EXPECT_EQ(error_at("bottleneck", "l2-bandwith"), "rules.json: $.rules[0].when.bottleneck");
  EXPECT_EQ(error_at("bound", "memory_bound"), "rules.json: $.rules[0].when.bound");
  EXPECT_EQ(error_at("bottleneck", "l2-bandwidth"), "");
  EXPECT_EQ(error_at("bound", "memory"), "");
  EXPECT_EQ(KnobRules::parse(rules_with("bound", "any"), "rules.json").rules.at(0).bound, "");
}

// A wgmma GEMM that ncu finds L2-bandwidth-bound gets the L2 rule's moves:
// larger tiles and the multicast cluster up, the raster either way.
TEST(Search, AnL2BoundGemmGetsLargerTilesOrTheMulticast) {
  const auto file = test::repo_dir() / "targets" / "cuda" / "kernels" / "gemm" / "wgmma.cu";
  SearchSpace space = load_space({file}, {}, [](const std::filesystem::path&) { return "cuda"; });
  Synthesizers synth = Synthesizers::offline(KnobRules::load_default());
  std::mt19937_64 rng(7);
  Observation parent;
  parent.point = space.seed(0);
  parent.bottleneck = "l2-bandwidth";
  int guided = 0;
  std::set<std::string> moved;
  for (int i = 0; i < 300; ++i) {
    auto c = synth.knob->apply(space, {&parent}, rng);
    if (!c || c->label != "knob:gpu-l2") continue;
    ++guided;
    ASSERT_TRUE(space.valid(c->point));
    for (const auto& [k, v] : c->point.knobs) {
      const int64_t before = parent.point.knobs.at(k);
      if (v == before) continue;
      moved.insert(k);
      if (k != "GROUP_M") {
        EXPECT_GT(v, before) << k;
      }
    }
  }
  EXPECT_GT(guided, 100);
  for (const char* k : {"BN", "WGM", "CLUSTER"}) EXPECT_TRUE(moved.count(k)) << k;
  for (const std::string& k : moved) EXPECT_TRUE(k == "BN" || k == "WGM" || k == "CLUSTER" || k == "GROUP_M") << k;
}

// The minimum over noisy measurements is biased low: the best few are
// measured again and the best is chosen by the new measurement.
// The confirmation is inside a time budget: the search stops early enough to
// leave the re-measurements the time they took (each evaluation ran 0.75 s
// and was charged 1 s by the fake backend), and where even that is too late
// the confirmation runs the rounds the time left holds, at least one.
TEST(Search, TheTimeBudgetHoldsTheConfirmation) {
  {
    Fixture f("confirm-budget");
    SearchConfig c = config("random", 0);
    c.stop.max_seconds = 20;
    c.confirm = 3;
    c.confirm_rounds = 3;
    Engine e(f.task, f.space, f.store, f.backend, c, this_machine());
    e.begin({});
    EXPECT_NE(e.run().find("time budget"), std::string::npos);
    // Without the reserve the search alone would have spent the 20 s.
    EXPECT_LT(e.stats().evaluations, 20);
    EXPECT_EQ(e.stats().confirm_rounds_run, 3);
    EXPECT_GT(e.stats().confirmations, 0);
    // The picks' runs (0.75 s each) were reserved; the fake charges 1 s, so the
    // whole run may pass the budget by a quarter of the confirmation and half
    // a round (the rounds are rounded to the nearest).
    const double one_round = static_cast<double>(e.stats().confirmations) / 3;
    EXPECT_LE(f.backend.clock_s, 20 + 0.25 * 3 * one_round + 0.5 * one_round);
    EXPECT_TRUE(e.best()->confirmed);
  }
  {
    Fixture f("confirm-budget-short");
    SearchConfig c = config("random", 0);
    c.stop.max_seconds = 1;  // the first evaluation spends it all
    c.confirm = 3;
    c.confirm_rounds = 3;
    Engine e(f.task, f.space, f.store, f.backend, c, this_machine());
    e.begin({});
    e.run();
    EXPECT_EQ(e.stats().confirm_rounds_run, 1);
    EXPECT_TRUE(e.best()->confirmed);
    EXPECT_EQ(e.summary("")["confirm_rounds_run"], 1);
  }
}

TEST(Search, ConfirmationUndoesALuckyMeasurement) {
  Fixture f("confirm");
  f.backend.lucky_key = f.space.key(f.space.seed(0));  // 17.8 ms really, measured once at 0.5
  SearchConfig c = config("grid", 100000);
  c.confirm = 3;
  Engine e(f.task, f.space, f.store, f.backend, c, this_machine());
  const int64_t run = e.begin({});
  e.run();
  EXPECT_TRUE(found_optimum(e));
  ASSERT_TRUE(e.best()->confirmed);
  EXPECT_DOUBLE_EQ(e.best()->obs.seconds, 1e-3);
  // The top 3 (the lucky seed among them) and the other seed, in 3 rounds.
  EXPECT_EQ(e.stats().confirmations, 3 * 4);
  // Re-measured, the fast family's seed is no longer the best seed.
  EXPECT_DOUBLE_EQ(e.best_seed()->obs.seconds, synthetic_time("slow", f.space.seed(1).knobs) * 1e-3);
  EXPECT_EQ(count(f.store,
                  "SELECT COUNT(*) FROM evaluations e JOIN candidates c ON c.id = e.candidate_id "
                  "WHERE c.run_id = ?",
                  run),
            static_cast<int64_t>(f.space.size()) + 3 * 4);
  auto j = e.summary("");
  EXPECT_EQ(j["best"]["confirmed"], true);
  EXPECT_EQ(j["best"]["confirm_rounds_s"].size(), 3u);
  EXPECT_EQ(j["best_faster_than_seed"]["rounds"], 3);
  EXPECT_EQ(j["best_faster_than_seed"]["faster"], 3);
  // On this steady machine the best stays ahead of the next best
  // re-measured (C 2: 1.3 ms) in every round.
  ASSERT_TRUE(j.contains("runner_up"));
  EXPECT_EQ(j["runner_up"]["verdict"], "apart");
  EXPECT_EQ(j["runner_up"]["rounds"], 3);
  EXPECT_EQ(j["runner_up"]["best_faster"], 3);
  EXPECT_NEAR(j["runner_up"]["best_over_runner_up"].get<double>(), 1.3, 1e-9);
  // The default points tell the drift: none for the slow seed, on this steady
  // machine; the lucky seed's own fall from luck shows as well.
  ASSERT_EQ(j["drift"].size(), 2u);
  for (const auto& d : j["drift"]) {
    if (d["family"] == "slow")
      EXPECT_DOUBLE_EQ(d["change"].get<double>(), 0);
    else
      EXPECT_GT(d["change"].get<double>(), 10);
    // This backend reads no machine state: none is invented.
    EXPECT_FALSE(d.contains("machine_search")) << d;
    EXPECT_FALSE(d.contains("machine_confirmed")) << d;
  }
}

// The whole space in a grid, then the confirmation of the best: the summary.
nlohmann::json grid_confirmed_summary(Fixture& f) {
  SearchConfig c = config("grid", 100000);
  c.confirm = 1;
  Engine e(f.task, f.space, f.store, f.backend, c, this_machine());
  e.begin({});
  e.run();
  return e.summary("");
}

// Each drift entry has the state of the machine at the end of the default
// point's search measurement and of its confirming one, where they stored one.
TEST(Search, DriftEntriesCarryTheMachineState) {
  Fixture f("drift-machine");
  f.backend.machine_from = 1;
  const auto searched = static_cast<double>(f.space.size());
  {
    auto j = grid_confirmed_summary(f);
    ASSERT_EQ(j["drift"].size(), 2u);
    for (const auto& d : j["drift"]) {
      ASSERT_TRUE(d.contains("machine_search")) << d;
      ASSERT_TRUE(d.contains("machine_confirmed")) << d;
      // The profiler's and compiler's figures are not the machine's.
      EXPECT_EQ(d["machine_search"].size(), 2u) << d;
      EXPECT_EQ(d["machine_search"]["machine.sm_mhz"], 1980);
      // The seeds go first; the confirmation comes after the whole space.
      EXPECT_LE(d["machine_search"]["machine.gpu_temp_c"].get<double>(), 2);
      EXPECT_GT(d["machine_confirmed"]["machine.gpu_temp_c"].get<double>(), searched);
    }
  }
  // A later run reuses the seeds' measurements (the earlier run's latest): their
  // state is the earlier run's, and every evaluation of theirs in this run is
  // a confirmation round.
  const int calls_before = f.backend.calls;
  SearchConfig c = config("grid", 100000);
  c.confirm = 1;
  Engine again(f.task, f.space, f.store, f.backend, c, this_machine());
  again.begin({});
  again.run();
  ASSERT_EQ(again.stats().evaluations, 0);
  auto j = again.summary("");
  ASSERT_EQ(j["drift"].size(), 2u);
  for (const auto& d : j["drift"]) {
    EXPECT_LE(d["machine_search"]["machine.gpu_temp_c"].get<double>(), calls_before) << d;
    EXPECT_GT(d["machine_confirmed"]["machine.gpu_temp_c"].get<double>(), calls_before) << d;
  }
}

// Where only the confirmation read the machine's state, only it is there.
TEST(Search, DriftEntriesCarryOnlyTheStatesThatWereRead) {
  Fixture f("drift-machine-late");
  f.backend.machine_from = static_cast<int>(f.space.size()) + 1;  // the confirmation's calls
  auto j = grid_confirmed_summary(f);
  ASSERT_EQ(j["drift"].size(), 2u);
  for (const auto& d : j["drift"]) {
    EXPECT_FALSE(d.contains("machine_search")) << d;
    EXPECT_TRUE(d.contains("machine_confirmed")) << d;
  }
}

// The machine slows down while the confirmation runs (clocks, heat): one
// round in a fixed order favours whichever candidate went first; rounds in
// alternating order, each candidate judged by its median round, do not.
TEST(Search, ConfirmationRoundsCancelADriftingMachine) {
  KnobValues near = {{"A", 5}, {"B", 2}, {"C", 2}};  // 1.3 ms; the optimum C=3 is 1.0 ms
  for (int64_t rounds : {1, 3}) {
    Fixture f("drift-" + std::to_string(rounds));
    f.backend.lucky_key = f.space.key(Point{0, near});  // found at 0.5 ms: confirmed first
    f.backend.drift = 0.5;
    f.backend.drift_after = static_cast<int>(f.space.size());  // from the confirmation on
    SearchConfig c = config("grid", 100000);
    c.confirm = 2;
    c.confirm_rounds = rounds;
    Engine e(f.task, f.space, f.store, f.backend, c, this_machine());
    e.begin({});
    e.run();
    ASSERT_EQ(e.stats().evaluations, static_cast<int64_t>(f.space.size()));
    ASSERT_TRUE(e.best()->confirmed);
    EXPECT_EQ(e.stats().confirmations, rounds * 4);  // near, the optimum, two seeds
    EXPECT_EQ(e.best()->rounds.size(), static_cast<size_t>(rounds));
    if (rounds == 1)
      EXPECT_EQ(e.best()->point.knobs, near) << "one round: the first measured wins";
    else
      EXPECT_TRUE(found_optimum(e)) << knobs_to_string(e.best()->point.knobs);
    // The seeds were measured before the machine slowed and again after.
    auto j = e.summary("");
    ASSERT_EQ(j["drift"].size(), 2u);
    for (const auto& d : j["drift"]) EXPECT_GT(d["change"].get<double>(), 0.4);
  }
}

// A best whose confirmation rounds spread past the next best's is not called
// the best over it: one round of the optimum (1 ms) came out 1.4 ms, slower
// than every round of the runner-up (1.3 ms). The median still picks the
// optimum, but the summary says the two are inconclusive, and kevo run's
// runner-up line says why.
TEST(Search, ANoisyBestIsInconclusiveAgainstTheRunnerUp) {
  Fixture f("confirm-noisy");
  f.backend.wobble_key = f.space.key(Point{0, {{"A", 5}, {"B", 2}, {"C", 3}}});
  SearchConfig c = config("grid", 100000);
  c.confirm = 3;
  Engine e(f.task, f.space, f.store, f.backend, c, this_machine());
  e.begin({});
  e.run();
  ASSERT_EQ(f.backend.wobble_calls, 4);  // the search's, then three rounds
  EXPECT_TRUE(found_optimum(e));
  ASSERT_TRUE(e.runner_up());
  EXPECT_DOUBLE_EQ(e.runner_up()->obs.seconds, 1.3e-3);
  auto j = e.summary("");
  ASSERT_TRUE(j.contains("runner_up"));
  EXPECT_EQ(j["runner_up"]["verdict"], "inconclusive");
  EXPECT_EQ(j["runner_up"]["best_faster"], 2);
  EXPECT_EQ(j["runner_up"]["rounds"], 3);
  EXPECT_DOUBLE_EQ(j["runner_up"]["round_ranges_s"]["best"][1].get<double>(), 1.4e-3);
  // Without a confirmation there is no runner-up to weigh.
  Fixture g("confirm-none");
  Engine none(g.task, g.space, g.store, g.backend, config("grid", 100000), this_machine());
  none.begin({});
  none.run();
  EXPECT_FALSE(none.runner_up());
  EXPECT_FALSE(none.summary("").contains("runner_up"));
}

// A time below the floor in one round of the confirmation is no measurement,
// not a fault: the candidate is judged by its other rounds.
TEST(Search, ASuspectConfirmationRoundIsSkipped) {
  Fixture f("confirm-suspect");
  f.backend.suspect_key = f.space.key(Point{0, {{"A", 5}, {"B", 2}, {"C", 3}}});
  SearchConfig c = config("grid", 100000);
  c.confirm = 1;
  Engine e(f.task, f.space, f.store, f.backend, c, this_machine());
  e.begin({});
  e.run();
  ASSERT_EQ(f.backend.suspect_calls, 4);  // the search's, then three rounds
  EXPECT_TRUE(found_optimum(e));
  ASSERT_TRUE(e.best()->confirmed);
  ASSERT_EQ(e.best()->rounds.size(), 3u);
  EXPECT_TRUE(std::isnan(e.best()->rounds[0]));  // the suspect round has no figure
  EXPECT_DOUBLE_EQ(e.best()->obs.seconds, 1e-3);
  // Best and seed are paired only in the rounds where both have a figure.
  EXPECT_EQ(e.summary("")["best_faster_than_seed"]["rounds"], 2);
}

// A resumed run sees each candidate as its search measured it, not as the
// confirmation at the end re-measured it.
TEST(Search, ResumeTellsTheSearchMeasurementNotTheConfirmation) {
  Fixture f("resume-confirmed");
  f.backend.lucky_key = f.space.key(f.space.seed(0));
  SearchConfig c = config("grid", 30);
  c.confirm = 3;
  Engine first(f.task, f.space, f.store, f.backend, c, this_machine());
  const int64_t run = first.begin({});
  first.run();
  ASSERT_GT(first.stats().confirmations, 0);
  Engine again(f.task, f.space, f.store, f.backend, c, this_machine());
  again.resume(run);
  EXPECT_EQ(again.stats().evaluations, 30);
  for (const auto& o : again.observations())
    if (o.point == f.space.seed(0)) {
      EXPECT_DOUBLE_EQ(o.seconds, 0.5e-3);
      // So does the stored tree (kevo tree, the report's lineage).
      const CandidateTree tree = CandidateTree::load(f.store, run);  // n points into it
      const TreeNode* n = tree.find(o.candidate);
      ASSERT_NE(n, nullptr);
      EXPECT_DOUBLE_EQ(n->seconds, 0.5e-3);
    }
}

// A run that reused an earlier run's measurements has, for those candidates,
// only confirmation rounds of its own: resumed, it tells the reused
// measurement and counts no round as an evaluation of the search.
TEST(Search, ResumeTellsAReusedMeasurementNotItsRounds) {
  Fixture f("resume-reused");
  SearchConfig c = config("grid", 100000);
  c.confirm = 1;
  {
    Engine first(f.task, f.space, f.store, f.backend, c, this_machine());
    first.begin({});
    first.run();
  }
  Engine second(f.task, f.space, f.store, f.backend, c, this_machine());
  const int64_t run = second.begin({});
  second.run();
  ASSERT_EQ(second.stats().evaluations, 0);
  ASSERT_GT(second.stats().reused, 0);
  ASSERT_GT(second.stats().confirmations, 0);
  Engine resumed(f.task, f.space, f.store, f.backend, c, this_machine());
  resumed.resume(run);
  EXPECT_EQ(resumed.stats().evaluations, 0);
  EXPECT_EQ(resumed.stats().reused, second.stats().reused);
  for (const auto& o : resumed.observations()) EXPECT_TRUE(o.reused) << o.candidate;
}

}  // namespace
}  // namespace kevo
