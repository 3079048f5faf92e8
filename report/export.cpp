// Start at export_runs(): one query per table for a run, then each
// candidate's evaluations read back through Store::evaluation (samples too).
#include "report/export.h"

#include <cctype>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/knobs.h"
#include "core/task.h"
#include "search/tree.h"
#include "targets/traits.h"

namespace kevo {

namespace {

nlohmann::json json_or_null(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  return j.is_discarded() ? nlohmann::json(nullptr) : j;
}

// JSON has no infinity or NaN: a figure that is not finite is null.
nlohmann::json number(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

nlohmann::json timing_json(const TimingStats& t) {
  nlohmann::json samples = nlohmann::json::array();
  for (double s : t.samples_s) samples.push_back(number(s));
  return {{"median_s", number(t.median_s)},
          {"p20_s", number(t.p20_s)},
          {"p80_s", number(t.p80_s)},
          {"mean_s", number(t.mean_s)},
          {"min_s", number(t.min_s)},
          {"max_s", number(t.max_s)},
          {"calls_per_sample", t.calls_per_sample},
          {"samples_s", samples}};
}

// One evaluation as the export shows it.
nlohmann::json evaluation_json(Store& store, int64_t id) {
  std::optional<EvalResult> r = store.evaluation(id);
  if (!r) return nullptr;
  nlohmann::json j = {{"evaluation", id},
                      {"status", std::string(status_name(r->status))},
                      {"detail", r->detail},
                      {"measured_at", store.evaluated_at(id)},
                      {"compile_s", number(r->compile_s)},
                      {"run_s", number(r->run_s)},
                      {"timing", r->timing ? timing_json(*r->timing) : nlohmann::json(nullptr)}};
  if (r->diagnosis) {
    const Diagnosis& d = *r->diagnosis;
    j["bound"] = d.bound;
    j["roof_fraction"] = number(d.roof_fraction);
    j["floor_s"] = number(d.floor_s);
    j["achieved_gbps"] = number(d.achieved_gbps);
    j["achieved_gflops"] = number(d.achieved_gflops);
    j["diagnosis"] = d.why;
    j["bottleneck"] = d.bottleneck.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.bottleneck);
  } else {
    for (const char* k : {"bound", "roof_fraction", "floor_s", "achieved_gbps", "achieved_gflops",
                          "diagnosis", "bottleneck"})
      j[k] = nullptr;
  }
  j["roof_id"] = r->roof_id ? nlohmann::json(r->roof_id) : nlohmann::json(nullptr);
  return j;
}

double median_of(const nlohmann::json& e) {
  if (!e.is_object() || e.value("status", "") != "ok" || !e["timing"].is_object() ||
      !e["timing"]["median_s"].is_number())
    return INFINITY;
  return e["timing"]["median_s"].get<double>();
}

nlohmann::json export_run(Store& store, int64_t run) {
  const std::optional<RunRecord> stored = store.run(run);
  if (!stored) throw UserError(fmt::format("no run {} in {}", run, store.path().string()));
  const RunRecord& row = *stored;
  nlohmann::json config = json_or_null(row.task_json);
  nlohmann::json task = {
      {"name", row.task_name},
      {"hash", row.task_hash},
      {"operator", row.op},
      {"target", row.target},
      {"dtype", config.is_object() ? config.value("dtype", nlohmann::json(nullptr))
                                   : nlohmann::json(nullptr)},
      {"shapes", config.is_object() ? config.value("shapes", nlohmann::json(nullptr))
                                    : nlohmann::json(nullptr)},
      {"bytes", nullptr},
      {"flops", nullptr},
      {"config", config}};
  // The operator's byte and FLOP counts; a config this kevo can no longer
  // read (an operator since removed) still exports, without them.
  try {
    if (config.is_object()) {
      Task t = parse_stored_task(config);
      task["bytes"] = t.bytes();
      task["flops"] = t.flops();
    }
  } catch (const UserError&) {
  }

  nlohmann::json out = {{"run", run},
                        {"kind", row.kind},
                        {"status", row.status},
                        {"started_at", row.started_at},
                        {"finished_at", nullptr},
                        {"task", task},
                        {"summary", row.summary()}};
  if (!row.finished_at.empty()) out["finished_at"] = row.finished_at;

  // Every evaluation of the run's candidates, oldest first: a candidate's
  // first is its result, later ones re-measured it.
  std::map<int64_t, std::vector<int64_t>> evals = store.evaluations_of_run(run);

  CandidateTree tree = CandidateTree::load(store, run);
  nlohmann::json candidates = nlohmann::json::array();
  int64_t roof_id = 0;
  for (const CandidateRecord& cr : store.candidates(run)) {
    const int64_t id = cr.id;
    nlohmann::json cand = {{"id", id},
                           {"family", cr.family},
                           {"knobs", knobs_from_json(cr.knobs_json)},
                           {"source_hash", cr.source_hash},
                           {"synthesizer", cr.synthesizer},
                           {"created_at", cr.created_at},
                           {"parents", tree.parents(id)},
                           {"lineage", tree.lineage(id)}};
    const std::optional<int64_t>& reused = cr.reuses_evaluation;
    const auto& own = evals[id];
    nlohmann::json result = nullptr, confirmation = nullptr;
    // A candidate that reuses an earlier run's measurement has it as its
    // result; its own evaluations, if any, are all confirmation rounds.
    if (cr.result_evaluation) result = evaluation_json(store, *cr.result_evaluation);
    if (!own.empty())
      if (auto conf = store.confirming_evaluation(id)) confirmation = evaluation_json(store, *conf);
    cand["reused_evaluation"] = reused ? nlohmann::json(*reused) : nlohmann::json(nullptr);
    if (result.is_object()) {
      for (auto it = result.begin(); it != result.end(); ++it) cand[it.key()] = it.value();
      if (result["roof_id"].is_number())
        roof_id = std::max(roof_id, result["roof_id"].get<int64_t>());
    } else {
      cand["status"] = "pending";  // stored, not measured yet (a killed run)
      cand["timing"] = nullptr;
    }
    cand["confirmation"] = confirmation;
    // Each re-measurement at the end of the search, in its own runner: the
    // independent rounds a regression gate judges a change against.
    nlohmann::json rounds = nlohmann::json::array();
    for (size_t k = reused ? 0 : 1; k < own.size(); ++k)
      if (std::optional<EvalResult> e = store.evaluation(own[k]))
        rounds.push_back({{"evaluation", own[k]},
                          {"status", std::string(status_name(e->status))},
                          {"median_s", e->timing ? number(e->timing->median_s)
                                                 : nlohmann::json(nullptr)}});
    cand["rounds"] = rounds;
    candidates.push_back(std::move(cand));
  }

  // The best: as the search reported it (after its confirmation), else the
  // fastest correct candidate.
  nlohmann::json best = nullptr;
  if (out["summary"].is_object() && out["summary"]["best"].is_object())
    best = out["summary"]["best"].value("candidate", nlohmann::json(nullptr));
  if (best.is_null()) {
    double fastest = INFINITY;
    for (const auto& cand : candidates)
      if (double m = median_of(cand); m < fastest) fastest = m, best = cand["id"];
  }
  out["best"] = best;
  // The best kernel's source, so that kevo compare --retime can build it again
  // and time it beside another on the machine where the gate runs.
  out["best_source"] = nullptr;
  for (const auto& cand : candidates)
    if (!best.is_null() && cand["id"] == best)
      if (std::optional<SourceRecord> src = store.source(cand["source_hash"].get<std::string>()))
        out["best_source"] = {{"hash", src->hash},
                              {"language", src->language},
                              {"origin", src->origin},
                              {"text", src->text}};

  std::optional<Roof> roof = roof_id ? roof_as_judged(store, roof_id) : std::nullopt;
  out["roof"] = roof ? roof->to_json() : nlohmann::json(nullptr);
  out["host"] = {{"hostname", row.hostname},
                 {"host_key", roof ? nlohmann::json(roof->host_key) : nlohmann::json(nullptr)},
                 {"cpu_model", roof ? nlohmann::json(roof->cpu_model) : nlohmann::json(nullptr)},
                 {"ncpu", roof ? nlohmann::json(roof->ncpu) : nlohmann::json(nullptr)}};
  out["candidates"] = std::move(candidates);
  return out;
}

// T4's reasons a configuration is invalid, from kevo's statuses. A `suspect`
// candidate passed its checks but ran faster than the roof allows, so its
// time cannot be trusted: a failure at run time. `rejected` (refused by the
// static checks before compiling) is the nearest to breaking a constraint.
const char* t4_invalidity(const std::string& status) {
  if (status == "ok") return "correct";
  if (status == "compile_error") return "compile";
  if (status == "timeout") return "timeout";
  if (status == "crash" || status == "suspect") return "runtime";
  if (status == "rejected") return "constraints";
  return "correctness";  // mismatch
}

// A failure's detail (a compiler's log, a mismatch's coordinates) as one
// short line for a T4 result: whitespace runs made one space, cut at `max`
// bytes on a character boundary, "..." where it was cut.
std::string one_line(const std::string& text, size_t max = 160) {
  std::string out;
  for (char ch : text) {
    if (std::isspace(static_cast<unsigned char>(ch))) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += ch;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (out.size() <= max) return out;
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // mid-character
  return out.substr(0, cut) + "...";
}

// The timing figures as T4 measurements, in milliseconds.
constexpr std::pair<const char*, const char*> kTimeMeasurements[] = {
    {"time", "median_s"},    {"time_p20", "p20_s"}, {"time_p80", "p80_s"},
    {"time_mean", "mean_s"}, {"time_min", "min_s"}, {"time_max", "max_s"}};

}  // namespace

std::optional<Roof> roof_as_judged(Store& store, int64_t roof_id) {
  std::vector<Roof> roofs;
  for (Roof& r : store.roofs_like(roof_id))
    if (r.id <= roof_id) roofs.push_back(std::move(r));
  if (roofs.empty()) return std::nullopt;
  return Roof::best_of(roofs);
}

nlohmann::json export_runs(Store& store, const std::vector<int64_t>& runs) {
  nlohmann::json doc = {{"format", kExportFormat},
                        {"format_version", kExportVersion},
                        {"kevo_version", KEVO_VERSION},
                        {"exported_at", now_iso8601()},
                        {"runs", nlohmann::json::array()}};
  for (int64_t run : runs) doc["runs"].push_back(export_run(store, run));
  return doc;
}

void check_export(const nlohmann::json& doc, const std::string& what) {
  auto bad = [&](const std::string& key, const std::string& why) {
    return UserError(fmt::format("{}: {}: {}", what, key, why));
  };
  if (!doc.is_object() || doc.value("format", "") != kExportFormat)
    throw bad("$.format", fmt::format("not a kevo export (expected \"{}\"; write one with kevo "
                                      "export)",
                                      kExportFormat));
  if (!doc.contains("format_version") || !doc["format_version"].is_number_integer() ||
      doc["format_version"].get<int>() > kExportVersion)
    throw bad("$.format_version",
              fmt::format("this kevo reads version {} or older", kExportVersion));
  if (!doc.contains("runs") || !doc["runs"].is_array()) throw bad("$.runs", "expected an array");
  for (size_t i = 0; i < doc["runs"].size(); ++i) {
    const auto& r = doc["runs"][i];
    const std::string at = fmt::format("$.runs[{}]", i);
    if (!r.is_object()) throw bad(at, "expected an object");
    if (!r.contains("task") || !r["task"].is_object() || !r["task"].contains("name") ||
        !r["task"]["name"].is_string() || !r["task"].contains("hash") ||
        !r["task"]["hash"].is_string())
      throw bad(at + ".task", "expected an object with \"name\" and \"hash\"");
    if (!r.contains("candidates") || !r["candidates"].is_array())
      throw bad(at + ".candidates", "expected an array");
    for (size_t k = 0; k < r["candidates"].size(); ++k) {
      const auto& c = r["candidates"][k];
      const std::string cat = fmt::format("{}.candidates[{}]", at, k);
      if (!c.is_object() || !c.contains("id") || !c["id"].is_number_integer() ||
          !c.contains("status") || !c["status"].is_string())
        throw bad(cat, "expected an object with \"id\" and \"status\"");
      for (const char* part : {"timing", "confirmation"}) {
        if (!c.contains(part) || c[part].is_null()) continue;
        if (!c[part].is_object()) throw bad(fmt::format("{}.{}", cat, part), "expected an object");
        const auto& t =
            std::string(part) == "timing" ? c[part] : c[part].value("timing", nlohmann::json());
        if (t.is_null()) continue;
        if (!t.is_object() || !t.contains("samples_s") || !t["samples_s"].is_array())
          throw bad(fmt::format("{}.{}", cat, part), "expected timing with \"samples_s\"");
        for (const auto& s : t["samples_s"])
          if (!s.is_number() || !(s.get<double>() > 0))
            throw bad(fmt::format("{}.{}.samples_s", cat, part), "expected numbers > 0");
      }
    }
  }
}

nlohmann::json to_t4(const nlohmann::json& run) {
  // The T4 results schema (schema_version 1.0.0, as Kernel Tuner ships it in
  // kernel_tuner/schema/T4/1.0.0/results-schema.json and writes it in
  // kernel_tuner/file_utils.py store_output_file): one result per tested
  // configuration; "configuration", "times", "invalidity" and "correctness"
  // are required; "times" has "compilation_time" and "runtimes".
  // The "metadata" block (timeunit, autotuner, device, ...) follows the later
  // revision of the schema in AutoTuningAssociation/autotuning_methodology
  // (src/autotuning_methodology/schemas/T4.json). Kernel Tuner reports times
  // in milliseconds, and so does this file: metadata.timeunit says so.
  const nlohmann::json& task = run["task"];
  nlohmann::json meta = {{"autotuner", "kevo"},
                         {"autotuner_version", KEVO_VERSION},
                         {"timestamp", run.value("started_at", "")},
                         {"timeunit", "milliseconds"},
                         {"platform", task.value("target", "")}};
  if (const TargetTraits* t = find_target_traits(task.value("target", "")); t && *t->compute_api)
    meta["compute_api"] = t->compute_api;
  const nlohmann::json host = run.value("host", nlohmann::json::object());
  if (host.is_object()) {
    if (host.contains("cpu_model") && host["cpu_model"].is_string() &&
        !host["cpu_model"].get<std::string>().empty())
      meta["device"] = host["cpu_model"];
    else if (host.contains("hostname") && host["hostname"].is_string())
      meta["device"] = host["hostname"];
  }
  // What the results are of, for a reader who knows kevo (the schema allows
  // more keys than it names).
  meta["kevo"] = {{"run", run.value("run", nlohmann::json(nullptr))},
                  {"task", task.value("name", "")},
                  {"task_hash", task.value("hash", "")},
                  {"operator", task.value("operator", "")}};

  constexpr double ms = 1e3;
  nlohmann::json results = nlohmann::json::array();
  for (const auto& c : run["candidates"]) {
    const std::string status = c.value("status", "pending");
    if (status == "pending") continue;  // never measured: not a tested configuration
    nlohmann::json config = nlohmann::json::object();
    config["family"] = c.value("family", "");
    if (c.contains("knobs") && c["knobs"].is_object())
      for (auto it = c["knobs"].begin(); it != c["knobs"].end(); ++it)
        config[it.key()] = it.value();

    nlohmann::json runtimes = nlohmann::json::array();
    nlohmann::json measurements = nlohmann::json::array();
    const nlohmann::json t = c.value("timing", nlohmann::json(nullptr));
    if (t.is_object()) {
      for (const auto& s : t["samples_s"])
        if (s.is_number()) runtimes.push_back(s.get<double>() * ms);
      for (const auto& [name, key] : kTimeMeasurements)
        if (t.contains(key) && t[key].is_number())
          measurements.push_back(
              {{"name", name}, {"value", t[key].get<double>() * ms}, {"unit", "ms"}});
    }
    auto add = [&](const char* name, const char* key, const char* unit) {
      if (c.contains(key) && c[key].is_number())
        measurements.push_back({{"name", name}, {"value", c[key]}, {"unit", unit}});
    };
    add("roof_fraction", "roof_fraction", "");
    add("achieved_bandwidth", "achieved_gbps", "GB/s");
    add("achieved_rate", "achieved_gflops", "GFLOP/s");
    add("roofline_floor", "floor_s", "s");
    if (c.contains("bound") && c["bound"].is_string())
      measurements.push_back({{"name", "bound"}, {"value", c["bound"]}, {"unit", ""}});
    // T4's invalidity names the kind of failure only: kevo's status, and for
    // a failed point what went wrong, in one line.
    measurements.push_back({{"name", "status"}, {"value", status}, {"unit", ""}});
    if (status != "ok") {
      const std::string detail =
          c.contains("detail") && c["detail"].is_string() ? one_line(c["detail"].get<std::string>()) : "";
      measurements.push_back(
          {{"name", "error"}, {"value", detail.empty() ? status : detail}, {"unit", ""}});
    }

    nlohmann::json times = {{"runtimes", runtimes}};
    if (c.contains("compile_s") && c["compile_s"].is_number())
      times["compilation_time"] = c["compile_s"].get<double>() * ms;
    results.push_back({{"timestamp", c.value("measured_at", c.value("created_at", ""))},
                       {"configuration", config},
                       {"objectives", {"time"}},
                       {"times", times},
                       {"invalidity", t4_invalidity(status)},
                       // 1: its outputs matched the reference (a suspect's did)
                       {"correctness", status == "ok" || status == "suspect" ? 1 : 0},
                       {"measurements", measurements}});
  }
  return {{"schema_version", "1.0.0"}, {"metadata", meta}, {"results", results}};
}

}  // namespace kevo
