#include "targets/runner/counters.h"

#include <dirent.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace kevo::runner {

namespace {

struct Event {
  const char* name;
  uint32_t type;
  uint64_t config;
};

constexpr Event kEvents[] = {
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {"cache_references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
    {"cache_misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
    {"branch_misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
    // A software event, counted everywhere: how often the timed threads were
    // switched out (contention, or a kernel that sleeps).
    {"context_switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
};

int open_event(const Event& e, pid_t tid) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = e.type;
  attr.config = e.config;
  // The kernel's own work is not the candidate's (and counting it needs
  // privileges); a context switch happens in the kernel by definition.
  attr.exclude_kernel = e.type == PERF_TYPE_HARDWARE;
  attr.exclude_hv = 1;
  attr.inherit = 1;  // threads the runner starts later count too
  attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  return static_cast<int>(syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC));
}

std::vector<pid_t> threads_of(pid_t pid) {
  std::vector<pid_t> out;
  DIR* d = opendir(fmt::format("/proc/{}/task", pid).c_str());
  if (!d) return out;
  while (const dirent* e = readdir(d)) {
    char* end = nullptr;
    const long tid = std::strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && tid > 0) out.push_back(static_cast<pid_t>(tid));
  }
  closedir(d);
  return out;
}

}  // namespace

ThreadCounters::~ThreadCounters() {
  for (const Fd& f : fds_) close(f.fd);
}

ThreadCounters::ThreadCounters(ThreadCounters&& other) noexcept
    : fds_(std::move(other.fds_)), why_not_(std::move(other.why_not_)) {
  other.fds_.clear();
}

ThreadCounters& ThreadCounters::operator=(ThreadCounters&& other) noexcept {
  if (this != &other) {
    for (const Fd& f : fds_) close(f.fd);
    fds_ = std::move(other.fds_);
    why_not_ = std::move(other.why_not_);
    other.fds_.clear();
  }
  return *this;
}

ThreadCounters ThreadCounters::open(pid_t pid) {
  ThreadCounters c;
  std::string refused;
  bool hardware = false;
  for (pid_t tid : threads_of(pid)) {
    for (const Event& e : kEvents) {
      const int fd = open_event(e, tid);
      if (fd < 0) {
        if (refused.empty() && e.type == PERF_TYPE_HARDWARE)
          refused = fmt::format("perf_event_open({}): {}", e.name, std::strerror(errno));
        continue;
      }
      hardware |= e.type == PERF_TYPE_HARDWARE;
      c.fds_.push_back({e.name, fd});
    }
  }
  if (!hardware)
    c.why_not_ = refused.empty() ? "no thread of the runner could be counted"
                                 : "this machine gives no CPU hardware counters (" + refused + ")";
  return c;
}

std::map<std::string, double> ThreadCounters::read() const {
  std::map<std::string, double> sum;
  for (const Fd& f : fds_) {
    uint64_t v[3] = {0, 0, 0};  // value, time enabled, time running
    if (::read(f.fd, v, sizeof v) != static_cast<ssize_t>(sizeof v)) continue;
    if (v[2] == 0) continue;  // never scheduled on the PMU
    // Multiplexed with other events: scaled to the whole time enabled.
    sum[f.event] += static_cast<double>(v[0]) * static_cast<double>(v[1]) / static_cast<double>(v[2]);
  }
  return sum;
}

}  // namespace kevo::runner
