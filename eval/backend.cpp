#include "eval/backend.h"

#include <condition_variable>
#include <deque>
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

namespace {

class LocalBackend final : public EvalBackend {
 public:
  LocalBackend(Evaluator& evaluator, size_t threads)
      : evaluator_(evaluator),
        threads_(threads ? threads : static_cast<size_t>(std::max(1, online_cpus()))),
        pool_(threads_),
        start_(monotonic_seconds()) {}
  ~LocalBackend() override { pool_.join(); }

  std::string_view name() const override { return "local"; }

  void evaluate(const std::vector<EvalJob>& jobs,
                const std::function<void(size_t, EvalResult)>& done,
                const std::function<bool()>& keep_going, const ProgressFn& stage) override {
    if (jobs.empty()) return;
    // 1. Compile every candidate of the batch in parallel.
    if (stage)
      stage(fmt::format("compiling {} candidate{} on {} core{}", jobs.size(),
                        jobs.size() == 1 ? "" : "s", threads_, threads_ == 1 ? "" : "s"));
    std::vector<PreparedCandidate> prepared(jobs.size());
    std::latch compiled(static_cast<ptrdiff_t>(jobs.size()));
    for (size_t i = 0; i < jobs.size(); ++i) {
      boost::asio::post(pool_, [&, i] {
        try {
          CandidateSource src{jobs[i].family->text, jobs[i].family->origin,
                              jobs[i].family->language};
          prepared[i] = evaluator_.prepare(src, jobs[i].knobs);
        } catch (const std::exception& e) {
          // kevo's own trouble (a full disk, say) fails this candidate only.
          prepared[i].result.status = Status::compile_error;
          prepared[i].result.detail = fmt::format("kevo could not compile it: {}", e.what());
        }
        compiled.count_down();
      });
    }
    compiled.wait();
    const size_t slots = static_cast<size_t>(std::max(1, evaluator_.run_slots()));
    if (slots > 1) return measure_in_parallel(jobs, prepared, slots, done, keep_going, stage);
    // 2. Run them one at a time, nothing else on the machine.
    for (size_t i = 0; i < jobs.size(); ++i) {
      if (keep_going && !keep_going()) return;
      if (stage && prepared[i].ready)
        stage(fmt::format("running {} {} ({} of {})", jobs[i].family->name,
                          knobs_to_string(jobs[i].knobs), i + 1, jobs.size()));
      done(i, evaluator_.measure(std::move(prepared[i])));
    }
  }

  double clock() const override { return monotonic_seconds() - start_; }

 private:
  // One worker per device (a GPU each): never two candidates on one device,
  // results handed to `done` on this thread as they arrive.
  void measure_in_parallel(const std::vector<EvalJob>& jobs, std::vector<PreparedCandidate>& prepared,
                           size_t slots, const std::function<void(size_t, EvalResult)>& done,
                           const std::function<bool()>& keep_going, const ProgressFn& stage) {
    std::mutex m;
    std::condition_variable cv;
    std::deque<std::pair<size_t, EvalResult>> finished;
    size_t next = 0, running = 0;
    bool stop = false;
    auto worker = [&] {
      for (;;) {
        size_t i;
        {
          std::lock_guard<std::mutex> lock(m);
          if (stop || next >= jobs.size()) return;
          i = next++;
          ++running;
        }
        EvalResult r;
        try {
          r = evaluator_.measure(std::move(prepared[i]));
        } catch (const std::exception& e) {
          r.status = Status::crash;
          r.detail = fmt::format("kevo could not run it: {}", e.what());
        }
        {
          std::lock_guard<std::mutex> lock(m);
          finished.emplace_back(i, std::move(r));
          --running;
        }
        cv.notify_all();
      }
    };
    if (stage)
      stage(fmt::format("running {} candidate{} on {} devices", jobs.size(), jobs.size() == 1 ? "" : "s",
                        slots));
    std::vector<std::thread> workers;
    for (size_t w = 0; w < std::min(slots, jobs.size()); ++w) workers.emplace_back(worker);
    size_t delivered = 0;
    std::unique_lock<std::mutex> lock(m);
    while (delivered < jobs.size()) {
      cv.wait(lock, [&] { return !finished.empty() || (running == 0 && (stop || next >= jobs.size())); });
      if (finished.empty()) break;
      auto [i, r] = std::move(finished.front());
      finished.pop_front();
      lock.unlock();
      done(i, std::move(r));
      ++delivered;
      bool go = !keep_going || keep_going();
      lock.lock();
      if (!go) stop = true;
    }
    stop = true;
    lock.unlock();
    for (auto& t : workers) t.join();
    // Candidates that finished after a stop was asked for are still results.
    for (auto& [i, r] : finished) done(i, std::move(r));
  }

  Evaluator& evaluator_;
  size_t threads_;
  boost::asio::thread_pool pool_;
  double start_;
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

void ReplayBackend::evaluate(const std::vector<EvalJob>& jobs,
                             const std::function<void(size_t, EvalResult)>& done,
                             const std::function<bool()>& keep_going, const ProgressFn&) {
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (keep_going && !keep_going()) return;
    const std::string key = jobs[i].family->source_hash + "|" + knobs_to_json(jobs[i].knobs);
    auto it = recorded_.find(key);
    if (it == recorded_.end())
      throw UserError(fmt::format("the replayed run never measured {} {}", jobs[i].family->name,
                                  knobs_to_string(jobs[i].knobs)));
    // The budget pays what the recorded measurement cost.
    charged_s_ += it->second.compile_s + it->second.run_s;
    EvalResult r = it->second;
    if (detach_roofs) r.roof_id = 0;
    done(i, std::move(r));
  }
}

}  // namespace kevo
