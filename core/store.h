// The SQLite store, kevo's record of truth: runs, sources (by content hash),
// candidates and their lineage, evaluations with raw timing samples, profiles,
// roof calibrations and LLM calls. WAL mode; versioned schema with migrations.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/eval_result.h"
#include "core/knobs.h"
#include "core/roof.h"

struct sqlite3;

namespace kevo {

struct Task;

using SqlValue = std::variant<std::nullptr_t, int64_t, double, std::string>;

// A column's text; "" for NULL and numbers.
std::string sql_text(const SqlValue& v);

struct QueryResult {
  std::vector<std::string> columns;
  std::vector<std::vector<SqlValue>> rows;
};

// A run as stored.
struct RunRecord {
  int64_t id = 0;
  std::string kind;  // eval | search | replay | calibrate
  std::string task_name, op, target, task_hash;
  std::string task_json;    // the resolved task, self-contained
  std::string config_json;  // what the run was started with
  std::string status;       // running | done | interrupted | ...
  std::string started_at, finished_at;  // finished_at "" while running
  std::string hostname, kevo_version;
  std::string summary_json;  // "" until the run has a summary

  nlohmann::json summary() const;  // null when none or unreadable
  nlohmann::json config() const;   // null when unreadable
};

// A candidate as stored, with the evaluation that is its result (the
// candidate_results view: the earlier run's measurement it reuses, else its
// own first; none while it is pending).
struct CandidateRecord {
  int64_t id = 0;
  int64_t run = 0;
  std::string source_hash;
  std::string knobs_json;
  std::string family, synthesizer, created_at;
  std::optional<int64_t> reuses_evaluation;
  std::optional<int64_t> result_evaluation;
};

// A candidate's result with the figures reports and trees show of it: one
// row of candidate_results joined with its evaluation.
struct CandidateResult {
  CandidateRecord candidate;
  std::string status;  // "" while pending
  std::string detail;
  std::optional<double> median_s, p20_s, p80_s, roof_fraction, achieved_gflops, achieved_gbps;
  std::string bound, bottleneck, diagnosis;
  std::optional<int64_t> roof_id;
  std::string evaluated_at;  // the result evaluation's created_at
};

struct SourceRecord {
  std::string hash, text, origin, language;
};

// One row of the profiles table.
struct ProfileRow {
  int64_t evaluation = 0;
  std::string metric;
  std::optional<double> value;
  std::string unit;
  int64_t source_line = 0;  // 0: not a per-line figure
};

// Whether a profile row's metric says how a candidate was measured, not what
// the kernel does: the machine's state (machine.*), kevo's own cost of
// measuring it (eval.*) and, with several timed shapes, each shape's timing
// (shape.K.*, shown as timings, not as profile figures).
inline bool is_measuring_metric(std::string_view metric) {
  return metric.rfind("machine.", 0) == 0 || metric.rfind("eval.", 0) == 0 ||
         metric.rfind("shape.", 0) == 0;
}

// A recorded LLM call, as llm_calls keeps it.
struct LlmCallRecord {
  std::optional<int64_t> run;
  std::string model, endpoint, prompt_hash, prompt, response;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  double cost_usd = 0, latency_s = 0;
  std::string status;  // ok | failed | ...
  int64_t attempts = 0;  // HTTP attempts made, retries included (0: none made)
  std::string failure;   // how a failed call failed ("timeout", "budget", ...; "" otherwise)
};

// A batch (kevo batch) and its tasks, as stored.
struct BatchTaskRecord {
  int64_t seq = 0;  // 1-based
  std::string name;
  std::string origin;          // the task config file
  nlohmann::json config;       // after the suite's defaults and overrides
  std::optional<int64_t> run;  // its search run, once recorded
  std::string status;          // pending | running | done | no-kernel | error
  std::string detail;          // the stop reason, or the error
};
struct BatchRecord {
  int64_t id = 0;
  std::string name, suite_path;
  std::string status;  // running | interrupted | done
  std::string started_at, finished_at;
  std::vector<BatchTaskRecord> tasks;
};

class Store {
 public:
  // Opens (creating and migrating when writable) the store at `path`.
  // Throws UserError when it cannot be opened or is newer than this kevo.
  explicit Store(const std::filesystem::path& path, bool read_only = false);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  static int latest_schema_version();
  int schema_version();
  const std::filesystem::path& path() const { return path_; }

  int64_t begin_run(std::string_view kind, const Task& task, const nlohmann::json& config);
  void finish_run(int64_t run, std::string_view status);

  // Stores a source once by content; returns its hash.
  std::string put_source(std::string_view text, std::string_view origin,
                         std::string_view language);
  int64_t add_candidate(int64_t run, const std::string& source_hash, const KnobValues& knobs,
                        std::string_view family, std::string_view synthesizer,
                        const std::vector<int64_t>& parents = {},
                        std::optional<int64_t> reuses_evaluation = std::nullopt);
  // The evaluation and its samples, in one transaction.
  int64_t add_evaluation(int64_t candidate, const EvalResult& result);

  // An evaluation read back: status, detail, costs, timing with its samples,
  // diagnosis and the compiler's and the kernel's output (not the per-check reports).
  std::optional<EvalResult> evaluation(int64_t id);
  // The evaluation that is a candidate's result: the earlier run's
  // measurement it reuses, else its first; none while it is pending.
  std::optional<int64_t> result_evaluation(int64_t candidate);
  // The re-measurement that stands for a candidate's confirmation: among its
  // evaluations after the first (a search's confirmation takes one per round;
  // all of them when the candidate reuses an earlier run's measurement), the
  // first that failed, else the one with the median time (the lower middle
  // one of an even count) among the ok ones, else the first suspect one (a
  // time below the floor). None when it was measured only once.
  std::optional<int64_t> confirming_evaluation(int64_t candidate);
  // The state of the machine at the end of an evaluation's timing, as stored
  // with it (its machine.* profile rows: clocks, temperatures, power,
  // throttling, load), by metric; empty when none was read.
  std::map<std::string, double> machine_state(int64_t evaluation);
  void set_run_summary(int64_t run, const nlohmann::json& summary);
  // A finished or interrupted run taken up again (kevo run --resume).
  void reopen_run(int64_t run);

  // ---- typed reads: everything kevo reads of the store outside kevo query ----
  std::optional<RunRecord> run(int64_t id);
  // The other search runs of a task, newest first, at most `limit`.
  std::vector<RunRecord> search_runs_of_task(const std::string& task_hash, int64_t except,
                                             int limit);
  // Finished grid searches that ran their space to the end (kevo bench strategies).
  std::vector<int64_t> exhaustive_grid_runs();
  std::optional<CandidateRecord> candidate(int64_t id);
  // A run's candidates in the order they were made.
  std::vector<CandidateRecord> candidates(int64_t run);
  // A run's candidates with their results, pending ones included, in order.
  std::vector<CandidateResult> results(int64_t run);
  // A run's lineage edges (child, parent), by child then parent.
  std::vector<std::pair<int64_t, int64_t>> lineage(int64_t run);
  // A candidate's own evaluations, oldest first (not the one it reuses).
  std::vector<int64_t> evaluations_of(int64_t candidate);
  // The same for every candidate of a run, by candidate.
  std::map<int64_t, std::vector<int64_t>> evaluations_of_run(int64_t run);
  // When an evaluation was stored ("" when there is none).
  std::string evaluated_at(int64_t evaluation);
  // What a run's evaluations cost: their count and compile and run seconds.
  struct RunCost {
    int64_t evaluations = 0;
    double compile_s = 0, run_s = 0;
  };
  RunCost run_cost(int64_t run);
  std::optional<SourceRecord> source(const std::string& hash);
  // The distinct sources of a run's candidates, in the order first used.
  std::vector<SourceRecord> sources_of_run(int64_t run);
  // An evaluation's profile rows, in the order stored.
  std::vector<ProfileRow> profile(int64_t evaluation);
  // Each candidate's per-shape figures (a multi-shape task's shape.K.*
  // metrics) from the evaluation that stands as its result; only candidates
  // that have them.
  std::map<int64_t, std::vector<ShapeTime>> shape_times_of_run(int64_t run);
  // The latest candidate measuring this point (family source and knobs) of
  // this task, on this host, by this kevo version, in a run other than
  // `except_run`, that has a result.
  std::optional<int64_t> latest_candidate_of_point(const std::string& source_hash,
                                                   const std::string& knobs_json,
                                                   const std::string& task_hash,
                                                   const std::string& hostname,
                                                   const std::string& kevo_version,
                                                   int64_t except_run);
  // Every calibration of the target and host that measured roof `id`,
  // oldest first; empty when there is no such roof.
  std::vector<Roof> roofs_like(int64_t id);

  // ---- LLM calls ----
  int64_t add_llm_call(const LlmCallRecord& call);
  void link_llm_call(int64_t call, int64_t candidate);
  // A run's calls, in the order they were made (a replay answers from them).
  std::vector<LlmCallRecord> llm_calls_of_run(int64_t run);
  // The `occurrence`-th (0-based) successful call with this prompt hash.
  std::optional<LlmCallRecord> recorded_llm_call(const std::string& prompt_hash,
                                                 int64_t occurrence);

  // ---- batches ----
  // A new batch with its tasks (seq 1..n, all pending), in one transaction.
  int64_t add_batch(const std::string& name, const std::string& suite_path,
                    const std::string& suite_json, const std::vector<BatchTaskRecord>& tasks);
  std::optional<BatchRecord> batch(int64_t id);
  // Whether the store has batches at all (a store older than them, opened read-only, has not).
  bool has_batches();
  std::optional<int64_t> latest_batch_named(const std::string& name);
  // The search run of task `seq` of `batch`: the one recorded, else the
  // latest tagged with them in runs.config_json.
  std::optional<int64_t> batch_task_run(int64_t batch, int64_t seq);
  void set_batch_task(int64_t batch, int64_t seq, std::optional<int64_t> run,
                      std::string_view status, std::string_view detail = {});
  void set_batch_status(int64_t batch, std::string_view status);

  int64_t add_roof(const Roof& roof);
  // Every calibration stored for this target and host, oldest first.
  std::vector<Roof> roofs(std::string_view target, std::string_view host_key);
  // The hosts (node types: CPU model and count, or GPU) with a calibration
  // of this target, the most recently calibrated first.
  std::vector<std::string> roof_host_keys(std::string_view target);

  // Runs any SQL; returns the rows of the last statement (kevo query).
  QueryResult query(std::string_view sql);
  // Runs `sql` with positional text/number bindings (kevo query's named
  // queries and tests; kevo's own code uses the typed methods above).
  QueryResult query(std::string_view sql, const std::vector<SqlValue>& params);

 private:
  void exec(std::string_view sql);
  void migrate();

  std::filesystem::path path_;
  sqlite3* db_ = nullptr;
};

}  // namespace kevo
