// Generated entry points for plain kernels: when a task names a plain
// __global__ or C function ("entry"), kevo compiles a wrapper that includes
// the user's file and defines kevo_launch / kevo_kernel around the function.
#pragma once

#include <filesystem>
#include <string>

#include "core/task.h"
#include "targets/target.h"

namespace kevo {

// The wrapper's text for `task.entry` (which must not be empty): it includes
// `user_source` (an absolute path) and defines the ABI entry point, which
// checks the tensor and scalar counts, reads the entry's sizes from the
// tensors' shapes, and calls the function (on CUDA: launches it on the given
// stream with the grid and block evaluated with the knobs' -D values).
std::string entry_wrapper(const Task& task, const std::filesystem::path& user_source);

// The file to hand the compiler for `req`: its source, or (for a task with an
// entry) a wrapper written beside `req.output` that includes it, removed
// again when this goes out of scope.
class CompileSource {
 public:
  explicit CompileSource(const CompileRequest& req);
  ~CompileSource();
  CompileSource(const CompileSource&) = delete;
  CompileSource& operator=(const CompileSource&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  bool generated_ = false;
};

}  // namespace kevo
