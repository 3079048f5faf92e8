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

  int64_t add_roof(const Roof& roof);
  // Every calibration stored for this target and host, oldest first.
  std::vector<Roof> roofs(std::string_view target, std::string_view host_key);

  // Runs any SQL; returns the rows of the last statement.
  QueryResult query(std::string_view sql);
  // Runs `sql` with positional text/number bindings, for kevo's own reads.
  QueryResult query(std::string_view sql, const std::vector<SqlValue>& params);

 private:
  void exec(std::string_view sql);
  void migrate();

  std::filesystem::path path_;
  sqlite3* db_ = nullptr;
};

}  // namespace kevo
