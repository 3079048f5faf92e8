// Shared helpers for kevo's tests: small tasks, fake roofs, fixture paths.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

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

}  // namespace kevo::test
