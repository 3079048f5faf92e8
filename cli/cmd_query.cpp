// kevo query: read the store with SQL, or with one of the named queries
// below (kevo query --list).
#include <algorithm>
#include <regex>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"

namespace kevo::cli {

namespace {
std::string csv_field(const SqlValue& v) {
  std::string s = sql_value_text(v);
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// Candidate `c` with its result `e`, by the store's candidate_results view:
// the earlier run's measurement it reuses, else its own first evaluation
// (never a confirmation round).
#define C_WITH_RESULT_E \
  "JOIN candidate_results cr ON cr.candidate_id = c.id JOIN evaluations e ON e.id = cr.evaluation_id"

struct NamedQuery {
  const char* name;
  const char* args;  // "RUN K"; each is bound as ?1, ?2, ...
  const char* answers;
  const char* sql;
};

// Where several rows compete for one group, SQLite takes the other columns
// from the row that holds the MIN() ("bare columns in an aggregate query",
// sqlite.org/lang_select.html).
const NamedQuery kNamedQueries[] = {
    {"runs", "", "every run: its task, kind, status and number of candidates",
     "SELECT r.id AS run, r.kind, r.task_name AS task, r.target, r.status, r.started_at, "
     "(SELECT COUNT(*) FROM candidates c WHERE c.run_id = r.id) AS candidates "
     "FROM runs r ORDER BY r.id"},
    {"best-per-run", "",
     "each run's fastest correct candidate as first measured, beside the best its search "
     "reported (chosen by re-measurement)",
     "SELECT r.id AS run, r.task_name AS task, c.id AS candidate, c.family, c.knobs_json AS knobs, "
     "MIN(e.median_s) AS median_s, e.p20_s, e.p80_s, e.roof_fraction, e.bound, "
     "json_extract(r.summary_json, '$.best.candidate') AS reported_best, "
     "json_extract(r.summary_json, '$.best.median_s') AS reported_median_s "
     "FROM runs r JOIN candidates c ON c.run_id = r.id "
     C_WITH_RESULT_E " "
     "WHERE e.status = 'ok' GROUP BY r.id ORDER BY r.id"},
    {"failures-by-status", "RUN",
     "the candidates of RUN counted by status, with an example of each",
     "SELECT e.status, COUNT(*) AS n, MIN(c.id) AS example_candidate, e.detail AS example_detail "
     "FROM candidates c " C_WITH_RESULT_E " "
     "WHERE c.run_id = ?1 GROUP BY e.status ORDER BY n DESC, e.status"},
    {"top-k", "RUN K", "the K fastest correct candidates of RUN with their diagnosis",
     "SELECT c.id AS candidate, c.family, c.knobs_json AS knobs, c.synthesizer, e.median_s, "
     "e.p20_s, e.p80_s, e.roof_fraction, e.bound, e.bottleneck, e.diagnosis "
     "FROM candidates c " C_WITH_RESULT_E " "
     "WHERE c.run_id = ?1 AND e.status = 'ok' ORDER BY e.median_s LIMIT ?2"},
    {"profile", "CANDIDATE",
     "the profiler and compiler metrics (ncu.*, ptxas.*) and the machine's state (machine.*) "
     "of CANDIDATE's evaluations",
     "SELECT p.evaluation_id AS evaluation, p.metric, p.value, p.unit FROM profiles p "
     "JOIN evaluations e ON e.id = p.evaluation_id "
     "WHERE (e.candidate_id = ?1 "
     "OR e.id = (SELECT reuses_evaluation FROM candidates WHERE id = ?1)) "
     "AND p.source_line IS NULL ORDER BY p.evaluation_id, p.id"},
    {"hot-lines", "CANDIDATE",
     "CANDIDATE's per-line profile rows, hottest first, with the line's text",
     // The source split into numbered lines by a recursive CTE.
     "WITH RECURSIVE src(n, line, rest) AS ("
     "  SELECT 0, NULL, s.text || char(10) FROM sources s "
     "  JOIN candidates c ON c.source_hash = s.hash WHERE c.id = ?1 "
     "  UNION ALL SELECT n + 1, substr(rest, 1, instr(rest, char(10)) - 1), "
     "  substr(rest, instr(rest, char(10)) + 1) FROM src WHERE rest <> '') "
     "SELECT p.source_line AS line, p.metric, p.value, p.unit, trim(src.line) AS text "
     "FROM profiles p JOIN evaluations e ON e.id = p.evaluation_id "
     "LEFT JOIN src ON src.n = p.source_line "
     "WHERE (e.candidate_id = ?1 "
     "OR e.id = (SELECT reuses_evaluation FROM candidates WHERE id = ?1)) "
     "AND p.source_line IS NOT NULL ORDER BY p.metric, p.value DESC, p.source_line"},
    {"rounds", "CANDIDATE",
     "CANDIDATE's evaluations in order (its measurement, then its confirmation rounds): the "
     "median, the medians of the first and the last quarter of its samples in measurement order "
     "(drift inside one evaluation), the machine's state (GPU clock, load), the launch cover "
     "(its length, samples it did not hide, samples taken again) and the runner's timing line; "
     "where a time does not hold from one round to the next, what differed",
     // A quarter's median: the middle one of its samples sorted (the upper
     // of an even count, as kevo's median), by rank within the quarter.
     "WITH evs AS (SELECT e.id, e.n_samples / 4 AS qn FROM evaluations e WHERE e.candidate_id = ?1 "
     "  OR e.id = (SELECT reuses_evaluation FROM candidates WHERE id = ?1)), "
     "quarters AS (SELECT s.evaluation_id AS ev, v.qn, s.seconds, "
     "  CASE WHEN s.seq < v.qn THEN 'first' ELSE 'last' END AS part FROM samples s "
     "  JOIN evs v ON v.id = s.evaluation_id "
     "  JOIN evaluations e ON e.id = s.evaluation_id "
     "  WHERE s.seq < v.qn OR s.seq >= e.n_samples - v.qn), "
     "ranked AS (SELECT ev, part, seconds, qn, "
     "  ROW_NUMBER() OVER (PARTITION BY ev, part ORDER BY seconds) - 1 AS k FROM quarters) "
     "SELECT e.id AS evaluation, e.status, e.median_s, e.n_samples AS samples, "
     "(SELECT seconds FROM ranked r WHERE r.ev = e.id AND r.part = 'first' AND r.k = r.qn / 2) "
     " AS first_quarter_median_s, "
     "(SELECT seconds FROM ranked r WHERE r.ev = e.id AND r.part = 'last' AND r.k = r.qn / 2) "
     " AS last_quarter_median_s, "
     "(SELECT p.value FROM profiles p WHERE p.evaluation_id = e.id "
     " AND p.metric = 'machine.sm_mhz') AS sm_mhz, "
     "(SELECT p.value FROM profiles p WHERE p.evaluation_id = e.id "
     " AND p.metric = 'machine.load1') AS load1, "
     "(SELECT p.value FROM profiles p WHERE p.evaluation_id = e.id "
     " AND p.metric = 'launch.cover_us') AS cover_us, "
     "(SELECT p.value FROM profiles p WHERE p.evaluation_id = e.id "
     " AND p.metric = 'launch.outlasted') AS outlasted, "
     "(SELECT p.value FROM profiles p WHERE p.evaluation_id = e.id "
     " AND p.metric = 'launch.retaken') AS retaken, "
     "CASE WHEN instr(e.stderr, 'runner: timing: ') > 0 THEN "
     " substr(substr(e.stderr, instr(e.stderr, 'runner: timing: ') + 16), 1, "
     "  instr(substr(e.stderr, instr(e.stderr, 'runner: timing: ') + 16) || char(10), char(10)) - 1) "
     "END AS runner_timing "
     "FROM evaluations e JOIN evs ON evs.id = e.id ORDER BY e.id"},
    {"lineage", "CANDIDATE", "CANDIDATE and its ancestors up to the seed, nearest first",
     "WITH RECURSIVE anc(id, depth) AS (SELECT ?1, 0 UNION "
     "  SELECT l.parent_id, a.depth + 1 FROM lineage l JOIN anc a ON l.child_id = a.id) "
     "SELECT MIN(a.depth) AS depth, c.id AS candidate, c.family, c.knobs_json AS knobs, "
     "c.synthesizer, (SELECT group_concat(parent_id, ' ') FROM lineage WHERE child_id = c.id) "
     "AS parents, e.status, e.median_s "
     "FROM anc a JOIN candidates c ON c.id = a.id "
     "LEFT JOIN candidate_results cr ON cr.candidate_id = c.id "
     "LEFT JOIN evaluations e ON e.id = cr.evaluation_id "
     "GROUP BY c.id ORDER BY depth, c.id"},
    {"roofs", "", "every roof calibration: machine, date, best bandwidth and peak rate measured",
     "SELECT r.id AS roof, r.target, r.hostname, r.cpu_model, r.ncpu, r.measured_at, "
     "(SELECT MAX(value) FROM roof_metrics m WHERE m.roof_id = r.id AND m.unit = 'GB/s') "
     "AS best_gbps, "
     "(SELECT MAX(value) FROM roof_metrics m WHERE m.roof_id = r.id AND m.unit = 'GFLOP/s') "
     "AS best_gflops FROM roofs r ORDER BY r.id"},
};
#undef C_WITH_RESULT_E

const NamedQuery* find_named(const std::string& name) {
  for (const auto& q : kNamedQueries)
    if (name == q.name) return &q;
  return nullptr;
}

size_t arg_count(const NamedQuery& q) {
  std::string a = q.args;
  return a.empty() ? 0 : 1 + static_cast<size_t>(std::count(a.begin(), a.end(), ' '));
}

void print_list(bool json) {
  if (json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& q : kNamedQueries)
      list.push_back({{"name", q.name}, {"args", q.args}, {"answers", q.answers}, {"sql", q.sql}});
    fmt::print("{}\n", list.dump(2));
    return;
  }
  fmt::print("named queries (kevo query NAME [ARGS...]; their SQL with --list --json):\n");
  for (const auto& q : kNamedQueries)
    fmt::print("  {:<30} {}\n", fmt::format("{} {}", q.name, q.args), q.answers);
}
}  // namespace

int cmd_query(const Argv& argv) {
  Args a("query", "query \"SQL\" | NAME [ARGS...] | --list   [--json | --csv] [--db PATH]",
         "Runs SQL against the store, read-only, and prints the rows of its last statement.\n"
         "Tables: runs, sources, candidates, lineage, evaluations, samples, profiles, roofs,\n"
         "roof_metrics, llm_calls. Or runs a named query with its arguments (--list shows\n"
         "them: best-per-run, failures-by-status RUN, top-k RUN K, profile CANDIDATE,\n"
         "hot-lines CANDIDATE, rounds CANDIDATE, lineage CANDIDATE, roofs, ...). Examples:\n"
         "  kevo query \"SELECT id, status, median_s, diagnosis FROM evaluations\"\n"
         "  kevo query top-k 3 10",
         {db_option(), json_option(), {"--csv", "", "comma-separated values with a header"},
          {"--list", "", "list the named queries (with --json: and their SQL)"}},
         0, 16);
  a.parse(argv);
  if (a.help()) {
    fmt::print("{}", a.help_text());
    return 0;
  }
  if (a.flag("--json") && a.flag("--csv"))
    throw UserError("kevo query: choose one of --json and --csv");
  if (a.flag("--list")) {
    print_list(a.flag("--json"));
    return 0;
  }
  if (a.positional().empty())
    throw UserError(
        "kevo query: missing argument (usage: kevo query \"SQL\" | NAME [ARGS...] | --list)");
  const std::string& first = a.positional()[0];
  std::string sql = first;
  std::vector<SqlValue> params;
  if (const NamedQuery* q = find_named(first)) {
    const size_t given = a.positional().size() - 1;
    if (given != arg_count(*q))
      throw UserError(fmt::format("kevo query {}: expects {} argument{} ({}), got {}", q->name,
                                  arg_count(*q), arg_count(*q) == 1 ? "" : "s",
                                  *q->args ? q->args : "none", given));
    static const std::regex kInteger("-?[0-9]{1,18}");
    for (size_t i = 1; i < a.positional().size(); ++i) {
      const std::string& v = a.positional()[i];
      params.push_back(std::regex_match(v, kInteger) ? SqlValue(static_cast<int64_t>(std::stoll(v)))
                                                     : SqlValue(v));
    }
    sql = q->sql;
  } else if (a.positional().size() > 1) {
    throw UserError(fmt::format("kevo query: unexpected argument '{}' ('{}' is not a named query: "
                                "see kevo query --list)",
                                a.positional()[1], first));
  }
  Store store(store_path(a), /*read_only=*/true);
  QueryResult r = store.query(sql, params);
  if (a.flag("--json")) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& row : r.rows) {
      nlohmann::json o = nlohmann::json::object();
      for (size_t i = 0; i < row.size(); ++i) {
        const SqlValue& v = row[i];
        if (auto* n = std::get_if<int64_t>(&v)) o[r.columns[i]] = *n;
        else if (auto* d = std::get_if<double>(&v)) o[r.columns[i]] = *d;
        else if (auto* s = std::get_if<std::string>(&v)) o[r.columns[i]] = *s;
        else o[r.columns[i]] = nullptr;
      }
      rows.push_back(o);
    }
    fmt::print("{}\n", rows.dump(2));
  } else if (a.flag("--csv")) {
    std::string header;
    for (size_t i = 0; i < r.columns.size(); ++i)
      header += (i ? "," : "") + csv_field(SqlValue(r.columns[i]));
    fmt::print("{}\n", header);
    for (const auto& row : r.rows) {
      std::string line;
      for (size_t i = 0; i < row.size(); ++i) line += (i ? "," : "") + csv_field(row[i]);
      fmt::print("{}\n", line);
    }
  } else {
    print_table(stdout, r);
    fmt::print("({} row{})\n", r.rows.size(), r.rows.size() == 1 ? "" : "s");
  }
  return 0;
}

}  // namespace kevo::cli
