#include "core/task.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/defined_operator.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/json_reader.h"
#include "core/knobs.h"
#include "kevo_defaults.h"  // generated from configs/defaults.json

namespace kevo {

const nlohmann::json& default_config() {
  static const nlohmann::json d = nlohmann::json::parse(kDefaultsJson);
  return d;
}

namespace {

Shape parse_shape(const nlohmann::json& v, const std::string& path) {
  if (!v.is_array() || v.empty())
    throw ConfigError(path, fmt::format("expected a shape like [4096, 4096], got {}",
                                        json_brief(v)));
  Shape s;
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t d = json_to_int(v[i], fmt::format("{}[{}]", path, i));
    if (d < 1) throw ConfigError(fmt::format("{}[{}]", path, i), "expected a size >= 1");
    s.push_back(d);
  }
  return s;
}

ShapeSet parse_shapes(const Operator& op, const nlohmann::json& v, const std::string& path) {
  if (!v.is_object())
    throw ConfigError(path, fmt::format("expected an object of shapes by tensor name, like "
                                        "{{\"x\": [4096, 4096]}}, got {}",
                                        json_brief(v)));
  ShapeSet set;
  for (auto it = v.begin(); it != v.end(); ++it)
    set.given[it.key()] = parse_shape(it.value(), fmt::format("{}.{}", path, it.key()));
  set.shapes = op.bind_shapes(set.given, path);
  return set;
}

double positive(double v, const std::string& path) {
  if (!(v > 0)) throw ConfigError(path, fmt::format("expected a number > 0, got {}", v));
  return v;
}

int64_t at_least(int64_t v, int64_t min, const std::string& path) {
  if (v < min) throw ConfigError(path, fmt::format("expected an integer >= {}, got {}", min, v));
  return v;
}

}  // namespace

Task parse_task(const nlohmann::json& config, const std::filesystem::path& origin) {
  const nlohmann::json& defaults = default_config();
  JsonObject root(config, "$");
  Task t;
  t.origin = origin;
  t.name = root.get_string("name", origin.empty() ? std::string("task") : origin.stem().string());

  // An operator defined inline or in a .json file, else a registered name.
  const nlohmann::json* op_value = root.get_raw("operator");
  if (op_value) {
    auto defined = parse_operator_definition(
        *op_value, root.path_of("operator"),
        origin.empty() ? std::filesystem::current_path()
                       : std::filesystem::absolute(origin).parent_path());
    if (defined) defined->prepare_reference();
    t.owned_op = defined;
    t.op = defined.get();
  }
  std::string op_name = t.op ? std::string(t.op->name()) : root.get_string("operator");
  if (!t.op) t.op = operators().find(op_name);
  if (!t.op)
    throw ConfigError(root.path_of("operator"),
                      fmt::format("unknown operator '{}' (known: {})", op_name,
                                  fmt::join(operators().names(), ", ")));

  std::string dtype = root.get_string("dtype", "f32");
  auto dt = parse_dtype(dtype);
  if (!dt)
    throw ConfigError(root.path_of("dtype"),
                      fmt::format("unknown dtype '{}' (expected one of: {})", dtype, dtype_names()));
  t.dtype = *dt;
  t.dtypes = t.op->tensor_dtypes(t.dtype);

  const nlohmann::json* shapes = root.get_raw("shapes");
  if (!shapes)
    throw ConfigError(root.path_of("shapes"),
                      fmt::format("missing (expected the shapes of {}'s inputs by name)", op_name));
  // One timed shape (an object), or several (a list of objects) with
  // optional weights: the objective is then their weighted geometric mean.
  if (shapes->is_array()) {
    if (shapes->empty())
      throw ConfigError(root.path_of("shapes"), "expected at least one shape object");
    for (size_t i = 0; i < shapes->size(); ++i) {
      ShapeSet s = parse_shapes(*t.op, (*shapes)[i], fmt::format("{}[{}]", root.path_of("shapes"), i));
      for (size_t j = 0; j < t.timed.size(); ++j)
        if (t.timed[j].shapes == s.shapes)
          throw ConfigError(fmt::format("{}[{}]", root.path_of("shapes"), i),
                            fmt::format("the same shapes as shapes[{}]: each timed shape once", j));
      t.timed.push_back(std::move(s));
    }
  } else {
    t.timed.push_back(parse_shapes(*t.op, *shapes, root.path_of("shapes")));
  }
  t.main = t.timed.front();
  t.weights.assign(t.timed.size(), 1.0);
  if (const nlohmann::json* w = root.get_raw("shape_weights")) {
    const std::string path = root.path_of("shape_weights");
    if (!shapes->is_array())
      throw ConfigError(path, "weights need a list of shapes (\"shapes\": [{...}, {...}])");
    if (!w->is_array() || w->size() != t.timed.size())
      throw ConfigError(path, fmt::format("expected a list of {} numbers, one per timed shape",
                                          t.timed.size()));
    for (size_t i = 0; i < w->size(); ++i) {
      const auto& v = (*w)[i];
      if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
        throw ConfigError(fmt::format("{}[{}]", path, i), "expected a number > 0");
      t.weights[i] = v.get<double>();
    }
  }

  if (const nlohmann::json* checks = root.get_raw("check_shapes")) {
    if (!checks->is_array())
      throw ConfigError(root.path_of("check_shapes"), "expected a list of shape objects");
    for (size_t i = 0; i < checks->size(); ++i)
      t.check_shapes.push_back(
          parse_shapes(*t.op, (*checks)[i], fmt::format("{}[{}]", root.path_of("check_shapes"), i)));
  } else {
    for (const auto& given : t.op->small_check_shapes())
      t.check_shapes.push_back({given, t.op->bind_shapes(given, "(built-in check shape)")});
  }

  JsonObject params = root.get_object("params");
  for (const auto& s : t.op->scalars()) {
    std::optional<double> fallback = s.default_value;
    if (!params.has(s.name) && !fallback)
      throw ConfigError(params.path_of(s.name), fmt::format("missing ({})", s.doc));
    t.scalars.push_back(params.get_number(s.name, fallback));
  }
  params.finish();

  t.target = root.get_string("target", std::string(default_target()));
  t.seed = static_cast<uint64_t>(
      at_least(root.get_int("seed", defaults["seed"].get<int64_t>()), 0, root.path_of("seed")));

  // Compiler settings: the defaults of this target, overridden key by key.
  {
    nlohmann::json target_defaults = nlohmann::json::object();
    if (defaults["compile"].contains(t.target)) target_defaults = defaults["compile"][t.target];
    JsonObject c = root.get_object("compile");
    auto dflt_str = [&](const char* k) -> std::optional<std::string> {
      if (target_defaults.contains(k)) return target_defaults[k].get<std::string>();
      return std::string();
    };
    auto dflt_list = [&](const char* k) -> std::optional<std::vector<std::string>> {
      if (target_defaults.contains(k)) return target_defaults[k].get<std::vector<std::string>>();
      return std::vector<std::string>{};
    };
    t.compile.cc = c.get_string("cc", dflt_str("cc"));
    t.compile.cxx = c.get_string("cxx", dflt_str("cxx"));
    t.compile.flags = c.get_string_list("flags", dflt_list("flags"));
    t.compile.extra_flags = c.get_string_list("extra_flags", dflt_list("extra_flags"));
    t.compile.arch = c.get_string("arch", dflt_str("arch"));
    c.finish();
  }

  // One mode for every output, or some outputs' modes by name over the
  // operator's defaults.
  t.compare = t.op->default_compares(t.dtype, t.main.shapes);
  if (const nlohmann::json* compare = root.get_raw("compare")) {
    auto parse_mode = [](const nlohmann::json& v, const std::string& path) {
      try {
        return CompareMode::parse(json_to_string(v, path));
      } catch (const ConfigError&) {
        throw;
      } catch (const UserError& e) {
        throw ConfigError(path, e.what());
      }
    };
    if (compare->is_object()) {
      const size_t n_in = t.op->n_inputs();
      std::vector<std::string> outputs;
      for (size_t i = n_in; i < t.op->tensors().size(); ++i)
        outputs.push_back(t.op->tensor(i).name);
      for (auto it = compare->begin(); it != compare->end(); ++it) {
        const std::string path = fmt::format("{}.{}", root.path_of("compare"), it.key());
        auto pos = std::find(outputs.begin(), outputs.end(), it.key());
        if (pos == outputs.end())
          throw ConfigError(path, fmt::format("no output '{}' to compare (outputs: {})", it.key(),
                                              fmt::join(outputs, ", ")));
        t.compare[static_cast<size_t>(pos - outputs.begin())] = parse_mode(it.value(), path);
      }
    } else if (compare->is_string()) {
      t.compare.assign(t.compare.size(), parse_mode(*compare, root.path_of("compare")));
    } else {
      throw ConfigError(root.path_of("compare"),
                        fmt::format("expected a mode like \"ulp:2\" or modes by output name like "
                                    "{{\"y\": \"exact\"}}, got {}",
                                    json_brief(*compare)));
    }
  }

  {
    const auto& d = defaults["timing"];
    JsonObject tm = root.get_object("timing");
    t.timing.min_time_s =
        positive(tm.get_number("min_time_ms", d["min_time_ms"].get<double>()),
                 tm.path_of("min_time_ms")) / 1000.0;
    t.timing.min_samples =
        at_least(tm.get_int("min_samples", d["min_samples"].get<int64_t>()), 1,
                 tm.path_of("min_samples"));
    t.timing.max_samples =
        at_least(tm.get_int("max_samples", d["max_samples"].get<int64_t>()), t.timing.min_samples,
                 tm.path_of("max_samples"));
    double warm = tm.get_number("warmup_ms", d["warmup_ms"].get<double>());
    if (warm < 0) throw ConfigError(tm.path_of("warmup_ms"), "expected a number >= 0");
    t.timing.warmup_s = warm / 1000.0;
    t.timing.min_warmup =
        at_least(tm.get_int("min_warmup", d["min_warmup"].get<int64_t>()), 0,
                 tm.path_of("min_warmup"));
    t.timing.l2 = tm.get_string("l2", d["l2"].get<std::string>());
    if (t.timing.l2 != "dirty" && t.timing.l2 != "clean")
      throw ConfigError(tm.path_of("l2"),
                        fmt::format("expected \"dirty\" or \"clean\", got \"{}\"", t.timing.l2));
    // A runner that cannot flush by reading would take "clean" and not
    // honour it.
    const TargetTraits* traits = find_target_traits(t.target);
    if (t.timing.l2 == "clean" && traits && !traits->clean_l2_timing) {
      std::vector<std::string> can;
      for (const TargetTraits& tt : all_target_traits())
        if (tt.clean_l2_timing) can.push_back(tt.name);
      throw ConfigError(tm.path_of("l2"),
                        fmt::format("\"clean\" is not for target {}, whose runner flushes by "
                                    "writing only (targets that time from a clean L2: {})",
                                    t.target, fmt::join(can, ", ")));
    }
    tm.finish();
  }

  {
    const auto& d = defaults["limits"];
    JsonObject lm = root.get_object("limits");
    t.limits.timeout_s =
        positive(lm.get_number("timeout_s", d["timeout_s"].get<double>()), lm.path_of("timeout_s"));
    t.limits.max_total_s = positive(lm.get_number("max_total_s", d["max_total_s"].get<double>()),
                                    lm.path_of("max_total_s"));
    t.limits.memory_mb = at_least(lm.get_int("memory_mb", d["memory_mb"].get<int64_t>()), 64,
                                  lm.path_of("memory_mb"));
    t.limits.output_kb =
        at_least(lm.get_int("output_kb", d["output_kb"].get<int64_t>()), 1, lm.path_of("output_kb"));
    t.limits.compile_timeout_s =
        positive(lm.get_number("compile_timeout_s", d["compile_timeout_s"].get<double>()),
                 lm.path_of("compile_timeout_s"));
    lm.finish();
  }

  if (const nlohmann::json* knobs = root.get_raw("knobs")) {
    JsonObject k(*knobs, root.path_of("knobs"));
    for (auto it = knobs->begin(); it != knobs->end(); ++it) {
      std::string path = k.path_of(it.key());
      const auto& v = it.value();
      std::vector<int64_t> values;
      if (v.is_array()) {
        for (size_t i = 0; i < v.size(); ++i)
          values.push_back(json_to_int(v[i], fmt::format("{}[{}]", path, i)));
      } else {
        values.push_back(json_to_int(v, path));
      }
      if (values.empty()) throw ConfigError(path, "expected a value or a non-empty list");
      t.knob_restrictions[it.key()] = values;
      k.get_raw(it.key());
    }
  }

  t.config_knobs = parse_config_knobs(root.get_raw("tune_params"), root.path_of("tune_params"),
                                      root.get_raw("restrictions"), root.path_of("restrictions"));
  if (const nlohmann::json* entry = root.get_raw("entry")) {
    t.entry = parse_entry(*entry, root.path_of("entry"), *t.op, t.target, t.config_knobs);
    t.config_knobs.device = device_restrictions(t.entry, t.config_knobs);
  }
  if (const nlohmann::json* kernels = root.get_raw("kernels")) {
    const auto task_dir = origin.empty() ? std::filesystem::current_path()
                                         : std::filesystem::absolute(origin).parent_path();
    t.kernel_files = resolve_kernel_globs(*kernels, root.path_of("kernels"), task_dir);
  }

  if (const nlohmann::json* search = root.get_raw("search")) {
    if (!search->is_object())
      throw ConfigError(root.path_of("search"), "expected an object (strategy, stop, ...)");
    t.search = *search;
  }

  root.finish();
  t.config = config;
  // Self-contained (reference text inlined), so resume, explain and export
  // rebuild the operator without the files or the directory it came from.
  // A built-in stays its name.
  if (auto* d = dynamic_cast<const DefinedOperator*>(t.op); d && !d->builtin())
    t.config["operator"] = d->definition();

  // What the task resolved to, and the hash of what changes a measurement.
  nlohmann::json r;
  r["name"] = t.name;
  r["operator"] = op_name;
  r["dtype"] = std::string(dtype_name(t.dtype));
  // One timed shape stays an object (so single-shape tasks keep their hash).
  if (t.multi_shape()) {
    r["shapes"] = nlohmann::json::array();
    for (const auto& s : t.timed) r["shapes"].push_back(s.given);
    r["shape_weights"] = t.weights;
  } else {
    r["shapes"] = t.main.given;
  }
  r["params"] = nlohmann::json::object();
  for (size_t i = 0; i < t.scalars.size(); ++i) r["params"][t.op->scalars()[i].name] = t.scalars[i];
  r["target"] = t.target;
  r["compile"] = {{"cc", t.compile.cc},
                  {"cxx", t.compile.cxx},
                  {"flags", t.compile.flags},
                  {"extra_flags", t.compile.extra_flags}};
  if (!t.compile.arch.empty()) r["compile"]["arch"] = t.compile.arch;
  // A string when the outputs share one mode (so single-mode tasks keep their
  // hash), else the mode by output name.
  if (std::all_of(t.compare.begin(), t.compare.end(),
                  [&](const CompareMode& m) { return m.str() == t.compare[0].str(); })) {
    r["compare"] = t.compare[0].str();
  } else {
    r["compare"] = nlohmann::json::object();
    for (size_t o = 0; o < t.compare.size(); ++o)
      r["compare"][t.op->tensor(t.op->n_inputs() + o).name] = t.compare[o].str();
  }
  if (t.mixed_dtypes()) {
    r["dtypes"] = nlohmann::json::object();
    for (size_t i = 0; i < t.dtypes.size(); ++i)
      r["dtypes"][t.op->tensor(i).name] = std::string(dtype_name(t.dtypes[i]));
  }
  r["check_shapes"] = nlohmann::json::array();
  for (const auto& c : t.check_shapes) r["check_shapes"].push_back(c.given);
  r["seed"] = t.seed;
  r["knobs"] = t.knob_restrictions;
  // A defined operator's identity (its definition and reference source):
  // editing either invalidates stored measurements and cached references. A
  // built-in hashes as its name, as it did as C++ code: stored runs resume.
  if (auto* d = dynamic_cast<const DefinedOperator*>(t.op); d && !d->builtin())
    r["operator_definition"] = d->identity_hash();
  // The entry changes the program that is compiled; the config's knobs only
  // choose which points are searched (a point's values reach the compiler as
  // -D defines, like a source's own knobs), so they stay out of the hash.
  if (!t.entry.empty()) r["entry"] = t.entry.spec;
  nlohmann::json measured = r;
  measured.erase("name");
  measured.erase("seed");
  measured.erase("knobs");  // which points may be searched, not how one is measured
  // The resolved config parses back on its own (the store keeps it as
  // runs.task_json): a defined operator as its definition, reference inlined,
  // not a name no registry knows nor a path relative to the task file. A
  // built-in stays its name.
  if (auto* d = dynamic_cast<const DefinedOperator*>(t.op); d && !d->builtin()) {
    r["operator"] = d->definition();
    r.erase("operator_definition");
  }
  if (!t.config_knobs.empty()) {
    for (const auto& k : t.config_knobs.knobs) r["tune_params"][k.name] = k.values;
    r["restrictions"] = t.config_knobs.restrictions;
  }
  if (!t.kernel_files.empty()) {
    r["kernels"] = nlohmann::json::array();
    for (const auto& f : t.kernel_files) r["kernels"].push_back(f.string());
  }
  r["timing"] = {{"min_time_ms", t.timing.min_time_s * 1000},
                 {"min_samples", t.timing.min_samples},
                 {"max_samples", t.timing.max_samples},
                 {"warmup_ms", t.timing.warmup_s * 1000},
                 {"min_warmup", t.timing.min_warmup}};
  r["timing"]["l2"] = t.timing.l2;
  r["limits"] = {{"timeout_s", t.limits.timeout_s},
                 {"max_total_s", t.limits.max_total_s},
                 {"memory_mb", t.limits.memory_mb},
                 {"output_kb", t.limits.output_kb},
                 {"compile_timeout_s", t.limits.compile_timeout_s}};
  // The L2 state changes what a kernel measures, unlike the other timing
  // settings: a clean L2 is another measurement, with its own hash. Hashed
  // only when not the default, so that every task hashed before the key
  // existed keeps its hash (stored runs resume).
  if (t.timing.l2 != "dirty") measured["timing_l2"] = t.timing.l2;
  t.resolved = r;
  t.hash = sha256_hex(measured.dump()).substr(0, 16);
  return t;
}

Task parse_stored_task(const nlohmann::json& resolved) {
  nlohmann::json j = resolved;
  j.erase("kernels");  // absolute paths that may be gone; not needed to count or compare
  return parse_task(j);
}

std::string Task::compare_str() const {
  bool same = true;
  for (const auto& m : compare) same = same && m.str() == compare.front().str();
  if (same) return compare.empty() ? std::string() : compare.front().str();
  std::vector<std::string> parts;
  for (size_t o = 0; o < compare.size(); ++o)
    parts.push_back(fmt::format("{} {}", op->tensor(op->n_inputs() + o).name, compare[o].str()));
  return fmt::format("{}", fmt::join(parts, ", "));
}

Task Task::for_shape(size_t k) const {
  Task t = *this;
  if (k < timed.size()) t.main = timed[k];
  t.timed = {t.main};
  t.weights = {1.0};
  return t;
}

bool Task::mixed_dtypes() const {
  for (DType d : dtypes)
    if (d != dtype) return true;
  return false;
}

std::vector<std::map<std::string, int64_t>> dimension_values(const Task& task) {
  std::vector<std::map<std::string, int64_t>> out;
  if (!task.op) return out;
  const auto& tensors = task.op->tensors();
  std::vector<const ShapeSet*> timed;
  for (const auto& s : task.timed) timed.push_back(&s);
  if (timed.empty()) timed.push_back(&task.main);
  for (const ShapeSet* set : timed) {
    std::map<std::string, int64_t> dims;
    for (size_t i = 0; i < tensors.size() && i < set->shapes.size(); ++i) {
      if (!is_identifier(tensors[i].name)) continue;
      for (size_t d = 0; d < set->shapes[i].size(); ++d)
        dims[fmt::format("DIM_{}_{}", tensors[i].name, d)] = set->shapes[i][d];
    }
    out.push_back(std::move(dims));
  }
  return out;
}

std::string timed_shapes_str(const Task& task) {
  if (!task.multi_shape()) return shape_str(task.main.shapes[0]);
  std::vector<std::string> parts;
  for (size_t k = 0; k < task.timed.size(); ++k)
    parts.push_back(fmt::format("{} x{:g}", shape_str(task.timed[k].shapes[0]), task.weights[k]));
  return fmt::format("{}", fmt::join(parts, ", "));
}

Task load_task(const std::filesystem::path& path) {
  return parse_task(read_json_file(path.string()), path);
}

}  // namespace kevo
