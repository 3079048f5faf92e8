// A hardware target: how candidates are compiled, run under kevo's evaluation
// protocol (checks, timing, re-check), and how the machine's roof is measured.
// Implementations live in targets/<name>/ and are reached through make_target().
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/eval_result.h"
#include "core/knobs.h"
#include "core/roof.h"
#include "core/task.h"
#include "targets/runner/sandbox.h"
#include "targets/traits.h"

namespace kevo {

struct CompileRequest {
  const Task* task = nullptr;
  std::filesystem::path source;  // the candidate's source file
  std::string language;          // as returned by Target::language_of
  KnobValues knobs;
  std::filesystem::path output;  // where the artifact goes
  std::vector<std::filesystem::path> include_dirs;  // e.g. the original source's folder
};

struct CompileOutcome {
  bool ok = false;
  bool timed_out = false;
  std::string log;  // compiler diagnostics (capped)
  double seconds = 0;
};

// One step of the run protocol. A check calls the kernel once on fresh
// inputs from `seed` into poisoned outputs and hands the outputs to the
// CheckFn; a timing phase calls it repeatedly on inputs from `seed`.
struct RunPhase {
  enum Kind { check, time } kind = check;
  ShapeSet shapes;
  uint64_t seed = 0;
  std::string label;  // for reports: "[7, 1003] seed 1"
};

// Called in the parent after each check with that call's outputs (ABI order).
// A report that did not pass stops the run there.
using CheckFn =
    std::function<CheckReport(size_t phase, const std::vector<ConstTensorView>& outputs)>;
// Receives a line as each step of a long run starts ("timing [4096, 4096] ...").
using ProgressFn = std::function<void(std::string_view)>;

struct RunOutcome {
  enum Kind {
    finished,      // every phase ran
    check_failed,  // a CheckFn report failed: the run stopped there
    crashed,       // signal, memory violation, unexpected exit
    timed_out,
    kernel_error,  // the entry point returned non-zero
    // The target compiles at the first call (triton: Triton's JIT) and the
    // compiler refused the candidate: `detail` holds its message and line.
    compile_failed,
  } kind = finished;
  std::string detail;
  int kernel_rc = 0;                // the entry point's return value, for kernel_error
  std::vector<CheckReport> checks;  // in phase order, as far as they ran
  std::vector<double> samples_s;    // per call, from the timing phase
  int64_t calls_per_sample = 1;
  int64_t warmup_calls = 0;
  std::vector<ProfileMetric> machine;  // the machine's state when timing ended (machine.*)
  // kevo's own clock around the samples, where the target's runner waits for
  // kevo's "go" before it takes them: from "go" to the timing event (0: not
  // clocked). The evaluator holds the reported samples against it.
  double timing_go_at = 0;
  double timing_wall_s = 0;
  // Of that time, how long the runner's timing thread was ready to run but
  // waited for a CPU (another process had it): -1 where not read.
  double timing_cpu_wait_s = -1;
  // The CPU's counters over the same time (runner::ThreadCounters: cycles,
  // instructions, cache and branch misses, context switches), read by kevo
  // from outside the runner; empty where not read, with the reason in
  // cpu_counters_note when the machine gives no hardware counters.
  bool cpu_counted = false;  // the target asked for them (whatever the machine gave)
  std::map<std::string, double> cpu_counters;
  std::string cpu_counters_note;
  // Per sample, how long the device stayed busy after the sample's end event
  // (cuda): work the event did not wait for. Empty where not measured.
  std::vector<double> after_end_s;
  // Samples fenced on the whole device (cuda: idle before the start event,
  // synchronized after the end), and the host's time per fenced call (from
  // the start event's enqueue to the end event's, which the idle device
  // waits for): kevo holds the samples against them. Empty / 0 where not
  // measured.
  std::vector<double> fenced_s;
  double host_call_s = 0;
  std::string stdout_text, stderr_text;
  double seconds = 0;
};

// What profiling one candidate found: kernel metrics and per-line figures,
// the bottleneck they point at, or why nothing could be read.
struct ProfileOutcome {
  bool ok = false;
  std::string note;  // why not, when !ok ("ncu cannot read the counters here: ...")
  std::vector<ProfileMetric> metrics;
  std::string bottleneck;  // Diagnosis::bottleneck
  std::string why;         // one sentence for the diagnosis
  double seconds = 0;
};

class Target {
 public:
  virtual ~Target() = default;

  // What the target is, as data (targets/traits.h).
  virtual const TargetTraits& traits() const = 0;
  std::string_view name() const { return traits().name; }
  // Where this target's seed kernel families live: <kevo home>/targets/<name>/kernels.
  std::filesystem::path kernels_dir() const;

  // The language of a candidate file, by extension; UserError when the
  // target cannot compile it.
  virtual std::string language_of(const std::filesystem::path& source) const = 0;
  // Everything about the toolchain that changes an artifact (compiler
  // identity and version, flags), for the compile cache key.
  virtual std::string toolchain_id(const Task& task, const std::string& language) = 0;
  virtual std::string artifact_extension() const = 0;

  // Compiles one candidate. A failing compile is an outcome, not an exception.
  virtual CompileOutcome compile(const CompileRequest& request) = 0;
  // Runs the phases in a separate process under the task's limits.
  // `progress` may be empty.
  virtual RunOutcome run(const Task& task, const std::filesystem::path& artifact,
                         const std::vector<RunPhase>& phases, const CheckFn& check,
                         const ProgressFn& progress) = 0;

  // What must match for a stored roof to apply to this machine.
  virtual std::string host_key() = 0;
  // Measures the roof (bandwidth, peak rate); `progress` gets one line per
  // step. With `sizes`, bandwidth only at those working sets (bytes).
  virtual Roof calibrate(const ProgressFn& progress, const std::vector<double>& sizes) = 0;

  // The next run() starts in a runner process of its own, not one that has
  // run candidates before (a suspect measurement is repeated there). Targets
  // that start a runner per run have nothing to do.
  virtual void retire_runners() {}
  // How many candidates can be timed at once without sharing a device (one
  // per GPU); run() is then called from that many threads.
  virtual int run_slots() { return 1; }
  // What the device is, for the families' `@kevo start` lines
  // (KnobSpace::start_fact_names(): "SMS" -> 132); empty where the target
  // has no such figures.
  virtual std::map<std::string, int64_t> start_facts() { return {}; }
  // Figures from the compiler's log of a successful build (registers,
  // spills); empty where the compiler reports none.
  virtual std::vector<ProfileMetric> compile_metrics(const std::string& log) { return {}; }
  // The knowledge base's hardware sheet for this machine (kevo kb show ID),
  // nullopt when the base has none for it.
  virtual std::optional<std::string> hardware_sheet() { return std::nullopt; }
  // Whether profile() can do anything on this target.
  virtual bool can_profile() { return false; }
  // Runs a checked candidate once more under the target's profiler, on
  // `phase`'s shapes and inputs. `source_tag` is part of the path the
  // artifact was compiled from (for per-line figures).
  virtual ProfileOutcome profile(const Task& task, const std::filesystem::path& artifact,
                                 const RunPhase& phase, const std::string& source_tag) {
    return {false, "this target has no profiler", {}, "", "", 0};
  }
  // What the compiler says of a candidate it built, beyond its build log (the
  // cpu target: which loops the vectorizer vectorized, which not and why),
  // for the best few that are profiled. `req.output` may be discarded.
  // Not ok (with a note) where the compiler says nothing of the kind.
  virtual bool has_compiler_report() const { return false; }
  virtual ProfileOutcome compiler_report(const CompileRequest& req) {
    return {false, "this target's compiler gives no report", {}, "", "", 0};
  }
  // The layers of containment a candidate's runner gets on this machine
  // (kevo targets prints them); empty where the target runs no local process.
  virtual std::vector<runner::ContainmentLayer> containment() { return {}; }
};

struct TargetInfo {
  std::string name;
  std::string description;
  bool available = false;
  std::string why_not;  // when not available
};

// The task's timed shapes as defines for the compiler, so that a kernel can
// build a fast path for exactly those sizes: for each tensor t of the
// operator (inputs, then outputs), "KEVO_RANK_t=<rank>", "KEVO_DIM_t_<d>=<size>"
// for each dimension d and "KEVO_LAST_t=<last size>". A kernel must still be
// right at any other shape: the checks call it at small ragged ones. Tensors
// whose names are not C identifiers are left out. With several timed shapes,
// only the dimensions (and ranks) they all share are defined. Part of the
// compile cache key.
std::vector<std::string> shape_defines(const Task& task);

// The hash of targets/abi/kevo_kernel.h (part of every toolchain id: a
// changed ABI rebuilds every candidate), "missing" without it.
std::string abi_header_hash();

struct ProcessResult;
// A compiler process's result as a CompileOutcome: ok when it exited 0 and
// wrote `output`; the log holds its output and why it was stopped, if it was.
CompileOutcome compile_outcome(const ProcessResult& r, const std::filesystem::path& output,
                               double timeout_s);

// Throws UserError for an unknown target or one not built into this kevo.
std::unique_ptr<Target> make_target(std::string_view name);
std::vector<TargetInfo> list_targets();

}  // namespace kevo
