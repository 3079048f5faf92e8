// What the GPU targets (cuda, triton) share on kevo's side: finding the
// toolkit's programs, starting runner processes from one long-lived thread,
// saying how a runner ended, lending each GPU's runner to one job at a time,
// reading the outputs a runner hands over, and the time its samples get.
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

#include <nlohmann/json.hpp>

#include "core/process.h"
#include "core/task.h"
#include "targets/runner/host_loop.h"

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

// The outputs the runner wrote to `file` (`bytes` of them), mapped for the
// check; CheckOutputs::error says why not.
CheckOutputs map_outputs(const std::filesystem::path& file, size_t bytes);

// A GPU runner's samples take min_time or min_samples calls, whichever is
// longer, at the runner's estimate per call (from its "timing_start" event,
// plus the flush before each): the "no progress" timeout allows twice that
// on top of the task's timeout. (cpu allows differently: see cpu_target.cpp.)
double gpu_timing_timeout(const Task& task, const nlohmann::json& timing_start);

// The runner slots of a GPU target (Slot: one device and its runner, with
// `busy`, `child`, alive() and stop()), each lent to one job at a time: a
// GPU measures one candidate at once. The target makes the slots (under
// mutex_) in the function it passes to Lease.
template <class Slot>
class RunnerSlots {
 protected:
  // A slot held for one use, given back (and a waiter woken) at scope end.
  class Lease {
   public:
    template <class Ensure>
    Lease(RunnerSlots& pool, Ensure ensure_locked) : pool_(pool), slot(pool.lend(ensure_locked)) {}
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { pool_.give_back(slot); }

   private:
    RunnerSlots& pool_;

   public:
    Slot& slot;
  };

  // Stops the runners no job holds (the next job starts a fresh one).
  void retire_idle() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& s : slots_)
      if (!s->busy && s->child) {
        if (s->alive()) write_line(s->child->stdin_fd(), "quit");
        s->stop();
      }
  }

  std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<std::unique_ptr<Slot>> slots_;

 private:
  template <class Ensure>
  Slot& lend(Ensure ensure_locked) {
    std::unique_lock<std::mutex> lock(mutex_);
    ensure_locked();
    for (;;) {
      for (auto& s : slots_)
        if (!s->busy) {
          s->busy = true;
          return *s;
        }
      freed_.wait(lock);
    }
  }
  void give_back(Slot& s) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      s.busy = false;
    }
    freed_.notify_one();
  }
};

}  // namespace kevo::runner
