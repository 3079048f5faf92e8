#include "targets/cuda/reports.h"

#include <algorithm>
#include <cmath>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"

namespace kevo::cuda {

// ---- ptxas -v ---------------------------------------------------------------------

std::vector<KernelResources> parse_ptxas(const std::string& log) {
  static const std::regex entry(R"(Compiling entry function '([^']+)')");
  static const std::regex props(R"(Function properties for (\S+))");
  static const std::regex frame(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(R"(Used (\d+) registers)");
  static const std::regex barriers(R"(used (\d+) barriers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  std::vector<KernelResources> out;
  auto find = [&](const std::string& name) -> KernelResources& {
    for (auto& k : out)
      if (k.kernel == name) return k;
    out.push_back({});
    out.back().kernel = name;
    return out.back();
  };
  std::istringstream in(log);
  std::string line, current;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, entry)) {
      current = m[1];
      find(current);
    } else if (std::regex_search(line, m, props)) {
      current = m[1];
    } else if (!current.empty() && std::regex_search(line, m, frame)) {
      KernelResources& k = find(current);
      k.stack_bytes = std::stoll(m[1]);
      k.spill_store_bytes = std::stoll(m[2]);
      k.spill_load_bytes = std::stoll(m[3]);
    } else if (!current.empty() && std::regex_search(line, m, used)) {
      KernelResources& k = find(current);
      k.registers = std::stoi(m[1]);
      if (std::regex_search(line, m, barriers)) k.barriers = std::stoi(m[1]);
      if (std::regex_search(line, m, smem)) k.smem_bytes = std::stoll(m[1]);
    }
  }
  // Device functions that are not kernels have properties but no "Used" line
  // of their own entry: keep only the entries ptxas compiled.
  return out;
}

std::vector<ProfileMetric> ptxas_metrics(const std::vector<KernelResources>& kernels) {
  if (kernels.empty()) return {};
  const KernelResources* top = &kernels.front();
  int64_t spill_st = 0, spill_ld = 0, stack = 0, smem = 0;
  for (const auto& k : kernels) {
    if (k.registers > top->registers) top = &k;
    spill_st += k.spill_store_bytes;
    spill_ld += k.spill_load_bytes;
    stack = std::max(stack, k.stack_bytes);
    smem = std::max(smem, k.smem_bytes);
  }
  return {{"ptxas.kernels", static_cast<double>(kernels.size()), "", 0},
          {"ptxas.registers", static_cast<double>(top->registers), "register/thread", 0},
          {"ptxas.smem_bytes", static_cast<double>(smem), "byte", 0},
          {"ptxas.stack_bytes", static_cast<double>(stack), "byte", 0},
          {"ptxas.spill_store_bytes", static_cast<double>(spill_st), "byte", 0},
          {"ptxas.spill_load_bytes", static_cast<double>(spill_ld), "byte", 0}};
}

// ---- CSV ------------------------------------------------------------------------

namespace {

// One CSV record (RFC 4180 quoting) starting at `pos`; advances `pos`.
std::vector<std::string> csv_record(const std::string& s, size_t& pos) {
  std::vector<std::string> fields;
  std::string f;
  bool quoted = false, any = false;
  while (pos < s.size()) {
    char c = s[pos++];
    if (quoted) {
      if (c == '"') {
        if (pos < s.size() && s[pos] == '"') {
          f += '"';
          ++pos;
        } else {
          quoted = false;
        }
      } else {
        f += c;
      }
      continue;
    }
    if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      fields.push_back(std::move(f));
      f.clear();
      any = true;
    } else if (c == '\n') {
      break;
    } else if (c != '\r') {
      f += c;
      any = true;
    }
  }
  if (any || !f.empty()) fields.push_back(std::move(f));
  return fields;
}

std::vector<std::vector<std::string>> csv_records(const std::string& s) {
  std::vector<std::vector<std::string>> out;
  size_t pos = 0;
  while (pos < s.size()) out.push_back(csv_record(s, pos));
  return out;
}

std::optional<double> number(const std::string& text) {
  std::string t;
  for (char c : text)
    if (c != ',' && c != ' ') t += c;
  if (t.empty() || t == "n/a" || t == "-") return std::nullopt;
  try {
    size_t used = 0;
    double v = std::stod(t, &used);
    if (used != t.size()) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// ncu scales units to the magnitude unless told --print-units base: times,
// sizes and rates are brought back to nanoseconds, bytes and hertz here
// either way (a clock prints as cycle/second or scaled, e.g. cycle/usecond).
void to_base_unit(double& v, std::string& unit) {
  struct Scale {
    const char* unit;
    double factor;
    const char* base;
  };
  static const Scale scales[] = {
      {"nsecond", 1, "ns"},      {"usecond", 1e3, "ns"},   {"msecond", 1e6, "ns"},
      {"second", 1e9, "ns"},     {"us", 1e3, "ns"},        {"ms", 1e6, "ns"},
      {"s", 1e9, "ns"},          {"Kbyte", 1e3, "byte"},   {"Mbyte", 1e6, "byte"},
      {"Gbyte", 1e9, "byte"},    {"Tbyte", 1e12, "byte"},  {"KB", 1e3, "byte"},
      {"MB", 1e6, "byte"},       {"GB", 1e9, "byte"},
      {"cycle/second", 1, "Hz"}, {"cycle/msecond", 1e3, "Hz"}, {"cycle/usecond", 1e6, "Hz"},
      {"cycle/nsecond", 1e9, "Hz"}, {"hz", 1, "Hz"},      {"Khz", 1e3, "Hz"},
      {"Mhz", 1e6, "Hz"},        {"Ghz", 1e9, "Hz"},       {"KHz", 1e3, "Hz"},
      {"MHz", 1e6, "Hz"},        {"GHz", 1e9, "Hz"},
  };
  for (const auto& s : scales)
    if (unit == s.unit) {
      v *= s.factor;
      unit = s.base;
      return;
    }
}

}  // namespace

double NcuKernel::value(const std::string& metric, double fallback) const {
  auto it = values.find(metric);
  return it == values.end() ? fallback : it->second;
}

std::vector<NcuKernel> parse_ncu_raw(const std::string& csv) {
  auto rows = csv_records(csv);
  size_t h = 0;
  while (h < rows.size() && !(rows[h].size() > 4 && rows[h][0] == "ID")) ++h;
  if (h == rows.size()) throw UserError("no ncu raw table in the profiler's output");
  const auto& header = rows[h];
  auto col = [&](const std::string& name) -> std::optional<size_t> {
    auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) return std::nullopt;
    return static_cast<size_t>(it - header.begin());
  };
  const auto name_col = col("Kernel Name"), block_col = col("Block Size"), grid_col = col("Grid Size");
  std::vector<NcuKernel> out;
  const std::vector<std::string>* units = nullptr;
  for (size_t r = h + 1; r < rows.size(); ++r) {
    const auto& row = rows[r];
    if (row.size() != header.size()) continue;
    if (row[0].empty()) {  // the units row has no ID
      units = &row;
      continue;
    }
    NcuKernel k;
    if (name_col) k.name = row[*name_col];
    if (block_col) k.block = row[*block_col];
    if (grid_col) k.grid = row[*grid_col];
    for (size_t c = 0; c < header.size(); ++c) {
      if (header[c].find("__") == std::string::npos) continue;  // not a metric
      if (auto v = number(row[c])) {
        double value = *v;
        std::string unit = units ? (*units)[c] : std::string();
        to_base_unit(value, unit);
        k.values[header[c]] = value;
        k.units[header[c]] = unit;
      }
    }
    out.push_back(std::move(k));
  }
  return out;
}

std::vector<SassKernel> parse_ncu_sass(const std::string& csv) {
  std::vector<SassKernel> out;
  auto rows = csv_records(csv);
  std::optional<size_t> addr, src, samples, executed;
  std::vector<std::pair<size_t, std::string>> reasons;  // column, reason
  for (const auto& row : rows) {
    if (row.size() >= 2 && row[0] == "Kernel Name") {
      out.push_back({row[1], {}});
      addr = src = samples = executed = std::nullopt;
      reasons.clear();
      continue;
    }
    if (!row.empty() && row[0] == "Address") {
      for (size_t c = 0; c < row.size(); ++c) {
        if (row[c] == "Address") addr = c;
        else if (row[c] == "Source") src = c;
        else if (row[c] == "Warp Stall Sampling (All Samples)") samples = c;
        else if (row[c] == "Instructions Executed") executed = c;
        else if (row[c].rfind("stall_", 0) == 0 && row[c].find(' ') == std::string::npos)
          reasons.emplace_back(c, row[c].substr(6));  // not "stall_x (Not Issued)"
      }
      if (out.empty()) out.push_back({"", {}});
      continue;
    }
    if (out.empty() || !addr || row.size() <= *addr) continue;
    SassRow s;
    try {
      s.address = std::stoull(row[*addr], nullptr, 16);
    } catch (const std::exception&) {
      continue;
    }
    if (src && *src < row.size()) s.text = row[*src];
    if (samples && *samples < row.size()) s.stall_samples = number(row[*samples]).value_or(0);
    if (executed && *executed < row.size()) s.executed = number(row[*executed]).value_or(0);
    for (const auto& [c, reason] : reasons)
      if (c < row.size())
        if (double v = number(row[c]).value_or(0); v > 0) s.stalls[reason] = v;
    out.back().rows.push_back(std::move(s));
  }
  return out;
}

LineMap parse_nvdisasm_lines(const std::string& text, const std::string& file_tag) {
  static const std::regex func(R"(^\s*\.text\.([^:\s]+):)");
  static const std::regex loc(R"re(//## File "([^"]*)", line (\d+)(?: inlined at "([^"]*)", line (\d+))?)re");
  static const std::regex offset(R"(/\*([0-9a-fA-F]{4,})\*/)");
  auto ours = [&](const std::string& f) { return f.find(file_tag) != std::string::npos; };
  LineMap out;
  std::istringstream in(text);
  std::string line, current;
  int64_t current_line = 0;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, func)) {
      current = m[1];
      current_line = 0;
    } else if (std::regex_search(line, m, loc)) {
      if (ours(m[1])) current_line = std::stoll(m[2]);
      else if (m[3].matched && ours(m[3])) current_line = std::stoll(m[4]);
      else current_line = 0;  // a header's code (cuda_bf16.hpp, say)
    } else if (!current.empty() && std::regex_search(line, m, offset)) {
      if (current_line > 0) out[current][std::stoull(m[1], nullptr, 16)] = current_line;
    }
  }
  return out;
}

namespace {

// The source page's stall columns in the words of the diagnosis; a column
// this list does not know keeps its own name.
std::string stall_reason_words(const std::string& column) {
  static const std::map<std::string, std::string> words = {
      {"barrier", "barrier"},
      {"long_sb", "long scoreboard"},
      {"short_sb", "short scoreboard"},
      {"mio", "MIO throttle"},
      {"lg", "LG throttle"},
      {"math", "math pipe throttle"},
      {"wait", "fixed-latency wait"},
      {"not_selected", "not selected"},
      {"no_inst", "no instruction"},
      {"membar", "memory barrier"},
      {"tex", "texture throttle"},
      {"dispatch", "dispatch stall"},
      {"branch_resolving", "branch resolving"},
      {"drain", "drain"},
      {"imc", "constant cache miss"},
      {"sleep", "sleeping"},
      {"misc", "misc"},
  };
  auto it = words.find(column);
  return it == words.end() ? column : it->second;
}

}  // namespace

std::vector<HotLine> hot_lines(const SassKernel& kernel, const std::map<uint64_t, int64_t>& lines) {
  if (kernel.rows.empty()) return {};
  const uint64_t base = kernel.rows.front().address;
  std::map<int64_t, double> per_line;
  std::map<int64_t, std::map<std::string, double>> per_reason;
  double total = 0;
  for (const auto& r : kernel.rows) {
    total += r.stall_samples;
    auto it = lines.find(r.address - base);
    if (it == lines.end()) continue;
    per_line[it->second] += r.stall_samples;
    for (const auto& [reason, v] : r.stalls)
      if (reason != "selected") per_reason[it->second][reason] += v;
  }
  std::vector<HotLine> out;
  for (const auto& [l, s] : per_line) {
    if (s <= 0) continue;
    HotLine h{l, total > 0 ? s / total : 0, s};
    std::string top;
    double top_v = 0;
    for (const auto& [reason, v] : per_reason[l])
      if (v > top_v) top_v = v, top = reason;
    if (!top.empty()) {
      h.reason = stall_reason_words(top);
      h.reason_share = top_v / s;
    }
    out.push_back(std::move(h));
  }
  std::sort(out.begin(), out.end(), [](const HotLine& a, const HotLine& b) {
    return a.samples != b.samples ? a.samples > b.samples : a.line < b.line;
  });
  return out;
}

// ---- what limits the kernel -----------------------------------------------------------

namespace {

struct Stall {
  const char* metric;
  const char* name;
};
const Stall kStalls[] = {
    {"long_scoreboard", "long scoreboard (waiting on global/local memory)"},
    {"short_scoreboard", "short scoreboard (shared memory, special functions)"},
    {"barrier", "barrier (warps waiting for others at __syncthreads, a named or a cluster barrier)"},
    {"mio_throttle", "MIO throttle (shared-memory instruction queue)"},
    {"lg_throttle", "LG throttle (too many global/local instructions)"},
    {"math_pipe_throttle", "math pipe throttle"},
    {"wait", "fixed-latency wait"},
    {"not_selected", "not selected (enough warps ready)"},
    {"no_instruction", "no instruction (instruction cache)"},
    {"membar", "memory barrier"},
    {"tex_throttle", "texture throttle"},
    {"dispatch_stall", "dispatch stall"},
    {"branch_resolving", "branch resolving"},
    {"drain", "drain (stores at exit)"},
    {"imc_miss", "constant cache miss"},
    {"sleeping", "sleeping"},
    {"misc", "misc"},
    {"selected", "selected (issuing)"},
};

std::string stall_metric(const char* s) {
  return fmt::format("smsp__average_warps_issue_stalled_{}_per_issue_active.ratio", s);
}

}  // namespace

const std::string& ncu_metric_list() {
  static const std::string list = [] {
    std::vector<std::string> m = {
        "gpu__time_duration.sum",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
        "lts__throughput.avg.pct_of_peak_sustained_elapsed",
        "sm__cycles_elapsed.avg.per_second",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        "sm__maximum_warps_per_active_cycle_pct",
        "l1tex__t_sector_hit_rate.pct",
        "lts__t_sector_hit_rate.pct",
        "smsp__inst_executed.sum",
        "dram__bytes_read.sum",
        "dram__bytes_write.sum",
        "launch__registers_per_thread",
        "launch__occupancy_limit_registers",
        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    };
    for (const auto& s : kStalls) m.push_back(stall_metric(s.metric));
    std::string out;
    for (const auto& x : m) out += (out.empty() ? "" : ",") + x;
    return out;
  }();
  return list;
}

std::vector<ProfileMetric> ncu_metrics(const NcuKernel& k) {
  struct Pick {
    const char* metric;
    const char* as;
  };
  static const Pick picks[] = {
      {"gpu__time_duration.sum", "ncu.duration_ns"},
      {"dram__throughput.avg.pct_of_peak_sustained_elapsed", "ncu.dram_pct"},
      {"sm__throughput.avg.pct_of_peak_sustained_elapsed", "ncu.sm_pct"},
      {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "ncu.memory_pct"},
      {"lts__throughput.avg.pct_of_peak_sustained_elapsed", "ncu.l2_pct"},
      {"sm__cycles_elapsed.avg.per_second", "ncu.sm_hz"},
      {"sm__warps_active.avg.pct_of_peak_sustained_active", "ncu.achieved_occupancy_pct"},
      {"sm__maximum_warps_per_active_cycle_pct", "ncu.theoretical_occupancy_pct"},
      {"l1tex__t_sector_hit_rate.pct", "ncu.l1_hit_pct"},
      {"lts__t_sector_hit_rate.pct", "ncu.l2_hit_pct"},
      {"smsp__inst_executed.sum", "ncu.instructions"},
      {"dram__bytes_read.sum", "ncu.dram_read_bytes"},
      {"dram__bytes_write.sum", "ncu.dram_write_bytes"},
      {"launch__registers_per_thread", "ncu.registers"},
      {"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", "ncu.tensor_pct"},
  };
  std::vector<ProfileMetric> out;
  for (const auto& p : picks) {
    auto it = k.values.find(p.metric);
    if (it == k.values.end()) continue;
    auto u = k.units.find(p.metric);
    out.push_back({p.as, it->second, u == k.units.end() ? "" : u->second, 0});
  }
  for (const auto& s : kStalls) {
    auto it = k.values.find(stall_metric(s.metric));
    if (it != k.values.end())
      out.push_back({std::string("ncu.stall.") + s.metric, it->second, "warps/issue", 0});
  }
  return out;
}

Bottleneck classify(const NcuKernel& k, const std::vector<KernelResources>& resources) {
  const double dram = k.value("dram__throughput.avg.pct_of_peak_sustained_elapsed");
  const double sm = k.value("sm__throughput.avg.pct_of_peak_sustained_elapsed");
  const double occ = k.value("sm__warps_active.avg.pct_of_peak_sustained_active");
  const double dur_ns = k.value("gpu__time_duration.sum");
  // L2 and the clock were added to the metric list later: a profile recorded
  // before has neither, and its figures say nothing of them.
  const bool has_l2 = k.values.count("lts__throughput.avg.pct_of_peak_sustained_elapsed") > 0;
  const double l2 = k.value("lts__throughput.avg.pct_of_peak_sustained_elapsed");
  const double sm_hz = k.value("sm__cycles_elapsed.avg.per_second");
  // The dominant stall reason (not counting "selected": that is issuing).
  const Stall* top = nullptr;
  double top_v = 0, stall_sum = 0;
  for (const auto& s : kStalls) {
    double v = k.value(stall_metric(s.metric));
    if (std::string(s.metric) == "selected") continue;
    stall_sum += v;
    if (v > top_v) top_v = v, top = &s;
  }
  int64_t spills = 0;
  for (const auto& r : resources) spills += r.spill_store_bytes + r.spill_load_bytes;
  std::string figures = fmt::format("DRAM {:.0f}% of peak, {}SM {:.0f}%, achieved occupancy {:.0f}%", dram,
                                    has_l2 ? fmt::format("L2 {:.0f}%, ", l2) : "", sm, occ);
  // The clock the kernel ran at (ncu does not lock it for kevo): a
  // compute-bound kernel's time moves with it.
  if (sm_hz > 0) figures += fmt::format(", SM clock {:.0f} MHz", sm_hz / 1e6);
  if (top && stall_sum > 0)
    figures += fmt::format("; top stall {} ({:.0f}% of stalls)", top->name, 100 * top_v / stall_sum);
  Bottleneck b;
  if (dur_ns > 0 && dur_ns < 5000) {
    b.kind = "launch";
    b.why = fmt::format("{:.1f} us per launch: launch overhead and tail dominate; {}", dur_ns / 1e3,
                        figures);
  } else if (spills > 0) {
    b.kind = "spills";
    b.why = fmt::format("{} bytes of register spills to local memory; {}", spills, figures);
  } else if (dram >= 70) {
    b.kind = "dram-bandwidth";
    b.why = fmt::format("DRAM-bandwidth-bound: {}", figures);
  } else if (sm >= 60) {
    b.kind = "compute";
    b.why = fmt::format("compute-bound: {}", figures);
  } else if (l2 >= 70) {
    // DRAM has room but the L2 -> SM traffic is near its peak: the same
    // bytes are fetched from L2 by many CTAs (small tiles, no multicast).
    b.kind = "l2-bandwidth";
    b.why = fmt::format("L2-bandwidth-bound (DRAM has room; CTAs re-read the same lines from L2): {}", figures);
  } else if (occ > 0 && occ < 35) {
    b.kind = "occupancy";
    b.why = fmt::format("too few warps in flight to hide latency: {}", figures);
  } else {
    b.kind = "memory-latency";
    b.why = fmt::format("latency-bound (neither DRAM nor SM near peak): {}", figures);
  }
  return b;
}

}  // namespace kevo::cuda
