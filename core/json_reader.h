// Strict reading of JSON config objects: typed getters that name the JSON path
// of a bad value, and finish() that rejects keys nobody asked for.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kevo {

class JsonObject {
 public:
  // Throws ConfigError when `value` is not an object.
  JsonObject(const nlohmann::json& value, std::string path);

  bool has(std::string_view key) const;
  std::string path_of(std::string_view key) const;
  const std::string& path() const { return path_; }

  // Each getter marks the key as read. Optional ones return the fallback when
  // the key is absent; a present key of the wrong type is an error.
  std::string get_string(std::string_view key, std::optional<std::string> fallback = {});
  int64_t get_int(std::string_view key, std::optional<int64_t> fallback = {});
  double get_number(std::string_view key, std::optional<double> fallback = {});
  bool get_bool(std::string_view key, std::optional<bool> fallback = {});
  std::vector<std::string> get_string_list(std::string_view key,
                                           std::optional<std::vector<std::string>> fallback = {});
  // The raw value (marked read), or nullptr when absent.
  const nlohmann::json* get_raw(std::string_view key);
  // A nested object; an absent key gives an empty object at that path.
  JsonObject get_object(std::string_view key);

  // Throws ConfigError naming the first key that no getter asked for.
  void finish() const;

 private:
  const nlohmann::json& require(std::string_view key, const char* expected);
  const nlohmann::json* find(std::string_view key);

  nlohmann::json value_;
  std::string path_;
  std::set<std::string, std::less<>> asked_;  // every key a getter asked for
};

// Type-checking helpers for values that are not object members.
int64_t json_to_int(const nlohmann::json& v, const std::string& path);
double json_to_number(const nlohmann::json& v, const std::string& path);
std::string json_to_string(const nlohmann::json& v, const std::string& path);
// A short rendering of a value for error messages ("\"abc\"", "[1,2,...]").
std::string json_brief(const nlohmann::json& v);

// Parses a JSON file; a missing file, a syntax error or nesting deeper than
// kMaxJsonDepth is a UserError.
nlohmann::json read_json_file(const std::string& path);
// The same from text; `origin` names it in messages.
nlohmann::json parse_json_text(const std::string& text, const std::string& origin);

// nlohmann::json copies, compares, prints and frees a value recursively: a
// config nested deeper than this is refused before it can exhaust the stack.
// kevo's own configs are at most 6 deep.
constexpr int kMaxJsonDepth = 64;

}  // namespace kevo
