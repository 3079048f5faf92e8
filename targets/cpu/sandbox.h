// The runner's system-call filter: once installed, the process can no longer
// start processes, exec programs, open sockets, trace or signal other
// processes. Threads (OpenMP) and memory calls stay allowed.
#pragma once

#include <string>

namespace kevo::runner {

// Installs the filter for this process and every thread it starts later.
// Returns an empty string on success, else why it could not (the runner then
// goes on without: limits and the process-group kill still apply).
std::string install_syscall_filter();

}  // namespace kevo::runner
