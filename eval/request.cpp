#include "eval/request.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cmath>
#include <limits>
#include <memory>

#include <fmt/format.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/paths.h"
#include "core/task.h"
#include "eval/compile_cache.h"
#include "eval/reference_cache.h"
#include "targets/target.h"

namespace kevo {

namespace {

using json = nlohmann::json;

// JSON has no infinity or NaN: they travel as strings.
json number(double v) {
  if (std::isfinite(v)) return v;
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

double number_of(const json& j, const char* field) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  }
  throw UserError(fmt::format("evaluation result: '{}' is not a number", field));
}

// The field `key` of object `j`, or a UserError saying what `what` lacks.
const json& field(const json& j, const char* key, const char* what) {
  if (!j.is_object() || !j.contains(key))
    throw UserError(fmt::format("{}: no '{}'", what, key));
  return j.at(key);
}

template <typename T>
T get(const json& j, const char* key, const char* what) {
  try {
    return field(j, key, what).get<T>();
  } catch (const json::exception&) {
    throw UserError(fmt::format("{}: '{}' has the wrong type", what, key));
  }
}

json roof_to_wire(const Roof& r) {
  json j = r.to_json();
  j["id"] = r.id;
  return j;
}

Roof roof_from_wire(const json& j) {
  try {
    Roof r = Roof::from_json(j);
    r.id = j.value("id", int64_t{0});
    return r;
  } catch (const json::exception& e) {
    throw UserError(fmt::format("evaluation request: bad roof: {}", e.what()));
  }
}

}  // namespace

json request_to_json(const EvalRequest& r) {
  json roof = roof_to_wire(r.roof);
  json roofs = json::array();
  for (const Roof& n : r.roofs) roofs.push_back(roof_to_wire(n));
  return {{"task", r.task},
          {"source", {{"text", r.source.text},
                      {"language", r.source.language},
                      {"origin", r.source.origin.string()}}},
          {"name", r.name},
          {"knobs", json::parse(knobs_to_json(r.knobs))},
          {"roof", std::move(roof)},
          {"roof_by_node", r.roof_by_node},
          {"roofs", std::move(roofs)},
          {"profile", r.profile},
          {"profile_below_s", number(r.profile_below_s)}};
}

EvalRequest request_from_json(const json& j) {
  constexpr const char* what = "evaluation request";
  EvalRequest r;
  r.task = field(j, "task", what);
  const json& src = field(j, "source", what);
  r.source.text = get<std::string>(src, "text", "evaluation request's source");
  r.source.language = get<std::string>(src, "language", "evaluation request's source");
  if (src.contains("origin")) r.source.origin = get<std::string>(src, "origin", what);
  if (j.contains("name")) r.name = get<std::string>(j, "name", what);
  const json& knobs = field(j, "knobs", what);
  if (!knobs.is_object()) throw UserError("evaluation request: 'knobs' is not an object");
  for (const auto& [k, v] : knobs.items()) {
    if (!v.is_number_integer())
      throw UserError(fmt::format("evaluation request: knob '{}' is not an integer", k));
    r.knobs[k] = v.get<int64_t>();
  }
  r.roof = roof_from_wire(field(j, "roof", what));
  if (j.contains("roof_by_node")) r.roof_by_node = get<bool>(j, "roof_by_node", what);
  if (j.contains("roofs")) {
    if (!j["roofs"].is_array()) throw UserError("evaluation request: 'roofs' is not a list");
    for (const json& n : j["roofs"]) r.roofs.push_back(roof_from_wire(n));
  }
  if (j.contains("profile")) r.profile = get<bool>(j, "profile", what);
  if (j.contains("profile_below_s"))
    r.profile_below_s = number_of(j["profile_below_s"], "profile_below_s");
  return r;
}

json result_to_wire(const EvalResult& r) {
  json j = r.to_json();  // the figures as kevo shows them, then what that leaves out
  j["compile_log"] = r.compile_log;
  j["stdout"] = r.stdout_text;
  j["stderr"] = r.stderr_text;
  j["roof_id"] = r.roof_id;
  j["checks"] = json::array();
  for (const CheckReport& c : r.checks) {
    json cj = {{"label", c.label},          {"passed", c.passed},
               {"checked", c.checked},      {"mismatches", c.mismatches},
               {"max_abs_err", number(c.max_abs_err)}, {"max_ulp", number(c.max_ulp)},
               {"note", c.note},            {"failed_outputs", c.failed_outputs}};
    if (c.first)
      cj["first"] = {{"tensor", c.first->tensor}, {"index", c.first->index},
                     {"coords", c.first->coords}, {"got", number(c.first->got)},
                     {"want", number(c.first->want)}, {"compare", c.first->compare}};
    j["checks"].push_back(std::move(cj));
  }
  if (r.timing) {
    json samples = json::array();
    for (double s : r.timing->samples_s) samples.push_back(number(s));
    j["timing"]["samples_s"] = std::move(samples);
  }
  if (r.diagnosis) {
    const Diagnosis& d = *r.diagnosis;
    j["diagnosis"] = {{"bound", d.bound},
                      {"roof_fraction", number(d.roof_fraction)},
                      {"floor_s", number(d.floor_s)},
                      {"achieved_gbps", number(d.achieved_gbps)},
                      {"achieved_gflops", number(d.achieved_gflops)},
                      {"roof_gbps", number(d.roof_gbps)},
                      {"roof_gflops", number(d.roof_gflops)},
                      {"why", d.why},
                      {"bottleneck", d.bottleneck}};
  }
  if (!r.profile.empty()) {
    j["profile"] = json::array();
    for (const ProfileMetric& m : r.profile)
      j["profile"].push_back({{"metric", m.metric}, {"value", number(m.value)}, {"unit", m.unit},
                              {"line", m.source_line}});
  }
  return j;
}

EvalResult result_from_wire(const json& j) {
  constexpr const char* what = "evaluation result";
  EvalResult r;
  const auto status = parse_status(get<std::string>(j, "status", what));
  if (!status) throw UserError("evaluation result: unknown 'status'");
  r.status = *status;
  r.detail = get<std::string>(j, "detail", what);
  r.compile_s = number_of(field(j, "compile_s", what), "compile_s");
  r.compile_cached = get<bool>(j, "compile_cached", what);
  r.compile_log = get<std::string>(j, "compile_log", what);
  r.run_s = number_of(field(j, "run_s", what), "run_s");
  r.stdout_text = get<std::string>(j, "stdout", what);
  r.stderr_text = get<std::string>(j, "stderr", what);
  r.roof_id = get<int64_t>(j, "roof_id", what);
  for (const json& cj : field(j, "checks", what)) {
    CheckReport c;
    c.label = get<std::string>(cj, "label", what);
    c.passed = get<bool>(cj, "passed", what);
    c.checked = get<int64_t>(cj, "checked", what);
    c.mismatches = get<int64_t>(cj, "mismatches", what);
    c.max_abs_err = number_of(field(cj, "max_abs_err", what), "max_abs_err");
    c.max_ulp = number_of(field(cj, "max_ulp", what), "max_ulp");
    c.note = get<std::string>(cj, "note", what);
    c.failed_outputs = get<std::vector<std::string>>(cj, "failed_outputs", what);
    if (cj.contains("first")) {
      const json& f = cj.at("first");
      c.first = Mismatch{get<std::string>(f, "tensor", what), get<int64_t>(f, "index", what),
                         get<std::string>(f, "coords", what),
                         number_of(field(f, "got", what), "got"),
                         number_of(field(f, "want", what), "want"),
                         get<std::string>(f, "compare", what)};
    }
    r.checks.push_back(std::move(c));
  }
  if (j.contains("timing")) {
    const json& t = j.at("timing");
    std::vector<double> samples;
    for (const json& s : field(t, "samples_s", what)) samples.push_back(number_of(s, "samples_s"));
    if (samples.empty()) throw UserError("evaluation result: timing without samples");
    r.timing = TimingStats::from_samples(std::move(samples), get<int64_t>(t, "calls_per_sample", what),
                                         get<int64_t>(t, "warmup_calls", what));
  }
  if (j.contains("diagnosis")) {
    const json& d = j.at("diagnosis");
    Diagnosis g;
    g.bound = get<std::string>(d, "bound", what);
    g.roof_fraction = number_of(field(d, "roof_fraction", what), "roof_fraction");
    g.floor_s = number_of(field(d, "floor_s", what), "floor_s");
    g.achieved_gbps = number_of(field(d, "achieved_gbps", what), "achieved_gbps");
    g.achieved_gflops = number_of(field(d, "achieved_gflops", what), "achieved_gflops");
    g.roof_gbps = number_of(field(d, "roof_gbps", what), "roof_gbps");
    g.roof_gflops = number_of(field(d, "roof_gflops", what), "roof_gflops");
    g.why = get<std::string>(d, "why", what);
    g.bottleneck = get<std::string>(d, "bottleneck", what);
    r.diagnosis = std::move(g);
  }
  if (j.contains("profile"))
    for (const json& m : j.at("profile"))
      r.profile.push_back({get<std::string>(m, "metric", what), number_of(field(m, "value", what), "value"),
                           get<std::string>(m, "unit", what), m.value("line", int64_t{0})});
  return r;
}

Roof roof_here(const EvalRequest& request, Target& target, const std::filesystem::path& cache_dir,
               const std::function<void(std::string_view)>& progress) {
  const std::string key = target.host_key();
  for (const Roof& r : request.roofs)
    if (r.host_key == key && r.target == target.name()) return r;
  const std::filesystem::path dir = cache_dir / "roofs";
  std::filesystem::create_directories(dir);
  const std::string stem = fmt::format("{}-{}", target.name(), sha256_hex(key).substr(0, 16));
  const std::filesystem::path file = dir / (stem + ".json");
  // One calibration per machine: others wait for it and read it.
  const int fd = ::open((dir / (stem + ".lock")).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw UserError(fmt::format("cannot open a lock in {}", dir.string()));
  ::flock(fd, LOCK_EX);
  struct Unlock {
    int fd;
    ~Unlock() { ::close(fd); }
  } unlock{fd};
  if (std::filesystem::exists(file)) {
    const json kept = json::parse(read_text_file(file), nullptr, false);
    if (kept.is_object()) {
      Roof r = roof_from_wire(kept);
      if (r.host_key == key) {
        r.id = 0;
        return r;
      }
    }
  }
  progress(fmt::format("no roof for this node type ({}) yet: calibrating (once per node)", key));
  Roof r = target.calibrate(progress, {});
  r.id = 0;
  const std::string text = roof_to_wire(r).dump();
  write_file_atomic(file, text.data(), text.size());
  return r;
}

EvalResult evaluate_request(const EvalRequest& request, const std::filesystem::path& cache_dir,
                            std::function<Roof(double bytes)> remeasure_roof, RequestOutcome* how) {
  const Task task = parse_task(request.task);
  std::unique_ptr<Target> target = make_target(task.target);
  ReferenceCache references(cache_dir / "ref");
  CompileCache compiles(cache_dir);
  const Roof roof = request.roof_by_node
                        ? roof_here(request, *target, cache_dir,
                                    [](std::string_view line) { log_info("{}", line); })
                        : request.roof;
  Evaluator evaluator(task, *target, roof, references, compiles);
  // One candidate per evaluator: top-1 of what it measured is this one.
  evaluator.profile_top = request.profile ? 1 : 0;
  evaluator.profile_below_s = request.profile_below_s;
  evaluator.remeasure_roof = std::move(remeasure_roof);
  EvalResult r = evaluator.evaluate(request.source, request.knobs);
  if (how) {
    how->roof = roof;
    how->profiled = evaluator.profiled() > 0;
  }
  return r;
}

}  // namespace kevo
