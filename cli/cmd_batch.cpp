// kevo batch: the tasks of a suite searched, one after another or (those that
// evaluate on a cluster) side by side, recorded in the store as a batch that
// resumes after a kill (search/batch.h).
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/store.h"
#include "eval/roofline.h"
#include "eval/slurm_backend.h"
#include "report/report.h"
#include "search/batch.h"
#include "search/session.h"

namespace kevo::cli {

namespace {

// A task that stopped with an error (a target missing on this machine, say)
// is tried again when the batch resumes.
bool finished(const BatchTask& t) {
  return t.status == "done" || t.status == "no-kernel";
}

// The stored outcome of a run that finished (a kill can fall after the run
// finished and before the batch recorded it).
std::optional<nlohmann::json> finished_summary(Store& store, int64_t run) {
  const std::optional<RunRecord> r = store.run(run);
  if (!r || r->status != "done") return std::nullopt;
  const nlohmann::json s = r->summary();
  return s.is_object() ? s : nlohmann::json::object();
}

std::string outcome_text(const nlohmann::json& summary) {
  if (!summary.contains("best") || !summary["best"].is_object()) return "no correct kernel";
  std::string text = fmt::format("best {} ({:.0f}% of roof)",
                                 format_seconds(summary["best"]["median_s"].get<double>()),
                                 100 * summary["best"]["roof_fraction"].get<double>());
  if (summary.contains("speedup_over_seed"))
    text += fmt::format(", {:.2f}x the seed", summary["speedup_over_seed"].get<double>());
  return text;
}

void print_batch_table(const nlohmann::json& report) {
  QueryResult table;
  table.columns = {"#",    "task", "run",   "status", "best", "speedup over seed",
                   "roof", "evals", "failed"};
  for (const auto& t : report["tasks"]) {
    auto cell = [](const nlohmann::json& v) {
      return SqlValue(v.is_string() ? v.get<std::string>() : v.is_null() ? "" : v.dump());
    };
    // Why it stopped ("space exhausted"), and how its candidates failed.
    std::string status = t["status"].get<std::string>();
    if (t["detail"].is_string() && !t["detail"].get<std::string>().empty())
      status += ": " + t["detail"].get<std::string>();
    table.rows.push_back(
        {cell(t["seq"]), cell(t["task"]), cell(t["run"]), SqlValue(status),
         SqlValue(t["best_s"].is_number() ? format_seconds(t["best_s"].get<double>()) : ""),
         SqlValue(t["speedup_over_seed"].is_number()
                      ? fmt::format("{:.2f}x", t["speedup_over_seed"].get<double>())
                      : ""),
         SqlValue(t["roof_fraction"].is_number()
                      ? fmt::format("{:.0f}%", 100 * t["roof_fraction"].get<double>())
                      : ""),
         cell(t["evaluations"]),
         SqlValue(t["failures"].is_object() ? failure_counts_text(t["failures"]) : "")});
  }
  const nlohmann::json& b = report["batch"];
  fmt::print("kevo batch {} ({}): {}\n", b["id"].get<int64_t>(), b["name"].get<std::string>(),
             b["status"].get<std::string>());
  print_table(stdout, table);
  fmt::print("report: kevo report batch:{} [--format html -o report.html]\n",
             b["id"].get<int64_t>());
}

// Searches one task of batch `id` in `store`; true when it was interrupted.
// A task's own mistake (a kernel folder missing, say) is its "error" status,
// not the batch's end. `slots`: the batch's cap on cluster jobs in flight;
// `beside_others`: other tasks run at the same time (a line per result).
bool search_task(Store& store, int64_t id, size_t n_tasks, const BatchTask& t,
                 std::shared_ptr<JobSlots> slots, bool beside_others) {
  const std::string label = fmt::format("[task {}/{} {}] ", t.seq, n_tasks, t.name);
  const std::optional<int64_t> run = store.batch_task_run(id, t.seq);
  if (run) {
    if (auto summary = finished_summary(store, *run)) {
      store.set_batch_task(
          id, t.seq, run,
          summary->contains("best") && (*summary)["best"].is_object() ? "done" : "no-kernel",
          summary->value("stop_reason", ""));
      return false;
    }
  }
  try {
    Task task = parse_task(t.config, t.origin);
    SearchConfig cfg = parse_search_config(task.search, "$.search");
    if (!cfg.stop.max_evals && !cfg.stop.max_seconds) {
      cfg.stop.max_seconds = 15 * 60;
      progress(label +
               "no budget given (search.stop.max_evals / max_minutes, in the task or "
               "the suite): stopping after 15 minutes");
    }
    nlohmann::json run_config = {
        {"config", task.config}, {"origin", t.origin}, {"batch", {{"id", id}, {"seq", t.seq}}}};
    SearchRequest request{task, cfg, run_config, run, std::nullopt};
    request.job_slots = std::move(slots);
    request.lines_only = beside_others;
    std::unique_ptr<SearchSession> session;
    {
      // Sessions are built one at a time (targets and caches are set up
      // here); they then search side by side.
      static std::mutex building;
      std::lock_guard<std::mutex> lock(building);
      session = std::make_unique<SearchSession>(store, std::move(request));
    }
    store.set_batch_task(id, t.seq, session->engine().run_id(), "running");
    progress(fmt::format("{}{} run {}", label, run ? "resuming" : "searching in",
                         session->engine().run_id()));
    const std::string reason = session->run(label);
    if (reason == "interrupted") return true;
    nlohmann::json summary = session->engine().summary(reason);
    store.set_batch_task(id, t.seq, std::nullopt, session->engine().best() ? "done" : "no-kernel",
                         reason);
    progress(fmt::format("{}{}; {}", label, outcome_text(summary), reason));
  } catch (const UserError& e) {
    // One task's mistake does not stop the others; the table says what it was.
    store.set_batch_task(id, t.seq, std::nullopt, "error", e.what());
    progress(label + "error: " + e.what());
  }
  return search_interrupted();
}

size_t parse_count(const std::string& v, const std::string& option) {
  if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 9)
    throw UserError(fmt::format("{}: expected a count (0: the default), not '{}'", option, v));
  return static_cast<size_t>(std::stoul(v));
}

}  // namespace

int cmd_batch(const Argv& argv) {
  Args a("batch", "batch SUITE [--db PATH] [--resume BATCH] [--json]",
         "Searches every task of a suite, one after another, as kevo run would. A suite is JSON:\n"
         "  {\"name\": \"nightly\", \"tasks\": [\"../cpu/*.json\"],\n"
         "   \"defaults\": {...}, \"overrides\": {\"*\": {...}, \"TASK\": {...}}}\n"
         "tasks are paths or globs relative to the suite; each task's config is merged over\n"
         "the defaults, then the overrides for every task (\"*\") and its own are merged over it.\n"
         "The batch is kept in the store: a killed batch continues with --resume, keeping every\n"
         "finished task and continuing the unfinished one. Ends with a table of the tasks.\n"
         "Tasks that evaluate on a cluster (search.backend kind \"slurm\") are searched side by\n"
         "side, sharing one cap on the array tasks in flight (the suite's \"cluster\":\n"
         "{\"tasks_at_once\": N, \"max_jobs_in_flight\": M}, or the options below); a task\n"
         "timed on this machine runs alone.\n"
         "Exit status: 0 when every task found a correct kernel, 1 otherwise, 2 for bad input.",
         {db_option(),
          {"--resume", "BATCH", "continue batch BATCH (an id, batch:ID or a name; SUITE optional)"},
          {"--tasks-at-once", "N", "cluster tasks searched side by side (default 4)"},
          {"--max-jobs", "M", "cluster array tasks in flight at once, all tasks together (default: no cap)"},
          json_option()},
         0, 1);
  a.parse(argv);
  if (a.help()) {
    fmt::print("{}", a.help_text());
    return 0;
  }
  std::optional<size_t> at_once_option, max_jobs_option;
  if (auto v = a.value("--tasks-at-once")) at_once_option = parse_count(*v, "--tasks-at-once");
  if (auto v = a.value("--max-jobs")) max_jobs_option = parse_count(*v, "--max-jobs");
  const std::string db = store_path(a);
  Store store(db);
  int64_t id = 0;
  std::optional<Suite> suite;
  if (auto r = a.value("--resume")) {
    const bool numeric = !r->empty() && r->find_first_not_of("0123456789") == std::string::npos;
    auto found = find_batch(store, numeric ? "batch:" + *r : *r);
    if (!found) throw UserError(fmt::format("--resume: no batch '{}' in {}", *r, db));
    id = *found;
    if (!a.positional().empty()) {
      // A resumed batch keeps the configs it started with; a changed suite
      // is a new batch.
      suite = load_suite(a.positional()[0]);
      const Batch stored = load_batch(store, id);
      bool same = suite->tasks.size() == stored.tasks.size();
      for (size_t i = 0; same && i < suite->tasks.size(); ++i)
        same = suite->tasks[i].config == stored.tasks[i].config;
      if (!same)
        throw UserError(
            fmt::format("{} has changed since batch {} began: run it without --resume "
                        "to start a new batch",
                        a.positional()[0], id));
    }
  } else {
    if (a.positional().empty())
      throw UserError("kevo batch: SUITE is required (or --resume BATCH); see kevo batch --help");
    suite = load_suite(a.positional()[0]);
    id = create_batch(store, *suite);
  }

  const Batch batch = load_batch(store, id);
  size_t left = 0;
  for (const auto& t : batch.tasks) left += !finished(t);
  // Tasks that evaluate on a cluster run side by side, sharing one cap on
  // the array tasks in flight; a task timed on this machine runs alone.
  size_t at_once = at_once_option ? *at_once_option : suite ? suite->tasks_at_once : 0;
  size_t max_jobs = max_jobs_option ? *max_jobs_option : suite ? suite->max_jobs_in_flight : 0;
  if (at_once == 0) at_once = 4;
  std::shared_ptr<JobSlots> slots =
      max_jobs > 0 ? std::make_shared<JobSlots>(max_jobs) : nullptr;
  size_t on_cluster = 0;
  for (const auto& t : batch.tasks) on_cluster += !finished(t) && evaluates_on_cluster(t.config);
  if (left > 0) {
    store.set_batch_status(id, "running");
    progress(fmt::format("batch {} ({}): {} of {} tasks to search; report: kevo report batch:{}",
                         id, batch.name, left, batch.tasks.size(), id));
    if (on_cluster > 0)
      progress(fmt::format("{} of them evaluate on a cluster: up to {} side by side, {}",
                           on_cluster, at_once,
                           max_jobs ? fmt::format("at most {} jobs in flight", max_jobs)
                                    : std::string("no cap on jobs in flight")));
  }
  std::mutex mutex;
  std::condition_variable changed;
  size_t active = 0;
  bool stopped = false;
  std::vector<std::thread> side_by_side;
  for (const BatchTask& t : batch.tasks) {
    if (finished(t)) continue;
    const bool cluster = at_once > 1 && evaluates_on_cluster(t.config);
    std::unique_lock<std::mutex> lock(mutex);
    // A cluster task waits for a free place beside the others; a local one
    // for the machine to itself.
    changed.wait(lock, [&] { return stopped || (cluster ? active < at_once : active == 0); });
    if (stopped || search_interrupted()) {
      stopped = true;
      break;
    }
    if (!cluster) {
      lock.unlock();
      if (search_task(store, id, batch.tasks.size(), t, nullptr, false)) stopped = true;
      if (stopped) break;
      continue;
    }
    ++active;
    side_by_side.emplace_back([&, t] {
      bool interrupted = false;
      try {
        Store own(db);  // a connection of its own: SQLite's locks keep the writes apart
        interrupted = search_task(own, id, batch.tasks.size(), t, slots, true);
      } catch (const std::exception& e) {
        progress(fmt::format("[task {}/{} {}] error: {}", t.seq, batch.tasks.size(), t.name,
                             e.what()));
        try {
          Store own(db);
          own.set_batch_task(id, t.seq, std::nullopt, "error", e.what());
        } catch (const std::exception&) {
        }
      }
      std::lock_guard<std::mutex> done(mutex);
      --active;
      if (interrupted) stopped = true;
      changed.notify_all();
    });
  }
  for (auto& th : side_by_side) th.join();
  if (stopped) progress(fmt::format("interrupted: continue with kevo batch --resume {}", id));
  if (left > 0) store.set_batch_status(id, stopped ? "interrupted" : "done");
  if (slots)
    progress(fmt::format("cluster: at most {} jobs were in flight at once (cap {})", slots->peak(),
                         slots->cap()));

  const nlohmann::json report = batch_report(store, id);
  if (a.flag("--json")) {
    nlohmann::json out = {{"batch", report["batch"]}, {"tasks", report["tasks"]}};
    if (on_cluster > 0)
      out["cluster"] = {{"tasks_at_once", at_once},
                        {"max_jobs_in_flight", max_jobs},
                        {"peak_jobs_in_flight", slots ? nlohmann::json(slots->peak()) : nlohmann::json()}};
    fmt::print("{}\n", out.dump(2));
  } else {
    print_batch_table(report);
  }
  bool all_found = !stopped;
  for (const auto& t : report["tasks"]) all_found = all_found && t["status"] == "done";
  return all_found ? 0 : 1;
}

}  // namespace kevo::cli
