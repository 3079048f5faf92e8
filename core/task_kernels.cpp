#include "core/task_kernels.h"

#include <glob.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/expr.h"
#include "core/json_reader.h"
#include "targets/traits.h"

namespace kevo {

namespace {

const std::vector<std::string>& entry_functions() {
  static const std::vector<std::string> f = {"ceil_div", "min", "max"};
  return f;
}

template <typename T>
bool contains(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The strings of a config are checked with plain loops, not std::regex: it
// recurses per character, and a long value exhausted the stack (found with
// the tests/fuzz/fuzz_task harness).
bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Checks a grid/block expression: integer arithmetic over `known` names and
// the helper functions only (it is pasted into generated C code).
void check_launch_expr(const std::string& text, const std::string& path,
                       const std::vector<std::string>& known) {
  const bool allowed = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return is_word_char(c) || (c != '\0' && std::strchr(" +-*/%(),", c));
  });
  if (!allowed)
    throw ConfigError(path, fmt::format("'{}': expected an integer expression of sizes, knobs, "
                                        "+ - * / %, ceil_div, min, max",
                                        text));
  // Each name: a letter or _, then letters, digits and _.
  for (size_t i = 0; i < text.size();) {
    if (!is_word_char(text[i]) || std::isdigit(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    const size_t start = i;
    while (i < text.size() && is_word_char(text[i])) ++i;
    const std::string name = text.substr(start, i - start);
    if (start > 0 && std::isdigit(static_cast<unsigned char>(text[start - 1])))
      continue;  // a literal's suffix, e.g. 1u
    if (!contains(known, name) && !contains(entry_functions(), name))
      throw ConfigError(path, fmt::format("'{}' names '{}', which is neither a size of \"sizes\" "
                                          "nor a knob of \"tune_params\" (known: {})",
                                          text, name, fmt::join(known, ", ")));
  }
}

std::vector<std::string> three(JsonObject& o, std::string_view key,
                               const std::vector<std::string>& known) {
  std::vector<std::string> v = o.get_string_list(key, std::vector<std::string>{"1", "1", "1"});
  if (v.empty() || v.size() > 3)
    throw ConfigError(o.path_of(key), "expected 1 to 3 expressions (x, y, z)");
  for (size_t i = 0; i < v.size(); ++i)
    check_launch_expr(v[i], fmt::format("{}[{}]", o.path_of(key), i), known);
  v.resize(3, "1");
  return v;
}

}  // namespace

std::string ConfigKnobs::declarations(const KnobSpace& own) const {
  std::string out;
  for (const KnobDecl& k : knobs) {
    if (own.find(k.name)) continue;  // the source's own declaration wins
    out += fmt::format("// @kevo knob {} {} {{{}}}\n", k.name, k.default_value,
                       fmt::join(k.values, ", "));
  }
  for (const std::string& r : restrictions) out += "// @kevo require " + r + "\n";
  for (const std::string& r : device) out += "// @kevo require " + r + "\n";
  return out;
}

std::vector<std::string> device_restrictions(const KernelEntry& entry, const ConfigKnobs& knobs) {
  if (entry.kind != "global") return {};
  std::vector<std::string> names;
  for (const KnobDecl& k : knobs.knobs) names.push_back(k.name);
  std::vector<std::string> dims;  // x, y, z as written ("" where not knobs alone), 1s left out
  bool all_static = true;
  for (size_t i = 0; i < 3 && i < entry.block.size(); ++i) {
    try {
      Expr::parse(entry.block[i], names);
      dims.push_back("(" + entry.block[i] + ")");
    } catch (const ExprError&) {
      dims.push_back("");
      all_static = false;
    }
  }
  std::vector<std::string> out;
  std::vector<std::string> product;
  for (size_t i = 0; i < dims.size(); ++i)
    if (!dims[i].empty() && dims[i] != "(1)") product.push_back(dims[i]);
  if (product.empty()) return out;
  if (all_static)
    out.push_back(fmt::format("{} <= 1024", fmt::join(product, " * ")));
  else
    for (size_t i = 0; i < 2 && i < dims.size(); ++i)
      if (!dims[i].empty() && dims[i] != "(1)") out.push_back(dims[i] + " <= 1024");
  if (dims.size() == 3 && !dims[2].empty() && dims[2] != "(1)") out.push_back(dims[2] + " <= 64");
  return out;
}

ConfigKnobs parse_config_knobs(const nlohmann::json* tune_params, const std::string& tune_path,
                               const nlohmann::json* restrictions,
                               const std::string& restrictions_path) {
  ConfigKnobs c;
  std::vector<std::string> names;
  if (tune_params) {
    JsonObject o(*tune_params, tune_path);
    for (auto it = tune_params->begin(); it != tune_params->end(); ++it) {
      const std::string path = o.path_of(it.key());
      if (!is_identifier(it.key()))
        throw ConfigError(path, "a knob name must be a C identifier (it becomes a -D define)");
      if (contains(KnobSpace::builtin_names(), it.key()))
        throw ConfigError(path, "this is a builtin name and cannot be a knob");
      const nlohmann::json& v = it.value();
      if (!v.is_array() || v.empty())
        throw ConfigError(path, "expected a non-empty list of integers, like [32, 64, 128]");
      KnobDecl d;
      d.name = it.key();
      for (size_t i = 0; i < v.size(); ++i) {
        int64_t x = json_to_int(v[i], fmt::format("{}[{}]", path, i));
        if (contains(d.values, x))
          throw ConfigError(fmt::format("{}[{}]", path, i), fmt::format("{} is listed twice", x));
        d.values.push_back(x);
      }
      d.default_value = d.values.front();  // Kernel Tuner's convention
      c.knobs.push_back(std::move(d));
      names.push_back(it.key());
      o.get_raw(it.key());
    }
  }
  if (restrictions) {
    if (!restrictions->is_array())
      throw ConfigError(restrictions_path, "expected a list of expressions over tune_params");
    std::vector<std::string> known = names;
    for (const auto& b : KnobSpace::builtin_names()) known.push_back(b);
    for (size_t i = 0; i < restrictions->size(); ++i) {
      const std::string path = fmt::format("{}[{}]", restrictions_path, i);
      const nlohmann::json& r = (*restrictions)[i];
      if (!r.is_string()) throw ConfigError(path, "expected an expression string");
      try {
        Expr::parse(r.get<std::string>(), known);
      } catch (const ExprError& e) {
        throw ConfigError(
            path, fmt::format("'{}': {} (tune_params declares: {})", r.get<std::string>(), e.what(),
                              fmt::join(names, ", ")));
      }
      c.restrictions.push_back(r.get<std::string>());
    }
  }
  return c;
}

KernelEntry parse_entry(const nlohmann::json& v, const std::string& path, const Operator& op,
                        const std::string& target, const ConfigKnobs& knobs) {
  JsonObject o(v, path);
  KernelEntry e;
  e.spec = v;
  e.kind = o.get_string("kind");
  // The kind of function the target's kevo wraps (targets/traits.cpp).
  const TargetTraits* traits = find_target_traits(target);
  const std::string want = traits && *traits->plain_entry_kind ? traits->plain_entry_kind : "function";
  if (e.kind != want)
    throw ConfigError(o.path_of("kind"), fmt::format("expected \"{}\" on the {} target, got '{}'",
                                                     want, target, e.kind));
  e.function = o.get_string("function");
  if (!is_identifier(e.function))
    throw ConfigError(o.path_of("function"), "expected a C identifier");

  std::vector<std::string> tensors, scalars, knob_names, size_names;
  for (const auto& t : op.tensors()) tensors.push_back(t.name);
  for (const auto& s : op.scalars()) scalars.push_back(s.name);
  for (const auto& k : knobs.knobs) knob_names.push_back(k.name);

  if (const nlohmann::json* sizes = o.get_raw("sizes")) {
    JsonObject s(*sizes, o.path_of("sizes"));
    for (auto it = sizes->begin(); it != sizes->end(); ++it) {
      const std::string p = s.path_of(it.key());
      // "TENSOR[DIM]", DIM a digit 0 to 7.
      const std::string text = it.value().is_string() ? it.value().get<std::string>() : "";
      const size_t n = text.size();
      const std::string tensor = n >= 4 ? text.substr(0, n - 3) : "";
      const bool ref = n >= 4 && text[n - 3] == '[' && text[n - 2] >= '0' && text[n - 2] <= '7' &&
                       text[n - 1] == ']' && is_identifier(tensor);
      if (!ref || !contains(tensors, tensor))
        throw ConfigError(
            p, fmt::format("expected \"TENSOR[DIM]\" with a tensor of {} ({}), got {}", op.name(),
                           fmt::join(tensors, ", "), json_brief(it.value())));
      if (contains(tensors, it.key()) || contains(scalars, it.key()) ||
          contains(knob_names, it.key()))
        throw ConfigError(p, "this name is already a tensor, scalar or knob");
      e.sizes.push_back({it.key(), tensor, text[n - 2] - '0'});
      size_names.push_back(it.key());
      s.get_raw(it.key());
    }
  }

  e.args = o.get_string_list("args");
  for (size_t i = 0; i < e.args.size(); ++i) {
    const std::string& a = e.args[i];
    if (!contains(tensors, a) && !contains(scalars, a) && !contains(size_names, a) &&
        !contains(knob_names, a))
      throw ConfigError(fmt::format("{}[{}]", o.path_of("args"), i),
                        fmt::format("'{}' is not a tensor or scalar of {}, a size of \"sizes\" or "
                                    "a knob of \"tune_params\"",
                                    a, op.name()));
  }

  std::vector<std::string> known = size_names;
  known.insert(known.end(), knob_names.begin(), knob_names.end());
  if (traits && traits->plain_entry_launches) {
    e.grid = three(o, "grid", known);
    e.block = three(o, "block", known);
  }
  o.finish();
  return e;
}

std::vector<std::filesystem::path> resolve_kernel_globs(const nlohmann::json& v,
                                                        const std::string& path,
                                                        const std::filesystem::path& base) {
  if (!v.is_array() || v.empty())
    throw ConfigError(path, "expected a list of kernel files or globs, like [\"kernels/*.cu\"]");
  std::vector<std::filesystem::path> files;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string p = fmt::format("{}[{}]", path, i);
    if (!v[i].is_string()) throw ConfigError(p, "expected a file name or glob");
    std::filesystem::path pattern = v[i].get<std::string>();
    if (pattern.is_relative()) pattern = base / pattern;
    glob_t g{};
    int rc = ::glob(pattern.c_str(), 0, nullptr, &g);  // sorted matches
    std::vector<std::filesystem::path> found;
    if (rc == 0)
      for (size_t k = 0; k < g.gl_pathc; ++k)
        if (std::filesystem::is_regular_file(g.gl_pathv[k])) found.emplace_back(g.gl_pathv[k]);
    ::globfree(&g);
    if (found.empty())
      throw ConfigError(p, fmt::format("no kernel file matches {}", pattern.string()));
    for (const auto& f : found) {
      for (const auto& other : files)
        if (other.stem() == f.stem() && other != f)
          throw ConfigError(p, fmt::format("two kernel files have the family name '{}' ({} and {})",
                                           f.stem().string(), other.string(), f.string()));
      if (std::find(files.begin(), files.end(), f) == files.end()) files.push_back(f);
    }
  }
  return files;
}

}  // namespace kevo
