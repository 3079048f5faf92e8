// Reading what the CUDA tools say about a candidate: the resource report of
// `ptxas -v` (registers, shared memory, spills per kernel) and Nsight Compute's
// CSV pages (kernel metrics, per-instruction samples mapped to source lines).
// Pure text parsing: tested on recorded files, no GPU needed.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/eval_result.h"

namespace kevo::cuda {

struct KernelResources {
  std::string kernel;  // mangled name
  int registers = 0;
  int64_t smem_bytes = 0;  // static shared memory
  int64_t stack_bytes = 0;
  int64_t spill_store_bytes = 0;
  int64_t spill_load_bytes = 0;
  int barriers = 0;
};

// Every kernel in a `-Xptxas -v` log, in the order ptxas reports them.
std::vector<KernelResources> parse_ptxas(const std::string& log);
// The report as profile metrics ("ptxas.registers", ... : the kernel with the
// most registers, spills summed over all kernels).
std::vector<ProfileMetric> ptxas_metrics(const std::vector<KernelResources>& kernels);

// One profiled kernel launch from `ncu --csv --page raw`: metric -> value
// (numbers with their thousands separators removed) and metric -> unit.
struct NcuKernel {
  std::string name;
  std::string block, grid;
  std::map<std::string, double> values;
  std::map<std::string, std::string> units;
  double value(const std::string& metric, double fallback = 0) const;
};
// Throws UserError when the text holds no ncu raw table.
std::vector<NcuKernel> parse_ncu_raw(const std::string& csv);

// Per-instruction figures from `ncu --csv --page source --print-source sass`:
// address, instruction text, warp stall samples (all of them, and per reason:
// the page's stall_* columns, keyed by what follows "stall_", e.g. "barrier",
// "long_sb", "wait"), instructions executed.
struct SassRow {
  uint64_t address = 0;
  std::string text;
  double stall_samples = 0;
  std::map<std::string, double> stalls;
  double executed = 0;
};
struct SassKernel {
  std::string name;
  std::vector<SassRow> rows;
};
std::vector<SassKernel> parse_ncu_sass(const std::string& csv);

// Source lines of each SASS offset from `nvdisasm -g -c` output:
// function name -> (offset -> line of the candidate's file, the file whose
// path contains `file_tag`; code inlined from headers counts at the line of
// the candidate that called it).
using LineMap = std::map<std::string, std::map<uint64_t, int64_t>>;
LineMap parse_nvdisasm_lines(const std::string& text, const std::string& file_tag);

struct HotLine {
  int64_t line = 0;
  double share = 0;  // of all stall samples in the kernel
  double samples = 0;
  // The line's commonest stall reason, in words ("barrier", "long
  // scoreboard"; issuing, "selected", does not count), and its share of the
  // line's samples; empty where the page has no per-reason columns.
  std::string reason;
  double reason_share = 0;
};
// Stall samples summed per source line, hottest first.
std::vector<HotLine> hot_lines(const SassKernel& kernel, const std::map<uint64_t, int64_t>& lines);

// What a profile says limits the kernel, with a sentence for the diagnosis.
struct Bottleneck {
  std::string kind;  // dram-bandwidth | l2-bandwidth | memory-latency | occupancy | compute | spills | launch
  std::string why;
};
Bottleneck classify(const NcuKernel& k, const std::vector<KernelResources>& resources);

// The kernel metrics kevo asks ncu for, comma-separated.
const std::string& ncu_metric_list();
// The chosen metrics of one launch as profile rows ("ncu.dram_pct", ...).
std::vector<ProfileMetric> ncu_metrics(const NcuKernel& k);

}  // namespace kevo::cuda
