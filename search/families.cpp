#include "search/families.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "core/error.h"
#include "core/paths.h"
#include "targets/traits.h"

namespace kevo {

namespace {

// A C, C++ or CUDA family: the values as #defines; the shapes unless the
// compiler defines them.
std::string c_header(const Family& family, const KnobValues& knobs, const std::string& note,
                     const std::vector<std::string>& shape_defaults) {
  std::string out = fmt::format("/* {}\n * family {} ({}), knobs baked in: {}\n */\n", note,
                                family.name, family.origin.string(), knobs_to_string(knobs));
  for (const auto& [k, v] : knobs) out += fmt::format("#define {} {}\n", k, v);
  if (!shape_defaults.empty())
    out += "/* the shapes it was searched at (kevo defines its task's own when it compiles) */\n";
  for (const auto& d : shape_defaults) {
    const size_t eq = d.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = d.substr(0, eq);
    out += fmt::format("#ifndef {0}\n#define {0} {1}\n#endif\n", name, d.substr(eq + 1));
  }
  return out;
}

// A Python family (triton): the values as module globals, assigned at the
// top. The shapes are left to kevo, which gives every candidate its task's
// own (a global assigned here would override them).
std::string python_header(const Family& family, const KnobValues& knobs, const std::string& note) {
  std::string out = fmt::format("# {}\n# family {} ({}), knobs baked in: {}\n", note, family.name,
                                family.origin.string(), knobs_to_string(knobs));
  for (const auto& [k, v] : knobs) out += fmt::format("{} = {}\n", k, v);
  return out;
}

}  // namespace

std::string standalone_source(const Family& family, const KnobValues& knobs,
                              const std::string& note,
                              const std::vector<std::string>& shape_defaults) {
  const TargetTraits* traits = traits_of_language(family.language);
  const std::string out = traits && std::string(traits->syntax) == "python"
                              ? python_header(family, knobs, note)
                              : c_header(family, knobs, note, shape_defaults);
  // The declarations stay as comments: kevo would otherwise pass the
  // defaults as -D flags over the baked values.
  std::string text = family.text;
  for (const char* tag : {"@kevo knob", "@kevo require", "@kevo start"}) {
    const std::string plain = std::string("(baked in) ") + (tag + 1);
    for (size_t pos = 0; (pos = text.find(tag, pos)) != std::string::npos; pos += plain.size())
      text.replace(pos, std::strlen(tag), plain);
  }
  return out + "\n" + text;
}

std::vector<std::filesystem::path> family_files(const Task& task,
                                                const std::vector<std::string>& families) {
  if (!task.kernel_files.empty()) {  // the task brings its own families
    std::vector<std::filesystem::path> files;
    for (const auto& f : task.kernel_files)
      if (families.empty() ||
          std::find(families.begin(), families.end(), f.stem().string()) != families.end())
        files.push_back(f);
    for (const auto& want : families)
      if (std::none_of(files.begin(), files.end(),
                       [&](const auto& f) { return f.stem().string() == want; }))
        throw UserError(fmt::format("no kernel family '{}' among the task's \"kernels\"", want));
    return files;
  }
  const auto dir = kevo_home() / "targets" / task.target / "kernels" / std::string(task.op->name());
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file()) continue;
    const auto name = entry.path().filename().string();
    const auto ext = entry.path().extension().string();
    if (name.empty() || name[0] == '.') continue;
    if (ext != ".c" && ext != ".cc" && ext != ".cpp" && ext != ".cxx" && ext != ".cu" && ext != ".py")
      continue;
    if (!families.empty() &&
        std::find(families.begin(), families.end(), entry.path().stem().string()) == families.end())
      continue;
    files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& want : families)
    if (std::none_of(files.begin(), files.end(),
                     [&](const auto& f) { return f.stem().string() == want; }))
      throw UserError(fmt::format("no kernel family '{}' in {}", want, dir.string()));
  if (files.empty())
    throw UserError(fmt::format("no kernel families for {} on {} in {}", task.op->name(),
                                task.target, dir.string()));
  return files;
}

}  // namespace kevo
