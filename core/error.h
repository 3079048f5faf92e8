// Errors a person can act on (bad config, missing file, unknown name), kept
// apart from candidate failures (data in EvalResult) and from bugs (asserts).
#pragma once

#include <stdexcept>
#include <string>

namespace kevo {

// A user's mistake. The CLI catches it once and prints its message on one line.
class UserError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A bad value in a config file, named by its JSON path ("$.timing.min_time_ms").
class ConfigError : public UserError {
 public:
  ConfigError(const std::string& path, const std::string& what)
      : UserError(path + ": " + what), path_(path) {}
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

[[noreturn]] void assertion_failed(const char* expr, const char* file, int line);

}  // namespace kevo

// A broken invariant inside kevo (a bug, never a user's or a candidate's fault).
#define KEVO_ASSERT(cond) \
  ((cond) ? (void)0 : ::kevo::assertion_failed(#cond, __FILE__, __LINE__))
