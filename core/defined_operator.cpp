#include "core/defined_operator.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/json_reader.h"
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

// The reserved name for the product of the "..." dimensions in expressions.
constexpr const char* kBatch = "BATCH";

bool is_ellipsis(const nlohmann::json& v) { return v.is_string() && v.get<std::string>() == "..."; }

// A shape as a task gives it: sizes >= 1.
Shape parse_check_shape(const nlohmann::json& v, const std::string& path) {
  if (!v.is_array() || v.empty())
    throw ConfigError(path, fmt::format("expected a shape like [7, 129], got {}", json_brief(v)));
  Shape s;
  for (size_t i = 0; i < v.size(); ++i) {
    const int64_t d = json_to_int(v[i], fmt::format("{}[{}]", path, i));
    if (d < 1) throw ConfigError(fmt::format("{}[{}]", path, i), "expected a size >= 1");
    s.push_back(d);
  }
  return s;
}

}  // namespace

// ---- comparison specs -------------------------------------------------------

CompareSpec::Mode CompareSpec::parse_mode(const std::string& text,
                                          const std::vector<std::string>& names,
                                          const std::string& path) {
  Mode m;
  if (text.rfind("tol:", 0) != 0) {
    try {
      m.fixed = CompareMode::parse(text);
    } catch (const UserError& e) {
      throw ConfigError(path, e.what());
    }
    return m;
  }
  // tol:ATOL,RTOL where each is NUMBER or NUMBER * EXPR.
  const std::string rest = text.substr(4);
  const size_t comma = rest.find(',');
  auto number = [&](const std::string& part) {
    Number n;
    const size_t star = part.find('*');
    const std::string lead = part.substr(0, star);
    char* end = nullptr;
    n.coefficient = std::strtod(lead.c_str(), &end);
    while (end && (*end == ' ' || *end == '\t')) ++end;
    if (lead.empty() || end != lead.c_str() + lead.size() || !std::isfinite(n.coefficient) ||
        n.coefficient < 0)
      throw ConfigError(path, fmt::format("bad comparison '{}': tol needs two numbers >= 0, each "
                                          "maybe times an expression of sizes, like "
                                          "tol:5e-7*K,1e-5",
                                          text));
    if (star != std::string::npos) n.times = parse_expr(part.substr(star + 1), names, path);
    return n;
  };
  if (comma == std::string::npos)
    throw ConfigError(path, fmt::format("bad comparison '{}': tol needs two numbers >= 0, like "
                                        "tol:1e-6,1e-5",
                                        text));
  m.fixed.kind = CompareMode::tol;
  m.atol = number(rest.substr(0, comma));
  m.rtol = number(rest.substr(comma + 1));
  return m;
}

CompareSpec CompareSpec::parse(const nlohmann::json& value, const std::vector<std::string>& names,
                               const std::string& path) {
  CompareSpec spec;
  if (value.is_string()) {
    spec.by_dtype_["default"] = parse_mode(value.get<std::string>(), names, path);
    return spec;
  }
  if (!value.is_object() || value.empty())
    throw ConfigError(path, fmt::format("expected a mode like \"tol:1e-6,1e-5\" or modes by "
                                        "dtype like {{\"f32\": \"tol:1e-6,1e-5\", \"default\": "
                                        "\"exact\"}}, got {}",
                                        json_brief(value)));
  for (auto it = value.begin(); it != value.end(); ++it) {
    const std::string at = fmt::format("{}.{}", path, it.key());
    if (it.key() != "default" && !parse_dtype(it.key()))
      throw ConfigError(at, fmt::format("unknown dtype '{}' (expected one of: {}, or default)",
                                        it.key(), dtype_names()));
    if (!it.value().is_string())
      throw ConfigError(at, fmt::format("expected a mode like \"tol:1e-6,1e-5\", got {}",
                                        json_brief(it.value())));
    spec.by_dtype_[it.key()] = parse_mode(it.value().get<std::string>(), names, at);
  }
  return spec;
}

std::optional<CompareMode> CompareSpec::resolve(DType dtype, const int64_t* values) const {
  auto it = by_dtype_.find(std::string(dtype_name(dtype)));
  if (it == by_dtype_.end()) it = by_dtype_.find("default");
  if (it == by_dtype_.end()) return std::nullopt;
  CompareMode m = it->second.fixed;
  if (m.kind != CompareMode::tol) return m;
  auto value = [&](const Number& n) {
    if (!n.times) return n.coefficient;
    auto v = n.times->evaluate(values);
    if (!v)
      throw UserError(
          fmt::format("comparison: \"{}\" overflows at these sizes", n.times->text()));
    return n.coefficient * static_cast<double>(*v);
  };
  m.atol = value(it->second.atol);
  m.rtol = value(it->second.rtol);
  return m;
}

// ---- definitions ------------------------------------------------------------

std::shared_ptr<const DefinedOperator> DefinedOperator::parse(
    const nlohmann::json& definition, const std::string& path,
    const std::filesystem::path& base_dir, bool builtin) {
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
  op->builtin_ = builtin;
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
  // A leading "..." anywhere makes BATCH (the product of those dimensions) a
  // name expressions may read.
  for (const auto& t : *tensors)
    if (t.is_object() && t.contains("shape") && t["shape"].is_array() && !t["shape"].empty() &&
        is_ellipsis(t["shape"][0]))
      op->has_batch_ = true;
  op->expr_names_ = op->sizes_;
  if (op->has_batch_) {
    for (size_t i = 0; i < op->sizes_.size(); ++i)
      if (op->sizes_[i] == kBatch)
        throw ConfigError(fmt::format("{}[{}]", d.path_of("sizes"), i),
                          fmt::format("'{}' is reserved for the product of the \"...\" "
                                      "dimensions",
                                      kBatch));
    op->expr_names_.push_back(kBatch);
  }
  const auto& names_in_exprs = op->expr_names_;

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
      throw ConfigError(t.path_of("shape"),
                        "expected 1 to 8 dimensions like [\"M\", \"N\"] or [\"...\", \"N\"]");
    tensor.batch = is_ellipsis((*shape)[0]);
    for (size_t j = tensor.batch ? 1 : 0; j < shape->size(); ++j) {
      const std::string at = fmt::format("{}[{}]", t.path_of("shape"), j);
      if (is_ellipsis((*shape)[j]))
        throw ConfigError(at, "\"...\" stands for leading dimensions: only the first may be it");
      tensor.shape.push_back(parse_expr((*shape)[j], names_in_exprs, at));
    }
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
    if (const nlohmann::json* compare = t.get_raw("compare")) {
      if (!tensor.decl.is_output)
        throw ConfigError(t.path_of("compare"), "only outputs are compared");
      tensor.compare = CompareSpec::parse(*compare, names_in_exprs, t.path_of("compare"));
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
    op->flops_ = parse_expr(*f, names_in_exprs, d.path_of("flops"));
  if (const nlohmann::json* b = d.get_raw("bytes"))
    op->bytes_ = parse_expr(*b, names_in_exprs, d.path_of("bytes"));

  const nlohmann::json* checks = d.get_raw("check_sizes");
  const nlohmann::json* check_shapes = d.get_raw("check_shapes");
  if (checks && check_shapes)
    throw ConfigError(d.path_of("check_shapes"),
                      "give either \"check_sizes\" or \"check_shapes\", not both");
  if (checks) {
    if (!checks->is_array() || checks->empty())
      throw ConfigError(d.path_of("check_sizes"), "expected a list like [{\"M\": 3, \"N\": 37}]");
    for (size_t i = 0; i < checks->size(); ++i) {
      JsonObject c((*checks)[i], fmt::format("{}[{}]", d.path_of("check_sizes"), i));
      CheckSizes values;
      for (const auto& s : op->sizes_) {
        const int64_t v = c.get_int(s);
        if (v < 1) throw ConfigError(c.path_of(s), "expected a size >= 1");
        values.sizes.push_back(v);
      }
      if (const nlohmann::json* batch = c.get_raw("...")) {
        if (!op->has_batch_)
          throw ConfigError(c.path_of("..."), "no shape of this operator starts with \"...\"");
        if (!batch->is_array())
          throw ConfigError(c.path_of("..."),
                            fmt::format("expected the leading dimensions like [3, 2], got {}",
                                        json_brief(*batch)));
        for (size_t j = 0; j < batch->size(); ++j) {
          const int64_t v = json_to_int((*batch)[j], fmt::format("{}[{}]", c.path_of("..."), j));
          if (v < 1)
            throw ConfigError(fmt::format("{}[{}]", c.path_of("..."), j), "expected a size >= 1");
          values.batch.push_back(v);
        }
      }
      c.finish();
      op->check_sizes_.push_back(std::move(values));
    }
  } else if (check_shapes) {
    if (!check_shapes->is_array() || check_shapes->empty())
      throw ConfigError(d.path_of("check_shapes"), "expected a list like [{\"x\": [7, 1003]}]");
  } else {
    // Ragged on purpose: no multiple of a vector width, and a second set
    // where sizes differ from each other (and two "..." dimensions).
    const int64_t cycle[] = {3, 129, 17};
    op->check_sizes_.push_back({std::vector<int64_t>(op->sizes_.size(), 37),
                                op->has_batch_ ? Shape{2} : Shape{}});
    std::vector<int64_t> mixed;
    for (size_t k = 0; k < op->sizes_.size(); ++k) mixed.push_back(cycle[k % 3]);
    op->check_sizes_.push_back({std::move(mixed), op->has_batch_ ? Shape{3, 2} : Shape{}});
  }
  d.finish();
  // Shapes as given: validated by binding them, like a task's check_shapes.
  if (check_shapes)
    for (size_t i = 0; i < check_shapes->size(); ++i) {
      const std::string at = fmt::format("{}[{}]", d.path_of("check_shapes"), i);
      const nlohmann::json& c = (*check_shapes)[i];
      if (!c.is_object() || c.empty())
        throw ConfigError(at, fmt::format("expected shapes by tensor name like "
                                          "{{\"x\": [7, 1003]}}, got {}",
                                          json_brief(c)));
      ShapeMap given;
      for (auto it = c.begin(); it != c.end(); ++it)
        given[it.key()] = parse_check_shape(it.value(), fmt::format("{}.{}", at, it.key()));
      op->bind_shapes(given, at);
      op->check_shapes_.push_back(std::move(given));
    }

  op->definition_ = std::move(normalized);
  op->identity_ = sha256_hex(op->definition_.dump()).substr(0, 16);
  return op;
}

std::vector<Shape> DefinedOperator::bind_shapes(const ShapeMap& given,
                                                const std::string& path) const {
  check_tensor_names(*this, given, path);
  std::vector<std::optional<int64_t>> value(sizes_.size());
  std::vector<std::string> fixed_by(sizes_.size());
  std::optional<Shape> batch;  // the "..." dimensions, from the first tensor given with them
  std::string batch_by;
  for (const auto& t : tensors_) {
    auto it = given.find(t.decl.name);
    if (it == given.end()) continue;
    const std::string at = fmt::format("{}.{}", path, t.decl.name);
    const Shape& g = it->second;
    size_t lead = 0;
    if (t.batch) {
      if (g.size() < t.shape.size() || g.size() > 8)
        throw ConfigError(at, fmt::format("expected rank {} to 8 ({}), got {}", t.shape.size(),
                                          t.decl.doc, shape_str(g)));
      lead = g.size() - t.shape.size();
      Shape b(g.begin(), g.begin() + static_cast<std::ptrdiff_t>(lead));
      if (batch && *batch != b)
        throw ConfigError(at, fmt::format("leading dimensions {} (the \"...\" of {}) differ "
                                          "from {} in {}",
                                          shape_str(b), t.decl.doc, shape_str(*batch), batch_by));
      if (!batch) {
        batch = std::move(b);
        batch_by = t.decl.name;
      }
    } else if (g.size() != t.shape.size()) {
      throw ConfigError(at, fmt::format("expected rank {} ({}), got {}", t.shape.size(), t.decl.doc,
                                        shape_str(g)));
    }
    for (size_t j = 0; j < t.shape.size(); ++j) {
      const int k = plain_size(t.shape[j], sizes_);
      if (k < 0) continue;
      if (value[k] && *value[k] != g[lead + j])
        throw ConfigError(fmt::format("{}[{}]", at, lead + j),
                          fmt::format("size {} is {} here but {} in {}", sizes_[k], g[lead + j],
                                      *value[k], fixed_by[k]));
      value[k] = g[lead + j];
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
  if (has_batch_) {
    if (!batch) {
      const Tensor* src = nullptr;
      for (const auto& t : tensors_)
        if (t.batch && !src) src = &t;
      throw ConfigError(fmt::format("{}.{}", path, src->decl.name),
                        fmt::format("missing: the \"...\" dimensions are not fixed by the shapes "
                                    "given (give the shape of {} {})",
                                    src->decl.name, src->decl.doc));
    }
    values.push_back(numel(*batch));
  }
  std::vector<Shape> shapes;
  for (const auto& t : tensors_) {
    Shape s = t.batch ? *batch : Shape{};
    for (const auto& e : t.shape) {
      auto v = e.evaluate(values.data());
      if (!v || *v < 1)
        throw ConfigError(fmt::format("{}.{}", path, t.decl.name),
                          fmt::format("dimension \"{}\" of {} is not a size >= 1 at these sizes",
                                      e.text(), t.decl.name));
      s.push_back(*v);
    }
    if (s.size() > 8)
      throw ConfigError(fmt::format("{}.{}", path, t.decl.name),
                        fmt::format("{} would have {} dimensions {} (at most 8)", t.decl.name,
                                    s.size(), shape_str(s)));
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
  for (const auto& [t, j] : size_source_) {
    const Shape& s = shapes[t];
    v.push_back(s[s.size() - tensors_[t].shape.size() + j]);
  }
  if (has_batch_)
    for (size_t t = 0; t < tensors_.size(); ++t)
      if (tensors_[t].batch) {
        const Shape& s = shapes[t];
        int64_t n = 1;
        for (size_t j = 0; j + tensors_[t].shape.size() < s.size(); ++j) n *= s[j];
        v.push_back(n);
        break;
      }
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
  std::vector<DType> dtypes;
  for (const auto& t : in) {
    in64.emplace_back(static_cast<size_t>(numel(t.shape)));
    parallel_for(numel(t.shape), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) in64.back()[i] = t.at(i);
    });
    in_shapes.push_back(t.shape);
    dtypes.push_back(t.dtype);
  }
  for (const auto& t : out) {
    out64.emplace_back(static_cast<size_t>(numel(t.shape)));
    out_shapes.push_back(t.shape);
    dtypes.push_back(t.dtype);
  }
  reference_.run(in64, in_shapes, out64, out_shapes, scalars, 600, dtypes);
  for (size_t o = 0; o < out.size(); ++o)
    parallel_for(numel(out[o].shape), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        store_element(out[o].dtype, out[o].data, static_cast<size_t>(i), out64[o][i]);
    });
}

// Each output's mode: its own "compare" resolved at its dtype and the sizes,
// else kevo's default for that dtype.
std::vector<CompareMode> DefinedOperator::default_compares(DType dtype,
                                                           const std::vector<Shape>& shapes) const {
  const auto values = size_values(shapes);
  std::vector<CompareMode> modes;
  for (const auto& t : tensors_) {
    if (!t.decl.is_output) continue;
    const DType dt = t.dtype.value_or(dtype);
    std::optional<CompareMode> m;
    if (t.compare) m = t.compare->resolve(dt, values.data());
    modes.push_back(m ? *m : dtype_compare(dt));
  }
  return modes;
}

ShapeMap DefinedOperator::shapes_of(const std::vector<int64_t>& sizes, const Shape& batch) const {
  std::vector<int64_t> values = sizes;
  if (has_batch_) values.push_back(numel(batch));
  ShapeMap m;
  for (const auto& t : tensors_) {
    Shape s = t.batch ? batch : Shape{};
    for (const auto& e : t.shape) s.push_back(e.evaluate(values.data()).value_or(0));
    m[t.decl.name] = std::move(s);
  }
  return m;
}

std::vector<ShapeMap> DefinedOperator::small_check_shapes() const {
  if (!check_shapes_.empty()) return check_shapes_;
  std::vector<ShapeMap> out;
  for (const auto& c : check_sizes_) out.push_back(shapes_of(c.sizes, c.batch));
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
  return d && !d->builtin() ? d->definition() : nlohmann::json();
}

const Operator& job_operator(const std::string& name, const nlohmann::json& definition,
                             std::shared_ptr<const Operator>& holder) {
  if (definition.is_null()) return operators().get(name);
  holder = DefinedOperator::parse(definition, "$.op_definition", {});
  return *holder;
}

}  // namespace kevo
