// kevo-contain: puts itself in kevo's containment for runners that are not
// kevo's own C++ (the triton target's Python runner), then runs the runner.
//
//   kevo-contain --files DIR --output FILE --work DIR [--python DIR]...
//                [--no-landlock WHY] [--no-filter WHY] -- PROGRAM [ARG]...
//
// In order, while it has one thread: a network namespace of its own;
// Landlock (runner/sandbox.h triton_runner_files: read the system, the GPU
// driver's files, the interpreter's directories --python and the candidates'
// directory --files; write the output file --output; make files in --work);
// the system-call filter (FilterProfile::triton). All three hold across
// exec and in every process the runner starts. The layers it got go to the
// program as KEVO_CONTAINMENT (JSON: {"line": ..., "layers": [...]}), which
// the runner reports to kevo before each candidate. --no-landlock and
// --no-filter leave a layer out and say why (kevo's retry where the driver
// or the interpreter cannot start under it; KEVO_CUDA_NO_FILTER=1 for ncu).
#include <unistd.h>

#include <cerrno>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "targets/runner/sandbox.h"

int main(int argc, char** argv) {
  using namespace kevo::runner;
  std::string files, output, work, no_landlock, no_filter;
  std::vector<std::string> python;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (i + 1 >= argc) break;
    if (a == "--files") files = argv[++i];
    else if (a == "--output") output = argv[++i];
    else if (a == "--work") work = argv[++i];
    else if (a == "--python") python.emplace_back(argv[++i]);
    else if (a == "--no-landlock") no_landlock = argv[++i];
    else if (a == "--no-filter") no_filter = argv[++i];
    else {
      i = argc;
      break;
    }
  }
  if (i >= argc) {
    std::fprintf(stderr,
                 "usage: kevo-contain --files DIR --output FILE --work DIR [--python DIR]... "
                 "[--no-landlock WHY] [--no-filter WHY] -- PROGRAM [ARG]...\n");
    return 2;
  }
  ContainmentSteps why_not;
  why_not.network = no_filter.empty() ? enter_network_namespace() : no_filter;
  if (!no_landlock.empty())
    why_not.landlock = no_landlock;
  else if (!no_filter.empty())
    why_not.landlock = no_filter;
  else if (files.empty() || output.empty() || work.empty())
    why_not.landlock = "started without --files, --output and --work";
  else
    why_not.landlock = confine_file_system(triton_runner_files(files, output, python, work));
  why_not.filter = no_filter.empty() ? install_syscall_filter(FilterProfile::triton) : no_filter;
  const auto layers = containment_got(FilterProfile::triton, why_not);
  nlohmann::json list = nlohmann::json::array();
  for (const ContainmentLayer& l : layers)
    list.push_back({{"name", l.name}, {"on", l.on}, {"detail", l.detail}});
  const nlohmann::json got = {{"line", "containment: " + containment_line(layers)},
                              {"layers", list}};
  setenv("KEVO_CONTAINMENT", got.dump().c_str(), 1);
  execv(argv[i], argv + i);
  std::fprintf(stderr, "kevo-contain: cannot run %s: %s\n", argv[i], std::strerror(errno));
  return 127;
}
