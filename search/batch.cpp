#include "search/batch.h"

#include <glob.h>

#include <set>

#include <fmt/format.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/json_reader.h"
#include "core/store.h"
#include "core/task.h"
#include "search/engine.h"

namespace kevo {

namespace {

// The files `pattern` names (a path or a shell glob, relative to `dir`),
// sorted; empty when none.
std::vector<std::filesystem::path> expand(const std::filesystem::path& dir,
                                          const std::string& pattern) {
  const std::filesystem::path p =
      std::filesystem::path(pattern).is_absolute() ? std::filesystem::path(pattern) : dir / pattern;
  glob_t g{};
  std::vector<std::filesystem::path> out;
  if (glob(p.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i)
      if (std::filesystem::is_regular_file(g.gl_pathv[i])) out.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  return out;
}

// A suite section that patches task configs: an object that may not rename
// the task (names key the overrides and the reports).
const nlohmann::json& patch_at(const nlohmann::json& v, const std::string& path) {
  if (!v.is_object()) throw ConfigError(path, "expected an object (merged into task configs)");
  if (v.contains("name")) throw ConfigError(path + ".name", "a suite cannot rename a task");
  return v;
}

}  // namespace

Suite load_suite(const std::filesystem::path& path) {
  Suite suite;
  suite.written = read_json_file(path.string());
  const nlohmann::json& j = suite.written;
  suite.path = std::filesystem::absolute(path);
  const std::filesystem::path dir = suite.path.parent_path();
  try {
    JsonObject root(j, "$");
    suite.name = root.get_string("name", path.stem().string());
    const nlohmann::json* tasks = root.get_raw("tasks");
    const nlohmann::json* d = root.get_raw("defaults");
    const nlohmann::json* o = root.get_raw("overrides");
    if (const nlohmann::json* c = root.get_raw("cluster")) {
      JsonObject cluster(*c, root.path_of("cluster"));
      const int64_t at_once = cluster.get_int("tasks_at_once", 0);
      const int64_t jobs = cluster.get_int("max_jobs_in_flight", 0);
      if (at_once < 0) throw ConfigError(cluster.path_of("tasks_at_once"), "expected a count >= 0");
      if (jobs < 0) throw ConfigError(cluster.path_of("max_jobs_in_flight"), "expected a count >= 0");
      cluster.finish();
      suite.tasks_at_once = static_cast<size_t>(at_once);
      suite.max_jobs_in_flight = static_cast<size_t>(jobs);
    }
    root.finish();  // a misspelt key first: it explains what seems missing
    if (!tasks || !tasks->is_array() || tasks->empty())
      throw ConfigError(root.path_of("tasks"),
                        "expected a non-empty list of task config paths or globs");
    const nlohmann::json defaults =
        d ? patch_at(*d, root.path_of("defaults")) : nlohmann::json::object();
    nlohmann::json overrides = nlohmann::json::object();
    if (o) {
      if (!o->is_object())
        throw ConfigError(root.path_of("overrides"),
                          "expected an object of patches by task name (\"*\": every task)");
      for (auto it = o->begin(); it != o->end(); ++it)
        patch_at(it.value(), root.path_of("overrides") + "." + it.key());
      overrides = *o;
    }

    std::set<std::filesystem::path> seen_files;
    std::set<std::string> names;
    for (size_t i = 0; i < tasks->size(); ++i) {
      const std::string at = fmt::format("$.tasks[{}]", i);
      const std::string pattern = json_to_string((*tasks)[i], at);
      const auto files = expand(dir, pattern);
      if (files.empty()) throw ConfigError(at, fmt::format("'{}' matches no file", pattern));
      for (const auto& file : files) {
        if (!seen_files.insert(std::filesystem::weakly_canonical(file)).second) continue;
        const nlohmann::json own = read_json_file(file.string());
        SuiteTask t;
        t.origin = file;
        t.name = own.is_object() && own.contains("name") && own["name"].is_string()
                     ? own["name"].get<std::string>()
                     : file.stem().string();
        if (!names.insert(t.name).second)
          throw ConfigError(at,
                            fmt::format("a second task named '{}' ({})", t.name, file.string()));
        t.config = defaults;
        t.config.merge_patch(own);
        if (overrides.contains("*")) t.config.merge_patch(overrides["*"]);
        if (overrides.contains(t.name)) t.config.merge_patch(overrides[t.name]);
        t.config["name"] = t.name;
        try {  // every task is checked now, not hours into the batch
          const Task task = parse_task(t.config, file);
          parse_search_config(task.search, "$.search");
        } catch (const UserError& e) {
          throw UserError(fmt::format("task '{}' ({}) with the suite's defaults and overrides: {}",
                                      t.name, file.string(), e.what()));
        }
        suite.tasks.push_back(std::move(t));
      }
    }
    for (auto it = overrides.begin(); it != overrides.end(); ++it)
      if (it.key() != "*" && !names.count(it.key()))
        throw ConfigError("$.overrides." + it.key(),
                          "the suite has no task of this name (names come from each config's "
                          "\"name\", else its file name)");
  } catch (const UserError& e) {
    throw UserError(fmt::format("{}: {}", path.string(), e.what()));
  }
  return suite;
}

bool evaluates_on_cluster(const nlohmann::json& task_config) {
  if (!task_config.is_object() || !task_config.contains("search")) return false;
  const nlohmann::json& s = task_config["search"];
  if (!s.is_object() || !s.contains("backend") || !s["backend"].is_object()) return false;
  const nlohmann::json& b = s["backend"];
  return b.contains("kind") && b["kind"] == "slurm";
}

int64_t create_batch(Store& store, const Suite& suite) {
  std::vector<BatchTask> tasks;
  for (const SuiteTask& t : suite.tasks) {
    BatchTask r;
    r.name = t.name;
    r.origin = t.origin.string();
    r.config = t.config;
    tasks.push_back(std::move(r));
  }
  return store.add_batch(suite.name, suite.path.string(), suite.written.dump(), tasks);
}

Batch load_batch(Store& store, int64_t id) {
  std::optional<Batch> b = store.batch(id);
  if (!b) throw UserError(fmt::format("no batch {} in {}", id, store.path().string()));
  return std::move(*b);
}

std::optional<int64_t> find_batch(Store& store, std::string_view ref) {
  // (A store older than batches, opened read-only, has none: Store::batch
  // and Store::latest_batch_named answer nullopt there.)
  constexpr std::string_view kPrefix = "batch:";
  if (ref.substr(0, kPrefix.size()) == kPrefix) {
    const std::string digits(ref.substr(kPrefix.size()));
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    const int64_t id = static_cast<int64_t>(std::stoll(digits));
    if (!store.batch(id)) return std::nullopt;
    return id;
  }
  return store.latest_batch_named(std::string(ref));
}

}  // namespace kevo
