// kevo compare: two sets of results task by task, for a CI regression gate.
#include <csignal>
#include <filesystem>
#include <regex>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/json_reader.h"
#include "core/paths.h"
#include "core/terminal.h"
#include "report/compare.h"
#include "report/export.h"
#include "report/retime.h"

namespace kevo::cli {

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void on_signal(int) { g_interrupted = 1; }

// A side: an export file, else run ids of the store ("12" or "12,13,14").
nlohmann::json load_side(const std::string& arg, const Args& a, const char* which) {
  if (std::filesystem::is_regular_file(arg)) {
    // The reader every kevo config goes through: a syntax error, a number no
    // double holds or nesting too deep is the file's fault, said as such.
    nlohmann::json doc;
    try {
      doc = parse_json_text(read_text_file(arg), arg);
    } catch (const UserError& e) {
      throw UserError(fmt::format("{}; expected a file written by kevo export", e.what()));
    }
    check_export(doc, arg);
    return doc;
  }
  static const std::regex kRuns("[0-9]+(,[0-9]+)*");
  if (!std::regex_match(arg, kRuns))
    throw UserError(
        fmt::format("{} '{}': no such file, and not a run id (RUN or RUN,RUN,...)", which, arg));
  std::vector<int64_t> runs;
  for (size_t pos = 0; pos < arg.size();) {
    size_t comma = std::min(arg.find(',', pos), arg.size());
    runs.push_back(parse_id(arg.substr(pos, comma - pos), which));
    pos = comma + 1;
  }
  Store store(store_path(a), /*read_only=*/true);
  return export_runs(store, runs);
}

}  // namespace

int cmd_compare(const Argv& argv) {
  Args a("compare",
         "compare BASELINE CURRENT [--retime [--rounds N]] [--threshold PCT] [--confidence C] "
         "[--fail-inconclusive] [--junit FILE] [--json] [--db PATH]",
         "Compares two sets of results task by task, for a CI regression gate. Each side is a\n"
         "file written by kevo export, or run ids of the store (RUN or RUN,RUN,...). Tasks are\n"
         "matched by hash, then by name. For each, its best kernel's independent rounds on\n"
         "either side (the search's confirmation rounds, each in a runner of its own) give the\n"
         "ratio of medians (current / baseline) and its range over every pairing of rounds;\n"
         "where a side has one round, the raw samples give a bootstrap interval instead, and\n"
         "the verdict says the run-to-run spread is not known. Faster or slower when the whole\n"
         "range lies beyond the threshold, unchanged when it lies within, inconclusive when it\n"
         "straddles a bound (the noise is larger than the change); new, missing, now-failing,\n"
         "now-passing and still-failing by which side found a correct kernel. Every verdict\n"
         "shows the spread it was judged against; a side spread wider than the threshold is\n"
         "marked noisy.\n"
         "With --retime, figures from two searches (often on a machine that drifted between\n"
         "them) are not trusted: both best kernels are built again from the exports' sources\n"
         "and timed here side by side, N rounds (default 5) whose order alternates, each\n"
         "measurement checked against the CPU reference in a runner of its own; the verdict is\n"
         "judged from the N ratios current / baseline (the whole range beyond the threshold),\n"
         "so drift between rounds cancels. The measurements are stored (a run of kind compare\n"
         "per task in --db). A task that cannot be re-timed here (no source in an older export,\n"
         "its target not on this machine, its config changed) is judged from the stored\n"
         "figures and says why; a current kernel that fails here is now-failing.\n"
         "Prints a Markdown table. Exit status: 1 when a task is slower beyond the threshold or\n"
         "now fails (or is inconclusive, with --fail-inconclusive), 0 otherwise, 2 for bad\n"
         "input, 130 when interrupted.",
         {db_option(),
          {"--retime", "", "time both best kernels again here, side by side (see above)"},
          {"--rounds", "N", "side-by-side rounds with --retime (default 5, at least 3)"},
          {"--threshold", "PCT", "the smallest change that counts, in percent (default 5)"},
          {"--confidence", "C", "of the bootstrap interval, between 0 and 1 (default 0.95)"},
          {"--fail-inconclusive", "", "an inconclusive task fails the gate too (exit 1)"},
          {"--junit", "FILE", "also write JUnit XML there: one test case per task"},
          json_option()},
         2, 2);
  a.parse(argv);
  if (a.help()) {
    fmt::print("{}", a.help_text());
    return 0;
  }
  CompareOptions o;
  if (auto v = a.value("--threshold")) {
    o.threshold = parse_positive(*v, "--threshold") / 100;
    if (o.threshold >= 1)
      throw UserError(fmt::format("--threshold expects a percentage below 100, got '{}'", *v));
  }
  if (auto v = a.value("--confidence")) {
    o.confidence = parse_positive(*v, "--confidence");
    if (o.confidence >= 1)
      throw UserError(
          fmt::format("--confidence expects a number between 0 and 1 (e.g. 0.95), got '{}'", *v));
  }
  o.fail_inconclusive = a.flag("--fail-inconclusive");
  RetimeOptions retime;
  if (auto v = a.value("--rounds")) {
    if (!a.flag("--retime")) throw UserError("--rounds goes with --retime");
    const int64_t n = parse_id(*v, "--rounds");
    if (n < 3 || n > 100)
      throw UserError(fmt::format("--rounds expects a whole number from 3 to 100, got '{}'", *v));
    retime.rounds = static_cast<int>(n);
  }
  const nlohmann::json baseline = load_side(a.positional()[0], a, "BASELINE");
  const nlohmann::json current = load_side(a.positional()[1], a, "CURRENT");
  std::vector<TaskComparison> rows =
      compare_tasks(tasks_of_export(baseline), tasks_of_export(current), o);
  if (a.flag("--retime")) {
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    StatusLine status;
    retime.progress = [&](std::string_view line) { status.set(line); };
    retime.on_task = [&](std::string_view line) {
      status.clear();
      progress(line);  // one line per task, on a terminal or in a CI log
    };
    retime.interrupted = [] { return g_interrupted != 0; };
    Store store(store_path(a));
    retime_rows(rows, store, o, retime);
  }
  if (auto junit = a.value("--junit")) {
    const std::string xml = comparison_junit(rows, o);
    write_file_atomic(*junit, xml.data(), xml.size());
  }
  if (a.flag("--json"))
    fmt::print("{}\n", comparison_json(rows, o).dump(2));
  else
    fmt::print("{}", comparison_markdown(rows, o));
  if (g_interrupted) {
    progress("interrupted: the tasks not yet re-timed were judged from the stored figures");
    return 130;
  }
  return comparison_exit_status(rows);
}

}  // namespace kevo::cli
