// Batches: a suite of tasks (task configs by path or glob, shared defaults,
// per-task overrides) searched one after another and recorded in the store
// (tables batches and batch_tasks), so that a killed batch resumes with
// every finished task kept and an unfinished one continued, not restarted.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/store.h"

namespace kevo {

struct SuiteTask {
  std::string name;              // the task's "name", else its file's stem
  std::filesystem::path origin;  // the task config file
  // The suite's defaults, then the file, then the overrides for every task
  // ("*") and for this one, each merged over the last as a JSON merge patch
  // (RFC 7396: objects merge key by key, anything else replaces).
  nlohmann::json config;
};

struct Suite {
  std::string name;  // "name", else the suite file's stem
  std::filesystem::path path;
  nlohmann::json written;        // the file as written (kept with the batch)
  std::vector<SuiteTask> tasks;  // in the order listed (each glob's matches sorted)
  // "cluster": {"tasks_at_once": N, "max_jobs_in_flight": M}: how many of the
  // tasks that evaluate on a cluster (search.backend kind "slurm") are searched
  // side by side, and a cap on their array tasks in flight together (0: the
  // default, 4 at once; no cap). Tasks evaluated on this machine run alone.
  size_t tasks_at_once = 0, max_jobs_in_flight = 0;
};

// Whether a task's config evaluates on a cluster (search.backend.kind "slurm").
bool evaluates_on_cluster(const nlohmann::json& task_config);

// Reads a suite file:
//   {"name": "cpu-nightly",
//    "tasks": ["../cpu/*.json", "extra/gemm-512.json"],
//    "defaults": {"search": {"stop": {"max_minutes": 10}}},
//    "overrides": {"*": {"knobs": {"THREADS": [1]}}, "gemm-1024": {...}}}
// Paths are relative to the suite file. Every task's config is checked
// (task and search sections) before anything runs. Throws UserError naming
// the JSON path: an unknown key, a pattern that matches no file, two tasks
// of one name, an override for a task the suite does not have.
Suite load_suite(const std::filesystem::path& path);

// A batch and its tasks as the store keeps them (core/store.h).
using BatchTask = BatchTaskRecord;
using Batch = BatchRecord;

// Records a new batch of `suite`'s tasks, all pending; returns its id.
int64_t create_batch(Store& store, const Suite& suite);
// The batch as stored. Throws UserError when there is none of that id.
Batch load_batch(Store& store, int64_t id);
// A batch named by "batch:ID" or by its name (the latest of that name);
// nullopt when `ref` is neither.
std::optional<int64_t> find_batch(Store& store, std::string_view ref);
// (A task's run and status are kept with Store::batch_task_run,
// set_batch_task and set_batch_status.)

}  // namespace kevo
