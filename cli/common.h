// Helpers the subcommands share: the store path, output formatting (and,
// from core/terminal.h, progress lines and the status line).
#pragma once

#include <cstdio>
#include <string>

#include "cli/args.h"
#include "core/store.h"
#include "core/terminal.h"

namespace kevo::cli {

// --db, else $KEVO_DB, else ./kevo.db.
std::string store_path(const Args& args);
// A positive integer id (a run) or a number > 0; UserError naming `what`.
int64_t parse_id(const std::string& text, const char* what);
double parse_positive(const std::string& text, const char* what);
// Prints a result table with aligned columns (NULL shown as empty).
void print_table(std::FILE* out, const QueryResult& r);
std::string sql_value_text(const SqlValue& v);

}  // namespace kevo::cli
