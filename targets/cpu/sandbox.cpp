#include "targets/cpu/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace kevo::runner {

#if defined(__x86_64__)

namespace {

sock_filter stmt(uint16_t code, uint32_t k) { return BPF_STMT(code, k); }
sock_filter jump(uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) {
  return BPF_JUMP(code, k, jt, jf);
}

constexpr uint32_t kAllow = SECCOMP_RET_ALLOW;
constexpr uint32_t kDenyPerm = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
constexpr uint32_t kDenyNoSys = SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA);

}  // namespace

std::string install_syscall_filter() {
  const uint32_t self = static_cast<uint32_t>(getpid());
  const uint32_t nr = offsetof(seccomp_data, nr);
  const uint32_t arg0 = offsetof(seccomp_data, args[0]);  // low 32 bits (little endian)
  std::vector<sock_filter> f;
  // Any other architecture's calling convention: deny outright.
  f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0));
  f.push_back(stmt(BPF_RET | BPF_K, kDenyPerm));
  f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, nr));
  // Always refused.
  for (uint32_t call : {__NR_fork, __NR_vfork, __NR_execve, __NR_execveat, __NR_socket,
                        __NR_socketpair, __NR_ptrace, __NR_process_vm_writev}) {
    f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, call, 0, 1));
    f.push_back(stmt(BPF_RET | BPF_K, kDenyPerm));
  }
  // clone3 hides its flags behind a pointer: say it does not exist, and
  // glibc falls back to clone for threads.
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1));
  f.push_back(stmt(BPF_RET | BPF_K, kDenyNoSys));
  // clone: threads only.
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 4));
  f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, arg0));
  f.push_back(jump(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1));
  f.push_back(stmt(BPF_RET | BPF_K, kAllow));
  f.push_back(stmt(BPF_RET | BPF_K, kDenyPerm));
  // kill and tgkill: only this process (abort() signals itself).
  for (uint32_t call : {__NR_kill, __NR_tgkill}) {
    f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, call, 0, 5));
    f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, arg0));
    f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, self, 2, 0));
    f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0));  // kill(0, ...): own group
    f.push_back(stmt(BPF_RET | BPF_K, kDenyPerm));
    f.push_back(stmt(BPF_RET | BPF_K, kAllow));
  }
  f.push_back(stmt(BPF_RET | BPF_K, kAllow));

  sock_fprog prog{static_cast<unsigned short>(f.size()), f.data()};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return std::string("PR_SET_NO_NEW_PRIVS: ") + strerror(errno);
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0)
    return std::string("seccomp: ") + strerror(errno);
  return "";
}

#else

std::string install_syscall_filter() { return "no system-call filter on this architecture"; }

#endif

std::vector<std::string> runner_readable_paths(const std::string& artifact) {
  return {"/usr",          "/lib",           "/lib64",          "/etc/ld.so.cache",
          "/etc/localtime", "/proc/cpuinfo", "/proc/meminfo",   "/proc/stat",
          "/proc/self",     "/sys/devices/system/cpu",          "/sys/fs/cgroup",
          "/dev/null",      "/dev/zero",     "/dev/urandom",    artifact};
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

std::string confine_file_system(const std::vector<std::string>& readable) {
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
  const uint64_t read_dir = kExecute | kReadFile | kReadDir;
  const uint64_t read_file = kExecute | kReadFile;
  for (const std::string& path : readable) {
    Fd target{open(path.c_str(), O_PATH | O_CLOEXEC)};
    if (target.fd < 0) continue;  // not on this machine: nothing to allow
    struct stat st;
    if (fstat(target.fd, &st) != 0) continue;
    PathBeneathAttr rule{S_ISDIR(st.st_mode) ? read_dir : read_file, target.fd};
    if (syscall(SYS_landlock_add_rule, ruleset.fd, kRulePathBeneath, &rule, 0) != 0)
      return "landlock_add_rule " + path + ": " + strerror(errno);
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return std::string("PR_SET_NO_NEW_PRIVS: ") + strerror(errno);
  if (syscall(SYS_landlock_restrict_self, ruleset.fd, 0) != 0)
    return std::string("landlock_restrict_self: ") + strerror(errno);
  return "";
}

#else

std::string confine_file_system(const std::vector<std::string>&) {
  return "built without Landlock's system calls";
}

#endif

}  // namespace kevo::runner
