// kevo run: a search from a task config until a stop condition, every result
// stored as it finishes; --resume continues a killed run, --replay answers
// from a recorded run instead of running kernels.
#include <algorithm>
#include <cmath>
#include <fstream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/paths.h"
#include "core/store.h"
#include "core/task.h"
#include "eval/roofline.h"
#include "report/machine_text.h"
#include "report/report.h"
#include "search/engine.h"
#include "search/families.h"
#include "search/session.h"
#include "targets/target.h"

namespace kevo::cli {

namespace {

// A multi-shape run: per timed shape, the chosen kernel's time and the
// fastest kernel of the run at that shape alone.
// A summary's knobs as " K=V K=V" (empty for none), to follow a family's name.
std::string knobs_suffix(const nlohmann::json& knobs) {
  std::string s;
  for (auto it = knobs.begin(); it != knobs.end(); ++it)
    s += fmt::format(" {}={}", it.key(), it.value().get<int64_t>());
  return s;
}

void print_shapes(const nlohmann::json& shapes) {
  bool first = true;
  for (const auto& row : shapes) {
    std::string text = fmt::format("{} x{:g}: ", row["shape"].get<std::string>(),
                                   row["weight"].get<double>());
    if (row.contains("chosen"))
      text += fmt::format("chosen {} ({:.0f}% of its roof)",
                          format_seconds(row["chosen"]["median_s"].get<double>()),
                          row["chosen"]["roof_pct"].get<double>());
    else
      text += "chosen: none";
    if (row.contains("best") && row.contains("verdict")) {
      const auto& b = row["best"];
      const std::string verdict = row["verdict"].get<std::string>();
      if (verdict == "the chosen kernel") {
        text += "; also the fastest at this shape";
      } else {
        const std::string knobs = knobs_suffix(b["knobs"]);
        text += fmt::format("; fastest here: candidate {} {}{} {} ({})", b["candidate"].get<int64_t>(),
                            b["family"].get<std::string>(), knobs,
                            format_seconds(b["median_s"].get<double>()),
                            verdict == "faster"
                                ? fmt::format("{:.2f}x faster, apart beyond the p20-p80 spread",
                                              row["chosen_over_best"].get<double>())
                                : "within the noise of the chosen: inconclusive");
      }
    }
    fmt::print("{:<12}{}\n", first ? "per shape" : "", text);
    first = false;
  }
}

void print_summary(const Engine& engine, const Task& task, const nlohmann::json& j,
                   const std::string& best_file) {
  const EngineStats& s = engine.stats();
  fmt::print("kevo run {}: {} ({} {} {} on {}), strategy {}{}\n", j["run"].get<int64_t>(),
             task.name, task.op->name(), timed_shapes_str(task), dtype_name(task.dtype),
             task.target, j["strategy"].get<std::string>(),
             j["backend"] == "replay" ? " (replayed)" : "");
  fmt::print("{:<12}{}\n", "stopped", j["stop_reason"].get<std::string>());
  if (j.contains("replay")) {
    const auto& r = j["replay"];
    const int64_t n = r["candidates"].get<int64_t>(), of = r["recorded_candidates"].get<int64_t>();
    if (!r["left_at"].is_null())
      fmt::print("{:<12}left run {}'s recording after {} of its {} candidates\n", "replay",
                 r["of"].get<int64_t>(), n, of);
    else
      fmt::print("{:<12}followed run {}: {} of its {} candidates, the same{}\n", "replay",
                 r["of"].get<int64_t>(), n, of, n == of ? " tree" : " so far");
  }
  auto line = [&](const char* label, const nlohmann::json& b, const char* extra_key,
                  const std::string& extra_note = "") {
    if (b.is_null()) {
      const std::string failed =
          failure_counts_text(j.value(std::string(label) + "_failures", nlohmann::json()));
      fmt::print("{:<12}{}\n", label, failed.empty() ? "not measured" : "failed (" + failed + ")");
      return;
    }
    const std::string knobs = knobs_suffix(b["knobs"]);
    std::string detail = fmt::format("candidate {}; {:.0f}% of the {} roof",
                                     b["candidate"].get<int64_t>(),
                                     100 * b["roof_fraction"].get<double>(),
                                     b["bound"].get<std::string>());
    if (b.value("confirmed", false))
      detail += fmt::format("; re-measured, {} when found",
                            format_seconds(b["search_median_s"].get<double>()));
    std::string speedup;
    if (extra_key && j.contains(extra_key))
      speedup = fmt::format("  -> best is {:.2f}x faster{}", j[extra_key].get<double>(), extra_note);
    fmt::print("{:<12}{} {}{} ({}){}\n", label, format_seconds(b["median_s"].get<double>()),
               b["family"].get<std::string>(), knobs, detail, speedup);
  };
  line("best", j["best"], nullptr);
  // The next best re-measured: whether "best" held round after round.
  if (j.contains("runner_up")) {
    const auto& r = j["runner_up"];
    std::string why;
    if (r.contains("round_ranges_s")) {
      const auto& g = r["round_ranges_s"];
      const auto at = [&](const char* who, int i) { return format_seconds(g[who][i].get<double>()); };
      why = fmt::format(" (confirmation rounds: best {} to {}, runner-up {} to {})", at("best", 0),
                        at("best", 1), at("runner_up", 0), at("runner_up", 1));
    }
    const double ratio = r["best_over_runner_up"].get<double>();
    const std::string verdict =
        r["verdict"] == "apart"
            ? fmt::format("best is {:.2f}x faster, apart in every round{}", ratio, why)
            : fmt::format("inconclusive: best {:.2f}x by the medians, faster in {} of {} rounds, "
                          "but the rounds overlap{}",
                          ratio, r["best_faster"].get<int64_t>(), r["rounds"].get<int64_t>(), why);
    const std::string knobs = knobs_suffix(r["knobs"]);
    fmt::print("{:<12}{} {}{} (candidate {})  -> {}\n", "runner-up",
               format_seconds(r["median_s"].get<double>()), r["family"].get<std::string>(), knobs,
               r["candidate"].get<int64_t>(), verdict);
  }
  if (j.contains("shapes")) print_shapes(j["shapes"]);
  // What the LLM gave: a model that did not answer must not go unnoticed.
  if (j.contains("llm")) {
    const auto& l = j["llm"];
    std::string failed;
    for (auto it = l["failures"].begin(); it != l["failures"].end(); ++it)
      failed += fmt::format("{}{} {}", failed.empty() ? "" : ", ", it.value().get<int64_t>(),
                            it.key());
    fmt::print("{:<12}{} calls answered ({} from the recorded calls), {} failed{}; {} kernels made\n",
               "llm", l["calls"].get<int64_t>(), l["cached"].get<int64_t>(),
               l["failed_calls"].get<int64_t>(), failed.empty() ? "" : " (" + failed + ")",
               l["sources"].get<int64_t>());
    if (l["failed_calls"].get<int64_t>() > 0 && !l["last_failure"].get<std::string>().empty())
      fmt::print("{:<12}the last failure: {}\n", "", l["last_failure"].get<std::string>());
  }
  // Paired round by round, which a drifting machine cannot fake.
  std::string rounds_note;
  if (j.contains("best_faster_than_seed"))
    rounds_note = fmt::format(" (faster in {} of {} confirmation rounds)",
                              j["best_faster_than_seed"]["faster"].get<int64_t>(),
                              j["best_faster_than_seed"]["rounds"].get<int64_t>());
  line("seed", j["seed"], "speedup_over_seed", rounds_note);
  line("naive", j["naive"], "speedup_over_naive");
  if (j.contains("drift")) {
    // How far the machine moved while the search ran: gaps of that size between
    // candidates timed far apart in it were not resolved.
    std::string parts;
    double worst = 0;
    for (const auto& d : j["drift"]) {
      const double c = d["change"].get<double>();
      worst = std::max(worst, std::abs(c));
      parts += fmt::format("{}{:+.1f}% ({})", parts.empty() ? "" : ", ", 100 * c,
                           d["family"].get<std::string>());
    }
    // Beside it, what the machine's state read at the two timings of the
    // point that moved most (of those with both states): shown, not blamed.
    const nlohmann::json* most = nullptr;
    for (const auto& d : j["drift"])
      if (d.contains("machine_search") && d.contains("machine_confirmed") &&
          (!most ||
           std::abs(d["change"].get<double>()) > std::abs((*most)["change"].get<double>())))
        most = &d;
    std::string machine;
    if (most) {
      const std::string moved =
          machine_change_text((*most)["machine_search"], (*most)["machine_confirmed"]);
      if (!moved.empty())
        machine = fmt::format("; the machine at {}'s two timings: {}",
                              (*most)["family"].get<std::string>(), moved);
    }
    fmt::print("{:<12}the default points measured {} at the confirmation against the search{}{}\n",
               "drift", parts,
               worst > 0.02 ? fmt::format("; gaps under {:.0f}% between candidates timed apart are "
                                          "within it",
                                          std::ceil(100 * worst))
                            : "",
               machine);
  }
  if (j.contains("machine"))
    if (const std::string held = clocks_held_text(j["machine"]); !held.empty())
      fmt::print("{:<12}{}: this run's figures are at those clocks\n", "machine", held);
  fmt::print("{:<12}{} measured ({}), {} answered from earlier runs, {} repeated proposals\n",
             "evaluations", s.evaluations, failures_text(s), s.reused, s.duplicates);
  fmt::print("{:<12}{} on the budget clock; this process {}: compile {}, run {}, searcher {} + "
             "store {} ({:.2f}% of wall)\n",
             "time", format_seconds(s.elapsed_s), format_seconds(s.wall_s),
             format_seconds(s.compile_s), format_seconds(s.run_s), format_seconds(s.searcher_s),
             format_seconds(s.store_s),
             100 * j["overhead_share"].get<double>());
  if (j.contains("best_lineage")) {
    std::string chain;
    for (const auto& n : j["best_lineage"])
      chain += fmt::format("{}{} ({})", chain.empty() ? "" : " <- ", n["candidate"].get<int64_t>(),
                           n["synthesizer"].get<std::string>());
    fmt::print("{:<12}{}\n", "lineage", chain);
  }
  if (!best_file.empty()) fmt::print("{:<12}{} (knobs baked in)\n", "written", best_file);
}

}  // namespace

int cmd_run(const Argv& argv) {
  Args a("run", "run CONFIG [--db PATH] [--max-evals N] [--max-minutes M] [--resume RUN] ...",
         "Searches for the fastest correct kernel for the task in CONFIG: the strategy grows a\n"
         "tree of candidates from the operator's kernel families, each one is compiled, checked,\n"
         "timed and diagnosed, and every result is stored as it finishes. Stops at the first of\n"
         "the config's stop conditions (search.stop) or the budgets given here. Then the best\n"
         "few and every family's default point are timed again, in rounds of alternating order\n"
         "(search.confirm, search.confirm_rounds), and the best is chosen by its median round;\n"
         "the summary says how far the default points drifted meanwhile, and what the machine's\n"
         "clocks, temperatures, power or load read at their two timings where the target reads\n"
         "them. A killed run continues with --resume; nothing that finished is measured again.\n"
         "Exit status: 0 when a correct kernel was found, 1 when none was, 2 for bad input.",
         {db_option(),
          {"--max-evals", "N", "stop after N new evaluations (overrides search.stop.max_evals)"},
          {"--max-minutes", "M", "stop after M minutes (overrides search.stop.max_minutes)"},
          {"--resume", "RUN", "continue run RUN of the store (CONFIG optional)"},
          {"--replay", "RUN", "answer from the measurements (and LLM calls) of run RUN instead of "
                              "running kernels: with RUN's strategy and seed, the same tree; with "
                              "another, a what-if on RUN's points"},
          {"--strategy", "NAME", "grid | random | evolution | mcts (overrides search.strategy)"},
          {"--seed", "N", "the strategy's random seed (overrides search.seed)"},
          {"--backend", "local|slurm",
           "where candidates are evaluated: this machine, or a Slurm job array per batch "
           "(overrides search.backend; slurm without search.backend uses $KEVO_CACHE_DIR/slurm, "
           "which the nodes must share)"},
          {"--knob", "K=V[,V...]", "search only these values of knob K (e.g. THREADS=1); kept "
                                   "with the run",
           true},
          {"-o", "BEST_FILE", "write the best kernel there, knobs baked in"},
          {"--per-shape", "DIR",
           "a task with several timed shapes: also write, for each shape, the fastest kernel "
           "of the run at that shape alone to DIR/shape-K.EXT (K: its index in \"shapes\")"},
          {"--dot", "FILE", "write the candidate tree as Graphviz DOT"},
          json_option()},
         0, 1);
  a.parse(argv);
  if (a.help()) {
    fmt::print("{}", a.help_text());
    return 0;
  }
  const std::string db = store_path(a);
  Store store(db);

  // The task and the search configuration: from CONFIG, or as the resumed run kept them.
  std::optional<int64_t> resume;
  if (auto r = a.value("--resume")) resume = parse_id(*r, "--resume");
  if (!resume && a.positional().empty())
    throw UserError("kevo run: CONFIG is required (or --resume RUN); see kevo run --help");
  Task task;
  SearchConfig cfg;
  nlohmann::json run_config;
  if (resume) {
    const std::optional<RunRecord> stored = store.run(*resume);
    if (!stored) throw UserError(fmt::format("no run {} in {}", *resume, db));
    run_config = stored->config();
    if (!run_config.is_object() || !run_config.contains("config") || !run_config.contains("search"))
      throw UserError(fmt::format("run {} is not a search run (nothing to resume)", *resume));
    task = parse_task(run_config["config"], run_config.value("origin", std::string("task")));
    if (!a.positional().empty()) {
      Task given = load_task(a.positional()[0]);
      if (given.hash != task.hash)
        throw UserError(fmt::format("{} is not the task run {} searched (hash {} vs {})",
                                    a.positional()[0], *resume, given.hash, task.hash));
    }
    cfg = parse_search_config(run_config["search"], "$.search");
  } else {
    task = load_task(a.positional()[0]);
    if (!a.values("--knob").empty()) {
      // Restrictions become part of the config, so a resumed run keeps them.
      nlohmann::json config = task.config;
      for (const auto& k : a.values("--knob")) {
        auto eq = k.find('=');
        if (eq == std::string::npos || eq == 0)
          throw UserError(fmt::format("--knob expects NAME=VALUE[,VALUE...], got '{}'", k));
        nlohmann::json values = nlohmann::json::array();
        std::string rest = k.substr(eq + 1);
        for (size_t pos = 0; pos <= rest.size();) {
          size_t comma = rest.find(',', pos);
          if (comma == std::string::npos) comma = rest.size();
          values.push_back(parse_knob_assignment(k.substr(0, eq) + "=" +
                                                 rest.substr(pos, comma - pos)).second);
          pos = comma + 1;
        }
        config["knobs"][k.substr(0, eq)] = values;
      }
      task = parse_task(config, a.positional()[0]);
    }
    cfg = parse_search_config(task.search, "$.search");
    run_config = {{"config", task.config},
                  {"origin", std::filesystem::absolute(a.positional()[0]).string()}};
  }
  if (auto v = a.value("--max-evals"))
    cfg.stop.max_evals = static_cast<int64_t>(parse_positive(*v, "--max-evals"));
  if (auto v = a.value("--max-minutes")) cfg.stop.max_seconds = 60 * parse_positive(*v, "--max-minutes");
  if (auto v = a.value("--seed")) {
    char* end = nullptr;
    const unsigned long long seed = std::strtoull(v->c_str(), &end, 10);
    if (v->empty() || *end || (*v)[0] == '-')
      throw UserError(fmt::format("--seed expects an integer >= 0, got '{}'", *v));
    cfg.seed = seed;
  }
  if (auto v = a.value("--strategy")) {
    if (resume && *v != cfg.strategy)
      throw UserError(fmt::format("run {} used strategy {}: a resumed run keeps it", *resume,
                                  cfg.strategy));
    cfg.strategy = *v;
    cfg.params = nlohmann::json::object();  // the config's params were for another strategy
    if (!StrategyRegistry::builtin().find(cfg.strategy))
      throw UserError(fmt::format("--strategy: unknown strategy '{}'", cfg.strategy));
  }
  if (auto v = a.value("--backend")) {
    if (*v == "local") {
      cfg.backend = nullptr;
    } else if (*v == "slurm") {
      if (!cfg.backend.is_object() || cfg.backend.value("kind", std::string()) != "slurm")
        cfg.backend = {{"kind", "slurm"}, {"dir", (cache_dir() / "slurm").string()}};
    } else {
      throw UserError(fmt::format("--backend: expected local or slurm, got '{}'", *v));
    }
  }
  if (!cfg.stop.max_evals && !cfg.stop.max_seconds) {
    cfg.stop.max_seconds = 15 * 60;
    progress("no budget given (search.stop.max_evals / max_minutes, --max-evals, --max-minutes): "
             "stopping after 15 minutes");
  }

  std::optional<int64_t> replay;
  if (auto r = a.value("--replay")) replay = parse_id(*r, "--replay");
  else if (resume && run_config.contains("replay"))  // a replay resumes as one
    replay = run_config["replay"].get<int64_t>();

  SearchSession session(store, {task, cfg, run_config, resume, replay});
  const std::string reason = session.run();
  Engine& engine = session.engine();
  const SearchSpace& space = engine.space();

  nlohmann::json summary = engine.summary(reason);
  // Whether the GPU's clocks were held back while it timed (null on a CPU):
  // the figures above are then the capped clock's.
  if (nlohmann::json m = machine_over_run(store, engine.run_id()); !m.is_null())
    summary["machine"] = std::move(m);
  std::string best_file;
  if (auto out = a.value("-o")) {
    if (auto best = engine.best()) {
      const Family& f = space.family(best->point.family);
      std::string text = standalone_source(
          f, best->point.knobs,
          fmt::format("kevo run {} best for {}: median {} ({:.0f}% of roof)", engine.run_id(),
                      task.name, format_seconds(best->obs.seconds), 100 * best->obs.roof_fraction),
          shape_defines(task));
      write_file_atomic(*out, text.data(), text.size());
      best_file = *out;
    } else {
      progress("no correct kernel found: nothing written to " + *out);
    }
  }
  if (auto dir = a.value("--per-shape")) {
    if (!task.multi_shape())
      throw UserError("--per-shape: the task has one timed shape (give \"shapes\" a list)");
    std::filesystem::create_directories(*dir);
    nlohmann::json written = nlohmann::json::array();
    for (size_t k = 0; k < summary["shapes"].size(); ++k) {
      const nlohmann::json& row = summary["shapes"][k];
      if (!row.contains("best")) continue;
      const int64_t cand = row["best"]["candidate"].get<int64_t>();
      for (const Observation& o : engine.observations()) {
        if (o.candidate != cand) continue;
        const Family& f = space.family(o.point.family);
        std::string text = standalone_source(
            f, o.point.knobs,
            fmt::format("kevo run {}: the fastest at {} of task {} (median {} there)",
                        engine.run_id(), row["shape"].get<std::string>(), task.name,
                        format_seconds(row["best"]["median_s"].get<double>())),
            shape_defines(task));
        const std::string ext = f.origin.has_extension() ? f.origin.extension().string() : "";
        const auto path = std::filesystem::path(*dir) / fmt::format("shape-{}{}", k, ext);
        write_file_atomic(path, text.data(), text.size());
        written.push_back(path.string());
        break;
      }
    }
    summary["per_shape_files"] = written;
    if (!a.flag("--json"))
      for (const auto& w : written) progress("written: " + w.get<std::string>());
  }
  if (auto dot = a.value("--dot")) {
    std::ofstream f(*dot);
    if (!f) throw UserError(fmt::format("cannot write {}", *dot));
    engine.tree().write_dot(f, engine.best() ? engine.best()->candidate : 0);
  }
  if (a.flag("--json")) {
    if (!best_file.empty()) summary["best_file"] = best_file;
    fmt::print("{}\n", summary.dump(2));
  } else {
    print_summary(engine, task, summary, best_file);
  }
  return engine.best() ? 0 : 1;
}

int cmd_tree(const Argv& argv) {
  Args a("tree", "tree RUN [--db PATH] [-o FILE]",
         "Writes the candidate tree of a run (a DAG: crossover joins two parents) as Graphviz\n"
         "DOT, the best candidate's lineage in bold. Render with: dot -Tsvg tree.dot > tree.svg",
         {db_option(), {"-o", "FILE", "write there instead of stdout"}}, 1, 1);
  a.parse(argv);
  if (a.help()) {
    fmt::print("{}", a.help_text());
    return 0;
  }
  const int64_t run = parse_id(a.positional()[0], "kevo tree");
  Store store(store_path(a), true);
  CandidateTree tree = CandidateTree::load(store, run);
  if (tree.size() == 0) throw UserError(fmt::format("run {} has no candidates", run));
  int64_t best = 0;
  if (const std::optional<RunRecord> r = store.run(run)) {
    const nlohmann::json s = r->summary();
    if (s.is_object() && s.contains("best") && s["best"].is_object() &&
        s["best"].value("candidate", nlohmann::json()).is_number_integer())
      best = s["best"]["candidate"].get<int64_t>();
  }
  if (auto out = a.value("-o")) {
    std::ofstream f(*out);
    if (!f) throw UserError(fmt::format("cannot write {}", *out));
    tree.write_dot(f, best);
  } else {
    std::ostringstream s;
    tree.write_dot(s, best);
    fmt::print("{}", s.str());
  }
  return 0;
}

}  // namespace kevo::cli
