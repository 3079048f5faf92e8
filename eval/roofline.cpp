#include "eval/roofline.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace kevo {

std::string format_seconds(double s) {
  if (!(s > 0)) return fmt::format("{:g} s", s);
  // The unit is chosen after rounding to the 3 digits shown, so 999.96 us
  // prints as 1 ms, not as 1e+03 us.
  s = std::strtod(fmt::format("{:.3g}", s).c_str(), nullptr);
  if (s >= 1) return fmt::format("{:.3g} s", s);
  if (s >= 1e-3) return fmt::format("{:.3g} ms", s * 1e3);
  if (s >= 1e-6) return fmt::format("{:.3g} us", s * 1e6);
  return fmt::format("{:.3g} ns", s * 1e9);
}

namespace {
std::string format_bytes(double b) {
  if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.1f} MB", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.1f} kB", b / 1e3);
  return fmt::format("{:.0f} B", b);
}
}  // namespace

Diagnosis diagnose(const Task& task, const TimingStats& timing, const Roof& roof) {
  Diagnosis d;
  const double bytes = task.bytes();
  const double flops = task.flops();
  const BandwidthPoint* bw = roof.bandwidth_for(bytes);
  const std::optional<PeakPoint> peak = roof.peak_for_dtype(dtype_name(task.dtype));
  const double t_mem = bw ? bytes / (bw->gbps * 1e9) : 0;
  const double t_comp = peak ? flops / (peak->gflops * 1e9) : 0;
  d.bound = t_mem >= t_comp ? "memory" : "compute";
  d.floor_s = std::max(t_mem, t_comp);
  d.roof_gbps = bw ? bw->gbps : 0;
  d.roof_gflops = peak ? peak->gflops : 0;
  const double t = timing.median_s;
  d.achieved_gbps = bytes / t / 1e9;
  d.achieved_gflops = flops / t / 1e9;
  d.roof_fraction = d.floor_s > 0 ? d.floor_s / t : 0;

  std::string why;
  if (d.bound == "memory" && bw) {
    // A bandwidth without a working set is a sheet's figure (trainium), not kevo's measurement.
    const std::string source =
        bw->bytes > 0 ? fmt::format("{} measured at {} on {} thread{}", bw->kind, format_bytes(bw->bytes),
                                    bw->threads, bw->threads > 1 ? "s" : "")
                      : fmt::format("{} from the hardware sheet, not measured", bw->kind);
    why = fmt::format("memory-bound: moves {} at {:.1f} GB/s, {:.0f}% of the {:.1f} GB/s roof ({}); floor {}",
                      format_bytes(bytes), d.achieved_gbps, 100 * d.roof_fraction, bw->gbps, source,
                      format_seconds(d.floor_s));
  } else if (peak) {
    why = fmt::format(
        "compute-bound: {:.3g} GFLOP at {:.1f} GFLOP/s, {:.0f}% of the {:.1f} GFLOP/s {} peak on "
        "{} thread{}; floor {}",
        flops / 1e9, d.achieved_gflops, 100 * d.roof_fraction, peak->gflops, peak->kind,
        peak->threads, peak->threads > 1 ? "s" : "", format_seconds(d.floor_s));
  } else {
    why = "no roof measured for this machine";
  }
  if (is_suspect(d, timing)) {
    why += fmt::format("; the median {} is below the floor: impossible unless the kernel skips "
                       "work or reuses results between calls",
                       format_seconds(t));
  } else if (d.roof_fraction > 1) {
    why += "; above the measured roof: the calibration measured this machine low (kevo "
           "calibrate measures it again)";
  } else if (timing.p20_s > 0 && timing.p80_s / timing.p20_s > 1.10) {
    why += fmt::format("; noisy: p80/p20 = {:.2f}", timing.p80_s / timing.p20_s);
  }
  if (const std::optional<Modes> m = two_modes(timing.samples_s))
    why += fmt::format(
        "; bimodal: {:.0f}% of the samples {:.2f}x slower than the rest (a neighbour taking "
        "turns on the machine, or two paths through the kernel)",
        100 * m->slow_share, m->ratio);
  d.why = why;
  return d;
}

Diagnosis combine_diagnoses(const std::vector<Diagnosis>& shapes, const std::vector<double>& weights,
                            const std::vector<std::string>& labels, const TimingStats& objective) {
  Diagnosis d;
  std::vector<double> floors, gbps, gflops;
  bool all_floors = true;
  std::vector<std::string> parts;
  for (size_t k = 0; k < shapes.size(); ++k) {
    const Diagnosis& s = shapes[k];
    all_floors = all_floors && s.floor_s > 0;
    floors.push_back(s.floor_s);
    gbps.push_back(std::max(s.achieved_gbps, 1e-30));
    gflops.push_back(std::max(s.achieved_gflops, 1e-30));
    parts.push_back(fmt::format("{} {:.0f}% ({}-bound)", k < labels.size() ? labels[k] : "?",
                                100 * s.roof_fraction, s.bound));
    d.bound = k == 0 || d.bound == s.bound ? s.bound : "mixed";
  }
  d.roof_gbps = shapes.front().roof_gbps;
  d.roof_gflops = shapes.front().roof_gflops;
  d.achieved_gbps = weighted_geomean(gbps, weights);
  d.achieved_gflops = weighted_geomean(gflops, weights);
  d.floor_s = all_floors ? weighted_geomean(floors, weights) : 0;
  d.roof_fraction = d.floor_s > 0 ? d.floor_s / objective.median_s : 0;
  d.why = fmt::format(
      "over {} timed shapes (weighted geometric mean): {} against a floor of {}, {:.0f}% of the "
      "roof; per shape: {}",
      shapes.size(), format_seconds(objective.median_s), format_seconds(d.floor_s),
      100 * d.roof_fraction, fmt::join(parts, ", "));
  for (const Diagnosis& s : shapes)
    if (!s.bottleneck.empty()) {
      d.bottleneck = s.bottleneck;
      break;
    }
  return d;
}

std::optional<Modes> two_modes(const std::vector<double>& samples) {
  if (samples.size() < 10) return std::nullopt;
  std::vector<double> v = samples;
  std::sort(v.begin(), v.end());
  const size_t n = v.size(), least = std::max<size_t>(2, (n + 9) / 10);
  // The widest step between neighbours that leaves at least a tenth of the
  // samples on each side.
  size_t at = 0;
  double widest = 1;
  for (size_t i = least; i + least <= n; ++i)
    if (v[i - 1] > 0 && v[i] / v[i - 1] > widest) widest = v[i] / v[i - 1], at = i;
  if (at == 0 || widest < kBimodalGap) return std::nullopt;
  const double fast = v[(at - 1) / 2], slow = v[at + (n - at - 1) / 2];
  return Modes{static_cast<double>(n - at) / static_cast<double>(n), slow / fast};
}

bool is_suspect(const Diagnosis& d, const TimingStats& timing) {
  return d.floor_s > 0 && timing.median_s < kSuspectMargin * d.floor_s;
}

}  // namespace kevo
