// What a task may bring besides its operator: its own kernel files (seeds),
// knobs declared in the config (Kernel Tuner's tune_params and restrictions),
// and the entry point of a plain kernel for which kevo generates the launch.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/knobs.h"
#include "core/operator.h"

namespace kevo {

// "tune_params" and "restrictions": knobs every family of the task gets
// unless its source declares a knob of the same name itself.
struct ConfigKnobs {
  std::vector<KnobDecl> knobs;            // default: the first value listed
  std::vector<std::string> restrictions;  // expressions over the knobs above
  // The device's limits on a generated CUDA launch whose block is knobs
  // alone (device_restrictions()): points past them are never compiled.
  // Not part of the config as written.
  std::vector<std::string> device;

  bool empty() const { return knobs.empty() && restrictions.empty() && device.empty(); }
  // The `// @kevo knob` lines for the knobs `own` does not declare, and a
  // `// @kevo require` line per restriction, to be parsed with a source.
  std::string declarations(const KnobSpace& own) const;
};

// A size a plain kernel's launch reads: dimension `dim` of one tensor.
struct EntrySize {
  std::string name;
  std::string tensor;
  int dim = 0;
};

// "entry": a plain kernel (a __global__ function on CUDA, a C function on the
// CPU) named by the task, called with the listed arguments. kevo generates
// kevo_launch / kevo_kernel around it (targets/wrapper.h).
struct KernelEntry {
  std::string kind;  // "global" (CUDA) or "function" (CPU); empty: none
  std::string function;
  std::vector<std::string> args;  // tensor, size, scalar or knob names
  std::vector<EntrySize> sizes;
  std::vector<std::string> grid, block;  // 3 C integer expressions each (CUDA)
  nlohmann::json spec;                   // as written, for hashes

  bool empty() const { return kind.empty(); }
};

// Reads "tune_params" (an object of integer lists) and "restrictions" (a list
// of expressions); either may be null. Throws ConfigError naming the key.
ConfigKnobs parse_config_knobs(const nlohmann::json* tune_params, const std::string& tune_path,
                               const nlohmann::json* restrictions,
                               const std::string& restrictions_path);

// Reads "entry" for `op` on `target`; names in args and grid/block must be
// the operator's tensors or scalars, the entry's sizes or the config's knobs.
KernelEntry parse_entry(const nlohmann::json& v, const std::string& path, const Operator& op,
                        const std::string& target, const ConfigKnobs& knobs);

// The launch limits every CUDA device kevo targets has (compute capability
// 2.0 and later): at most 1024 threads per block (so 1024 in x and y) and 64
// in z, as restrictions over the knobs where `entry`'s block expressions are
// knobs and integers alone (blocks that read sizes are checked when the
// kernel launches: KEVO_ERR_LAUNCH).
std::vector<std::string> device_restrictions(const KernelEntry& entry, const ConfigKnobs& knobs);

// Expands "kernels" (globs relative to `base`, the task file's folder) into
// files, sorted within each glob. Throws ConfigError naming `$.kernels[i]`
// for a glob that matches nothing, and for two files with the same stem.
std::vector<std::filesystem::path> resolve_kernel_globs(const nlohmann::json& v,
                                                        const std::string& path,
                                                        const std::filesystem::path& base);

}  // namespace kevo
