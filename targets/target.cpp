#include "targets/target.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/paths.h"
#include "core/process.h"
#include "targets/cpu/cpu_target.h"
#include "targets/cuda/cuda_target.h"
#include "targets/trainium/availability.h"
#include "targets/trainium/trainium_target.h"
#include "targets/triton/triton_target.h"

namespace kevo {

std::string abi_header_hash() {
  static const std::string hash = [] {
    auto header = kevo_home() / "targets" / "abi" / "kevo_kernel.h";
    return std::filesystem::exists(header) ? sha256_hex(read_text_file(header)).substr(0, 16)
                                           : std::string("missing");
  }();
  return hash;
}

std::vector<std::string> shape_defines(const Task& task) {
  std::vector<std::string> out;
  if (!task.op) return out;
  const auto& tensors = task.op->tensors();
  // With several timed shapes, only what they all share is defined: one
  // compile serves every shape, and no shape gets a path the others lack.
  std::vector<const ShapeSet*> timed;
  for (const auto& s : task.timed) timed.push_back(&s);
  if (timed.empty()) timed.push_back(&task.main);
  for (size_t i = 0; i < tensors.size() && i < task.main.shapes.size(); ++i) {
    const std::string& t = tensors[i].name;
    const Shape& s = task.main.shapes[i];
    if (!is_identifier(t) || s.empty()) continue;
    bool same_rank = true;
    for (const ShapeSet* o : timed)
      same_rank = same_rank && i < o->shapes.size() && o->shapes[i].size() == s.size();
    if (!same_rank) continue;
    auto shared = [&](size_t d) {
      for (const ShapeSet* o : timed)
        if (o->shapes[i][d] != s[d]) return false;
      return true;
    };
    out.push_back(fmt::format("KEVO_RANK_{}={}", t, s.size()));
    for (size_t d = 0; d < s.size(); ++d)
      if (shared(d)) out.push_back(fmt::format("KEVO_DIM_{}_{}={}", t, d, s[d]));
    if (shared(s.size() - 1)) out.push_back(fmt::format("KEVO_LAST_{}={}", t, s.back()));
  }
  return out;
}

CompileOutcome compile_outcome(const ProcessResult& r, const std::filesystem::path& output,
                               double timeout_s) {
  CompileOutcome out;
  out.seconds = r.seconds;
  out.timed_out = r.timed_out;
  out.ok = r.exit_code && *r.exit_code == 0 && std::filesystem::exists(output);
  out.log = r.err;
  if (!r.out.empty()) out.log = r.out + (out.log.empty() ? "" : "\n" + out.log);
  if (r.timed_out)
    out.log += fmt::format("\n[kevo: compile killed after {:.0f} s]", timeout_s);
  else if (r.signal)
    out.log += fmt::format("\n[kevo: compiler killed by {}]", signal_description(r.signal));
  return out;
}

std::filesystem::path Target::kernels_dir() const {
  return kevo_home() / "targets" / std::string(name()) / "kernels";
}

namespace {

// How each target of traits.h is built into this kevo: made, or why not.
struct Entry {
  const char* name;
  std::unique_ptr<Target> (*make)();
  // Why the target cannot be used in this kevo on this machine, "" when it can.
  std::string (*why_not)();
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> e = {
      {"cpu", [] { return std::unique_ptr<Target>(make_cpu_target()); }, [] { return std::string(); }},
      {"cuda", [] { return make_cuda_target(); }, cuda_unavailable_reason},
      {"triton", [] { return make_triton_target(); }, triton_unavailable_reason},
      {"trainium", [] { return make_trainium_target(); }, trainium_unavailable_reason},
  };
  return e;
}

const Entry* entry(std::string_view name) {
  for (const auto& e : entries())
    if (name == e.name) return &e;
  return nullptr;
}

std::string why_not(const TargetTraits& t) {
  const Entry* e = entry(t.name);
  if (!e) return fmt::format("not built into this kevo (no entry for {} in targets/target.cpp)", t.name);
  return e->why_not();
}

}  // namespace

std::unique_ptr<Target> make_target(std::string_view name) {
  if (const TargetTraits* t = find_target_traits(name)) {
    if (std::string why = why_not(*t); !why.empty())
      throw UserError(fmt::format("target '{}' cannot be used: {}", name, why));
    return entry(name)->make();
  }
  std::vector<std::string> names;
  for (const auto& t : all_target_traits()) names.emplace_back(t.name);
  throw UserError(fmt::format("unknown target '{}' (known: {})", name, fmt::join(names, ", ")));
}

std::vector<TargetInfo> list_targets() {
  std::vector<TargetInfo> out;
  for (const auto& t : all_target_traits()) {
    std::string why = why_not(t);
    out.push_back({t.name, t.description, why.empty(), why});
  }
  return out;
}

}  // namespace kevo
