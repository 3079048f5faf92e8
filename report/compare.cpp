// Start at compare_tasks(): match the tasks of both sides, then
// round_ratio_range() (else bootstrap_median_ratio()) per task with a correct
// kernel on both; the renderers at the end only format what it decided.
#include "report/compare.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>

#include <fmt/format.h>

#include "core/knobs.h"
#include "core/rng.h"
#include "eval/roofline.h"  // format_seconds
#include "report/svg.h"  // xml_escape

namespace kevo {

namespace {

// The "type 7" quantile of sorted values, as TimingStats computes its median.
double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.size() == 1) return sorted[0];
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

// The same median without a full sort (reorders `v`).
double median_inplace(std::vector<double>& v) {
  const size_t mid = (v.size() - 1) / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double lo = v[mid];
  if (v.size() % 2) return lo;
  return (lo + *std::min_element(v.begin() + static_cast<std::ptrdiff_t>(mid) + 1, v.end())) / 2;
}

// The measurement that stands for a candidate: its re-measurement at the end
// of the search where there was one (a failed one means it failed), else its
// result.
const nlohmann::json& effective(const nlohmann::json& c) {
  if (c.contains("confirmation") && c["confirmation"].is_object()) return c["confirmation"];
  return c;
}

bool is_ok(const nlohmann::json& m) {
  return m.value("status", "") == "ok" && m.contains("timing") && m["timing"].is_object();
}

double median_s(const nlohmann::json& m) {
  const auto& t = m["timing"];
  return t.contains("median_s") && t["median_s"].is_number() ? t["median_s"].get<double>()
                                                             : INFINITY;
}

TaskResult task_of_run(const nlohmann::json& run) {
  TaskResult t;
  t.name = run["task"]["name"].get<std::string>();
  t.hash = run["task"]["hash"].get<std::string>();
  t.origin = run.contains("run") && run["run"].is_number_integer()
                 ? fmt::format("run {}", run["run"].get<int64_t>())
                 : std::string("export");
  std::map<std::string, int> failures;
  const nlohmann::json* fastest = nullptr;
  const nlohmann::json* chosen = nullptr;  // the run's own choice
  for (const auto& c : run["candidates"]) {
    const auto& m = effective(c);
    if (!is_ok(m)) {
      ++failures[m.value("status", "pending")];
      continue;
    }
    if (!fastest || median_s(m) < median_s(effective(*fastest))) fastest = &c;
    if (run.contains("best") && c["id"] == run["best"]) chosen = &c;
  }
  const nlohmann::json* best = chosen ? chosen : fastest;
  for (const auto& [status, n] : failures)
    t.failures += fmt::format("{}{} {}", t.failures.empty() ? "" : ", ", n, status);
  const nlohmann::json& task = run["task"];
  if (task.contains("config") && task["config"].is_object()) t.task_config = task["config"];
  if (!best) return t;
  const auto& m = effective(*best);
  t.ok = true;
  if (task.contains("target") && task["target"].is_string()) t.target = task["target"];
  if (run.contains("best_source") && run["best_source"].is_object()) {
    const auto& src = run["best_source"];
    // The source of the kernel judged here (the export's best), nothing else.
    if (src.value("hash", "") == best->value("source_hash", "-") && src.contains("text") &&
        src["text"].is_string()) {
      t.source_text = src["text"].get<std::string>();
      t.source_language = src.value("language", "");
      t.source_origin = src.value("origin", "");
    }
  }
  t.candidate = (*best)["id"].get<int64_t>();
  t.family = best->value("family", "");
  if (best->contains("knobs") && (*best)["knobs"].is_object()) {
    KnobValues k;
    for (auto it = (*best)["knobs"].begin(); it != (*best)["knobs"].end(); ++it)
      if (it.value().is_number_integer()) k[it.key()] = it.value().get<int64_t>();
    t.knobs = knobs_to_string(k);
    t.knob_values = k;
  }
  for (const auto& s : m["timing"].value("samples_s", nlohmann::json::array()))
    if (s.is_number()) t.samples_s.push_back(s.get<double>());
  if (t.samples_s.empty()) t.samples_s.push_back(median_s(m));  // an export without raw samples
  for (const auto& round : best->value("rounds", nlohmann::json::array()))
    if (round.is_object() && round.value("status", "") == "ok" && round.contains("median_s") &&
        round["median_s"].is_number())
      t.rounds_s.push_back(round["median_s"].get<double>());
  std::vector<double> sorted = t.samples_s;
  std::sort(sorted.begin(), sorted.end());
  t.median_s = quantile(sorted, 0.5);
  t.p20_s = quantile(sorted, 0.2);
  t.p80_s = quantile(sorted, 0.8);
  return t;
}

std::string pct(double ratio) {
  return fmt::format("{:+.1f}%", 100 * (ratio - 1));
}

std::string side_text(const std::optional<TaskResult>& s) {
  if (!s) return "-";
  if (!s->ok)
    return fmt::format("no correct kernel ({}; {})",
                       s->failures.empty() ? "nothing measured" : s->failures, s->origin);
  return fmt::format("{} ({}{}{}; {})", format_seconds(s->median_s), s->family,
                     s->knobs.empty() ? "" : " ", s->knobs, s->origin);
}

// The spread a verdict was judged against: each side's rounds' (max - min) /
// median and how many rounds, else its one round's (p80 - p20) / median.
std::string noise_text(const TaskComparison& r, double threshold) {
  const bool rounds = r.basis != Basis::samples;
  auto spread = [&](const std::optional<TaskResult>& s) {
    if (!s || !s->ok) return std::string("-");
    if (rounds) return fmt::format("{:.1f}% ({} rounds)", 100 * s->round_spread(), s->rounds_s.size());
    return fmt::format("{:.1f}%", 100 * s->spread());
  };
  if (!(r.baseline && r.baseline->ok) && !(r.current && r.current->ok)) return "";
  std::string s = fmt::format("{} {} / {}",
                              r.basis == Basis::retimed ? "re-timed rounds"
                              : rounds                  ? "rounds"
                                                        : "samples p20-p80",
                              spread(r.baseline), spread(r.current));
  return r.noisy ? fmt::format("noisy: {} > {:.0f}%", s, 100 * threshold) : s;
}

std::string md_cell(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}

// One line on what was decided for a task.
std::string explanation(const TaskComparison& r, const CompareOptions& o) {
  switch (r.verdict) {
    case Verdict::faster:
    case Verdict::slower:
    case Verdict::unchanged:
    case Verdict::inconclusive:
      return fmt::format(
          "{}: {} -> {}, {} ({} {} .. {}; threshold {:.0f}%); spread {}{}{}",
          verdict_name(r.verdict), format_seconds(r.baseline->median_s),
          format_seconds(r.current->median_s), pct(r.interval.ratio),
          r.basis == Basis::retimed ? std::string("range of the side-by-side rounds' ratios")
          : r.basis == Basis::rounds
              ? std::string("range over the rounds")
              : fmt::format("{:.0f}% interval", 100 * o.confidence),
          pct(r.interval.low), pct(r.interval.high), 100 * o.threshold,
          noise_text(r, o.threshold),
          r.basis != Basis::samples ? ""
                                    : "; judged from one round's samples a side: the run-to-run spread is "
                        "not known and may be larger",
          r.note.empty() ? "" : "; " + r.note);
    case Verdict::added:
      return "new: only in the current results";
    case Verdict::missing:
      return "missing: in the baseline, not in the current results";
    case Verdict::now_failing:
      return fmt::format(
          "now failing: the baseline had a correct kernel ({}), the current results "
          "none ({})",
          format_seconds(r.baseline->median_s), r.current->failures);
    case Verdict::now_passing:
      return "now passing: the baseline had no correct kernel";
    case Verdict::failing:
      return "still failing: no correct kernel on either side";
  }
  return "";
}

}  // namespace

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::faster:
      return "faster";
    case Verdict::slower:
      return "slower";
    case Verdict::unchanged:
      return "unchanged";
    case Verdict::inconclusive:
      return "inconclusive";
    case Verdict::added:
      return "new";
    case Verdict::missing:
      return "missing";
    case Verdict::now_failing:
      return "now-failing";
    case Verdict::now_passing:
      return "now-passing";
    case Verdict::failing:
      return "still-failing";
  }
  return "";
}

bool TaskComparison::failed() const {
  return verdict == Verdict::slower || verdict == Verdict::now_failing ||
         verdict == Verdict::missing || (gate_inconclusive && verdict == Verdict::inconclusive);
}

bool TaskComparison::regressed() const {
  return verdict == Verdict::slower || verdict == Verdict::now_failing ||
         (gate_inconclusive && verdict == Verdict::inconclusive);
}

double TaskResult::round_spread() const {
  if (rounds_s.size() < 2) return 0;
  std::vector<double> sorted = rounds_s;
  std::sort(sorted.begin(), sorted.end());
  const double mid = quantile(sorted, 0.5);
  return mid > 0 ? (sorted.back() - sorted.front()) / mid : 0;
}

RatioInterval round_ratio_range(const std::vector<double>& baseline,
                                const std::vector<double>& current) {
  std::vector<double> b = baseline, c = current;
  std::sort(b.begin(), b.end());
  std::sort(c.begin(), c.end());
  RatioInterval r;
  r.ratio = quantile(c, 0.5) / quantile(b, 0.5);
  r.low = c.front() / b.back();
  r.high = c.back() / b.front();
  return r;
}

RatioInterval paired_ratio_range(const std::vector<double>& baseline,
                                 const std::vector<double>& current) {
  std::vector<double> ratios;
  for (size_t i = 0; i < baseline.size() && i < current.size(); ++i)
    ratios.push_back(current[i] / baseline[i]);
  std::sort(ratios.begin(), ratios.end());
  RatioInterval r;
  if (ratios.empty()) return r;
  r.ratio = quantile(ratios, 0.5);
  r.low = ratios.front();
  r.high = ratios.back();
  return r;
}

std::string_view basis_name(Basis b) {
  switch (b) {
    case Basis::samples:
      return "samples";
    case Basis::rounds:
      return "rounds";
    case Basis::retimed:
      return "retimed";
  }
  return "";
}

void judge_interval(TaskComparison& r, const CompareOptions& o) {
  if (r.interval.high < 1 - o.threshold)
    r.verdict = Verdict::faster;
  else if (r.interval.low > 1 + o.threshold)
    r.verdict = Verdict::slower;
  else if (r.interval.low >= 1 - o.threshold && r.interval.high <= 1 + o.threshold)
    r.verdict = Verdict::unchanged;
  else
    r.verdict = Verdict::inconclusive;
}

std::vector<TaskResult> tasks_of_export(const nlohmann::json& doc) {
  std::vector<TaskResult> out;
  for (const auto& run : doc["runs"]) {
    TaskResult t = task_of_run(run);
    auto same =
        std::find_if(out.begin(), out.end(), [&](const TaskResult& o) { return o.hash == t.hash; });
    if (same == out.end()) {
      out.push_back(std::move(t));
    } else if (t.ok && (!same->ok || t.median_s < same->median_s)) {
      *same = std::move(t);
    }
  }
  return out;
}

RatioInterval bootstrap_median_ratio(const std::vector<double>& baseline,
                                     const std::vector<double>& current, double confidence,
                                     int resamples, uint64_t seed) {
  RatioInterval r;
  std::vector<double> b = baseline, c = current;
  std::sort(b.begin(), b.end());
  std::sort(c.begin(), c.end());
  r.ratio = quantile(c, 0.5) / quantile(b, 0.5);
  std::vector<double> ratios;
  ratios.reserve(static_cast<size_t>(resamples));
  std::vector<double> rb(b.size()), rc(c.size());
  for (int k = 0; k < resamples; ++k) {
    // Draw i of resample k of side s is random_bits(seed, s, k * n + i): the
    // same inputs always give the same interval.
    auto draw = [&](const std::vector<double>& from, std::vector<double>& into, uint64_t side) {
      const uint64_t n = from.size();
      for (uint64_t i = 0; i < n; ++i)
        into[i] = from[random_bits(seed, side, static_cast<uint64_t>(k) * n + i) % n];
    };
    draw(b, rb, 1);
    draw(c, rc, 2);
    ratios.push_back(median_inplace(rc) / median_inplace(rb));
  }
  std::sort(ratios.begin(), ratios.end());
  r.low = quantile(ratios, (1 - confidence) / 2);
  r.high = quantile(ratios, (1 + confidence) / 2);
  return r;
}

std::vector<TaskComparison> compare_tasks(const std::vector<TaskResult>& baseline,
                                          const std::vector<TaskResult>& current,
                                          const CompareOptions& o) {
  std::vector<int> match(baseline.size(), -1);
  std::vector<bool> taken(current.size(), false);
  for (size_t i = 0; i < baseline.size(); ++i)
    for (size_t k = 0; k < current.size(); ++k)
      if (!taken[k] && current[k].hash == baseline[i].hash) {
        match[i] = static_cast<int>(k);
        taken[k] = true;
        break;
      }
  // A task whose config changed keeps its name: compare it, and say so.
  for (size_t i = 0; i < baseline.size(); ++i)
    for (size_t k = 0; k < current.size() && match[i] < 0; ++k)
      if (!taken[k] && current[k].name == baseline[i].name) {
        match[i] = static_cast<int>(k);
        taken[k] = true;
      }

  std::vector<TaskComparison> rows;
  auto judge = [&](TaskComparison& r) {
    const auto& b = r.baseline;
    const auto& c = r.current;
    if (!c) return void(r.verdict = Verdict::missing);
    if (!b) return void(r.verdict = Verdict::added);
    if (b->hash != c->hash) {
      // The L2 state the times start from changes them by itself (a clean L2
      // can be a sixth faster on a decode GEMM): say so where it changed.
      auto l2_of = [](const nlohmann::json& cfg) {
        return cfg.is_object() && cfg.contains("timing") && cfg["timing"].is_object()
                   ? cfg["timing"].value("l2", std::string("dirty"))
                   : std::string("dirty");
      };
      const std::string l2b = l2_of(b->task_config), l2c = l2_of(c->task_config);
      r.note = fmt::format("task config changed (hash {} -> {}{})", b->hash.substr(0, 12),
                           c->hash.substr(0, 12),
                           l2b != l2c ? fmt::format("; timed from a {} L2, was {}", l2c, l2b) : "");
    }
    if (!b->ok) return void(r.verdict = c->ok ? Verdict::now_passing : Verdict::failing);
    if (!c->ok) return void(r.verdict = Verdict::now_failing);
    r.gate_inconclusive = o.fail_inconclusive;
    r.basis = b->rounds_s.size() >= 2 && c->rounds_s.size() >= 2 ? Basis::rounds : Basis::samples;
    if (r.basis == Basis::rounds) {
      r.interval = round_ratio_range(b->rounds_s, c->rounds_s);
      r.noisy = b->round_spread() > o.threshold || c->round_spread() > o.threshold;
    } else {
      r.interval =
          bootstrap_median_ratio(b->samples_s, c->samples_s, o.confidence, o.resamples, o.seed);
      r.noisy = b->spread() > o.threshold || c->spread() > o.threshold;
    }
    judge_interval(r, o);
  };
  for (size_t i = 0; i < baseline.size(); ++i) {
    TaskComparison r;
    r.task = baseline[i].name;
    r.baseline = baseline[i];
    if (match[i] >= 0) r.current = current[static_cast<size_t>(match[i])];
    judge(r);
    rows.push_back(std::move(r));
  }
  for (size_t k = 0; k < current.size(); ++k) {
    if (taken[k]) continue;
    TaskComparison r;
    r.task = current[k].name;
    r.current = current[k];
    judge(r);
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string comparison_markdown(const std::vector<TaskComparison>& rows, const CompareOptions& o) {
  std::map<std::string, int> counts;
  for (const auto& r : rows) ++counts[std::string(verdict_name(r.verdict))];
  std::string tally;
  for (const auto& [v, n] : counts)
    tally += fmt::format("{}{} {}", tally.empty() ? "" : ", ", n, v);
  int noisy = 0, one_round = 0, retimed = 0;
  for (const auto& r : rows) {
    noisy += r.noisy;
    const bool timed = r.baseline && r.baseline->ok && r.current && r.current->ok;
    one_round += timed && r.basis == Basis::samples;
    retimed += timed && r.basis == Basis::retimed;
  }
  size_t retime_rounds = 0;
  for (const auto& r : rows)
    if (r.basis == Basis::retimed && r.baseline) retime_rounds = r.baseline->rounds_s.size();
  const std::string retime_text =
      retimed ? fmt::format(
                    "{} task{} re-timed on this machine, both kernels side by side in {} rounds "
                    "whose order alternates: a change counts there beyond ±{:.0f}% when every "
                    "round's ratio (current / baseline) lies beyond it. ",
                    retimed, retimed == 1 ? "" : "s", retime_rounds, 100 * o.threshold)
              : std::string();
  const std::string stored_text = fmt::format(
      "{}A change counts beyond ±{:.0f}% when it holds in every pairing of a baseline round with "
      "a current one (each round an independent re-measurement); where a side has one round, "
      "when the whole {:.0f}% bootstrap interval of the ratio of medians (current / baseline, {} "
      "resamples) lies beyond it{}. ",
      retimed ? "Elsewhere: " : "", 100 * o.threshold, 100 * o.confidence, o.resamples,
      one_round ? fmt::format(" ({} task{}: the run-to-run spread is not known there)", one_round,
                              one_round == 1 ? "" : "s")
                : "");
  std::string s = fmt::format(
      "kevo compare: {} task{}: {}{}. {}{}Unchanged when the range lies within ±{:.0f}%, "
      "inconclusive when it straddles a bound ({}).\n\n",
      rows.size(), rows.size() == 1 ? "" : "s", tally.empty() ? "none" : tally,
      noisy ? fmt::format("; {} noisy (a side's spread is wider than the threshold)", noisy) : "",
      retime_text, retimed < static_cast<int>(rows.size()) ? stored_text : "", 100 * o.threshold,
      o.fail_inconclusive ? "which fails the gate" : "which does not fail the gate");
  s += "| task | verdict | baseline | current | change | interval | spread | note |\n";
  s += "|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    const bool timed = r.baseline && r.baseline->ok && r.current && r.current->ok;
    s +=
        fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", md_cell(r.task),
                    verdict_name(r.verdict), md_cell(side_text(r.baseline)),
                    md_cell(side_text(r.current)), timed ? pct(r.interval.ratio) : "",
                    timed ? fmt::format("{} .. {}", pct(r.interval.low), pct(r.interval.high)) : "",
                    md_cell(noise_text(r, o.threshold)), md_cell(r.note));
  }
  return s;
}

std::string comparison_junit(const std::vector<TaskComparison>& rows, const CompareOptions& o) {
  // The JUnit XML that Jenkins, GitLab and GitHub test reporters read (the
  // Jenkins junit-10.xsd, as pytest writes it): <testsuites> holds one
  // <testsuite> whose <testcase>s carry a <failure message type> or a
  // <skipped message>.
  int failures = 0, skipped = 0;
  for (const auto& r : rows) {
    failures += r.failed();
    skipped += r.verdict == Verdict::failing;
  }
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += fmt::format(
      "<testsuites name=\"kevo compare\" tests=\"{0}\" failures=\"{1}\" errors=\"0\" "
      "skipped=\"{2}\">\n"
      "  <testsuite name=\"kevo compare\" tests=\"{0}\" failures=\"{1}\" errors=\"0\" "
      "skipped=\"{2}\" time=\"0\">\n",
      rows.size(), failures, skipped);
  for (const auto& r : rows) {
    // A test case's time is the kernel's current median, where there is one.
    const double time = r.current && r.current->ok ? r.current->median_s : 0;
    const std::string why = explanation(r, o);
    s += fmt::format("    <testcase classname=\"kevo.compare\" name=\"{}\" time=\"{:.9f}\">\n",
                     xml_escape(r.task), time);
    if (r.failed())
      s += fmt::format("      <failure type=\"{}\" message=\"{}\">{}</failure>\n",
                       verdict_name(r.verdict), xml_escape(why),
                       xml_escape(side_text(r.baseline) + "\n" + side_text(r.current)));
    else if (r.verdict == Verdict::failing)
      s += fmt::format("      <skipped message=\"{}\"/>\n", xml_escape(why));
    s += fmt::format("      <system-out>{}</system-out>\n", xml_escape(why));
    s += "    </testcase>\n";
  }
  s += "  </testsuite>\n</testsuites>\n";
  return s;
}

nlohmann::json comparison_json(const std::vector<TaskComparison>& rows, const CompareOptions& o) {
  auto side = [](const std::optional<TaskResult>& s) -> nlohmann::json {
    if (!s) return nullptr;
    nlohmann::json j = {{"name", s->name}, {"hash", s->hash}, {"origin", s->origin}, {"ok", s->ok}};
    if (s->ok) {
      j["candidate"] = s->candidate;
      j["family"] = s->family;
      j["knobs"] = s->knobs;
      j["median_s"] = s->median_s;
      j["p20_s"] = s->p20_s;
      j["p80_s"] = s->p80_s;
      j["spread"] = s->spread();
      j["samples"] = s->samples_s.size();
      j["rounds_s"] = s->rounds_s;
      j["round_spread"] = s->round_spread();
    } else {
      j["failures"] = s->failures;
    }
    return j;
  };
  nlohmann::json tasks = nlohmann::json::array();
  nlohmann::json counts = nlohmann::json::object();
  for (const auto& r : rows) {
    nlohmann::json t = {{"task", r.task},
                        {"verdict", verdict_name(r.verdict)},
                        {"baseline", side(r.baseline)},
                        {"current", side(r.current)},
                        {"noisy", r.noisy},
                        {"failed", r.failed()},
                        {"regressed", r.regressed()},
                        {"note", r.note},
                        {"explanation", explanation(r, o)}};
    if (r.baseline && r.baseline->ok && r.current && r.current->ok) {
      t["ratio"] = r.interval.ratio;
      t["ci_low"] = r.interval.low;
      t["ci_high"] = r.interval.high;
      t["basis"] = basis_name(r.basis);
    }
    counts[std::string(verdict_name(r.verdict))] =
        counts.value(std::string(verdict_name(r.verdict)), 0) + 1;
    tasks.push_back(std::move(t));
  }
  return {{"threshold", o.threshold},
          {"confidence", o.confidence},
          {"resamples", o.resamples},
          {"seed", o.seed},
          {"fail_inconclusive", o.fail_inconclusive},
          {"counts", counts},
          {"regressed", comparison_exit_status(rows) != 0},
          {"tasks", tasks}};
}

int comparison_exit_status(const std::vector<TaskComparison>& rows) {
  return std::any_of(rows.begin(), rows.end(),
                     [](const TaskComparison& r) { return r.regressed(); })
             ? 1
             : 0;
}

}  // namespace kevo
