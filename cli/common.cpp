#include "cli/common.h"

#include <cstdlib>

#include <fmt/format.h>

#include "core/error.h"

namespace kevo::cli {

std::string store_path(const Args& args) {
  if (auto v = args.value("--db")) return *v;
  if (const char* e = std::getenv("KEVO_DB"); e && *e) return e;
  return "kevo.db";
}

int64_t parse_id(const std::string& text, const char* what) {
  try {
    size_t used = 0;
    long long v = std::stoll(text, &used);
    if (used == text.size() && v > 0) return v;
  } catch (const std::exception&) {
  }
  throw UserError(fmt::format("{} expects a positive integer, got '{}'", what, text));
}

double parse_positive(const std::string& text, const char* what) {
  try {
    size_t used = 0;
    double v = std::stod(text, &used);
    if (used == text.size() && v > 0) return v;
  } catch (const std::exception&) {
  }
  throw UserError(fmt::format("{} expects a number > 0, got '{}'", what, text));
}

std::string sql_value_text(const SqlValue& v) {
  if (std::holds_alternative<std::nullptr_t>(v)) return "";
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) return fmt::format("{:.6g}", *d);
  return std::get<std::string>(v);
}

void print_table(std::FILE* out, const QueryResult& r) {
  if (r.columns.empty()) return;
  constexpr size_t kMaxCell = 60;
  std::vector<size_t> width(r.columns.size());
  auto cell = [&](const SqlValue& v) {
    std::string s = sql_value_text(v);
    for (auto& c : s)
      if (c == '\n' || c == '\t') c = ' ';
    if (s.size() > kMaxCell) s = s.substr(0, kMaxCell - 3) + "...";
    return s;
  };
  for (size_t i = 0; i < r.columns.size(); ++i) width[i] = r.columns[i].size();
  for (const auto& row : r.rows)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], cell(row[i]).size());
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (size_t i = 0; i < cells.size(); ++i)
      s += fmt::format("{}{:<{}}", i ? "  " : "", cells[i], i + 1 < cells.size() ? width[i] : 0);
    fmt::print(out, "{}\n", s);
  };
  line(r.columns);
  std::vector<std::string> rule;
  for (size_t w : width) rule.push_back(std::string(w, '-'));
  line(rule);
  for (const auto& row : r.rows) {
    std::vector<std::string> cells;
    for (const auto& v : row) cells.push_back(cell(v));
    line(cells);
  }
}

}  // namespace kevo::cli
