#include "support/test_support.h"

#include <unistd.h>

namespace kevo::test {

std::filesystem::path temp_dir(const std::string& name) {
  auto dir = std::filesystem::path(KEVO_TEST_BINARY_DIR) / "tmp" /
             (name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

Task quick_task(const std::string& op, const nlohmann::json& shapes,
                const nlohmann::json& overrides) {
  nlohmann::json j = {{"name", "test-" + op},
                      {"operator", op},
                      {"shapes", shapes},
                      {"timing", {{"min_time_ms", 5}, {"min_samples", 3}, {"warmup_ms", 1}}},
                      {"limits", {{"timeout_s", 5}, {"max_total_s", 60}}}};
  j.merge_patch(overrides);
  return parse_task(j);
}

Roof fake_roof(double gbps, double gflops) {
  Roof r;
  r.id = 0;
  r.target = "cpu";
  r.host_key = "test";
  for (double bytes : {1.0, 1e12}) r.bandwidth.push_back({"copy", 1, bytes, gbps});
  r.peak.push_back({"fp32_fma", 1, gflops});
  return r;
}

}  // namespace kevo::test
