#include "targets/target.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/paths.h"
#include "targets/cpu/cpu_target.h"
#include "targets/cuda/cuda_target.h"

namespace kevo {

std::filesystem::path Target::kernels_dir() const {
  return kevo_home() / "targets" / std::string(name()) / "kernels";
}

namespace {

struct Entry {
  const char* name;
  const char* description;
  std::unique_ptr<Target> (*make)();  // null when not built
  const char* why_not;
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> e = {
      {"cpu", "this machine's CPU: C/C++ kernels built with the host compiler, run in a sandboxed child",
       [] { return std::unique_ptr<Target>(make_cpu_target()); }, ""},
      {"cuda", "NVIDIA GPUs: CUDA kernels built with nvcc, one kevo-cuda-runner per GPU",
       [] { return make_cuda_target(); }, ""},
      {"trainium", "AWS Trainium / Inferentia: NKI kernels", nullptr,
       "not built into this kevo (the Trainium target is not implemented yet)"},
  };
  return e;
}

}  // namespace

std::unique_ptr<Target> make_target(std::string_view name) {
  for (const auto& e : entries()) {
    if (name != e.name) continue;
    if (!e.make) throw UserError(fmt::format("target '{}' is {}", name, e.why_not));
    return e.make();
  }
  std::vector<std::string> names;
  for (const auto& e : entries()) names.emplace_back(e.name);
  throw UserError(fmt::format("unknown target '{}' (known: {})", name, fmt::join(names, ", ")));
}

std::vector<TargetInfo> list_targets() {
  std::vector<TargetInfo> out;
  for (const auto& e : entries()) {
    TargetInfo info{e.name, e.description, e.make != nullptr, e.why_not};
    if (info.name == "cuda") {
      info.why_not = cuda_unavailable_reason();
      info.available = info.why_not.empty();
    }
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace kevo
