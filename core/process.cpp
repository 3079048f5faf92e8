#include "core/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "core/error.h"

extern char** environ;

namespace kevo {

void CappedBuffer::append(const char* data, size_t n) {
  size_t take = std::min(n, cap_ - std::min(cap_, text_.size()));
  text_.append(data, take);
  dropped_ += n - take;
}

std::string CappedBuffer::summary() const {
  if (!dropped_) return text_;
  return text_ + fmt::format("\n[... {} more bytes dropped]", dropped_);
}

std::string signal_description(int sig) {
  const char* name = sigabbrev_np(sig);
  const char* desc = sigdescr_np(sig);
  return fmt::format("SIG{} ({})", name ? name : std::to_string(sig).c_str(),
                     desc ? desc : "unknown signal");
}

std::string hostname() {
  char buf[256] = {};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

namespace {

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

void set_limit(int resource, rlim_t value) {
  struct rlimit rl = {value, value};
  setrlimit(resource, &rl);
}

[[noreturn]] void child_fail(int report_fd, const char* what) {
  int e = errno;
  (void)!write(report_fd, &e, sizeof(e));
  (void)!write(report_fd, what, strlen(what));
  _exit(127);
}

}  // namespace

ChildProcess::ChildProcess(const SpawnOptions& options) {
  KEVO_ASSERT(!options.argv.empty());
  int pin[2], pout[2], perr[2], report[2];
  if (pipe2(pin, O_CLOEXEC) || pipe2(pout, O_CLOEXEC) || pipe2(perr, O_CLOEXEC) ||
      pipe2(report, O_CLOEXEC))
    throw UserError(fmt::format("cannot create pipes: {}", strerror(errno)));

  // Everything the child needs is built before fork: after it, only
  // async-signal-safe calls (the parent may have threads).
  std::vector<char*> argv;
  for (const auto& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_store;
  // A variable given in options.env replaces the inherited one of that name
  // (getenv and execvpe take the first: a duplicate would be ignored).
  auto given = [&](const char* e) {
    const char* eq = std::strchr(e, '=');
    const size_t n = eq ? static_cast<size_t>(eq - e) : std::strlen(e);
    for (const auto& o : options.env)
      if (o.size() > n && o[n] == '=' && o.compare(0, n, e, n) == 0) return true;
    return false;
  };
  if (options.inherit_env)
    for (char** e = environ; *e; ++e)
      if (!given(*e)) env_store.emplace_back(*e);
  for (const auto& e : options.env) env_store.push_back(e);
  std::vector<char*> envp;
  for (auto& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string cwd = options.cwd.string();
  const ProcessLimits lim = options.limits;
  const std::vector<int> extra = options.extra_fds;
  // Where each extra fd is parked first, so dup2 into 3, 4, ... cannot clobber
  // a source that happens to be one of those numbers.
  const int park_base = 100 + static_cast<int>(extra.size());
  pid_t parent = getpid();

  pid_t pid = fork();
  if (pid < 0) throw UserError(fmt::format("cannot fork: {}", strerror(errno)));
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(126);  // the parent died before prctl took effect
    // Default signal dispositions and an empty mask for the new program.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int s = 1; s < NSIG; ++s) signal(s, SIG_DFL);
    if (dup2(pin[0], 0) < 0 || dup2(pout[1], 1) < 0 || dup2(perr[1], 2) < 0)
      child_fail(report[1], "dup2");
    for (size_t i = 0; i < extra.size(); ++i)
      if (dup2(extra[i], park_base + static_cast<int>(i)) < 0) child_fail(report[1], "dup2");
    for (size_t i = 0; i < extra.size(); ++i)
      if (dup2(park_base + static_cast<int>(i), 3 + static_cast<int>(i)) < 0)
        child_fail(report[1], "dup2");
    // Close everything else except the error-report pipe (close-on-exec).
    const int keep_until = 3 + static_cast<int>(extra.size());
    for (int fd = keep_until; fd < 1024; ++fd)
      if (fd != report[1]) close(fd);
    syscall(SYS_close_range, 1024u, ~0u, 0u);
    if (!lim.core_dumps) set_limit(RLIMIT_CORE, 0);
    if (lim.cpu_s > 0) set_limit(RLIMIT_CPU, static_cast<rlim_t>(lim.cpu_s + 1));
    if (lim.address_space_bytes > 0)
      set_limit(RLIMIT_AS, static_cast<rlim_t>(lim.address_space_bytes));
    if (lim.file_size_bytes >= 0) set_limit(RLIMIT_FSIZE, static_cast<rlim_t>(lim.file_size_bytes));
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) child_fail(report[1], "chdir");
    execvpe(argv[0], argv.data(), envp.data());
    child_fail(report[1], "exec");
  }
  pid_ = pid;
  setpgid(pid, pid);  // also from the parent, so kill_group works at once
  close(pin[0]);
  close(pout[1]);
  close(perr[1]);
  close(report[1]);
  in_ = pin[1];
  out_ = pout[0];
  err_ = perr[0];
  set_nonblocking(out_);
  set_nonblocking(err_);
  // The report pipe closes on a successful exec; a message means it failed.
  char buf[256];
  ssize_t n;
  do {
    n = read(report[0], buf, sizeof(buf));
  } while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n > 0) {
    int e = 0;
    std::memcpy(&e, buf, sizeof(e));
    std::string what(buf + sizeof(int), static_cast<size_t>(n) - sizeof(int));
    wait();
    throw UserError(fmt::format("cannot start '{}': {} failed: {}", options.argv[0], what,
                                strerror(e)));
  }
}

ChildProcess::~ChildProcess() {
  if (!reaped_ && pid_ > 0) {
    kill_group();
    wait();
  } else if (pid_ > 0) {
    kill(-pid_, SIGKILL);  // anything the child left behind in its group
  }
  for (int fd : {in_, out_, err_})
    if (fd >= 0) close(fd);
}

void ChildProcess::close_stdin() {
  if (in_ >= 0) close(in_);
  in_ = -1;
}

bool ChildProcess::drain(CappedBuffer& out, CappedBuffer& err) {
  char buf[65536];
  bool open = false;
  for (auto [fd, sink] : {std::pair{&out_, &out}, std::pair{&err_, &err}}) {
    if (*fd < 0) continue;
    for (;;) {
      ssize_t n = read(*fd, buf, sizeof(buf));
      if (n > 0) {
        sink->append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n == 0) {
        close(*fd);
        *fd = -1;
      } else if (errno == EINTR) {
        continue;
      }
      break;
    }
    open = open || *fd >= 0;
  }
  return open;
}

void ChildProcess::kill_group() {
  if (pid_ > 0) kill(-pid_, SIGKILL);
}

bool ChildProcess::try_wait() {
  if (reaped_) return true;
  int st;
  pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    reaped_ = true;
    status_ = st;
  }
  return reaped_;
}

void ChildProcess::wait() {
  while (!reaped_) {
    int st;
    pid_t r = waitpid(pid_, &st, 0);
    if (r == pid_) {
      reaped_ = true;
      status_ = st;
    } else if (r < 0 && errno != EINTR) {
      reaped_ = true;  // not our child any more; nothing to reap
      status_ = 0;
    }
  }
}

std::optional<int> ChildProcess::exit_code() const {
  if (reaped_ && WIFEXITED(status_)) return WEXITSTATUS(status_);
  return std::nullopt;
}

int ChildProcess::term_signal() const {
  return reaped_ && WIFSIGNALED(status_) ? WTERMSIG(status_) : 0;
}

ProcessResult run_process(const SpawnOptions& options, double timeout_s, size_t output_cap) {
  const double start = monotonic_seconds();
  ChildProcess child(options);
  child.close_stdin();
  CappedBuffer out(output_cap), err(output_cap);
  ProcessResult r;
  bool open = true;
  while (open) {
    double left = start + timeout_s - monotonic_seconds();
    if (left <= 0) {
      r.timed_out = true;
      child.kill_group();
      break;
    }
    struct pollfd fds[2] = {{child.stdout_fd(), POLLIN, 0}, {child.stderr_fd(), POLLIN, 0}};
    int ms = static_cast<int>(std::min(left, 0.5) * 1000) + 1;
    poll(fds, 2, ms);
    open = child.drain(out, err);
  }
  if (r.timed_out) {
    child.wait();
  } else {
    // Output closed; the child may still be running (it closed its pipes).
    while (!child.try_wait()) {
      if (monotonic_seconds() > start + timeout_s) {
        r.timed_out = true;
        child.kill_group();
        child.wait();
        break;
      }
      usleep(2000);
    }
  }
  child.drain(out, err);
  r.exit_code = r.timed_out ? std::nullopt : child.exit_code();
  r.signal = r.timed_out ? 0 : child.term_signal();
  r.out = out.summary();
  r.err = err.summary();
  r.seconds = monotonic_seconds() - start;
  return r;
}

}  // namespace kevo
