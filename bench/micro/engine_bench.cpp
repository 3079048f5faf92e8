// kevo-microbench: Google Benchmark micro-benchmarks of the search engine's
// own overhead — everything kevo does per evaluation besides compiling and
// timing the kernel. Not built by default (EXCLUDE_FROM_ALL):
//
//   ninja -C build kevo-microbench        (or: cmake --build build --target kevo-microbench)
//   KEVO_HOME=$PWD build/bin/kevo-microbench --benchmark_min_time=0.2
//
// (Google Benchmark 1.7 takes --benchmark_min_time in plain seconds; 1.8+
// also accepts "0.2s".) The whole suite takes about a minute.
//
// What each benchmark measures:
//
//  1. Knob-space enumeration
//     BM_ForEachValid/<space>   KnobSpace::for_each_valid over every valid
//                               point: the gemm family targets/cpu/kernels/
//                               gemm/blocked.c (its THREADS <= NCPU constraint
//                               makes the count depend on the host's CPUs) and
//                               a small synthetic space; points/s as a counter.
//     BM_SpaceFirstSize/<space> SearchSpace::size() on a fresh space, i.e. the
//                               first enumeration into the compact index that
//                               SearchSpace::at() reads (a strategy's first
//                               ask() pays it once per run).
//  2. Sampling (blocked gemm, already enumerated)
//     BM_SpaceAt                SearchSpace::at(random index), per call.
//     BM_RandomPoint            random_point() (rejection sampling), per call.
//  3. Synthesizers (blocked gemm; the gemm families for `family`)
//     BM_Synth/<knob|family|crossover>   Synthesizer::apply(), per call, from
//                               parents with synthetic diagnoses.
//  4. Strategies (the gemm space: blocked, direct, naive)
//     BM_Strategy/<name>/warm:W  one ask(4) + tell() cycle of each builtin
//                               strategy after a history of W observations
//                               made by the seeds (told first, as the engine
//                               does) and earlier cycles; observations carry
//                               fake times from a formula over the knobs,
//                               distinct candidate ids, and echo the tag and
//                               parents. Manual time: ask and tell only (the
//                               harness's bookkeeping is not counted); 64
//                               timed cycles, so the history grows W..W+256.
//                               Warm-up stops after W cycles: a strategy that
//                               keeps proposing known points (duplicates) may
//                               end below W (counter warm_history).
//  5. Store and engine
//     BM_StoreWrite             Store::add_candidate + Store::add_evaluation
//                               (50 samples, two checks, a diagnosis) into a
//                               file store in WAL mode under /tmp, per
//                               candidate; counters split the two calls.
//     BM_StoreDedupLookup       the query Engine::earlier_evaluation runs for
//                               every new point (does an earlier run of this
//                               task on this host have it?), on a file store
//                               holding 2000 evaluations; half hits.
//     BM_EngineRun/<strategy>/file:F/evals:N   a whole Engine::run of N
//                               evaluations (500; 2000 except evolution, see
//                               register_all) with a fake backend (no
//                               compiler), on a memory store (F=0) or a WAL
//                               file store (F=1), after the seeds; Time is the
//                               whole run, us_per_eval divides it, and the
//                               engine's own stats().searcher_s / store_s per
//                               evaluation are counters.
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/eval_result.h"
#include "core/hash.h"
#include "core/knobs.h"
#include "core/paths.h"
#include "core/process.h"
#include "core/space.h"
#include "core/store.h"
#include "core/task.h"
#include "eval/backend.h"
#include "eval/request.h"
#include "eval/slurm_backend.h"
#include "search/engine.h"
#include "search/session.h"
#include "search/strategy.h"
#include "synth/synthesizer.h"

namespace kevo {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// ---- fixtures --------------------------------------------------------------

fs::path source_dir() { return KEVO_SOURCE_DIR; }

Family make_family(const std::string& name, const fs::path& origin, std::string text) {
  Family f;
  f.name = name;
  f.origin = origin;
  f.text = std::move(text);
  f.language = "c";
  f.source_hash = sha256_hex(f.text);
  f.space = KnobSpace::parse_source(f.text, origin.string());
  return f;
}

Family gemm_family(const std::string& name) {
  const fs::path p = source_dir() / "targets/cpu/kernels/gemm" / (name + ".c");
  return make_family(name, p, read_text_file(p));
}

// A small space: 8 x 8 x 4 with one constraint, plus a second family.
std::vector<Family> synthetic_families() {
  const char* a =
      "// @kevo knob A 0 {0, 1, 2, 3, 4, 5, 6, 7}\n"
      "// @kevo knob B 0 {0, 1, 2, 3, 4, 5, 6, 7}\n"
      "// @kevo knob C 0 {0, 1, 2, 3}\n"
      "// @kevo require A + B != 6\n"
      "int kevo_kernel(void) { return 0; }  /* a */\n";
  const char* b =
      "// @kevo knob A 0 {0, 1, 2, 3, 4, 5, 6, 7}\n"
      "// @kevo knob C 1 {0, 1, 2, 3}\n"
      "int kevo_kernel(void) { return 0; }  /* b */\n";
  return {make_family("a", "a.c", a), make_family("b", "b.c", b)};
}

// The real gemm task (its hash keys the store's dedup look-up).
const Task& gemm_task() {
  static const Task t = load_task(source_dir() / "configs/cpu/gemm-1024.json");
  return t;
}

// blocked alone, enumerated.
const SearchSpace& blocked_space() {
  static const SearchSpace* s = [] {
    auto* sp = new SearchSpace({gemm_family("blocked")});
    sp->size();
    return sp;
  }();
  return *s;
}

// The gemm families (blocked first), enumerated.
const SearchSpace& gemm_space() {
  static const SearchSpace* s = [] {
    auto* sp = new SearchSpace(
        {gemm_family("blocked"), gemm_family("direct"), gemm_family("naive")});
    sp->size();
    return sp;
  }();
  return *s;
}

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A smooth fake time over the knobs' value indexes (each knob has its own
// optimum), a family offset, and ~4% of points failing to compile.
Observation fake_observation(const SearchSpace& space, const Point& p) {
  const auto& knobs = space.family(p.family).space.knobs();
  double t = 1.0 + 0.4 * p.family;
  uint64_t h = mix(static_cast<uint64_t>(p.family));
  for (size_t k = 0; k < knobs.size(); ++k) {
    const auto& vals = knobs[k].values;
    const size_t idx = static_cast<size_t>(
        std::find(vals.begin(), vals.end(), p.knobs.at(knobs[k].name)) - vals.begin());
    const double n = static_cast<double>(vals.size());
    const double d = (static_cast<double>(idx) - static_cast<double>((k * 5 + 3) % vals.size())) / n;
    t += 0.8 * d * d;
    h = mix(h ^ idx);
  }
  Observation o;
  o.point = p;
  if (h % 25 == 0) {
    o.status = Status::compile_error;
    return o;
  }
  o.status = Status::ok;
  o.seconds = t * 1e-3;
  o.roof_fraction = 0.5e-3 / o.seconds;
  o.spread = 0.005 + static_cast<double>(h % 8) * 0.01;
  o.bound = (h >> 8) & 1 ? "memory" : "compute";
  return o;
}

EvalResult fake_result(double t, uint64_t h) {
  EvalResult r;
  r.compile_s = 0.3;
  r.run_s = 0.7;
  r.compile_log = "cc -O3 -march=native -fopenmp -c kernel.c\n";
  std::vector<double> samples;
  samples.reserve(50);
  std::mt19937_64 rng(h);
  std::normal_distribution<double> noise(1.0, 0.01);
  for (int i = 0; i < 50; ++i) samples.push_back(t * noise(rng));
  r.timing = TimingStats::from_samples(std::move(samples), 4, 8);
  for (const char* label : {"[7, 1003] seed 1", "[1024, 1024] seed 1"}) {
    CheckReport c;
    c.label = label;
    c.passed = true;
    c.checked = 1 << 20;
    c.max_abs_err = 3e-6;
    c.max_ulp = 12;
    r.checks.push_back(c);
  }
  Diagnosis d;
  d.bound = "compute";
  d.floor_s = 0.5e-3;
  d.roof_fraction = d.floor_s / r.timing->median_s;
  d.achieved_gflops = 2.0 * 1024 * 1024 * 1024 / r.timing->median_s * 1e-9;
  d.roof_gflops = 2000;
  d.roof_gbps = 40;
  d.why = "compute-bound at 25% of the FMA peak";
  r.diagnosis = d;
  return r;
}

// A unique temporary directory under /tmp, removed with the object.
struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/kevo-microbench-XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path path;
};

// ---- 1. enumeration --------------------------------------------------------

void BM_ForEachValid(benchmark::State& state, std::vector<Family> fams) {
  uint64_t points = 0;
  for (auto _ : state) {
    points = 0;
    for (const auto& f : fams)
      f.space.for_each_valid([&](const KnobValues& v) {
        benchmark::DoNotOptimize(v);
        ++points;
        return true;
      });
  }
  state.counters["points"] = static_cast<double>(points);
  state.counters["points_per_s"] = benchmark::Counter(
      static_cast<double>(points) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}

void BM_SpaceFirstSize(benchmark::State& state, std::vector<Family> fams) {
  uint64_t points = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto space = std::make_unique<SearchSpace>(fams);
    state.ResumeTiming();
    points = space->size();
    state.PauseTiming();
    space.reset();
    state.ResumeTiming();
  }
  state.counters["points"] = static_cast<double>(points);
  state.counters["points_per_s"] = benchmark::Counter(
      static_cast<double>(points) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}

// ---- 2. sampling -----------------------------------------------------------

void BM_SpaceAt(benchmark::State& state) {
  const SearchSpace& space = blocked_space();
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<uint64_t> pick(0, space.size() - 1);
  for (auto _ : state) {
    Point p = space.at(pick(rng));
    benchmark::DoNotOptimize(p);
  }
  state.counters["points"] = static_cast<double>(space.size());
}

void BM_RandomPoint(benchmark::State& state) {
  const SearchSpace& space = blocked_space();
  std::mt19937_64 rng(1);
  for (auto _ : state) {
    auto p = random_point(space, 0, rng);
    benchmark::DoNotOptimize(p);
  }
}

// ---- 3. synthesizers -------------------------------------------------------

void BM_Synth(benchmark::State& state, std::string which) {
  const SearchSpace& space = gemm_space();  // family 0 is blocked
  static const Synthesizers synths = Synthesizers::offline(KnobRules::load_default());
  const Synthesizer* s = which == "knob"     ? synths.knob.get()
                         : which == "family" ? synths.family.get()
                                             : synths.crossover.get();
  std::mt19937_64 rng(7);
  std::vector<Observation> pool;
  for (int i = 0; i < 256; ++i) {
    Observation o = fake_observation(space, *random_point(space, 0, rng));
    o.candidate = i + 1;
    o.status = Status::ok;  // parents are measured candidates
    if (!std::isfinite(o.seconds)) o.seconds = 1e-3;
    if (o.bound.empty()) o.bound = "memory";
    pool.push_back(std::move(o));
  }
  size_t i = 0, none = 0, calls = 0;
  for (auto _ : state) {
    std::vector<const Observation*> parents = {&pool[i % pool.size()]};
    if (s->arity() == 2) parents.push_back(&pool[(i + 1) % pool.size()]);
    auto r = s->apply(space, parents, rng);
    if (!r) ++none;
    ++calls;
    ++i;
    benchmark::DoNotOptimize(r);
  }
  state.counters["none_frac"] = calls ? static_cast<double>(none) / static_cast<double>(calls) : 0;
}

// ---- 4. strategies ---------------------------------------------------------

// Plays the engine's part for a strategy: dedup by point key, fresh candidate
// ids, synthetic results; duplicates are answered with the earlier result.
class StrategyHarness {
 public:
  StrategyHarness(const std::string& name, const SearchSpace& space, uint64_t seed)
      : space_(space), synths_(Synthesizers::offline(KnobRules::load_default())) {
    StrategyEnv env;
    env.space = &space_;
    env.synthesizers = &synths_;
    env.seed = seed;
    env.known = [this](const Point& p) { return known_.count(space_.key(p)) > 0; };
    strategy_ = StrategyRegistry::builtin().make(name, nlohmann::json::object(), "$", env);
  }

  Strategy& strategy() { return *strategy_; }
  size_t history() const { return history_; }

  std::vector<Observation> observe(const std::vector<Proposal>& props) {
    std::vector<Observation> out;
    for (const Proposal& prop : props) {
      const std::string key = space_.key(prop.point);
      Observation o;
      if (auto it = known_.find(key); it != known_.end()) {
        o = it->second;
        o.duplicate_of = o.candidate;
        o.reused = true;
      } else {
        o = fake_observation(space_, prop.point);
        o.candidate = next_id_++;
        ++history_;
      }
      o.parents = prop.parents;
      o.synthesizer = prop.synthesizer;
      o.tag = prop.tag;
      if (!o.reused) known_.emplace(key, o);
      out.push_back(std::move(o));
    }
    return out;
  }

  // What the engine does first (seeds_first): each family's default point,
  // evaluated and told before the strategy is asked anything.
  void tell_seeds() {
    std::vector<Proposal> seeds;
    for (size_t f = 0; f < space_.size_families(); ++f) {
      Point p = space_.seed(static_cast<int>(f));
      if (space_.valid(p)) seeds.push_back({std::move(p), {}, "seed", 0});
    }
    strategy_->tell(observe(seeds));
  }

  // ask(n) + observe + tell(), untimed.
  bool cycle(size_t n) {
    auto props = strategy_->ask(n);
    if (props.empty()) return false;
    strategy_->tell(observe(props));
    return true;
  }

 private:
  const SearchSpace& space_;
  Synthesizers synths_;
  std::unique_ptr<Strategy> strategy_;
  std::unordered_map<std::string, Observation> known_;
  int64_t next_id_ = 1;
  size_t history_ = 0;
};

void BM_Strategy(benchmark::State& state, std::string name) {
  const SearchSpace& space = gemm_space();
  StrategyHarness h(name, space, 1);
  const size_t warm = static_cast<size_t>(state.range(0));
  h.tell_seeds();
  // Strategies that keep proposing known points (answered as duplicates)
  // get at most 4x the cycles the history needs.
  const auto w0 = Clock::now();
  size_t cycles = 0;
  while (h.history() < warm && cycles++ < warm)
    if (!h.cycle(4)) break;
  state.counters["warm_s"] = seconds_since(w0);
  state.counters["warm_history"] = static_cast<double>(h.history());
  double ask_s = 0, tell_s = 0;
  size_t proposed = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    auto props = h.strategy().ask(4);
    const double a = seconds_since(t0);
    auto obs = h.observe(props);
    t0 = Clock::now();
    h.strategy().tell(obs);
    const double t = seconds_since(t0);
    ask_s += a;
    tell_s += t;
    proposed += props.size();
    state.SetIterationTime(a + t);
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["ask_us"] = 1e6 * ask_s / n;
  state.counters["tell_us"] = 1e6 * tell_s / n;
  state.counters["proposals"] = static_cast<double>(proposed) / n;
  state.counters["history"] = static_cast<double>(h.history());
}

// ---- 5. store and engine ---------------------------------------------------

void BM_StoreWrite(benchmark::State& state) {
  TempDir dir;
  double cand_s = 0, eval_s = 0;
  {
    Store store(dir.path / "store.db");
    const SearchSpace& space = blocked_space();
    const Family& fam = space.family(0);
    const int64_t run = store.begin_run("search", gemm_task(), nlohmann::json::object());
    store.put_source(fam.text, fam.origin.string(), fam.language);
    std::vector<EvalResult> results;  // made up front: not part of the write path
    for (uint64_t k = 0; k < 64; ++k) results.push_back(fake_result(1e-3 * (1 + k / 64.0), k));
    uint64_t i = 0;
    int64_t prev = 0;
    for (auto _ : state) {
      const Point p = space.at(i % space.size());
      auto t0 = Clock::now();
      const int64_t cand =
          store.add_candidate(run, fam.source_hash, p.knobs, fam.name, "knob:memory",
                              prev ? std::vector<int64_t>{prev} : std::vector<int64_t>{});
      cand_s += seconds_since(t0);
      t0 = Clock::now();
      store.add_evaluation(cand, results[i % results.size()]);
      eval_s += seconds_since(t0);
      prev = cand;
      ++i;
    }
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["add_candidate_us"] = 1e6 * cand_s / n;
  state.counters["add_evaluation_us"] = 1e6 * eval_s / n;
}

void BM_StoreDedupLookup(benchmark::State& state) {
  TempDir dir;
  Store store(dir.path / "store.db");
  const SearchSpace& space = blocked_space();
  const Family& fam = space.family(0);
  const Task& task = gemm_task();
  const int64_t run = store.begin_run("search", task, nlohmann::json::object());
  store.put_source(fam.text, fam.origin.string(), fam.language);
  const uint64_t stored = static_cast<uint64_t>(state.range(0));
  // Every 2nd point of the first 2 * stored is in the store.
  for (uint64_t i = 0; i < stored; ++i) {
    const Point p = space.at(2 * i);
    const int64_t cand = store.add_candidate(run, fam.source_hash, p.knobs, fam.name, "grid");
    store.add_evaluation(cand, fake_result(1e-3, i));
  }
  // The store's side of Engine::earlier_evaluation (run 0: no run is left out).
  const std::string host = hostname();
  uint64_t i = 0, hits = 0;
  for (auto _ : state) {
    const Point p = space.at(i % (2 * stored));
    const std::optional<int64_t> c = store.latest_candidate_of_point(
        fam.source_hash, knobs_to_json(p.knobs), task.hash, host, KEVO_VERSION, 0);
    hits += c ? 1 : 0;
    ++i;
  }
  state.counters["hit_frac"] = static_cast<double>(hits) / static_cast<double>(state.iterations());
}

// Evaluates with fake_observation's times; charges 1 s per evaluation.
class FakeBackend final : public ImmediateBackend {
 public:
  explicit FakeBackend(const SearchSpace& space) : space_(space) {}
  std::string_view name() const override { return "fake"; }
  EvalResult answer(const EvalJob& job) override {
    clock_s_ += 1;
    const int f = space_.find_family(job.family->name);
    const Observation o = fake_observation(space_, Point{f, job.knobs});
    EvalResult r;
    if (!o.ok()) {
      r.status = Status::compile_error;
      r.detail = "synthetic compile error";
      r.compile_s = 0.3;
      r.compile_log = "kernel.c:1:1: error: synthetic\n";
    } else {
      r = fake_result(o.seconds, static_cast<uint64_t>(clock_s_));
      r.diagnosis->bound = o.bound;
    }
    return r;
  }
  double clock() const override { return clock_s_; }

 private:
  const SearchSpace& space_;
  double clock_s_ = 0;
};

// Whole Engine::runs of `max_evals` in batches of `batch` with the fake
// backend, on a memory or a WAL file store; the counters per evaluation.
void engine_runs(benchmark::State& state, const std::string& strategy, bool file,
                 int64_t max_evals, size_t batch) {
  const SearchSpace& space = gemm_space();  // enumerated: the engine's copy is too
  double searcher_s = 0, store_s = 0, wall_s = 0;
  int64_t evals = 0, dups = 0;
  for (auto _ : state) {
    TempDir dir;
    auto store = std::make_unique<Store>(file ? dir.path / "store.db" : fs::path(":memory:"));
    FakeBackend backend(space);
    SearchConfig c;
    c.strategy = strategy;
    c.stop.max_evals = max_evals;
    c.batch = batch;
    c.seed = 1;
    Engine e(gemm_task(), space, *store, backend, c, this_machine());
    e.begin(nlohmann::json::object());
    const auto t0 = Clock::now();
    e.run();
    const double t = seconds_since(t0);
    state.SetIterationTime(t);
    wall_s += t;
    searcher_s += e.stats().searcher_s;
    store_s += e.stats().store_s;
    evals += e.stats().evaluations;
    dups += e.stats().duplicates;
  }
  const double n = static_cast<double>(evals);
  state.counters["evals"] = n / static_cast<double>(state.iterations());
  state.counters["us_per_eval"] = 1e6 * wall_s / n;
  state.counters["searcher_us_per_eval"] = 1e6 * searcher_s / n;
  state.counters["store_us_per_eval"] = 1e6 * store_s / n;
  state.counters["dups_per_eval"] = static_cast<double>(dups) / n;
}

void BM_EngineRun(benchmark::State& state, std::string strategy) {
  engine_runs(state, strategy, state.range(0) != 0, state.range(1), 4);
}

// The engine's own cost per evaluation as the batch grows (what bounds a
// cluster of many nodes: one batch is one generation evaluated at once):
// 1600 evaluations on a WAL file store in batches of `batch`, answered at
// once by the fake backend. Counters as BM_EngineRun.
void BM_EngineScale(benchmark::State& state, std::string strategy) {
  engine_runs(state, strategy, true, 1600, static_cast<size_t>(state.range(0)));
}

// The slurm backend's own cost per candidate, against stand-ins for sbatch,
// squeue and scancel (shell scripts on PATH: no cluster, no worker):
//   submit_us_per_eval   submit() of `batch` candidates: a request file
//                        each, the batch's script, one sbatch;
//   round_us             one poll round with all `batch` tasks in flight:
//                        a result-file look-up each, one squeue and its
//                        `batch` lines parsed (plus the 1 ms poll sleep);
//   collect_us_per_eval  poll() reading and parsing the results, all there.
void BM_SlurmBackend(benchmark::State& state) {
  const size_t batch = static_cast<size_t>(state.range(0));
  const SearchSpace& space = gemm_space();
  TempDir fake;
  const fs::path bin = fake.path / "bin";
  fs::create_directories(bin);
  auto script = [&](const char* name, const std::string& body) {
    const fs::path f = bin / name;
    std::FILE* out = std::fopen(f.c_str(), "w");
    std::fputs(("#!/bin/sh\n" + body).c_str(), out);
    std::fclose(out);
    fs::permissions(f, fs::perms::owner_all);
  };
  const std::string d = fake.path.string();
  script("sbatch", "n=$(cat " + d + "/n 2>/dev/null || echo 1000); n=$((n+1)); echo $n > " + d +
                       "/n; echo $n\n");
  // The queue as the bench wrote it; then, once, the result the bench named.
  script("squeue", "[ -f " + d + "/queue ] && cat " + d + "/queue\nif [ -f " + d +
                       "/then ]; then read src dst < " + d + "/then; cp \"$src\" \"$dst\"; rm " + d +
                       "/then; fi\nexit 0\n");
  script("scancel", "exit 0\n");
  const std::string path = bin.string() + ":" + (std::getenv("PATH") ? std::getenv("PATH") : "");
  setenv("PATH", path.c_str(), 1);
  EvalResult r = fake_result(1e-3, 1);
  const std::string canned = nlohmann::json{{"result", result_to_wire(r)}, {"host", "node"}}.dump();
  write_file_atomic(fake.path / "canned.json", canned.data(), canned.size());
  Roof roof;
  roof.target = gemm_task().target;
  roof.host_key = "bench";
  std::vector<EvalJob> jobs;
  for (size_t i = 0; i < batch; ++i) {
    const Point p = space.at(i % space.size());
    jobs.push_back({&space.family(p.family), p.knobs});
  }
  double submit_s = 0, round_s = 0, collect_s = 0;
  int64_t n = 0;
  for (auto _ : state) {
    TempDir dir;
    SlurmConfig cfg;
    cfg.dir = dir.path;
    cfg.poll_s = 1e-3;
    cfg.result_grace_s = 60;
    cfg.kevo = "/bin/false";
    SlurmBackend backend(gemm_task(), roof, {roof}, cfg);
    auto t0 = Clock::now();
    backend.submit(jobs);
    submit_s += seconds_since(t0);
    fs::path batch_dir;
    for (const auto& e : fs::directory_iterator(dir.path)) batch_dir = e.path();
    const std::string array = read_text_file(fake.path / "n");
    std::string queue;
    for (size_t i = 0; i < batch; ++i)
      queue += fmt::format("{}_{} RUNNING None\n", std::stoll(array), i);
    write_file_atomic(fake.path / "queue", queue.data(), queue.size());
    const std::string then =
        (fake.path / "canned.json").string() + " " + (batch_dir / "0.result.json").string() + "\n";
    write_file_atomic(fake.path / "then", then.data(), then.size());
    t0 = Clock::now();
    const size_t first = backend.poll(nullptr).size();
    round_s += seconds_since(t0);
    for (size_t i = 1; i < batch; ++i)
      write_file_atomic(batch_dir / fmt::format("{}.result.json", i), canned.data(), canned.size());
    fs::remove(fake.path / "queue");
    t0 = Clock::now();
    size_t got = first;
    while (backend.outstanding() > 0) got += backend.poll(nullptr).size();
    collect_s += seconds_since(t0);
    n += static_cast<int64_t>(got);
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["submit_us_per_eval"] = 1e6 * submit_s / static_cast<double>(n);
  state.counters["round_us"] = 1e6 * round_s / iters;
  state.counters["collect_us_per_eval"] = 1e6 * collect_s / static_cast<double>(n - state.iterations());
}

void register_all() {
  using benchmark::RegisterBenchmark;
  const std::vector<Family> blocked = {gemm_family("blocked")};
  const std::vector<Family> synthetic = synthetic_families();

  RegisterBenchmark("BM_ForEachValid/blocked", BM_ForEachValid, blocked)
      ->Unit(benchmark::kMillisecond)
      ->Iterations(2);
  RegisterBenchmark("BM_ForEachValid/synthetic", BM_ForEachValid, synthetic)
      ->Unit(benchmark::kMicrosecond);
  RegisterBenchmark("BM_SpaceFirstSize/blocked", BM_SpaceFirstSize, blocked)
      ->Unit(benchmark::kMillisecond)
      ->Iterations(2);
  RegisterBenchmark("BM_SpaceFirstSize/synthetic", BM_SpaceFirstSize, synthetic)
      ->Unit(benchmark::kMicrosecond);

  RegisterBenchmark("BM_SpaceAt", BM_SpaceAt);
  RegisterBenchmark("BM_RandomPoint", BM_RandomPoint);

  for (const char* s : {"knob", "family", "crossover"})
    RegisterBenchmark((std::string("BM_Synth/") + s).c_str(), BM_Synth, std::string(s));

  for (const auto& info : StrategyRegistry::builtin().all())
    RegisterBenchmark(("BM_Strategy/" + info.name).c_str(), BM_Strategy, info.name)
        ->ArgName("warm")
        ->Arg(0)
        ->Arg(200)
        ->Arg(2000)
        ->Iterations(64)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);

  RegisterBenchmark("BM_StoreWrite", BM_StoreWrite)->Unit(benchmark::kMicrosecond);
  RegisterBenchmark("BM_StoreDedupLookup", BM_StoreDedupLookup)
      ->Arg(2000)
      ->Unit(benchmark::kMicrosecond);

  for (const auto& info : StrategyRegistry::builtin().all()) {
    auto* b = RegisterBenchmark(("BM_EngineRun/" + info.name).c_str(), BM_EngineRun, info.name)
                  ->ArgNames({"file", "evals"})
                  ->Args({0, 500})
                  ->Args({1, 500})
                  ->Iterations(1)
                  ->UseManualTime()
                  ->Unit(benchmark::kMillisecond);
    // Not evolution: on the gemm space it re-proposes known points ~100 times
    // per new one past ~1700 evaluations, and each idle batch still saves the
    // run's summary (O(history)), so 2000 evaluations take over a minute.
    if (info.name != "evolution") b->Args({0, 2000});
  }

  // 1x, 10x and 100x a batch of 8 (one generation per batch).
  for (const auto& info : StrategyRegistry::builtin().all()) {
    if (info.name == "grid") continue;
    RegisterBenchmark(("BM_EngineScale/" + info.name).c_str(), BM_EngineScale, info.name)
        ->ArgName("batch")
        ->Arg(8)
        ->Arg(80)
        ->Arg(800)
        ->Iterations(1)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  RegisterBenchmark("BM_SlurmBackend", BM_SlurmBackend)
      ->ArgName("batch")
      ->Arg(8)
      ->Arg(80)
      ->Arg(800)
      ->Iterations(3)
      ->Unit(benchmark::kMillisecond);
}

}  // namespace
}  // namespace kevo

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  kevo::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
