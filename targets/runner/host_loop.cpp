#include "targets/runner/host_loop.h"
#include "targets/runner/counters.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>
#include <string_view>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/log.h"
#include "targets/runner/protocol.h"
#include "targets/runner/sandbox.h"

extern char** environ;

namespace kevo {

EventReader::~EventReader() {
  if (fd_ >= 0) close(fd_);
}

void EventReader::read_available(std::vector<std::string>& lines) {
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd_, buf, sizeof(buf));
    if (n > 0) {
      if (partial_.size() < kMaxLine) partial_.append(buf, static_cast<size_t>(n));
      size_t pos;
      while ((pos = partial_.find('\n')) != std::string::npos) {
        lines.push_back(partial_.substr(0, pos));
        partial_.erase(0, pos + 1);
      }
      continue;
    }
    if (n == 0) {
      close(fd_);
      fd_ = -1;
    } else if (errno == EINTR) {
      continue;
    }
    return;
  }
}

void write_line(int fd, const std::string& line) {
  std::string s = line + "\n";
  const char* p = s.data();
  size_t n = s.size();
  while (n > 0 && fd >= 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;  // the runner is gone; its exit tells the rest
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

const char* kernel_rc_name(int rc) {
  switch (rc) {
    case 1:
      return "KEVO_ERR_UNSUPPORTED";
    case 2:
      return "KEVO_ERR_ARGS";
    case 3:
      return "KEVO_ERR_RUNTIME";
    case 4:
      return "KEVO_ERR_LAUNCH: the device cannot launch this configuration";
    default:
      return "an error";
  }
}

namespace runner {

std::vector<std::string> runner_environment() {
  static const char* const kNames[] = {"PATH", "LANG", "TZ", "TMPDIR", "LD_LIBRARY_PATH",
                                       "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
                                       "CUDA_MODULE_LOADING", "KEVO_LOG", "KEVO_CUDA_FLUSH",
                                       "KEVO_CUDA_COVER_US", "KEVO_CUDA_NO_FILTER"};
  static const char* const kPrefixes[] = {"LC_", "OMP_", "GOMP_", "KMP_", "CUDA_CACHE_", "NVIDIA_"};
  std::set<std::string> extra;
  if (const char* names = std::getenv("KEVO_RUNNER_ENV")) {
    std::string list = names;
    size_t pos = 0;
    while (pos <= list.size()) {
      size_t end = list.find(',', pos);
      if (end == std::string::npos) end = list.size();
      std::string name = list.substr(pos, end - pos);
      while (!name.empty() && name.back() == ' ') name.pop_back();
      while (!name.empty() && name.front() == ' ') name.erase(0, 1);
      if (!name.empty()) extra.insert(name);
      pos = end + 1;
    }
  }
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string_view entry(*e);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string name(entry.substr(0, eq));
    bool keep = extra.count(name) > 0;
    for (const char* n : kNames) keep = keep || name == n;
    for (const char* p : kPrefixes) keep = keep || name.rfind(p, 0) == 0;
    if (keep) env.emplace_back(entry);
  }
  return env;
}

ino_t inode_of(int fd) {
  struct stat st;
  return fd >= 0 && fstat(fd, &st) == 0 ? st.st_ino : 0;
}

std::string replaced_descriptors(pid_t pid, const std::vector<HeldPipe>& expected) {
  std::vector<std::string> changed;
  for (const HeldPipe& h : expected) {
    const std::string link = fmt::format("/proc/{}/fd/{}", pid, h.fd);
    char target[256];
    const ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
    if (n < 0) {
      // Gone with the process, or closed by it (the runner then cannot
      // report; its silence tells the rest): only a process that still
      // runs without the descriptor counts.
      if (errno == ENOENT && access(fmt::format("/proc/{}/fd/0", pid).c_str(), F_OK) == 0 &&
          h.fd != 0)
        changed.push_back(fmt::format("descriptor {} ({}) is closed", h.fd, h.what));
      continue;
    }
    target[n] = 0;
    const std::string want = fmt::format("pipe:[{}]", h.inode);
    if (want != target)
      changed.push_back(fmt::format("descriptor {} ({}) is now {}", h.fd, h.what, target));
  }
  return fmt::format("{}", fmt::join(changed, "; "));
}

EventPipe make_event_pipe() {
  int ev[2];
  if (pipe2(ev, O_CLOEXEC) != 0)
    throw UserError(fmt::format("cannot create a pipe: {}", strerror(errno)));
  fcntl(ev[0], F_SETFL, fcntl(ev[0], F_GETFL) | O_NONBLOCK);
  return {ev[0], ev[1]};
}

double runqueue_wait_s(pid_t pid) {
  // /proc/PID/schedstat: time on a CPU, time waiting on a run queue (both in
  // ns), time slices; of the thread that is the process (the runner's main
  // thread, which takes the samples). Kept by the kernel: the candidate
  // cannot rewrite it.
  std::FILE* f = std::fopen(fmt::format("/proc/{}/schedstat", pid).c_str(), "r");
  if (!f) return -1;
  unsigned long long on_cpu = 0, waiting = 0;
  const int n = std::fscanf(f, "%llu %llu", &on_cpu, &waiting);
  std::fclose(f);
  return n == 2 ? static_cast<double>(waiting) * 1e-9 : -1;
}

LoopEnd pump_events(ChildProcess& child, EventReader& events, CappedBuffer& so, CappedBuffer& se,
                    double hard, double& deadline, const RawEventFn& on_event,
                    const std::function<bool()>& on_wake, double max_wait_s) {
  std::vector<std::string> lines;
  for (;;) {
    // A closed pipe is seen before a passed deadline.
    if (!events.open()) return LoopEnd::closed;
    const double now = monotonic_seconds();
    if (now >= std::min(deadline, hard))
      return now >= hard ? LoopEnd::hard_limit : LoopEnd::no_progress;
    struct pollfd fds[3] = {
        {events.fd(), POLLIN, 0}, {child.stdout_fd(), POLLIN, 0}, {child.stderr_fd(), POLLIN, 0}};
    const int ms =
        static_cast<int>(std::min(std::min(deadline, hard) - now, max_wait_s) * 1000) + 1;
    poll(fds, 3, ms);
    if (on_wake && on_wake()) return LoopEnd::settled;
    child.drain(so, se);
    lines.clear();
    events.read_available(lines);
    for (const auto& line : lines) {
      auto e = nlohmann::json::parse(line, nullptr, false);
      if (e.is_discarded()) continue;  // not ours: the kernel wrote to descriptor 3
      if (on_event(e, deadline)) return LoopEnd::settled;
    }
  }
}

RunOutcome drive_job(ChildProcess& child, EventReader& events, CappedBuffer& so, CappedBuffer& se,
                     const JobLoop& loop, const JobEventFn& on_event) {
  RunOutcome out;
  out.kind = RunOutcome::crashed;
  out.detail = "the runner exited without reporting";
  double wait_at_go = -1;  // the runner's run-queue wait when kevo said "go"
  ThreadCounters counters;  // from "go" (loop.count_cpu)
  // An event kevo cannot read (a field of the wrong type: the candidate's
  // process wrote it) ends the job as a crash, never kevo.
  std::function<bool(const nlohmann::json&, double&)> decode_event;
  auto decode = [&](const nlohmann::json& e, double& deadline) -> bool {
    try {
      return decode_event(e, deadline);
    } catch (const nlohmann::json::exception&) {
      out.kind = RunOutcome::crashed;
      out.detail = fmt::format("the runner sent an event kevo cannot read: {:.200}", e.dump());
      return true;
    }
  };
  decode_event = [&](const nlohmann::json& e, double& deadline) -> bool {
    const std::string kind = e.value("event", "");
    if (kind == "ready") {
      deadline = monotonic_seconds() + loop.timeout_s;
    } else if (kind == "signal") {
      const int sig = e.value("signal", 0);
      out.kind = sig == SIGXCPU ? RunOutcome::timed_out : RunOutcome::crashed;
      out.detail = signal_description(sig);
      if (e.contains("where"))
        out.detail += fmt::format(" at {} in {}", e.value("address", "?"), e.value("where", "?"));
      return true;
    } else if (kind == "load_error" || kind == "setup_error") {
      out.kind = RunOutcome::crashed;
      out.detail = fmt::format("{}: {}", kind == "load_error" ? loop.load_error : loop.setup_error,
                               e.value("what", std::string("?")));
      return true;
    } else if (kind == "note") {
      log_debug("runner: {}", e.value("what", std::string()));
      // A layer of containment the runner did not get: said where the user reads.
      if (const std::string missing = runner::missing_containment_text(e); !missing.empty())
        se.append(missing.data(), missing.size());
    } else if (kind == "done") {
      out.kind = RunOutcome::finished;
      out.detail.clear();
      return true;
    } else {
      if (kind == "timing" && wait_at_go >= 0) {
        const double wait = runqueue_wait_s(child.pid());
        if (wait >= wait_at_go) out.timing_cpu_wait_s = wait - wait_at_go;
        if (loop.count_cpu) {
          out.cpu_counted = true;
          out.cpu_counters = counters.read();
          out.cpu_counters_note = counters.why_not();
          counters = ThreadCounters();
        }
      }
      double timeout_s = loop.timeout_s;
      const Reply reply = on_event(e, out, timeout_s);
      if (reply == Reply::ignore) return false;
      deadline = monotonic_seconds() + timeout_s;
      if (kind == "check")
        write_line(child.stdin_fd(), reply == Reply::settled ? "stop" : "continue");
      if (kind == "timing_start" && loop.timing_go && reply == Reply::go_on) {
        if (out.timing_go_at > 0) {  // one "go" per job: a second would be read as an answer
          out.kind = RunOutcome::crashed;
          out.detail = "the runner started timing twice";
          return true;
        }
        wait_at_go = runqueue_wait_s(child.pid());
        if (loop.count_cpu) counters = ThreadCounters::open(child.pid());
        out.timing_go_at = monotonic_seconds();
        write_line(child.stdin_fd(), "go");
      }
      return reply == Reply::settled;
    }
    return false;
  };
  auto watch = [&]() -> bool {
    const std::string why = replaced_descriptors(child.pid(), loop.held);
    if (why.empty()) return false;
    out.kind = RunOutcome::crashed;
    out.detail = "the candidate tampered with the runner's pipes to kevo: " + why;
    return true;
  };
  double deadline = loop.first_deadline;
  const LoopEnd end = pump_events(child, events, so, se, loop.start + loop.max_total_s, deadline,
                                  decode, loop.held.empty() ? std::function<bool()>{} : watch,
                                  loop.held.empty() ? 0.25 : loop.watch_s);
  if (end == LoopEnd::hard_limit) {
    out.kind = RunOutcome::timed_out;
    out.detail = fmt::format("killed after the {:.0f} s limit per candidate", loop.max_total_s);
  } else if (end == LoopEnd::no_progress) {
    // How long since the last step's deadline was set (about timeout_s).
    out.kind = RunOutcome::timed_out;
    out.detail = fmt::format("no progress within {:.1f} s",
                             monotonic_seconds() - (deadline - loop.timeout_s));
  }
  child.drain(so, se);
  if (loop.finish) loop.finish(end, out);
  out.stdout_text = so.summary();
  out.stderr_text = se.summary();
  out.seconds = monotonic_seconds() - loop.start;
  return out;
}

JobEventFn kernel_events(const KernelJob& job) {
  return [job](const nlohmann::json& e, RunOutcome& out, double& timeout_s) -> Reply {
    const Task& task = *job.task;
    const std::vector<RunPhase>& phases = *job.phases;
    const std::string kind = e.value("event", "");
    const size_t ph = e.value("phase", size_t{0});
    if (ph >= phases.size()) return Reply::ignore;
    const RunPhase& phase = phases[ph];
    if (kind == "check") {
      CheckOutputs outputs = job.outputs(ph, e.value("bytes", size_t{0}));
      if (!outputs.error.empty()) {
        out.kind = RunOutcome::crashed;
        out.detail = outputs.error;
        return Reply::settled;
      }
      const size_t n_in = task.op->n_inputs();
      const auto& shapes = phase.shapes.shapes;
      auto offsets = output_offsets(n_in, task.dtypes, shapes, nullptr);
      std::vector<ConstTensorView> views;
      for (size_t i = 0; i < offsets.size(); ++i)
        views.emplace_back(task.dtypes[n_in + i], shapes[n_in + i], outputs.base + offsets[i]);
      CheckReport report = job.check(ph, views);
      outputs = {};  // the check is done with them
      if (report.label.empty()) report.label = phase.label;
      out.checks.push_back(report);
      if (!report.passed) {
        out.kind = RunOutcome::check_failed;
        out.detail = fmt::format("wrong result on {}", phase.label);
        return Reply::settled;
      }
      if (job.progress && ph + 1 < phases.size())
        job.progress(fmt::format("{} {}",
                                 phases[ph + 1].kind == RunPhase::time ? "timing" : "checking",
                                 phases[ph + 1].label));
    } else if (kind == "timing_start") {
      timeout_s = job.timing_timeout(e, phase);
    } else if (kind == "timing") {
      if (out.timing_go_at > 0) out.timing_wall_s = monotonic_seconds() - out.timing_go_at;
      out.samples_s = e.value("samples", std::vector<double>{});
      out.calls_per_sample = e.value("calls_per_sample", int64_t{1});
      bool credible = out.calls_per_sample >= 1;
      for (double t : out.samples_s) credible = credible && std::isfinite(t) && t > 0;
      if (!credible) {
        out.kind = RunOutcome::crashed;
        out.detail = fmt::format("the runner reported timing samples that cannot be times on {}",
                                 phase.label);
        out.samples_s.clear();
        return Reply::settled;
      }
      out.warmup_calls = e.value("warmup_calls", int64_t{0});
      out.after_end_s = e.value("after_end_s", std::vector<double>{});
      out.fenced_s = e.value("fenced_s", std::vector<double>{});
      out.host_call_s = e.value("host_call_s", 0.0);
      out.machine = machine_metrics(e);
    } else if (kind == "kernel_error") {
      const int rc = e.value("rc", 0);
      out.kind = RunOutcome::kernel_error;
      out.kernel_rc = rc;
      out.detail =
          fmt::format("the kernel returned {} ({}) on {}", rc, kernel_rc_name(rc), phase.label);
      return Reply::settled;
    } else if (kind == "overrun") {
      out.kind = RunOutcome::crashed;
      out.detail = fmt::format("wrote past the end of output '{}'", e.value("tensor", "?"));
      if (job.overrun_offset)
        out.detail += fmt::format(" ({} bytes after its last element)", e.value("offset", 0L));
      out.detail += " on " + phase.label;
      return Reply::settled;
    } else {
      return Reply::ignore;
    }
    return Reply::go_on;
  };
}

}  // namespace runner

}  // namespace kevo
