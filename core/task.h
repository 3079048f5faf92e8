// A task: which operator at which shapes, dtype and parameters, on which
// target, compared how, timed how, under which limits. Loaded from a JSON
// config over the defaults in configs/defaults.json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/compare_mode.h"
#include "core/dtype.h"
#include "core/operator.h"
#include "core/task_kernels.h"
#include "targets/traits.h"

namespace kevo {

struct TimingConfig {
  double min_time_s = 0.1;  // timed calls fill at least this much time...
  int64_t min_samples = 10;  // ...and give at least this many samples
  int64_t max_samples = 20000;
  double warmup_s = 0.02;  // warm-up calls fill at least this much time...
  int64_t min_warmup = 2;  // ...and number at least this many
  // The GPU's L2 before each timed call: "dirty", flushed by writing a buffer
  // of twice its size (triton.testing.do_bench's way; the call pays to write
  // those lines back), or "clean", flushed by reading it (nothing to write
  // back). CUDA only; KEVO_CUDA_FLUSH overrides it.
  std::string l2 = "dirty";
};

struct Limits {
  double timeout_s = 20;        // setup plus the first call of each check
  double max_total_s = 600;     // hard cap on one candidate's run
  int64_t memory_mb = 4096;     // address space beyond the task's own buffers
  int64_t output_kb = 64;       // kept of a candidate's stdout and stderr each
  double compile_timeout_s = 120;
};

struct CompileConfig {
  std::string cc = "cc";
  std::string cxx = "c++";
  std::vector<std::string> flags;        // replace the defaults when given
  std::vector<std::string> extra_flags;  // appended to the flags
  std::string arch;  // cuda: "sm_90a", "native", ...; empty elsewhere
};

// One set of shapes to run a kernel on, with all tensors bound.
struct ShapeSet {
  ShapeMap given;
  std::vector<Shape> shapes;  // ABI order
};

struct Task {
  std::string name;
  std::filesystem::path origin;  // the config file, empty when built in code
  const Operator* op = nullptr;
  std::shared_ptr<const Operator> owned_op;  // a defined operator (op points at it)
  DType dtype = DType::f32;
  std::vector<DType> dtypes;          // each tensor's, ABI order: op->tensor_dtypes(dtype)
  ShapeSet main;                      // the shape that is timed (the first of `timed`)
  // Every timed shape, `main` first, and their weights (> 0, as written):
  // with several, the objective is the weighted geometric mean of their
  // median times (combine_shape_timings).
  std::vector<ShapeSet> timed;
  std::vector<double> weights;
  std::vector<ShapeSet> check_shapes;  // checked first (small, ragged)
  std::vector<double> scalars;         // in the operator's scalar order
  std::string target = std::string(default_target());
  CompileConfig compile;
  std::vector<CompareMode> compare;  // one per output, in output order
  TimingConfig timing;
  Limits limits;
  uint64_t seed = 1;
  std::map<std::string, std::vector<int64_t>> knob_restrictions;
  // "kernels": the task's own seed files, replacing the shipped families.
  std::vector<std::filesystem::path> kernel_files;
  ConfigKnobs config_knobs;  // "tune_params" and "restrictions"
  KernelEntry entry;         // "entry": a plain kernel; empty for kevo_kernel/kevo_launch
  // The "search" section as written (strategy, stop conditions, families):
  // read and checked by the search module, not part of the hash.
  nlohmann::json search = nlohmann::json::object();
  nlohmann::json config;  // the config as written, for resuming a run

  // The full config after defaults, as JSON; parses back to the same task
  // anywhere (a defined operator is its definition, reference inlined). The
  // store keeps it as runs.task_json.
  nlohmann::json resolved;
  std::string hash;  // of what changes a measurement (not name, limits, knob lists, search)

  bool multi_shape() const { return timed.size() > 1; }
  // A copy of this task that times only timed[k] (its main shape).
  Task for_shape(size_t k) const;
  double flops() const { return op->flops(main.shapes); }
  double bytes() const { return op->bytes(main.shapes, dtype); }
  // The comparison in words: "ulp:2" when all outputs share it, else
  // "y ulp:2, z exact".
  std::string compare_str() const;
  // Whether some tensor's dtype is not the task's.
  bool mixed_dtypes() const;
};

// The timed shape ("[4096, 4096]"), or the timed shapes with their weights
// ("[64, 4096] x1, [4096, 4096] x2").
std::string timed_shapes_str(const Task& task);

// Each timed shape's dimensions by the names a family's `@kevo start` reads:
// "DIM_<tensor>_<d>" -> size, for the operator's tensors (inputs, then
// outputs) whose names are C identifiers; one map per timed shape, `main`
// first.
std::vector<std::map<std::string, int64_t>> dimension_values(const Task& task);

// Reads and validates a task config file. Throws ConfigError / UserError.
Task load_task(const std::filesystem::path& path);
// The same from parsed JSON; `origin` names the file in messages.
Task parse_task(const nlohmann::json& config, const std::filesystem::path& origin = {});

// Rebuilds a task from its `resolved` JSON as the store keeps it
// (runs.task_json), for its byte and FLOP counts, shapes and dtype. The task's
// kernel files are not looked up: they may have moved, and the store holds
// the sources it measured.
Task parse_stored_task(const nlohmann::json& resolved);

// The built-in defaults (configs/defaults.json, compiled into kevo).
const nlohmann::json& default_config();

}  // namespace kevo
