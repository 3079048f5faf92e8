#include "core/defined_operator.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/json_reader.h"
#include "core/operators/row_operator.h"
#include "core/paths.h"

namespace kevo {

namespace {

// Expression errors in words of sizes ("unknown size 'K' (declared: M, N)").
Expr parse_expr(const nlohmann::json& v, const std::vector<std::string>& sizes,
                const std::string& path) {
  std::string text;
  if (v.is_string())
    text = v.get<std::string>();
  else if (v.is_number_integer())
    text = v.dump();
  else
    throw ConfigError(path,
                      fmt::format("expected an expression like \"M * N\", got {}", json_brief(v)));
  try {
    return Expr::parse(text, sizes);
  } catch (const ExprError& e) {
    std::string what = e.what();
    if (what.rfind("unknown name", 0) == 0) {
      what.replace(0, 12, "unknown size");
      if (auto p = what.find("(known:"); p != std::string::npos) what.replace(p, 7, "(declared:");
      if (sizes.empty()) what += " (no \"sizes\" declared)";
    }
    throw ConfigError(path, fmt::format("{} in \"{}\"", what, text));
  }
}

// The size an expression is exactly (e.g. "N"), or -1 for anything else.
int plain_size(const Expr& e, const std::vector<std::string>& sizes) {
  std::string t;
  for (char c : e.text())
    if (c != ' ' && c != '\t') t += c;
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] == t) return static_cast<int>(i);
  return -1;
}

std::string shape_doc(const nlohmann::json& shape) {
  std::vector<std::string> parts;
  for (const auto& d : shape) parts.push_back(d.is_string() ? d.get<std::string>() : d.dump());
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

CompareMode dtype_compare(DType dtype) {
  CompareMode m;
  m.kind = CompareMode::tol;
  switch (dtype) {
    case DType::f64:
      m.atol = 1e-12;
      m.rtol = 1e-10;
      break;
    case DType::f32:
      m.atol = 1e-5;
      m.rtol = 1e-4;
      break;
    case DType::f16:
      m.atol = 1e-3;
      m.rtol = 1e-2;
      break;
    case DType::bf16:
      m.atol = 1e-2;
      m.rtol = 2e-2;
      break;
    default:
      m.kind = CompareMode::exact;
      break;
  }
  return m;
}

Distribution parse_distribution(JsonObject d) {
  Distribution r;
  r.lo = d.get_number("lo", -1.0);
  r.hi = d.get_number("hi", 1.0);
  r.row_period = d.get_int("row_period", 0);
  r.row_step = d.get_number("row_step", 0.0);
  if (!std::isfinite(r.lo) || !std::isfinite(r.hi) || !(r.lo < r.hi))
    throw ConfigError(d.path(),
                      fmt::format("expected finite lo < hi, got lo {} and hi {}", r.lo, r.hi));
  if (r.row_period < 0) throw ConfigError(d.path_of("row_period"), "expected an integer >= 0");
  d.finish();
  return r;
}

}  // namespace

std::shared_ptr<const DefinedOperator> DefinedOperator::parse(
    const nlohmann::json& definition, const std::string& path,
    const std::filesystem::path& base_dir) {
  JsonObject d(definition, path);
  const std::string name = d.get_string("name");
  if (name.empty()) throw ConfigError(d.path_of("name"), "expected a non-empty name");

  // The reference first: its source is part of the operator's identity.
  nlohmann::json normalized = definition;
  std::string source, language, origin;
  const bool has_file = d.has("reference"), has_source = d.has("source");
  if (has_file == has_source)
    throw ConfigError(d.path_of("reference"),
                      "expected exactly one of \"reference\" (a C or C++ file) and \"source\" "
                      "(the C or C++ text)");
  if (has_file) {
    const std::string file = d.get_string("reference");
    const auto full = base_dir / file;
    std::ifstream in(full, std::ios::binary);
    if (!in)
      throw ConfigError(d.path_of("reference"), fmt::format("cannot read {}", full.string()));
    source.assign(std::istreambuf_iterator<char>(in), {});
    const auto ext = full.extension().string();
    language = (ext == ".c") ? "c" : (ext == ".cc" || ext == ".cpp" || ext == ".cxx") ? "c++" : "";
    origin = full.string();
    normalized.erase("reference");
    normalized["source"] = source;
    normalized["origin"] = origin;
  } else {
    source = d.get_string("source");
    origin = d.get_string("origin", d.path_of("source"));
  }
  language = d.get_string("language", language.empty() ? std::string("c") : language);
  if (language != "c" && language != "c++")
    throw ConfigError(d.path_of("language"),
                      fmt::format("expected \"c\" or \"c++\", got \"{}\"", language));
  normalized["language"] = language;

  std::shared_ptr<DefinedOperator> op(
      new DefinedOperator(name, ReferenceProgram(name, source, language, origin)));
  op->formula_ = d.get_string("formula", "");

  op->sizes_ = d.get_string_list("sizes", std::vector<std::string>{});
  for (size_t i = 0; i < op->sizes_.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (op->sizes_[i] == op->sizes_[j])
        throw ConfigError(fmt::format("{}[{}]", d.path_of("sizes"), i),
                          fmt::format("duplicate size '{}'", op->sizes_[i]));

  const nlohmann::json* tensors = d.get_raw("tensors");
  if (!tensors || !tensors->is_array() || tensors->empty())
    throw ConfigError(d.path_of("tensors"),
                      "expected a list of tensors like {\"name\": \"x\", \"role\": \"in\", "
                      "\"shape\": [\"M\", \"N\"]}");
  std::vector<Tensor> ins, outs;
  std::vector<std::string> names;
  for (size_t i = 0; i < tensors->size(); ++i) {
    JsonObject t((*tensors)[i], fmt::format("{}[{}]", d.path_of("tensors"), i));
    Tensor tensor;
    tensor.decl.name = t.get_string("name");
    if (std::find(names.begin(), names.end(), tensor.decl.name) != names.end())
      throw ConfigError(t.path_of("name"), fmt::format("duplicate tensor '{}'", tensor.decl.name));
    names.push_back(tensor.decl.name);
    const std::string role = t.get_string("role");
    if (role != "in" && role != "out")
      throw ConfigError(t.path_of("role"),
                        fmt::format("expected \"in\" or \"out\", got \"{}\"", role));
    tensor.decl.is_output = role == "out";
    const nlohmann::json* shape = t.get_raw("shape");
    if (!shape || !shape->is_array() || shape->empty() || shape->size() > 8)
      throw ConfigError(t.path_of("shape"), "expected 1 to 8 dimensions like [\"M\", \"N\"]");
    for (size_t j = 0; j < shape->size(); ++j)
      tensor.shape.push_back(
          parse_expr((*shape)[j], op->sizes_, fmt::format("{}[{}]", t.path_of("shape"), j)));
    tensor.decl.doc = shape_doc(*shape);
    if (t.has("dtype")) {
      const std::string dt = t.get_string("dtype");
      tensor.dtype = parse_dtype(dt);
      if (!tensor.dtype)
        throw ConfigError(
            t.path_of("dtype"),
            fmt::format("unknown dtype '{}' (expected one of: {})", dt, dtype_names()));
    }
    if (t.has("distribution")) {
      if (tensor.decl.is_output)
        throw ConfigError(t.path_of("distribution"), "only inputs have a distribution");
      tensor.distribution = parse_distribution(t.get_object("distribution"));
    }
    if (t.has("compare")) {
      if (!tensor.decl.is_output)
        throw ConfigError(t.path_of("compare"), "only outputs are compared");
      try {
        tensor.compare = CompareMode::parse(t.get_string("compare"));
      } catch (const ConfigError&) {
        throw;
      } catch (const UserError& e) {
        throw ConfigError(t.path_of("compare"), e.what());
      }
    }
    t.finish();
    (tensor.decl.is_output ? outs : ins).push_back(std::move(tensor));
  }
  if (ins.empty()) throw ConfigError(d.path_of("tensors"), "no input tensor (role \"in\")");
  if (outs.empty()) throw ConfigError(d.path_of("tensors"), "no output tensor (role \"out\")");
  // ABI order: inputs, then outputs, each in declared order.
  for (auto* group : {&ins, &outs})
    for (auto& t : *group) {
      op->decls_.push_back(t.decl);
      op->tensors_.push_back(std::move(t));
    }

  // Every size must be a whole dimension somewhere, or shapes cannot fix it.
  op->size_source_.assign(op->sizes_.size(), {-1, -1});
  for (size_t i = 0; i < op->tensors_.size(); ++i)
    for (size_t j = 0; j < op->tensors_[i].shape.size(); ++j) {
      const int k = plain_size(op->tensors_[i].shape[j], op->sizes_);
      if (k >= 0 && op->size_source_[k].first < 0)
        op->size_source_[k] = {static_cast<int>(i), static_cast<int>(j)};
    }
  for (size_t k = 0; k < op->sizes_.size(); ++k)
    if (op->size_source_[k].first < 0)
      throw ConfigError(
          fmt::format("{}[{}]", d.path_of("sizes"), k),
          fmt::format("size '{}' is no tensor's whole dimension, so no shape fixes it",
                      op->sizes_[k]));

  if (const nlohmann::json* scalars = d.get_raw("scalars")) {
    if (!scalars->is_array())
      throw ConfigError(d.path_of("scalars"), "expected a list like [{\"name\": \"alpha\"}]");
    for (size_t i = 0; i < scalars->size(); ++i) {
      JsonObject s((*scalars)[i], fmt::format("{}[{}]", d.path_of("scalars"), i));
      ScalarDecl decl;
      decl.name = s.get_string("name");
      for (const auto& other : op->scalars_)
        if (other.name == decl.name)
          throw ConfigError(s.path_of("name"), fmt::format("duplicate scalar '{}'", decl.name));
      if (s.has("default")) decl.default_value = s.get_number("default");
      decl.doc = s.get_string("doc", "a scalar of " + name);
      s.finish();
      op->scalars_.push_back(std::move(decl));
    }
  }

  if (const nlohmann::json* f = d.get_raw("flops"))
    op->flops_ = parse_expr(*f, op->sizes_, d.path_of("flops"));
  if (const nlohmann::json* b = d.get_raw("bytes"))
    op->bytes_ = parse_expr(*b, op->sizes_, d.path_of("bytes"));

  if (const nlohmann::json* checks = d.get_raw("check_sizes")) {
    if (!checks->is_array() || checks->empty())
      throw ConfigError(d.path_of("check_sizes"), "expected a list like [{\"M\": 3, \"N\": 37}]");
    for (size_t i = 0; i < checks->size(); ++i) {
      JsonObject c((*checks)[i], fmt::format("{}[{}]", d.path_of("check_sizes"), i));
      std::vector<int64_t> values;
      for (const auto& s : op->sizes_) {
        const int64_t v = c.get_int(s);
        if (v < 1) throw ConfigError(c.path_of(s), "expected a size >= 1");
        values.push_back(v);
      }
      c.finish();
      op->check_sizes_.push_back(std::move(values));
    }
  } else {
    // Ragged on purpose: no multiple of a vector width, and a second set
    // where sizes differ from each other.
    const int64_t cycle[] = {3, 129, 17};
    op->check_sizes_.push_back(std::vector<int64_t>(op->sizes_.size(), 37));
    std::vector<int64_t> mixed;
    for (size_t k = 0; k < op->sizes_.size(); ++k) mixed.push_back(cycle[k % 3]);
    op->check_sizes_.push_back(std::move(mixed));
  }
  d.finish();

  op->definition_ = std::move(normalized);
  op->identity_ = sha256_hex(op->definition_.dump()).substr(0, 16);
  return op;
}

std::vector<Shape> DefinedOperator::bind_shapes(const ShapeMap& given,
                                                const std::string& path) const {
  check_tensor_names(*this, given, path);
  std::vector<std::optional<int64_t>> value(sizes_.size());
  std::vector<std::string> fixed_by(sizes_.size());
  for (const auto& t : tensors_) {
    auto it = given.find(t.decl.name);
    if (it == given.end()) continue;
    const std::string at = fmt::format("{}.{}", path, t.decl.name);
    if (it->second.size() != t.shape.size())
      throw ConfigError(at, fmt::format("expected rank {} ({}), got {}", t.shape.size(), t.decl.doc,
                                        shape_str(it->second)));
    for (size_t j = 0; j < t.shape.size(); ++j) {
      const int k = plain_size(t.shape[j], sizes_);
      if (k < 0) continue;
      if (value[k] && *value[k] != it->second[j])
        throw ConfigError(fmt::format("{}[{}]", at, j),
                          fmt::format("size {} is {} here but {} in {}", sizes_[k], it->second[j],
                                      *value[k], fixed_by[k]));
      value[k] = it->second[j];
      fixed_by[k] = t.decl.name;
    }
  }
  std::vector<int64_t> values;
  for (size_t k = 0; k < sizes_.size(); ++k) {
    if (!value[k]) {
      const auto& src = tensors_[size_source_[k].first].decl;
      throw ConfigError(fmt::format("{}.{}", path, src.name),
                        fmt::format("missing: size {} is not fixed by the shapes given (give the "
                                    "shape of {} {})",
                                    sizes_[k], src.name, src.doc));
    }
    values.push_back(*value[k]);
  }
  std::vector<Shape> shapes;
  for (const auto& t : tensors_) {
    Shape s;
    for (const auto& e : t.shape) {
      auto v = e.evaluate(values.data());
      if (!v || *v < 1)
        throw ConfigError(fmt::format("{}.{}", path, t.decl.name),
                          fmt::format("dimension \"{}\" of {} is not a size >= 1 at these sizes",
                                      e.text(), t.decl.name));
      s.push_back(*v);
    }
    auto it = given.find(t.decl.name);
    if (it != given.end() && it->second != s)
      throw ConfigError(fmt::format("{}.{}", path, t.decl.name),
                        fmt::format("shape {} does not match {} = {}", shape_str(it->second),
                                    shape_str(s), t.decl.doc));
    shapes.push_back(std::move(s));
  }
  return shapes;
}

std::vector<int64_t> DefinedOperator::size_values(const std::vector<Shape>& shapes) const {
  std::vector<int64_t> v;
  for (const auto& [t, j] : size_source_) v.push_back(shapes[t][j]);
  return v;
}

double DefinedOperator::count(const std::optional<Expr>& e,
                              const std::vector<Shape>& shapes) const {
  if (!e) return 0;
  auto v = e->evaluate(size_values(shapes).data());
  if (!v) throw UserError(fmt::format("{}: \"{}\" overflows at these sizes", name_, e->text()));
  return static_cast<double>(*v);
}

double DefinedOperator::flops(const std::vector<Shape>& shapes) const {
  return count(flops_, shapes);
}

double DefinedOperator::bytes(const std::vector<Shape>& shapes, DType dtype) const {
  return bytes_ ? count(bytes_, shapes) : Operator::bytes(shapes, dtype);
}

std::vector<DType> DefinedOperator::tensor_dtypes(DType dtype) const {
  std::vector<DType> out;
  for (const auto& t : tensors_) out.push_back(t.dtype.value_or(dtype));
  return out;
}

Distribution DefinedOperator::distribution(size_t input) const {
  return tensors_[input].distribution;
}

void DefinedOperator::reference(const std::vector<ConstTensorView>& in,
                                const std::vector<double>& scalars,
                                const std::vector<TensorView>& out) const {
  // The reference sees f64 inputs (each tensor's values, widened from its
  // dtype) and computes f64 outputs; kevo rounds each to its own dtype.
  std::vector<std::vector<double>> in64, out64;
  std::vector<Shape> in_shapes, out_shapes;
  for (const auto& t : in) {
    in64.emplace_back(static_cast<size_t>(numel(t.shape)));
    parallel_for(numel(t.shape), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) in64.back()[i] = t.at(i);
    });
    in_shapes.push_back(t.shape);
  }
  for (const auto& t : out) {
    out64.emplace_back(static_cast<size_t>(numel(t.shape)));
    out_shapes.push_back(t.shape);
  }
  reference_.run(in64, in_shapes, out64, out_shapes, scalars);
  for (size_t o = 0; o < out.size(); ++o)
    parallel_for(numel(out[o].shape), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        store_element(out[o].dtype, out[o].data, static_cast<size_t>(i), out64[o][i]);
    });
}

CompareMode DefinedOperator::default_compare(DType dtype, const std::vector<Shape>&) const {
  return dtype_compare(dtype);
}

std::vector<CompareMode> DefinedOperator::default_compares(DType dtype,
                                                           const std::vector<Shape>&) const {
  std::vector<CompareMode> modes;
  for (const auto& t : tensors_)
    if (t.decl.is_output)
      modes.push_back(t.compare ? *t.compare : dtype_compare(t.dtype.value_or(dtype)));
  return modes;
}

ShapeMap DefinedOperator::shapes_of(const std::vector<int64_t>& sizes) const {
  ShapeMap m;
  for (const auto& t : tensors_) {
    Shape s;
    for (const auto& e : t.shape) s.push_back(e.evaluate(sizes.data()).value_or(0));
    m[t.decl.name] = std::move(s);
  }
  return m;
}

std::vector<ShapeMap> DefinedOperator::small_check_shapes() const {
  std::vector<ShapeMap> out;
  for (const auto& sizes : check_sizes_) out.push_back(shapes_of(sizes));
  return out;
}

std::shared_ptr<const DefinedOperator> parse_operator_definition(
    const nlohmann::json& value, const std::string& path, const std::filesystem::path& base_dir) {
  if (value.is_object()) return DefinedOperator::parse(value, path, base_dir);
  if (!value.is_string()) return nullptr;
  const std::string text = value.get<std::string>();
  if (text.size() < 5 || text.substr(text.size() - 5) != ".json") return nullptr;
  const auto file = base_dir / text;
  if (!std::filesystem::is_regular_file(file))
    throw ConfigError(path, fmt::format("cannot read the operator definition {}", file.string()));
  return DefinedOperator::parse(read_json_file(file.string()), file.string() + ": $",
                                file.parent_path());
}

nlohmann::json operator_definition(const Operator& op) {
  auto* d = dynamic_cast<const DefinedOperator*>(&op);
  return d ? d->definition() : nlohmann::json();
}

const Operator& job_operator(const std::string& name, const nlohmann::json& definition,
                             std::shared_ptr<const Operator>& holder) {
  if (definition.is_null()) return operators().get(name);
  holder = DefinedOperator::parse(definition, "$.op_definition", {});
  return *holder;
}

}  // namespace kevo
