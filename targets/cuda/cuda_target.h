// The cuda target (see cuda_target.cpp). Its parent side needs no CUDA
// headers or libraries, so it is always built; it is usable where
// kevo-cuda-runner was built (nvcc present) and a GPU answers.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "targets/target.h"

namespace kevo {

// Only where cuda_unavailable_reason() is "" (make_target checks).
std::unique_ptr<Target> make_cuda_target();
// kevo-cuda-runner: next to kevo, KEVO_CUDA_RUNNER, or the build tree.
std::filesystem::path cuda_runner_path();
// Why the cuda target cannot be used here (no kevo-cuda-runner, no nvcc), or "".
std::string cuda_unavailable_reason();

}  // namespace kevo
