#include "core/builtin_operators.h"

#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "core/defined_operator.h"
#include "core/error.h"

namespace kevo {

namespace {

const char* shipped_text(const std::string& name) {
  for (const auto& f : shipped_operator_files())
    if (name == f.name) return f.text;
  return nullptr;
}

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

}  // namespace

void register_builtin_operators(OperatorRegistry& registry) {
  for (const auto& f : shipped_operator_files()) {
    const std::string file = f.name;
    if (!ends_with(file, ".json")) continue;
    const std::string path = "operators/" + file + ": $";
    nlohmann::json definition = nlohmann::json::parse(f.text);
    // The reference is built in too: inline it, as DefinedOperator::parse
    // does with a task's file, under the name it has in operators/.
    if (definition.contains("reference") && definition["reference"].is_string()) {
      const std::string reference = definition["reference"].get<std::string>();
      const char* source = shipped_text(reference);
      if (!source)
        throw ConfigError(path + ".reference",
                          "no such file in operators/ (re-run CMake after adding one)");
      definition.erase("reference");
      definition["source"] = source;
      definition["origin"] = "operators/" + reference;
      definition["language"] = ends_with(reference, ".c") ? "c" : "c++";
    }
    registry.add(DefinedOperator::parse(definition, path, {}, /*builtin=*/true));
  }
}

}  // namespace kevo
