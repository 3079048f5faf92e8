// kevo query: read the store with SQL.
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
}  // namespace

int cmd_query(const Argv& argv) {
  Args a("query", "query \"SQL\" [--json | --csv] [--db PATH]",
         "Runs SQL against the store, read-only, and prints the rows of its last statement.\n"
         "Tables: runs, sources, candidates, lineage, evaluations, samples, profiles, roofs,\n"
         "roof_metrics, llm_calls. Example:\n"
         "  kevo query \"SELECT id, status, median_s, diagnosis FROM evaluations\"",
         {db_option(), json_option(), {"--csv", "", "comma-separated values with a header"}}, 1, 1);
  a.parse(argv);
  if (a.help()) {
    fmt::print("{}", a.help_text());
    return 0;
  }
  if (a.flag("--json") && a.flag("--csv"))
    throw UserError("kevo query: choose one of --json and --csv");
  Store store(store_path(a), /*read_only=*/true);
  QueryResult r = store.query(a.positional()[0]);
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
