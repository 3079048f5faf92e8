// kevo knobs: a kernel's knob space, from its @kevo declarations alone or,
// with --task, as the task's search would use it (the config's tune_params
// and restrictions merged in, the task's knob restrictions applied).
#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/knobs.h"
#include "core/paths.h"
#include "core/space.h"
#include "core/task.h"
#include "search/engine.h"

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
                          const Task* task) {
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
    for (size_t i = own->constraints().size(); i < space.constraints().size(); ++i)
      j["restrictions"].push_back(space.constraints()[i].expr.text());
  }
  j["points"] = space.size_unconstrained();
  j["valid_points"] = count_valid(space);
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
  for (size_t i = 0; i < j["require"].size(); ++i)
    fmt::print(
        "  require {}{}\n", j["require"][i].get<std::string>(),
        merged && i + j["restrictions"].size() >= j["require"].size() ? "  (restrictions)" : "");
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

int knobs_of_task(const Args& a, const std::string& task_path) {
  const Task task = load_task(task_path);
  std::optional<std::string> kernel;
  if (!a.positional().empty()) kernel = a.positional()[0];
  const std::vector<std::filesystem::path> files = task_kernels(task, kernel);
  // What the search builds: the same loader, with the config knobs and the
  // task's knob restrictions (the language does not change a knob space).
  const SearchSpace space = load_space(
      files, task.knob_restrictions, [](const std::filesystem::path&) { return std::string(); },
      task.config_knobs);
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
    nlohmann::json j = space_json(f.origin.string(), f.space, &own, &task);
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
  Args a("knobs", "knobs KERNEL | --task TASK [KERNEL]   [--json]",
         "Reads the @kevo knob and @kevo require declarations of KERNEL and prints the knob\n"
         "space: each knob's values and default, the constraints, and how many points of the\n"
         "space satisfy them on this machine.\n"
         "With --task, the space the task's search uses: the task's tune_params (a knob the\n"
         "source declares itself keeps the source's values) and restrictions merged in, its\n"
         "\"knobs\" restrictions applied. KERNEL is a file or the name of one of the task's\n"
         "families; without it, every family of the task (its \"kernels\", else the\n"
         "operator's shipped families for the task's target).",
         {{"--task", "TASK", "the task config whose knob space to show"}, json_option()}, 0, 1);
  a.parse(argv);
  if (a.help()) {
    fmt::print("{}", a.help_text());
    return 0;
  }
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
