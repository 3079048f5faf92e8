// kevo targets, kevo operators: what this kevo knows.
#include <filesystem>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/operator.h"
#include "core/paths.h"
#include "targets/target.h"

namespace kevo::cli {

namespace {
bool simple_help(Args& a, const Argv& argv) {
  a.parse(argv);
  if (a.help()) fmt::print("{}", a.help_text());
  return a.help();
}
}  // namespace

int cmd_targets(const Argv& argv) {
  Args a("targets", "targets [--json]", "Lists the hardware targets and whether this kevo has them.",
         {json_option()}, 0, 0);
  if (simple_help(a, argv)) return 0;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& t : list_targets()) {
    nlohmann::json j = {{"name", t.name}, {"available", t.available}, {"description", t.description}};
    if (t.available) {
      // Built, but the machine may still lack it (no GPU, no driver).
      try {
        auto target = make_target(t.name);
        j["host"] = target->host_key();
        j["kernels"] = target->kernels_dir().string();
        // What a candidate's runner is confined by on this machine.
        const auto layers = target->containment();
        if (!layers.empty()) {
          nlohmann::json list = nlohmann::json::array();
          for (const auto& l : layers)
            list.push_back({{"name", l.name}, {"on", l.on}, {"detail", l.detail}});
          j["containment"] = list;
          j["containment_line"] = runner::containment_line(layers);
        }
      } catch (const UserError& e) {
        j["available"] = false;
        j["why_not"] = e.what();
      }
    } else {
      j["why_not"] = t.why_not;
    }
    out.push_back(j);
  }
  if (a.flag("--json")) {
    fmt::print("{}\n", out.dump(2));
    return 0;
  }
  for (const auto& j : out) {
    fmt::print("{:<10}{}\n", j["name"].get<std::string>(),
               j["available"].get<bool>() ? "available" : "not available");
    fmt::print("{:<10}{}\n", "", j["description"].get<std::string>());
    if (j.contains("host")) {
      fmt::print("{:<10}host: {}\n", "", j["host"].get<std::string>());
      fmt::print("{:<10}seed kernels: {}\n", "", j["kernels"].get<std::string>());
      if (j.contains("containment_line"))
        fmt::print("{:<10}containment: {}\n", "", j["containment_line"].get<std::string>());
    } else {
      fmt::print("{:<10}{}\n", "", j["why_not"].get<std::string>());
    }
  }
  return 0;
}

int cmd_operators(const Argv& argv) {
  Args a("operators", "operators [--json]",
         "Lists the operators with their formula, tensors in ABI order (inputs, then outputs),\n"
         "scalar parameters (the kernel's scalars array, in order) and seed kernel families.",
         {json_option()}, 0, 0);
  if (simple_help(a, argv)) return 0;
  nlohmann::json out = nlohmann::json::array();
  // The seed families of the default target (the one a task gets when it names none).
  const TargetTraits& target = *find_target_traits(default_target());
  const auto kernels = kevo_home() / "targets" / target.name / "kernels";
  const std::string families = fmt::format("{}_families", target.name);
  auto is_source = [&](const std::filesystem::path& f) {
    for (const TargetLanguage& l : target.languages)
      if (f.extension() == l.extension) return true;
    return false;
  };
  for (const auto& name : operators().names()) {
    const Operator& op = operators().get(name);
    nlohmann::json j = {{"name", name}, {"formula", std::string(op.formula())}};
    for (const auto& t : op.tensors())
      j[t.is_output ? "outputs" : "inputs"].push_back({{"name", t.name}, {"shape", t.doc}});
    j["scalars"] = nlohmann::json::array();
    for (const auto& s : op.scalars()) {
      nlohmann::json sj = {{"name", s.name}, {"doc", s.doc}};
      if (s.default_value) sj["default"] = *s.default_value;
      j["scalars"].push_back(sj);
    }
    j[families] = nlohmann::json::array();
    std::error_code ec;
    for (const auto& f : std::filesystem::directory_iterator(kernels / name, ec))
      if (is_source(f.path())) j[families].push_back(f.path().stem().string());
    std::sort(j[families].begin(), j[families].end());
    out.push_back(j);
  }
  if (a.flag("--json")) {
    fmt::print("{}\n", out.dump(2));
    return 0;
  }
  for (const auto& j : out) {
    fmt::print("{}: {}\n", j["name"].get<std::string>(), j["formula"].get<std::string>());
    std::vector<std::string> in, outs, sc, fam;
    for (const auto& t : j["inputs"])
      in.push_back(t["name"].get<std::string>() + " " + t["shape"].get<std::string>());
    for (const auto& t : j["outputs"])
      outs.push_back(t["name"].get<std::string>() + " " + t["shape"].get<std::string>());
    for (const auto& s : j["scalars"])
      sc.push_back(s.contains("default")
                       ? fmt::format("{} (default {:g})", s["name"].get<std::string>(),
                                     s["default"].get<double>())
                       : s["name"].get<std::string>());
    for (const auto& f : j[families]) fam.push_back(f.get<std::string>());
    fmt::print("  inputs   {}\n  outputs  {}\n", fmt::join(in, ", "), fmt::join(outs, ", "));
    fmt::print("  scalars  {}\n", sc.empty() ? "none" : fmt::format("{}", fmt::join(sc, ", ")));
    fmt::print("  {} families  {}\n", target.name,
               fam.empty() ? "none" : fmt::format("{}", fmt::join(fam, ", ")));
  }
  return 0;
}

}  // namespace kevo::cli
