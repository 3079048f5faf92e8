// One candidate's evaluation as data, for a backend whose jobs run in another
// process or on another machine (a cluster node). The request holds all the
// evaluation needs (the resolved task, the candidate's source and knobs, the
// roof to diagnose against); the result comes back whole. The cascade, the
// check against the reference included, runs where the request is evaluated,
// beside the runner that holds the outputs: only this JSON crosses between
// hosts, never an output buffer.
#pragma once

#include <filesystem>
#include <functional>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "core/eval_result.h"
#include "core/knobs.h"
#include "core/roof.h"
#include "eval/evaluator.h"

namespace kevo {

struct EvalRequest {
  nlohmann::json task;  // Task::resolved: parses back to the same task anywhere
  CandidateSource source;
  std::string name;  // the candidate's family, for messages
  KnobValues knobs;
  Roof roof;  // the roof to judge against (roof.id stamps the result), unless roof_by_node
  // A cluster's request: the machine that evaluates it takes its own node
  // type's roof from `roofs` (the submitting store's roofs, one per host
  // key), else the one it calibrated before, else calibrates now
  // (roof_here). `roof` is then unused.
  bool roof_by_node = false;
  std::vector<Roof> roofs;
  bool profile = false;  // run it under the target's profiler too...
  // ...when its median is below this (the submitting side's k-th best so
  // far; infinity: whatever its time).
  double profile_below_s = std::numeric_limits<double>::infinity();
};

nlohmann::json request_to_json(const EvalRequest& r);
// Throws UserError naming the field that is missing or malformed.
EvalRequest request_from_json(const nlohmann::json& j);

// An EvalResult in full (samples, logs, profile; non-finite numbers as
// strings), and back: what a worker writes and the backend reads.
nlohmann::json result_to_wire(const EvalResult& r);
EvalResult result_from_wire(const nlohmann::json& j);

// The roof of this machine (its node type: `target`'s host key) for a
// request with roof_by_node: the request's roof of that host key (its id
// stamps the result); else the one this machine calibrated for an earlier
// request, kept under `cache_dir`/roofs; else a calibration made now, one at
// a time per machine (a lock file: tasks sharing a node wait for the first),
// and kept there. Those two have id 0 and hostname this machine's: the
// submitting store adds them (SlurmBackend). `progress` hears a calibration.
Roof roof_here(const EvalRequest& request, Target& target, const std::filesystem::path& cache_dir,
               const std::function<void(std::string_view)>& progress);

// Evaluates `request` on this machine with the task's target, the compiled
// candidates and references cached under `cache_dir`. A candidate's failure is
// its result's status; a malformed request (an unknown target, a task that
// does not parse) throws UserError. A time that beats the request's roof is
// checked against `remeasure_roof` where given (see Evaluator), else suspect.
// `how`, where given, gets the roof the result was judged against and
// whether the candidate was profiled.
struct RequestOutcome {
  Roof roof;
  bool profiled = false;
};
EvalResult evaluate_request(const EvalRequest& request, const std::filesystem::path& cache_dir,
                            std::function<Roof(double bytes)> remeasure_roof = {},
                            RequestOutcome* how = nullptr);

}  // namespace kevo
