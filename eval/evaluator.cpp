#include "eval/evaluator.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <mutex>

#include <fmt/format.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/paths.h"
#include "core/redact.h"
#include "eval/compare.h"
#include "eval/roofline.h"
#include "eval/static_check.h"
#include "targets/traits.h"

namespace kevo {

std::string first_error_line(const std::string& log) {
  size_t pos = 0;
  std::string first;
  while (pos < log.size()) {
    size_t eol = log.find('\n', pos);
    if (eol == std::string::npos) eol = log.size();
    std::string line = log.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.empty()) continue;
    if (first.empty()) first = line;
    if (line.find(" error:") != std::string::npos || line.rfind("error:", 0) == 0) return line;
  }
  return first.empty() ? "the compiler failed without a message" : first;
}

Evaluator::Evaluator(const Task& task, Target& target, const Roof& roof,
                     ReferenceCache& references, CompileCache& compiles)
    : task_(task), target_(target), roof_(roof), references_(references), compiles_(compiles) {
  auto label = [](const ShapeSet& s, uint64_t seed) {
    return fmt::format("{} seed {}", shape_str(s.shapes[0]), seed);
  };
  std::vector<ShapeSet> timed = task.timed;
  if (timed.empty()) timed.push_back(task.main);
  for (size_t k = 0; k < timed.size(); ++k) {
    std::vector<RunPhase> plan;
    if (k == 0)
      for (const auto& s : task.check_shapes)
        plan.push_back({RunPhase::check, s, task.seed, label(s, task.seed)});
    const ShapeSet& main = timed[k];
    plan.push_back({RunPhase::check, main, task.seed, label(main, task.seed)});
    // Timing uses inputs the checks never saw, and the re-check after it uses
    // inputs the kernel has never seen: a kernel that replays results it
    // computed earlier gives stale answers there.
    plan.push_back({RunPhase::time, main, task.seed + 1, label(main, task.seed + 1)});
    plan.push_back({RunPhase::check, main, task.seed + 2,
                    label(main, task.seed + 2) + " after timing"});
    plans_.push_back(std::move(plan));
    // Several timed shapes: each is judged against its own roof.
    if (timed.size() > 1) shape_tasks_.push_back(task.for_shape(k));
  }
}

// A check's label: its phase's, and for the check of a time phase's last
// sample, says so. unchecked_phases finds the reports by these labels.
static std::string check_label(const RunPhase& p) {
  return p.kind == RunPhase::time ? p.label + ", the last timed calls" : p.label;
}

std::string Evaluator::unchecked_phases(const std::vector<CheckReport>& checks,
                                        const std::vector<RunPhase>& plan) const {
  // The check reports in plan order: one per check phase, and one per time
  // phase where the target checks its timed calls.
  std::vector<std::string> want;
  for (const RunPhase& p : plan)
    if (p.kind == RunPhase::check) want.push_back(p.label);
    else if (target_.traits().checks_timed_calls) want.push_back(check_label(p));
  std::vector<std::string> missing;
  size_t next = 0;
  for (const std::string& label : want) {
    bool found = false;
    for (size_t i = next; i < checks.size() && !found; ++i)
      if (checks[i].label == label && checks[i].passed) {
        found = true;
        next = i + 1;
      }
    if (!found) missing.push_back(label);
  }
  return fmt::format("{}", fmt::join(missing, "; "));
}

EvalResult Evaluator::evaluate(const CandidateSource& source, const KnobValues& knobs) {
  if (on_stage) on_stage("compiling");
  return measure(prepare(source, knobs));
}

PreparedCandidate Evaluator::prepare(const CandidateSource& source,
                                     const KnobValues& knobs) const {
  PreparedCandidate p;
  EvalResult& r = p.result;
  r.roof_id = roof_.id;
  // A plain kernel's ABI entry point is generated: the source needs its function.
  const std::string entry =
      !task_.entry.empty() ? task_.entry.function : std::string(target_.traits().entry_point);
  if (auto why = static_check(source.text, entry, source.language)) {
    r.status = Status::rejected;
    r.detail = *why;
    return p;
  }
  p.source = source;
  p.knobs = knobs;
  p.compiled = compiles_.get(target_, task_, source.text, source.origin, source.language, knobs);
  const CompiledCandidate& c = p.compiled;
  r.compile_s = c.seconds;
  r.compile_cached = c.cache_hit;
  r.compile_log = c.log;
  if (!c.ok) {
    r.status = Status::compile_error;
    r.detail = first_error_line(c.log);
    return p;
  }
  p.ready = true;
  return p;
}

// The CPU's counters over the timed calls, per call and as ratios (cpu.*).
static void add_counter_metrics(const RunOutcome& run, std::vector<ProfileMetric>& profile) {
  if (!run.cpu_counted) return;
  const auto& c = run.cpu_counters;
  const double calls =
      static_cast<double>(run.samples_s.size()) * static_cast<double>(run.calls_per_sample);
  auto get = [&](const char* name) {
    auto it = c.find(name);
    return it == c.end() ? -1.0 : it->second;
  };
  const double cycles = get("cycles"), instructions = get("instructions");
  const double references = get("cache_references"), misses = get("cache_misses");
  const double branch_misses = get("branch_misses"), switches = get("context_switches");
  if (calls > 0 && cycles > 0) profile.push_back({"cpu.cycles_per_call", cycles / calls, "", 0});
  if (calls > 0 && instructions >= 0)
    profile.push_back({"cpu.instructions_per_call", instructions / calls, "", 0});
  if (cycles > 0 && instructions >= 0)
    profile.push_back({"cpu.ipc", instructions / cycles, "instructions/cycle", 0});
  if (references > 0 && misses >= 0)
    profile.push_back({"cpu.cache_miss_pct", 100 * misses / references, "%", 0});
  if (calls > 0 && branch_misses >= 0)
    profile.push_back({"cpu.branch_misses_per_call", branch_misses / calls, "", 0});
  if (switches >= 0) profile.push_back({"cpu.context_switches", switches, "", 0});
  // How many hardware events the machine gave (0: none; the note says why).
  double hardware = 0;
  for (const char* e : {"cycles", "instructions", "cache_references", "cache_misses", "branch_misses"})
    hardware += c.count(e);
  profile.push_back({"cpu.hardware_events", hardware, "", 0});
  if (hardware == 0 && !run.cpu_counters_note.empty()) {
    static std::once_flag said;
    std::call_once(said, [&] { log_debug("cpu counters: {}", run.cpu_counters_note); });
  }
}

// The share of its timing the runner waited for a CPU (percent), 0 where not read.
static double cpu_wait_pct(const EvalResult& r) {
  for (const auto& m : r.profile)
    if (m.metric == kCpuWaitMetric) return m.value;
  return 0;
}

EvalResult Evaluator::measure(PreparedCandidate prepared) {
  if (!prepared.ready) return std::move(prepared.result);
  const CompiledCandidate& c = prepared.compiled;
  // Several GPUs measure at once: their stage lines take turns.
  ProgressFn stage;
  if (on_stage)
    stage = [this](std::string_view s) {
      std::lock_guard<std::mutex> lock(stage_mutex_);
      on_stage(s);
    };
  EvalResult r = run_and_judge(c, prepared.result, stage);
  if (r.status == Status::suspect) {
    // A suspect time is never a verdict on its first word: measured again,
    // in a runner process of its own, and only a clean second measurement
    // counts.
    if (stage) stage("suspect: measuring again in a fresh runner");
    target_.retire_runners();
    const std::string first = r.detail;
    const double first_run_s = r.run_s;
    r = run_and_judge(c, prepared.result, stage);
    r.run_s += first_run_s;
    if (r.status == Status::ok)
      r.detail = "measured twice: the first measurement was suspect (" + first + ")";
    else if (r.status == Status::suspect)
      r.detail = first + "; measured again in a fresh runner: " + r.detail;
    else
      r.detail += " (measured again after a suspect first measurement: " + first + ")";
  }
  // Samples taken while the runner waited for a CPU (another process had
  // it) measure the neighbour as much as the kernel: measured again in a
  // fresh runner; the less disturbed measurement counts, and one still
  // disturbed says so.
  if (const double wait = cpu_wait_pct(r); r.status == Status::ok && wait > kContendedPct) {
    if (stage)
      stage(fmt::format("the runner waited for a CPU {:.0f}% of its timing: measuring again", wait));
    target_.retire_runners();
    EvalResult again = run_and_judge(c, prepared.result, stage);
    again.run_s += r.run_s;
    const double wait2 = cpu_wait_pct(again);
    if (again.status != Status::ok) {
      again.detail += fmt::format(" (measured again after the runner waited for a CPU {:.0f}% of "
                                  "its first timing)",
                                  wait);
    } else if (wait2 <= kContendedPct) {
      again.detail = fmt::format(
          "measured twice: the runner waited for a CPU {:.0f}% of its first timing", wait);
    } else {
      const double both_run_s = again.run_s;
      if (wait < wait2) again = std::move(r);  // the first was the less disturbed
      again.run_s = both_run_s;
      again.detail = fmt::format(
          "measured under contention: the runner waited for a CPU {:.0f}% of its timing, "
          "{:.0f}% when measured again; this figure is the less disturbed",
          wait, wait2);
    }
    r = std::move(again);
  }
  if (r.status != Status::ok && r.status != Status::suspect) return r;
  // The compiler's resource report (registers, spills) goes with every
  // measured candidate; spills are a bottleneck of their own.
  std::vector<ProfileMetric> machine = std::move(r.profile);  // run_and_judge's: the machine's state
  r.profile = target_.compile_metrics(c.log);
  r.profile.insert(r.profile.end(), machine.begin(), machine.end());
  const TargetTraits& traits = target_.traits();
  for (const auto& m : r.profile)
    if (*traits.spill_metric && m.metric == traits.spill_metric && m.value > 0) {
      r.diagnosis->bottleneck = "spills";
      r.diagnosis->why += fmt::format("; {}: {:.0f} bytes of registers spilled to local memory",
                                      traits.spill_reporter, m.value);
    }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    measuring_s_ += r.compile_s + r.run_s;
  }
  bool over_share = false;
  if (r.status == Status::ok && should_profile(r.timing->median_s, c.key, over_share)) {
    if (stage) stage("profiling");
    const double p0 = monotonic_seconds();
    add_profile(prepared, r);
    std::lock_guard<std::mutex> lock(mutex_);
    profiling_s_ += monotonic_seconds() - p0;
  } else if (over_share && r.diagnosis) {
    r.diagnosis->why += fmt::format(
        "; not profiled: profiles had taken their share ({:.0f}%) of this run's measuring time",
        100 * profile_share);
  }
  return r;
}

// A synchronize on a device with nothing left to do returns in a few
// microseconds; work the end event missed keeps it busy for longer.
constexpr double kEscapedWorkAllowance_s = 20e-6;

// The middle value of `v` (not empty).
static double middle(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// How far kevo's own clock around the samples may exceed what the runner
// reports of them: the runner's work between "go" and its timing event
// besides the samples (one poisoning of the outputs, the canaries, the
// event itself: at most about two calls), a pipe's wake-ups and a busy
// machine's scheduling, with a quarter on top for the clocks' noise.
static bool clock_confirms(double wall_s, double reported_s, size_t samples) {
  const double per_sample = reported_s / static_cast<double>(std::max<size_t>(samples, 1));
  return wall_s <= 1.25 * reported_s + 2 * per_sample + 0.02 && reported_s <= 1.05 * wall_s + 1e-3;
}

EvalResult Evaluator::run_and_judge(const CompiledCandidate& c, EvalResult r,
                                    const ProgressFn& stage) {
  if (plans_.size() == 1) return run_plan(c, std::move(r), 0, stage);
  // Several timed shapes: each shape's plan in turn, each judged on its own
  // (checks, clocks, roof); the first that is not ok is the verdict.
  std::vector<EvalResult> per_shape;
  std::vector<CheckReport> checks;
  double run_s = 0;
  for (size_t k = 0; k < plans_.size(); ++k) {
    EvalResult rk = run_plan(c, r, k, stage);
    run_s += rk.run_s;
    checks.insert(checks.end(), rk.checks.begin(), rk.checks.end());
    if (rk.status != Status::ok) {
      rk.detail = fmt::format("at timed shape {} of {} ({}): {}", k + 1, plans_.size(),
                              shape_str(task_.timed[k].shapes[0]), rk.detail);
      rk.checks = std::move(checks);
      rk.run_s = run_s;
      return rk;
    }
    per_shape.push_back(std::move(rk));
  }
  std::vector<TimingStats> timings;
  std::vector<Diagnosis> diagnoses;
  for (const auto& rk : per_shape) {
    timings.push_back(*rk.timing);
    diagnoses.push_back(*rk.diagnosis);
  }
  EvalResult out = per_shape.front();
  out.checks = std::move(checks);
  out.run_s = run_s;
  out.timing = combine_shape_timings(timings, task_.weights);
  std::vector<std::string> labels;
  for (const auto& s : task_.timed) labels.push_back(shape_str(s.shapes[0]));
  out.diagnosis = combine_diagnoses(diagnoses, task_.weights, labels, *out.timing);
  // What the machine said: the first shape's, with the checks' costs added
  // up and the most a runner waited for a CPU (so contention is measured
  // again whichever shape met it).
  for (size_t k = 1; k < per_shape.size(); ++k)
    for (const auto& m : per_shape[k].profile)
      for (auto& o : out.profile)
        if (o.metric == m.metric) {
          if (m.metric.rfind("eval.", 0) == 0) o.value += m.value;
          else if (m.metric == kCpuWaitMetric) o.value = std::max(o.value, m.value);
        }
  for (size_t k = 0; k < per_shape.size(); ++k) {
    const TimingStats& t = *per_shape[k].timing;
    const auto name = [&](const char* what) { return fmt::format("shape.{}.{}", k, what); };
    out.profile.push_back({name("median_s"), t.median_s, "s", 0});
    out.profile.push_back({name("p20_s"), t.p20_s, "s", 0});
    out.profile.push_back({name("p80_s"), t.p80_s, "s", 0});
    out.profile.push_back({name("weight"), task_.weights[k], "", 0});
    out.profile.push_back({name("roof_pct"), 100 * per_shape[k].diagnosis->roof_fraction, "%", 0});
    if (k > 0) {
      out.stdout_text += per_shape[k].stdout_text;
      out.stderr_text += per_shape[k].stderr_text;
    }
  }
  return out;
}

// A GPU runner's samples hold device time only where the flush and the
// launch cover kept the GPU busy until the call reached it (launch.*
// metrics). Where a tenth or more of the samples' calls outlasted them (a
// launch slower on the host than the cover can grow to hide), the GPU idled
// inside those samples: the diagnosis says so, beside the figure.
namespace {
void note_unhidden_launches(EvalResult& r) {
  if (!r.timing || !r.diagnosis) return;
  double outlasted = 0, host_us = 0;
  for (const auto& m : r.profile) {
    if (m.metric == "launch.outlasted") outlasted = m.value;
    if (m.metric == "launch.host_us") host_us = m.value;
  }
  const double n = static_cast<double>(r.timing->samples_s.size());
  if (n <= 0 || outlasted < 0.1 * n) return;
  r.diagnosis->why += fmt::format(
      "; {:.0f} of {:.0f} samples' calls outlasted the launch cover ({} on the host a call): the "
      "GPU idled inside them, so this time holds host time too",
      outlasted, n, format_seconds(host_us * 1e-6));
}
}  // namespace

EvalResult Evaluator::run_plan(const CompiledCandidate& c, EvalResult r, size_t shape,
                               const ProgressFn& stage) {
  const std::vector<RunPhase>& plan = plans_[shape];
  const Task& task = shape_tasks_.empty() ? task_ : shape_tasks_[shape];
  size_t checks_before_timing = 0;
  for (const RunPhase& p : plan) {
    if (p.kind == RunPhase::time) break;
    ++checks_before_timing;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    r.roof_id = roof_.id;
  }
  const double t0 = monotonic_seconds();
  // What the checks cost kevo (the references, the comparisons): with the
  // run's time they say where an evaluation's seconds go.
  double reference_s = 0, compare_s = 0;
  auto check = [&](size_t phase, const std::vector<ConstTensorView>& outputs) {
    const RunPhase& p = plan[phase];
    const double c0 = monotonic_seconds();
    auto ref = references_.get(task_, p.shapes, p.seed);
    const double c1 = monotonic_seconds();
    CheckReport report = compare_outputs(*task_.op, outputs, ref->views(), task_.compare);
    reference_s += c1 - c0;
    compare_s += monotonic_seconds() - c1;
    report.label = check_label(p);
    return report;
  };
  if (stage) stage(fmt::format("checking {}", plan.front().label));
  RunOutcome run = target_.run(task, c.artifact, plan, check, stage);
  r.run_s = monotonic_seconds() - t0;
  r.checks = run.checks;
  // Whatever the candidate printed, no secret of kevo's goes further.
  r.stdout_text = redact_secrets(run.stdout_text);
  r.stderr_text = redact_secrets(run.stderr_text);

  switch (run.kind) {
    case RunOutcome::check_failed: {
      r.status = Status::mismatch;
      const CheckReport& bad = r.checks.back();
      const bool after_timing = r.checks.size() > checks_before_timing;
      r.detail = fmt::format("{}{} of {} values wrong on {}", after_timing ? "right on the first inputs, but " : "",
                             bad.mismatches, bad.checked, bad.label);
      if (bad.first)
        r.detail += fmt::format("; first at {}{} (compared by {}): got {:.7g}, want {:.7g}",
                                bad.first->tensor, bad.first->coords, bad.first->compare,
                                bad.first->got, bad.first->want);
      if (bad.failed_outputs.size() > 1)
        r.detail += fmt::format("; wrong outputs: {}", fmt::join(bad.failed_outputs, ", "));
      if (!bad.note.empty()) r.detail += "; " + bad.note;
      return r;
    }
    case RunOutcome::timed_out:
      r.status = Status::timeout;
      r.detail = run.detail;
      return r;
    case RunOutcome::kernel_error:
      if (run.kernel_rc == 4) {  // KEVO_ERR_LAUNCH: a point this device cannot run at all
        r.status = Status::rejected;
        r.detail = run.detail + " (a point the device cannot launch, dropped as Kernel Tuner drops it)";
        return r;
      }
      [[fallthrough]];
    case RunOutcome::crashed:
      r.status = Status::crash;
      r.detail = run.detail;
      return r;
    case RunOutcome::compile_failed:
      r.status = Status::compile_error;
      r.detail = run.detail;
      r.compile_log += (r.compile_log.empty() ? "" : "\n") + run.detail;
      return r;
    case RunOutcome::finished:
      break;
  }
  if (run.samples_s.empty()) {
    r.status = Status::crash;
    r.detail = "the runner finished without timing samples";
    return r;
  }
  // Every check the plan asks for, passed, before a time is believed: the
  // events come from the candidate's process, and a stream that leaves a
  // check out (or the check of the timed calls, where the runner does one)
  // is no verdict.
  if (const std::string missing = unchecked_phases(r.checks, plan); !missing.empty()) {
    r.status = Status::crash;
    r.detail = "the runner finished without the checks of " + missing;
    return r;
  }
  r.timing = TimingStats::from_samples(run.samples_s, run.calls_per_sample, run.warmup_calls);
  r.profile = run.machine;
  r.profile.push_back({"eval.check_reference_s", reference_s, "s", 0});
  r.profile.push_back({"eval.check_compare_s", compare_s, "s", 0});
  if (run.timing_cpu_wait_s >= 0 && run.timing_wall_s > 0)
    r.profile.push_back(
        {kCpuWaitMetric, 100 * std::min(1.0, run.timing_cpu_wait_s / run.timing_wall_s), "%", 0});
  add_counter_metrics(run, r.profile);
  // The samples come from the candidate's process: where kevo's own clock
  // brackets them, they must add up to what it saw.
  std::string clock_doubt;
  if (target_.traits().host_clocked_timing) {
    double reported = 0;
    for (double t : run.samples_s) reported += t * static_cast<double>(run.calls_per_sample);
    if (run.timing_wall_s <= 0)
      clock_doubt = "kevo's clock did not see the samples being taken";
    else if (!clock_confirms(run.timing_wall_s, reported, run.samples_s.size()))
      clock_doubt = fmt::format(
          "the runner reported {} of samples, kevo's clock saw them take {}: a time kevo cannot "
          "confirm",
          format_seconds(reported), format_seconds(run.timing_wall_s));
  }
  // Work the end event did not wait for (a stream of the kernel's own) is
  // not in the samples: the device busy after the end event, beyond what a
  // synchronize costs on an idle device, is such work.
  if (clock_doubt.empty() && !run.after_end_s.empty()) {
    const double busy = middle(run.after_end_s);
    if (busy > kEscapedWorkAllowance_s + 0.05 * r.timing->median_s)
      clock_doubt = fmt::format(
          "the device stayed busy {} (median) after the end event of {} samples: work on a "
          "stream kevo does not time",
          format_seconds(busy), format_seconds(r.timing->median_s));
  }
  // Work that runs before the start event (alongside the flush, on a stream
  // of the kernel's own) is not in the samples either: timed with the device
  // idle before the start event, the kernel must not be much slower than in
  // its samples (allowing what the host takes to launch it, which the idle
  // device waits for).
  if (clock_doubt.empty() && !run.fenced_s.empty()) {
    const double f = middle(run.fenced_s), m = r.timing->median_s;
    if (f > m + std::max(run.host_call_s, 0.0) + kEscapedWorkAllowance_s + 0.1 * m)
      clock_doubt = fmt::format(
          "timed with the device otherwise idle the kernel takes {}, in its samples {}: work ran "
          "where the timed events do not see it (a stream kevo does not time)",
          format_seconds(f), format_seconds(m));
  }
  std::unique_lock<std::mutex> lock(mutex_);
  r.diagnosis = diagnose(task, *r.timing, roof_);
  if (!clock_doubt.empty()) {
    r.status = Status::suspect;
    r.detail = clock_doubt;
    return r;
  }
  if (is_suspect(*r.diagnosis, *r.timing) && remeasure_roof && !remeasured_) {
    // The stored roof may be low (measured while the machine was busy):
    // measure it again before calling the time impossible.
    remeasured_ = true;
    const BandwidthPoint* bw = roof_.bandwidth_for(task.bytes());
    if (on_stage) on_stage("the time beats the stored roof: measuring the roof again");
    roof_ = remeasure_roof(bw ? bw->bytes : task.bytes());
    r.roof_id = roof_.id;
    r.diagnosis = diagnose(task, *r.timing, roof_);
  }
  r.status = is_suspect(*r.diagnosis, *r.timing) ? Status::suspect : Status::ok;
  if (r.status == Status::suspect)
    r.detail = fmt::format("median {} is below the roofline floor {}: not a credible time",
                           format_seconds(r.timing->median_s), format_seconds(r.diagnosis->floor_s));
  note_unhidden_launches(r);
  return r;
}

bool Evaluator::should_profile(double median_s, const std::string& key, bool& over_share) {
  over_share = false;
  if (profile_top <= 0 || !(target_.can_profile() || target_.has_compiler_report())) return false;
  if (!(median_s < profile_below_s)) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  if (profiled_.count(key)) return false;
  auto pos = std::lower_bound(best_times_.begin(), best_times_.end(), median_s);
  if (pos - best_times_.begin() >= profile_top) return false;
  if (!profiled_.empty() && profiling_s_ > profile_share * (measuring_s_ + profiling_s_)) {
    over_share = true;
    return false;
  }
  best_times_.insert(pos, median_s);
  if (static_cast<int>(best_times_.size()) > profile_top) best_times_.pop_back();
  profiled_.insert(key);
  return true;
}

void Evaluator::add_profile(const PreparedCandidate& prepared, EvalResult& r) {
  const CompiledCandidate& c = prepared.compiled;
  // What the compiler says of it (the cpu target: the vectorizer's remarks),
  // from a copy of the text it was built from.
  if (target_.has_compiler_report()) {
    const std::string ext = prepared.source.origin.has_extension()
                                ? prepared.source.origin.extension().string()
                                : source_extension(prepared.source.language);
    const auto dir = cache_dir() / std::string(target_.name()) / "reports";
    std::filesystem::create_directories(dir);
    const auto src = dir / fmt::format("{}.{}{}", c.key, getpid(), ext);
    write_file_atomic(src, prepared.source.text.data(), prepared.source.text.size());
    CompileRequest req;
    req.task = &task_;
    req.source = src;
    req.language = prepared.source.language;
    req.knobs = prepared.knobs;
    req.output = dir / fmt::format("{}.{}.out", c.key, getpid());
    if (!prepared.source.origin.empty())
      req.include_dirs.push_back(std::filesystem::absolute(prepared.source.origin).parent_path());
    ProfileOutcome report;
    try {
      report = target_.compiler_report(req);
    } catch (const std::exception& e) {
      report.note = e.what();
    }
    std::error_code ec;
    std::filesystem::remove(src, ec);
    std::filesystem::remove(req.output, ec);
    r.profile.insert(r.profile.end(), report.metrics.begin(), report.metrics.end());
    r.diagnosis->why += "; " + (report.ok ? report.why : "no compiler report: " + report.note);
  }
  if (!target_.can_profile()) return;
  // The full-size check phase: the task's shape on the inputs checks use.
  const RunPhase* phase = nullptr;
  for (const auto& p : plans_.front())
    if (p.kind == RunPhase::check && p.shapes.shapes == task_.main.shapes) {
      phase = &p;
      break;
    }
  if (!phase) return;
  ProfileOutcome p = target_.profile(task_, c.artifact, *phase, c.key);
  r.profile.insert(r.profile.end(), p.metrics.begin(), p.metrics.end());
  // What profiling cost, beside what it found: a search pays it for each of
  // the best few.
  if (p.seconds > 0) r.profile.push_back({"profile.seconds", p.seconds, "s", 0});
  if (!p.ok) {
    r.diagnosis->why += "; not profiled: " + p.note;
    return;
  }
  if (r.diagnosis->bottleneck.empty() || r.diagnosis->bottleneck != "spills")
    r.diagnosis->bottleneck = p.bottleneck;
  r.diagnosis->why += "; " + p.why;
}

}  // namespace kevo
