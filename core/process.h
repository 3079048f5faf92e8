// Child processes with limits: fork+exec in a new process group, resource
// limits set before exec, pipes for stdin/stdout/stderr, output capped, and
// the whole group killed on timeout. Used for compilers and kernel runners.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"

namespace kevo {

struct ProcessLimits {
  double cpu_s = 0;                 // RLIMIT_CPU, 0: unlimited
  int64_t address_space_bytes = 0;  // RLIMIT_AS, 0: unlimited
  int64_t file_size_bytes = -1;     // RLIMIT_FSIZE, -1: unlimited
  bool core_dumps = false;          // RLIMIT_CORE stays 0 unless true
};

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] is the program (searched in PATH)
  std::filesystem::path cwd;      // empty: inherit
  ProcessLimits limits;
  // Parent descriptors to hand to the child as descriptors 3, 4, ... in order.
  std::vector<int> extra_fds;
  std::vector<std::string> env;  // extra NAME=VALUE entries
  // false: the child sees `env` alone, nothing of kevo's own environment (a
  // runner, whose candidate must not read the user's keys and tokens).
  bool inherit_env = true;
};

// Text kept up to a cap; what is dropped beyond it is counted.
class CappedBuffer {
 public:
  explicit CappedBuffer(size_t cap = 64 * 1024) : cap_(cap) {}
  void append(const char* data, size_t n);
  const std::string& text() const { return text_; }
  size_t dropped() const { return dropped_; }
  // The text with a note of what was dropped.
  std::string summary() const;

 private:
  size_t cap_;
  std::string text_;
  size_t dropped_ = 0;
};

class ChildProcess {
 public:
  // Throws UserError when the program cannot be started (not found, no fork).
  explicit ChildProcess(const SpawnOptions& options);
  ~ChildProcess();  // kills the group and reaps the child if still running
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  int stdin_fd() const { return in_; }
  int stdout_fd() const { return out_; }
  int stderr_fd() const { return err_; }
  void close_stdin();

  // Reads what is available on stdout/stderr into the buffers (non-blocking).
  // Returns false once both are at end of file.
  bool drain(CappedBuffer& out, CappedBuffer& err);

  // SIGKILL to the whole process group (the child and anything it started).
  void kill_group();
  // Non-blocking reap; true when the child has exited (status then valid).
  bool try_wait();
  // Blocking reap.
  void wait();
  bool exited() const { return reaped_; }
  // Exit code when it exited normally, else nullopt.
  std::optional<int> exit_code() const;
  // The signal that ended it, else 0.
  int term_signal() const;

 private:
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1, err_ = -1;
  bool reaped_ = false;
  int status_ = 0;
};

struct ProcessResult {
  std::optional<int> exit_code;  // empty when killed by a signal or timed out
  int signal = 0;
  bool timed_out = false;
  std::string out, err;  // capped, with a note of what was dropped
  double seconds = 0;
};

// Runs to completion or `timeout_s` (then the group is killed).
ProcessResult run_process(const SpawnOptions& options, double timeout_s,
                          size_t output_cap = 64 * 1024);

// "SIGSEGV (segmentation fault)"-style name of a signal.
std::string signal_description(int sig);

// This machine's name (gethostname), as runs and roofs record it.
std::string hostname();

}  // namespace kevo
