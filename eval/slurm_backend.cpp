#include "eval/slurm_backend.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/json_reader.h"
#include "core/log.h"
#include "core/paths.h"
#include "core/process.h"
#include "core/knobs.h"
#include "eval/request.h"

namespace kevo {

namespace {

ProcessResult slurm_command(std::vector<std::string> argv, double timeout_s = 60) {
  SpawnOptions opt;
  opt.argv = std::move(argv);
  return run_process(opt, timeout_s, 1 << 20);
}

bool succeeded(const ProcessResult& r) { return r.exit_code && *r.exit_code == 0; }

std::string first_line(const std::string& s) {
  const size_t nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

// "KEY=VALUE" fields of scontrol's output.
std::string field(const std::string& text, const std::string& key) {
  const std::string k = key + "=";
  for (size_t at = text.find(k); at != std::string::npos; at = text.find(k, at + 1)) {
    if (at > 0 && !std::isspace(static_cast<unsigned char>(text[at - 1]))) continue;
    const size_t end = text.find_first_of(" \n", at);
    return text.substr(at + k.size(), end == std::string::npos ? std::string::npos
                                                                : end - at - k.size());
  }
  return "";
}

// Minutes as Slurm's --time reads them: "MINUTES:SECONDS", whole seconds,
// at least one.
std::string slurm_time(double minutes) {
  const int64_t s = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(minutes * 60)));
  return fmt::format("{}:{:02d}", s / 60, s % 60);
}

// A quoted word for /bin/sh.
std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Where a batch's task `index` was submitted ("ARRAY_INDEX"), for a resumed
// run to find it.
std::filesystem::path job_file(const std::filesystem::path& dir, size_t index) {
  return dir / fmt::format("{}.job", index);
}

}  // namespace

size_t JobSlots::take(size_t want) {
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t n = std::min(want, cap_ > used_ ? cap_ - used_ : 0);
  used_ += n;
  peak_ = std::max(peak_, used_);
  return n;
}

void JobSlots::force(size_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  used_ += n;
  peak_ = std::max(peak_, used_);
}

void JobSlots::give_back(size_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  used_ -= std::min(n, used_);
}

size_t JobSlots::peak() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_;
}

SlurmConfig parse_slurm_config(const nlohmann::json& j, const std::string& path) {
  SlurmConfig c;
  JsonObject o(j, path);
  if (o.get_string("kind") != "slurm") throw ConfigError(o.path_of("kind"), "expected \"slurm\"");
  c.dir = o.get_string("dir");
  if (c.dir.empty()) throw ConfigError(o.path_of("dir"), "must name a directory the nodes share");
  c.partition = o.get_string("partition", "");
  c.account = o.get_string("account", "");
  c.qos = o.get_string("qos", "");
  c.gpus = o.get_string("gpus_per_task", "");
  c.time_limit_min = o.get_number("time_limit_min", c.time_limit_min);
  if (!(c.time_limit_min > 0)) throw ConfigError(o.path_of("time_limit_min"), "expected minutes > 0");
  c.exclusive = o.get_bool("exclusive", c.gpus.empty());
  c.extra = o.get_string_list("sbatch_options", std::vector<std::string>{});
  c.kevo = o.get_string("kevo", (executable_dir() / "kevo").string());
  c.poll_s = o.get_number("poll_s", c.poll_s);
  if (!(c.poll_s > 0)) throw ConfigError(o.path_of("poll_s"), "expected seconds > 0");
  c.result_grace_s = o.get_number("result_grace_s", c.result_grace_s);
  c.resubmits = static_cast<int>(o.get_int("resubmits", c.resubmits));
  c.start_timeout_min = o.get_number("start_timeout_min", c.start_timeout_min);
  if (!(c.start_timeout_min > 0))
    throw ConfigError(o.path_of("start_timeout_min"), "expected minutes > 0");
  const int64_t max_jobs = o.get_int("max_jobs", 0);
  if (max_jobs < 0) throw ConfigError(o.path_of("max_jobs"), "expected a count >= 0 (0: no cap)");
  c.max_jobs = static_cast<size_t>(max_jobs);
  o.finish();
  return c;
}

SlurmBackend::SlurmBackend(const Task& task, const Roof& roof, std::vector<Roof> roofs,
                           SlurmConfig config)
    : task_(task), roof_(roof), roofs_(std::move(roofs)), config_(std::move(config)) {
  std::filesystem::create_directories(config_.dir);
  if (config_.max_jobs > 0) slots_ = std::make_shared<JobSlots>(config_.max_jobs);
}

SlurmBackend::~SlurmBackend() {
  // What this process leaves queued or running is cancelled: a run that
  // ends (or is stopped) leaves nothing behind on the cluster.
  std::set<std::string> jobs;
  for (const auto& [ticket, p] : pending_) {
    release(p);
    if (!p.job.empty()) jobs.insert(p.job);
  }
  if (jobs.empty()) return;
  std::vector<std::string> argv = {"scancel"};
  argv.insert(argv.end(), jobs.begin(), jobs.end());
  try {
    slurm_command(argv, 30);
  } catch (const std::exception& e) {
    log_warn("slurm: could not cancel this run's jobs: {}", e.what());
  }
}

double SlurmBackend::clock() const { return start_ < 0 ? 0 : monotonic_seconds() - start_; }

std::string SlurmBackend::sbatch(const std::filesystem::path& dir,
                                 const std::vector<size_t>& indexes, const std::string& node) {
  std::vector<std::string> argv = {"sbatch", "--parsable", "--job-name=kevo",
                                   fmt::format("--array={}", fmt::join(indexes, ",")),
                                   "--output=" + (dir / "%a.out").string(),
                                   "--error=" + (dir / "%a.err").string(),
                                   "--time=" + slurm_time(config_.time_limit_min)};
  if (!config_.partition.empty()) argv.push_back("--partition=" + config_.partition);
  if (!config_.account.empty()) argv.push_back("--account=" + config_.account);
  if (!config_.qos.empty()) argv.push_back("--qos=" + config_.qos);
  if (!config_.gpus.empty()) argv.push_back("--gpus-per-task=" + config_.gpus);
  if (config_.exclusive) argv.push_back("--exclusive");
  argv.insert(argv.end(), config_.extra.begin(), config_.extra.end());
  if (!node.empty()) argv.push_back("--nodelist=" + node);
  argv.push_back((dir / "job.sh").string());
  // A controller that is busy or restarting answers again a little later:
  // tried 4 times over about 30 s. Anything else (a bad partition, a limit)
  // is said at once.
  ProcessResult r;
  std::string out, why;
  for (int attempt = 0;; ++attempt) {
    r = slurm_command(argv);
    out = first_line(r.out);
    if (succeeded(r) && !out.empty()) break;
    why = first_line(r.err.empty() ? r.out : r.err);
    const bool transient =
        r.timed_out || why.find("timed out") != std::string::npos ||
        why.find("Unable to contact") != std::string::npos ||
        why.find("temporarily unavailable") != std::string::npos ||
        why.find("temporarily unable") != std::string::npos ||
        why.find("try again") != std::string::npos || why.find("Zero Bytes") != std::string::npos;
    if (!transient || attempt == 3) {
      if (why.find("MaxSubmit") != std::string::npos)
        why += " (the cluster's limit on submitted jobs: set search.backend.max_jobs below it)";
      throw UserError(fmt::format("sbatch failed: {}", why));
    }
    const double wait_s = 2.0 * (1 << attempt);  // 2, 4, 8 s
    log_warn("slurm: sbatch failed ({}): trying again in {:.0f} s", why, wait_s);
    std::this_thread::sleep_for(std::chrono::duration<double>(wait_s));
  }
  const std::string array = out.substr(0, out.find(';'));  // "ID" or "ID;CLUSTER"
  const std::string args = fmt::format("{}\n", fmt::join(argv, " "));
  write_file_atomic(dir / fmt::format("sbatch-{}.args", array), args.data(), args.size());
  return array;
}

std::map<std::string, SlurmBackend::Pending> SlurmBackend::earlier_jobs() const {
  std::map<std::string, Pending> out;
  if (run_.empty()) return out;
  const std::string prefix = fmt::format("run-{}-", run_);
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(config_.dir, ec)) {
    if (e.path().filename().string().rfind(prefix, 0) != 0) continue;
    const auto keys_file = e.path() / "keys.json";
    if (!std::filesystem::exists(keys_file)) continue;
    const nlohmann::json keys = nlohmann::json::parse(read_text_file(keys_file), nullptr, false);
    if (!keys.is_array()) continue;
    for (size_t i = 0; i < keys.size(); ++i) {
      // A task that waited for a slot and was never submitted has no file.
      if (!keys[i].is_string() || !std::filesystem::exists(job_file(e.path(), i))) continue;
      std::string job = read_text_file(job_file(e.path(), i));
      while (!job.empty() && std::isspace(static_cast<unsigned char>(job.back()))) job.pop_back();
      if (!job.empty())
        out[keys[i].get<std::string>()] = {e.path(), i, job, 0, 0, monotonic_seconds(),
                                           keys[i].get<std::string>(), ""};
    }
  }
  return out;
}

std::vector<uint64_t> SlurmBackend::submit(const std::vector<EvalJob>& jobs) {
  if (jobs.empty()) return {};
  if (start_ < 0) start_ = monotonic_seconds();
  // A killed run's jobs: their results, or their tasks still on the cluster.
  std::vector<uint64_t> tickets(jobs.size(), 0);
  std::vector<size_t> fresh;
  const std::map<std::string, Pending> earlier =
      may_adopt_ ? earlier_jobs() : std::map<std::string, Pending>{};
  may_adopt_ = false;
  std::set<std::string> on_cluster;
  if (!earlier.empty()) {
    const ProcessResult q = slurm_command({"squeue", "-h", "-r", "-o", "%i"});
    std::istringstream in(q.out);
    for (std::string id; in >> id;) on_cluster.insert(id);
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    const std::string key = jobs[i].family->source_hash + "|" + knobs_to_json(jobs[i].knobs);
    auto e = earlier.find(key);
    if (e != earlier.end() && (on_cluster.count(e->second.job) || read_result(e->second))) {
      tickets[i] = ++tickets_;
      pending_[tickets[i]] = e->second;
      if (slots_) slots_->force(1);
      ++adopted_;
      log_info("slurm: adopted array task {} (submitted before the run was resumed)", e->second.job);
    } else {
      fresh.push_back(i);
    }
  }
  if (fresh.empty()) return tickets;
  const std::filesystem::path dir =
      std::filesystem::absolute(config_.dir) /
      fmt::format("run-{}-{}-{}-{}", run_.empty() ? "none" : run_, hostname(), getpid(),
                  ++batches_);
  std::filesystem::create_directories(dir);
  std::vector<size_t> indexes;
  nlohmann::json keys = nlohmann::json::array();
  for (size_t n = 0; n < fresh.size(); ++n) {
    const size_t i = fresh[n];
    keys.push_back(jobs[i].family->source_hash + "|" + knobs_to_json(jobs[i].knobs));
    EvalRequest req;
    req.task = task_.resolved;
    req.source = {jobs[i].family->text, jobs[i].family->origin, jobs[i].family->language};
    req.name = jobs[i].family->name;
    req.knobs = jobs[i].knobs;
    req.roof = roof_;
    req.roof_by_node = true;
    req.roofs = roofs_;
    req.profile = profile_top_ > 0 && !profiled_.count(keys.back().get<std::string>());
    if (static_cast<int>(best_times_.size()) >= profile_top_ && profile_top_ > 0)
      req.profile_below_s = best_times_.back();
    const std::string text = request_to_json(req).dump();
    write_file_atomic(dir / fmt::format("{}.request.json", n), text.data(), text.size());
    indexes.push_back(n);
  }
  const std::string key_text = keys.dump();
  write_file_atomic(dir / "keys.json", key_text.data(), key_text.size());
  // One array task per candidate: the worker evaluates it on the node.
  const std::string script = fmt::format(
      "#!/bin/sh\n# kevo: one candidate per array task\ni=$SLURM_ARRAY_TASK_ID\nexec {} worker "
      "{}/$i.request.json -o {}/$i.result.json\n",
      shell_quote(config_.kevo.string()), shell_quote(dir.string()), shell_quote(dir.string()));
  write_file_atomic(dir / "job.sh", script.data(), script.size());
  // Compared with one another: on the node that measured the first (the
  // best), else the last one heard from.
  if (pin_ && pin_node_.empty()) {
    auto it = node_of_.find(keys[0].get<std::string>());
    pin_node_ = it != node_of_.end() ? it->second : last_node_;
  }
  // Each waits for a slot (none: at once) and is submitted by launch_waiting.
  for (size_t n = 0; n < fresh.size(); ++n) {
    tickets[fresh[n]] = ++tickets_;
    pending_[tickets[fresh[n]]] = {dir, n, "", 0, 0, 0, keys[n].get<std::string>(),
                                   pin_ ? pin_node_ : ""};
  }
  launch_waiting();
  return tickets;
}

void SlurmBackend::launch_waiting() {
  // The waiting jobs, batch by batch in submission order (tickets rise).
  std::vector<std::pair<std::filesystem::path, std::vector<uint64_t>>> batches;
  for (const auto& [ticket, p] : pending_) {
    if (!p.job.empty()) continue;
    if (batches.empty() || batches.back().first != p.dir) batches.push_back({p.dir, {}});
    batches.back().second.push_back(ticket);
  }
  for (auto& [dir, tickets] : batches) {
    const size_t n = slots_ ? slots_->take(tickets.size()) : tickets.size();
    if (n == 0) return;
    tickets.resize(n);
    std::vector<size_t> indexes;
    for (uint64_t t : tickets) indexes.push_back(pending_[t].index);
    std::string array;
    const std::string node = pending_[tickets[0]].node;
    try {
      try {
        array = sbatch(dir, indexes, node);
      } catch (const UserError& e) {
        if (node.empty()) throw;
        // The node is gone from the cluster (renamed, removed): anywhere.
        log_warn("slurm: cannot submit to node {} ({}): these candidates are measured on "
                 "whichever node Slurm gives",
                 node, e.what());
        for (uint64_t t : tickets) pending_[t].node.clear();
        array = sbatch(dir, indexes);
      }
    } catch (...) {
      if (slots_) slots_->give_back(n);
      throw;
    }
    for (uint64_t t : tickets) {
      Pending& p = pending_[t];
      p.job = fmt::format("{}_{}", array, p.index);
      p.submitted_at = monotonic_seconds();
      // Where a resumed run finds it, should this process be killed.
      write_file_atomic(job_file(dir, p.index), p.job.data(), p.job.size());
    }
  }
}

void SlurmBackend::release(const Pending& p) {
  if (slots_ && !p.job.empty()) slots_->give_back(1);
}

int64_t SlurmBackend::roof_id_of(const Roof& roof) {
  for (const Roof& r : roofs_)
    if (r.host_key == roof.host_key && r.target == roof.target && r.measured_at == roof.measured_at)
      return r.id;
  Roof kept = roof;
  kept.id = store_roof_ ? store_roof_(roof) : 0;
  if (kept.id)
    log_info("slurm: node {} calibrated its roof ({}): stored as roof {}", roof.hostname,
             roof.host_key, kept.id);
  roofs_.push_back(kept);  // later requests carry it
  return kept.id;
}

void SlurmBackend::note_result(const EvalResult& r) {
  if (profile_top_ <= 0 || r.status != Status::ok || !r.timing) return;
  const double t = r.timing->median_s;
  best_times_.insert(std::lower_bound(best_times_.begin(), best_times_.end(), t), t);
  if (static_cast<int>(best_times_.size()) > profile_top_) best_times_.pop_back();
}

std::optional<EvalResult> SlurmBackend::read_result(const Pending& p) {
  const auto file = p.dir / fmt::format("{}.result.json", p.index);
  if (!std::filesystem::exists(file)) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(read_text_file(file), nullptr, false);
  EvalResult r;
  if (j.is_object() && j.contains("result")) {
    try {
      EvalResult got = result_from_wire(j["result"]);
      if (j.value("profiled", false)) profiled_.insert(p.key);  // not again when measured again
      if (j.contains("node") && j["node"].is_string()) {
        node_of_[p.key] = last_node_ = j["node"].get<std::string>();
      }
      if (j.contains("roof") && j["roof"].is_object()) {
        // Judged against a roof the node calibrated: the store keeps it,
        // with the node's name, and the result points at it.
        Roof roof = Roof::from_json(j["roof"]);
        got.roof_id = roof_id_of(roof);
      }
      return got;
    } catch (const std::exception& e) {
      r.status = Status::crash;
      r.detail = fmt::format("slurm: the worker's result cannot be read: {}", e.what());
      return r;
    }
  }
  r.status = Status::crash;
  r.detail = j.is_object() && j.contains("error") && j["error"].is_string()
                 ? "slurm: the worker could not evaluate it: " + j["error"].get<std::string>()
                 : std::string("slurm: the worker's result file is not JSON");
  return r;
}

EvalResult SlurmBackend::ended_without_result(const Pending& p, const std::string& state,
                                              const std::string& detail) const {
  EvalResult r;
  r.status = state == "TIMEOUT" ? Status::timeout : Status::crash;
  r.roof_id = roof_.id;
  r.detail = state == "still queued"
                 ? fmt::format("slurm: array task {} was still queued{}", p.job, detail)
                 : fmt::format("slurm: array task {} ended {} without a result{}", p.job, state,
                               detail);
  // What the worker said before it ended.
  const auto err = p.dir / fmt::format("{}.err", p.index);
  if (std::filesystem::exists(err)) r.stderr_text = read_text_file(err).substr(0, 16384);
  return r;
}

std::vector<FinishedJob> SlurmBackend::poll(const ProgressFn& stage) {
  std::vector<FinishedJob> done;
  double last_stage = 0;
  while (!pending_.empty()) {
    launch_waiting();
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->second.job.empty()) {
        ++it;
        continue;
      }
      if (std::optional<EvalResult> r = read_result(it->second)) {
        note_result(*r);
        done.push_back({it->first, std::move(*r)});
        release(it->second);
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
    if (!done.empty()) return done;
    // Which tasks the queue still has, and in what state.
    std::vector<std::string> arrays;
    size_t waiting = 0;
    for (const auto& [t, p] : pending_) {
      if (p.job.empty()) {
        ++waiting;
        continue;
      }
      const std::string array = p.job.substr(0, p.job.find('_'));
      if (std::find(arrays.begin(), arrays.end(), array) == arrays.end()) arrays.push_back(array);
    }
    const ProcessResult q =
        arrays.empty() ? ProcessResult{}
                       : slurm_command({"squeue", "-h", "-r", "-o", "%i %T %r", "-j",
                                        fmt::format("{}", fmt::join(arrays, ","))});
    std::map<std::string, std::string> state, why_queued;
    if (succeeded(q)) {
      std::istringstream in(q.out);
      for (std::string line; std::getline(in, line);) {
        std::istringstream words(line);
        std::string id, s, reason;
        if (!(words >> id >> s)) continue;
        std::getline(words >> std::ws, reason);
        state[id] = s;
        why_queued[id] = reason;
      }
    }
    std::vector<std::string> never_started;
    size_t running = 0, queued = 0;
    const double now = monotonic_seconds();
    std::vector<std::pair<uint64_t, Pending>> resubmit;
    for (auto it = pending_.begin(); it != pending_.end();) {
      Pending& p = it->second;
      if (p.job.empty()) {  // waits for a slot on this host
        ++it;
        continue;
      }
      auto s = state.find(p.job);
      if (succeeded(q) && s != state.end()) {
        const bool started = s->second != "PENDING";
        (started ? running : queued)++;
        p.gone_since = 0;
        if (!started && now - p.submitted_at > 60 * config_.start_timeout_min) {
          never_started.push_back(p.job);
          if (!p.node.empty()) {
            // Its node never took it: measured anywhere instead, once.
            log_warn("slurm: array task {} waited {:.3g} min for node {} (queue reason: {}): "
                     "submitted to any node",
                     p.job, config_.start_timeout_min, p.node,
                     why_queued[p.job].empty() ? "none given" : why_queued[p.job]);
            p.node.clear();
            resubmit.push_back({it->first, p});
            it = pending_.erase(it);
            continue;
          }
          done.push_back(
              {it->first,
               ended_without_result(p, "still queued",
                                    fmt::format(" {:.3g} min after its submission (queue reason: "
                                                "{}): cancelled",
                                                config_.start_timeout_min,
                                                why_queued[p.job].empty() ? "none given"
                                                                          : why_queued[p.job]))});
          release(p);
          it = pending_.erase(it);
          continue;
        }
        ++it;
        continue;
      }
      if (!succeeded(q)) {  // the controller did not answer: ask again later
        ++it;
        continue;
      }
      if (p.gone_since == 0) p.gone_since = now;
      if (now - p.gone_since < config_.result_grace_s) {
        ++it;
        continue;
      }
      // Out of the queue and no result after the grace: how it ended.
      const ProcessResult c = slurm_command({"scontrol", "show", "job", p.job});
      const std::string job_state = succeeded(c) ? field(c.out, "JobState") : "";
      const std::string reason = succeeded(c) ? field(c.out, "Reason") : "";
      const std::string exit = succeeded(c) ? field(c.out, "ExitCode") : "";
      const bool taken = job_state == "PREEMPTED" || job_state == "NODE_FAIL" ||
                         job_state == "BOOT_FAIL";
      if (taken && p.resubmits < config_.resubmits) {
        resubmit.push_back({it->first, p});
        it = pending_.erase(it);
        continue;
      }
      std::string detail;
      if (!reason.empty() && reason != "None") detail += fmt::format(" (reason {})", reason);
      if (!exit.empty() && exit != "0:0") detail += fmt::format(", exit code {}", exit);
      done.push_back({it->first, ended_without_result(
                                     p, job_state.empty() ? "unknown to the controller" : job_state,
                                     detail)});
      release(p);
      it = pending_.erase(it);
    }
    if (!never_started.empty()) {
      std::vector<std::string> argv = {"scancel"};
      argv.insert(argv.end(), never_started.begin(), never_started.end());
      slurm_command(argv, 30);
    }
    for (auto& [ticket, p] : resubmit) {
      const bool moved = std::find(never_started.begin(), never_started.end(), p.job) !=
                         never_started.end();
      if (!moved)
        log_warn("slurm: array task {} was taken away (preempted or node failure): submitted again",
                 p.job);
      const std::string array = sbatch(p.dir, {p.index});  // keeps its slot
      p.job = fmt::format("{}_{}", array, p.index);
      p.submitted_at = monotonic_seconds();
      write_file_atomic(job_file(p.dir, p.index), p.job.data(), p.job.size());
      if (!moved) ++p.resubmits;
      p.gone_since = 0;
      pending_[ticket] = p;
    }
    if (!done.empty()) return done;
    if (stage && now - last_stage > 5) {
      stage(waiting ? fmt::format("{} candidates on the cluster: {} running, {} queued, {} waiting "
                                  "for a job slot (at most {} in flight)",
                                  pending_.size() - waiting, running, queued, waiting,
                                  slots_ ? slots_->cap() : 0)
                    : fmt::format("{} candidates on the cluster: {} running, {} queued",
                                  pending_.size(), running, queued));
      last_stage = now;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(config_.poll_s));
  }
  return done;
}

void SlurmBackend::cancel() {
  // The tasks not yet started are cancelled and forgotten; running ones
  // finish and are still collected.
  std::set<std::string> arrays;
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second.job.empty()) {  // never submitted: forgotten
      it = pending_.erase(it);
      continue;
    }
    arrays.insert(it->second.job.substr(0, it->second.job.find('_')));
    ++it;
  }
  if (arrays.empty()) return;
  const ProcessResult q = slurm_command(
      {"squeue", "-h", "-r", "-t", "PENDING", "-o", "%i", "-j", fmt::format("{}", fmt::join(arrays, ","))});
  if (!succeeded(q)) return;
  std::set<std::string> queued;
  std::istringstream in(q.out);
  for (std::string id; in >> id;) queued.insert(id);
  std::vector<std::string> argv = {"scancel"};
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (queued.count(it->second.job)) {
      argv.push_back(it->second.job);
      release(it->second);
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
  if (argv.size() > 1) slurm_command(argv, 30);
}

}  // namespace kevo
