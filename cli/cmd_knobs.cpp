// kevo knobs: a kernel's knob space, from its @kevo declarations alone or,
// with --task, as the task's search would use it (the config's tune_params
// and restrictions merged in, the task's knob restrictions applied). With
// --compile, the points are compiled for the task and the compiler's
// register and spill report is checked point by point.
#include <algorithm>
#include <filesystem>
#include <mutex>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/knobs.h"
#include "core/paths.h"
#include "core/space.h"
#include "core/task.h"
#include "eval/compile_cache.h"
#include "search/families.h"
#include "targets/target.h"

namespace kevo::cli {

namespace {

constexpr size_t kLimit = 10'000'000;  // valid points counted per family at most

size_t count_valid(const KnobSpace& space) {
  size_t valid = 0;
  space.for_each_valid([&](const KnobValues&) { return ++valid < kLimit; });
  return valid;
}

// One family's space as JSON. `own` is what the source declares itself, when
// a task merged its config knobs in (null without a task).
nlohmann::json space_json(const std::string& kernel, const KnobSpace& space, const KnobSpace* own,
                          const Task* task, const std::map<std::string, int64_t>& facts = {}) {
  nlohmann::json j;
  j["kernel"] = kernel;
  j["knobs"] = nlohmann::json::array();
  for (const auto& k : space.knobs()) {
    nlohmann::json kj = {{"name", k.name}, {"default", k.default_value}, {"values", k.values}};
    if (own) {
      kj["from"] = own->find(k.name) ? "source" : "tune_params";
      bool in_config = false;
      for (const auto& c : task->config_knobs.knobs) in_config = in_config || c.name == k.name;
      if (own->find(k.name) && in_config) kj["overrides_tune_params"] = true;
      if (task->knob_restrictions.count(k.name)) kj["restricted_by_task_knobs"] = true;
    }
    j["knobs"].push_back(kj);
  }
  j["require"] = nlohmann::json::array();
  for (const auto& c : space.constraints()) j["require"].push_back(c.expr.text());
  // The source's own constraints come first; the task's restrictions follow.
  if (own) {
    j["restrictions"] = nlohmann::json::array();
    j["device_limits"] = task->config_knobs.device;  // the last of them
    for (size_t i = own->constraints().size(); i < space.constraints().size(); ++i)
      j["restrictions"].push_back(space.constraints()[i].expr.text());
  }
  // The starts, and with a task, the point each gives at each timed shape.
  j["start"] = nlohmann::json::array();
  for (const KnobStart& s : space.starts()) {
    nlohmann::json sj = {{"text", s.text}, {"line", s.line}};
    if (task) {
      sj["points"] = nlohmann::json::array();
      for (auto dims : dimension_values(*task)) {
        dims.insert(facts.begin(), facts.end());
        std::string why;
        auto point = space.start_point(s, dims, kernel, &why);
        sj["points"].push_back(point ? nlohmann::json{{"knobs", *point}}
                                     : nlohmann::json{{"skipped", why}});
      }
    }
    j["start"].push_back(sj);
  }
  j["points"] = space.size_unconstrained();
  j["valid_points"] = count_valid(space);
  if (!space.default_note().empty()) j["default_note"] = space.default_note();
  return j;
}

void print_space(const nlohmann::json& j) {
  const bool merged = j.contains("restrictions");
  for (const auto& k : j["knobs"]) {
    std::vector<std::string> notes;
    if (merged) {
      if (k["from"] == "tune_params")
        notes.push_back("tune_params");
      else if (k.value("overrides_tune_params", false))
        notes.push_back("@kevo, over tune_params");
      if (k.value("restricted_by_task_knobs", false)) notes.push_back("restricted by the task");
    }
    std::vector<int64_t> values = k["values"].get<std::vector<int64_t>>();
    std::string line =
        fmt::format("  knob {:<14} default {:<6} {{{}}}", k["name"].get<std::string>(),
                    k["default"].get<int64_t>(), fmt::join(values, ", "));
    if (!notes.empty()) line += fmt::format("  ({})", fmt::join(notes, "; "));
    fmt::print("{}\n", line);
  }
  const size_t n_device = merged ? j["device_limits"].size() : 0;
  for (size_t i = 0; i < j["require"].size(); ++i)
    fmt::print("  require {}{}\n", j["require"][i].get<std::string>(),
               !merged                                         ? ""
               : i + n_device >= j["require"].size()           ? "  (the device's launch limit)"
               : i + j["restrictions"].size() >= j["require"].size() ? "  (restrictions)"
                                                                      : "");
  for (const auto& s : j["start"]) {
    fmt::print("  start {}\n", s["text"].get<std::string>());
    for (const auto& p : s.value("points", nlohmann::json::array()))
      fmt::print("    {}\n", p.contains("knobs")
                                 ? "-> " + knobs_to_string(p["knobs"].get<KnobValues>())
                                 : "skipped: " + p["skipped"].get<std::string>());
  }
  if (j.contains("default_note")) fmt::print("  default: {}\n", j["default_note"].get<std::string>());
  const size_t valid = j["valid_points"].get<size_t>();
  fmt::print("  {} of {} points valid{}\n", valid, j["points"].get<uint64_t>(),
             valid >= kLimit ? " (counted up to the limit)" : "");
}

// The files --task shows: KERNEL (a file, else a family name of the task),
// or every family of the task.
std::vector<std::filesystem::path> task_kernels(const Task& task,
                                                const std::optional<std::string>& kernel) {
  if (kernel && std::filesystem::is_regular_file(*kernel)) return {*kernel};
  std::vector<std::filesystem::path> all = family_files(task, {});
  if (!kernel) return all;
  for (const auto& f : all)
    if (f.stem().string() == *kernel) return {f};
  std::vector<std::string> names;
  for (const auto& f : all) names.push_back(f.stem().string());
  throw UserError(
      fmt::format("{}: no such file, and no family of task {} is named so (its "
                  "families: {})",
                  *kernel, task.name, fmt::join(names, ", ")));
}

// ---- --compile: the compiler's report for the points of a family ----

// The valid points of family `f` where `where` holds (all of them without
// it): a condition in the @kevo require language over the family's knobs and
// the builtins (NCPU, ...).
std::vector<KnobValues> matching_points(const Family& f, const std::optional<std::string>& where) {
  KnobSpace space = f.space;
  if (where) {
    try {
      space = f.space.with_require(*where);
    } catch (const ExprError& e) {
      throw UserError(fmt::format("kevo knobs: --where '{}': {} (column {}, family {})", *where,
                                  e.what(), e.column(), f.name));
    }
  }
  return space.enumerate_valid(kLimit);
}

// At most `limit` of `points`, spread evenly over them (all when they fit).
std::vector<KnobValues> spread(std::vector<KnobValues> points, size_t limit) {
  if (points.size() <= limit) return points;
  std::vector<KnobValues> out;
  for (size_t i = 0; i < limit; ++i) out.push_back(points[i * points.size() / limit]);
  return out;
}

bool is_spill_metric(const std::string& name) { return name.find("spill") != std::string::npos; }

// Compiles `points` of family `f` for the task, `jobs` at a time (through the
// compile cache), and returns one JSON object per point: its knobs, whether it
// compiled, the compiler's figures, and whether any spill figure is above 0.
nlohmann::json compile_points(Target& target, const Task& task, const Family& f,
                              const std::vector<KnobValues>& points, size_t jobs) {
  CompileCache compiles(cache_dir());
  const std::string language = target.language_of(f.origin);
  std::vector<nlohmann::json> rows(points.size());
  size_t done = 0;
  std::mutex mu;
  boost::asio::thread_pool pool(jobs);
  for (size_t i = 0; i < points.size(); ++i)
    boost::asio::post(pool, [&, i] {
      nlohmann::json row = {{"knobs", points[i]}};
      try {
        CompiledCandidate c = compiles.get(target, task, f.text, f.origin, language, points[i]);
        row["compiled"] = c.ok;
        nlohmann::json figures = nlohmann::json::object();
        bool spills = false;
        if (c.ok)
          for (const auto& m : target.compile_metrics(c.log)) {
            figures[m.metric] = m.value;
            spills = spills || (is_spill_metric(m.metric) && m.value > 0);
          }
        row["figures"] = figures;
        row["spills"] = spills;
        if (!c.ok) row["log"] = c.log.substr(0, 2000);
      } catch (const std::exception& e) {
        row["compiled"] = false;
        row["figures"] = nlohmann::json::object();
        row["spills"] = false;
        row["log"] = e.what();
      }
      std::lock_guard lock(mu);
      const size_t k = ++done;
      progress(fmt::format("[{}/{}] {} {}: {}", k, points.size(), f.name,
                           knobs_to_string(points[i]),
                           !row["compiled"].get<bool>() ? "failed to compile"
                           : row["spills"].get<bool>()  ? "spills"
                                                        : "ok"));
      rows[i] = std::move(row);
    });
  pool.join();
  return nlohmann::json(rows);
}

// "registers 64, spill_store_bytes 0, ..." from a row's figures.
std::string figures_text(const nlohmann::json& figures) {
  std::vector<std::string> parts;
  for (auto it = figures.begin(); it != figures.end(); ++it) {
    std::string name = it.key();
    if (const size_t dot = name.find('.'); dot != std::string::npos) name = name.substr(dot + 1);
    parts.push_back(fmt::format("{} {}", name, it.value().get<double>()));
  }
  return parts.empty() ? "no figures from the compiler" : fmt::format("{}", fmt::join(parts, ", "));
}

int compile_task_families(const Args& a, const Task& task, const SearchSpace& space) {
  std::unique_ptr<Target> target = make_target(task.target);
  const std::optional<std::string> where = a.value("--where");
  auto count = [&](const char* option, size_t fallback) {
    const std::optional<std::string> v = a.value(option);
    return v ? static_cast<size_t>(parse_id(*v, option)) : fallback;
  };
  const size_t limit = count("--limit", 500);
  const size_t jobs = count("--jobs", static_cast<size_t>(std::max(1, online_cpus())));
  nlohmann::json out = {{"task", task.name},
                        {"target", task.target},
                        {"where", where ? nlohmann::json(*where) : nlohmann::json(nullptr)},
                        {"families", nlohmann::json::array()}};
  size_t bad = 0;
  for (const Family& f : space.families()) {
    const std::vector<KnobValues> matching = matching_points(f, where);
    const std::vector<KnobValues> points = spread(matching, limit);
    progress(fmt::format("{}: compiling {} of {} point{}{} on {} core{}", f.name, points.size(),
                         matching.size(), matching.size() == 1 ? "" : "s",
                         where ? " where " + *where : "", jobs, jobs == 1 ? "" : "s"));
    nlohmann::json rows = compile_points(*target, task, f, points, jobs);
    size_t spilled = 0, failed = 0, with_figures = 0;
    for (const auto& r : rows) {
      spilled += r["spills"].get<bool>();
      failed += !r["compiled"].get<bool>();
      with_figures += !r["figures"].empty();
    }
    bad += spilled + failed;
    out["families"].push_back({{"family", f.name},
                               {"kernel", f.origin.string()},
                               {"matching_points", matching.size()},
                               {"compiled_points", points.size()},
                               {"spilled", spilled},
                               {"failed", failed},
                               {"points", rows}});
    if (a.flag("--json")) continue;
    fmt::print("family {}  {}\n", f.name, f.origin.string());
    fmt::print("  {} of the {} point{}{} compiled{}\n", points.size(), matching.size(),
               matching.size() == 1 ? "" : "s", where ? " where " + *where + " holds" : "",
               points.size() < matching.size() ? " (spread evenly over them; --limit)" : "");
    for (const auto& r : rows) {
      const std::string knobs = knobs_to_string(r["knobs"].get<KnobValues>());
      if (!r["compiled"].get<bool>())
        fmt::print("  failed to compile: {}\n", knobs);
      else if (r["spills"].get<bool>())
        fmt::print("  spills: {}: {}\n", knobs, figures_text(r["figures"]));
    }
    // The point with the most registers, where the compiler reports them.
    const std::string regs = target->traits().register_metric;
    const nlohmann::json* most = nullptr;
    for (const auto& r : rows)
      if (!regs.empty() && r["figures"].contains(regs) &&
          (!most || r["figures"][regs].get<double>() > (*most)["figures"][regs].get<double>()))
        most = &r;
    fmt::print("  {} spill, {} failed to compile", spilled, failed);
    if (most)
      fmt::print("; most registers: {} at {}", (*most)["figures"][regs].get<double>(),
                 knobs_to_string((*most)["knobs"].get<KnobValues>()));
    if (with_figures == 0 && !points.empty() && failed < points.size())
      fmt::print("; the {} compiler reports no register or spill figures", task.target);
    fmt::print("\n");
  }
  if (a.flag("--json")) fmt::print("{}\n", out.dump(2));
  return bad ? 1 : 0;
}

int knobs_of_task(const Args& a, const std::string& task_path) {
  const Task task = load_task(task_path);
  // The device's facts for the starts, as the target would give them on it.
  std::map<std::string, int64_t> facts;
  for (const std::string& f : a.values("--fact")) {
    const auto [name, value] = parse_knob_assignment(f);
    if (!KnobSpace::start_fact_meaning(name))
      throw UserError(fmt::format("--fact {}: unknown (known: {})", f, KnobSpace::start_fact_list()));
    facts[name] = value;
  }
  std::optional<std::string> kernel;
  if (!a.positional().empty()) kernel = a.positional()[0];
  const std::vector<std::filesystem::path> files = task_kernels(task, kernel);
  // What the search builds: the same loader, with the config knobs and the
  // task's knob restrictions (the language does not change a knob space).
  const SearchSpace space = load_space(
      files, task.knob_restrictions, [](const std::filesystem::path&) { return std::string(); },
      task.config_knobs);
  if (a.flag("--compile")) return compile_task_families(a, task, space);
  std::vector<std::string> searched;
  if (task.search.contains("families") && task.search["families"].is_array())
    for (const auto& f : task.search["families"])
      if (f.is_string()) searched.push_back(f.get<std::string>());

  nlohmann::json out = {{"task", task.name},
                        {"operator", std::string(task.op->name())},
                        {"target", task.target},
                        {"families", nlohmann::json::array()}};
  size_t valid = 0;
  for (const Family& f : space.families()) {
    const KnobSpace own = KnobSpace::parse_source(f.text, f.origin.string());
    nlohmann::json j = space_json(f.origin.string(), f.space, &own, &task, facts);
    j["family"] = f.name;
    j["searched"] =
        searched.empty() || std::find(searched.begin(), searched.end(), f.name) != searched.end();
    valid += j["valid_points"].get<size_t>();
    out["families"].push_back(j);
  }
  out["valid_points"] = valid;
  if (a.flag("--json")) {
    fmt::print("{}\n", out.dump(2));
    return 0;
  }
  fmt::print("task {} ({} on {}): {} famil{}\n", task.name, task.op->name(), task.target,
             out["families"].size(), out["families"].size() == 1 ? "y" : "ies");
  for (const auto& j : out["families"]) {
    fmt::print("family {}  {}{}\n", j["family"].get<std::string>(), j["kernel"].get<std::string>(),
               j["searched"].get<bool>() ? "" : "  (not in search.families)");
    print_space(j);
  }
  if (out["families"].size() > 1) fmt::print("{} valid points in all\n", valid);
  return 0;
}

}  // namespace

int cmd_knobs(const Argv& argv) {
  Args a("knobs",
         "knobs KERNEL | --task TASK [KERNEL] [--compile [--where EXPR] [--limit N] "
         "[--jobs N]]   [--json]",
         "Reads the @kevo knob, require and start declarations of KERNEL and prints the knob\n"
         "space: each knob's values and default, the constraints, the starts, and how many\n"
         "points of the space satisfy the constraints on this machine.\n"
         "With --task, the space the task's search uses: the task's tune_params (a knob the\n"
         "source declares itself keeps the source's values) and restrictions merged in, its\n"
         "\"knobs\" restrictions applied. KERNEL is a file or the name of one of the task's\n"
         "families; without it, every family of the task (its \"kernels\", else the\n"
         "operator's shipped families for the task's target). Each start line shows the point\n"
         "it gives at each of the task's timed shapes, where the search begins besides the\n"
         "defaults; a start that reads what the device is (SMS) needs --fact SMS=N here\n"
         "(kevo run has it from the GPU).\n"
         "With --compile, the task's valid points (those where --where holds) are compiled\n"
         "for the task as a search would compile them, and the compiler's report is read\n"
         "point by point: registers and spills from ptxas on cuda. It lists the points that\n"
         "spill or fail to compile and exits 1 if there is one: a check for a family's\n"
         "register budget (its require lines) before a search meets it.",
         {{"--task", "TASK", "the task config whose knob space to show"},
          {"--fact", "NAME=V", "a device fact for the starts, e.g. SMS=132", true},
          {"--compile", "", "compile the task's points and report spills and failures"},
          {"--where", "EXPR", "with --compile: only the points where EXPR holds, e.g. 'MINB >= 4'"},
          {"--limit", "N", "with --compile: at most N points per family, spread evenly (500)"},
          {"--jobs", "N", "with --compile: compiles at once (default: the CPUs)"},
          json_option()},
         0, 1);
  a.parse(argv);
  if (a.help()) {
    fmt::print("{}", a.help_text());
    return 0;
  }
  for (const char* o : {"--compile", "--where", "--limit", "--jobs"})
    if (a.flag(o) && !a.value("--task"))
      throw UserError(fmt::format("kevo knobs: {} needs --task TASK (the shapes and target to "
                                  "compile for)",
                                  o));
  for (const char* o : {"--where", "--limit", "--jobs"})
    if (a.flag(o) && !a.flag("--compile"))
      throw UserError(fmt::format("kevo knobs: {} goes with --compile", o));
  if (auto task = a.value("--task")) return knobs_of_task(a, *task);
  if (a.positional().empty())
    throw UserError("kevo knobs: KERNEL is required (or --task TASK); see kevo knobs --help");
  const std::string path = a.positional()[0];
  KnobSpace space = KnobSpace::parse_source(read_text_file(path), path);
  nlohmann::json j = space_json(path, space, nullptr, nullptr);
  if (a.flag("--json")) {
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  fmt::print("{}\n", path);
  print_space(j);
  return 0;
}

}  // namespace kevo::cli
