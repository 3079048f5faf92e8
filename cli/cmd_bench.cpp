// kevo bench strategies: the strategies compared in replay on recorded spaces.
#include <algorithm>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bench/strategy_bench.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/json_reader.h"
#include "core/paths.h"
#include "core/store.h"
#include "eval/roofline.h"
#include "search/strategy.h"

namespace kevo::cli {

namespace {

int bench_strategies_cmd(const Argv& argv) {
  Args a("bench strategies",
         "bench strategies [--db PATH] [--run RUN]... [--strategy NAME]... [--repeats N] "
         "[--budget B] [--json]",
         "Runs each strategy many times (seeds 1..N) in replay on recorded exhaustive spaces\n"
         "(grid runs; bench/record_spaces.sh records some) and scores it as Willemsen et al.\n"
         "(2024) do: P(t) = (f_random(t) - f(t)) / (f_random(t) - f_opt), with f_random the\n"
         "exact expectation of random sampling without replacement and t in evaluations.\n"
         "P = 0: no better than random; 1: the optimum at once. The score is P averaged over\n"
         "t = 1..budget; the table also shows how often the optimum was found, the median\n"
         "evaluations to come within 5% of it (with the share of runs that did), and the\n"
         "median best-so-far with a 95% bootstrap interval at 10/25/50/100% of the budget.\n"
         "\n"
         "With --kernel-tuner, Kernel Tuner's strategies run beside kevo's on the same\n"
         "recorded points and budget, in Kernel Tuner's simulation mode\n"
         "(bench/peers/kernel_tuner_peer.py, in the virtual environment scripts/setup.sh\n"
         "peers makes: kernel_tuner from PyPI), scored by the same code as kt:NAME.\n"
         "Kernel Tuner counts unique evaluations (a revisit is free; a failed point costs\n"
         "one); a strategy may stop before the budget by its own rules (column 'short').",
         {db_option(),
          {"--run", "RUN", "a recorded run to replay (default: every exhaustive grid run)", true},
          {"--space", "FILE",
           "a recorded space file to replay instead of the store's runs (kevo bench space "
           "writes them; bench/spaces/recorded/ has kevo's)",
           true},
          {"--strategy", "NAME", "a strategy to score (default: random, evolution, mcts, surrogate)", true},
          {"--params", "S=JSON", "parameters of strategy S, e.g. 'mcts={\"exploration\": 0.2}'",
           true},
          {"--repeats", "N", "runs per strategy and space (default 50)"},
          {"--budget", "B", "evaluations per run: a fraction of the space if < 1 (default 0.25)"},
          {"--kernel-tuner", "NAME", "a Kernel Tuner strategy to score beside kevo's ('all': each of them)",
           true},
          {"--kernel-tuner-python", "PATH",
           "the Python with kernel_tuner (default: $KEVO_KT_PYTHON, else the venv of scripts/setup.sh peers)"},
          {"--kernel-tuner-time-limit", "S", "wall seconds per Kernel Tuner run before it is cut (default 20)"},
          {"--random-start", "", "kevo's strategies start each repeat from a random recorded point of each family, "
                                 "not the families' default points (which Kernel Tuner does not have)"},
          json_option()},
         0, 0);
  a.parse(argv);
  if (a.help()) {
    fmt::print("{}", a.help_text());
    return 0;
  }
  StrategyBenchOptions o;
  for (const auto& r : a.values("--run")) o.runs.push_back(parse_id(r, "--run"));
  if (!a.values("--strategy").empty()) o.strategies = a.values("--strategy");
  for (const auto& s : o.strategies)
    if (!StrategyRegistry::builtin().find(s))
      throw UserError(fmt::format("--strategy: unknown strategy '{}'", s));
  for (const auto& p : a.values("--params")) {
    auto eq = p.find('=');
    if (eq == std::string::npos) throw UserError(fmt::format("--params expects S=JSON, got '{}'", p));
    auto j = nlohmann::json::parse(p.substr(eq + 1), nullptr, false);
    if (!j.is_object())
      throw UserError(fmt::format("--params {}: expected a JSON object", p.substr(0, eq)));
    o.params[p.substr(0, eq)] = j;
  }
  if (auto v = a.value("--repeats")) o.repeats = static_cast<int>(parse_id(*v, "--repeats"));
  if (auto v = a.value("--budget")) o.budget = parse_positive(*v, "--budget");
  for (const auto& k : a.values("--kernel-tuner")) {
    if (k == "all") {
      o.kernel_tuner = kernel_tuner_strategies();
      break;
    }
    const auto& known = kernel_tuner_strategies();
    if (std::find(known.begin(), known.end(), k) == known.end())
      throw UserError(fmt::format("--kernel-tuner: unknown strategy '{}' (Kernel Tuner's: {}, or all)", k,
                                  fmt::join(known, ", ")));
    o.kernel_tuner.push_back(k);
  }
  if (auto v = a.value("--kernel-tuner-python")) o.kernel_tuner_python = *v;
  o.random_start = a.flag("--random-start");
  if (auto v = a.value("--kernel-tuner-time-limit"))
    o.kernel_tuner_time_limit_s = parse_positive(*v, "--kernel-tuner-time-limit");
  if (!o.kernel_tuner.empty()) kernel_tuner_python(o.kernel_tuner_python);  // one clear line if missing
  // Space files are loaded into a store in memory, one run each.
  const std::vector<std::string> files = a.values("--space");
  if (!files.empty() && !o.runs.empty())
    throw UserError("kevo bench strategies: --run replays the store's runs, --space files: not both");
  std::unique_ptr<Store> store;
  std::map<int64_t, std::string> file_of;
  if (files.empty()) {
    store = std::make_unique<Store>(store_path(a), true);
  } else {
    store = std::make_unique<Store>(":memory:");
    for (const auto& f : files) {
      const int64_t run = load_space(*store, read_json_file(f), f);
      o.runs.push_back(run);
      file_of[run] = f;
    }
  }
  StatusLine status;
  auto scores = bench_strategies(*store, o, [&](std::string_view s) { status.set(s); });
  for (auto& s : scores)
    if (auto it = file_of.find(s.run); it != file_of.end()) s.source = it->second;
  status.clear();
  if (a.flag("--json")) {
    fmt::print("{}\n", to_json(scores).dump(2));
    return 0;
  }
  for (const auto& s : scores) {
    fmt::print("{} {}: {} points, optimum {}, budget {} evaluations, {} repeats; kevo's strategies start "
               "from {}\n",
               s.source.empty() ? fmt::format("run {}", s.run) : s.source, s.task, s.points, format_seconds(s.f_opt), s.budget, o.repeats,
               o.random_start ? "a random point of each family" : "the families' default points");
    fmt::print("  {:<22} {:>6} {:>15}  {:>7}  {:>13}  {:>5}  {}\n", "strategy", "score", "[95% CI]", "optimum",
               "to 5% (runs)", "short", "median best-so-far [95% CI] (P) at t =");
    std::vector<std::string> notes;
    for (const auto& st : s.strategies) {
      if (!st.note.empty()) notes.push_back(st.strategy + ": " + st.note);
      if (st.runs == 0) {
        fmt::print("  {:<22} {:>6}\n", st.strategy, "-");
        continue;
      }
      std::string cps;
      for (const auto& c : st.checkpoints)
        cps += fmt::format("  {}: {} [{}, {}] ({:+.2f})", c.t, format_seconds(c.median),
                           format_seconds(c.lo), format_seconds(c.hi), c.p);
      const std::string to5 = st.to_5pct_reached > 0
                                  ? fmt::format("{:.0f} ({:.0f}%)", st.to_5pct_median, 100 * st.to_5pct_reached)
                                  : "never";
      fmt::print("  {:<22} {:>+6.2f} {:>15}  {:>6.0f}%  {:>13}  {:>5}{}\n", st.strategy, st.score,
                 fmt::format("[{:+.2f}, {:+.2f}]", st.score_lo, st.score_hi), 100 * st.found_optimum, to5,
                 st.stopped_early, cps);
    }
    std::string rnd;
    for (size_t t : {s.budget / 10, s.budget / 4, s.budget / 2, s.budget})
      if (t >= 1) rnd += fmt::format("  {}: {}", t, format_seconds(s.random_curve[t - 1]));
    fmt::print("  {:<22} {:>6} {:>15}  {:>7}  {:>13}  {:>5}{}\n", "(random, expected)", "0", "", "", "", "", rnd);
    for (const auto& n : notes) fmt::print("  note: {}\n", n);
    fmt::print("\n");
  }
  return 0;
}

int bench_space_cmd(const Argv& argv) {
  Args a("bench space", "bench space RUN [-o FILE] [--db PATH]",
         "Writes recorded run RUN (an exhaustive grid run: bench/record_spaces.sh records\n"
         "some) as a space file: its task, its families' sources and every point's status\n"
         "and median, which kevo bench strategies --space FILE replays on any machine.",
         {db_option(), {"-o", "FILE", "write there instead of stdout"}}, 1, 1);
  a.parse(argv);
  if (a.help()) {
    fmt::print("{}", a.help_text());
    return 0;
  }
  Store store(store_path(a), true);
  const std::string text = save_space(store, parse_id(a.positional()[0], "kevo bench space")).dump(1) + "\n";
  if (auto out = a.value("-o"))
    write_file_atomic(*out, text.data(), text.size());
  else
    fmt::print("{}", text);
  return 0;
}

}  // namespace

int cmd_bench(const Argv& argv) {
  if (argv.empty() || argv[0] == "--help" || argv[0] == "-h") {
    fmt::print("usage: kevo bench strategies [OPTIONS]   (kevo bench strategies --help)\n"
               "       kevo bench space RUN [-o FILE]     (kevo bench space --help)\n\n"
               "  strategies  compare the search strategies in replay on recorded spaces\n"
               "  space       write a recorded space as a file anyone can replay\n");
    return argv.empty() ? 2 : 0;
  }
  if (argv[0] == "strategies") return bench_strategies_cmd(Argv(argv.begin() + 1, argv.end()));
  if (argv[0] == "space") return bench_space_cmd(Argv(argv.begin() + 1, argv.end()));
  throw UserError(fmt::format("kevo bench: unknown benchmark '{}' (expected: strategies, space)", argv[0]));
}

}  // namespace kevo::cli
