#include "targets/runner/gpu_host.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <future>

#include <fmt/format.h>

namespace kevo::runner {

std::optional<std::filesystem::path> find_program(const std::string& name, const char* env,
                                                  const std::vector<std::filesystem::path>& also) {
  if (const char* e = std::getenv(env); e && *e) {
    if (std::filesystem::exists(e)) return std::filesystem::path(e);
    return std::nullopt;
  }
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    size_t start = 0;
    while (start <= p.size()) {
      size_t end = p.find(':', start);
      if (end == std::string::npos) end = p.size();
      auto candidate = std::filesystem::path(p.substr(start, end - start)) / name;
      if (end > start && access(candidate.c_str(), X_OK) == 0) return candidate;
      start = end + 1;
    }
  }
  for (const auto& a : also)
    if (access((a / name).c_str(), X_OK) == 0) return a / name;
  return std::nullopt;
}

const std::vector<std::filesystem::path>& cuda_bins() {
  static const std::vector<std::filesystem::path> dirs = {"/usr/local/cuda/bin",
                                                           "/opt/nvidia/nsight-compute"};
  return dirs;
}

std::string describe_exit(const ChildProcess& c) {
  if (int sig = c.term_signal()) return "the runner died of " + signal_description(sig);
  if (auto code = c.exit_code()) return fmt::format("the runner exited with status {}", *code);
  return "the runner stopped";
}

Spawner::Spawner() : thread_([this] { loop(); }) {}

Spawner::~Spawner() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::unique_ptr<ChildProcess> Spawner::spawn(const SpawnOptions& options) {
  std::promise<std::unique_ptr<ChildProcess>> promise;
  auto result = promise.get_future();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back([&] {
      try {
        promise.set_value(std::make_unique<ChildProcess>(options));
      } catch (...) {
        promise.set_exception(std::current_exception());
      }
    });
  }
  cv_.notify_all();
  return result.get();
}

void Spawner::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return done_ || !jobs_.empty(); });
    if (jobs_.empty()) return;
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

CheckOutputs map_outputs(const std::filesystem::path& file, size_t bytes) {
  CheckOutputs o;
  const size_t len = std::max<size_t>(bytes, 1);
  int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  void* map = fd >= 0 ? mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (fd >= 0) close(fd);
  if (map == MAP_FAILED) {
    o.error = fmt::format("kevo cannot read the outputs from {}", file.string());
    return o;
  }
  o.base = static_cast<const char*>(map);
  o.hold = std::shared_ptr<void>(map, [len](void* p) { munmap(p, len); });
  return o;
}

double gpu_timing_timeout(const Task& task, const nlohmann::json& timing_start) {
  const double per_call = timing_start.value("estimate_s", 0.0) + 1e-4;
  const double sampling =
      std::max(task.timing.min_time_s, static_cast<double>(task.timing.min_samples) * per_call);
  return task.limits.timeout_s + 2 * sampling;
}

}  // namespace kevo::runner
