#include "support/test_support.h"

#include <unistd.h>

#include "core/store.h"
#include "targets/target.h"

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

void store_cpu_roof(const std::string& db) {
  Store s(db);
  Roof roof = fake_roof(1000, 1e6);
  roof.host_key = make_target("cpu")->host_key();
  s.add_roof(roof);
}

ProcessResult run_kevo(const std::filesystem::path& dir, const std::string& db,
                       std::vector<std::string> args, std::vector<std::string> env,
                       size_t max_output) {
  SpawnOptions o;
  o.argv = {kevo_binary().string()};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.cwd = dir;
  o.env = {"KEVO_DB=" + db};
  o.env.insert(o.env.end(), env.begin(), env.end());
  return run_process(o, 300, max_output);
}

}  // namespace kevo::test
