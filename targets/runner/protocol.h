// The protocol between kevo and its runners (kevo-runner, kevo-cuda-runner),
// the processes that load a candidate and call it. kevo writes one JSON job
// line to the runner's stdin; the runner answers with JSON event lines on
// descriptor 3 and, after each check, waits for "continue" or "stop" on stdin.
// Check outputs are copied to a shared memory file (cpu: descriptor 4; cuda:
// the file `output_path`) where kevo compares them. host_loop.h is kevo's side.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "core/eval_result.h"
#include "core/task.h"
#include "core/tensor.h"

namespace kevo::runner {

inline constexpr int kEventsFd = 3;
inline constexpr int kOutputFd = 4;

struct Phase {
  bool timed = false;         // false: a check
  std::vector<Shape> shapes;  // ABI order
  uint64_t seed = 0;
};

struct CalibrationPoint {
  std::string kind;  // copy | copy_nt | triad | fp32_fma
  int threads = 1;
  double bytes = 0;  // working set (bandwidth kinds)
};

struct Job {
  std::string mode = "kernel";  // kernel | calibrate
  std::string artifact;
  std::string entry = "kevo_kernel";
  std::string op;
  nlohmann::json op_definition;  // a defined operator's definition; null for a built-in
  DType dtype = DType::f32;      // the task's
  std::vector<DType> dtypes;     // each tensor's, ABI order ("dtypes"; absent: all `dtype`)
  std::vector<double> scalars;
  std::vector<Phase> phases;
  TimingConfig timing;
  size_t output_bytes = 0;  // size of the shared output file
  std::string output_path;  // cuda: the file check outputs are written to
  std::vector<CalibrationPoint> points;
  double min_point_s = 0.15;  // calibration: time per point

  nlohmann::json to_json() const;
  static Job from_json(const nlohmann::json& j);
};

// The runner's side of the talk (kevo-runner, kevo-cuda-runner and the
// tests' fake runner): one JSON event line to descriptor `fd`; a runner whose
// parent is gone exits (status 3).
void emit_event(int fd, const nlohmann::json& event);
// One line from kevo on stdin, without the newline; empty at end of input.
// Read byte by byte: nothing after the line may be consumed.
std::string read_command_line();

// Byte offsets of each output in the shared output file (64-byte aligned)
// for one phase's shapes; `total` receives the bytes needed.
// `dtypes`: each tensor's, ABI order, like `shapes`.
std::vector<size_t> output_offsets(size_t n_inputs, const std::vector<DType>& dtypes,
                                   const std::vector<Shape>& shapes, size_t* total);

// The machine's state at the end of a timing phase. A runner adds it to its
// "timing" event as {"machine": {"sm_mhz": 1980, "load1": 0.4, ...}}; kevo
// stores it with the evaluation as profile metrics named machine.<field>, so
// that a time can be read against the clocks, temperatures and load it was
// taken under. Fields (each optional): sm_mhz, mem_mhz (MHz), gpu_temp_c,
// mem_temp_c (degrees C), power_w (W), throttle (clock-event reason bits other
// than idle; 0: none), load1 (1-minute load average), cpu_mhz (MHz, the mean
// over the CPUs). Unknown fields and values that are not numbers are dropped.
// A GPU runner's launch cover goes beside it as {"launch": {"host_us": ...,
// "cover_us": ..., "outlasted": ..., "retaken": ...}} (the call's median host
// time, the cover at the end, the kept samples the flush and cover did not
// hide, the samples taken again), stored as launch.<field>.
std::vector<ProfileMetric> machine_metrics(const nlohmann::json& timing_event);

// The host's part of that state, read now: load1 and cpu_mhz where the system
// says (getloadavg, /proc/cpuinfo); an empty object where it does not.
nlohmann::json host_state();

}  // namespace kevo::runner
