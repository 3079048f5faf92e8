// The trainium target in kevo's NumPy model of NKI (KEVO_NKI_MODEL=1): each
// run writes the phases' inputs (kevo's own generator) into a job folder and
// runs targets/trainium/model/kevo_nki_model.py once under kevo-contain
// (network namespace, Landlock, system-call filter); the model runs the
// candidate phase by phase, writes its outputs, and answers one line per
// phase, which kevo checks against its CPU reference. A rule of NKI the
// model sees broken is the candidate's compile error, with its line.
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

namespace kevo {

namespace {

std::filesystem::path model_dir() { return kevo_home() / "targets" / "trainium" / "model"; }
std::filesystem::path model_script() { return model_dir() / "kevo_nki_model.py"; }

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
      SpawnOptions opt;
      opt.argv = {py, "-B", "-c",
                  "import json, sys\n"
                  "import numpy\n"
                  "print(json.dumps({'numpy': numpy.__version__, 'dirs': sorted(set([sys.prefix, "
                  "sys.base_prefix, sys.exec_prefix] + [p for p in sys.path if p]))}))\n"};
      try {
        ProcessResult r = run_process(opt, 60, 1 << 20);
        const auto j = nlohmann::json::parse(r.out, nullptr, false);
        if (r.exit_code && *r.exit_code == 0 && j.is_object()) {
          m.python = py;
          m.numpy = j.value("numpy", "");
          m.dirs = j.value("dirs", std::vector<std::string>{});
          return;
        }
        std::string err = r.err;
        if (const auto nl = err.find_last_of('\n', err.size() > 1 ? err.size() - 2 : 0);
            nl != std::string::npos && nl + 1 < err.size())
          err = err.substr(nl + 1);
        why.push_back(fmt::format("{}: {}", py, err.empty() ? "cannot import numpy" : err));
      } catch (const UserError& e) {
        why.push_back(fmt::format("{}: {}", py, e.what()));
      }
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

class TrainiumModelTarget final : public Target {
 public:
  const TargetTraits& traits() const override { return *find_target_traits("trainium"); }

  std::string language_of(const std::filesystem::path& source) const override {
    if (source.extension() == ".py") return "nki";
    throw UserError(fmt::format("the trainium target runs .py files (NKI), not '{}' ({})",
                                source.extension().empty() ? "(no extension)" : source.extension().string(),
                                source.string()));
  }

  std::string artifact_extension() const override { return ".py"; }

  // The artifact is the source and its globals; what gives it meaning here
  // is the model (its files) and NumPy.
  std::string toolchain_id(const Task&, const std::string&) override {
    const ModelPython& m = model_python();
    return fmt::format("nki model|{}|numpy {}|model {}", m.python, m.numpy,
                       hash_of_files({model_script(), model_dir() / "nki" / "__init__.py",
                                      model_dir() / "nki" / "language.py", model_dir() / "nki" / "isa.py"}));
  }

  CompileOutcome compile(const CompileRequest& req) override {
    return runner::compile_python_candidate(model_python().python, req);
  }

  RunOutcome run(const Task& task, const std::filesystem::path& artifact, const std::vector<RunPhase>& phases,
                 const CheckFn& check, const ProgressFn& progress) override;

  std::string host_key() override {
    return fmt::format("kevo NKI model, NumPy {} on {}", model_python().numpy, hostname());
  }

  Roof calibrate(const ProgressFn& progress, const std::vector<double>&) override {
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

  std::vector<runner::ContainmentLayer> containment() override {
    return runner::probe_containment(runner::FilterProfile::triton);
  }

 private:
  unsigned jobs_ = 0;
  const unsigned instance_ = next_instance_++;
  static inline std::atomic<unsigned> next_instance_{0};
};

RunOutcome TrainiumModelTarget::run(const Task& task, const std::filesystem::path& artifact,
                                    const std::vector<RunPhase>& phases, const CheckFn& check,
                                    const ProgressFn& progress) {
  RunOutcome out;
  const double t0 = monotonic_seconds();
  const ModelPython& py = model_python();
  if (!py.error.empty()) throw UserError("the trainium target cannot run: " + py.error);
  const auto dir = cache_dir() / "trainium" / "jobs" / fmt::format("{}-{}-{}", getpid(), instance_, ++jobs_);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir / "files");
  std::filesystem::create_directories(dir / "work" / "tmp");
  struct Remove {
    std::filesystem::path p;
    ~Remove() {
      std::error_code e;
      std::filesystem::remove_all(p, e);
    }
  } remove_after{dir};
  const auto candidate = dir / "files" / "candidate.py";
  std::filesystem::copy_file(artifact, candidate, ec);
  if (ec) throw UserError(fmt::format("kevo cannot copy {}: {}", artifact.string(), ec.message()));

  // A token the candidate cannot know (the job file is out of its reach:
  // no file I/O): only result lines that carry it are the model's.
  std::random_device rd;
  const std::string nonce = fmt::format("{:016x}{:08x}", (static_cast<uint64_t>(rd()) << 32) | rd(), rd());
  const Operator& op = *task.op;
  nlohmann::json job = {{"candidate", candidate.string()},
                        {"scalars", task.scalars},
                        {"nonce", nonce},
                        {"timing",
                         {{"min_time_s", task.timing.min_time_s},
                          {"min_samples", task.timing.min_samples},
                          {"max_samples", task.timing.max_samples},
                          {"warmup_s", task.timing.warmup_s},
                          {"min_warmup", task.timing.min_warmup}}},
                        {"phases", nlohmann::json::array()}};
  size_t tensor_bytes = 0;  // the largest tensor of any phase, as fp64
  for (size_t p = 0; p < phases.size(); ++p) {
    const auto& shapes = phases[p].shapes.shapes;
    for (size_t i = 0; i < shapes.size(); ++i)
      tensor_bytes = std::max(tensor_bytes, static_cast<size_t>(numel(shapes[i])) * 8);
    nlohmann::json ph = {{"timed", phases[p].kind == RunPhase::time},
                         {"inputs", nlohmann::json::array()},
                         {"outputs", nlohmann::json::array()}};
    for (size_t i = 0; i < shapes.size(); ++i) {
      const auto path = dir / "work" / fmt::format("p{}_t{}.bin", p, i);
      nlohmann::json spec = {{"path", path.string()},
                             {"dtype", std::string(dtype_name(task.dtypes[i]))},
                             {"shape", shapes[i]}};
      if (i < op.n_inputs()) {
        std::vector<char> data(static_cast<size_t>(numel(shapes[i])) * dtype_size(task.dtypes[i]));
        generate_input(op, i, TensorView{task.dtypes[i], shapes[i], data.data()}, phases[p].seed);
        write_file_atomic(path, data.data(), data.size());
        ph["inputs"].push_back(spec);
      } else {
        ph["outputs"].push_back(spec);
      }
    }
    job["phases"].push_back(ph);
  }
  const std::string job_text = job.dump();
  write_file_atomic(dir / "work" / "job.json", job_text.data(), job_text.size());
  {
    const int fd = ::open((dir / "work" / "output").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    if (fd >= 0) ::close(fd);
  }
  if (progress) progress(fmt::format("running {} phase(s) in kevo's NKI model", phases.size()));

  SpawnOptions opt;
  opt.argv = {runner::beside_kevo("kevo-contain").string(), "--files", (dir / "files").string(), "--output",
              (dir / "work" / "output").string(), "--work", (dir / "work").string()};
  for (const auto& d : py.dirs) {
    opt.argv.push_back("--python");
    opt.argv.push_back(d);
  }
  opt.argv.push_back("--python");
  opt.argv.push_back(model_dir().string());
  opt.argv.push_back("--");
  opt.argv.push_back(py.python);
  opt.argv.push_back("-B");
  opt.argv.push_back(model_script().string());
  opt.argv.push_back((dir / "work" / "job.json").string());
  opt.inherit_env = false;
  opt.env = runner::runner_environment();
  for (const char* drop : {"HOME=", "TMPDIR=", "PYTHONPATH="})
    std::erase_if(opt.env, [&](const std::string& v) { return v.rfind(drop, 0) == 0; });
  opt.env.push_back("HOME=" + (dir / "work").string());
  opt.env.push_back("TMPDIR=" + (dir / "work" / "tmp").string());
  opt.env.push_back("PYTHONDONTWRITEBYTECODE=1");
  opt.env.push_back("PYTHONNOUSERSITE=1");
  // The task's allowance, the interpreter and NumPy (2 GiB), and room for
  // the largest tensor as fp64 four times over (the model's temporaries).
  opt.limits.address_space_bytes = (task.limits.memory_mb + 2048) * (int64_t{1} << 20) +
                                   4 * static_cast<int64_t>(tensor_bytes);
  const size_t cap = static_cast<size_t>(task.limits.output_kb) * 1024;
  ProcessResult r = run_process(opt, task.limits.max_total_s, std::max<size_t>(cap, 1 << 20));
  out.stderr_text = "kevo's NumPy model of NKI: numerics and the NKI rules it enforces; times are "
                    "NumPy's on this CPU, not Trainium's\n" +
                    r.err.substr(0, cap);

  // The model's lines, in phase order.
  std::vector<nlohmann::json> results;
  std::string kernel_stdout;
  {
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      const auto j = line.empty() || line.front() != '{' ? nlohmann::json()
                                                         : nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.value("nonce", "") == nonce && j.value("phase", -1) == static_cast<int>(results.size()))
        results.push_back(j);
      else
        kernel_stdout += line + "\n";
    }
  }
  out.stdout_text = kernel_stdout.substr(0, cap);
  for (size_t p = 0; p < results.size(); ++p) {
    const nlohmann::json& res = results[p];
    if (res.contains("error")) {
      const std::string kind = res.value("error", "");
      const std::string what = res.value("what", std::string("?"));
      const int line = res.value("line", 0);
      const std::string where = line > 0 ? fmt::format("line {}: ", line) : "";
      if (kind == "compile_error") {
        out.kind = RunOutcome::compile_failed;
        out.detail = where + what;
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
    // A check: the outputs the model wrote, against kevo's reference.
    const auto& shapes = phases[p].shapes.shapes;
    std::vector<std::vector<char>> data;
    std::vector<ConstTensorView> views;
    for (size_t i = op.n_inputs(); i < shapes.size(); ++i) {
      const size_t bytes = static_cast<size_t>(numel(shapes[i])) * dtype_size(task.dtypes[i]);
      data.emplace_back(bytes);
      std::ifstream in(dir / "work" / fmt::format("p{}_t{}.bin", p, i), std::ios::binary);
      in.read(data.back().data(), static_cast<std::streamsize>(bytes));
      if (static_cast<size_t>(in.gcount()) != bytes) {
        out.kind = RunOutcome::crashed;
        out.detail = fmt::format("the model wrote no complete output {} on {}", op.tensor(i).name, phases[p].label);
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
      out.detail = fmt::format("the model did not finish within {:.0f} s", task.limits.max_total_s);
    else if (r.signal)
      out.detail = fmt::format("the model was killed by {}", signal_description(r.signal));
    else {
      std::string tail = r.err.size() > 600 ? "..." + r.err.substr(r.err.size() - 600) : r.err;
      out.detail = fmt::format("the model stopped on {} without a result (exit {}){}",
                               phases[results.size()].label, r.exit_code ? *r.exit_code : -1,
                               tail.empty() ? "" : ": " + tail);
    }
  }
  out.seconds = monotonic_seconds() - t0;
  return out;
}

}  // namespace

std::unique_ptr<Target> make_trainium_target() { return std::make_unique<TrainiumModelTarget>(); }

std::string trainium_unavailable_reason() {
  if (!model_mode()) return neuron_host_summary();
  const ModelPython& m = model_python();
  if (!m.error.empty()) return m.error;
  if (!std::filesystem::exists(runner::beside_kevo("kevo-contain")))
    return "kevo-contain not found next to kevo (" + runner::beside_kevo("kevo-contain").string() + ")";
  return "";
}

}  // namespace kevo
