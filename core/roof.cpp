#include "core/roof.h"

#include <algorithm>

namespace kevo {

const BandwidthPoint* Roof::bandwidth_for(double bytes, int threads) const {
  auto counts = [&](const BandwidthPoint& p) { return threads <= 0 || p.threads == threads; };
  double size = -1, smallest = -1;
  for (const auto& p : bandwidth) {
    if (!counts(p)) continue;
    if (smallest < 0 || p.bytes < smallest) smallest = p.bytes;
    if (p.bytes <= bytes && p.bytes > size) size = p.bytes;
  }
  if (size < 0) size = smallest;
  const BandwidthPoint* best = nullptr;
  for (const auto& p : bandwidth)
    if (counts(p) && p.bytes == size && (!best || p.gbps > best->gbps)) best = &p;
  return best;
}

std::optional<PeakPoint> Roof::peak_for(int threads) const {
  std::optional<PeakPoint> best;
  for (const auto& p : peak)
    if ((threads <= 0 || p.threads == threads) && (!best || p.gflops > best->gflops)) best = p;
  return best;
}

std::optional<PeakPoint> Roof::peak_for_dtype(std::string_view dtype, int threads) const {
  auto applies = [&](const std::string& kind) {
    if (kind == "bf16_tensor") return dtype == "bf16" || dtype == "f16";
    return true;  // fp32_fma: a scalar or vector FMA unit computes any dtype (converted)
  };
  std::optional<PeakPoint> best;
  for (const auto& p : peak)
    if ((threads <= 0 || p.threads == threads) && applies(p.kind) &&
        (!best || p.gflops > best->gflops))
      best = p;
  return best ? best : peak_for(threads);
}

nlohmann::json Roof::to_json() const {
  nlohmann::json j;
  j["target"] = target;
  j["host_key"] = host_key;
  j["hostname"] = hostname;
  j["cpu_model"] = cpu_model;
  j["ncpu"] = ncpu;
  if (!datasheet.empty()) j["datasheet"] = datasheet;
  j["measured_at"] = measured_at;
  j["bandwidth"] = nlohmann::json::array();
  for (const auto& p : bandwidth)
    j["bandwidth"].push_back(
        {{"kind", p.kind}, {"threads", p.threads}, {"bytes", p.bytes}, {"gbps", p.gbps}});
  j["peak"] = nlohmann::json::array();
  for (const auto& p : peak)
    j["peak"].push_back({{"kind", p.kind}, {"threads", p.threads}, {"gflops", p.gflops}});
  return j;
}

Roof Roof::best_of(const std::vector<Roof>& roofs) {
  const Roof* newest = &roofs.front();
  for (const auto& r : roofs)
    if (r.id > newest->id) newest = &r;
  Roof out = *newest;
  out.calibrations = static_cast<int>(roofs.size());
  for (const auto& r : roofs) {
    if (&r == newest) continue;
    for (const auto& p : r.bandwidth) {
      auto it = std::find_if(out.bandwidth.begin(), out.bandwidth.end(), [&](const BandwidthPoint& q) {
        return q.kind == p.kind && q.threads == p.threads && q.bytes == p.bytes;
      });
      if (it == out.bandwidth.end()) out.bandwidth.push_back(p);
      else it->gbps = std::max(it->gbps, p.gbps);
    }
    for (const auto& p : r.peak) {
      auto it = std::find_if(out.peak.begin(), out.peak.end(), [&](const PeakPoint& q) {
        return q.kind == p.kind && q.threads == p.threads;
      });
      if (it == out.peak.end()) out.peak.push_back(p);
      else it->gflops = std::max(it->gflops, p.gflops);
    }
  }
  return out;
}

Roof Roof::from_json(const nlohmann::json& j) {
  Roof r;
  r.target = j.value("target", "");
  r.host_key = j.value("host_key", "");
  r.hostname = j.value("hostname", "");
  r.cpu_model = j.value("cpu_model", "");
  r.ncpu = j.value("ncpu", 1);
  r.datasheet = j.value("datasheet", "");
  r.measured_at = j.value("measured_at", "");
  for (const auto& p : j.value("bandwidth", nlohmann::json::array()))
    r.bandwidth.push_back({p.at("kind").get<std::string>(), p.at("threads").get<int>(),
                           p.at("bytes").get<double>(), p.at("gbps").get<double>()});
  for (const auto& p : j.value("peak", nlohmann::json::array()))
    r.peak.push_back(
        {p.at("kind").get<std::string>(), p.at("threads").get<int>(), p.at("gflops").get<double>()});
  return r;
}

}  // namespace kevo
