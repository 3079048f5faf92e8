// The runner's system-call filter: once installed, the process can no longer
// start processes, exec programs, open sockets, trace or signal other
// processes. Threads (OpenMP) and memory calls stay allowed.
#pragma once

#include <string>
#include <vector>

namespace kevo::runner {

// Installs the filter for this process and every thread it starts later.
// Returns an empty string on success, else why it could not (the runner then
// goes on without: limits and the process-group kill still apply).
std::string install_syscall_filter();

// Confines the file system for this process and every thread it starts later
// (Landlock): it may read, and run code from, the paths in `readable` (each a
// directory with everything beneath it, or a file) and nothing else; it may
// write, create, remove or rename nothing, and (where the kernel's Landlock
// knows them) bind or connect no TCP port and signal no process outside its
// own. Files already open stay usable. Returns an empty string on success,
// else why not (the runner then goes on without: the other layers apply).
std::string confine_file_system(const std::vector<std::string>& readable);

// What a kevo-runner of the cpu target needs to read: the system's libraries
// and loader cache, the time zone, the kernel's CPU and memory figures, this
// process's own /proc directory, CPU topology, /dev/null and friends, and
// `artifact` (the candidate).
std::vector<std::string> runner_readable_paths(const std::string& artifact);

}  // namespace kevo::runner
