// The slurm backend: evaluates a batch of candidates as a Slurm job array.
// Each candidate's request (eval/request.h: the resolved task, its source and
// knobs, the roof) is written to a directory the nodes share; one array task
// per candidate runs `kevo worker` on its node (compile, check, time, under
// the same sandbox and timing defenses as a local evaluation) and writes its
// result file atomically; poll() collects the files as they appear while it
// watches the array's tasks with squeue and, for those that left the queue
// without a result, scontrol (no slurmdbd needed). A task that ended without
// a result (TIMEOUT, CANCELLED, a crashed worker, a failed node) is a
// recorded failure, or resubmitted once where the cluster took it away
// (PREEMPTED, NODE_FAIL); nothing waits forever.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/roof.h"
#include "core/task.h"
#include "eval/backend.h"

namespace kevo {

// A cap on the array tasks in flight (queued or running) at once, shared by
// every slurm backend that holds it: the runs of one `kevo batch` together,
// or one run alone ("max_jobs" in its backend section). Thread-safe.
class JobSlots {
 public:
  explicit JobSlots(size_t cap) : cap_(cap) {}
  size_t cap() const { return cap_; }
  // Takes up to `want` free slots; returns how many it took (maybe none).
  size_t take(size_t want);
  // Takes `n` whatever the cap says (jobs a resumed run finds on the
  // cluster already: they are in flight, cap or not).
  void force(size_t n);
  void give_back(size_t n);
  // The most ever in flight at once.
  size_t peak() const;

 private:
  mutable std::mutex mutex_;
  size_t cap_, used_ = 0, peak_ = 0;
};

struct SlurmConfig {
  std::filesystem::path dir;  // shared by this host and the nodes (requests, results, logs)
  std::string partition, account, qos;
  std::string gpus;           // --gpus-per-task (e.g. "1"); "" for none
  double time_limit_min = 30; // per candidate (--time; Slurm enforces whole minutes, ~30 s late)
  // Each task has its node to itself (--exclusive): no other timing shares
  // its cores or memory bandwidth. Default: on, unless gpus_per_task gives
  // each task a device of its own (the timing is the device's).
  bool exclusive = true;
  std::vector<std::string> extra;  // more sbatch options, as given
  std::filesystem::path kevo;      // the kevo the nodes run (default: this one)
  double poll_s = 1;
  // How long a task may be gone from the queue before a missing result
  // counts (a shared file system's delay).
  double result_grace_s = 10;
  int resubmits = 1;  // per candidate, where the cluster took the task away
  // A task still queued this long after its submission (never started, or
  // put back in the queue) is cancelled and recorded with the queue's reason
  // (a drained or down node, a partition that cannot run it).
  double start_timeout_min = 60;
  // At most this many of the run's array tasks in flight at once (0: no
  // cap); the rest wait on this host and are submitted as slots free.
  // `kevo batch` gives its runs one shared cap instead (set_slots).
  size_t max_jobs = 0;
};

// The task's "search.backend" object (kind "slurm"), strictly; UserError
// naming the path for a bad field.
SlurmConfig parse_slurm_config(const nlohmann::json& j, const std::string& path);

class SlurmBackend final : public EvalBackend {
 public:
  // `roofs`: the store's roofs of the task's target, one per node type; a
  // node takes its own from them, or calibrates once and its result brings
  // the new roof back (given to set_roof_store's function, which stores it
  // and names its id). `roof` stamps failures that no node judged.
  SlurmBackend(const Task& task, const Roof& roof, std::vector<Roof> roofs, SlurmConfig config);
  ~SlurmBackend() override;  // cancels what is still queued or running
  std::string_view name() const override { return "slurm"; }
  std::vector<uint64_t> submit(const std::vector<EvalJob>& jobs) override;
  std::vector<FinishedJob> poll(const ProgressFn& stage) override;
  // The run whose candidates this backend evaluates, as `tag`: unique
  // among the stores that share the directory (the session gives the run's
  // id with a hash of the store's path and the run's start). Its batches are
  // named by it, and a job submitted for it earlier (by a process that was
  // killed: `kevo run --resume`) whose result file is there or whose task is
  // still queued or running is adopted instead of submitted again.
  // Only the first submit() after it adopts: what a resumed run submits
  // first is its pending candidates; a later job for the same point (a
  // confirmation round) must be measured anew.
  void set_run(std::string tag) {
    run_ = std::move(tag);
    may_adopt_ = true;
  }
  // Jobs adopted so far.
  int64_t adopted() const { return adopted_; }
  // Shares `slots` (a batch's cap) instead of the config's max_jobs; before
  // the first submit().
  void set_slots(std::shared_ptr<JobSlots> slots) { slots_ = std::move(slots); }
  void set_roof_store(std::function<int64_t(const Roof&)> store) { store_roof_ = std::move(store); }
  // Profiles on the nodes, as the local backend does, the candidates whose
  // time ranks among the best `k` of the run so far (0: none): each request
  // carries the k-th best time seen when it was submitted, and the node
  // profiles the candidate if it comes in faster (a whole first batch, then,
  // before any time is known).
  void set_profile_top(int k) { profile_top_ = k; }
  // On: the jobs submitted go to one node (sbatch --nodelist), the one that
  // measured the first of them (the run's best), else the last node heard
  // from. Where that node cannot take them (gone from the cluster, or still
  // queued past start_timeout_min), they go anywhere, once, and say so.
  void compare_on_one_machine(bool on) override {
    pin_ = on;
    pin_node_.clear();
  }
  void cancel() override;
  size_t outstanding() const override { return pending_.size(); }
  double clock() const override;

 private:
  struct Pending {
    std::filesystem::path dir;
    size_t index = 0;
    std::string job;  // "ARRAY_INDEX" as squeue and scontrol name it; "" while it waits for a slot
    int resubmits = 0;
    double gone_since = 0;  // when it was first seen out of the queue without a result
    double submitted_at = 0;
    std::string key;  // the point: "source_hash|knobs"
    std::string node;  // the node it must run on ("": any)
  };
  // sbatch over `indexes` of the batch in `dir`; returns the array job id.
  // With `node`, on that node only. The arguments are kept in the batch's
  // directory (sbatch-ARRAY.args) for whoever looks into it.
  std::string sbatch(const std::filesystem::path& dir, const std::vector<size_t>& indexes,
                     const std::string& node = "");
  // Submits the jobs waiting for a slot, as many as the cap lets through.
  void launch_waiting();
  // A pending job is done with: its slot goes back.
  void release(const Pending& p);
  std::optional<EvalResult> read_result(const Pending& p);
  // What a result tells the profiling rank.
  void note_result(const EvalResult& r);
  // The store's id of a roof a node calibrated (stored on first sight).
  int64_t roof_id_of(const Roof& roof);
  EvalResult ended_without_result(const Pending& p, const std::string& state,
                                  const std::string& detail) const;

  // The earlier batches of this run: point key -> where its task was.
  std::map<std::string, Pending> earlier_jobs() const;

  const Task& task_;
  Roof roof_;
  std::vector<Roof> roofs_;
  std::function<int64_t(const Roof&)> store_roof_;
  std::string run_;  // "" until set_run
  int64_t adopted_ = 0;
  bool may_adopt_ = false;
  SlurmConfig config_;
  std::shared_ptr<JobSlots> slots_;  // null: no cap
  std::map<uint64_t, Pending> pending_;
  uint64_t tickets_ = 0;
  uint64_t batches_ = 0;
  int profile_top_ = 0;
  std::vector<double> best_times_;  // the best profile_top_ medians, fastest first
  std::set<std::string> profiled_;  // points whose result came back profiled
  bool pin_ = false;
  std::string pin_node_;
  std::map<std::string, std::string> node_of_;  // point -> the node that last measured it
  std::string last_node_;
  double start_ = -1;
};

}  // namespace kevo
