// The CPU target: candidates are C or C++ files built with the host compiler
// into shared objects and run in kevo-runner, a child process with limits.
#pragma once

#include "targets/target.h"

namespace kevo {

Target* make_cpu_target();

// The kevo-runner executable: $KEVO_RUNNER, else next to the running binary,
// else the one in the build tree. Throws UserError when none exists.
std::filesystem::path runner_path();

}  // namespace kevo
