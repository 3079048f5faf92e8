// kevo explain: the evidence for one candidate, read from the store — its
// bounds against its measured time, the bottleneck, profiler metrics, the
// state of the machine when it was timed, the hottest source lines and its
// lineage.
#include <cmath>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/knobs.h"
#include "core/task.h"
#include "eval/roofline.h"
#include "report/export.h"
#include "report/machine_text.h"
#include "search/tree.h"

namespace kevo::cli {

namespace {

std::string bytes_text(double b) {
  if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.1f} MB", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.1f} kB", b / 1e3);
  return fmt::format("{:.0f} B", b);
}

std::string value_text(double v, const std::string& unit) {
  if (std::isnan(v)) return "n/a";
  if (unit == "fraction") return fmt::format("{:.1f}%", 100 * v);
  return unit.empty() ? fmt::format("{:.4g}", v) : fmt::format("{:.4g} {}", v, unit);
}

nlohmann::json timing_json(const TimingStats& t) {
  return {{"median_s", t.median_s},
          {"p20_s", t.p20_s},
          {"p80_s", t.p80_s},
          {"samples", t.samples_s.size()}};
}

// Lines of the source, 1-based as compilers and profilers count them.
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// A candidate's status and the time it stands at: its confirming
// re-measurement's median where that was ok ("confirmed"), else its result's
// (the tree's figure: the measurement it reuses, else its first), as its
// median line and bounds take them.
nlohmann::json standing(Store& store, const TreeNode& n) {
  if (std::optional<int64_t> conf = store.confirming_evaluation(n.candidate)) {
    std::optional<EvalResult> again = store.evaluation(*conf);
    if (again && again->status == Status::ok && again->timing)
      return {{"status", "ok"}, {"median_s", again->timing->median_s}, {"confirmed", true}};
  }
  if (!n.evaluated) return {{"status", "pending"}};
  nlohmann::json s = {{"status", std::string(status_name(n.status))}};
  if (n.status == Status::ok) s["median_s"] = n.seconds;
  return s;
}

// Everything explain shows, as JSON; the text view prints from it.
nlohmann::json gather(Store& store, int64_t id) {
  const std::optional<CandidateRecord> c = store.candidate(id);
  if (!c) throw UserError(fmt::format("no candidate {} in {}", id, store.path().string()));
  const RunRecord run = store.run(c->run).value_or(RunRecord{});
  nlohmann::json j = {
      {"candidate", id},
      {"run", c->run},
      {"run_kind", run.kind},
      {"task", {{"name", run.task_name}, {"operator", run.op}, {"target", run.target}}},
      {"family", c->family},
      {"knobs", knobs_from_json(c->knobs_json)},
      {"synthesizer", c->synthesizer},
      {"source_hash", c->source_hash}};

  // Its result is its first evaluation, or the one it reuses from an earlier
  // run; a later one is a re-measurement that confirmed it.
  std::vector<int64_t> evals;
  if (c->reuses_evaluation) evals.push_back(*c->reuses_evaluation);
  for (int64_t e : store.evaluations_of(id)) evals.push_back(e);
  if (evals.empty()) {
    j["status"] = "pending";
    return j;
  }
  std::optional<EvalResult> result = store.evaluation(evals.front());
  KEVO_ASSERT(result.has_value());
  j["evaluation"] = evals.front();
  j["status"] = std::string(status_name(result->status));
  j["detail"] = result->detail;
  double measured = NAN;
  if (result->timing) {
    j["timing"] = timing_json(*result->timing);
    measured = result->timing->median_s;
  }
  // The machine as the search's measurement and the confirming one left it.
  nlohmann::json machine = nlohmann::json::object();
  if (auto state = store.machine_state(evals.front()); !state.empty()) machine["search"] = state;
  std::optional<EvalResult> again;  // the confirming re-measurement, where there is one
  const std::optional<int64_t> conf_id = store.confirming_evaluation(id);
  if (conf_id) {
    again = store.evaluation(*conf_id);
    nlohmann::json conf = {{"evaluation", *conf_id}, {"measurements", evals.size() - 1},
                           {"status", std::string(status_name(again->status))}};
    if (again->timing) {
      conf["timing"] = timing_json(*again->timing);
      if (again->status == Status::ok) measured = again->timing->median_s;
    }
    j["confirmation"] = conf;
    if (auto state = store.machine_state(*conf_id); !state.empty()) machine["confirmation"] = state;
  }
  if (!machine.empty()) j["machine"] = machine;
  // One median per candidate: the diagnosis of the measurement that stands
  // for it (the confirmation's where it was re-measured ok), the same one the
  // bounds below divide by.
  const EvalResult& stands =
      again && again->status == Status::ok && again->diagnosis ? *again : *result;
  j["diagnosis_of"] = &stands == &*result ? "search" : "confirmation";
  if (stands.diagnosis) {
    const Diagnosis& d = *stands.diagnosis;
    j["bound"] = d.bound;
    j["roof_fraction"] = d.roof_fraction;
    j["diagnosis"] = d.why;
    j["bottleneck"] = d.bottleneck;
    // The profiler ran on the search's measurement (the best few are
    // profiled there, not at the confirmation): its verdict, where the one
    // that stands has none.
    if (d.bottleneck.empty() && &stands != &*result && result->diagnosis &&
        !result->diagnosis->bottleneck.empty()) {
      j["bottleneck"] = result->diagnosis->bottleneck;
      j["profiled_diagnosis"] = result->diagnosis->why;
    }
    j["achieved_gbps"] = d.achieved_gbps;
    j["achieved_gflops"] = d.achieved_gflops;
  }

  // The bounds, from the task's byte and FLOP counts and the roof the
  // evaluation was judged against.
  nlohmann::json bounds = {
      {"measured_s", std::isnan(measured) ? nlohmann::json(nullptr) : nlohmann::json(measured)}};
  std::optional<Task> task;
  std::string task_error;
  try {
    task = parse_stored_task(nlohmann::json::parse(run.task_json));
  } catch (const std::exception& e) {  // a config this kevo no longer reads: no bounds
    task_error = e.what();
  }
  std::optional<Roof> roof =
      stands.roof_id ? roof_as_judged(store, stands.roof_id) : std::nullopt;
  if (task && task->multi_shape()) {
    // Several timed shapes: each shape's time and share of its roof, and the
    // fastest candidate of the run at that shape alone.
    // The figures of the measurement that stands for it (as its median line).
    const int64_t stands_id = &stands == &*result ? evals.front() : conf_id.value_or(evals.front());
    std::vector<ProfileMetric> figures;
    for (const ProfileRow& r : store.profile(stands_id))
      if (r.value) figures.push_back({r.metric, *r.value, r.unit, 0});
    const std::vector<ShapeTime> mine = shape_times(figures);
    const auto all = store.shape_times_of_run(c->run);
    nlohmann::json rows = nlohmann::json::array();
    for (size_t k = 0; k < task->timed.size(); ++k) {
      nlohmann::json row = {{"shape", shape_str(task->timed[k].shapes[0])},
                            {"weight", task->weights[k]}};
      for (const ShapeTime& t : mine)
        if (t.index == k)
          row["this"] = {{"median_s", t.median_s}, {"p20_s", t.p20_s}, {"p80_s", t.p80_s},
                         {"roof_pct", t.roof_pct}};
      int64_t fastest = 0;
      const ShapeTime* ft = nullptr;
      for (const auto& [cand, times] : all)
        for (const ShapeTime& t : times)
          if (t.index == k && (!ft || t.median_s < ft->median_s)) fastest = cand, ft = &t;
      if (ft)
        row["fastest"] = {{"candidate", fastest}, {"median_s", ft->median_s},
                          {"p20_s", ft->p20_s}, {"p80_s", ft->p80_s}};
      rows.push_back(std::move(row));
    }
    j["shapes"] = rows;
  }
  if (task) {
    j["task"]["shape"] = timed_shapes_str(*task);
    j["task"]["dtype"] = dtype_name(task->dtype);
    bounds["bytes"] = task->bytes();
    bounds["flops"] = task->flops();
  }
  if (task && roof && !task->multi_shape()) {
    if (const BandwidthPoint* bw = roof->bandwidth_for(task->bytes())) {
      const double floor = task->bytes() / (bw->gbps * 1e9);
      bounds["memory"] = {{"floor_s", floor},
                          {"gbps", bw->gbps},
                          {"kind", bw->kind},
                          {"working_set_bytes", bw->bytes},
                          {"threads", bw->threads}};
      if (!std::isnan(measured)) bounds["memory"]["fraction"] = floor / measured;
    }
    if (std::optional<PeakPoint> peak = roof->peak_for_dtype(dtype_name(task->dtype))) {
      const double floor = task->flops() / (peak->gflops * 1e9);
      bounds["compute"] = {{"floor_s", floor},
                           {"gflops", peak->gflops},
                           {"kind", peak->kind},
                           {"threads", peak->threads}};
      if (!std::isnan(measured)) bounds["compute"]["fraction"] = floor / measured;
    }
    bounds["roof"] = {
        {"id", roof->id}, {"host_key", roof->host_key}, {"calibrations", roof->calibrations}};
  }
  if (!task)
    bounds["unknown"] = fmt::format("the stored task no longer loads: {}", task_error);
  else if (task->multi_shape())
    bounds["unknown"] = "several timed shapes: each shape's share of its roof is on its line";
  else if (!roof)
    bounds["unknown"] = "no roof is stored for the evaluation";
  j["bounds"] = bounds;

  // Profiler and compiler figures of the latest evaluation the profiler saw:
  // every measured evaluation has the compiler's (ptxas.*), so a later
  // re-measurement must not hide the profiled one. Else of the latest with
  // the compiler's. The machine's state (machine.*) is not the kernel's: it
  // has a line of its own; nor is what measuring it cost (eval.*).
  std::optional<int64_t> profiled, compiled;
  std::map<int64_t, std::vector<ProfileRow>> figures;  // by evaluation, measuring rows left out
  for (int64_t e : evals) {
    for (ProfileRow& r : store.profile(e)) {
      if (is_measuring_metric(r.metric)) continue;
      if (r.metric.rfind("ptxas.", 0) != 0) profiled = std::max(profiled.value_or(e), e);
      compiled = std::max(compiled.value_or(e), e);
      figures[e].push_back(std::move(r));
    }
  }
  const std::optional<int64_t> shown = profiled ? profiled : compiled;
  nlohmann::json metrics = nlohmann::json::array();
  std::map<std::string, std::vector<std::pair<int64_t, std::pair<double, std::string>>>> per_line;
  for (const ProfileRow& m : shown ? figures[*shown] : std::vector<ProfileRow>{}) {
    const double v = m.value.value_or(NAN);
    if (m.source_line > 0) {
      per_line[m.metric].push_back({m.source_line, {v, m.unit}});
      continue;
    }
    metrics.push_back({{"metric", m.metric},
                       {"value", std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v)},
                       {"unit", m.unit}});
  }
  j["profile"] = metrics;
  if (shown && !figures[*shown].empty()) j["profile_evaluation"] = *shown;

  // The hottest lines by each per-line metric, with their text.
  constexpr size_t kHotLines = 5;
  const std::optional<SourceRecord> src = store.source(c->source_hash);
  const std::vector<std::string> lines = src ? split_lines(src->text) : std::vector<std::string>{};
  nlohmann::json hot = nlohmann::json::array();
  for (auto& [metric, rows] : per_line) {
    std::stable_sort(rows.begin(), rows.end(),
                     [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
    for (size_t i = 0; i < rows.size() && i < kHotLines; ++i) {
      const int64_t line = rows[i].first;
      hot.push_back({{"line", line},
                     {"metric", metric},
                     {"value", rows[i].second.first},
                     {"unit", rows[i].second.second},
                     {"text", line <= static_cast<int64_t>(lines.size())
                                  ? nlohmann::json(trim(lines[static_cast<size_t>(line - 1)]))
                                  : nlohmann::json(nullptr)}});
    }
  }
  j["hot_lines"] = hot;

  // Its ancestry up to the seed (a crossover has two parents: both are there),
  // each with the figure its median line would give.
  CandidateTree tree = CandidateTree::load(store, c->run);
  nlohmann::json lineage = nlohmann::json::array();
  for (int64_t a : tree.lineage(id)) {
    const TreeNode* n = tree.find(a);
    nlohmann::json node = {{"candidate", a},
                           {"family", n->family},
                           {"knobs", n->knobs},
                           {"synthesizer", n->synthesizer},
                           {"parents", tree.parents(a)}};
    node.update(standing(store, *n));
    lineage.push_back(std::move(node));
  }
  j["lineage"] = lineage;
  return j;
}

void print_text(const nlohmann::json& j) {
  auto line = [](const char* label, const std::string& text) {
    fmt::print("{:<12}{}\n", label, text);
  };
  const auto& t = j["task"];
  fmt::print("candidate {} of run {} ({}): {} ({}{}{} on {})\n", j["candidate"].get<int64_t>(),
             j["run"].get<int64_t>(), j["run_kind"].get<std::string>(),
             t["name"].get<std::string>(), t["operator"].get<std::string>(),
             t.contains("shape") ? " " + t["shape"].get<std::string>() : "",
             t.contains("dtype") ? " " + t["dtype"].get<std::string>() : "",
             t["target"].get<std::string>());
  KnobValues knobs = j["knobs"].get<KnobValues>();
  line("family",
       fmt::format("{}{}{} (made by {})", j["family"].get<std::string>(), knobs.empty() ? "" : "  ",
                   knobs_to_string(knobs), j["synthesizer"].get<std::string>()));
  std::string status = j["status"].get<std::string>();
  if (j.contains("detail") && !j["detail"].get<std::string>().empty())
    status += ": " + j["detail"].get<std::string>();
  line("status", status);
  if (j["status"] == "pending") return;
  auto timing = [](const nlohmann::json& x) {
    return fmt::format("{} (p20 {}, p80 {}, {} samples)",
                       format_seconds(x["median_s"].get<double>()),
                       format_seconds(x["p20_s"].get<double>()),
                       format_seconds(x["p80_s"].get<double>()), x["samples"].get<size_t>());
  };
  if (j.contains("timing")) {
    std::string m = timing(j["timing"]);
    if (j.contains("confirmation")) {
      const auto& c = j["confirmation"];
      const size_t n = c.value("measurements", size_t{1});
      const std::string again =
          n > 1 ? fmt::format("; re-measured in {} rounds, the median one ", n) : "; re-measured ";
      m += c.contains("timing") ? again + timing(c["timing"])
                                : again + "failed: " + c["status"].get<std::string>();
    }
    line("median", m);
  }
  if (j.contains("machine")) {
    const auto& m = j["machine"];
    std::string text;
    for (const char* when : {"search", "confirmation"})
      if (m.contains(when))
        text += fmt::format("{}{}: {}", text.empty() ? "" : "; ", when, machine_text(m[when]));
    line("machine", text);
  }
  const auto& b = j["bounds"];
  if (b.contains("memory")) {
    const auto& m = b["memory"];
    const double ws = m["working_set_bytes"].get<double>();
    line("memory",
         fmt::format(
             "{} / {:.1f} GB/s ({}) = floor {}{}", bytes_text(b["bytes"].get<double>()), m["gbps"].get<double>(),
             ws > 0 ? fmt::format("{} at {} on {} thread{}", m["kind"].get<std::string>(), bytes_text(ws),
                                  m["threads"].get<int>(), m["threads"].get<int>() > 1 ? "s" : "")
                    : m["kind"].get<std::string>() + " from the hardware sheet, not measured",
             format_seconds(m["floor_s"].get<double>()),
             m.contains("fraction")
                 ? fmt::format(", {:.0f}% of the {} median", 100 * m["fraction"].get<double>(),
                               format_seconds(b["measured_s"].get<double>()))
                 : ""));
  }
  if (b.contains("compute")) {
    const auto& c = b["compute"];
    line("compute",
         fmt::format(
             "{:.4g} GFLOP / {:.1f} GFLOP/s ({} on {} thread{}) = floor {}{}",
             b["flops"].get<double>() / 1e9, c["gflops"].get<double>(),
             c["kind"].get<std::string>(), c["threads"].get<int>(),
             c["threads"].get<int>() > 1 ? "s" : "", format_seconds(c["floor_s"].get<double>()),
             c.contains("fraction")
                 ? fmt::format(", {:.0f}% of the {} median", 100 * c["fraction"].get<double>(),
                               format_seconds(b["measured_s"].get<double>()))
                 : ""));
  }
  if (j.contains("shapes")) {
    bool first = true;
    for (const auto& row : j["shapes"]) {
      std::string text = fmt::format("{} x{:g}:", row["shape"].get<std::string>(),
                                     row["weight"].get<double>());
      if (row.contains("this"))
        text += fmt::format(" {} (p20 {}, p80 {}), {:.0f}% of its roof",
                            format_seconds(row["this"]["median_s"].get<double>()),
                            format_seconds(row["this"]["p20_s"].get<double>()),
                            format_seconds(row["this"]["p80_s"].get<double>()),
                            row["this"]["roof_pct"].get<double>());
      if (row.contains("fastest")) {
        const int64_t f = row["fastest"]["candidate"].get<int64_t>();
        text += f == j["candidate"].get<int64_t>()
                    ? "; the run's fastest at this shape"
                    : fmt::format("; the run's fastest here: candidate {}, {}", f,
                                  format_seconds(row["fastest"]["median_s"].get<double>()));
      }
      line(first ? "per shape" : "", text);
      first = false;
    }
  }
  if (!b.contains("memory") && !b.contains("compute"))
    line("bounds", fmt::format("unknown ({})", b.value("unknown", std::string("no figures"))));
  if (j.contains("bound"))
    line("bound",
         fmt::format("{}-bound, {:.0f}% of the roof at the {} median (achieved {:.3g} GB/s, "
                     "{:.3g} GFLOP/s)",
                     j["bound"].get<std::string>(), 100 * j["roof_fraction"].get<double>(),
                     j["diagnosis_of"] == "confirmation" ? "re-measured" : "search's",
                     j["achieved_gbps"].get<double>(), j["achieved_gflops"].get<double>()));
  if (j.contains("bottleneck"))
    line("bottleneck", j["bottleneck"].get<std::string>().empty()
                           ? "not profiled"
                           : j["bottleneck"].get<std::string>());
  if (j.contains("diagnosis")) line("diagnosis", j["diagnosis"].get<std::string>());
  if (j.contains("profiled_diagnosis"))
    line("profiled", "at the search's measurement: " + j["profiled_diagnosis"].get<std::string>());
  bool first = true;
  for (const auto& m : j["profile"]) {
    const double v = m["value"].is_number() ? m["value"].get<double>() : NAN;
    line(first ? "profile" : "", fmt::format("{:<32} {}", m["metric"].get<std::string>(),
                                             value_text(v, m["unit"].get<std::string>())));
    first = false;
  }
  if (first)
    line("profile", "none stored (kevo profiles the best candidates where the target can)");
  first = true;
  for (const auto& h : j["hot_lines"]) {
    line(first ? "hot lines" : "",
         fmt::format("line {:<5} {:<12} {}  | {}", h["line"].get<int64_t>(),
                     value_text(h["value"].get<double>(), h["unit"].get<std::string>()),
                     h["metric"].get<std::string>(),
                     h["text"].is_string() ? h["text"].get<std::string>() : "(no such line)"));
    first = false;
  }
  first = true;
  for (const auto& n : j["lineage"]) {
    std::string parents;
    for (const auto& p : n["parents"])
      parents += fmt::format("{}{}", parents.empty() ? "" : ", ", p.get<int64_t>());
    line(first ? "lineage" : "",
         fmt::format("#{} {}{}{} ({}): {}{}{}", n["candidate"].get<int64_t>(),
                     n["family"].get<std::string>(),
                     n["knobs"].get<std::string>().empty() ? "" : " ",
                     n["knobs"].get<std::string>(), n["synthesizer"].get<std::string>(),
                     n.contains("median_s") ? format_seconds(n["median_s"].get<double>())
                                            : n["status"].get<std::string>(),
                     n.value("confirmed", false) ? " re-measured" : "",
                     parents.empty() ? "" : " <- " + parents));
    first = false;
  }
}

}  // namespace

int cmd_explain(const Argv& argv) {
  Args a("explain", "explain CANDIDATE [--json] [--db PATH]",
         "Shows the evidence for one candidate from the store: its task, family, knobs and\n"
         "status; the memory floor (bytes / measured bandwidth) and compute floor (FLOPs /\n"
         "measured peak rate) against its measured median; its bound, fraction of the roof and\n"
         "bottleneck (the profiled search measurement's, where the re-measurement has none);\n"
         "the profiler and compiler metrics stored for it (ncu.*, ptxas.*, neuron.*: a Neuron\n"
         "profile's engine times, bounds and bottleneck engine); the\n"
         "state of the machine (machine.*: clocks, temperatures, power, throttling, load) at\n"
         "the end of its search measurement and of its confirming one; its hottest source\n"
         "lines with their text; and its lineage up to the seed. Candidate ids are in kevo\n"
         "run's output, kevo export and: kevo query top-k RUN 10",
         {db_option(), json_option()}, 1, 1);
  a.parse(argv);
  if (a.help()) {
    fmt::print("{}", a.help_text());
    return 0;
  }
  const int64_t id = parse_id(a.positional()[0], "kevo explain CANDIDATE");
  Store store(store_path(a), /*read_only=*/true);
  nlohmann::json j = gather(store, id);
  if (a.flag("--json"))
    fmt::print("{}\n", j.dump(2));
  else
    print_text(j);
  return 0;
}

}  // namespace kevo::cli
