// The triton target (see triton_target.cpp): Triton kernels in Python, run by
// kevo-triton-runner processes (targets/triton/runner), one per GPU, under
// kevo-contain. Its parent side is plain C++, always built; it is usable where
// a Python with torch and Triton answers and torch sees a GPU, or where
// KEVO_TRITON_INTERPRET=1 runs the kernels in Triton's interpreter on the CPU.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "targets/target.h"

namespace kevo {

std::unique_ptr<Target> make_triton_target();
// Why the triton target cannot be used here, or "".
std::string triton_unavailable_reason();
// The Python kevo runs Triton with: KEVO_PYTHON, else python3 on PATH.
std::string triton_python();

}  // namespace kevo
