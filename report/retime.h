// kevo compare --retime: the baseline's and the current best kernel of each
// task built again from the exports and timed side by side on this machine,
// so that a regression gate compares like with like. Stored figures from two
// searches differ by the machine's drift between them as much as by the
// change; rounds taken here one right after the other, in an order that
// alternates, cancel that drift in each round's ratio.
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "core/store.h"
#include "report/compare.h"

namespace kevo {

struct RetimeOptions {
  int rounds = 5;  // side-by-side rounds per task (each side measured once per round)
  // Told as each measurement starts ("softmax-4096: round 2 of 5, current"); may be empty.
  std::function<void(std::string_view)> progress;
  // Told as each task's re-timing starts ("re-timing softmax-4096 (2 of 7)"); may be empty.
  std::function<void(std::string_view)> on_task;
  // Checked between measurements: true stops the re-timing (Ctrl-C). May be empty.
  std::function<bool()> interrupted;
};

// For each row whose task both sides solved with the same task config: builds
// both best kernels from their sources in the exports, compiles them, and
// times them in `rounds` rounds (round i times the baseline first when i is
// even, the current first when odd), each measurement the whole evaluation
// (checks against the CPU reference, timing, re-check) in a runner of its own.
// Each side's figure becomes its median round, its rounds the re-timed ones,
// and the row is judged again from paired_ratio_range(). The measurements are
// stored as a run of kind "compare" per task (each side's origin names it).
// Rows that cannot be re-timed keep the verdict from the stored figures, and
// the note says why (no source in the export, the target not available here,
// the config changed, the baseline failed here, a time below the roof's
// floor). A current kernel that fails here (its checks, a crash, a hang, a
// compile error) makes the row now-failing. Throws only for store errors.
void retime_rows(std::vector<TaskComparison>& rows, Store& store, const CompareOptions& compare,
                 const RetimeOptions& options);

}  // namespace kevo
