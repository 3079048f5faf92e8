// Start at retime_rows(): which rows can be re-timed (why_not_retimable),
// then retime_row() builds, times and stores both kernels of one task.
#include "report/retime.h"

#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "core/error.h"
#include "core/paths.h"
#include "eval/compile_cache.h"
#include "eval/evaluator.h"
#include "eval/reference_cache.h"
#include "eval/roofs.h"
#include "targets/target.h"

namespace kevo {

namespace {

// Why a row cannot be re-timed here (`targets`: list_targets()); empty when
// it can, "-" when there is nothing to time.
std::string why_not_retimable(const TaskComparison& r, const std::vector<TargetInfo>& targets) {
  if (!r.baseline || !r.current || !r.baseline->ok || !r.current->ok) return "-";  // nothing to time
  if (r.baseline->hash != r.current->hash)
    return "not re-timed: the task's config changed between the sides";
  for (const auto* side : {&*r.baseline, &*r.current})
    if (side->source_text.empty())
      return fmt::format("not re-timed: the export of {} carries no kernel source (written by an "
                         "older kevo)",
                         side->origin);
  if (!r.current->task_config.is_object())
    return fmt::format("not re-timed: the export of {} carries no task config", r.current->origin);
  const std::string& target = r.current->target;
  for (const TargetInfo& t : targets)
    if (t.name == target)
      return t.available ? "" : fmt::format("not re-timed: target {} is not available here ({})",
                                            target, t.why_not);
  return fmt::format("not re-timed: this kevo has no target '{}'", target);
}

// The figures of one side's re-timed rounds as a TaskResult: its median round
// stands for it, the pooled samples give its p20 and p80.
void take_rounds(TaskResult& side, const std::vector<EvalResult>& rounds, int64_t run,
                 int64_t candidate) {
  side.rounds_s.clear();
  side.samples_s.clear();
  for (const EvalResult& e : rounds) {
    side.rounds_s.push_back(e.timing->median_s);
    side.samples_s.insert(side.samples_s.end(), e.timing->samples_s.begin(),
                          e.timing->samples_s.end());
  }
  side.median_s = TimingStats::from_samples(side.rounds_s, 1, 0).median_s;
  const TimingStats pooled = TimingStats::from_samples(side.samples_s, 1, 0);
  side.p20_s = pooled.p20_s;
  side.p80_s = pooled.p80_s;
  side.origin += fmt::format(", re-timed as candidate {} of run {}", candidate, run);
}

std::string status_text(const EvalResult& e) {
  return fmt::format("{}{}", status_name(e.status), e.detail.empty() ? "" : ": " + e.detail);
}

void retime_row(TaskComparison& r, Store& store, const CompareOptions& compare,
                const RetimeOptions& o) {
  TaskResult& base = *r.baseline;
  TaskResult& cur = *r.current;
  const Task task = parse_stored_task(cur.task_config);
  std::unique_ptr<Target> target = make_target(task.target);
  auto progress = [&](std::string_view line) {
    if (o.progress) o.progress(line);
  };
  const Roof roof = roof_for(store, *target, progress);
  ReferenceCache references(cache_dir() / "ref");
  CompileCache compiles(cache_dir());
  Evaluator evaluator(task, *target, roof, references, compiles);
  evaluator.profile_top = 0;  // timing only: the exports have the profiles
  evaluator.remeasure_roof = [&](double bytes) { return remeasure(store, *target, bytes, progress); };

  const nlohmann::json config = {{"compare", {{"baseline", base.origin}, {"current", cur.origin}}},
                                 {"rounds", o.rounds}};
  const int64_t run = store.begin_run("compare", task, config);
  struct Side {
    TaskResult* result = nullptr;
    const char* name = "";
    int64_t candidate = 0;
    PreparedCandidate prepared;
    std::vector<EvalResult> rounds;
    std::string failed;    // the round that failed, and how
    bool suspect = false;  // it failed by a time below the floor: no figure, not a fault
  };
  Side sides[2];
  sides[0].result = &base, sides[0].name = "baseline";
  sides[1].result = &cur, sides[1].name = "current";
  for (Side& s : sides) {
    const TaskResult& t = *s.result;
    const std::string hash = store.put_source(t.source_text, t.source_origin, t.source_language);
    s.candidate = store.add_candidate(run, hash, t.knob_values, t.family, "compare");
    progress(fmt::format("{}: building the {} kernel ({} {})", r.task, s.name, t.family, t.knobs));
    s.prepared = evaluator.prepare(
        CandidateSource{t.source_text, t.source_origin, t.source_language}, t.knob_values);
    if (!s.prepared.ready) {
      store.add_evaluation(s.candidate, s.prepared.result);
      s.failed = status_text(s.prepared.result);
    }
  }
  bool stopped = false;
  for (int round = 0; round < o.rounds && sides[0].failed.empty() && sides[1].failed.empty();
       ++round) {
    for (int k = 0; k < 2; ++k) {
      Side& s = sides[round % 2 == 0 ? k : 1 - k];
      if (o.interrupted && o.interrupted()) {
        stopped = true;
        break;
      }
      progress(fmt::format("{}: round {} of {}, {}", r.task, round + 1, o.rounds, s.name));
      target->retire_runners();  // each measurement in a runner of its own
      EvalResult e = evaluator.measure(s.prepared);
      store.add_evaluation(s.candidate, e);
      if (e.status != Status::ok || !e.timing) {
        s.failed = fmt::format("round {}: {}", round + 1, status_text(e));
        s.suspect = e.status == Status::suspect;
        break;
      }
      s.rounds.push_back(std::move(e));
    }
    if (stopped) break;
  }
  target->retire_runners();
  store.finish_run(run, stopped ? "interrupted" : "done");

  auto add_note = [&](const std::string& text) {
    r.note = r.note.empty() ? text : r.note + "; " + text;
  };
  if (sides[0].suspect || sides[1].suspect) {
    add_note(fmt::format("not re-timed: no credible time here in run {} ({}); judged from the "
                         "stored figures",
                         run, sides[0].suspect ? sides[0].failed : sides[1].failed));
    return;
  }
  if (!sides[1].failed.empty()) {
    r.verdict = Verdict::now_failing;
    r.gate_inconclusive = compare.fail_inconclusive;
    cur.ok = false;
    cur.failures = fmt::format("failed when re-timed here ({})", sides[1].failed);
    add_note(fmt::format("re-timed in run {}: the current kernel failed here ({})", run,
                         sides[1].failed));
    return;
  }
  if (!sides[0].failed.empty()) {
    add_note(fmt::format("not re-timed: the baseline's kernel failed here in run {} ({}); judged "
                         "from the stored figures",
                         run, sides[0].failed));
    return;
  }
  if (stopped || sides[0].rounds.size() != static_cast<size_t>(o.rounds) ||
      sides[1].rounds.size() != static_cast<size_t>(o.rounds)) {
    add_note(fmt::format("re-timing interrupted (run {}): judged from the stored figures", run));
    return;
  }
  take_rounds(base, sides[0].rounds, run, sides[0].candidate);
  take_rounds(cur, sides[1].rounds, run, sides[1].candidate);
  r.basis = Basis::retimed;
  r.interval = paired_ratio_range(base.rounds_s, cur.rounds_s);
  r.noisy = base.round_spread() > compare.threshold || cur.round_spread() > compare.threshold;
  judge_interval(r, compare);
}

}  // namespace

void retime_rows(std::vector<TaskComparison>& rows, Store& store, const CompareOptions& compare,
                 const RetimeOptions& options) {
  if (options.rounds < 1) throw UserError("re-timing needs at least one round");
  const std::vector<TargetInfo> targets = list_targets();  // probes each target once
  std::vector<std::string> whys;
  for (const TaskComparison& r : rows) whys.push_back(why_not_retimable(r, targets));
  const size_t todo = static_cast<size_t>(std::count(whys.begin(), whys.end(), ""));
  size_t done = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    TaskComparison& r = rows[i];
    if (options.interrupted && options.interrupted()) return;
    const std::string& why = whys[i];
    if (why == "-") continue;
    if (!why.empty()) {
      r.note = r.note.empty() ? why : r.note + "; " + why;
      continue;
    }
    if (options.on_task) options.on_task(fmt::format("re-timing {} ({} of {})", r.task, ++done, todo));
    try {
      retime_row(r, store, compare, options);
    } catch (const UserError& e) {  // a task config this kevo cannot read, a target that fails to start
      r.note = (r.note.empty() ? "" : r.note + "; ") +
               fmt::format("not re-timed: {}; judged from the stored figures", e.what());
    }
  }
}

}  // namespace kevo
