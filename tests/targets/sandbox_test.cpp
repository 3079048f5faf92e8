// The runner's sandbox (targets/runner/sandbox.h): the layers a runner gets
// on this machine, how kevo words them, and the system-call filters' verdicts
// on calls a kernel needs and calls it never needs, tried in a child process
// (a filter cannot be taken off again).
#include "targets/runner/sandbox.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace kevo::runner {
namespace {

std::vector<std::string> names(const std::vector<ContainmentLayer>& layers) {
  std::vector<std::string> out;
  for (const auto& l : layers) out.push_back(l.name);
  return out;
}

const std::vector<std::string> kLayers = {"environment", "landlock", "network namespace",
                                          "seccomp", "limits"};

TEST(TargetContainment, ProbeNamesEveryLayerInOrderAndWhyOneIsMissing) {
  for (FilterProfile profile : {FilterProfile::cpu, FilterProfile::cuda}) {
    const auto layers = probe_containment(profile);
    EXPECT_EQ(names(layers), kLayers);
    EXPECT_TRUE(layers[0].on);
    EXPECT_EQ(layers[0].detail, "clean");
    for (const auto& l : layers) {
      if (!l.on) {
        EXPECT_FALSE(l.detail.empty()) << l.name << " is off with no reason";
      }
    }
    if (layers[3].on) {
      EXPECT_EQ(layers[3].detail, profile == FilterProfile::cpu ? "deny-by-default" : "deny list");
    }
    if (layers[1].on) {
      EXPECT_EQ(layers[1].detail.rfind("ABI ", 0), 0u) << layers[1].detail;
    }
  }
  // Both runners confine their files where the kernel has Landlock.
  const auto cuda = probe_containment(FilterProfile::cuda);
  EXPECT_EQ(cuda[1].on, probe_containment(FilterProfile::cpu)[1].on);
  EXPECT_EQ(cuda[4].detail, "wall clock only");
}

TEST(TargetContainment, OneLineWithTheMissingLayersNamed) {
  const std::vector<ContainmentLayer> layers = {{"environment", true, "clean"},
                                                {"landlock", true, "ABI 7"},
                                                {"network namespace", false, "unshare: EPERM"},
                                                {"seccomp", true, "deny-by-default"},
                                                {"limits", true, ""}};
  EXPECT_EQ(containment_line(layers),
            "environment clean · landlock ABI 7 · no network namespace (unshare: EPERM) · "
            "seccomp deny-by-default · limits");
  // The runner's event, and what kevo makes of it for the stderr it stores.
  const nlohmann::json e = containment_event(layers);
  EXPECT_EQ(e["event"], "note");
  EXPECT_EQ(e["containment"].size(), 5u);
  EXPECT_EQ(missing_containment_text(e),
            "kevo: containment: no network namespace (unshare: EPERM)\n");
  std::vector<ContainmentLayer> all_on = layers;
  all_on[2] = {"network namespace", true, ""};
  EXPECT_EQ(missing_containment_text(containment_event(all_on)), "");
  EXPECT_EQ(missing_containment_text({{"event", "note"}, {"what", "something else"}}), "");
  EXPECT_EQ(missing_containment_text({{"event", "note"}, {"containment", "not a list"}}), "");
}

TEST(TargetContainment, ContainmentGotSaysWhatTheStepsAnswered) {
  ContainmentSteps steps;
  steps.network = "unshare: Operation not permitted";
  const auto cpu = containment_got(FilterProfile::cpu, steps);
  EXPECT_EQ(names(cpu), kLayers);
  EXPECT_EQ(containment_line(cpu),
            "environment clean · landlock · no network namespace (unshare: Operation not "
            "permitted) · seccomp deny-by-default · limits");
  steps = {"", "the driver did not start under it: no device", "seccomp_load: Invalid argument"};
  const auto cuda = containment_got(FilterProfile::cuda, steps);
  EXPECT_FALSE(cuda[1].on);
  EXPECT_EQ(cuda[1].detail, "the driver did not start under it: no device");
  EXPECT_TRUE(cuda[2].on);
  EXPECT_FALSE(cuda[3].on);
  EXPECT_EQ(cuda[3].detail, "seccomp_load: Invalid argument");
}

// Runs `body` in a child process and returns what it returned.
std::string in_child(const std::function<std::string()>& body) {
  int p[2];
  if (pipe(p) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    const std::string out = body();
    (void)!write(p[1], out.data(), out.size());
    _exit(0);
  }
  close(p[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(p[0], buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  close(p[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) out += " [the child died of signal " + std::to_string(WTERMSIG(status)) + "]";
  return out;
}

// "name ok" or "name <errno name>" for one call's result.
std::string verdict(const char* name, long rc) {
  const int e = errno;
  std::string what = rc >= 0 ? "ok" : e == EPERM ? "EPERM" : e == ENOSYS ? "ENOSYS" : strerror(e);
  return std::string(name) + " " + what + "\n";
}

// The calls both profiles judge: each line "call verdict".
std::string try_calls() {
  std::string out;
  // A thread (OpenMP's way): clone with CLONE_THREAD.
  bool ran = false;
  try {
    std::thread t([&] { ran = true; });
    t.join();
  } catch (const std::exception&) {
  }
  out += std::string("thread ") + (ran ? "ok" : "refused") + "\n";
  const pid_t child = fork();  // glibc: clone without CLONE_THREAD
  if (child == 0) _exit(0);
  if (child > 0) waitpid(child, nullptr, 0);
  out += verdict("fork", child);
  out += verdict("clone3", syscall(SYS_clone3, nullptr, 0));
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  out += verdict("socket_inet", fd);
  if (fd >= 0) close(fd);
  fd = socket(AF_UNIX, SOCK_STREAM, 0);
  out += verdict("socket_unix", fd);
  if (fd >= 0) close(fd);
  fd = open("/dev/null", O_WRONLY);
  out += verdict("open_write", fd);
  if (fd >= 0) close(fd);
  fd = open("/proc/self/status", O_RDONLY);
  out += verdict("open_read", fd);
  if (fd >= 0) close(fd);
  out += verdict("kill_parent", kill(getppid(), 0));
  out += verdict("kill_self", kill(getpid(), 0));
  rlimit rl{};
  out += verdict("getrlimit", getrlimit(RLIMIT_AS, &rl));
  rl.rlim_cur = rl.rlim_max;
  out += verdict("setrlimit", setrlimit(RLIMIT_AS, &rl));
  out += verdict("ptrace", syscall(SYS_ptrace, 2L, getppid(), 0L, 0L));
  out += verdict("unshare", unshare(CLONE_NEWUTS));
  char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
  out += verdict("execve", execve("/bin/true", argv, environ));
  return out;
}

TEST(TargetContainment, CpuFilterDeniesByDefault) {
  if (!probe_containment(FilterProfile::cpu)[3].on) GTEST_SKIP() << "no seccomp here";
  const std::string out = in_child([] {
    const std::string why = install_syscall_filter(FilterProfile::cpu);
    return why.empty() ? try_calls() : "install: " + why;
  });
  EXPECT_EQ(out,
            "thread ok\nfork EPERM\nclone3 ENOSYS\nsocket_inet EPERM\nsocket_unix EPERM\n"
            "open_write EPERM\nopen_read ok\nkill_parent EPERM\nkill_self ok\ngetrlimit ok\n"
            "setrlimit EPERM\nptrace EPERM\nunshare EPERM\nexecve EPERM\n");
}

TEST(TargetContainment, CudaFilterAllowsByDefaultWithADenyList) {
  if (!probe_containment(FilterProfile::cuda)[3].on) GTEST_SKIP() << "no seccomp here";
  const std::string out = in_child([] {
    const std::string why = install_syscall_filter(FilterProfile::cuda);
    return why.empty() ? try_calls() : "install: " + why;
  });
  EXPECT_EQ(out,
            "thread ok\nfork EPERM\nclone3 ENOSYS\nsocket_inet EPERM\nsocket_unix ok\n"
            "open_write ok\nopen_read ok\nkill_parent EPERM\nkill_self ok\ngetrlimit ok\n"
            "setrlimit EPERM\nptrace EPERM\nunshare EPERM\nexecve EPERM\n");
}

TEST(TargetContainment, ANetworkNamespaceHasOnlyLoopback) {
  if (!probe_containment(FilterProfile::cpu)[2].on) GTEST_SKIP() << "no network namespace here";
  const std::string out = in_child([] {
    const std::string why = enter_network_namespace();
    if (!why.empty()) return "enter: " + why;
    // A TCP connection to anywhere but a downed loopback has no route.
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(9);
    a.sin_addr.s_addr = htonl(0xC0000201);  // 192.0.2.1 (TEST-NET-1): no route there
    const int rc = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    return std::string(rc == 0 ? "connected" : strerror(errno));
  });
  EXPECT_EQ(out, strerror(ENETUNREACH));
}

// The cuda runner's file rules, tried in a child: the candidates' directory
// and the system's libraries read, the output file written, nothing created,
// nothing else of the user's read or written, /dev/null usable.
TEST(TargetContainment, TheCudaRunnerTouchesOnlyItsFiles) {
  if (!probe_containment(FilterProfile::cuda)[1].on) GTEST_SKIP() << "no Landlock here";
  char tmpl[] = "/tmp/kevo-landlock-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  const std::string files = root + "/files", output = root + "/out", secret = root + "/secret";
  ASSERT_EQ(mkdir(files.c_str(), 0700), 0);
  auto plant = [](const std::string& path) {
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const bool ok = fd >= 0 && write(fd, "x", 1) == 1;
    if (fd >= 0) close(fd);
    return ok;
  };
  ASSERT_TRUE(plant(files + "/1.so"));
  ASSERT_TRUE(plant(output));
  ASSERT_TRUE(plant(secret));
  const std::string out = in_child([&] {
    const std::string why = confine_file_system(cuda_runner_files(files, output));
    if (!why.empty()) return "confine: " + why;
    std::string r;
    auto try_open = [&](const char* name, const std::string& path, int flags) {
      const int fd = open(path.c_str(), flags | O_CLOEXEC, 0600);
      r += verdict(name, fd);
      if (fd >= 0) close(fd);
    };
    try_open("read_candidate", files + "/1.so", O_RDONLY);
    try_open("write_candidate", files + "/1.so", O_WRONLY);
    try_open("create_beside", files + "/2.so", O_WRONLY | O_CREAT);
    try_open("write_output", output, O_RDWR | O_CREAT);
    const int fd = open(output.c_str(), O_RDWR | O_CLOEXEC);
    r += verdict("truncate_output", fd >= 0 ? ftruncate(fd, 4096) : -1);
    if (fd >= 0) close(fd);
    try_open("read_secret", secret, O_RDONLY);
    try_open("create_in_tmp", root + "/new", O_WRONLY | O_CREAT);
    try_open("read_passwd", "/etc/passwd", O_RDONLY);
    try_open("read_library", "/etc/ld.so.cache", O_RDONLY);
    try_open("dev_null", "/dev/null", O_RDONLY);
    try_open("name_own_thread",
             "/proc/self/task/" + std::to_string(syscall(SYS_gettid)) + "/comm",
             O_WRONLY | O_TRUNC);
    try_open("name_parent", "/proc/" + std::to_string(getppid()) + "/comm", O_WRONLY | O_TRUNC);
    r += verdict("rename_output", rename(output.c_str(), (root + "/moved").c_str()));
    return r;
  });
  EXPECT_EQ(out,
            "read_candidate ok\nwrite_candidate Permission denied\ncreate_beside Permission "
            "denied\nwrite_output ok\ntruncate_output ok\nread_secret Permission denied\n"
            "create_in_tmp Permission denied\nread_passwd Permission denied\nread_library ok\n"
            "dev_null ok\nname_own_thread ok\nname_parent Permission denied\n"
            "rename_output Permission denied\n");
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace kevo::runner
