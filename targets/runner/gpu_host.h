// What the GPU targets (cuda, triton) share on kevo's side: finding the
// toolkit's programs, starting runner processes from one long-lived thread,
// and saying how a runner ended.
#pragma once

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/process.h"

namespace kevo::runner {

// `name` from the environment variable `env` (which, when set, must name an
// existing file), else from PATH, else from one of `also`.
std::optional<std::filesystem::path> find_program(const std::string& name, const char* env,
                                                  const std::vector<std::filesystem::path>& also);

// Where the CUDA toolkit's and Nsight Compute's programs usually are.
const std::vector<std::filesystem::path>& cuda_bins();

// "the runner died of SIGSEGV (...)", "the runner exited with status 3".
std::string describe_exit(const ChildProcess& c);

// Starts processes from one thread that lives as long as the target. A child
// dies with the thread that forked it (PR_SET_PDEATHSIG), and runners are
// started from whichever thread measures: a measuring thread that ends (the
// backend's per-batch workers do) must not take its runner with it.
class Spawner {
 public:
  Spawner();
  ~Spawner();
  Spawner(const Spawner&) = delete;
  Spawner& operator=(const Spawner&) = delete;
  std::unique_ptr<ChildProcess> spawn(const SpawnOptions& options);

 private:
  void loop();
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace kevo::runner
