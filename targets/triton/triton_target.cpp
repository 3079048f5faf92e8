// The triton target: candidates are Python files with @triton.jit kernels and
// a kevo_launch(inputs, outputs, scalars) over torch tensors. kevo's compile
// step checks the Python and writes the artifact (the source, then one line
// with its knob values and the task's shape constants, which the runner makes
// the module's globals); Triton compiles the kernels in the runner at their
// first call, and a Triton compile error comes back as the candidate's
// compile error. kevo-triton-runner processes (targets/triton/runner), one per
// GPU, started under kevo-contain, load and run the candidates with the
// protocol and the timing method of kevo-cuda-runner. A runner that crashed,
// hung, lost its CUDA context or had its timer tampered with is replaced by a
// fresh one at the next candidate.
#include "targets/triton/triton_target.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/defined_operator.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/paths.h"
#include "core/process.h"
#include "targets/cuda/reports.h"
#include "targets/runner/gpu_host.h"
#include "targets/runner/host_loop.h"
#include "targets/runner/protocol.h"
#include "targets/runner/python_candidate.h"

namespace kevo {

namespace {

using runner::beside_kevo;

std::filesystem::path runner_script() {
  return kevo_home() / "targets" / "triton" / "runner" / "kevo_triton_runner.py";
}

bool interpreting() {
  const char* v = std::getenv("KEVO_TRITON_INTERPRET");
  return v && std::string(v) == "1";
}

// What the interpreter says of itself: versions, whether torch sees a GPU,
// and its directories (for Landlock). Asked once per process.
struct PythonInfo {
  std::string error;  // why it cannot run Triton, "" when it can
  std::string python, torch, triton;
  bool cuda = false;
  std::vector<std::string> dirs;
};

const PythonInfo& python_info() {
  static std::once_flag once;
  static PythonInfo info;
  std::call_once(once, [] {
    info.python = triton_python();
    const runner::PythonAnswer a = runner::ask_python(
        info.python,
        {"-c", fmt::format("import json, sys\n"
                           "try:\n"
                           "    import torch, triton\n"
                           "except Exception as e:\n"
                           "    print(json.dumps({{'error': '%s: %s' % (type(e).__name__, e)}})); sys.exit(0)\n"
                           "print(json.dumps({{'torch': torch.__version__, 'triton': triton.__version__,\n"
                           "    'cuda': torch.cuda.is_available(), 'version': sys.version.split()[0],\n"
                           "    'dirs': {}}}))\n",
                           runner::kPythonDirs)});
    const nlohmann::json& j = a.facts;
    if (!a.error.empty()) {
      info.error = "it could not be asked about torch and Triton: " + a.error;
      return;
    }
    if (j.contains("error")) {
      info.error = fmt::format("{} cannot import torch and Triton ({}): set KEVO_PYTHON to a "
                               "Python that can, or run scripts/setup.sh triton",
                               info.python, j["error"].get<std::string>());
      return;
    }
    info.torch = j.value("torch", "");
    info.triton = j.value("triton", "");
    info.cuda = j.value("cuda", false);
    info.python += " " + j.value("version", std::string());
    info.dirs = j.value("dirs", std::vector<std::string>{});
  });
  return info;
}

// One GPU (or, under the interpreter, the CPU) and the runner that owns it.
struct Slot {
  int device = 0;
  std::unique_ptr<ChildProcess> child;
  std::unique_ptr<EventReader> events;
  nlohmann::json info;
  std::filesystem::path output_path;
  std::filesystem::path files_dir;  // candidates, linked in for their job (read only)
  std::filesystem::path work_dir;   // the runner's scratch: Triton's cache, temporary files
  unsigned long jobs = 0;
  bool busy = false;

  bool alive() { return child && events && events->open() && !child->try_wait(); }
  void stop() {
    if (child) child->kill_group();
    child.reset();
    events.reset();
    // Triton's cache goes with the runner: what one runner's candidates
    // wrote there is never another runner's.
    std::error_code ec;
    if (!work_dir.empty()) std::filesystem::remove_all(work_dir, ec);
  }
};

class TritonTarget final : public Target, private runner::RunnerSlots<Slot> {
 public:
  TritonTarget() { signal(SIGPIPE, SIG_IGN); }
  ~TritonTarget() override {
    for (auto& s : slots_) {
      if (s->alive()) write_line(s->child->stdin_fd(), "quit");
      s->stop();
      std::error_code ec;
      std::filesystem::remove(s->output_path, ec);
      std::filesystem::remove_all(s->files_dir, ec);
    }
  }

  const TargetTraits& traits() const override { return *find_target_traits("triton"); }

  std::optional<std::string> hardware_sheet() override {
    const std::string key = host_key();
    for (const char* gpu : {"H200", "H100", "A100"})
      if (key.find(gpu) != std::string::npos) {
        std::string id = gpu;
        id[0] = static_cast<char>(std::tolower(id[0]));
        return id;
      }
    return std::nullopt;
  }

  std::string language_of(const std::filesystem::path& source) const override {
    if (source.extension() == ".py") return "triton";
    throw UserError(fmt::format("the triton target runs .py files, not '{}' ({})",
                                source.extension().empty() ? "(no extension)" : source.extension().string(),
                                source.string()));
  }

  std::string artifact_extension() const override { return ".py"; }

  // The artifact is the source and its globals: what changes it is the
  // interpreter, torch, Triton and the runner that gives it meaning.
  std::string toolchain_id(const Task&, const std::string&) override {
    const PythonInfo& p = python_info();
    std::ifstream in(runner_script(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return fmt::format("{}|torch {}|triton {}|runner {}|{}", p.python, p.torch, p.triton,
                       sha256_hex(text.str()).substr(0, 16), interpreting() ? "interpreter" : "gpu");
  }

  // Checks the Python (a syntax error is the candidate's compile error, with
  // its line) and writes the artifact: the source, then the globals line.
  CompileOutcome compile(const CompileRequest& req) override {
    return runner::compile_python_candidate(triton_python(), req);
  }

  RunOutcome run(const Task& task, const std::filesystem::path& artifact,
                 const std::vector<RunPhase>& phases, const CheckFn& check,
                 const ProgressFn& progress) override;

  std::string host_key() override {
    std::lock_guard<std::mutex> lock(mutex_);
    ensure_slots_locked();
    const nlohmann::json& info = slots_.front()->info;
    return fmt::format("{} (cc {}) x{}", info.value("name", std::string("GPU")),
                       info.value("cc", std::string("?")), slots_.size());
  }

  Roof calibrate(const ProgressFn& progress, const std::vector<double>& sizes) override;

  int run_slots() override {
    std::lock_guard<std::mutex> lock(mutex_);
    ensure_slots_locked();
    return static_cast<int>(slots_.size());
  }

  bool can_profile() override { return !interpreting() && ncu_.has_value(); }

  std::vector<runner::ContainmentLayer> containment() override {
    std::vector<runner::ContainmentLayer> layers =
        runner::probe_containment(runner::FilterProfile::triton);
    if (runner::cuda_filter_disabled())
      for (auto& l : layers)
        if (l.name == "seccomp" || l.name == "network namespace" || l.name == "landlock")
          l = {l.name, false, "KEVO_CUDA_NO_FILTER=1"};
    return layers;
  }

  ProfileOutcome profile(const Task& task, const std::filesystem::path& artifact,
                         const RunPhase& phase, const std::string& source_tag) override;

 private:
  // The runner's environment: the runners' allowlist, and its scratch for
  // Triton's cache, its home and temporary files.
  static std::vector<std::string> runner_env(const std::filesystem::path& work) {
    std::vector<std::string> env = runner::runner_environment();
    for (const char* drop : {"TRITON_INTERPRET=", "HOME=", "TMPDIR="})
      std::erase_if(env, [&](const std::string& v) { return v.rfind(drop, 0) == 0; });
    env.push_back("TRITON_CACHE_DIR=" + (work / "cache").string());
    env.push_back("TRITON_HOME=" + work.string());
    env.push_back("HOME=" + work.string());
    env.push_back("TMPDIR=" + (work / "tmp").string());
    env.push_back("PYTHONDONTWRITEBYTECODE=1");
    env.push_back("PYTHONNOUSERSITE=1");
    if (interpreting()) env.push_back("TRITON_INTERPRET=1");
    return env;
  }

  void ensure_slots_locked() {
    if (!slots_.empty()) return;
    auto first = std::make_unique<Slot>();
    start_runner(*first);
    const int count = interpreting() ? 1 : first->info.value("device_count", 1);
    slots_.push_back(std::move(first));
    for (int d = 1; d < count; ++d) {
      auto s = std::make_unique<Slot>();
      s->device = d;
      slots_.push_back(std::move(s));
    }
  }

  std::filesystem::path slot_dir(int device) const {
    return cache_dir() / "triton" / "runners" /
           fmt::format("{}-{}-{}@{}", getpid(), instance_, device, hostname());
  }

  void start_runner(Slot& s) {
    const PythonInfo& py = python_info();
    if (!py.error.empty()) throw UserError("the triton target cannot start: " + py.error);
    s.stop();
    std::filesystem::path shm = std::filesystem::exists("/dev/shm") ? std::filesystem::path("/dev/shm")
                                                                    : std::filesystem::temp_directory_path();
    s.output_path = shm / fmt::format("kevo-triton-{}-{}-{}.out", getpid(), instance_, s.device);
    const auto root = slot_dir(s.device);
    s.files_dir = root / "files";
    s.work_dir = root / fmt::format("work-{}", ++restarts_);
    std::error_code ec;
    std::filesystem::remove_all(s.files_dir, ec);
    std::filesystem::create_directories(s.files_dir);
    std::filesystem::create_directories(s.work_dir / "cache");
    std::filesystem::create_directories(s.work_dir / "tmp");
    {  // made here: the runner may write it, not create it
      const int fd = open(s.output_path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd < 0)
        throw UserError(fmt::format("kevo cannot create {}: {}", s.output_path.string(),
                                    std::strerror(errno)));
      close(fd);
    }
    try {
      spawn_runner(s, {});
    } catch (const UserError& confined) {
      // The interpreter or the driver did not start under Landlock: once
      // more without it, saying why in every evaluation's stderr.
      try {
        spawn_runner(s, {"--no-landlock",
                         fmt::format("the runner did not start under it: {}", confined.what())});
      } catch (const UserError&) {
        throw confined;
      }
    }
  }

  void spawn_runner(Slot& s, const std::vector<std::string>& extra) {
    if (s.child) s.child->kill_group();
    s.child.reset();
    s.events.reset();
    const PythonInfo& py = python_info();
    const runner::EventPipe ev = runner::make_event_pipe();
    SpawnOptions opt;
    opt.argv = {beside_kevo("kevo-contain").string(), "--files", s.files_dir.string(), "--output",
                s.output_path.string(), "--work", s.work_dir.string()};
    for (const auto& d : py.dirs) {
      opt.argv.push_back("--python");
      opt.argv.push_back(d);
    }
    for (const auto& p : {runner_script().parent_path(), beside_kevo("libkevo-inputs.so")}) {
      opt.argv.push_back("--python");
      opt.argv.push_back(p.string());
    }
    opt.argv.insert(opt.argv.end(), extra.begin(), extra.end());
    if (runner::cuda_filter_disabled()) {
      opt.argv.push_back("--no-filter");
      opt.argv.push_back("KEVO_CUDA_NO_FILTER=1");
    }
    opt.argv.push_back("--");
    for (const std::string& a : {triton_python(), std::string("-B"), runner_script().string(),
                                 std::string("--device"), std::to_string(s.device),
                                 std::string("--inputs-lib"), beside_kevo("libkevo-inputs.so").string()})
      opt.argv.push_back(a);
    opt.inherit_env = false;
    opt.env = runner_env(s.work_dir);
    opt.extra_fds = {ev.write_fd};
    opt.limits.file_size_bytes = -1;
    try {
      s.child = spawner_.spawn(opt);
    } catch (...) {
      close(ev.read_fd);
      close(ev.write_fd);
      throw;
    }
    close(ev.write_fd);
    s.events = std::make_unique<EventReader>(ev.read_fd);
    CappedBuffer so(65536), se(65536);
    double deadline = monotonic_seconds() + 180;
    const runner::LoopEnd end = runner::pump_events(
        *s.child, *s.events, so, se, deadline, deadline, [&](const nlohmann::json& e, double&) {
          const std::string kind = e.value("event", "");
          if (kind == "ready") {
            s.info = e.value("info", nlohmann::json::object());
            return true;
          }
          if (kind == "setup_error") {
            const std::string what = e.value("what", std::string("?"));
            s.child->kill_group();
            throw UserError(fmt::format("the triton target cannot start on device {}: {}", s.device, what));
          }
          return false;
        });
    if (end == runner::LoopEnd::settled) return;
    const bool timed_out = end != runner::LoopEnd::closed;
    s.child->kill_group();
    std::string err = se.text();
    if (err.size() > 2000) err = "..." + err.substr(err.size() - 2000);
    throw UserError(fmt::format("the triton runner for device {} {}{}", s.device,
                                timed_out ? "did not start within 180 s" : "exited at start",
                                err.empty() ? "" : ": " + err));
  }


  void retire_runners() override { retire_idle(); }

  // The GPU runs nothing else while a job holds its slot.
  Lease lease() {
    return Lease(*this, [this] { ensure_slots_locked(); });
  }

  // The job line for `artifact` on `phases`: the runner protocol's job, and
  // what a runner without kevo's operator registry needs (the number of
  // inputs, the tensors' names).
  static nlohmann::json job_json(const Task& task, const std::string& artifact,
                                 const std::vector<runner::Phase>& phases, const std::string& output) {
    runner::Job job;
    job.mode = "kernel";
    job.artifact = artifact;
    job.entry = "kevo_launch";
    job.op = std::string(task.op->name());
    job.op_definition = operator_definition(*task.op);
    job.dtype = task.dtype;
    job.dtypes = task.dtypes;
    job.scalars = task.scalars;
    job.phases = phases;
    job.timing = task.timing;
    job.output_path = output;
    nlohmann::json j = job.to_json();
    j["n_inputs"] = task.op->n_inputs();
    nlohmann::json names = nlohmann::json::array();
    for (const auto& t : task.op->tensors()) names.push_back(t.name);
    j["tensor_names"] = names;
    return j;
  }

  const std::optional<std::filesystem::path> ncu_ =
      runner::find_program("ncu", "KEVO_NCU", runner::cuda_bins());
  runner::Spawner spawner_;  // the destructor stops the runners before it goes
  unsigned restarts_ = 0;
  const unsigned instance_ = next_instance_++;
  static inline std::atomic<unsigned> next_instance_{0};
};

RunOutcome TritonTarget::run(const Task& task, const std::filesystem::path& artifact,
                             const std::vector<RunPhase>& phases, const CheckFn& check,
                             const ProgressFn& progress) {
  Lease held = lease();
  Slot& slot = held.slot;
  const double start = monotonic_seconds();
  if (!slot.alive()) start_runner(slot);
  // The candidate where the runner may read it, under a name of this job
  // (Triton reads a kernel's source from its file), removed when it ends.
  const auto linked = slot.files_dir / fmt::format("candidate_{}.py", ++slot.jobs);
  {
    std::error_code ec;
    std::filesystem::remove(linked, ec);
    std::filesystem::copy_file(artifact, linked, ec);
    if (ec)
      throw UserError(fmt::format("kevo cannot put {} where the triton runner reads it ({}): {}",
                                  artifact.string(), linked.string(), ec.message()));
  }
  struct Unlink {
    std::filesystem::path path;
    ~Unlink() {
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
  } unlink_after{linked};
  std::vector<runner::Phase> job_phases;
  for (const auto& p : phases) job_phases.push_back({p.kind == RunPhase::time, p.shapes.shapes, p.seed});

  const size_t cap = static_cast<size_t>(task.limits.output_kb) * 1024;
  CappedBuffer so(cap), se(cap);
  {
    CappedBuffer drop(1);
    slot.child->drain(drop, drop);
  }
  write_line(slot.child->stdin_fd(),
             job_json(task, linked.string(), job_phases, slot.output_path.string()).dump());

  runner::JobLoop loop;
  loop.start = start;
  // The first call compiles the kernels: Triton's compile counts as progress
  // only when it ends, so the first step may also take the compile timeout.
  loop.first_deadline = monotonic_seconds() + task.limits.timeout_s + task.limits.compile_timeout_s;
  loop.timeout_s = task.limits.timeout_s;
  loop.max_total_s = task.limits.max_total_s + task.limits.compile_timeout_s;
  loop.load_error = "cannot load the candidate";
  loop.setup_error = "runner setup failed";
  bool retire = false;
  loop.finish = [&](runner::LoopEnd end, RunOutcome& out) {
    if (end == runner::LoopEnd::settled) {
      if (retire) slot.stop();
      return;
    }
    if (end == runner::LoopEnd::closed) {
      slot.child->wait();
      out.detail = runner::describe_exit(*slot.child);
      out.kind = RunOutcome::crashed;
    } else if (end == runner::LoopEnd::no_progress) {
      out.detail = fmt::format(
          "no progress within {:.1f} s (the kernel hangs or is far too slow); the runner was "
          "restarted",
          task.limits.timeout_s);
    }
    slot.stop();
  };

  runner::KernelJob kernel;
  kernel.task = &task;
  kernel.phases = &phases;
  kernel.check = check;
  kernel.progress = progress;
  kernel.outputs = [&](size_t, size_t bytes) { return runner::map_outputs(slot.output_path, bytes); };
  kernel.timing_timeout = [&](const nlohmann::json& e, const RunPhase&) {
    return runner::gpu_timing_timeout(task, e);
  };
  kernel.overrun_offset = false;
  const runner::JobEventFn kernel_event = runner::kernel_events(kernel);
  auto phase_label = [&](const nlohmann::json& e) {
    size_t ph = e.value("phase", size_t{0});
    return ph < phases.size() ? phases[ph].label : std::string("?");
  };
  auto on_event = [&](const nlohmann::json& e, RunOutcome& out, double& timeout_s) {
    const std::string kind = e.value("event", "");
    const std::string what = e.value("what", std::string("?"));
    if (kind == "compiled") return runner::Reply::go_on;  // the first call ended
    if (kind == "compile_error") {
      const int line = e.value("line", 0);
      out.kind = RunOutcome::compile_failed;
      out.detail = line > 0 ? fmt::format("line {}: {}", line, what) : what;
      return runner::Reply::settled;
    }
    if (kind == "exception") {
      out.kind = RunOutcome::crashed;
      out.detail = fmt::format("kevo_launch raised on {}: {}", phase_label(e), what);
      return runner::Reply::settled;
    }
    if (kind == "tampered") {
      out.kind = RunOutcome::crashed;
      out.detail = fmt::format(
          "the candidate changed {}, which the runner times and checks with; its results are "
          "void and the runner was replaced",
          what);
      retire = true;
      return runner::Reply::settled;
    }
    if (kind == "cuda_error") {
      const bool sticky = e.value("sticky", false);
      out.kind = RunOutcome::crashed;
      out.detail = fmt::format("CUDA error on {}: {}{}", phase_label(e), what,
                               sticky ? " (sticky: the context was lost; the runner is restarted)" : "");
      retire = sticky;
      return runner::Reply::settled;
    }
    if (kind == "input_written") {
      out.kind = RunOutcome::crashed;
      out.detail =
          fmt::format("wrote to input '{}' ({} words changed) on {}: inputs are read-only",
                      e.value("tensor", std::string("?")), e.value("words", 0), phase_label(e));
      return runner::Reply::settled;
    }
    return kernel_event(e, out, timeout_s);
  };
  RunOutcome out = runner::drive_job(*slot.child, *slot.events, so, se, loop, on_event);
  return out;
}

Roof TritonTarget::calibrate(const ProgressFn& progress, const std::vector<double>& only_sizes) {
  Lease held = lease();
  Slot& slot = held.slot;
  if (!slot.alive()) start_runner(slot);
  runner::Job job;
  job.mode = "calibrate";
  job.op = "gemm";
  job.min_point_s = 0.2;
  std::vector<double> sizes = {256.0 * (1 << 20), 1024.0 * (1 << 20), 4096.0 * (1 << 20)};
  if (interpreting()) sizes = {64.0 * (1 << 20)};
  if (!only_sizes.empty()) sizes = only_sizes;
  for (double s : sizes) job.points.push_back({"copy", 1, s});
  job.points.push_back({"bf16_tensor", 1, interpreting() ? 1024.0 : 8192.0});
  job.points.push_back({"fp32_fma", 1, interpreting() ? 1024.0 : 8192.0});
  const std::string gpu = slot.info.value("name", std::string("GPU"));
  Roof roof;
  roof.target = "triton";
  roof.hostname = hostname();
  roof.cpu_model = gpu;
  roof.ncpu = static_cast<int>(slots_.size());
  roof.measured_at = now_iso8601();
  write_line(slot.child->stdin_fd(), job.to_json().dump());
  double deadline = monotonic_seconds() + 300;
  CappedBuffer drop(1);
  const runner::LoopEnd end = runner::pump_events(
      *slot.child, *slot.events, drop, drop, deadline, deadline,
      [&](const nlohmann::json& e, double&) {
        const std::string kind = e.value("event", "");
        if (kind == "done") return true;
        if (kind == "setup_error" || kind == "cuda_error")
          throw UserError("the triton target's roof calibration failed: " + e.value("what", std::string("?")));
        if (kind != "point") return false;
        const size_t i = e.value("index", size_t{0});
        const double v = e.value("value", -1.0);
        if (i >= job.points.size() || v <= 0) return false;
        const auto& p = job.points[i];
        if (p.kind == "copy") {
          roof.bandwidth.push_back({p.kind, 1, p.bytes, v});
          if (progress)
            progress(fmt::format("device copy (torch), {:>5.0f} MiB working set: {:.0f} GB/s",
                                 p.bytes / (1 << 20), v));
        } else {
          roof.peak.push_back({p.kind, 1, v});
          if (progress)
            progress(fmt::format("{} rate (torch.matmul {}^3): {:.1f} TFLOP/s",
                                 p.kind == "bf16_tensor" ? "bf16" : "fp32",
                                 static_cast<int>(p.bytes), v / 1e3));
        }
        return false;
      });
  if (end != runner::LoopEnd::settled) {
    slot.stop();
    throw UserError("the triton target's roof calibration failed: the runner stopped or hung");
  }
  if (roof.bandwidth.empty() || roof.peak.empty())
    throw UserError("the triton target's roof calibration measured nothing");
  roof.host_key = fmt::format("{} (cc {}) x{}", gpu, slot.info.value("cc", std::string("?")),
                              slots_.size());
  return roof;
}

ProfileOutcome TritonTarget::profile(const Task& task, const std::filesystem::path& artifact,
                                     const RunPhase& phase, const std::string&) {
  ProfileOutcome out;
  const double t0 = monotonic_seconds();
  if (!ncu_) {
    out.note = "ncu (Nsight Compute) not found: set KEVO_NCU or put it on PATH";
    return out;
  }
  Lease held = lease();
  Slot& slot = held.slot;
  const auto dir = cache_dir() / "triton" / "profiles" / fmt::format("{}-{}", getpid(), slot.device);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir / "work" / "tmp");
  // A fresh Triton cache, not the runner's: the profile runs outside the
  // containment, and the runner's cache is written by contained candidates
  // (Triton loads the launcher libraries it finds there into its process).
  std::filesystem::create_directories(dir / "work" / "cache");
  const auto candidate = dir / "candidate.py";
  std::filesystem::copy_file(artifact, candidate, ec);
  const auto job_file = dir / "job.json";
  const std::string text =
      job_json(task, candidate.string(), {{false, phase.shapes.shapes, phase.seed}},
               (dir / "outputs").string())
          .dump();
  write_file_atomic(job_file, text.data(), text.size());
  SpawnOptions opt;
  opt.argv = {ncu_->string(), "--clock-control", "none", "--profile-from-start", "off",
              "--metrics", cuda::ncu_metric_list(), "--section", "SourceCounters",
              "--import-source", "no", "-f", "-o", (dir / "profile").string(),
              triton_python(), "-B", runner_script().string(), "--device",
              std::to_string(slot.device), "--inputs-lib", beside_kevo("libkevo-inputs.so").string(),
              "--profile", job_file.string(), "--cubins", (dir / "cubins").string()};
  // ncu's injection talks to ncu and starts its own helpers: no containment
  // under the profiler (as for cuda).
  opt.inherit_env = false;
  opt.env = runner_env(dir / "work");
  ProcessResult r = run_process(opt, 300, 1 << 20);
  out.metrics.push_back({"profile.ncu_run_s", monotonic_seconds() - t0, "s", 0});
  // The runner's own account of that time (its events go to stderr under
  // the profiler): its start (torch, the CUDA context) and Triton's compile.
  {
    std::istringstream lines(r.err);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty() || line.front() != '{') continue;
      const auto ev = nlohmann::json::parse(line, nullptr, false);
      if (!ev.is_object()) continue;
      if (ev.contains("setup_s") && ev["setup_s"].is_number())
        out.metrics.push_back({"profile.runner_start_s", ev["setup_s"].get<double>(), "s", 0});
      if (ev.value("event", "") == "compiled" && ev.contains("seconds") && ev["seconds"].is_number())
        out.metrics.push_back({"profile.triton_compile_s", ev["seconds"].get<double>(), "s", 0});
    }
  }
  if (!r.exit_code || *r.exit_code != 0 || !std::filesystem::exists(dir / "profile.ncu-rep")) {
    std::string tail = r.out + r.err;
    if (tail.size() > 600) tail = tail.substr(tail.size() - 600);
    out.note = fmt::format("ncu could not profile it ({}): {}", r.timed_out ? "timed out" : "failed", tail);
    out.seconds = monotonic_seconds() - t0;
    return out;
  }
  auto import = [&](std::vector<std::string> extra) {
    SpawnOptions o;
    o.argv = {ncu_->string(), "--import", (dir / "profile.ncu-rep").string(), "--csv",
              "--print-kernel-base", "mangled", "--print-units", "base"};
    for (auto& x : extra) o.argv.push_back(x);
    return run_process(o, 120, 64 << 20);
  };
  std::vector<cuda::NcuKernel> kernels;
  const double t_import = monotonic_seconds();
  try {
    kernels = cuda::parse_ncu_raw(import({"--page", "raw"}).out);
  } catch (const UserError& e) {
    out.note = std::string("ncu's report could not be read: ") + e.what();
    return out;
  }
  if (kernels.empty()) {
    out.note = "ncu profiled no kernel launch (did the candidate launch a kernel?)";
    return out;
  }
  const cuda::NcuKernel* k = &kernels.front();
  for (const auto& x : kernels)
    if (x.value("gpu__time_duration.sum") > k->value("gpu__time_duration.sum")) k = &x;
  out.ok = true;
  {
    auto m = cuda::ncu_metrics(*k);
    out.metrics.insert(out.metrics.end(), m.begin(), m.end());
  }
  out.metrics.push_back({"profile.import_s", monotonic_seconds() - t_import, "s", 0});
  out.metrics.push_back({"ncu.launches", static_cast<double>(kernels.size()), "", 0});
  const cuda::Bottleneck b = cuda::classify(*k, {});
  out.bottleneck = b.kind;
  out.why = "ncu: " + b.why;
  // Per line of the Python source: ncu's stall samples per instruction,
  // mapped by the line table Triton writes into each cubin it builds: the
  // cubins the runner wrote of the kernels this candidate compiled, else
  // (a Triton that keeps them elsewhere) those in this profile's own cache.
  const double t_lines = monotonic_seconds();
  auto sass = cuda::parse_ncu_sass(import({"--page", "source", "--print-source", "sass"}).out);
  const cuda::SassKernel* sk = nullptr;
  for (const auto& s : sass)
    if (s.name == k->name) sk = &s;
  auto nvdisasm = runner::find_program("nvdisasm", "KEVO_NVDISASM", runner::cuda_bins());
  if (sk && nvdisasm) {
    std::vector<std::filesystem::path> cubins;
    for (const auto& entry : std::filesystem::directory_iterator(dir / "cubins", ec))
      if (entry.path().extension() == ".cubin") cubins.push_back(entry.path());
    if (cubins.empty()) {
      ec.clear();
      for (const auto& entry : std::filesystem::recursive_directory_iterator(dir / "work" / "cache", ec))
        if (entry.path().extension() == ".cubin") cubins.push_back(entry.path());
    }
    cuda::LineMap lines;
    for (const auto& cubin : cubins) {
      SpawnOptions d;
      d.argv = {nvdisasm->string(), "-g", "-c", cubin.string()};
      ProcessResult dr = run_process(d, 60, 64 << 20);
      for (auto& [fn, m] : cuda::parse_nvdisasm_lines(dr.out, "candidate.py")) lines[fn] = m;
    }
    auto it = lines.find(k->name);
    if (it != lines.end()) {
      auto hot = cuda::hot_lines(*sk, it->second);
      std::vector<std::string> parts;
      for (size_t i = 0; i < hot.size() && i < 5; ++i) {
        out.metrics.push_back({"ncu.line.stall_share", hot[i].share, "fraction", hot[i].line});
        if (i < 3) parts.push_back(fmt::format("line {} ({:.0f}%)", hot[i].line, 100 * hot[i].share));
      }
      if (!parts.empty())
        out.why += fmt::format("; hottest Python source lines by stall samples: {}", fmt::join(parts, ", "));
    } else {
      out.why += "; no line table found for the kernel in Triton's cubins";
    }
  }
  out.metrics.push_back({"profile.lines_s", monotonic_seconds() - t_lines, "s", 0});
  out.seconds = monotonic_seconds() - t0;
  return out;
}

}  // namespace

std::string triton_python() {
  if (const char* p = std::getenv("KEVO_PYTHON"); p && *p) return p;
  // An absolute path: kevo-contain runs it with execv.
  if (auto p = runner::find_program("python3", "KEVO_PYTHON", {})) return p->string();
  return "python3";
}

std::string triton_unavailable_reason() {
  const PythonInfo& p = python_info();
  if (!p.error.empty()) return p.error;
  if (!std::filesystem::exists(beside_kevo("kevo-contain")))
    return "kevo-contain not found next to kevo (" + beside_kevo("kevo-contain").string() + ")";
  if (!std::filesystem::exists(beside_kevo("libkevo-inputs.so")))
    return "libkevo-inputs.so not found next to kevo";
  if (!p.cuda && !interpreting())
    return fmt::format("torch {} sees no CUDA GPU (KEVO_TRITON_INTERPRET=1 runs the kernels in "
                       "Triton {}'s interpreter on the CPU, for tests)",
                       p.torch, p.triton);
  return "";
}

std::unique_ptr<Target> make_triton_target() { return std::make_unique<TritonTarget>(); }

}  // namespace kevo
