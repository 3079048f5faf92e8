// The CPU's performance counters on a runner, read by kevo from outside it
// (perf_event_open on each of the runner's threads, user space only): the
// candidate shares the runner's process but cannot rewrite what the kernel
// counts. Opened when kevo says "go", read at the timing event: the counts
// of the timed calls. Where the machine gives no counters (a container, a
// VM without a virtual PMU, perf_event_paranoid), why_not() says so.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace kevo::runner {

class ThreadCounters {
 public:
  ThreadCounters() = default;
  ~ThreadCounters();
  ThreadCounters(ThreadCounters&& other) noexcept;
  ThreadCounters& operator=(ThreadCounters&& other) noexcept;
  ThreadCounters(const ThreadCounters&) = delete;
  ThreadCounters& operator=(const ThreadCounters&) = delete;

  // Opens and starts the counters on every thread of `pid` (and the threads
  // they start later). Those the machine refuses are left out.
  static ThreadCounters open(pid_t pid);
  // Per event ("cycles", "instructions", "cache_references", "cache_misses",
  // "branch_misses", "context_switches"), summed over the threads and scaled
  // where the kernel multiplexed them; only the events that were counted.
  std::map<std::string, double> read() const;
  // Why no hardware event could be opened ("" when some were).
  const std::string& why_not() const { return why_not_; }

 private:
  struct Fd {
    std::string event;
    int fd = -1;
  };
  std::vector<Fd> fds_;
  std::string why_not_;
};

}  // namespace kevo::runner
