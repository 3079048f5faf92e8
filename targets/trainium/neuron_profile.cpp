#include "targets/trainium/neuron_profile.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <regex>

#include <fmt/format.h>

#include "core/error.h"

namespace kevo::trainium {

namespace {

// The engine names the profile's tables and summary use, as kevo writes
// them (the Tensor engine is also PE, the Scalar engine ACT, the Vector
// engine DVE, GpSimd POOL).
std::string engine_name(std::string raw) {
  std::string s;
  for (char c : raw)
    if (std::isalnum(static_cast<unsigned char>(c))) s += static_cast<char>(std::tolower(c));
  if (s.rfind("tensor", 0) == 0 || s == "pe" || s == "pearray") return "Tensor";
  if (s.rfind("vector", 0) == 0 || s == "dve") return "Vector";
  if (s.rfind("scalar", 0) == 0 || s == "act" || s == "activation") return "Scalar";
  if (s.rfind("gpsimd", 0) == 0 || s == "pool") return "GpSimd";
  if (s.rfind("sync", 0) == 0 || s == "sp") return "Sync";
  if (s.rfind("dma", 0) == 0 || s.rfind("q", 0) == 0) return "DMA";
  return raw;
}

double number(const nlohmann::json& v, double fallback = 0) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    try {
      size_t used = 0;
      const std::string s = v.get<std::string>();
      const double d = std::stod(s, &used);
      if (used > 0) return d;
    } catch (const std::exception&) {
    }
  }
  return fallback;
}

double value_of(const nlohmann::json& row, std::initializer_list<const char*> names, double fallback = 0) {
  for (const char* n : names)
    if (row.contains(n) && !row[n].is_null()) return number(row[n], fallback);
  return fallback;
}

std::string text_of(const nlohmann::json& row, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (row.contains(n) && row[n].is_string()) return row[n].get<std::string>();
  return "";
}

// The object that holds a kernel's summary fields: the object itself, the
// first element of a list, or the first member that holds them (the tool
// keys the summary by the profile's name).
const nlohmann::json* find_summary(const nlohmann::json& j) {
  auto holds = [](const nlohmann::json& o) {
    return o.is_object() && (o.contains("total_time") || o.contains("total_active_time"));
  };
  if (holds(j)) return &j;
  if (j.is_array())
    for (const auto& e : j)
      if (const nlohmann::json* s = find_summary(e)) return s;
  if (j.is_object())
    for (const auto& [k, v] : j.items())
      if (v.is_object() || v.is_array())
        if (const nlohmann::json* s = find_summary(v)) return s;
  return nullptr;
}

void read_summary(const nlohmann::json& s, NeuronProfile& p) {
  for (const auto& [k, v] : s.items()) {
    if (v.is_number()) p.summary[k] = v.get<double>();
    if (k == "instance_type" && v.is_string()) p.instance_type = v.get<std::string>();
  }
}

int64_t line_of(const std::string& location) {
  static const std::regex after_file(R"(\.py:(\d+))");
  static const std::regex any(R"(:(\d+))");
  std::smatch m;
  if (std::regex_search(location, m, after_file) || std::regex_search(location, m, any))
    return std::stoll(m[1]);
  return 0;
}

// Where an instruction came from, as "file.py:42": the NKI source location
// (a string, or a list of them: the innermost frame last), else the BIR
// debug location with its directories dropped.
std::string location_of(const nlohmann::json& r) {
  auto last_file = [](std::string s) {
    const auto slash = s.find_last_of('/');
    return slash == std::string::npos ? s : s.substr(slash + 1);
  };
  if (r.contains("nki_source_location")) {
    const auto& v = r["nki_source_location"];
    if (v.is_string() && !v.get<std::string>().empty()) return last_file(v.get<std::string>());
    if (v.is_array() && !v.empty() && v.back().is_string()) return last_file(v.back().get<std::string>());
  }
  return last_file(text_of(r, {"bir_debug_info_source_location"}));
}

}  // namespace

NeuronRoof roof_from_sheet(const nlohmann::json& figures) {
  NeuronRoof r;
  const double cores = value_of(figures, {"neuron_cores"}, 0);
  if (cores <= 0) return r;
  r.dma_bandwidth = value_of(figures, {"hbm_bandwidth_gbs"}) * 1e9 / cores;
  r.te_peak_flops = value_of(figures, {"bf16_tflops"}) * 1e12 / cores;
  return r;
}

double merged_length(std::vector<Interval> intervals) {
  std::erase_if(intervals, [](const Interval& i) { return !(i.end > i.start); });
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& a, const Interval& b) { return a.start < b.start; });
  double total = 0;
  bool open = false;
  double cur_start = 0, cur_end = 0;
  for (const auto& i : intervals) {
    if (open && i.start <= cur_end) {
      cur_end = std::max(cur_end, i.end);
      continue;
    }
    if (open) total += cur_end - cur_start;
    cur_start = i.start;
    cur_end = i.end;
    open = true;
  }
  if (open) total += cur_end - cur_start;
  return total;
}

double NeuronProfile::field(const std::string& name, double fallback) const {
  auto it = summary.find(name);
  return it == summary.end() ? fallback : it->second;
}

NeuronProfile parse_neuron_summary(const std::string& text) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) throw UserError("neuron-explorer's summary is not JSON");
  const nlohmann::json* s = find_summary(j);
  if (!s) throw UserError("neuron-explorer's summary holds no kernel summary (no total_time)");
  NeuronProfile p;
  read_summary(*s, p);
  return p;
}

NeuronProfile parse_neuron_profile(const nlohmann::json& doc) {
  if (!doc.is_object() || !doc.contains("summary"))
    throw UserError("the trainium runner's profile has no summary");
  NeuronProfile p;
  const nlohmann::json* s = find_summary(doc["summary"]);
  if (!s) throw UserError("the trainium runner's profile summary has no total_time");
  read_summary(*s, p);
  if (doc.contains("metadata") && doc["metadata"].is_object()) {
    const auto& m = doc["metadata"];
    p.dma_bandwidth = value_of(m, {"dma_ddr_bandwidth"});
    p.te_rows = static_cast<int>(value_of(m, {"tensor_engine_num_rows"}));
    p.te_cols = static_cast<int>(value_of(m, {"tensor_engine_num_cols"}));
    p.te_clock_ghz = value_of(m, {"tensor_engine_clock_freq"});
    if (std::string it = text_of(m, {"instance_type"}); !it.empty()) p.instance_type = it;
  }
  if (doc.contains("active") && doc["active"].is_array())
    for (const auto& r : doc["active"]) {
      if (!r.is_object()) throw UserError("the trainium runner's profile: an ActiveTime row is not an object");
      double end = value_of(r, {"end_ts"}, -1);
      const double start = value_of(r, {"start_ts"});
      if (end < 0) end = start + value_of(r, {"duration_ns"});
      p.active[engine_name(text_of(r, {"engine"}))].push_back({start, end});
    }
  if (doc.contains("instructions") && doc["instructions"].is_array())
    for (const auto& r : doc["instructions"]) {
      if (!r.is_object()) throw UserError("the trainium runner's profile: an instruction is not an object");
      NeuronInstruction i;
      i.start_ns = value_of(r, {"start_ts"});
      i.end_ns = value_of(r, {"end_ts"}, -1);
      if (i.end_ns < 0) i.end_ns = i.start_ns + value_of(r, {"duration_ns", "duration"});
      i.engine = engine_name(text_of(r, {"engine"}));
      i.opcode = text_of(r, {"opcode"});
      i.tensor_type = text_of(r, {"tensor_instruction_type"});
      i.adjusted_flops = value_of(r, {"adjusted_flops"});
      i.location = location_of(r);
      p.instructions.push_back(std::move(i));
    }
  if (doc.contains("dma") && doc["dma"].is_array())
    for (const auto& r : doc["dma"]) {
      if (!r.is_object()) throw UserError("the trainium runner's profile: a DMA packet is not an object");
      NeuronDma d;
      d.start_ns = value_of(r, {"start_ts"});
      d.end_ns = value_of(r, {"end_ts"}, -1);
      if (d.end_ns < 0) d.end_ns = d.start_ns + value_of(r, {"duration_ns", "duration"});
      d.bytes = value_of(r, {"transfer_bytes", "bytes"});
      d.queue_type = text_of(r, {"queue_type"});
      p.dma.push_back(d);
    }
  if (doc.contains("tensors") && doc["tensors"].is_array())
    for (const auto& t : doc["tensors"]) {
      const std::string type = text_of(t, {"type"});
      if (type == "IN" || type == "OUT") p.io_bytes += value_of(t, {"size"});
    }
  return p;
}

NeuronBounds neuron_bounds(const NeuronProfile& p, const NeuronRoof& fallback) {
  NeuronBounds b;
  b.total_s = p.field("total_time");
  if (b.total_s <= 0 && !p.dma.empty()) {  // the DMA packets' window
    double t0 = p.dma.front().start_ns, t1 = p.dma.front().end_ns;
    for (const auto& d : p.dma) t0 = std::min(t0, d.start_ns), t1 = std::max(t1, d.end_ns);
    b.total_s = (t1 - t0) * 1e-9;
  }
  // The roof: the profile's own Metadata, else the hardware sheet.
  const double te_from_meta = p.te_rows > 0 && p.te_cols > 0 && p.te_clock_ghz > 0
                                  ? static_cast<double>(p.te_rows) * p.te_cols * 2.0 * p.te_clock_ghz * 1e9
                                  : 0;
  b.dma_bandwidth = p.dma_bandwidth > 0 ? p.dma_bandwidth : fallback.dma_bandwidth;
  b.te_peak_flops = te_from_meta > 0 ? te_from_meta : fallback.te_peak_flops;
  b.roof_source = p.dma_bandwidth > 0 && te_from_meta > 0   ? "profile metadata"
                  : p.dma_bandwidth > 0 || te_from_meta > 0 ? "profile metadata and hardware sheet"
                                                            : "hardware sheet";

  // Busy time per compute engine: the profile's merged ActiveTime rows,
  // else the instructions merged here, else the summary (its active time,
  // or its share of the run).
  static const char* const kEngines[] = {"Tensor", "Vector", "Scalar", "GpSimd", "Sync"};
  if (!p.active.empty()) {
    for (const auto& [e, v] : p.active) b.engine_s[e] = merged_length(v) * 1e-9;
  } else if (!p.instructions.empty()) {
    std::map<std::string, std::vector<Interval>> per;
    for (const auto& i : p.instructions) per[i.engine].push_back({i.start_ns, i.end_ns});
    for (auto& [e, v] : per) b.engine_s[e] = merged_length(std::move(v)) * 1e-9;
  } else {
    for (const char* e : kEngines) {
      std::string key = e;
      std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
      key += "_engine_active_time";
      if (p.has(key))
        b.engine_s[e] = p.field(key);
      else if (p.has(key + "_percent") && b.total_s > 0)
        b.engine_s[e] = p.field(key + "_percent") * b.total_s;
    }
  }
  // The DMA queues: every packet merged (the memory bound); the bytes of
  // the kernel's transfers (not the instruction fetches, not the tiny
  // semaphore writes) over the DMA bandwidth (the ideal).
  double dma_bytes = 0;
  if (!p.dma.empty()) {
    std::vector<Interval> v;
    for (const auto& d : p.dma) {
      v.push_back({d.start_ns, d.end_ns});
      if (d.queue_type != "instruction" && d.bytes > 4) dma_bytes += d.bytes;
    }
    b.engine_s["DMA"] = merged_length(std::move(v)) * 1e-9;
  } else if (p.has("dma_active_time")) {
    b.engine_s["DMA"] = p.field("dma_active_time");
  } else if (p.has("dma_active_time_percent") && b.total_s > 0) {
    b.engine_s["DMA"] = p.field("dma_active_time_percent") * b.total_s;
  }
  if (dma_bytes <= 0) dma_bytes = p.field("dma_transfer_total_bytes");
  const double io_bytes = p.io_bytes > 0 ? p.io_bytes : p.field("inputs_outputs_weights_size_bytes");
  b.memory_s = b.engine_s.count("DMA") ? b.engine_s["DMA"] : 0;
  b.compute_s = b.engine_s.count("Tensor") ? b.engine_s["Tensor"] : 0;
  if (b.dma_bandwidth > 0) {
    b.memory_ideal_s = dma_bytes / b.dma_bandwidth;
    b.memory_no_reloads_s = io_bytes / b.dma_bandwidth;
  }
  // Tensor-engine flops (bf16-equivalent): every MATMUL instruction, and of
  // them those in transpose mode, which do no useful work.
  double hw_flops = 0, transpose = 0;
  for (const auto& i : p.instructions) {
    if (i.engine != "Tensor" || i.opcode != "MATMUL") continue;
    hw_flops += i.adjusted_flops;
    if (i.tensor_type == "TRANSPOSE") transpose += i.adjusted_flops;
  }
  if (hw_flops <= 0) {
    const bool adjusted = p.has("adjusted_hardware_flops");
    hw_flops = p.field(adjusted ? "adjusted_hardware_flops" : "hardware_flops");
    const double t = p.field(adjusted ? "adjusted_transpose_flops" : "transpose_flops");
    transpose = std::isfinite(t) ? t : 0;  // NaN when there were none
  }
  if (b.te_peak_flops > 0) {
    b.compute_ideal_s = hw_flops / b.te_peak_flops;
    b.compute_useful_s = std::max(0.0, hw_flops - transpose) / b.te_peak_flops;
  }
  // The perfect pipeline: every engine overlapped with every other, the
  // busiest one sets the time (Sync only waits on the others).
  for (const auto& [e, s] : b.engine_s) {
    if (e == "Sync") continue;
    if (s > b.pipeline_s) {
      b.pipeline_s = s;
      b.bottleneck = e;
    }
  }
  // Source lines: instruction time summed per location.
  std::map<std::string, double> per_loc;
  double all = 0;
  for (const auto& i : p.instructions) {
    const double ns = std::max(0.0, i.end_ns - i.start_ns);
    all += ns;
    if (!i.location.empty()) per_loc[i.location] += ns;
  }
  for (const auto& [loc, ns] : per_loc) b.lines.push_back({loc, line_of(loc), ns, all > 0 ? ns / all : 0});
  std::sort(b.lines.begin(), b.lines.end(),
            [](const NeuronBounds::Line& a, const NeuronBounds::Line& c) { return a.ns > c.ns; });
  return b;
}

std::vector<ProfileMetric> neuron_metrics(const NeuronBounds& b) {
  std::vector<ProfileMetric> m;
  auto add = [&](const std::string& name, double v, const char* unit) {
    if (v > 0) m.push_back({name, v, unit, 0});
  };
  add("neuron.total_s", b.total_s, "s");
  add("neuron.memory_s", b.memory_s, "s");
  add("neuron.memory_ideal_s", b.memory_ideal_s, "s");
  add("neuron.memory_no_reloads_s", b.memory_no_reloads_s, "s");
  add("neuron.compute_s", b.compute_s, "s");
  add("neuron.compute_ideal_s", b.compute_ideal_s, "s");
  add("neuron.compute_useful_s", b.compute_useful_s, "s");
  add("neuron.pipeline_s", b.pipeline_s, "s");
  add("neuron.dma_bandwidth", b.dma_bandwidth, "B/s");
  add("neuron.te_peak_flops", b.te_peak_flops, "FLOP/s");
  for (const auto& [e, s] : b.engine_s) add("neuron.engine." + e + "_s", s, "s");
  for (size_t i = 0; i < b.lines.size() && i < 8; ++i)
    if (b.lines[i].line > 0) m.push_back({"neuron.line.time_share", b.lines[i].share, "fraction", b.lines[i].line});
  return m;
}

NeuronVerdict classify(const NeuronProfile& p, const NeuronBounds& b) {
  auto us = [](double s) { return fmt::format("{:.1f} us", s * 1e6); };
  std::vector<std::string> parts;
  for (const auto& [e, s] : b.engine_s) parts.push_back(fmt::format("{} {}", e, us(s)));
  const std::string engines = parts.empty() ? std::string("no engine times") : fmt::format("{}", fmt::join(parts, ", "));
  NeuronVerdict v;
  const double spills = p.field("spill_save_bytes") + p.field("spill_reload_bytes");
  if (b.bottleneck.empty() || b.total_s <= 0) {
    v.kind = "latency";
    v.why = fmt::format("the profile gives no engine times to compare ({})", engines);
    return v;
  }
  // How much of the run the busiest engine covers: far below 1, the engines
  // wait on each other (dependencies, semaphores), not on a rate.
  const double cover = b.pipeline_s / b.total_s;
  const std::string head = fmt::format("{} profiled, the busiest engine {} active {:.0f}% of it ({})",
                                       us(b.total_s), b.bottleneck, 100 * cover, engines);
  if (spills > 0) {
    v.kind = "spills";
    v.why = fmt::format("{:.0f} bytes spilled from SBUF and reloaded; {}", spills, head);
    return v;
  }
  if (cover < 0.5) {
    v.kind = "latency";
    v.why = fmt::format("engines idle most of the run (waiting on each other): {}", head);
    return v;
  }
  if (b.bottleneck == "DMA") {
    const double eff = b.memory_ideal_s > 0 && b.memory_s > 0 ? b.memory_ideal_s / b.memory_s : 0;
    std::string bw = b.memory_ideal_s > 0
                         ? fmt::format("; DMA at {:.0f}% of {:.0f} GB/s while active (ideal {})",
                                       100 * eff, b.dma_bandwidth / 1e9, us(b.memory_ideal_s))
                         : "";
    if (b.memory_no_reloads_s > 0 && b.memory_ideal_s > 1.2 * b.memory_no_reloads_s)
      bw += fmt::format("; it moves {:.1f}x the bytes of its inputs and outputs (reloads)",
                        b.memory_ideal_s / b.memory_no_reloads_s);
    v.kind = eff >= 0.6 ? "dram-bandwidth" : "memory-latency";
    v.why = fmt::format("DMA-bound: {}{}", head, bw);
    return v;
  }
  v.kind = "compute";
  std::string rate;
  if (b.bottleneck == "Tensor" && b.compute_ideal_s > 0)
    rate = fmt::format("; Tensor engine at {:.0f}% of {:.1f} TFLOP/s while active (ideal {})",
                       100 * b.compute_ideal_s / b.compute_s, b.te_peak_flops / 1e12,
                       us(b.compute_ideal_s));
  v.why = fmt::format("{}-engine-bound: {}{}", b.bottleneck, head, rate);
  return v;
}

}  // namespace kevo::trainium
