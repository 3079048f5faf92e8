#include "core/store.h"

#include <sqlite3.h>

#include <cmath>

#include <chrono>
#include <ctime>
#include <limits>

#include <fmt/format.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/redact.h"
#include "core/hash.h"
#include "core/process.h"
#include "core/task.h"

namespace kevo {

namespace {

// Each entry moves the schema from version i to i + 1. Never edit a shipped
// entry: add a new one.
const char* const kMigrations[] = {
    // 1: the initial schema.
    R"sql(
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL,                 -- eval | search | calibrate
  task_name TEXT NOT NULL,
  operator TEXT NOT NULL,
  target TEXT NOT NULL,
  task_hash TEXT NOT NULL,
  task_json TEXT NOT NULL,
  config_json TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'running',
  started_at TEXT NOT NULL,
  finished_at TEXT,
  hostname TEXT,
  kevo_version TEXT
);
CREATE TABLE sources (
  hash TEXT PRIMARY KEY,
  text TEXT NOT NULL,
  origin TEXT,
  language TEXT,
  created_at TEXT NOT NULL
);
CREATE TABLE candidates (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id),
  source_hash TEXT NOT NULL REFERENCES sources(hash),
  knobs_json TEXT NOT NULL,
  family TEXT,
  synthesizer TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX candidates_by_run ON candidates(run_id);
CREATE INDEX candidates_by_point ON candidates(source_hash, knobs_json);
CREATE TABLE lineage (
  child_id INTEGER NOT NULL REFERENCES candidates(id),
  parent_id INTEGER NOT NULL REFERENCES candidates(id),
  PRIMARY KEY (child_id, parent_id)
) WITHOUT ROWID;
CREATE TABLE roofs (
  id INTEGER PRIMARY KEY,
  target TEXT NOT NULL,
  host_key TEXT NOT NULL,
  hostname TEXT,
  cpu_model TEXT,
  ncpu INTEGER,
  measured_at TEXT NOT NULL,
  json TEXT NOT NULL
);
CREATE TABLE roof_metrics (
  roof_id INTEGER NOT NULL REFERENCES roofs(id),
  kind TEXT NOT NULL,                 -- copy | copy_nt | triad | fp32_fma
  threads INTEGER NOT NULL,
  bytes REAL,                         -- working set (bandwidth kinds)
  value REAL NOT NULL,
  unit TEXT NOT NULL                  -- GB/s | GFLOP/s
);
CREATE TABLE evaluations (
  id INTEGER PRIMARY KEY,
  candidate_id INTEGER NOT NULL REFERENCES candidates(id),
  status TEXT NOT NULL,
  detail TEXT,
  compile_s REAL,
  compile_cached INTEGER,
  run_s REAL,
  median_s REAL,
  p20_s REAL,
  p80_s REAL,
  mean_s REAL,
  min_s REAL,
  max_s REAL,
  n_samples INTEGER,
  calls_per_sample INTEGER,
  max_abs_err REAL,
  max_ulp REAL,
  mismatches INTEGER,
  first_mismatch TEXT,
  checks_json TEXT,
  bound TEXT,
  roof_fraction REAL,
  floor_s REAL,
  achieved_gbps REAL,
  achieved_gflops REAL,
  diagnosis TEXT,
  roof_id INTEGER REFERENCES roofs(id),
  compile_log TEXT,
  stdout TEXT,
  stderr TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX evaluations_by_candidate ON evaluations(candidate_id);
CREATE TABLE samples (
  evaluation_id INTEGER NOT NULL REFERENCES evaluations(id),
  seq INTEGER NOT NULL,
  seconds REAL NOT NULL,              -- per call
  PRIMARY KEY (evaluation_id, seq)
) WITHOUT ROWID;
CREATE TABLE profiles (
  id INTEGER PRIMARY KEY,
  evaluation_id INTEGER NOT NULL REFERENCES evaluations(id),
  metric TEXT NOT NULL,
  value REAL,
  unit TEXT,
  source_line INTEGER                 -- per-line metrics where the target gives them
);
CREATE INDEX profiles_by_evaluation ON profiles(evaluation_id);
CREATE TABLE llm_calls (
  id INTEGER PRIMARY KEY,
  run_id INTEGER REFERENCES runs(id),
  candidate_id INTEGER REFERENCES candidates(id),
  model TEXT NOT NULL,
  endpoint TEXT,
  prompt_hash TEXT NOT NULL,
  prompt TEXT,
  response TEXT,
  prompt_tokens INTEGER,
  completion_tokens INTEGER,
  cost_usd REAL,
  latency_s REAL,
  status TEXT NOT NULL,
  created_at TEXT NOT NULL
);
)sql",
    // 2: search runs. A candidate whose point was measured before (this run
    // before a kill, or another run of the same task) points at that
    // evaluation instead of being measured again; a run keeps its summary.
    R"sql(
ALTER TABLE candidates ADD COLUMN reuses_evaluation INTEGER REFERENCES evaluations(id);
ALTER TABLE runs ADD COLUMN summary_json TEXT;
CREATE INDEX lineage_by_parent ON lineage(parent_id);
)sql",
    // 3: profiled candidates (the cuda target runs the best under ncu): what
    // limits the kernel, as the synthesizers read it.
    R"sql(
ALTER TABLE evaluations ADD COLUMN bottleneck TEXT;
)sql",
    // 4: batches (kevo batch): a suite's tasks with their resolved configs,
    // run one after another; each task's search run is also tagged with the
    // batch in runs.config_json, so a kill between starting a run and
    // recording it here loses nothing.
    R"sql(
CREATE TABLE batches (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  suite_path TEXT NOT NULL,
  suite_json TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'running',  -- running | interrupted | done
  started_at TEXT NOT NULL,
  finished_at TEXT
);
CREATE TABLE batch_tasks (
  batch_id INTEGER NOT NULL REFERENCES batches(id),
  seq INTEGER NOT NULL,                     -- 1-based, the order they run in
  task_name TEXT NOT NULL,
  origin TEXT NOT NULL,                     -- the task config file
  config_json TEXT NOT NULL,                -- after the suite's defaults and overrides
  run_id INTEGER REFERENCES runs(id),
  status TEXT NOT NULL DEFAULT 'pending',   -- pending | running | done | no-kernel | error
  detail TEXT,
  PRIMARY KEY (batch_id, seq)
) WITHOUT ROWID;
)sql",
    // 5: a candidate's result as one view, the rule every reader uses: the
    // earlier run's measurement it reuses, else its own first evaluation;
    // NULL while it is pending. Its later evaluations are confirmation rounds.
    R"sql(
CREATE VIEW candidate_results AS
SELECT c.id AS candidate_id, c.run_id AS run_id,
       COALESCE(c.reuses_evaluation,
                (SELECT MIN(e.id) FROM evaluations e WHERE e.candidate_id = c.id)) AS evaluation_id
FROM candidates c;
)sql",
    // 6: how many HTTP attempts an LLM call took (retries included; NULL
    // where none was made: answered from the recorded calls, or refused).
    R"sql(
ALTER TABLE llm_calls ADD COLUMN attempts INTEGER;
)sql",
    // 7: how a failed LLM call failed (timeout, transport, http, parse,
    // breaker, budget, cache, replay; NULL for one that did not fail), so
    // that a replay fails it the same way.
    R"sql(
ALTER TABLE llm_calls ADD COLUMN failure TEXT;
)sql",
};

// The view of migration 5 for a store of an older schema opened read-only
// (not migrated): the same rule, for this connection only.
constexpr const char* kTempResultsView = R"sql(
CREATE TEMP VIEW candidate_results AS
SELECT c.id AS candidate_id, c.run_id AS run_id,
       COALESCE(c.reuses_evaluation,
                (SELECT MIN(e.id) FROM evaluations e WHERE e.candidate_id = c.id)) AS evaluation_id
FROM candidates c;
)sql";
constexpr int kResultsViewVersion = 5;

constexpr int kLatest = sizeof(kMigrations) / sizeof(kMigrations[0]);

SqlValue column_value(sqlite3_stmt* s, int i) {
  switch (sqlite3_column_type(s, i)) {
    case SQLITE_INTEGER: return static_cast<int64_t>(sqlite3_column_int64(s, i));
    case SQLITE_FLOAT: return sqlite3_column_double(s, i);
    case SQLITE_NULL: return nullptr;
    default: {
      const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
      return std::string(t ? t : "", static_cast<size_t>(sqlite3_column_bytes(s, i)));
    }
  }
}

int bind_value(sqlite3_stmt* s, int i, const SqlValue& v) {
  return std::visit(
      [&](const auto& x) -> int {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::nullptr_t>) return sqlite3_bind_null(s, i);
        else if constexpr (std::is_same_v<T, int64_t>) return sqlite3_bind_int64(s, i, x);
        else if constexpr (std::is_same_v<T, double>) return sqlite3_bind_double(s, i, x);
        else
          return sqlite3_bind_text(s, i, x.data(), static_cast<int>(x.size()), SQLITE_TRANSIENT);
      },
      v);
}

class Stmt {
 public:
  Stmt(sqlite3* db, std::string_view sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &s_, nullptr) != SQLITE_OK)
      throw UserError(fmt::format("SQL error: {}", sqlite3_errmsg(db)));
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt& bind(int i, const SqlValue& v) {
    if (bind_value(s_, i, v) != SQLITE_OK)
      throw UserError(fmt::format("SQL bind error: {}", sqlite3_errmsg(db_)));
    return *this;
  }
  // Steps once; true while a row is available.
  bool step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw UserError(fmt::format("SQL error: {}", sqlite3_errmsg(db_)));
  }
  SqlValue column(int i) const { return column_value(s_, i); }
  sqlite3_stmt* get() { return s_; }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
};

SqlValue opt(double v, bool present) { return present ? SqlValue(v) : SqlValue(nullptr); }

class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db) { run("BEGIN IMMEDIATE"); }
  ~Transaction() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void commit() {
    run("COMMIT");
    done_ = true;
  }

 private:
  void run(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "?";
      sqlite3_free(err);
      throw UserError(fmt::format("store: {} failed: {}", sql, msg));
    }
  }
  sqlite3* db_;
  bool done_ = false;
};

}  // namespace

int Store::latest_schema_version() { return kLatest; }

Store::Store(const std::filesystem::path& path, bool read_only) : path_(path) {
  if (read_only && !std::filesystem::exists(path))
    throw UserError(fmt::format("no store at '{}' (run kevo eval or kevo run first, or pass --db)",
                                path.string()));
  int flags = read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_FULLMUTEX, nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw UserError(fmt::format("cannot open store '{}': {}", path.string(), msg));
  }
  sqlite3_busy_timeout(db_, 30000);
  try {
    int version = schema_version();
    if (version > kLatest)
      throw UserError(fmt::format("store '{}' has schema version {}, newer than this kevo's {}: "
                                  "use a newer kevo",
                                  path.string(), version, kLatest));
    if (!read_only) {
      exec("PRAGMA journal_mode=WAL");
      exec("PRAGMA synchronous=NORMAL");
      exec("PRAGMA foreign_keys=ON");
      migrate();
    } else if (version < kResultsViewVersion && version > 0) {
      exec(kTempResultsView);
    }
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

Store::~Store() {
  if (db_) sqlite3_close(db_);
}

void Store::exec(std::string_view sql) {
  char* err = nullptr;
  std::string s(sql);
  if (sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "?";
    sqlite3_free(err);
    throw UserError(fmt::format("store '{}': {}", path_.string(), msg));
  }
}

int Store::schema_version() {
  Stmt s(db_, "PRAGMA user_version");
  s.step();
  return static_cast<int>(std::get<int64_t>(s.column(0)));
}

void Store::migrate() {
  int version = schema_version();
  if (version == kLatest) return;
  Transaction tx(db_);
  version = schema_version();  // another process may have migrated meanwhile
  for (int v = version; v < kLatest; ++v) {
    exec(kMigrations[v]);
    exec(fmt::format("PRAGMA user_version = {}", v + 1));
  }
  tx.commit();
}

int64_t Store::begin_run(std::string_view kind, const Task& task, const nlohmann::json& config) {
  Stmt s(db_,
         "INSERT INTO runs(kind, task_name, operator, target, task_hash, task_json, config_json, "
         "started_at, hostname, kevo_version) VALUES (?,?,?,?,?,?,?,?,?,?)");
  s.bind(1, std::string(kind))
      .bind(2, task.name)
      .bind(3, std::string(task.op->name()))
      .bind(4, task.target)
      .bind(5, task.hash)
      .bind(6, task.resolved.dump())
      .bind(7, config.dump())
      .bind(8, now_iso8601())
      .bind(9, hostname())
      .bind(10, std::string(KEVO_VERSION));
  s.step();
  return sqlite3_last_insert_rowid(db_);
}

void Store::finish_run(int64_t run, std::string_view status) {
  Stmt s(db_, "UPDATE runs SET status = ?, finished_at = ? WHERE id = ?");
  s.bind(1, std::string(status)).bind(2, now_iso8601()).bind(3, run);
  s.step();
}

std::string Store::put_source(std::string_view text, std::string_view origin,
                              std::string_view language) {
  std::string hash = sha256_hex(text);
  Stmt s(db_,
         "INSERT OR IGNORE INTO sources(hash, text, origin, language, created_at) "
         "VALUES (?,?,?,?,?)");
  s.bind(1, hash)
      .bind(2, std::string(text))
      .bind(3, std::string(origin))
      .bind(4, std::string(language))
      .bind(5, now_iso8601());
  s.step();
  return hash;
}

int64_t Store::add_candidate(int64_t run, const std::string& source_hash, const KnobValues& knobs,
                             std::string_view family, std::string_view synthesizer,
                             const std::vector<int64_t>& parents,
                             std::optional<int64_t> reuses_evaluation) {
  Transaction tx(db_);
  Stmt s(db_,
         "INSERT INTO candidates(run_id, source_hash, knobs_json, family, synthesizer, created_at, "
         "reuses_evaluation) VALUES (?,?,?,?,?,?,?)");
  s.bind(1, run)
      .bind(2, source_hash)
      .bind(3, knobs_to_json(knobs))
      .bind(4, std::string(family))
      .bind(5, std::string(synthesizer))
      .bind(6, now_iso8601())
      .bind(7, reuses_evaluation ? SqlValue(*reuses_evaluation) : SqlValue(nullptr));
  s.step();
  int64_t id = sqlite3_last_insert_rowid(db_);
  for (int64_t p : parents) {
    Stmt l(db_, "INSERT OR IGNORE INTO lineage(child_id, parent_id) VALUES (?,?)");
    l.bind(1, id).bind(2, p);
    l.step();
  }
  tx.commit();
  return id;
}

int64_t Store::add_evaluation(int64_t candidate, const EvalResult& r) {
  Transaction tx(db_);
  Stmt s(db_,
         "INSERT INTO evaluations(candidate_id, status, detail, compile_s, compile_cached, run_s, "
         "median_s, p20_s, p80_s, mean_s, min_s, max_s, n_samples, calls_per_sample, max_abs_err, "
         "max_ulp, mismatches, first_mismatch, checks_json, bound, roof_fraction, floor_s, "
         "achieved_gbps, achieved_gflops, diagnosis, roof_id, compile_log, stdout, stderr, "
         "created_at, bottleneck) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  const bool t = r.timing.has_value();
  const bool d = r.diagnosis.has_value();
  double max_abs = 0, max_ulp = 0;
  int64_t mismatches = 0;
  std::string first;
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& c : r.checks) {
    max_abs = std::max(max_abs, c.max_abs_err);
    max_ulp = std::max(max_ulp, c.max_ulp);
    mismatches += c.mismatches;
    if (first.empty() && c.first)
      first =
          fmt::format("output {}{} (flat index {}, compared by {}): got {:.9g}, want {:.9g} on {}",
                      c.first->tensor, c.first->coords, c.first->index, c.first->compare,
                      c.first->got, c.first->want, c.label);
    checks.push_back(check_to_json(c));
  }
  const bool any_check = !r.checks.empty();
  auto finite = [](double v) { return std::isfinite(v) ? SqlValue(v) : SqlValue(nullptr); };
  s.bind(1, candidate)
      .bind(2, std::string(status_name(r.status)))
      .bind(3, redact_secrets(r.detail))
      .bind(4, r.compile_s)
      .bind(5, int64_t{r.compile_cached})
      .bind(6, r.run_s)
      .bind(7, opt(t ? r.timing->median_s : 0, t))
      .bind(8, opt(t ? r.timing->p20_s : 0, t))
      .bind(9, opt(t ? r.timing->p80_s : 0, t))
      .bind(10, opt(t ? r.timing->mean_s : 0, t))
      .bind(11, opt(t ? r.timing->min_s : 0, t))
      .bind(12, opt(t ? r.timing->max_s : 0, t))
      .bind(13, t ? SqlValue(static_cast<int64_t>(r.timing->samples_s.size())) : SqlValue(nullptr))
      .bind(14, t ? SqlValue(r.timing->calls_per_sample) : SqlValue(nullptr))
      .bind(15, any_check ? finite(max_abs) : SqlValue(nullptr))
      .bind(16, any_check ? finite(max_ulp) : SqlValue(nullptr))
      .bind(17, any_check ? SqlValue(mismatches) : SqlValue(nullptr))
      .bind(18, first.empty() ? SqlValue(nullptr) : SqlValue(first))
      .bind(19, checks.dump())
      .bind(20, d ? SqlValue(r.diagnosis->bound) : SqlValue(nullptr))
      .bind(21, opt(d ? r.diagnosis->roof_fraction : 0, d))
      .bind(22, opt(d ? r.diagnosis->floor_s : 0, d))
      .bind(23, opt(d ? r.diagnosis->achieved_gbps : 0, d))
      .bind(24, opt(d ? r.diagnosis->achieved_gflops : 0, d))
      .bind(25, d ? SqlValue(r.diagnosis->why) : SqlValue(nullptr))
      .bind(26, r.roof_id ? SqlValue(r.roof_id) : SqlValue(nullptr))
      .bind(27, redact_secrets(r.compile_log))
      .bind(28, redact_secrets(r.stdout_text))
      .bind(29, redact_secrets(r.stderr_text))
      .bind(30, now_iso8601())
      .bind(31, d && !r.diagnosis->bottleneck.empty() ? SqlValue(r.diagnosis->bottleneck)
                                                      : SqlValue(nullptr));
  s.step();
  int64_t id = sqlite3_last_insert_rowid(db_);
  if (!r.profile.empty()) {
    Stmt ins(db_,
             "INSERT INTO profiles(evaluation_id, metric, value, unit, source_line) "
             "VALUES (?,?,?,?,?)");
    for (const auto& m : r.profile) {
      sqlite3_reset(ins.get());
      ins.bind(1, id)
          .bind(2, m.metric)
          .bind(3, finite(m.value))
          .bind(4, m.unit)
          .bind(5, m.source_line ? SqlValue(m.source_line) : SqlValue(nullptr));
      ins.step();
    }
  }
  if (t) {
    Stmt ins(db_, "INSERT INTO samples(evaluation_id, seq, seconds) VALUES (?,?,?)");
    for (size_t i = 0; i < r.timing->samples_s.size(); ++i) {
      sqlite3_reset(ins.get());
      ins.bind(1, id).bind(2, static_cast<int64_t>(i)).bind(3, r.timing->samples_s[i]);
      ins.step();
    }
  }
  tx.commit();
  return id;
}

int64_t Store::add_roof(const Roof& roof) {
  Transaction tx(db_);
  Stmt s(db_,
         "INSERT INTO roofs(target, host_key, hostname, cpu_model, ncpu, measured_at, json) "
         "VALUES (?,?,?,?,?,?,?)");
  s.bind(1, roof.target)
      .bind(2, roof.host_key)
      .bind(3, roof.hostname)
      .bind(4, roof.cpu_model)
      .bind(5, int64_t{roof.ncpu})
      .bind(6, roof.measured_at)
      .bind(7, roof.to_json().dump());
  s.step();
  int64_t id = sqlite3_last_insert_rowid(db_);
  for (const auto& p : roof.bandwidth) {
    Stmt m(db_, "INSERT INTO roof_metrics(roof_id, kind, threads, bytes, value, unit) "
                "VALUES (?,?,?,?,?,'GB/s')");
    m.bind(1, id).bind(2, p.kind).bind(3, int64_t{p.threads}).bind(4, p.bytes).bind(5, p.gbps);
    m.step();
  }
  for (const auto& p : roof.peak) {
    Stmt m(db_, "INSERT INTO roof_metrics(roof_id, kind, threads, bytes, value, unit) "
                "VALUES (?,?,?,NULL,?,'GFLOP/s')");
    m.bind(1, id).bind(2, p.kind).bind(3, int64_t{p.threads}).bind(4, p.gflops);
    m.step();
  }
  tx.commit();
  return id;
}

std::vector<Roof> Store::roofs(std::string_view target, std::string_view host_key) {
  std::vector<Roof> out;
  Stmt s(db_, "SELECT id, json FROM roofs WHERE target = ? AND host_key = ? ORDER BY id");
  s.bind(1, std::string(target)).bind(2, std::string(host_key));
  while (s.step()) {
    Roof r = Roof::from_json(nlohmann::json::parse(std::get<std::string>(s.column(1))));
    r.id = std::get<int64_t>(s.column(0));
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::string> Store::roof_host_keys(std::string_view target) {
  std::vector<std::string> out;
  Stmt s(db_, "SELECT host_key FROM roofs WHERE target = ? GROUP BY host_key ORDER BY MAX(id) DESC");
  s.bind(1, std::string(target));
  while (s.step()) out.push_back(std::get<std::string>(s.column(0)));
  return out;
}

void Store::set_run_summary(int64_t run, const nlohmann::json& summary) {
  Stmt s(db_, "UPDATE runs SET summary_json = ? WHERE id = ?");
  s.bind(1, summary.dump()).bind(2, run);
  s.step();
}

std::map<std::string, double> Store::machine_state(int64_t evaluation) {
  Stmt s(db_,
         "SELECT metric, value FROM profiles WHERE evaluation_id = ? AND metric LIKE 'machine.%' "
         "AND value IS NOT NULL ORDER BY id");
  s.bind(1, evaluation);
  std::map<std::string, double> state;
  while (s.step()) {
    const SqlValue v = s.column(1);
    state[std::get<std::string>(s.column(0))] = std::holds_alternative<double>(v)
                                                    ? std::get<double>(v)
                                                    : static_cast<double>(std::get<int64_t>(v));
  }
  return state;
}

std::optional<int64_t> Store::result_evaluation(int64_t candidate) {
  Stmt s(db_, "SELECT evaluation_id FROM candidate_results WHERE candidate_id = ?");
  s.bind(1, candidate);
  if (!s.step()) return std::nullopt;
  const SqlValue v = s.column(0);
  if (const auto* id = std::get_if<int64_t>(&v)) return *id;
  return std::nullopt;
}

std::optional<int64_t> Store::confirming_evaluation(int64_t candidate) {
  // A candidate that reuses an earlier run's measurement has none of its own
  // from the search: then every evaluation it has is a round.
  Stmt reuses(db_, "SELECT reuses_evaluation FROM candidates WHERE id = ?");
  reuses.bind(1, candidate);
  bool search_own = !reuses.step() || std::holds_alternative<std::nullptr_t>(reuses.column(0));
  Stmt s(db_, "SELECT id, status, median_s FROM evaluations WHERE candidate_id = ? ORDER BY id");
  s.bind(1, candidate);
  std::vector<std::pair<double, int64_t>> timed;
  std::optional<int64_t> suspect;  // a time below the floor: shown only when no round is ok
  while (s.step()) {
    if (search_own) {  // the search's own measurement
      search_own = false;
      continue;
    }
    const int64_t id = std::get<int64_t>(s.column(0));
    const SqlValue median = s.column(2);
    const SqlValue status_v = s.column(1);
    const auto* status = std::get_if<std::string>(&status_v);
    if (status && *status == "suspect") {
      if (!suspect) suspect = id;
      continue;
    }
    if (!status || *status != "ok" || !std::holds_alternative<double>(median)) return id;
    timed.emplace_back(std::get<double>(median), id);
  }
  if (timed.empty()) return suspect;
  std::stable_sort(timed.begin(), timed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  return timed[(timed.size() - 1) / 2].second;
}

std::optional<EvalResult> Store::evaluation(int64_t id) {
  Stmt s(db_,
         "SELECT status, detail, compile_s, compile_cached, run_s, median_s, p20_s, p80_s, mean_s, "
         "min_s, max_s, calls_per_sample, bound, roof_fraction, floor_s, achieved_gbps, "
         "achieved_gflops, diagnosis, roof_id, checks_json, bottleneck, compile_log, stdout, stderr "
         "FROM evaluations WHERE id = ?");
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  auto num = [&](int i) {
    SqlValue v = s.column(i);
    if (auto* d = std::get_if<double>(&v)) return *d;
    if (auto* n = std::get_if<int64_t>(&v)) return static_cast<double>(*n);
    return 0.0;
  };
  auto present = [&](int i) { return !std::holds_alternative<std::nullptr_t>(s.column(i)); };
  auto text = [&](int i) {
    SqlValue v = s.column(i);
    auto* t = std::get_if<std::string>(&v);
    return t ? *t : std::string();
  };
  EvalResult r;
  r.status = parse_status(text(0)).value_or(Status::crash);
  r.detail = text(1);
  r.compile_s = num(2);
  r.compile_cached = num(3) != 0;
  r.run_s = num(4);
  if (present(5)) {
    TimingStats t;
    t.median_s = num(5), t.p20_s = num(6), t.p80_s = num(7), t.mean_s = num(8);
    t.min_s = num(9), t.max_s = num(10);
    t.calls_per_sample = static_cast<int64_t>(num(11));
    Stmt q(db_, "SELECT seconds FROM samples WHERE evaluation_id = ? ORDER BY seq");
    q.bind(1, id);
    while (q.step()) t.samples_s.push_back(std::get<double>(q.column(0)));
    r.timing = std::move(t);
  }
  if (present(12)) {
    Diagnosis d;
    d.bound = text(12);
    d.roof_fraction = num(13), d.floor_s = num(14), d.achieved_gbps = num(15);
    d.achieved_gflops = num(16);
    d.why = text(17);
    d.bottleneck = text(20);
    r.diagnosis = std::move(d);
  }
  r.roof_id = static_cast<int64_t>(num(18));
  r.compile_log = text(21);
  r.stdout_text = text(22);
  r.stderr_text = text(23);
  // Its profile too, so that a copy (a replay's) carries what the original
  // was told (a prompt shows the parent's profile).
  Stmt p(db_, "SELECT metric, value, unit, source_line FROM profiles WHERE evaluation_id = ? "
              "ORDER BY id");
  p.bind(1, id);
  while (p.step()) {
    SqlValue v = p.column(1);
    double value = std::numeric_limits<double>::quiet_NaN();  // stored as NULL: not finite
    if (auto* d = std::get_if<double>(&v)) value = *d;
    if (auto* n = std::get_if<int64_t>(&v)) value = static_cast<double>(*n);
    SqlValue line = p.column(3);
    const int64_t* l = std::get_if<int64_t>(&line);
    r.profile.push_back({std::get<std::string>(p.column(0)),
                         value,
                         std::holds_alternative<std::string>(p.column(2))
                             ? std::get<std::string>(p.column(2))
                             : std::string(),
                         l ? *l : 0});
  }
  return r;
}

// ---- typed reads ------------------------------------------------------------------------

namespace {

std::string text_of(const SqlValue& v) {
  const auto* t = std::get_if<std::string>(&v);
  return t ? *t : std::string();
}
std::optional<int64_t> int_of(const SqlValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return *i;
  return std::nullopt;
}
std::optional<double> number_of(const SqlValue& v) {
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  return std::nullopt;
}

constexpr const char* kRunColumns =
    "id, kind, task_name, operator, target, task_hash, task_json, config_json, status, "
    "started_at, finished_at, hostname, kevo_version, summary_json";

RunRecord run_of(const Stmt& s) {
  RunRecord r;
  r.id = std::get<int64_t>(s.column(0));
  r.kind = text_of(s.column(1));
  r.task_name = text_of(s.column(2));
  r.op = text_of(s.column(3));
  r.target = text_of(s.column(4));
  r.task_hash = text_of(s.column(5));
  r.task_json = text_of(s.column(6));
  r.config_json = text_of(s.column(7));
  r.status = text_of(s.column(8));
  r.started_at = text_of(s.column(9));
  r.finished_at = text_of(s.column(10));
  r.hostname = text_of(s.column(11));
  r.kevo_version = text_of(s.column(12));
  r.summary_json = text_of(s.column(13));
  return r;
}

// Candidates with their result evaluation (the candidate_results view).
constexpr const char* kCandidateColumns =
    "c.id, c.run_id, c.source_hash, c.knobs_json, c.family, c.synthesizer, c.created_at, "
    "c.reuses_evaluation, cr.evaluation_id";
constexpr const char* kCandidateFrom =
    "FROM candidates c JOIN candidate_results cr ON cr.candidate_id = c.id";

CandidateRecord candidate_of(const Stmt& s) {
  CandidateRecord c;
  c.id = std::get<int64_t>(s.column(0));
  c.run = std::get<int64_t>(s.column(1));
  c.source_hash = text_of(s.column(2));
  c.knobs_json = text_of(s.column(3));
  c.family = text_of(s.column(4));
  c.synthesizer = text_of(s.column(5));
  c.created_at = text_of(s.column(6));
  c.reuses_evaluation = int_of(s.column(7));
  c.result_evaluation = int_of(s.column(8));
  return c;
}

SourceRecord source_of(const Stmt& s) {
  return {text_of(s.column(0)), text_of(s.column(1)), text_of(s.column(2)), text_of(s.column(3))};
}

}  // namespace

nlohmann::json RunRecord::summary() const {
  if (summary_json.empty()) return nullptr;
  nlohmann::json j = nlohmann::json::parse(summary_json, nullptr, false);
  return j.is_discarded() ? nlohmann::json(nullptr) : j;
}

nlohmann::json RunRecord::config() const {
  nlohmann::json j = nlohmann::json::parse(config_json, nullptr, false);
  return j.is_discarded() ? nlohmann::json(nullptr) : j;
}

void Store::reopen_run(int64_t run) {
  Stmt s(db_, "UPDATE runs SET status = 'running', finished_at = NULL WHERE id = ?");
  s.bind(1, run);
  s.step();
}

std::optional<RunRecord> Store::run(int64_t id) {
  Stmt s(db_, fmt::format("SELECT {} FROM runs WHERE id = ?", kRunColumns));
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return run_of(s);
}

std::vector<RunRecord> Store::search_runs_of_task(const std::string& task_hash, int64_t except,
                                                  int limit) {
  Stmt s(db_, fmt::format("SELECT {} FROM runs WHERE task_hash = ? AND kind = 'search' "
                          "AND id != ? ORDER BY id DESC LIMIT ?",
                          kRunColumns));
  s.bind(1, task_hash).bind(2, except).bind(3, int64_t{limit});
  std::vector<RunRecord> out;
  while (s.step()) out.push_back(run_of(s));
  return out;
}

std::vector<int64_t> Store::exhaustive_grid_runs() {
  Stmt s(db_,
         "SELECT id FROM runs WHERE kind = 'search' AND status = 'done' "
         "AND json_extract(config_json, '$.search.strategy') = 'grid' "
         "AND json_extract(summary_json, '$.stop_reason') LIKE '%exhausted%' ORDER BY id");
  std::vector<int64_t> out;
  while (s.step()) out.push_back(std::get<int64_t>(s.column(0)));
  return out;
}

std::optional<CandidateRecord> Store::candidate(int64_t id) {
  Stmt s(db_, fmt::format("SELECT {} {} WHERE c.id = ?", kCandidateColumns, kCandidateFrom));
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return candidate_of(s);
}

std::vector<CandidateRecord> Store::candidates(int64_t run) {
  Stmt s(db_, fmt::format("SELECT {} {} WHERE c.run_id = ? ORDER BY c.id", kCandidateColumns,
                          kCandidateFrom));
  s.bind(1, run);
  std::vector<CandidateRecord> out;
  while (s.step()) out.push_back(candidate_of(s));
  return out;
}

std::vector<CandidateResult> Store::results(int64_t run) {
  Stmt s(db_, fmt::format("SELECT {}, e.status, e.detail, e.median_s, e.p20_s, e.p80_s, "
                          "e.roof_fraction, e.achieved_gflops, e.achieved_gbps, e.bound, "
                          "e.bottleneck, e.diagnosis, e.roof_id, e.created_at {} "
                          "LEFT JOIN evaluations e ON e.id = cr.evaluation_id "
                          "WHERE c.run_id = ? ORDER BY c.id",
                          kCandidateColumns, kCandidateFrom));
  s.bind(1, run);
  std::vector<CandidateResult> out;
  while (s.step()) {
    CandidateResult r;
    r.candidate = candidate_of(s);
    r.status = text_of(s.column(9));
    r.detail = text_of(s.column(10));
    r.median_s = number_of(s.column(11));
    r.p20_s = number_of(s.column(12));
    r.p80_s = number_of(s.column(13));
    r.roof_fraction = number_of(s.column(14));
    r.achieved_gflops = number_of(s.column(15));
    r.achieved_gbps = number_of(s.column(16));
    r.bound = text_of(s.column(17));
    r.bottleneck = text_of(s.column(18));
    r.diagnosis = text_of(s.column(19));
    r.roof_id = int_of(s.column(20));
    r.evaluated_at = text_of(s.column(21));
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::pair<int64_t, int64_t>> Store::lineage(int64_t run) {
  Stmt s(db_,
         "SELECT l.child_id, l.parent_id FROM lineage l JOIN candidates c ON c.id = l.child_id "
         "WHERE c.run_id = ? ORDER BY l.child_id, l.parent_id");
  s.bind(1, run);
  std::vector<std::pair<int64_t, int64_t>> out;
  while (s.step()) out.emplace_back(std::get<int64_t>(s.column(0)), std::get<int64_t>(s.column(1)));
  return out;
}

std::vector<int64_t> Store::evaluations_of(int64_t candidate) {
  Stmt s(db_, "SELECT id FROM evaluations WHERE candidate_id = ? ORDER BY id");
  s.bind(1, candidate);
  std::vector<int64_t> out;
  while (s.step()) out.push_back(std::get<int64_t>(s.column(0)));
  return out;
}

std::map<int64_t, std::vector<int64_t>> Store::evaluations_of_run(int64_t run) {
  Stmt s(db_,
         "SELECT e.id, e.candidate_id FROM evaluations e JOIN candidates c ON c.id = e.candidate_id "
         "WHERE c.run_id = ? ORDER BY e.id");
  s.bind(1, run);
  std::map<int64_t, std::vector<int64_t>> out;
  while (s.step()) out[std::get<int64_t>(s.column(1))].push_back(std::get<int64_t>(s.column(0)));
  return out;
}

std::string Store::evaluated_at(int64_t evaluation) {
  Stmt s(db_, "SELECT created_at FROM evaluations WHERE id = ?");
  s.bind(1, evaluation);
  return s.step() ? text_of(s.column(0)) : std::string();
}

Store::RunCost Store::run_cost(int64_t run) {
  Stmt s(db_,
         "SELECT COUNT(*), COALESCE(SUM(e.compile_s), 0), COALESCE(SUM(e.run_s), 0) "
         "FROM evaluations e JOIN candidates c ON c.id = e.candidate_id WHERE c.run_id = ?");
  s.bind(1, run);
  RunCost c;
  if (s.step()) {
    c.evaluations = std::get<int64_t>(s.column(0));
    c.compile_s = number_of(s.column(1)).value_or(0);
    c.run_s = number_of(s.column(2)).value_or(0);
  }
  return c;
}

std::optional<SourceRecord> Store::source(const std::string& hash) {
  Stmt s(db_, "SELECT hash, text, origin, language FROM sources WHERE hash = ?");
  s.bind(1, hash);
  if (!s.step()) return std::nullopt;
  return source_of(s);
}

std::vector<SourceRecord> Store::sources_of_run(int64_t run) {
  Stmt s(db_,
         "SELECT s.hash, s.text, s.origin, s.language FROM sources s JOIN "
         "(SELECT source_hash, MIN(id) AS first FROM candidates WHERE run_id = ? "
         "GROUP BY source_hash) u ON u.source_hash = s.hash ORDER BY u.first");
  s.bind(1, run);
  std::vector<SourceRecord> out;
  while (s.step()) out.push_back(source_of(s));
  return out;
}

std::map<int64_t, std::vector<ShapeTime>> Store::shape_times_of_run(int64_t run) {
  Stmt s(db_,
         "SELECT cr.candidate_id, p.metric, p.value FROM candidate_results cr "
         "JOIN profiles p ON p.evaluation_id = cr.evaluation_id "
         "JOIN evaluations e ON e.id = cr.evaluation_id "
         "WHERE cr.run_id = ? AND e.status = 'ok' AND p.metric LIKE 'shape.%' "
         "ORDER BY cr.candidate_id");
  s.bind(1, run);
  std::map<int64_t, std::vector<ProfileMetric>> metrics;
  while (s.step()) {
    const SqlValue v = s.column(2);
    const double* value = std::get_if<double>(&v);
    if (!value) continue;
    metrics[int_of(s.column(0)).value_or(0)].push_back({text_of(s.column(1)), *value, "", 0});
  }
  std::map<int64_t, std::vector<ShapeTime>> out;
  for (const auto& [candidate, m] : metrics)
    if (auto t = shape_times(m); !t.empty()) out[candidate] = std::move(t);
  return out;
}

std::vector<ProfileRow> Store::profile(int64_t evaluation) {
  Stmt s(db_,
         "SELECT evaluation_id, metric, value, unit, source_line FROM profiles "
         "WHERE evaluation_id = ? ORDER BY id");
  s.bind(1, evaluation);
  std::vector<ProfileRow> out;
  while (s.step())
    out.push_back({std::get<int64_t>(s.column(0)), text_of(s.column(1)), number_of(s.column(2)),
                   text_of(s.column(3)), int_of(s.column(4)).value_or(0)});
  return out;
}

std::optional<int64_t> Store::latest_candidate_of_point(const std::string& source_hash,
                                                        const std::string& knobs_json,
                                                        const std::string& task_hash,
                                                        const std::string& hostname,
                                                        const std::string& kevo_version,
                                                        int64_t except_run) {
  Stmt s(db_,
         "SELECT c.id FROM candidates c JOIN runs r ON r.id = c.run_id "
         "JOIN candidate_results cr ON cr.candidate_id = c.id "
         "WHERE c.source_hash = ? AND c.knobs_json = ? AND r.task_hash = ? AND r.hostname = ? "
         "AND r.kevo_version = ? AND c.run_id <> ? AND cr.evaluation_id IS NOT NULL "
         "ORDER BY c.id DESC LIMIT 1");
  s.bind(1, source_hash)
      .bind(2, knobs_json)
      .bind(3, task_hash)
      .bind(4, hostname)
      .bind(5, kevo_version)
      .bind(6, except_run);
  if (!s.step()) return std::nullopt;
  return std::get<int64_t>(s.column(0));
}

std::vector<Roof> Store::roofs_like(int64_t id) {
  std::string target, host_key;
  {
    Stmt s(db_, "SELECT target, host_key FROM roofs WHERE id = ?");
    s.bind(1, id);
    if (!s.step()) return {};
    target = text_of(s.column(0));
    host_key = text_of(s.column(1));
  }
  return roofs(target, host_key);
}

// ---- LLM calls --------------------------------------------------------------------------

int64_t Store::add_llm_call(const LlmCallRecord& c) {
  Stmt s(db_,
         "INSERT INTO llm_calls (run_id, model, endpoint, prompt_hash, prompt, response, "
         "prompt_tokens, completion_tokens, cost_usd, latency_s, status, attempts, failure, "
         "created_at) "
         "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))");
  s.bind(1, c.run ? SqlValue(*c.run) : SqlValue(nullptr))
      .bind(2, c.model)
      .bind(3, c.endpoint)
      .bind(4, c.prompt_hash)
      .bind(5, redact_secrets(c.prompt))
      .bind(6, redact_secrets(c.response))
      .bind(7, c.prompt_tokens)
      .bind(8, c.completion_tokens)
      .bind(9, c.cost_usd)
      .bind(10, c.latency_s)
      .bind(11, c.status)
      .bind(12, c.attempts > 0 ? SqlValue(c.attempts) : SqlValue(nullptr))
      .bind(13, c.failure.empty() ? SqlValue(nullptr) : SqlValue(c.failure));
  s.step();
  return sqlite3_last_insert_rowid(db_);
}

void Store::link_llm_call(int64_t call, int64_t candidate) {
  Stmt s(db_, "UPDATE llm_calls SET candidate_id = ? WHERE id = ?");
  s.bind(1, candidate).bind(2, call);
  s.step();
}

namespace {

constexpr const char* kLlmCallColumns =
    "run_id, model, endpoint, prompt_hash, prompt, response, prompt_tokens, completion_tokens, "
    "cost_usd, latency_s, status, attempts, failure";

LlmCallRecord llm_call_of(Stmt& s) {
  LlmCallRecord c;
  c.run = int_of(s.column(0));
  c.model = text_of(s.column(1));
  c.endpoint = text_of(s.column(2));
  c.prompt_hash = text_of(s.column(3));
  c.prompt = text_of(s.column(4));
  c.response = text_of(s.column(5));
  c.prompt_tokens = int_of(s.column(6)).value_or(0);
  c.completion_tokens = int_of(s.column(7)).value_or(0);
  c.cost_usd = number_of(s.column(8)).value_or(0);
  c.latency_s = number_of(s.column(9)).value_or(0);
  c.status = text_of(s.column(10));
  c.attempts = int_of(s.column(11)).value_or(0);
  c.failure = text_of(s.column(12));
  return c;
}

}  // namespace

std::optional<LlmCallRecord> Store::recorded_llm_call(const std::string& prompt_hash,
                                                      int64_t occurrence) {
  Stmt s(db_, fmt::format("SELECT {} FROM llm_calls WHERE prompt_hash = ? AND status = 'ok' "
                          "ORDER BY id LIMIT 1 OFFSET ?",
                          kLlmCallColumns));
  s.bind(1, prompt_hash).bind(2, occurrence);
  if (!s.step()) return std::nullopt;
  return llm_call_of(s);
}

std::vector<LlmCallRecord> Store::llm_calls_of_run(int64_t run) {
  Stmt s(db_, fmt::format("SELECT {} FROM llm_calls WHERE run_id = ? ORDER BY id", kLlmCallColumns));
  s.bind(1, run);
  std::vector<LlmCallRecord> out;
  while (s.step()) out.push_back(llm_call_of(s));
  return out;
}

// ---- batches ----------------------------------------------------------------------------

int64_t Store::add_batch(const std::string& name, const std::string& suite_path,
                         const std::string& suite_json, const std::vector<BatchTaskRecord>& tasks) {
  Transaction tx(db_);
  Stmt b(db_, "INSERT INTO batches(name, suite_path, suite_json, started_at) VALUES (?,?,?,?)");
  b.bind(1, name).bind(2, suite_path).bind(3, suite_json).bind(4, now_iso8601());
  b.step();
  const int64_t id = sqlite3_last_insert_rowid(db_);
  for (size_t i = 0; i < tasks.size(); ++i) {
    Stmt t(db_,
           "INSERT INTO batch_tasks(batch_id, seq, task_name, origin, config_json) "
           "VALUES (?,?,?,?,?)");
    t.bind(1, id)
        .bind(2, static_cast<int64_t>(i + 1))
        .bind(3, tasks[i].name)
        .bind(4, tasks[i].origin)
        .bind(5, tasks[i].config.dump());
    t.step();
  }
  tx.commit();
  return id;
}

std::optional<BatchRecord> Store::batch(int64_t id) {
  if (!has_batches()) return std::nullopt;
  Stmt b(db_, "SELECT name, suite_path, status, started_at, finished_at FROM batches WHERE id = ?");
  b.bind(1, id);
  if (!b.step()) return std::nullopt;
  BatchRecord batch;
  batch.id = id;
  batch.name = text_of(b.column(0));
  batch.suite_path = text_of(b.column(1));
  batch.status = text_of(b.column(2));
  batch.started_at = text_of(b.column(3));
  batch.finished_at = text_of(b.column(4));
  Stmt t(db_,
         "SELECT seq, task_name, origin, config_json, run_id, status, detail FROM batch_tasks "
         "WHERE batch_id = ? ORDER BY seq");
  t.bind(1, id);
  while (t.step()) {
    BatchTaskRecord bt;
    bt.seq = std::get<int64_t>(t.column(0));
    bt.name = text_of(t.column(1));
    bt.origin = text_of(t.column(2));
    bt.config = nlohmann::json::parse(text_of(t.column(3)));
    bt.run = int_of(t.column(4));
    bt.status = text_of(t.column(5));
    bt.detail = text_of(t.column(6));
    batch.tasks.push_back(std::move(bt));
  }
  return batch;
}

bool Store::has_batches() {
  Stmt s(db_, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'batches'");
  s.step();
  return std::get<int64_t>(s.column(0)) != 0;
}

std::optional<int64_t> Store::latest_batch_named(const std::string& name) {
  if (!has_batches()) return std::nullopt;
  Stmt s(db_, "SELECT MAX(id) FROM batches WHERE name = ?");
  s.bind(1, name);
  if (!s.step()) return std::nullopt;
  return int_of(s.column(0));
}

std::optional<int64_t> Store::batch_task_run(int64_t batch, int64_t seq) {
  Stmt s(db_,
         "SELECT COALESCE(t.run_id, (SELECT MAX(r.id) FROM runs r "
         "  WHERE json_extract(r.config_json, '$.batch.id') = t.batch_id "
         "    AND json_extract(r.config_json, '$.batch.seq') = t.seq)) "
         "FROM batch_tasks t WHERE t.batch_id = ? AND t.seq = ?");
  s.bind(1, batch).bind(2, seq);
  if (!s.step()) return std::nullopt;
  return int_of(s.column(0));
}

void Store::set_batch_task(int64_t batch, int64_t seq, std::optional<int64_t> run,
                           std::string_view status, std::string_view detail) {
  Stmt s(db_,
         "UPDATE batch_tasks SET run_id = COALESCE(?, run_id), status = ?, detail = ? "
         "WHERE batch_id = ? AND seq = ?");
  s.bind(1, run ? SqlValue(*run) : SqlValue(nullptr))
      .bind(2, std::string(status))
      .bind(3, detail.empty() ? SqlValue(nullptr) : SqlValue(std::string(detail)))
      .bind(4, batch)
      .bind(5, seq);
  s.step();
}

void Store::set_batch_status(int64_t batch, std::string_view status) {
  Stmt s(db_, "UPDATE batches SET status = ?, finished_at = ? WHERE id = ?");
  s.bind(1, std::string(status))
      .bind(2, status == "running" ? SqlValue(nullptr) : SqlValue(now_iso8601()))
      .bind(3, batch);
  s.step();
}

std::string sql_text(const SqlValue& v) {
  const auto* s = std::get_if<std::string>(&v);
  return s ? *s : std::string();
}

QueryResult Store::query(std::string_view sql) { return query(sql, {}); }

QueryResult Store::query(std::string_view sql, const std::vector<SqlValue>& params) {
  QueryResult out;
  const char* p = sql.data();
  const char* end = sql.data() + sql.size();
  while (p < end) {
    sqlite3_stmt* raw = nullptr;
    const char* tail = nullptr;
    if (sqlite3_prepare_v2(db_, p, static_cast<int>(end - p), &raw, &tail) != SQLITE_OK)
      throw UserError(fmt::format("SQL error: {}", sqlite3_errmsg(db_)));
    p = tail;
    if (!raw) continue;  // whitespace or a comment
    std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> st(raw, sqlite3_finalize);
    const size_t wanted = static_cast<size_t>(sqlite3_bind_parameter_count(raw));
    for (size_t i = 0; i < params.size() && i < wanted; ++i) bind_value(raw, static_cast<int>(i + 1), params[i]);
    QueryResult r;
    int n = sqlite3_column_count(raw);
    for (int i = 0; i < n; ++i) r.columns.emplace_back(sqlite3_column_name(raw, i));
    for (;;) {
      int rc = sqlite3_step(raw);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) throw UserError(fmt::format("SQL error: {}", sqlite3_errmsg(db_)));
      std::vector<SqlValue> row;
      for (int i = 0; i < n; ++i) row.push_back(column_value(raw, i));
      r.rows.push_back(std::move(row));
    }
    out = std::move(r);
  }
  return out;
}

}  // namespace kevo
