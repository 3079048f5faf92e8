// kevo bench strategies: the strategies compared in replay on recorded spaces.
#include <fmt/format.h>

#include "bench/strategy_bench.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
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
         "t = 1..budget; the table also shows the median best-so-far with a 95% bootstrap\n"
         "interval at 10/25/50/100% of the budget.",
         {db_option(),
          {"--run", "RUN", "a recorded run to replay (default: every exhaustive grid run)", true},
          {"--strategy", "NAME", "a strategy to score (default: random, evolution, mcts)", true},
          {"--params", "S=JSON", "parameters of strategy S, e.g. 'mcts={\"exploration\": 0.2}'",
           true},
          {"--repeats", "N", "runs per strategy and space (default 50)"},
          {"--budget", "B", "evaluations per run: a fraction of the space if < 1 (default 0.25)"},
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
  Store store(store_path(a), true);
  StatusLine status;
  auto scores = bench_strategies(store, o, [&](std::string_view s) { status.set(s); });
  status.clear();
  if (a.flag("--json")) {
    fmt::print("{}\n", to_json(scores).dump(2));
    return 0;
  }
  for (const auto& s : scores) {
    fmt::print("run {} {}: {} points, optimum {}, budget {} evaluations, {} repeats\n", s.run,
               s.task, s.points, format_seconds(s.f_opt), s.budget, o.repeats);
    fmt::print("  {:<10} {:>6}  {:>7}  {}\n", "strategy", "score", "optimum",
               "median best-so-far [95% CI] (P) at t =");
    for (const auto& st : s.strategies) {
      std::string cps;
      for (const auto& c : st.checkpoints)
        cps += fmt::format("  {}: {} [{}, {}] ({:+.2f})", c.t, format_seconds(c.median),
                           format_seconds(c.lo), format_seconds(c.hi), c.p);
      fmt::print("  {:<10} {:>+6.2f}  {:>6.0f}% {}\n", st.strategy, st.score,
                 100 * st.found_optimum, cps);
    }
    std::string rnd;
    for (size_t t : {s.budget / 10, s.budget / 4, s.budget / 2, s.budget})
      if (t >= 1) rnd += fmt::format("  {}: {}", t, format_seconds(s.random_curve[t - 1]));
    fmt::print("  {:<10} {:>6}  {:>7} {}\n\n", "(expected)", "0", "", rnd);
  }
  return 0;
}

}  // namespace

int cmd_bench(const Argv& argv) {
  if (argv.empty() || argv[0] == "--help" || argv[0] == "-h") {
    fmt::print("usage: kevo bench strategies [OPTIONS]   (kevo bench strategies --help)\n\n"
               "  strategies  compare the search strategies in replay on recorded spaces\n");
    return argv.empty() ? 2 : 0;
  }
  if (argv[0] == "strategies") return bench_strategies_cmd(Argv(argv.begin() + 1, argv.end()));
  throw UserError(fmt::format("kevo bench: unknown benchmark '{}' (expected: strategies)", argv[0]));
}

}  // namespace kevo::cli
