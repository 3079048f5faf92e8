#include "targets/runner/protocol.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <string_view>

namespace kevo::runner {

nlohmann::json Job::to_json() const {
  nlohmann::json j;
  j["mode"] = mode;
  j["artifact"] = artifact;
  j["entry"] = entry;
  j["op"] = op;
  if (!op_definition.is_null()) j["op_definition"] = op_definition;
  j["dtype"] = std::string(dtype_name(dtype));
  j["dtypes"] = nlohmann::json::array();
  for (DType d : dtypes) j["dtypes"].push_back(std::string(dtype_name(d)));
  j["scalars"] = scalars;
  j["phases"] = nlohmann::json::array();
  for (const auto& p : phases)
    j["phases"].push_back({{"timed", p.timed}, {"shapes", p.shapes}, {"seed", p.seed}});
  j["timing"] = {{"min_time_s", timing.min_time_s},
                 {"min_samples", timing.min_samples},
                 {"max_samples", timing.max_samples},
                 {"warmup_s", timing.warmup_s},
                 {"min_warmup", timing.min_warmup},
                 {"l2", timing.l2}};
  j["output_bytes"] = output_bytes;
  if (!output_path.empty()) j["output_path"] = output_path;
  j["points"] = nlohmann::json::array();
  for (const auto& p : points)
    j["points"].push_back({{"kind", p.kind}, {"threads", p.threads}, {"bytes", p.bytes}});
  j["min_point_s"] = min_point_s;
  return j;
}

Job Job::from_json(const nlohmann::json& j) {
  Job job;
  job.mode = j.at("mode").get<std::string>();
  job.artifact = j.at("artifact").get<std::string>();
  job.entry = j.at("entry").get<std::string>();
  job.op = j.at("op").get<std::string>();
  job.op_definition = j.value("op_definition", nlohmann::json());
  job.dtype = parse_dtype(j.at("dtype").get<std::string>()).value_or(DType::f32);
  job.scalars = j.at("scalars").get<std::vector<double>>();
  for (const auto& p : j.at("phases"))
    job.phases.push_back({p.at("timed").get<bool>(), p.at("shapes").get<std::vector<Shape>>(),
                          p.at("seed").get<uint64_t>()});
  if (j.contains("dtypes")) {
    for (const auto& d : j.at("dtypes"))
      job.dtypes.push_back(parse_dtype(d.get<std::string>()).value_or(DType::f32));
  } else {
    // A job of a kevo before per-tensor dtypes: every tensor has the one dtype.
    job.dtypes.assign(job.phases.empty() ? 0 : job.phases.front().shapes.size(), job.dtype);
  }
  const auto& t = j.at("timing");
  job.timing.min_time_s = t.at("min_time_s").get<double>();
  job.timing.min_samples = t.at("min_samples").get<int64_t>();
  job.timing.max_samples = t.at("max_samples").get<int64_t>();
  job.timing.warmup_s = t.at("warmup_s").get<double>();
  job.timing.min_warmup = t.at("min_warmup").get<int64_t>();
  job.timing.l2 = t.value("l2", std::string("dirty"));
  job.output_bytes = j.at("output_bytes").get<size_t>();
  job.output_path = j.value("output_path", std::string());
  for (const auto& p : j.at("points"))
    job.points.push_back(
        {p.at("kind").get<std::string>(), p.at("threads").get<int>(), p.at("bytes").get<double>()});
  job.min_point_s = j.at("min_point_s").get<double>();
  return job;
}

void emit_event(int fd, const nlohmann::json& event) {
  std::string line = event.dump() + "\n";
  const char* p = line.data();
  size_t n = line.size();
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      _exit(3);  // the parent is gone
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

std::string read_command_line() {
  std::string line;
  char c;
  for (;;) {
    ssize_t n = read(0, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || c == '\n') return line;
    line += c;
  }
}

std::vector<size_t> output_offsets(size_t n_inputs, const std::vector<DType>& dtypes,
                                   const std::vector<Shape>& shapes, size_t* total) {
  std::vector<size_t> offsets;
  size_t off = 0;
  for (size_t i = n_inputs; i < shapes.size(); ++i) {
    offsets.push_back(off);
    off += (static_cast<size_t>(numel(shapes[i])) * dtype_size(dtypes.at(i)) + 63) / 64 * 64;
  }
  if (total) *total = off;
  return offsets;
}

std::vector<ProfileMetric> machine_metrics(const nlohmann::json& timing_event) {
  static constexpr std::pair<std::string_view, std::string_view> kFields[] = {
      {"sm_mhz", "MHz"}, {"mem_mhz", "MHz"},   {"gpu_temp_c", "C"}, {"mem_temp_c", "C"},
      {"power_w", "W"},  {"throttle", "mask"}, {"load1", ""},       {"cpu_mhz", "MHz"}};
  // The launch cover's figures: the call's host time (median), the cover at
  // the end, the kept samples it did not hide and the samples taken again.
  static constexpr std::pair<std::string_view, std::string_view> kLaunch[] = {
      {"host_us", "us"}, {"cover_us", "us"}, {"outlasted", "samples"}, {"retaken", "samples"}};
  std::vector<ProfileMetric> out;
  auto read = [&](const char* object, const auto& fields) {
    auto it = timing_event.find(object);
    if (it == timing_event.end() || !it->is_object()) return;
    for (const auto& [field, unit] : fields) {
      auto v = it->find(std::string(field));
      if (v == it->end() || !v->is_number()) continue;
      out.push_back({std::string(object) + "." + std::string(field), v->get<double>(), std::string(unit), 0});
    }
  };
  read("machine", kFields);
  read("launch", kLaunch);
  return out;
}

nlohmann::json host_state() {
  nlohmann::json j = nlohmann::json::object();
  double load[1];
  if (getloadavg(load, 1) == 1) j["load1"] = load[0];
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  double sum = 0;
  int n = 0;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("cpu MHz", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    char* end = nullptr;
    const double mhz = std::strtod(line.c_str() + colon + 1, &end);
    if (end != line.c_str() + colon + 1 && mhz > 0) {
      sum += mhz;
      ++n;
    }
  }
  if (n > 0) j["cpu_mhz"] = sum / n;
  return j;
}

}  // namespace kevo::runner
