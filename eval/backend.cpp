#include "eval/backend.h"

#include <condition_variable>
#include <latch>
#include <mutex>
#include <thread>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <fmt/format.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/knobs.h"
#include "core/store.h"

namespace kevo {

void evaluate_batch(EvalBackend& backend, const std::vector<EvalJob>& jobs,
                    const std::function<void(size_t, EvalResult)>& done,
                    const std::function<bool()>& keep_going, const ProgressFn& stage) {
  if (jobs.empty()) return;
  const std::vector<uint64_t> tickets = backend.submit(jobs);
  KEVO_ASSERT(tickets.size() == jobs.size());
  std::map<uint64_t, size_t> index;
  for (size_t i = 0; i < tickets.size(); ++i) index.emplace(tickets[i], i);
  bool cancelled = false;
  try {
    while (backend.outstanding() > 0) {
      if (!cancelled && keep_going && !keep_going()) {
        backend.cancel();
        cancelled = true;
        continue;
      }
      std::vector<FinishedJob> finished = backend.poll(stage);
      if (finished.empty()) break;
      for (FinishedJob& f : finished) {
        auto it = index.find(f.ticket);
        if (it != index.end()) done(it->second, std::move(f.result));
      }
    }
  } catch (...) {
    // Nothing of this batch is left queued for the next one to measure.
    backend.cancel();
    throw;
  }
}

std::vector<uint64_t> ImmediateBackend::submit(const std::vector<EvalJob>& jobs) {
  std::vector<uint64_t> tickets;
  for (const EvalJob& j : jobs) {
    queue_.emplace_back(++tickets_, j);
    tickets.push_back(tickets_);
  }
  return tickets;
}

std::vector<FinishedJob> ImmediateBackend::poll(const ProgressFn&) {
  if (queue_.empty()) return {};
  auto [ticket, job] = std::move(queue_.front());
  queue_.pop_front();
  return {{ticket, answer(job)}};
}

namespace {

// Compiles what poll() finds submitted, all of it in parallel, then runs one
// candidate per poll() on a machine with one device; with several devices
// (GPUs), one worker per device runs candidates while poll() waits for the
// first to finish.
class LocalBackend final : public EvalBackend {
 public:
  LocalBackend(Evaluator& evaluator, size_t threads)
      : evaluator_(evaluator),
        threads_(threads ? threads : static_cast<size_t>(std::max(1, online_cpus()))),
        slots_(static_cast<size_t>(std::max(1, evaluator.run_slots()))),
        pool_(threads_),
        start_(monotonic_seconds()) {}

  ~LocalBackend() override {
    {
      std::lock_guard<std::mutex> lock(m_);
      shutdown_ = true;
      compiled_.clear();
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
    pool_.join();
  }

  std::string_view name() const override { return "local"; }

  std::vector<uint64_t> submit(const std::vector<EvalJob>& jobs) override {
    std::vector<uint64_t> tickets;
    for (const EvalJob& j : jobs) {
      submitted_.push_back({++tickets_, j, {}});
      tickets.push_back(tickets_);
    }
    return tickets;
  }

  std::vector<FinishedJob> poll(const ProgressFn& stage) override {
    if (!submitted_.empty()) compile_submitted(stage);
    if (slots_ > 1) return collect();
    // One device: run the next one, nothing else on the machine.
    if (compiled_.empty()) return {};
    Job job = std::move(compiled_.front());
    compiled_.pop_front();
    ++started_;
    if (stage && job.prepared.ready)
      stage(fmt::format("running {} {} ({} of {})", job.job.family->name,
                        knobs_to_string(job.job.knobs), started_, batch_));
    return {{job.ticket, evaluator_.measure(std::move(job.prepared))}};
  }

  void cancel() override {
    std::lock_guard<std::mutex> lock(m_);
    submitted_.clear();
    compiled_.clear();
  }

  size_t outstanding() const override {
    std::lock_guard<std::mutex> lock(m_);
    return submitted_.size() + compiled_.size() + running_ + finished_.size();
  }

  double clock() const override { return monotonic_seconds() - start_; }

 private:
  struct Job {
    uint64_t ticket = 0;
    EvalJob job;
    PreparedCandidate prepared;
  };

  // Static check and compile of every submitted job, in parallel.
  void compile_submitted(const ProgressFn& stage) {
    std::vector<Job> jobs(std::make_move_iterator(submitted_.begin()),
                          std::make_move_iterator(submitted_.end()));
    submitted_.clear();
    if (stage)
      stage(fmt::format("compiling {} candidate{} on {} core{}", jobs.size(),
                        jobs.size() == 1 ? "" : "s", threads_, threads_ == 1 ? "" : "s"));
    std::latch compiled(static_cast<ptrdiff_t>(jobs.size()));
    for (Job& job : jobs) {
      boost::asio::post(pool_, [this, &compiled, j = &job] {
        try {
          CandidateSource src{j->job.family->text, j->job.family->origin, j->job.family->language};
          j->prepared = evaluator_.prepare(src, j->job.knobs);
        } catch (const std::exception& e) {
          // kevo's own trouble (a full disk, say) fails this candidate only.
          j->prepared.result.status = Status::compile_error;
          j->prepared.result.detail = fmt::format("kevo could not compile it: {}", e.what());
        }
        compiled.count_down();
      });
    }
    compiled.wait();
    {
      std::lock_guard<std::mutex> lock(m_);
      for (Job& job : jobs) compiled_.push_back(std::move(job));
      batch_ = compiled_.size() + running_;
      started_ = running_;
    }
    if (slots_ > 1) {
      if (stage)
        stage(fmt::format("running {} candidate{} on {} devices", batch_, batch_ == 1 ? "" : "s",
                          slots_));
      while (workers_.size() < slots_) workers_.emplace_back([this] { work(); });
      cv_.notify_all();
    }
  }

  // A device's worker: runs compiled candidates until the backend goes.
  void work() {
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      cv_.wait(lock, [&] { return shutdown_ || !compiled_.empty(); });
      if (shutdown_) return;
      Job job = std::move(compiled_.front());
      compiled_.pop_front();
      ++running_;
      lock.unlock();
      EvalResult r;
      try {
        r = evaluator_.measure(std::move(job.prepared));
      } catch (const std::exception& e) {
        r.status = Status::crash;
        r.detail = fmt::format("kevo could not run it: {}", e.what());
      }
      lock.lock();
      finished_.push_back({job.ticket, std::move(r)});
      --running_;
      cv_.notify_all();
    }
  }

  // Several devices: waits for a result, or for nothing to be left.
  std::vector<FinishedJob> collect() {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait(lock, [&] { return !finished_.empty() || (compiled_.empty() && running_ == 0); });
    std::vector<FinishedJob> out(std::make_move_iterator(finished_.begin()),
                                 std::make_move_iterator(finished_.end()));
    finished_.clear();
    return out;
  }

  Evaluator& evaluator_;
  size_t threads_;
  size_t slots_;
  boost::asio::thread_pool pool_;
  double start_;
  uint64_t tickets_ = 0;
  std::deque<Job> submitted_;  // not compiled yet (touched by the polling thread only)
  mutable std::mutex m_;       // guards what follows
  std::condition_variable cv_;
  std::deque<Job> compiled_;  // ready to run
  std::deque<FinishedJob> finished_;
  size_t running_ = 0;
  size_t batch_ = 0, started_ = 0;  // for "(3 of 8)"
  bool shutdown_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace

std::unique_ptr<EvalBackend> make_local_backend(Evaluator& evaluator, size_t threads) {
  return std::make_unique<LocalBackend>(evaluator, threads);
}

ReplayBackend::ReplayBackend(Store& store, int64_t run) {
  for (const CandidateRecord& c : store.candidates(run)) {
    if (!c.result_evaluation) continue;  // never evaluated (the recording was stopped first)
    auto r = store.evaluation(*c.result_evaluation);
    if (!r) continue;
    recorded_.emplace(c.source_hash + "|" + c.knobs_json, std::move(*r));
  }
  if (recorded_.empty())
    throw UserError(fmt::format("run {} has no evaluations to replay", run));
}

std::set<std::string> ReplayBackend::recorded_keys() const {
  std::set<std::string> keys;
  for (const auto& [key, result] : recorded_) keys.insert(key);
  return keys;
}

EvalResult ReplayBackend::answer(const EvalJob& job) {
  const std::string key = job.family->source_hash + "|" + knobs_to_json(job.knobs);
  auto it = recorded_.find(key);
  if (it == recorded_.end())
    throw UserError(fmt::format("the replayed run never measured {} {}", job.family->name,
                                knobs_to_string(job.knobs)));
  // The budget pays what the recorded measurement cost.
  charged_s_ += it->second.compile_s + it->second.run_s;
  EvalResult r = it->second;
  if (detach_roofs) r.roof_id = 0;
  return r;
}

}  // namespace kevo
