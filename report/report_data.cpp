// Gathers a report's data from the store. Start at run_report(): one query
// for every candidate's result (its first own evaluation, or the earlier
// measurement it reused), then each section from those results, the run's
// summary, its sources, its roof and its candidate tree.
#include <ctime>

#include <algorithm>
#include <cstdint>
#include <set>
#include <map>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/roof.h"
#include "core/space.h"
#include "core/store.h"
#include "core/task.h"
#include "eval/roofline.h"
#include "report/report.h"
#include "search/batch.h"
#include "search/families.h"
#include "search/tree.h"
#include "targets/target.h"

namespace kevo {

namespace {

using nlohmann::json;

json number(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

// Seconds since the epoch of "2026-11-30T07:27:27Z" (the store's timestamps).
double epoch_seconds(const std::string& iso) {
  std::tm tm{};
  if (!strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm)) return 0;
  return static_cast<double>(timegm(&tm));
}

// One candidate's result: its own first evaluation, or the earlier
// measurement it was answered from.
struct Result {
  int64_t candidate = 0;
  std::string family, synthesizer, knobs_text;
  json knobs;
  bool reused = false;
  std::string status, detail, bound, bottleneck, diagnosis;
  json median, p20, p80, roof_fraction, gflops, gbps;
  std::optional<int64_t> roof_id;
  double at = 0;  // when the run had it, seconds since the epoch
  bool ok() const { return status == "ok" && median.is_number(); }
};

// The results of `run`'s candidates in the order the run had them.
std::vector<Result> results_of(Store& store, int64_t run) {
  std::vector<Result> out;
  for (const CandidateResult& x : store.results(run)) {
    if (!x.candidate.result_evaluation) continue;  // pending
    Result r;
    r.candidate = x.candidate.id;
    r.family = x.candidate.family;
    const KnobValues knobs = knobs_from_json(x.candidate.knobs_json);
    r.knobs = knobs;
    r.knobs_text = knobs_to_string(knobs);
    r.synthesizer = x.candidate.synthesizer;
    r.reused = x.candidate.reuses_evaluation.has_value();
    r.status = x.status;
    r.detail = x.detail;
    r.median = number(x.median_s);
    r.p20 = number(x.p20_s);
    r.p80 = number(x.p80_s);
    r.roof_fraction = number(x.roof_fraction);
    r.bound = x.bound;
    r.bottleneck = x.bottleneck;
    r.diagnosis = x.diagnosis;
    r.gflops = number(x.achieved_gflops);
    r.gbps = number(x.achieved_gbps);
    if (x.roof_id) r.roof_id = *x.roof_id;
    // An answer from the store counts when the candidate was made; a
    // measurement when it was stored.
    r.at = epoch_seconds(r.reused ? x.candidate.created_at : x.evaluated_at);
    out.push_back(std::move(r));
  }
  std::stable_sort(out.begin(), out.end(), [](const Result& a, const Result& b) {
    return a.at != b.at ? a.at < b.at : a.candidate < b.candidate;
  });
  return out;
}

// Best median so far after each result: [{n, t_s, best_s, confirmed}], from
// the first correct one on, by the search's figures; `scale` divides the
// times (1: seconds). Then, where the run
// confirmed its best, one last point ("confirmed": true) at the figure the
// run reports: the curve ends where the headline is, and a search figure the
// re-measurement did not bear out shows as the step up to it.
json convergence_points(const std::vector<Result>& results, double started_at, double scale,
                        const RunRecord* run = nullptr,
                        std::optional<double> headline_s = std::nullopt) {
  json points = json::array();
  double best = 0, last_t = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    if (r.ok() && (best == 0 || r.median.get<double>() < best)) best = r.median.get<double>();
    last_t = std::max(last_t, r.at - started_at);
    if (best > 0)
      points.push_back({{"n", i + 1},
                        {"t_s", std::max(0.0, r.at - started_at)},
                        {"best_s", best / scale},
                        {"confirmed", false}});
  }
  if (!run || points.empty()) return points;
  const json summary = run->summary();
  if (!summary.is_object() || !summary.contains("best") || !summary["best"].is_object()) return points;
  const json& b = summary["best"];
  if (!b.value("confirmed", false) || !b["median_s"].is_number()) return points;
  // The figure the report quotes for the best, where it has its own.
  const double final_s = headline_s ? *headline_s : b["median_s"].get<double>();
  const double end_t =
      run->finished_at.empty() ? last_t : std::max(last_t, epoch_seconds(run->finished_at) - started_at);
  points.push_back({{"n", results.size()},
                    {"t_s", std::max(0.0, end_t)},
                    {"best_s", final_s / scale},
                    {"confirmed", true}});
  return points;
}

// A search's figure holds when its re-measurement lands within this factor of it.
constexpr double kHeldFactor = 1.25;

json result_row(const Result& r) {
  return {{"candidate", r.candidate},
          {"family", r.family},
          {"knobs", r.knobs},
          {"synthesizer", r.synthesizer},
          {"status", r.status},
          {"median_s", r.median},
          {"p20_s", r.p20},
          {"p80_s", r.p80},
          {"roof_fraction", r.roof_fraction},
          {"bound", r.bound},
          {"bottleneck", r.bottleneck},
          {"diagnosis", r.diagnosis},
          {"reused", r.reused}};
}

// The evaluation that gives the best's reported time: its confirming
// re-measurement when it had one (the median round), else its result.
json best_timing(Store& store, int64_t candidate, bool confirmed) {
  std::optional<int64_t> id;
  if (confirmed) id = store.confirming_evaluation(candidate);
  if (!id) id = store.result_evaluation(candidate);
  const std::optional<EvalResult> e = id ? store.evaluation(*id) : std::nullopt;
  if (!e) return nullptr;
  const std::optional<TimingStats>& t = e->timing;
  const std::optional<Diagnosis>& d = e->diagnosis;
  auto figure = [](bool present, double v) { return present ? json(v) : json(nullptr); };
  return {{"median_s", figure(t.has_value(), t ? t->median_s : 0)},
          {"p20_s", figure(t.has_value(), t ? t->p20_s : 0)},
          {"p80_s", figure(t.has_value(), t ? t->p80_s : 0)},
          {"n_samples", figure(t.has_value(), t ? static_cast<double>(t->samples_s.size()) : 0)},
          {"roof_fraction", figure(d.has_value(), d ? d->roof_fraction : 0)},
          {"bound", d ? d->bound : std::string()},
          {"diagnosis", d ? d->why : std::string()},
          {"achieved_gflops", figure(d.has_value(), d ? d->achieved_gflops : 0)},
          {"achieved_gbps", figure(d.has_value(), d ? d->achieved_gbps : 0)}};
}

// The best kernel as one file, knobs and the task's shapes baked in (what
// `kevo run -o` writes).
std::string best_source(Store& store, int64_t candidate, const KnobValues& knobs,
                        const std::string& note, const std::vector<std::string>& shapes) {
  const std::optional<CandidateRecord> c = store.candidate(candidate);
  const std::optional<SourceRecord> s = c ? store.source(c->source_hash) : std::nullopt;
  if (!s) return "";
  Family f;
  f.name = c->family;
  f.text = s->text;
  f.origin = s->origin;
  return standalone_source(f, knobs, note, shapes);
}

json best_section(Store& store, const json& summary, const std::vector<Result>& results,
                  int64_t run, const Task& task) {
  const std::string& task_name = task.name;
  json best;
  if (summary.is_object() && summary.contains("best") && summary["best"].is_object()) {
    const json& b = summary["best"];
    best = {{"candidate", b["candidate"]},
            {"family", b["family"]},
            {"knobs", b["knobs"]},
            {"synthesizer", b["synthesizer"]},
            {"confirmed", b.value("confirmed", false)},
            {"search_median_s", b["search_median_s"]},
            {"rounds_s", b.value("confirm_rounds_s", json::array())}};
  } else {  // a run killed before its first summary: the fastest result
    const Result* fastest = nullptr;
    for (const auto& r : results)
      if (r.ok() && (!fastest || r.median.get<double>() < fastest->median.get<double>()))
        fastest = &r;
    if (!fastest) return nullptr;
    best = {{"candidate", fastest->candidate},
            {"family", fastest->family},
            {"knobs", fastest->knobs},
            {"synthesizer", fastest->synthesizer},
            {"confirmed", false},
            {"search_median_s", fastest->median},
            {"rounds_s", json::array()}};
  }
  // The timing's fields, null where the store has no evaluation to give them.
  for (const char* k : {"median_s", "p20_s", "p80_s", "n_samples", "roof_fraction",
                        "achieved_gflops", "achieved_gbps"})
    best[k] = nullptr;
  best["bound"] = "";
  best["diagnosis"] = "";
  const int64_t candidate = best["candidate"].get<int64_t>();
  if (json timing = best_timing(store, candidate, best["confirmed"].get<bool>());
      timing.is_object())
    best.update(timing);
  const KnobValues knobs = best["knobs"].get<KnobValues>();
  best["knobs_text"] = knobs_to_string(knobs);
  best["source"] = best_source(
      store, candidate, knobs,
      fmt::format("kevo run {} best for {}: median {}", run, task_name,
                  best["median_s"].is_number() ? format_seconds(best["median_s"].get<double>())
                                               : std::string("unknown")),
      shape_defines(task));
  return best;
}

json baseline(const json& summary, const char* key, const char* speedup_key) {
  if (!summary.is_object() || !summary.contains(key) || !summary[key].is_object()) return nullptr;
  const json& b = summary[key];
  return {{"candidate", b["candidate"]},
          {"family", b["family"]},
          {"knobs_text", knobs_to_string(b["knobs"].get<KnobValues>())},
          {"median_s", b["median_s"]},
          {"rounds_s", b.value("confirm_rounds_s", json::array())},
          {"speedup", summary.contains(speedup_key) ? summary[speedup_key] : json(nullptr)}};
}

// The measured roofs as lines, one pair per thread count measured: the
// bandwidth at the task's working set and the peak rate that applies to the
// task's dtype (Roof::peak_for_dtype), each as measured
// (the diagnosis judges against the best of them; none is scaled from
// another thread count).
json roof_lines(Store& store, const std::vector<Result>& results, double bytes,
               std::string_view dtype) {
  std::optional<int64_t> id;
  for (const auto& r : results)
    if (r.roof_id) id = r.roof_id;
  if (!id) return json::array();
  const std::vector<Roof> roofs = store.roofs_like(*id);
  if (roofs.empty()) return json::array();
  const Roof roof = Roof::best_of(roofs);
  json lines = json::array();
  auto add = [&](json line) {
    for (const auto& l : lines)
      if (l["kind"] == line["kind"] && l["value"] == line["value"]) return;
    lines.push_back(std::move(line));
  };
  // A line per thread count measured, each as measured (never scaled).
  std::set<int> counts;
  for (const auto& p : roof.bandwidth) counts.insert(p.threads);
  for (const auto& p : roof.peak) counts.insert(p.threads);
  for (int threads : counts) {
    if (const BandwidthPoint* bw = roof.bandwidth_for(bytes, threads))
      add({{"kind", "memory"},
           {"value", bw->gbps},
           {"unit", "GB/s"},
           {"threads", bw->threads},
           {"label", fmt::format("{} {:.1f} GB/s ({} thread{})", bw->kind, bw->gbps, bw->threads,
                                 bw->threads > 1 ? "s" : "")}});
    if (auto peak = roof.peak_for_dtype(dtype, threads))
      add({{"kind", "compute"},
           {"value", peak->gflops},
           {"unit", "GFLOP/s"},
           {"threads", peak->threads},
           {"label", fmt::format("{} {:.1f} GFLOP/s ({} thread{})", peak->kind, peak->gflops,
                                 peak->threads, peak->threads > 1 ? "s" : "")}});
  }
  return lines;
}

json lineage_section(Store& store, int64_t run, int64_t best) {
  const CandidateTree tree = CandidateTree::load(store, run);
  json nodes = json::array();
  for (int64_t c : tree.lineage(best)) {
    const TreeNode* n = tree.find(c);
    nodes.push_back(
        {{"candidate", c},
         {"family", n->family},
         {"knobs_text", n->knobs},
         {"synthesizer", n->synthesizer},
         {"status", n->evaluated ? std::string(status_name(n->status)) : "unevaluated"},
         {"median_s", n->evaluated && n->status == Status::ok ? json(n->seconds) : json(nullptr)},
         {"parents", tree.parents(c)}});
  }
  return nodes;
}

json failures_section(const std::vector<Result>& results) {
  constexpr size_t kExamples = 3;
  constexpr size_t kDetail = 300;
  std::map<std::string, json> by_status;
  for (const auto& r : results) {
    if (r.ok()) continue;
    json& f = by_status[r.status];
    if (f.is_null()) f = {{"status", r.status}, {"count", 0}, {"examples", json::array()}};
    f["count"] = f["count"].get<int64_t>() + 1;
    if (f["examples"].size() < kExamples) {
      std::string detail =
          r.detail.size() > kDetail ? r.detail.substr(0, kDetail) + "..." : r.detail;
      f["examples"].push_back({{"candidate", r.candidate},
                               {"family", r.family},
                               {"knobs_text", r.knobs_text},
                               {"detail", detail}});
    }
  }
  json out = json::array();
  for (auto& [status, f] : by_status) out.push_back(std::move(f));
  std::stable_sort(out.begin(), out.end(),
                   [](const json& a, const json& b) { return a["count"] > b["count"]; });
  return out;
}

json time_section(Store& store, int64_t run, const json& summary) {
  const Store::RunCost cost = store.run_cost(run);
  json t = {{"evaluations", cost.evaluations}, {"compile_s", cost.compile_s}, {"run_s", cost.run_s}};
  for (const char* k : {"searcher_s", "store_s", "wall_s", "elapsed_s"})
    t[k] = summary.is_object() && summary.contains(k) ? summary[k] : json(nullptr);
  return t;
}

}  // namespace

json machine_over_run(Store& store, int64_t run) {
  int64_t states = 0, with_mask = 0, throttled = 0;
  uint64_t mask = 0;
  std::vector<double> mhz;
  for (const auto& [candidate, evaluations] : store.evaluations_of_run(run)) {
    (void)candidate;
    for (const int64_t e : evaluations) {
      const std::map<std::string, double> m = store.machine_state(e);
      const auto clock = m.find("machine.sm_mhz");
      const auto reasons = m.find("machine.throttle");
      if (clock == m.end() && reasons == m.end()) continue;
      ++states;
      if (clock != m.end()) mhz.push_back(clock->second);
      if (reasons != m.end()) {
        ++with_mask;
        const auto bits = static_cast<uint64_t>(reasons->second);
        if (bits != 0) ++throttled;
        mask |= bits;
      }
    }
  }
  if (states == 0) return nullptr;
  json j = {{"evaluations", states},
            {"with_throttle", with_mask},
            {"throttled", throttled},
            {"throttle_mask", mask},
            {"sm_mhz", nullptr}};
  if (!mhz.empty()) {
    std::sort(mhz.begin(), mhz.end());
    j["sm_mhz"] = {{"min", mhz.front()}, {"median", mhz[(mhz.size() - 1) / 2]}, {"max", mhz.back()}};
  }
  return j;
}

json run_report(Store& store, int64_t run, int top_k) {
  const std::optional<RunRecord> stored = store.run(run);
  if (!stored) throw UserError(fmt::format("no run {} in {}", run, store.path().string()));
  const RunRecord& row = *stored;
  const std::string kind = row.kind;
  if (kind != "search" && kind != "replay")
    throw UserError(
        fmt::format("run {} is a '{}' run: reports are of search runs (kevo run, "
                    "kevo batch)",
                    run, kind));
  const json config = row.config();
  const json summary = row.summary();
  Task task;
  try {
    // The task as stored, self-contained: it rebuilds after its files moved.
    task = parse_stored_task(json::parse(row.task_json));
  } catch (const std::exception& e) {
    try {  // a run stored before task_json was self-contained: its config and origin
      task = parse_task(config.at("config"), config.value("origin", std::string()));
    } catch (const std::exception&) {
      throw UserError(
          fmt::format("run {}: its stored task config no longer reads: {}", run, e.what()));
    }
  }
  const std::string task_hash = row.task_hash;
  const double started_at = epoch_seconds(row.started_at);
  const std::vector<Result> results = results_of(store, run);

  json r;
  r["kind"] = "run";
  r["kevo_version"] = KEVO_VERSION;
  r["generated_at"] = now_iso8601();
  // Several timed shapes: the work as the objective weighs it, the weighted
  // geometric means of the shapes' FLOPs and bytes (against the weighted
  // geometric mean of their times, the run's figures).
  double flops = task.flops(), bytes = task.bytes();
  if (task.multi_shape()) {
    std::vector<double> f, b;
    for (const auto& s : task.timed) {
      f.push_back(std::max(task.op->flops(s.shapes), 1e-300));
      b.push_back(std::max(task.op->bytes(s.shapes, task.dtype), 1e-300));
    }
    flops = weighted_geomean(f, task.weights);
    bytes = weighted_geomean(b, task.weights);
  }
  int64_t reused = 0;
  for (const auto& x : results) reused += x.reused;
  r["run"] = {{"id", run},
              {"kind", kind},
              {"task", row.task_name},
              {"operator", row.op},
              {"target", row.target},
              {"task_hash", task_hash},
              {"dtype", task.resolved["dtype"]},
              {"shapes", task.resolved["shapes"]},
              {"strategy", config.contains("search") ? config["search"].value("strategy", "") : ""},
              {"status", row.status},
              {"started_at", row.started_at},
              {"finished_at", row.finished_at},
              {"hostname", row.hostname},
              {"stop_reason", summary.is_object() ? summary.value("stop_reason", "") : ""},
              {"candidates", results.size()},
              {"reused", reused},
              {"flops", flops},
              {"bytes", bytes}};
  const json best = best_section(store, summary, results, run, task);
  r["best"] = best;
  r["seed"] = baseline(summary, "seed", "speedup_over_seed");
  r["naive"] = baseline(summary, "naive", "speedup_over_naive");
  // The next best re-measured and whether the best stayed apart from it in
  // every confirmation round (see Engine::summary).
  r["runner_up"] = summary.is_object() && summary.contains("runner_up") ? summary["runner_up"] : json(nullptr);
  // How the family defaults' figures moved between the search and the
  // confirmation: the machine's drift over the run (see Engine::summary).
  r["drift"] = summary.is_object() && summary.contains("drift") ? summary["drift"] : json::array();
  // Whether the GPU's clocks were held back while the run timed (a power or
  // thermal cap): then a compute-bound kernel's figures are the capped ones.
  r["machine"] = machine_over_run(store, run);
  // A multi-shape task: per timed shape, the chosen kernel and the fastest
  // of the run at that shape alone (see Engine::shapes_summary).
  r["shapes"] = summary.is_object() && summary.contains("shapes") ? summary["shapes"] : json::array();
  // Why a baseline has no figure: its default points' failures, by status.
  for (const char* k : {"seed_failures", "naive_failures"})
    r[k] = summary.is_object() && summary.contains(k) ? summary[k] : json(nullptr);

  // Convergence: this run first, then the other searches of the same task.
  json series = json::array();
  auto label = [](const std::string& strategy, int64_t id) {
    return fmt::format("{} (run {})", strategy, id);
  };
  series.push_back({{"run", run},
                    {"label", label(r["run"]["strategy"], run)},
                    {"points", convergence_points(results, started_at, 1, &row,
                                                  best.is_object() && best["median_s"].is_number()
                                                      ? std::optional<double>(best["median_s"].get<double>())
                                                      : std::nullopt)}});
  for (const RunRecord& o : store.search_runs_of_task(task_hash, run, 7)) {
    const int64_t id = o.id;
    const json c = o.config();
    const std::string strategy =
        c.is_object() && c.contains("search") ? c["search"].value("strategy", "") : "";
    series.push_back(
        {{"run", id},
         {"label", label(strategy, id)},
         {"points",
          convergence_points(results_of(store, id), epoch_seconds(o.started_at), 1, &o)}});
  }
  r["convergence"] = series;

  json points = json::array();
  for (const auto& x : results) {
    if (!x.ok()) continue;
    const double median = x.median.get<double>();
    points.push_back({{"candidate", x.candidate},
                      {"family", x.family},
                      {"knobs_text", x.knobs_text},
                      {"median_s", median},
                      {"gflops", flops / median / 1e9},
                      {"gbps", bytes / median / 1e9}});
  }
  r["roofline"] = {{"arithmetic_intensity", bytes > 0 ? flops / bytes : 0.0},
                   {"points", points},
                   {"roofs", roof_lines(store, results, bytes, dtype_name(task.dtype))}};

  r["lineage"] = best.is_null() ? json::array()
                                : lineage_section(store, run, best["candidate"].get<int64_t>());
  r["failures"] = failures_section(results);
  // Top candidates, ranked the way the run chose its best: the ones the
  // confirmation re-measured first, by their re-measured median; then the
  // rest by the search's figure; last the ones that failed when measured
  // again. Ranked by the search's figure alone, a candidate that was lucky
  // once could stand above the best the run confirmed and reported.
  struct Ranked {
    const Result* r;
    json confirmed;  // the confirming evaluation's median, or null
    std::string confirm_status;  // its status: "" when not re-measured
    int group;
  };
  std::vector<Ranked> ok;
  for (const auto& x : results) {
    if (!x.ok()) continue;
    Ranked k{&x, nullptr, "", 1};
    if (std::optional<int64_t> e = store.confirming_evaluation(x.candidate)) {
      if (const std::optional<EvalResult> again = store.evaluation(*e)) {
        k.confirm_status = std::string(status_name(again->status));
        k.confirmed = again->timing ? json(again->timing->median_s) : json(nullptr);
        const bool timed = k.confirm_status == "ok" && k.confirmed.is_number();
        k.group = timed ? 0 : 2;
        if (!timed) k.confirmed = nullptr;
      }
    }
    ok.push_back(std::move(k));
  }
  std::stable_sort(ok.begin(), ok.end(), [](const Ranked& a, const Ranked& b) {
    if (a.group != b.group) return a.group < b.group;
    const json& ta = a.group == 0 ? a.confirmed : a.r->median;
    const json& tb = b.group == 0 ? b.confirmed : b.r->median;
    return ta.get<double>() < tb.get<double>();
  });
  json top = json::array();
  for (size_t i = 0; i < ok.size() && i < static_cast<size_t>(top_k); ++i) {
    json row = result_row(*ok[i].r);
    row["rank"] = i + 1;
    row["knobs_text"] = ok[i].r->knobs_text;
    row["confirmed_median_s"] = ok[i].confirmed;
    row["confirm_status"] = ok[i].confirm_status;
    top.push_back(std::move(row));
  }
  r["top"] = top;
  // The search's figures that a re-measurement did not bear out: more than
  // kHeldFactor from the confirmation's median round either way, or failed
  // when measured again. The search steered by them; the reader should know.
  json unheld = json::array();
  for (const Ranked& k : ok) {
    if (k.confirm_status.empty()) continue;  // not re-measured
    const double search = k.r->median.get<double>();
    const double again = k.confirmed.is_number() ? k.confirmed.get<double>() : 0;
    if (k.confirmed.is_number() && again <= kHeldFactor * search && search <= kHeldFactor * again)
      continue;
    unheld.push_back({{"candidate", k.r->candidate},
                      {"family", k.r->family},
                      {"knobs_text", k.r->knobs_text},
                      {"search_median_s", search},
                      {"confirmed_median_s", k.confirmed},
                      {"confirm_status", k.confirm_status},
                      {"ratio", k.confirmed.is_number() ? json(again / search) : json(nullptr)}});
  }
  r["did_not_hold"] = unheld;
  r["held_factor"] = kHeldFactor;
  r["ok_candidates"] = ok.size();
  r["time"] = time_section(store, run, summary);
  return r;
}

json batch_report(Store& store, int64_t id) {
  const Batch batch = load_batch(store, id);
  json r;
  r["kind"] = "batch";
  r["kevo_version"] = KEVO_VERSION;
  r["generated_at"] = now_iso8601();
  r["batch"] = {{"id", batch.id},
                {"name", batch.name},
                {"suite", batch.suite_path},
                {"status", batch.status},
                {"started_at", batch.started_at},
                {"finished_at", batch.finished_at}};
  json tasks = json::array();
  json series = json::array();
  for (const BatchTask& t : batch.tasks) {
    json row = {{"seq", t.seq},
                {"task", t.name},
                {"origin", t.origin},
                {"status", t.status},
                {"detail", t.detail},
                {"run", nullptr},
                {"best_s", nullptr},
                {"family", nullptr},
                {"knobs_text", nullptr},
                {"speedup_over_seed", nullptr},
                {"speedup_over_naive", nullptr},
                {"roof_fraction", nullptr},
                {"bound", nullptr},
                {"evaluations", nullptr},
                {"failures", nullptr}};
    const std::optional<int64_t> run = t.run ? t.run : store.batch_task_run(batch.id, t.seq);
    if (run) {
      row["run"] = *run;
      const std::vector<Result> results = results_of(store, *run);
      // Why a task found no kernel (and what else a task's search ran into):
      // its candidates that failed, by status.
      json failures = json::object();
      for (const auto& x : results)
        if (!x.ok()) failures[x.status] = failures.value(x.status, 0) + 1;
      row["failures"] = failures;
      const std::optional<RunRecord> stored = store.run(*run);
      const json s = stored ? stored->summary() : json();
      if (s.is_object()) {
        row["evaluations"] = s.value("evaluations", json());
        for (const char* k : {"speedup_over_seed", "speedup_over_naive"})
          if (s.contains(k)) row[k] = s[k];
        if (s.contains("best") && s["best"].is_object()) {
          const json& b = s["best"];
          row["best_s"] = b["median_s"];
          row["family"] = b["family"];
          row["knobs_text"] = knobs_to_string(b["knobs"].get<KnobValues>());
          row["roof_fraction"] = b["roof_fraction"];
          row["bound"] = b["bound"];
          // Best so far relative to the task's final best, so that tasks of
          // any speed share one plot.
          json points = convergence_points(results, epoch_seconds(stored->started_at),
                                           b["median_s"].get<double>(), &*stored);
          series.push_back({{"run", *run}, {"label", t.name}, {"points", points}});
        }
      }
    }
    tasks.push_back(std::move(row));
  }
  r["tasks"] = tasks;
  r["convergence"] = series;
  return r;
}

}  // namespace kevo
