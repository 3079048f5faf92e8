// Shared helpers for kevo's tests: small tasks, fake roofs, fixture paths.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/process.h"
#include "core/roof.h"
#include "core/task.h"

namespace kevo::test {

// tests/ in the source tree.
inline std::filesystem::path source_dir() { return KEVO_TEST_SOURCE_DIR; }
inline std::filesystem::path repo_dir() { return KEVO_SOURCE_DIR; }
// The built kevo binary.
inline std::filesystem::path kevo_binary() { return KEVO_TEST_KEVO_BINARY; }

// A fresh empty directory under the build tree's test area.
std::filesystem::path temp_dir(const std::string& name);

// A quick task: small shapes, short timing, tight limits. `overrides` is
// merged over the defaults (e.g. {"limits": {"timeout_s": 2}}).
Task quick_task(const std::string& op, const nlohmann::json& shapes,
                const nlohmann::json& overrides = nlohmann::json::object());

// A roof with one bandwidth and one peak figure for every size.
Roof fake_roof(double gbps, double gflops);

// Stores a fake roof for this machine's cpu target in the store at `db`
// (created if needed), so that no command a test runs calibrates first.
void store_cpu_roof(const std::string& db);

// Runs the built kevo binary in `dir` with KEVO_DB=db and `env`, as a user
// would; output is kept up to `max_output` bytes.
ProcessResult run_kevo(const std::filesystem::path& dir, const std::string& db,
                       std::vector<std::string> args, std::vector<std::string> env = {},
                       size_t max_output = 1 << 20);

}  // namespace kevo::test
