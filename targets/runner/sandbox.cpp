#include "targets/runner/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace kevo::runner {

// ---- the system-call filter ---------------------------------------------------
//
// Written with libseccomp, which resolves the names below for the
// architecture it is built for (x86_64, aarch64, ...): a name this
// architecture lacks (fork, open and stat on aarch64) is skipped. A call from
// another architecture's convention (int 0x80, x32 on x86_64) is refused.

namespace {

// Namespace flags a thread's clone must not carry.
constexpr uint64_t kCloneNamespaces = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS |
                                      CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET;
// Flags of open/openat that would write, create or truncate a file.
constexpr uint64_t kOpenForWriting = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND;

// What the cpu runner may call beyond the calls with rules of their own in
// install_cpu_rules. glibc, the loader and libgomp, and the runner itself:
constexpr const char* kCpuAllowed[] = {
    // memory: malloc, the loader's mappings, guard pages, huge-page advice
    "brk", "mmap", "munmap", "mremap", "mprotect", "madvise",
    // reading what Landlock lets it read (the loader, /proc and /sys figures);
    // writing only to descriptors it holds (events, stdout, stderr)
    "read", "pread64", "readv", "write", "writev", "lseek", "close", "fstat", "newfstatat",
    "stat", "lstat", "statx", "access", "faccessat", "faccessat2", "readlink", "readlinkat",
    "getdents64", "fcntl", "dup", "dup2", "dup3",
    // threads (libgomp): clone has its rule; waiting, yielding, binding, TLS
    "futex", "set_robust_list", "rseq", "set_tid_address", "sched_yield", "sched_getaffinity",
    "sched_setaffinity",  // OMP_PROC_BIND; at worst another process of this user is moved
    "getpid", "gettid", "getuid", "geteuid", "getgid", "getegid",
    // signals: the crash handler, abort() (kill and tgkill have rules)
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack", "restart_syscall",
    // time and the machine (the vDSO answers most clock calls without a call)
    "clock_gettime", "clock_getres", "gettimeofday", "time", "nanosleep", "clock_nanosleep",
    "getrusage", "times", "uname", "sysinfo", "getrandom", "getcpu",
    "exit", "exit_group",
};

// What the cuda runner may not call (it may call anything else). Beyond
// these, rules refuse processes, sockets other than AF_UNIX, signals to other
// processes and raising its own limits (install_cuda_rules).
constexpr const char* kCudaDenied[] = {
    "fork", "vfork", "execve", "execveat",
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_open", "pidfd_getfd",
    "pidfd_send_signal", "tkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "open_tree", "move_mount",
    "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "name_to_handle_at",
    "open_by_handle_at",
    "bpf", "keyctl", "add_key", "request_key", "perf_event_open", "userfaultfd", "personality",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
    "swapon", "swapoff", "acct", "syslog", "quotactl", "lookup_dcookie", "iopl", "ioperm",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "setrlimit",
};

class Filter {
 public:
  explicit Filter(uint32_t default_action) : ctx_(seccomp_init(default_action)) {}
  Filter(const Filter&) = delete;
  Filter& operator=(const Filter&) = delete;
  ~Filter() {
    if (ctx_) seccomp_release(ctx_);
  }
  scmp_filter_ctx get() const { return ctx_; }

  // Adds a rule for `name` (skipped where this architecture has no such
  // call); the first failure is kept for error().
  void rule(uint32_t action, const char* name, std::initializer_list<scmp_arg_cmp> args = {}) {
    const int nr = seccomp_syscall_resolve_name(name);
    if (nr < 0) return;  // __NR_SCMP_ERROR, or a call this architecture does not have
    const int rc = seccomp_rule_add_array(ctx_, action, nr, static_cast<unsigned>(args.size()),
                                          args.size() ? args.begin() : nullptr);
    if (rc < 0 && error_.empty()) error_ = std::string("seccomp_rule_add ") + name + ": " + strerror(-rc);
  }
  const std::string& error() const { return error_; }

 private:
  scmp_filter_ctx ctx_;
  std::string error_;
};

const uint32_t kEperm = SCMP_ACT_ERRNO(EPERM);

void install_cpu_rules(Filter& f, uint64_t self) {
  for (const char* name : kCpuAllowed) f.rule(SCMP_ACT_ALLOW, name);
  // Files are opened for reading only (Landlock, where it is, also confines
  // which); a write, a creation or a truncation is refused.
  f.rule(SCMP_ACT_ALLOW, "openat", {SCMP_A2(SCMP_CMP_MASKED_EQ, kOpenForWriting, 0)});
  f.rule(SCMP_ACT_ALLOW, "open", {SCMP_A1(SCMP_CMP_MASKED_EQ, kOpenForWriting, 0)});
  // isatty() (stdio), nothing else of ioctl.
  f.rule(SCMP_ACT_ALLOW, "ioctl", {SCMP_A1(SCMP_CMP_EQ, TCGETS)});
  // Threads, not processes: a clone without CLONE_THREAD, or with a new
  // namespace, is refused. clone3 hides its flags behind a pointer: it "does
  // not exist", and glibc falls back to clone.
  f.rule(SCMP_ACT_ALLOW, "clone",
         {SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD | kCloneNamespaces, CLONE_THREAD)});
  f.rule(SCMP_ACT_ERRNO(ENOSYS), "clone3");
  // Signals to itself only (abort(), raise()).
  f.rule(SCMP_ACT_ALLOW, "kill", {SCMP_A0(SCMP_CMP_EQ, self)});
  f.rule(SCMP_ACT_ALLOW, "tgkill", {SCMP_A0(SCMP_CMP_EQ, self)});
  // Its own limits, read (getrlimit); never raised (as root it could).
  f.rule(SCMP_ACT_ALLOW, "prlimit64", {SCMP_A0(SCMP_CMP_EQ, 0), SCMP_A2(SCMP_CMP_EQ, 0)});
}

bool starts_programs(const char* name) {
  for (const char* p : {"fork", "vfork", "execve", "execveat"})
    if (std::strcmp(name, p) == 0) return true;
  return false;
}

// `processes`: whether it may start processes and programs (triton).
void install_cuda_rules(Filter& f, uint64_t self, bool processes) {
  for (const char* name : kCudaDenied)
    if (!processes || !starts_programs(name)) f.rule(kEperm, name);
  if (!processes) f.rule(kEperm, "clone", {SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0)});
  for (uint64_t ns : {uint64_t{CLONE_NEWNS}, uint64_t{CLONE_NEWCGROUP}, uint64_t{CLONE_NEWUTS},
                      uint64_t{CLONE_NEWIPC}, uint64_t{CLONE_NEWUSER}, uint64_t{CLONE_NEWPID},
                      uint64_t{CLONE_NEWNET}})
    f.rule(kEperm, "clone", {SCMP_A0(SCMP_CMP_MASKED_EQ, ns, ns)});
  f.rule(SCMP_ACT_ERRNO(ENOSYS), "clone3");
  // Sockets: AF_UNIX only. The driver talks to its devices through ioctl on
  // /dev/nvidia*, and to the MPS daemon and nvidia-persistenced, where they
  // run, through unix sockets. Not AF_NETLINK: it configures (and reveals) the
  // network, nothing a kernel or the driver's work after its context needs.
  // (Until the cuda runner is confined to its files, a unix socket that a
  // file system path reaches stays reachable.)
  f.rule(kEperm, "socket", {SCMP_A0(SCMP_CMP_NE, AF_UNIX)});
  f.rule(kEperm, "socketpair", {SCMP_A0(SCMP_CMP_NE, AF_UNIX)});
  f.rule(kEperm, "kill", {SCMP_A0(SCMP_CMP_NE, self)});
  f.rule(kEperm, "tgkill", {SCMP_A0(SCMP_CMP_NE, self)});
  f.rule(kEperm, "prlimit64", {SCMP_A2(SCMP_CMP_NE, 0)});
  f.rule(kEperm, "prlimit64", {SCMP_A0(SCMP_CMP_NE, 0)});
}

}  // namespace

std::string install_syscall_filter(FilterProfile profile) {
  Filter f(profile == FilterProfile::cpu ? kEperm : SCMP_ACT_ALLOW);
  if (!f.get()) return "seccomp_init failed";
  // A call in another architecture's convention: refused (not killed).
  seccomp_attr_set(f.get(), SCMP_FLTATR_ACT_BADARCH, kEperm);
  // Every thread, also those already running (the CUDA driver's).
  if (int rc = seccomp_attr_set(f.get(), SCMP_FLTATR_CTL_TSYNC, 1); rc < 0)
    return std::string("seccomp TSYNC: ") + strerror(-rc);
  const uint64_t self = static_cast<uint64_t>(getpid());
  if (profile == FilterProfile::cpu)
    install_cpu_rules(f, self);
  else
    install_cuda_rules(f, self, profile == FilterProfile::triton);
  if (!f.error().empty()) return f.error();
  if (int rc = seccomp_load(f.get()); rc < 0) return std::string("seccomp_load: ") + strerror(-rc);
  return "";
}

bool cuda_filter_disabled() {
  const char* v = std::getenv("KEVO_CUDA_NO_FILTER");
  return v && std::string(v) == "1";
}

// ---- the network namespace ------------------------------------------------------

std::string enter_network_namespace() {
  if (unshare(CLONE_NEWNET) == 0) return "";
  const std::string plain = strerror(errno);
  if (unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0) return "";
  return "unshare: " + plain + "; in a user namespace: " + strerror(errno);
}

// ---- the file system ------------------------------------------------------------

namespace {

const char* const kSystemReadable[] = {
    "/usr", "/lib", "/lib64", "/etc/ld.so.cache", "/etc/localtime", "/proc/cpuinfo",
    "/proc/meminfo", "/proc/stat", "/proc/self", "/sys/devices/system/cpu", "/sys/fs/cgroup",
    "/dev/null", "/dev/zero", "/dev/urandom"};

}  // namespace

FileRules cpu_runner_files(const std::string& artifact) {
  FileRules r;
  r.readable.assign(std::begin(kSystemReadable), std::end(kSystemReadable));
  r.readable.push_back(artifact);
  return r;
}

FileRules cuda_runner_files(const std::string& files, const std::string& output) {
  FileRules r;
  r.readable.assign(std::begin(kSystemReadable), std::end(kSystemReadable));
  for (const char* p : {"/sys", "/proc/driver/nvidia", "/proc/devices", "/proc/modules",
                        "/proc/sys/vm", "/etc/nvidia", "/opt"})
    r.readable.emplace_back(p);
  if (const char* ld = std::getenv("LD_LIBRARY_PATH")) {
    const std::string list = ld;
    for (size_t pos = 0; pos <= list.size();) {
      size_t end = list.find(':', pos);
      if (end == std::string::npos) end = list.size();
      if (end > pos && list[pos] == '/') r.readable.push_back(list.substr(pos, end - pos));
      pos = end + 1;
    }
  }
  r.readable.push_back(files);
  r.writable.push_back(output);
  // The driver names its threads (/proc/self/task/<tid>/comm) and fails to
  // start where it cannot: its own threads' files, no other process's.
  r.writable.emplace_back("/proc/self/task");
  // The driver's devices: nvidiactl, nvidia0.., nvidia-uvm, nvidia-caps/ ...;
  // on a Trainium host the Neuron driver's neuron0.. (none elsewhere).
  if (DIR* dev = opendir("/dev")) {
    while (const dirent* e = readdir(dev))
      if (std::strncmp(e->d_name, "nvidia", 6) == 0 || std::strncmp(e->d_name, "neuron", 6) == 0)
        r.devices.push_back(std::string("/dev/") + e->d_name);
    closedir(dev);
  }
  return r;
}

FileRules triton_runner_files(const std::string& files, const std::string& output,
                              const std::vector<std::string>& python, const std::string& work) {
  FileRules r = cuda_runner_files(files, output);
  for (const std::string& p : python)
    if (!p.empty() && p[0] == '/') r.readable.push_back(p);
  r.workdirs.push_back(work);
  // Triton runs its compilers with their output sent to /dev/null.
  r.writable.emplace_back("/dev/null");
  return r;
}

#if defined(SYS_landlock_create_ruleset) && defined(SYS_landlock_add_rule) && \
    defined(SYS_landlock_restrict_self)

namespace {

// Landlock's ABI as of its seventh version; Debian 12's header stops at the
// second, so the later rights are spelled out here.
struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;  // ABI 4
  uint64_t scoped;              // ABI 6
};
struct PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));
constexpr int kRulePathBeneath = 1;
constexpr uint32_t kCreateRulesetVersion = 1U << 0;
constexpr uint64_t kExecute = 1ULL << 0, kWriteFile = 1ULL << 1, kReadFile = 1ULL << 2,
                   kReadDir = 1ULL << 3, kRemoveDir = 1ULL << 4, kRemoveFile = 1ULL << 5,
                   kMakeChar = 1ULL << 6, kMakeDir = 1ULL << 7, kMakeReg = 1ULL << 8,
                   kMakeSock = 1ULL << 9, kMakeFifo = 1ULL << 10, kMakeBlock = 1ULL << 11,
                   kMakeSym = 1ULL << 12, kRefer = 1ULL << 13, kTruncate = 1ULL << 14,
                   kIoctlDev = 1ULL << 15;
constexpr uint64_t kNetBindTcp = 1ULL << 0, kNetConnectTcp = 1ULL << 1;
constexpr uint64_t kScopeAbstractUnix = 1ULL << 0, kScopeSignal = 1ULL << 1;

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

}  // namespace

std::string confine_file_system(const FileRules& rules) {
  const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
  if (abi < 1) return std::string("Landlock is not available: ") + strerror(errno);
  uint64_t fs = kExecute | kWriteFile | kReadFile | kReadDir | kRemoveDir | kRemoveFile |
                kMakeChar | kMakeDir | kMakeReg | kMakeSock | kMakeFifo | kMakeBlock | kMakeSym;
  if (abi >= 2) fs |= kRefer;
  if (abi >= 3) fs |= kTruncate;
  if (abi >= 5) fs |= kIoctlDev;
  RulesetAttr attr{fs, abi >= 4 ? kNetBindTcp | kNetConnectTcp : 0,
                   abi >= 6 ? kScopeAbstractUnix | kScopeSignal : 0};
  Fd ruleset{static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0))};
  if (ruleset.fd < 0) return std::string("landlock_create_ruleset: ") + strerror(errno);
  // A rule on a file may carry only the rights that apply to files; each
  // right is one this kernel's Landlock handles.
  constexpr uint64_t kFileRights = kExecute | kWriteFile | kReadFile | kTruncate | kIoctlDev;
  auto allow = [&](const std::string& path, uint64_t rights) -> std::string {
    Fd target{open(path.c_str(), O_PATH | O_CLOEXEC)};
    if (target.fd < 0) return "";  // not on this machine: nothing to allow
    struct stat st;
    if (fstat(target.fd, &st) != 0) return "";
    if (!S_ISDIR(st.st_mode)) rights &= kFileRights;
    PathBeneathAttr rule{rights & fs, target.fd};
    if (syscall(SYS_landlock_add_rule, ruleset.fd, kRulePathBeneath, &rule, 0) != 0)
      return "landlock_add_rule " + path + ": " + strerror(errno);
    return "";
  };
  const uint64_t read = kExecute | kReadFile | kReadDir;
  const uint64_t write = kReadFile | kWriteFile | kTruncate;
  const uint64_t device = kReadFile | kReadDir | kWriteFile | kIoctlDev;
  const uint64_t work = kReadFile | kReadDir | kWriteFile | kTruncate | kMakeReg | kMakeDir |
                        kRemoveFile | kRemoveDir | kRefer;
  for (const auto& [paths, rights] : {std::pair{&rules.readable, read},
                                      std::pair{&rules.writable, write},
                                      std::pair{&rules.devices, device},
                                      std::pair{&rules.workdirs, work}})
    for (const std::string& path : *paths)
      if (std::string why = allow(path, rights); !why.empty()) return why;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return std::string("PR_SET_NO_NEW_PRIVS: ") + strerror(errno);
  if (syscall(SYS_landlock_restrict_self, ruleset.fd, 0) != 0)
    return std::string("landlock_restrict_self: ") + strerror(errno);
  return "";
}

#else

std::string confine_file_system(const FileRules&) {
  return "built without Landlock's system calls";
}

#endif

// ---- what a runner gets -----------------------------------------------------------

namespace {

ContainmentLayer probe_landlock() {
#if defined(SYS_landlock_create_ruleset) && defined(SYS_landlock_add_rule) && \
    defined(SYS_landlock_restrict_self)
  const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
  if (abi >= 1) return {"landlock", true, "ABI " + std::to_string(abi)};
  return {"landlock", false, std::string("not in this kernel: ") + strerror(errno)};
#else
  return {"landlock", false, "built without Landlock's system calls"};
#endif
}

// Tried in a child that does nothing else: unshare is async-signal-safe, so
// this holds in a process with threads too.
ContainmentLayer probe_network_namespace() {
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0)
    return {"network namespace", false, std::string("cannot try: ") + strerror(errno)};
  const pid_t pid = fork();
  if (pid == 0) {
    int result[2] = {0, 0};
    if (unshare(CLONE_NEWNET) != 0) {
      result[0] = errno;
      result[1] = unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0 ? 0 : errno;
    }
    (void)!write(report[1], result, sizeof(result));
    _exit(0);
  }
  close(report[1]);
  int result[2] = {-1, -1};
  const bool read_all = pid > 0 && read(report[0], result, sizeof(result)) == sizeof(result);
  close(report[0]);
  if (pid > 0) waitpid(pid, nullptr, 0);
  if (!read_all) return {"network namespace", false, "cannot try: no child process"};
  if (result[0] == 0) return {"network namespace", true, ""};
  if (result[1] == 0) return {"network namespace", true, "in a user namespace"};
  return {"network namespace", false,
          std::string("unshare: ") + strerror(result[0]) + "; in a user namespace: " +
              strerror(result[1])};
}

const char* filter_detail(FilterProfile profile) {
  switch (profile) {
    case FilterProfile::cpu: return "deny-by-default";
    case FilterProfile::cuda: return "deny list";
    case FilterProfile::triton: return "deny list, child processes allowed";
  }
  return "";
}

ContainmentLayer probe_seccomp(FilterProfile profile) {
  // A filter mode that knows filters answers a null program with EFAULT.
  if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0)
    return {"seccomp", false, std::string("not in this kernel: ") + strerror(errno)};
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, nullptr, 0, 0) == 0 || errno != EFAULT)
    return {"seccomp", false, std::string("no filter mode in this kernel: ") + strerror(errno)};
  return {"seccomp", true, filter_detail(profile)};
}

}  // namespace

std::vector<ContainmentLayer> probe_containment(FilterProfile profile) {
  return {{"environment", true, "clean"},
          probe_landlock(),
          probe_network_namespace(),
          probe_seccomp(profile),
          {"limits", true, profile == FilterProfile::cpu ? "" : "wall clock only"}};
}

// Builds the list from the steps' answers alone: once the filter is on, the
// probes' own calls (prctl, landlock_create_ruleset) are refused.
std::vector<ContainmentLayer> containment_got(FilterProfile profile,
                                              const ContainmentSteps& why_not) {
  auto layer = [](const char* name, const std::string& why, const char* detail) {
    return why.empty() ? ContainmentLayer{name, true, detail} : ContainmentLayer{name, false, why};
  };
  const bool cpu = profile == FilterProfile::cpu;
  return {{"environment", true, "clean"},
          layer("landlock", why_not.landlock, ""),
          layer("network namespace", why_not.network, ""),
          layer("seccomp", why_not.filter, filter_detail(profile)),
          {"limits", true, cpu ? "" : "wall clock only"}};
}

std::string containment_line(const std::vector<ContainmentLayer>& layers) {
  std::string line;
  for (const ContainmentLayer& l : layers) {
    if (!line.empty()) line += " · ";
    if (l.on)
      line += l.detail.empty() ? l.name : l.name + " " + l.detail;
    else
      line += "no " + l.name + (l.detail.empty() ? "" : " (" + l.detail + ")");
  }
  return line;
}

nlohmann::json containment_event(const std::vector<ContainmentLayer>& layers) {
  nlohmann::json list = nlohmann::json::array();
  for (const ContainmentLayer& l : layers)
    list.push_back({{"name", l.name}, {"on", l.on}, {"detail", l.detail}});
  return {{"event", "note"}, {"what", "containment: " + containment_line(layers)},
          {"containment", list}};
}

std::string missing_containment_text(const nlohmann::json& event) {
  const auto it = event.find("containment");
  if (it == event.end() || !it->is_array()) return "";
  std::vector<ContainmentLayer> off;
  for (const nlohmann::json& l : *it)
    if (l.is_object() && !l.value("on", true))
      off.push_back({l.value("name", std::string("?")), false, l.value("detail", std::string())});
  if (off.empty()) return "";
  return "kevo: containment: " + containment_line(off) + "\n";
}

}  // namespace kevo::runner
