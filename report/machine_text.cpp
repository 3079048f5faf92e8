#include "report/machine_text.h"

#include <cstdint>
#include <utility>

#include <fmt/format.h>

namespace kevo {

namespace {

// The figures the runners store, in the order they are shown (the GPU's,
// then the host's: a GPU evaluation has both); a machine.* metric not listed
// here is shown by its name after them.
struct Figure {
  const char* metric;
  const char* label;  // before the value
  const char* unit;   // after it
  int decimals;
  bool mask = false;  // NVML's clock-event reasons, idle left out: 0 is not throttled
};
constexpr Figure kFigures[] = {
    {"machine.sm_mhz", "SM clock ", " MHz", 0}, {"machine.mem_mhz", "memory clock ", " MHz", 0},
    {"machine.gpu_temp_c", "GPU ", " C", 0},    {"machine.mem_temp_c", "HBM ", " C", 0},
    {"machine.power_w", "", " W", 0},           {"machine.throttle", "", "", 0, true},
    {"machine.load1", "load ", "", 2},          {"machine.cpu_mhz", "CPU clock ", " MHz", 0},
    {"machine.cpu_wait_pct", "waited for a CPU ", "% of the timing", 0},
};

bool known(const std::string& metric) {
  for (const Figure& f : kFigures)
    if (metric == f.metric) return true;
  return false;
}

std::string value_text(const Figure& f, double v) {
  if (f.mask)
    return v == 0 ? "not throttled"
                  : fmt::format("throttled (mask {:#x})", static_cast<uint64_t>(v));
  return fmt::format("{:.{}f}", v, f.decimals);
}

void append(std::string& text, const std::string& part) {
  text += (text.empty() ? "" : ", ") + part;
}

}  // namespace

std::string machine_text(const nlohmann::json& state) {
  std::string text;
  for (const Figure& f : kFigures)
    if (state.contains(f.metric))
      append(text, f.label + value_text(f, state[f.metric].get<double>()) + f.unit);
  for (const auto& [metric, value] : state.items())
    if (!known(metric)) append(text, fmt::format("{} {:.4g}", metric, value.get<double>()));
  return text;
}

std::string machine_change_text(const nlohmann::json& before, const nlohmann::json& after) {
  std::string text;
  for (const Figure& f : kFigures) {
    if (!before.contains(f.metric) || !after.contains(f.metric)) continue;
    const std::string a = value_text(f, before[f.metric].get<double>());
    const std::string b = value_text(f, after[f.metric].get<double>());
    if (f.mask)  // words, not a number with a unit
      append(text, a == b ? a + " both times" : a + " -> " + b);
    else
      append(text, fmt::format("{}{} -> {}{}", f.label, a, b, f.unit));
  }
  for (const auto& [metric, value] : before.items())
    if (!known(metric) && after.contains(metric))
      append(text, fmt::format("{} {:.4g} -> {:.4g}", metric, value.get<double>(),
                               after[metric].get<double>()));
  return text;
}

std::string throttle_reasons_text(uint64_t mask) {
  // nvml.h's nvmlClocksEventReason* bits (GpuIdle, 0x1, is left out by the runners).
  static constexpr std::pair<uint64_t, const char*> kNames[] = {
      {0x2, "the applications clocks setting"},
      {0x4, "the software power cap"},
      {0x8, "hardware slowdown"},
      {0x10, "sync boost"},
      {0x20, "software thermal slowdown"},
      {0x40, "hardware thermal slowdown"},
      {0x80, "the hardware power brake"},
      {0x100, "the display clock setting"}};
  std::string text;
  uint64_t rest = mask;
  for (const auto& [bit, name] : kNames)
    if (mask & bit) {
      append(text, name);
      rest &= ~bit;
    }
  if (rest != 0) append(text, fmt::format("mask {:#x}", rest));
  return text;
}

std::string clocks_held_text(const nlohmann::json& m) {
  if (!m.is_object()) return "";
  const int64_t throttled = m.value("throttled", int64_t{0});
  const nlohmann::json& mhz = m["sm_mhz"];
  const bool moved =
      mhz.is_object() && mhz["min"].get<double>() < 0.95 * mhz["max"].get<double>();
  if (throttled == 0 && !moved) return "";
  const std::string clock =
      mhz.is_object()
          ? fmt::format("SM clock {:.0f}-{:.0f} MHz (median {:.0f})", mhz["min"].get<double>(),
                        mhz["max"].get<double>(), mhz["median"].get<double>())
          : std::string("SM clock not read");
  const std::string held =
      throttled > 0
          ? fmt::format("the GPU's clocks were held back ({}) in {} of {} evaluations",
                        throttle_reasons_text(m["throttle_mask"].get<uint64_t>()), throttled,
                        m["with_throttle"].get<int64_t>())
          : std::string("the GPU's SM clock moved over the run");
  return held + "; " + clock;
}

}  // namespace kevo
