#include "core/json_reader.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"

namespace kevo {

namespace {
const char* type_name(const nlohmann::json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}
}  // namespace

std::string json_brief(const nlohmann::json& v) {
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

JsonObject::JsonObject(const nlohmann::json& value, std::string path)
    : value_(value), path_(std::move(path)) {
  if (!value_.is_object())
    throw ConfigError(path_, fmt::format("expected an object, got {}", type_name(value_)));
}

bool JsonObject::has(std::string_view key) const { return value_.contains(key); }

std::string JsonObject::path_of(std::string_view key) const {
  return fmt::format("{}.{}", path_, key);
}

const nlohmann::json* JsonObject::find(std::string_view key) {
  asked_.emplace(key);
  auto it = value_.find(key);
  return it == value_.end() ? nullptr : &*it;
}

const nlohmann::json& JsonObject::require(std::string_view key, const char* expected) {
  const nlohmann::json* v = find(key);
  if (!v) throw ConfigError(path_of(key), fmt::format("missing (expected {})", expected));
  return *v;
}

std::string JsonObject::get_string(std::string_view key, std::optional<std::string> fallback) {
  const nlohmann::json* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    throw ConfigError(path_of(key), "missing (expected a string)");
  }
  return json_to_string(*v, path_of(key));
}

int64_t JsonObject::get_int(std::string_view key, std::optional<int64_t> fallback) {
  const nlohmann::json* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    throw ConfigError(path_of(key), "missing (expected an integer)");
  }
  return json_to_int(*v, path_of(key));
}

double JsonObject::get_number(std::string_view key, std::optional<double> fallback) {
  const nlohmann::json* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    throw ConfigError(path_of(key), "missing (expected a number)");
  }
  return json_to_number(*v, path_of(key));
}

bool JsonObject::get_bool(std::string_view key, std::optional<bool> fallback) {
  const nlohmann::json* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    throw ConfigError(path_of(key), "missing (expected true or false)");
  }
  if (!v->is_boolean())
    throw ConfigError(path_of(key),
                      fmt::format("expected true or false, got {}", json_brief(*v)));
  return v->get<bool>();
}

std::vector<std::string> JsonObject::get_string_list(
    std::string_view key, std::optional<std::vector<std::string>> fallback) {
  const nlohmann::json* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    throw ConfigError(path_of(key), "missing (expected a list of strings)");
  }
  if (!v->is_array())
    throw ConfigError(path_of(key),
                      fmt::format("expected a list of strings, got {}", json_brief(*v)));
  std::vector<std::string> out;
  for (size_t i = 0; i < v->size(); ++i)
    out.push_back(json_to_string((*v)[i], fmt::format("{}[{}]", path_of(key), i)));
  return out;
}

const nlohmann::json* JsonObject::get_raw(std::string_view key) { return find(key); }

JsonObject JsonObject::get_object(std::string_view key) {
  const nlohmann::json* v = find(key);
  if (!v) return JsonObject(nlohmann::json::object(), path_of(key));
  return JsonObject(*v, path_of(key));
}

void JsonObject::finish() const {
  for (auto it = value_.begin(); it != value_.end(); ++it) {
    if (asked_.count(it.key())) continue;
    std::string known;
    for (const auto& k : asked_) known += (known.empty() ? "" : ", ") + k;
    throw ConfigError(path_of(it.key()),
                      known.empty() ? std::string("unknown key (this object takes no keys)")
                                    : fmt::format("unknown key (expected one of: {})", known));
  }
}

int64_t json_to_int(const nlohmann::json& v, const std::string& path) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15)
      return static_cast<int64_t>(d);
  }
  throw ConfigError(path, fmt::format("expected an integer, got {}", json_brief(v)));
}

double json_to_number(const nlohmann::json& v, const std::string& path) {
  if (v.is_number()) return v.get<double>();
  throw ConfigError(path, fmt::format("expected a number, got {}", json_brief(v)));
}

std::string json_to_string(const nlohmann::json& v, const std::string& path) {
  if (v.is_string()) return v.get<std::string>();
  throw ConfigError(path, fmt::format("expected a string, got {}", json_brief(v)));
}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError(fmt::format("cannot read '{}': no such file or not readable", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_json_text(ss.str(), path);
}

nlohmann::json parse_json_text(const std::string& text, const std::string& origin) {
  auto depth_check = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    if ((event == nlohmann::json::parse_event_t::object_start ||
         event == nlohmann::json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth)
      throw UserError(fmt::format("{}: JSON nested more than {} deep", origin, kMaxJsonDepth));
    return true;
  };
  try {
    return nlohmann::json::parse(text, depth_check);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is the offset of the error; turn it into line:column.
    size_t line = 1, col = 1;
    for (size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    std::string what = e.what();
    auto pos = what.find("syntax error");
    if (pos != std::string::npos) what = what.substr(pos);
    throw UserError(fmt::format("{}:{}:{}: invalid JSON: {}", origin, line, col, what));
  } catch (const nlohmann::json::exception& e) {
    // Not a syntax error but a value nlohmann cannot hold (a number beyond
    // a double's range, 406): found by fuzz_task, it escaped as out_of_range.
    std::string what = e.what();
    if (auto pos = what.find("] "); pos != std::string::npos) what = what.substr(pos + 2);
    throw UserError(fmt::format("{}: invalid JSON: {}", origin, what));
  }
}

void assertion_failed(const char* expr, const char* file, int line) {
  fmt::print(stderr, "kevo: internal error: assertion '{}' failed at {}:{}\n", expr, file, line);
  std::abort();
}

}  // namespace kevo
