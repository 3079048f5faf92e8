// The containment of a runner, in layers, applied by the runner to itself
// before it loads a candidate: a network namespace of its own, Landlock (the
// file system) and a system-call filter (libseccomp); and what a runner of each
// target gets on this machine, for `kevo targets` and the evaluation's stderr.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kevo::runner {

// Which system-call filter a runner installs.
enum class FilterProfile {
  // Deny by default: only what glibc, the loader (dlopen), libgomp and the
  // cpu runner call; anything else fails with EPERM.
  cpu,
  // Allow by default, with a deny list (processes, programs, sockets other
  // than AF_UNIX, ptrace, mount, namespaces, bpf, keys, perf, modules, ...):
  // what the CUDA driver calls cannot be listed without a GPU to watch it.
  cuda,
  // cuda's deny list, less processes and programs: Triton runs its compilers
  // (ptxas, the C compiler for its launchers) as child processes, which
  // inherit every layer (the filter, Landlock, the network namespace).
  triton,
};

// Installs the filter for this process and all its threads, those running
// (TSYNC: the CUDA driver's) and those it starts later. Refused calls fail
// with EPERM (clone3 with ENOSYS, so that glibc falls back to clone, whose
// flags the filter can read); nothing is killed. Returns an empty string on
// success, else why it could not (the runner then goes on without: the other
// layers apply).
std::string install_syscall_filter(FilterProfile profile);

// Whether KEVO_CUDA_NO_FILTER=1 is set: the cuda runner then installs no
// filter and stays in kevo's network namespace (ncu's injection into the
// runner needs both; the user may need it where the driver does more than
// the filter allows).
bool cuda_filter_disabled();

// Moves this process into a network namespace of its own, where only a
// downed loopback exists: unshare(CLONE_NEWNET) (needs CAP_SYS_ADMIN), else
// in a new user namespace as well (needs unprivileged user namespaces and a
// single-threaded process). Returns an empty string on success, else why not.
std::string enter_network_namespace();

// What a confined runner may touch on the file system: read, and run code
// from, `readable` (each a directory with everything beneath it, or a file);
// read and write the existing files in `writable`; read, write and ioctl the
// device files in `devices` (a directory: everything beneath it). A path
// that is not on this machine is skipped.
struct FileRules {
  std::vector<std::string> readable;
  std::vector<std::string> writable;
  std::vector<std::string> devices;
  // Directories it may also create, rename and remove files and directories
  // in (a runner's scratch: its compiler's cache and temporary files).
  std::vector<std::string> workdirs;
};

// Confines the file system for this process and every thread it starts later
// (Landlock) to `rules`: it may create, remove or rename nothing, write no
// other file, and (where the kernel's Landlock knows them) bind or connect no
// TCP port, reach no abstract unix socket and signal no process outside its
// own domain. Files already open stay usable; threads already running are
// not confined (Landlock binds the calling thread and what it starts), so a
// runner calls it while it has one thread. Returns an empty string on
// success, else why not (the runner then goes on without: the other layers
// apply).
std::string confine_file_system(const FileRules& rules);

// What a kevo-runner of the cpu target needs to read: the system's libraries
// and loader cache, the time zone, the kernel's CPU and memory figures, this
// process's own /proc directory, CPU topology, /dev/null and friends, and
// `artifact` (the candidate).
FileRules cpu_runner_files(const std::string& artifact);

// What a kevo-cuda-runner needs: the cpu runner's reading, all of /sys (the
// driver walks the PCI tree and its module's parameters), the driver's /proc
// files and /etc/nvidia, /opt and the LD_LIBRARY_PATH directories (where
// CUDA may be installed); the devices /dev/nvidia*; `files` (the directory
// kevo puts each candidate in); `output` and its own threads' files in
// /proc (the driver names its threads) to write.
FileRules cuda_runner_files(const std::string& files, const std::string& output);

// What a triton runner (a Python interpreter running torch and Triton) needs:
// a cuda runner's files, the interpreter's own directories `python` (its
// prefix and import path) to read, and `work` (its scratch) to make files in.
FileRules triton_runner_files(const std::string& files, const std::string& output,
                              const std::vector<std::string>& python, const std::string& work);

// One layer of containment and whether a runner has it: `name` is one of
// "environment", "landlock", "network namespace", "seccomp", "limits";
// `detail` says how ("ABI 7", "deny-by-default") when on, why not when off.
struct ContainmentLayer {
  std::string name;
  bool on = false;
  std::string detail;
};

// The layers a runner with `profile` gets on this machine, in the order
// above. Tries what can only be known by trying (a network namespace) in a
// short-lived child process.
std::vector<ContainmentLayer> probe_containment(FilterProfile profile);

// The layers a runner reports it got, from what its steps returned: each
// string is empty where the step succeeded, else why not.
struct ContainmentSteps {
  std::string network;
  std::string landlock;
  std::string filter;
};
std::vector<ContainmentLayer> containment_got(FilterProfile profile,
                                              const ContainmentSteps& why_not);

// "environment clean · landlock ABI 7 · network namespace · seccomp
// deny-by-default · limits"; a layer that is off reads "no landlock (why)".
std::string containment_line(const std::vector<ContainmentLayer>& layers);

// The runner's event that lists the layers it got, once before it loads a
// candidate: {"event":"note","what":<containment_line>,"containment":[...]}.
nlohmann::json containment_event(const std::vector<ContainmentLayer>& layers);

// From a runner's event, what kevo adds to the evaluation's stderr: one
// line "kevo: containment: no network namespace (why)\n" naming the layers
// that are off, or "" when all are on or the event lists none.
std::string missing_containment_text(const nlohmann::json& event);

}  // namespace kevo::runner
