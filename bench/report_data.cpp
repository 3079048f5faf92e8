// Gathers a report's data from the store. Start at run_report(): one query
// for every candidate's result (its first own evaluation, or the earlier
// measurement it reused), then each section from those results, the run's
// summary, its sources, its roof and its candidate tree.
#include <ctime>

#include <algorithm>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "bench/report.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/roof.h"
#include "core/space.h"
#include "core/store.h"
#include "core/task.h"
#include "eval/roofline.h"
#include "search/batch.h"
#include "search/engine.h"
#include "search/tree.h"
#include "targets/target.h"

namespace kevo {

namespace {

using nlohmann::json;

json number(const SqlValue& v) {
  if (auto* d = std::get_if<double>(&v)) return *d;
  if (auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  return nullptr;
}

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
  QueryResult q = store.query(
      "SELECT c.id, c.family, c.knobs_json, c.synthesizer, c.reuses_evaluation IS NOT NULL, "
      "c.created_at, e.status, e.detail, e.median_s, e.p20_s, e.p80_s, e.roof_fraction, e.bound, "
      "e.bottleneck, e.diagnosis, e.achieved_gflops, e.achieved_gbps, e.roof_id, e.created_at "
      "FROM candidates c JOIN evaluations e ON e.id = COALESCE(c.reuses_evaluation, "
      "(SELECT MIN(x.id) FROM evaluations x WHERE x.candidate_id = c.id)) "
      "WHERE c.run_id = ?",
      {SqlValue(run)});
  std::vector<Result> out;
  for (const auto& row : q.rows) {
    Result r;
    r.candidate = std::get<int64_t>(row[0]);
    r.family = sql_text(row[1]);
    const KnobValues knobs = knobs_from_json(sql_text(row[2]));
    r.knobs = knobs;
    r.knobs_text = knobs_to_string(knobs);
    r.synthesizer = sql_text(row[3]);
    r.reused = std::get<int64_t>(row[4]) != 0;
    r.status = sql_text(row[6]);
    r.detail = sql_text(row[7]);
    r.median = number(row[8]);
    r.p20 = number(row[9]);
    r.p80 = number(row[10]);
    r.roof_fraction = number(row[11]);
    r.bound = sql_text(row[12]);
    r.bottleneck = sql_text(row[13]);
    r.diagnosis = sql_text(row[14]);
    r.gflops = number(row[15]);
    r.gbps = number(row[16]);
    if (auto* id = std::get_if<int64_t>(&row[17])) r.roof_id = *id;
    // An answer from the store counts when the candidate was made; a
    // measurement when it was stored.
    r.at = epoch_seconds(sql_text(r.reused ? row[5] : row[18]));
    out.push_back(std::move(r));
  }
  std::stable_sort(out.begin(), out.end(), [](const Result& a, const Result& b) {
    return a.at != b.at ? a.at < b.at : a.candidate < b.candidate;
  });
  return out;
}

// Best median so far after each result: [{n, t_s, best_s}], from the first
// correct one on. `scale` divides the times (1: seconds).
json convergence_points(const std::vector<Result>& results, double started_at, double scale) {
  json points = json::array();
  double best = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    if (r.ok() && (best == 0 || r.median.get<double>() < best)) best = r.median.get<double>();
    if (best > 0)
      points.push_back(
          {{"n", i + 1}, {"t_s", std::max(0.0, r.at - started_at)}, {"best_s", best / scale}});
  }
  return points;
}

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
  std::vector<SqlValue> args(2);
  if (confirmed)
    if (std::optional<int64_t> conf = store.confirming_evaluation(candidate)) args[0] = *conf;
  args[1] = candidate;
  QueryResult q = store.query(
      "SELECT e.median_s, e.p20_s, e.p80_s, e.n_samples, e.roof_fraction, e.bound, "
      "e.diagnosis, e.achieved_gflops, e.achieved_gbps FROM candidates c "
      "JOIN evaluations e ON e.id = COALESCE(?, c.reuses_evaluation, "
      "(SELECT MIN(x.id) FROM evaluations x WHERE x.candidate_id = c.id)) "
      "WHERE c.id = ?",
      args);
  if (q.rows.empty()) return nullptr;
  const auto& row = q.rows[0];
  return {{"median_s", number(row[0])},      {"p20_s", number(row[1])},
          {"p80_s", number(row[2])},         {"n_samples", number(row[3])},
          {"roof_fraction", number(row[4])}, {"bound", sql_text(row[5])},
          {"diagnosis", sql_text(row[6])},       {"achieved_gflops", number(row[7])},
          {"achieved_gbps", number(row[8])}};
}

// The best kernel as one file, knobs and the task's shapes baked in (what
// `kevo run -o` writes).
std::string best_source(Store& store, int64_t candidate, const KnobValues& knobs,
                        const std::string& note, const std::vector<std::string>& shapes) {
  QueryResult q = store.query(
      "SELECT c.family, s.text, s.origin FROM candidates c JOIN sources s "
      "ON s.hash = c.source_hash WHERE c.id = ?",
      {SqlValue(candidate)});
  if (q.rows.empty()) return "";
  Family f;
  f.name = sql_text(q.rows[0][0]);
  f.text = sql_text(q.rows[0][1]);
  f.origin = sql_text(q.rows[0][2]);
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
            {"search_median_s", b["search_median_s"]}};
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
            {"search_median_s", fastest->median}};
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
          {"speedup", summary.contains(speedup_key) ? summary[speedup_key] : json(nullptr)}};
}

// The measured roofs as lines: the bandwidth at the task's working set and
// the peak rate the diagnosis judged against, and their one-thread figures
// when those differ (a task pinned to one thread is judged against those).
json roof_lines(Store& store, const std::vector<Result>& results, double bytes) {
  std::optional<int64_t> id;
  for (const auto& r : results)
    if (r.roof_id) id = r.roof_id;
  if (!id) return json::array();
  QueryResult q = store.query("SELECT target, host_key FROM roofs WHERE id = ?", {SqlValue(*id)});
  if (q.rows.empty()) return json::array();
  const std::vector<Roof> roofs = store.roofs(sql_text(q.rows[0][0]), sql_text(q.rows[0][1]));
  if (roofs.empty()) return json::array();
  const Roof roof = Roof::best_of(roofs);
  json lines = json::array();
  auto add = [&](json line) {
    for (const auto& l : lines)
      if (l["kind"] == line["kind"] && l["value"] == line["value"]) return;
    lines.push_back(std::move(line));
  };
  for (int threads : {0, 1}) {
    if (const BandwidthPoint* bw = roof.bandwidth_for(bytes, threads))
      add({{"kind", "memory"},
           {"value", bw->gbps},
           {"unit", "GB/s"},
           {"threads", bw->threads},
           {"label", fmt::format("{} {:.1f} GB/s ({} thread{})", bw->kind, bw->gbps, bw->threads,
                                 bw->threads > 1 ? "s" : "")}});
    if (auto peak = roof.peak_for(threads))
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
  QueryResult q = store.query(
      "SELECT COUNT(*), COALESCE(SUM(e.compile_s), 0), COALESCE(SUM(e.run_s), 0) "
      "FROM evaluations e JOIN candidates c ON c.id = e.candidate_id WHERE c.run_id = ?",
      {SqlValue(run)});
  json t = {{"evaluations", std::get<int64_t>(q.rows[0][0])},
            {"compile_s", number(q.rows[0][1])},
            {"run_s", number(q.rows[0][2])}};
  for (const char* k : {"searcher_s", "store_s", "wall_s", "elapsed_s"})
    t[k] = summary.is_object() && summary.contains(k) ? summary[k] : json(nullptr);
  return t;
}

}  // namespace

json run_report(Store& store, int64_t run, int top_k) {
  QueryResult q = store.query(
      "SELECT kind, task_name, operator, target, task_hash, config_json, status, started_at, "
      "finished_at, hostname, summary_json, task_json FROM runs WHERE id = ?",
      {SqlValue(run)});
  if (q.rows.empty()) throw UserError(fmt::format("no run {} in {}", run, store.path().string()));
  const auto& row = q.rows[0];
  const std::string kind = sql_text(row[0]);
  if (kind != "search" && kind != "replay")
    throw UserError(
        fmt::format("run {} is a '{}' run: reports are of search runs (kevo run, "
                    "kevo batch)",
                    run, kind));
  const json config = json::parse(sql_text(row[5]), nullptr, false);
  const json summary = json::parse(sql_text(row[10]), nullptr, false);
  Task task;
  try {
    // The task as stored, self-contained: it rebuilds after its files moved.
    task = parse_stored_task(json::parse(sql_text(row[11])));
  } catch (const std::exception& e) {
    try {  // a run stored before task_json was self-contained: its config and origin
      task = parse_task(config.at("config"), config.value("origin", std::string()));
    } catch (const std::exception&) {
      throw UserError(
          fmt::format("run {}: its stored task config no longer reads: {}", run, e.what()));
    }
  }
  const std::string task_hash = sql_text(row[4]);
  const double started_at = epoch_seconds(sql_text(row[7]));
  const std::vector<Result> results = results_of(store, run);

  json r;
  r["kind"] = "run";
  r["kevo_version"] = KEVO_VERSION;
  r["generated_at"] = now_iso8601();
  const double flops = task.flops(), bytes = task.bytes();
  int64_t reused = 0;
  for (const auto& x : results) reused += x.reused;
  r["run"] = {{"id", run},
              {"kind", kind},
              {"task", sql_text(row[1])},
              {"operator", sql_text(row[2])},
              {"target", sql_text(row[3])},
              {"task_hash", task_hash},
              {"dtype", task.resolved["dtype"]},
              {"shapes", task.resolved["shapes"]},
              {"strategy", config.contains("search") ? config["search"].value("strategy", "") : ""},
              {"status", sql_text(row[6])},
              {"started_at", sql_text(row[7])},
              {"finished_at", sql_text(row[8])},
              {"hostname", sql_text(row[9])},
              {"stop_reason", summary.is_object() ? summary.value("stop_reason", "") : ""},
              {"candidates", results.size()},
              {"reused", reused},
              {"flops", flops},
              {"bytes", bytes}};
  const json best = best_section(store, summary, results, run, task);
  r["best"] = best;
  r["seed"] = baseline(summary, "seed", "speedup_over_seed");
  r["naive"] = baseline(summary, "naive", "speedup_over_naive");

  // Convergence: this run first, then the other searches of the same task.
  json series = json::array();
  auto label = [](const std::string& strategy, int64_t id) {
    return fmt::format("{} (run {})", strategy, id);
  };
  series.push_back({{"run", run},
                    {"label", label(r["run"]["strategy"], run)},
                    {"points", convergence_points(results, started_at, 1)}});
  QueryResult others = store.query(
      "SELECT id, config_json, started_at FROM runs WHERE task_hash = ? AND kind = 'search' "
      "AND id != ? ORDER BY id DESC LIMIT 7",
      {SqlValue(task_hash), SqlValue(run)});
  for (const auto& o : others.rows) {
    const int64_t id = std::get<int64_t>(o[0]);
    const json c = json::parse(sql_text(o[1]), nullptr, false);
    const std::string strategy =
        c.is_object() && c.contains("search") ? c["search"].value("strategy", "") : "";
    series.push_back(
        {{"run", id},
         {"label", label(strategy, id)},
         {"points", convergence_points(results_of(store, id), epoch_seconds(sql_text(o[2])), 1)}});
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
                   {"roofs", roof_lines(store, results, bytes)}};

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
      QueryResult q = store.query("SELECT status, median_s FROM evaluations WHERE id = ?",
                                  {SqlValue(*e)});
      if (!q.rows.empty()) {
        k.confirm_status = sql_text(q.rows[0][0]);
        k.confirmed = number(q.rows[0][1]);
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
                {"evaluations", nullptr}};
    const std::optional<int64_t> run = t.run ? t.run : batch_task_run(store, batch.id, t.seq);
    if (run) {
      row["run"] = *run;
      QueryResult q =
          store.query("SELECT summary_json, started_at FROM runs WHERE id = ?", {SqlValue(*run)});
      const json s = q.rows.empty() ? json() : json::parse(sql_text(q.rows[0][0]), nullptr, false);
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
          json points =
              convergence_points(results_of(store, *run), epoch_seconds(sql_text(q.rows[0][1])),
                                 b["median_s"].get<double>());
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
