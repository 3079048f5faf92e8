// libFuzzer target: a task config as JSON text, read as load_task reads a
// file (parse_json_text, then parse_task). A UserError (ConfigError among them) is the documented
// answer to a bad config; any other exception, a crash, a sanitizer report or a hang is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "core/defined_operator.h"
#include "core/error.h"
#include "core/json_reader.h"
#include "core/task.h"

namespace {
// A directory that does not exist: files a config names relative to itself
// (references, operator definitions) are not found.
const char* const kOrigin = "/nonexistent-kevo-fuzz/task.json";
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json config;
  try {
    config = kevo::parse_json_text(std::string(reinterpret_cast<const char*>(data), size), kOrigin);
  } catch (const kevo::UserError&) {
    return 0;
  }
  if (config.is_object()) {
    // "kernels" globs the file system: slow and not parsing; kept out.
    config.erase("kernels");
    // A defined operator's reference is compiled and loaded by parse_task;
    // the fuzzer checks the definition's parser alone.
    if (auto it = config.find("operator"); it != config.end() && it->is_object()) {
      try {
        kevo::parse_operator_definition(*it, "$.operator", "/nonexistent-kevo-fuzz");
      } catch (const kevo::UserError&) {
      }
      return 0;
    }
  }
  kevo::Task task;
  try {
    task = kevo::parse_task(config, kOrigin);
  } catch (const kevo::UserError&) {
    return 0;
  }
  // The store keeps `resolved` and promises it parses back to the same task.
  try {
    kevo::Task again = kevo::parse_stored_task(task.resolved);
    if (again.hash != task.hash) {
      std::fprintf(stderr, "resolved task parses back with another hash: %s vs %s\n%s\n",
                   task.hash.c_str(), again.hash.c_str(), task.resolved.dump().c_str());
      std::abort();
    }
  } catch (const kevo::UserError& e) {
    std::fprintf(stderr, "resolved task does not parse back: %s\n%s\n", e.what(),
                 task.resolved.dump().c_str());
    std::abort();
  }
  return 0;
}
