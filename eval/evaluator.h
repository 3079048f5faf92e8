// The evaluation cascade for one candidate: static check -> compile (cached)
// -> small ragged-shape checks -> full check -> timing -> re-check on fresh
// inputs -> roofline diagnosis. Every failure becomes a status in the result.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/eval_result.h"
#include "core/knobs.h"
#include "core/roof.h"
#include "core/task.h"
#include "eval/compile_cache.h"
#include "eval/reference_cache.h"
#include "targets/target.h"

namespace kevo {

struct CandidateSource {
  std::string text;
  std::filesystem::path origin;  // the file it came from, if any
  std::string language;          // from the target, by extension
};

class Evaluator {
 public:
  Evaluator(const Task& task, Target& target, const Roof& roof, ReferenceCache& references,
            CompileCache& compiles);

  EvalResult evaluate(const CandidateSource& source, const KnobValues& knobs);

  // The phases every candidate runs, in order.
  const std::vector<RunPhase>& plan() const { return plan_; }
  // Told as each stage starts ("compiling", "checking [7, 1003] seed 1",
  // "timing ..."); may be empty.
  ProgressFn on_stage;

 private:
  const Task& task_;
  Target& target_;
  const Roof& roof_;
  ReferenceCache& references_;
  CompileCache& compiles_;
  std::vector<RunPhase> plan_;
};

// The first line of a compiler log that says "error", or its first line.
std::string first_error_line(const std::string& log);

}  // namespace kevo
