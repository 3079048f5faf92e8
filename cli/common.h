// Helpers the subcommands share: the store path, output formatting.
#pragma once

#include <cstdio>
#include <string>

#include "cli/args.h"
#include "core/store.h"

namespace kevo::cli {

// --db, else $KEVO_DB, else ./kevo.db.
std::string store_path(const Args& args);
// A positive integer id (a run) or a number > 0; UserError naming `what`.
int64_t parse_id(const std::string& text, const char* what);
double parse_positive(const std::string& text, const char* what);
bool stdout_is_tty();
bool stderr_is_tty();
// A progress line on stderr ("kevo: ...").
void progress(std::string_view line);
// One status line on a terminal, rewritten in place; silent when stderr is
// not a terminal (logs get the final result only).
class StatusLine {
 public:
  StatusLine();
  ~StatusLine() { clear(); }
  void set(std::string_view text);
  void clear();

 private:
  bool enabled_;
  bool shown_ = false;
};

// Prints a result table with aligned columns (NULL shown as empty).
void print_table(std::FILE* out, const QueryResult& r);
std::string sql_value_text(const SqlValue& v);

}  // namespace kevo::cli
