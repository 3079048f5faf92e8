// The trainium target. Each run writes the phases' inputs (kevo's own
// generator) into a job folder and runs one driver once under kevo-contain
// (network namespace, Landlock, system-call filter), which runs the
// candidate phase by phase, writes its outputs and answers one line per
// phase; kevo checks the outputs against its CPU reference. The driver is
//   - with the Neuron SDK (KEVO_NEURON_PYTHON imports its nki):
//     targets/trainium/runner/kevo_neuron.py: compiles for KEVO_NEURON_TARGET,
//     checks on the device or in nki.simulate, times with nrtpy on the
//     device, profiles with neuron-explorer (not verified on Trainium);
//   - under KEVO_NKI_MODEL=1: targets/trainium/model/kevo_nki_model.py,
//     kevo's NumPy model of NKI (numerics; times are NumPy's).
// A compiler error (an NCC code) or a rule of NKI the model sees broken is
// the candidate's compile error, with its line.
#include "targets/trainium/trainium_target.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/operator.h"
#include "core/paths.h"
#include "core/process.h"
#include "targets/runner/gpu_host.h"
#include "targets/runner/host_loop.h"
#include "targets/runner/python_candidate.h"
#include "targets/trainium/availability.h"
#include "targets/trainium/neuron_profile.h"

namespace kevo {

namespace {

std::filesystem::path model_dir() { return kevo_home() / "targets" / "trainium" / "model"; }
std::filesystem::path model_script() { return model_dir() / "kevo_nki_model.py"; }
std::filesystem::path runner_dir() { return kevo_home() / "targets" / "trainium" / "runner"; }
std::filesystem::path neuron_script() { return runner_dir() / "kevo_neuron.py"; }

// The Python the model runs in: KEVO_NEURON_PYTHON, else the first of
// python3 (PATH) and /usr/bin/python3 that imports NumPy. Asked once.
struct ModelPython {
  std::string python, numpy, error;
  std::vector<std::string> dirs;  // its sys.path, for Landlock
};

const ModelPython& model_python() {
  static std::once_flag once;
  static ModelPython m;
  std::call_once(once, [] {
    std::vector<std::string> candidates;
    if (const char* p = std::getenv("KEVO_NEURON_PYTHON"); p && *p) {
      candidates.push_back(p);
    } else {
      if (auto p3 = runner::find_program("python3", "KEVO_NEURON_PYTHON", {})) candidates.push_back(p3->string());
      candidates.push_back("/usr/bin/python3");
    }
    std::vector<std::string> why;
    for (const auto& py : candidates) {
      const runner::PythonAnswer a = runner::ask_python(
          py, {"-c", fmt::format("import json, sys\nimport numpy\nprint(json.dumps({{'numpy': numpy.__version__, "
                                 "'dirs': {}}}))\n",
                                 runner::kPythonDirs)},
          60);
      if (a.error.empty()) {
        m.python = py;
        m.numpy = a.facts.value("numpy", "");
        m.dirs = a.facts.value("dirs", std::vector<std::string>{});
        return;
      }
      why.push_back(a.error);
    }
    m.error = fmt::format("no Python with NumPy for kevo's NKI model ({}); set KEVO_NEURON_PYTHON, "
                          "or install python3-numpy (scripts/setup.sh test-trainium)",
                          fmt::join(why, "; "));
  });
  return m;
}

bool model_mode() {
  const char* v = std::getenv("KEVO_NKI_MODEL");
  return v && std::string(v) == "1";
}

std::string hash_of_files(const std::vector<std::filesystem::path>& files) {
  std::string all;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    all += f.filename().string() + "\n" + text.str();
  }
  return sha256_hex(all).substr(0, 16);
}

// The hardware sheet's figures for a platform (knowledge/corpus/hardware/<id>.json).
nlohmann::json sheet_figures(const std::string& platform) {
  std::ifstream in(kevo_home() / "knowledge" / "corpus" / "hardware" / (platform + ".json"));
  const auto j = nlohmann::json::parse(in, nullptr, false);
  return j.is_object() ? j.value("figures", nlohmann::json::object()) : nlohmann::json::object();
}

class TrainiumTarget final : public Target {
 public:
  TrainiumTarget() {
    if (!model_) {
      platform_ = neuron_platform();
      check_with_ = neuron_check_mode();
    }
  }

  const TargetTraits& traits() const override { return *find_target_traits("trainium"); }

  std::string language_of(const std::filesystem::path& source) const override {
    if (source.extension() == ".py") return "nki";
    throw UserError(fmt::format("the trainium target runs .py files (NKI), not '{}' ({})",
                                source.extension().empty() ? "(no extension)" : source.extension().string(),
                                source.string()));
  }

  std::string artifact_extension() const override { return ".py"; }

  // The artifact is the source and its globals; what gives it meaning is
  // the driver (its files) and the SDK (or NumPy) it runs on.
  std::string toolchain_id(const Task&, const std::string&) override {
    const auto common = runner_dir() / "kevo_nki_job.py";
    if (model_) {
      const ModelPython& m = model_python();
      return fmt::format("nki model|{}|numpy {}|model {}", m.python, m.numpy,
                         hash_of_files({model_script(), common, model_dir() / "nki" / "__init__.py",
                                        model_dir() / "nki" / "language.py", model_dir() / "nki" / "isa.py"}));
    }
    const NeuronAvailability& a = probe_neuron();
    return fmt::format("neuron|{}|nki {}|{}|check on {}|runner {}", a.python, a.nki, platform_, check_with_,
                       hash_of_files({neuron_script(), common}));
  }

  CompileOutcome compile(const CompileRequest& req) override {
    return runner::compile_python_candidate(python(), req);
  }

  RunOutcome run(const Task& task, const std::filesystem::path& artifact, const std::vector<RunPhase>& phases,
                 const CheckFn& check, const ProgressFn& progress) override;

  std::string host_key() override {
    if (model_) return fmt::format("kevo NKI model, NumPy {} on {}", model_python().numpy, hostname());
    return fmt::format("Neuron {} NeuronCore 0, nki {} on {}", platform_, probe_neuron().nki, hostname());
  }

  std::optional<std::string> hardware_sheet() override {
    if (model_) return std::nullopt;
    return platform_;
  }

  Roof calibrate(const ProgressFn& progress, const std::vector<double>&) override {
    return model_ ? calibrate_model(progress) : roof_from_hardware_sheet(progress);
  }

  bool can_profile() override { return !model_ && !probe_neuron().explorer.empty(); }
  ProfileOutcome profile(const Task& task, const std::filesystem::path& artifact, const RunPhase& phase,
                         const std::string& source_tag) override;

  std::vector<runner::ContainmentLayer> containment() override {
    return runner::probe_containment(runner::FilterProfile::triton);
  }

 private:
  struct Job {
    std::filesystem::path dir;
    std::string nonce;
    nlohmann::json spec;
    ~Job() {
      std::error_code e;
      if (!dir.empty()) std::filesystem::remove_all(dir, e);
    }
  };

  const std::string& python() const { return model_ ? model_python().python : probe_neuron().python; }
  void make_job(Job& job, const Task& task, const std::filesystem::path& artifact,
                const std::vector<RunPhase>& phases, size_t& tensor_bytes);
  ProcessResult run_driver(const Job& job, const Task& task, const std::vector<std::string>& args,
                           size_t tensor_bytes);
  Roof calibrate_model(const ProgressFn& progress);
  Roof roof_from_hardware_sheet(const ProgressFn& progress);

  const bool model_ = model_mode();
  std::string platform_, check_with_;
  unsigned jobs_ = 0;
  const unsigned instance_ = next_instance_++;
  static inline std::atomic<unsigned> next_instance_{0};
};

Roof TrainiumTarget::calibrate_model(const ProgressFn& progress) {
  SpawnOptions opt;
  opt.argv = {model_python().python, "-B", model_script().string(), "--calibrate"};
  ProcessResult r = run_process(opt, 300, 1 << 16);
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  if (!r.exit_code || *r.exit_code != 0 || !j.is_object())
    throw UserError("the trainium target's model could not be calibrated: " + r.err.substr(0, 400));
  Roof roof;
  roof.target = "trainium";
  roof.hostname = hostname();
  roof.cpu_model = "kevo's NKI model (NumPy " + j.value("numpy", std::string("?")) + ")";
  roof.measured_at = now_iso8601();
  roof.host_key = host_key();
  roof.bandwidth.push_back({"copy", 1, j.value("copy_bytes", 0.0), j.value("copy_gbps", 0.0)});
  roof.peak.push_back({"fp32_fma", 1, j.value("fp32_gflops", 0.0)});
  if (progress)
    progress(fmt::format("NumPy copy {:.1f} GB/s, float32 matmul {:.1f} GFLOP/s (the model's rates on "
                         "this CPU, not Trainium's)",
                         roof.bandwidth.back().gbps, roof.peak.back().gflops));
  return roof;
}

// One NeuronCore's share of the chip's HBM bandwidth and bf16 rate, from the
// knowledge base's sheet: kevo does not measure a Neuron device's roof (a
// profile's Metadata gives the DMA bandwidth it was taken at, and the
// bounds prefer it).
Roof TrainiumTarget::roof_from_hardware_sheet(const ProgressFn& progress) {
  const trainium::NeuronRoof r = trainium::roof_from_sheet(sheet_figures(platform_));
  if (r.dma_bandwidth <= 0 || r.te_peak_flops <= 0)
    throw UserError(fmt::format("the knowledge base has no figures for {} (knowledge/corpus/hardware/{}.json)",
                                platform_, platform_));
  const nlohmann::json figures = sheet_figures(platform_);
  Roof roof;
  roof.target = "trainium";
  roof.hostname = hostname();
  roof.cpu_model = fmt::format("{} NeuronCore (hardware sheet, not measured)", platform_);
  roof.datasheet = fmt::format("kevo's knowledge base, hardware sheet {} (the chip's figures over its {} "
                               "NeuronCores; not measured)",
                               platform_, figures.value("neuron_cores", 0));
  roof.measured_at = now_iso8601();
  roof.host_key = host_key();
  // bytes 0: a sheet's figure, not a measurement at a working set.
  roof.bandwidth.push_back({"hbm", 1, 0, r.dma_bandwidth / 1e9});
  roof.peak.push_back({"bf16_tensor", 1, r.te_peak_flops / 1e9});
  if (const double fp32 = figures.value("fp32_tflops", 0.0), cores = figures.value("neuron_cores", 0.0);
      fp32 > 0 && cores > 0)
    roof.peak.push_back({"fp32_fma", 1, fp32 * 1e3 / cores});
  if (progress)
    progress(fmt::format("{} per NeuronCore from the hardware sheet: HBM {:.0f} GB/s, bf16 {:.1f} TFLOP/s "
                         "(not measured)",
                         platform_, r.dma_bandwidth / 1e9, r.te_peak_flops / 1e12));
  return roof;
}

void TrainiumTarget::make_job(Job& job, const Task& task, const std::filesystem::path& artifact,
                              const std::vector<RunPhase>& phases, size_t& tensor_bytes) {
  job.dir = cache_dir() / "trainium" / "jobs" / fmt::format("{}-{}-{}", getpid(), instance_, ++jobs_);
  std::error_code ec;
  std::filesystem::remove_all(job.dir, ec);
  std::filesystem::create_directories(job.dir / "files");
  std::filesystem::create_directories(job.dir / "work" / "tmp");
  const auto candidate = job.dir / "files" / "candidate.py";
  std::filesystem::copy_file(artifact, candidate, ec);
  if (ec) throw UserError(fmt::format("kevo cannot copy {}: {}", artifact.string(), ec.message()));

  // A token the candidate cannot know (the job file is out of its reach:
  // no file I/O): only result lines that carry it are the driver's.
  std::random_device rd;
  job.nonce = fmt::format("{:016x}{:08x}", (static_cast<uint64_t>(rd()) << 32) | rd(), rd());
  const Operator& op = *task.op;
  nlohmann::json& spec = job.spec;
  spec = {{"candidate", candidate.string()},
          {"scalars", task.scalars},
          {"nonce", job.nonce},
          {"work", (job.dir / "work").string()},
          {"timing",
           {{"min_time_s", task.timing.min_time_s},
            {"min_samples", task.timing.min_samples},
            {"max_samples", task.timing.max_samples},
            {"warmup_s", task.timing.warmup_s},
            {"min_warmup", task.timing.min_warmup}}},
          {"phases", nlohmann::json::array()}};
  if (!model_) {
    const NeuronAvailability& a = probe_neuron();
    spec["platform"] = platform_;
    spec["check_with"] = check_with_;
    spec["nrtpy_python"] = a.nrtpy_python;
    spec["explorer"] = a.explorer;
  }
  tensor_bytes = 0;  // the largest tensor of any phase, as fp64
  for (size_t p = 0; p < phases.size(); ++p) {
    const auto& shapes = phases[p].shapes.shapes;
    for (size_t i = 0; i < shapes.size(); ++i)
      tensor_bytes = std::max(tensor_bytes, static_cast<size_t>(numel(shapes[i])) * 8);
    nlohmann::json ph = {{"timed", phases[p].kind == RunPhase::time},
                         {"inputs", nlohmann::json::array()},
                         {"outputs", nlohmann::json::array()}};
    for (size_t i = 0; i < shapes.size(); ++i) {
      const auto path = job.dir / "work" / fmt::format("p{}_t{}.bin", p, i);
      nlohmann::json t = {{"path", path.string()},
                          {"dtype", std::string(dtype_name(task.dtypes[i]))},
                          {"shape", shapes[i]}};
      if (i < op.n_inputs()) {
        std::vector<char> data(static_cast<size_t>(numel(shapes[i])) * dtype_size(task.dtypes[i]));
        generate_input(op, i, TensorView{task.dtypes[i], shapes[i], data.data()}, phases[p].seed);
        write_file_atomic(path, data.data(), data.size());
        ph["inputs"].push_back(t);
      } else {
        ph["outputs"].push_back(t);
      }
    }
    spec["phases"].push_back(ph);
  }
  const std::string text = spec.dump();
  write_file_atomic(job.dir / "work" / "job.json", text.data(), text.size());
  const int fd = ::open((job.dir / "work" / "output").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  if (fd >= 0) ::close(fd);
}

ProcessResult TrainiumTarget::run_driver(const Job& job, const Task& task, const std::vector<std::string>& args,
                                         size_t tensor_bytes) {
  SpawnOptions opt;
  opt.argv = {runner::beside_kevo("kevo-contain").string(), "--files", (job.dir / "files").string(), "--output",
              (job.dir / "work" / "output").string(), "--work", (job.dir / "work").string()};
  for (const auto& d : model_ ? model_python().dirs : probe_neuron().dirs) {
    opt.argv.push_back("--python");
    opt.argv.push_back(d);
  }
  for (const auto& d : {model_dir(), runner_dir()}) {
    opt.argv.push_back("--python");
    opt.argv.push_back(d.string());
  }
  opt.argv.push_back("--");
  opt.argv.push_back(python());
  opt.argv.push_back("-B");
  opt.argv.push_back((model_ ? model_script() : neuron_script()).string());
  opt.argv.insert(opt.argv.end(), args.begin(), args.end());
  opt.argv.push_back((job.dir / "work" / "job.json").string());
  opt.inherit_env = false;
  opt.env = runner::runner_environment();
  for (const char* drop : {"HOME=", "TMPDIR=", "PYTHONPATH="})
    std::erase_if(opt.env, [&](const std::string& v) { return v.rfind(drop, 0) == 0; });
  opt.env.push_back("HOME=" + (job.dir / "work").string());
  opt.env.push_back("TMPDIR=" + (job.dir / "work" / "tmp").string());
  opt.env.push_back("PYTHONDONTWRITEBYTECODE=1");
  opt.env.push_back("PYTHONNOUSERSITE=1");
  // The task's allowance, the interpreter and NumPy (2 GiB; with the Neuron
  // SDK 16 GiB more: its compiler runs in the same containment), and room
  // for the largest tensor as fp64 four times over (the driver's copies).
  const int64_t runtime_mb = model_ ? 2048 : 2048 + 16384;
  opt.limits.address_space_bytes =
      (task.limits.memory_mb + runtime_mb) * (int64_t{1} << 20) + 4 * static_cast<int64_t>(tensor_bytes);
  const size_t cap = static_cast<size_t>(task.limits.output_kb) * 1024;
  return run_process(opt, task.limits.max_total_s, std::max<size_t>(cap, 1 << 20));
}

RunOutcome TrainiumTarget::run(const Task& task, const std::filesystem::path& artifact,
                               const std::vector<RunPhase>& phases, const CheckFn& check,
                               const ProgressFn& progress) {
  RunOutcome out;
  const double t0 = monotonic_seconds();
  if (model_ && !model_python().error.empty())
    throw UserError("the trainium target cannot run: " + model_python().error);
  if (!model_)
    if (const std::string why = neuron_host_summary(); !why.empty())
      throw UserError("the trainium target cannot run: " + why);
  Job job;
  size_t tensor_bytes = 0;
  make_job(job, task, artifact, phases, tensor_bytes);
  const std::string where_run =
      model_ ? "kevo's NKI model" : fmt::format("the Neuron tools ({}, checks on the {})", platform_, check_with_);
  if (progress) progress(fmt::format("running {} phase(s) in {}", phases.size(), where_run));
  ProcessResult r = run_driver(job, task, {}, tensor_bytes);
  const size_t cap = static_cast<size_t>(task.limits.output_kb) * 1024;
  out.stderr_text = (model_ ? "kevo's NumPy model of NKI: numerics and the NKI rules it enforces; times are "
                              "NumPy's on this CPU, not Trainium's\n"
                            : fmt::format("the Neuron tools on {} (kevo's runner for them is not verified on "
                                          "Trainium); times: nrtpy's device times on NeuronCore 0\n",
                                          platform_)) +
                    r.err.substr(0, cap);
  const std::string driver = model_ ? "the model" : "kevo's Neuron runner";

  // The driver's lines, in phase order.
  std::vector<nlohmann::json> results;
  std::string kernel_stdout;
  {
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      const auto j = line.empty() || line.front() != '{' ? nlohmann::json()
                                                         : nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.value("nonce", "") == job.nonce &&
          j.value("phase", -1) == static_cast<int>(results.size()))
        results.push_back(j);
      else
        kernel_stdout += line + "\n";
    }
  }
  out.stdout_text = kernel_stdout.substr(0, cap);
  const Operator& op = *task.op;
  for (size_t p = 0; p < results.size(); ++p) {
    const nlohmann::json& res = results[p];
    if (res.contains("error")) {
      const std::string kind = res.value("error", "");
      const std::string what = res.value("what", std::string("?"));
      const int line = res.value("line", 0);
      const std::string where = line > 0 ? fmt::format("line {}: ", line) : "";
      if (kind == "compile_error") {
        out.kind = RunOutcome::compile_failed;
        const std::string code = res.value("code", std::string());
        out.detail = where + (code.empty() || what.find(code) != std::string::npos ? what : code + ": " + what);
      } else {
        out.kind = RunOutcome::crashed;
        out.detail = fmt::format("{} on {}: {}{}", kind == "load_error" ? "cannot load the candidate"
                                                   : kind == "wrong_output" ? "wrong outputs"
                                                                            : "kevo_nki raised",
                                 phases[p].label, where, what);
      }
      out.seconds = monotonic_seconds() - t0;
      return out;
    }
    if (phases[p].kind == RunPhase::time) {
      for (const auto& s : res.value("samples", std::vector<double>{})) out.samples_s.push_back(s);
      out.warmup_calls = task.timing.min_warmup;
      continue;
    }
    // A check: the outputs the driver wrote, against kevo's reference.
    const auto& shapes = phases[p].shapes.shapes;
    std::vector<std::vector<char>> data;
    std::vector<ConstTensorView> views;
    for (size_t i = op.n_inputs(); i < shapes.size(); ++i) {
      const size_t bytes = static_cast<size_t>(numel(shapes[i])) * dtype_size(task.dtypes[i]);
      data.emplace_back(bytes);
      std::ifstream in(job.dir / "work" / fmt::format("p{}_t{}.bin", p, i), std::ios::binary);
      in.read(data.back().data(), static_cast<std::streamsize>(bytes));
      if (static_cast<size_t>(in.gcount()) != bytes) {
        out.kind = RunOutcome::crashed;
        out.detail = fmt::format("{} wrote no complete output {} on {}", driver, op.tensor(i).name, phases[p].label);
        out.seconds = monotonic_seconds() - t0;
        return out;
      }
    }
    for (size_t i = op.n_inputs(), o = 0; i < shapes.size(); ++i, ++o)
      views.emplace_back(task.dtypes[i], shapes[i], data[o].data());
    CheckReport report = check(p, views);
    const bool passed = report.passed;
    out.checks.push_back(std::move(report));
    if (!passed) {
      out.kind = RunOutcome::check_failed;
      out.seconds = monotonic_seconds() - t0;
      return out;
    }
  }
  if (results.size() < phases.size()) {
    out.kind = r.timed_out ? RunOutcome::timed_out : RunOutcome::crashed;
    if (r.timed_out)
      out.detail = fmt::format("{} did not finish within {:.0f} s", driver, task.limits.max_total_s);
    else if (r.signal)
      out.detail = fmt::format("{} was killed by {}", driver, signal_description(r.signal));
    else {
      std::string tail = r.err.size() > 600 ? "..." + r.err.substr(r.err.size() - 600) : r.err;
      out.detail = fmt::format("{} stopped on {} without a result (exit {}){}", driver,
                               phases[results.size()].label, r.exit_code ? *r.exit_code : -1,
                               tail.empty() ? "" : ": " + tail);
    }
  }
  out.seconds = monotonic_seconds() - t0;
  return out;
}

ProfileOutcome TrainiumTarget::profile(const Task& task, const std::filesystem::path& artifact,
                                       const RunPhase& phase, const std::string&) {
  ProfileOutcome out;
  const double t0 = monotonic_seconds();
  if (model_) {
    out.note = "kevo's NKI model has no profiler (KEVO_NKI_MODEL=1)";
    return out;
  }
  Job job;
  size_t tensor_bytes = 0;
  make_job(job, task, artifact, {phase}, tensor_bytes);
  ProcessResult r = run_driver(job, task, {"--profile"}, tensor_bytes);
  out.seconds = monotonic_seconds() - t0;
  nlohmann::json res;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    const auto j = line.empty() || line.front() != '{' ? nlohmann::json() : nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("nonce", "") == job.nonce) res = j;
  }
  if (!res.is_object() || !res.contains("profile")) {
    std::string why = res.is_object() ? res.value("what", std::string("?"))
                                      : (r.err.size() > 400 ? "..." + r.err.substr(r.err.size() - 400) : r.err);
    out.note = "the Neuron profile could not be taken: " + why;
    return out;
  }
  std::ifstream in(res["profile"].get<std::string>());
  const auto doc = nlohmann::json::parse(in, nullptr, false);
  try {
    const trainium::NeuronProfile p = trainium::parse_neuron_profile(doc);
    const trainium::NeuronBounds b = trainium::neuron_bounds(p, trainium::roof_from_sheet(sheet_figures(platform_)));
    const trainium::NeuronVerdict v = trainium::classify(p, b);
    out.metrics = trainium::neuron_metrics(b);
    out.metrics.push_back({"profile.neuron_s", out.seconds, "s", 0});
    out.bottleneck = v.kind;
    out.why = v.why;
    if (doc.is_object() && doc.contains("note")) out.why += " (" + doc["note"].get<std::string>() + ")";
    out.ok = true;
  } catch (const UserError& e) {
    out.note = std::string("kevo cannot read the Neuron profile: ") + e.what();
  }
  return out;
}

}  // namespace

std::unique_ptr<Target> make_trainium_target() { return std::make_unique<TrainiumTarget>(); }

std::string trainium_unavailable_reason() {
  if (!model_mode()) {
    try {
      neuron_platform();
      neuron_check_mode();
    } catch (const UserError& e) {
      return e.what();
    }
    return neuron_host_summary();
  }
  const ModelPython& m = model_python();
  if (!m.error.empty()) return m.error;
  if (!std::filesystem::exists(runner::beside_kevo("kevo-contain")))
    return "kevo-contain not found next to kevo (" + runner::beside_kevo("kevo-contain").string() + ")";
  return "";
}

}  // namespace kevo
