#include "targets/cpu/sandbox.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

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

}  // namespace kevo::runner
