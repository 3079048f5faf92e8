// The cuda target: candidates are .cu files built by nvcc into shared
// objects; kevo-cuda-runner processes, one per GPU, load and run them (see
// runner_main.cu for the protocol and what a runner guards against). A
// runner that crashed, hung or lost its CUDA context is replaced by a fresh
// one at the next candidate.
#include "targets/cuda/cuda_target.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "core/clock.h"
#include "core/defined_operator.h"
#include "core/error.h"
#include "core/kernel_headers.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/paths.h"
#include "core/process.h"
#include "targets/cuda/reports.h"
#include "targets/runner/gpu_host.h"
#include "targets/runner/host_loop.h"
#include "targets/runner/protocol.h"
#include "targets/wrapper.h"

namespace kevo {

namespace {

using runner::cuda_bins;
using runner::describe_exit;
using runner::find_program;
using runner::Spawner;

// Datasheet figures, shown beside the measured roof (never used as the roof).
struct Datasheet {
  const char* match;  // substring of the device name
  double gbps;        // memory bandwidth
  double bf16_tflops;  // dense bf16 tensor rate
  const char* source;
};
const Datasheet kDatasheets[] = {
    {"H200", 4800, 989.4, "NVIDIA H200 datasheet (SXM): 4.8 TB/s HBM3e, 989 TFLOP/s dense bf16"},
    {"H100", 3350, 989.4, "NVIDIA H100 datasheet (SXM): 3.35 TB/s HBM3, 989 TFLOP/s dense bf16"},
    {"A100", 2039, 312, "NVIDIA A100 datasheet (80 GB SXM): 2.04 TB/s HBM2e, 312 TFLOP/s bf16"},
};

const Datasheet* datasheet_for(const std::string& name) {
  for (const auto& d : kDatasheets)
    if (name.find(d.match) != std::string::npos) return &d;
  return nullptr;
}

// One GPU and the runner process that owns it.
struct Slot {
  int device = 0;
  std::unique_ptr<ChildProcess> child;
  std::unique_ptr<EventReader> events;
  nlohmann::json info;
  std::filesystem::path output_path;
  // The one directory (beside the compile cache, so on a file system that
  // runs code) the runner may read candidates from: each is linked in for
  // its job and removed after it.
  std::filesystem::path files_dir;
  unsigned long jobs = 0;
  bool busy = false;

  bool alive() { return child && events && events->open() && !child->try_wait(); }
  void stop() {
    if (child) child->kill_group();
    child.reset();
    events.reset();
  }
};

class CudaTarget final : public Target, private runner::RunnerSlots<Slot> {
 public:
  CudaTarget() { signal(SIGPIPE, SIG_IGN); }
  ~CudaTarget() override {
    for (auto& s : slots_) {
      if (s->alive()) write_line(s->child->stdin_fd(), "quit");
      s->stop();
      std::error_code ec;
      std::filesystem::remove(s->output_path, ec);
      std::filesystem::remove_all(s->files_dir, ec);
    }
  }

  const TargetTraits& traits() const override { return *find_target_traits("cuda"); }
  // The GPU's sheet, by its name.
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
    std::string ext = source.extension().string();
    if (ext == ".cu") return "cuda";
    throw UserError(fmt::format("the cuda target compiles .cu files, not '{}' ({})",
                                ext.empty() ? "(no extension)" : ext, source.string()));
  }

  std::string artifact_extension() const override { return ".so"; }

  std::string toolchain_id(const Task& task, const std::string& language) override {
    std::string id = fmt::format("{}|{}|{}|{}|{}", task.compile.cc, nvcc_version(task.compile.cc),
                                 arch_flags(task), fmt::join(task.compile.flags, " "),
                                 fmt::join(task.compile.extra_flags, " "));
    // "native" builds for the GPU that is here: part of the key.
    if (task.compile.arch == "native") id += "|" + host_key();
    return id + "|" + abi_header_hash() + "|" + kernel_headers_hash(language);
  }

  CompileOutcome compile(const CompileRequest& req) override {
    const Task& task = *req.task;
    SpawnOptions opt;
    opt.argv.push_back(nvcc_path(task.compile.cc));
    opt.argv.push_back(arch_flags(task));
    for (const auto& f : task.compile.flags) opt.argv.push_back(f);
    for (const auto& f : task.compile.extra_flags) opt.argv.push_back(f);
    for (const char* f : {"-std=c++17", "-Xptxas", "-v", "-shared", "-Xcompiler", "-fPIC",
                          "-cudart", "shared"})
      opt.argv.emplace_back(f);
    opt.argv.push_back("-I" + (kevo_home() / "targets" / "abi").string());
    opt.argv.push_back("-I" + kernel_include_dir(req.language).string());
    for (const auto& d : req.include_dirs) opt.argv.push_back("-I" + d.string());
    for (const auto& [k, v] : req.knobs) opt.argv.push_back(fmt::format("-D{}={}", k, v));
    for (const auto& d : shape_defines(task)) opt.argv.push_back("-D" + d);
    const CompileSource source(req);  // a plain kernel's generated wrapper, or the file
    opt.argv.push_back(source.path().string());
    opt.argv.push_back("-o");
    opt.argv.push_back(req.output.string());
    opt.limits.file_size_bytes = int64_t{512} << 20;
    ProcessResult r = run_process(opt, task.limits.compile_timeout_s,
                                  std::max<size_t>(static_cast<size_t>(task.limits.output_kb) * 1024,
                                                   256 * 1024));
    return compile_outcome(r, req.output, task.limits.compile_timeout_s);
  }

  std::vector<ProfileMetric> compile_metrics(const std::string& log) override {
    return cuda::ptxas_metrics(cuda::parse_ptxas(log));
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

  // The first GPU's multiprocessors, as its runner reported them.
  std::map<std::string, int64_t> start_facts() override {
    std::lock_guard<std::mutex> lock(mutex_);
    ensure_slots_locked();
    const nlohmann::json& info = slots_.front()->info;
    const int64_t sms = info.contains("sms") && info["sms"].is_number_integer() ? info["sms"].get<int64_t>() : 0;
    if (sms <= 0) return {};
    return {{"SMS", sms}};
  }

  bool can_profile() override { return ncu_.has_value(); }

  // KEVO_CUDA_NO_FILTER=1 (for kevo, and so for its runners) turns the
  // filter, Landlock and the network namespace off.
  std::vector<runner::ContainmentLayer> containment() override {
    std::vector<runner::ContainmentLayer> layers =
        runner::probe_containment(runner::FilterProfile::cuda);
    if (runner::cuda_filter_disabled())
      for (auto& l : layers)
        if (l.name == "seccomp" || l.name == "network namespace" || l.name == "landlock")
          l = {l.name, false, "KEVO_CUDA_NO_FILTER=1"};
    return layers;
  }

  ProfileOutcome profile(const Task& task, const std::filesystem::path& artifact,
                         const RunPhase& phase, const std::string& source_tag) override;

 private:
  static std::string arch_flags(const Task& task) {
    const std::string& a = task.compile.arch.empty() ? std::string("sm_90a") : task.compile.arch;
    if (a == "native") return "-arch=native";
    // sm_90a: the -gencode form (the -arch shorthand also runs a plain sm_90
    // pass that rejects wgmma and setmaxnreg).
    if (a.rfind("sm_", 0) == 0)
      return fmt::format("-gencode=arch=compute_{0},code=sm_{0}", a.substr(3));
    return "-arch=" + a;
  }

  std::string nvcc_path(const std::string& configured) {
    if (configured != "nvcc") return configured;
    auto p = find_program("nvcc", "KEVO_NVCC", cuda_bins());
    return p ? p->string() : configured;
  }

  std::string nvcc_version(const std::string& nvcc) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = versions_.find(nvcc);
    if (it != versions_.end()) return it->second;
    std::string v = "unknown";
    try {
      SpawnOptions opt;
      opt.argv = {nvcc_path(nvcc), "--version"};
      ProcessResult r = run_process(opt, 60);
      if (r.exit_code && *r.exit_code == 0) {
        auto pos = r.out.rfind("Build ");
        v = pos == std::string::npos ? r.out : r.out.substr(pos);
        while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) v.pop_back();
      }
    } catch (const UserError&) {
      // Not startable: compile() reports it as the candidate's error.
    }
    versions_[nvcc] = v;
    return v;
  }


  // Starts the runner of slot 0, learns how many GPUs there are, and makes a
  // slot for each one kevo may use (KEVO_CUDA_DEVICES=0,2 restricts them).
  void ensure_slots_locked() {
    if (!slots_.empty()) return;
    auto first = std::make_unique<Slot>();
    first->device = 0;
    std::vector<int> devices;
    if (const char* env = std::getenv("KEVO_CUDA_DEVICES"); env && *env) {
      std::string s = env;
      size_t start = 0;
      while (start < s.size()) {
        size_t end = s.find(',', start);
        if (end == std::string::npos) end = s.size();
        try {
          devices.push_back(std::stoi(s.substr(start, end - start)));
        } catch (const std::exception&) {
          throw UserError(fmt::format("KEVO_CUDA_DEVICES='{}': expected GPU numbers like 0,1", s));
        }
        start = end + 1;
      }
      first->device = devices.front();
    }
    start_runner(*first);
    int count = first->info.value("device_count", 1);
    if (devices.empty())
      for (int d = 0; d < count; ++d) devices.push_back(d);
    for (int d : devices)
      if (d < 0 || d >= count)
        throw UserError(fmt::format("KEVO_CUDA_DEVICES names GPU {}, but there are {}", d, count));
    slots_.push_back(std::move(first));
    for (size_t i = 1; i < devices.size(); ++i) {
      auto s = std::make_unique<Slot>();
      s->device = devices[i];
      slots_.push_back(std::move(s));
    }
  }

  std::filesystem::path output_file(int device) const {
    std::filesystem::path dir = std::filesystem::exists("/dev/shm") ? std::filesystem::path("/dev/shm")
                                                                    : std::filesystem::temp_directory_path();
    return dir / fmt::format("kevo-cuda-{}-{}-{}.out", getpid(), instance_, device);
  }

  // The slot's directory for candidates, in the cache (which may be shared
  // by several hosts): named by host, process, target and GPU. Those of this
  // host's processes that are gone (killed before they could clean up) are
  // removed on the way.
  std::filesystem::path files_dir(int device) const {
    const auto root = cache_dir() / "cuda" / "runners";
    const std::string here = "@" + hostname();
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(root, ec)) {
      const std::string name = e.path().filename().string();
      if (name.size() <= here.size() || name.compare(name.size() - here.size(), here.size(), here) != 0)
        continue;
      const long pid = std::atol(name.c_str());
      if (pid > 0 && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
        std::filesystem::remove_all(e.path(), ec);
    }
    return root / fmt::format("{}-{}-{}{}", getpid(), instance_, device, here);
  }

  // Spawns the slot's runner and waits for its "ready". The runner confines
  // itself to its files (--files, --output) before the driver starts; where
  // the driver cannot start so confined (a driver or system that needs more
  // than kevo allows), it is started once more without, and says why in each
  // evaluation's stderr. Throws UserError when it cannot start at all (no GPU,
  // no driver): that is kevo's environment, not a candidate's fault.
  void start_runner(Slot& s) {
    s.stop();
    s.output_path = output_file(s.device);
    s.files_dir = files_dir(s.device);
    std::error_code ec;
    std::filesystem::remove_all(s.files_dir, ec);
    std::filesystem::create_directories(s.files_dir);
    {  // made here: the runner may write it, not create it
      const int fd = open(s.output_path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd < 0)
        throw UserError(fmt::format("kevo cannot create {}: {}", s.output_path.string(),
                                    std::strerror(errno)));
      close(fd);
    }
    try {
      spawn_runner(s, {"--files", s.files_dir.string(), "--output", s.output_path.string()});
    } catch (const UserError& confined) {
      try {
        spawn_runner(s, {"--no-landlock", fmt::format("the driver did not start under it: {}",
                                                      confined.what())});
      } catch (const UserError&) {
        throw confined;
      }
    }
  }

  void spawn_runner(Slot& s, const std::vector<std::string>& files) {
    s.stop();
    const runner::EventPipe ev = runner::make_event_pipe();
    SpawnOptions opt;
    opt.argv = {cuda_runner_path().string(), "--device", std::to_string(s.device)};
    opt.argv.insert(opt.argv.end(), files.begin(), files.end());
    opt.inherit_env = false;  // nothing of the user's: see runner_environment
    opt.env = runner::runner_environment();
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
    double deadline = monotonic_seconds() + 120;
    const runner::LoopEnd end = runner::pump_events(
        *s.child, *s.events, so, se, deadline, deadline, [&](const nlohmann::json& e, double&) {
          const std::string kind = e.value("event", "");
          if (kind == "ready") {
            s.info = e.value("info", nlohmann::json::object());
            return true;
          }
          if (kind == "setup_error") {
            s.stop();
            throw UserError(fmt::format("the cuda target cannot start on GPU {}: {}", s.device,
                                        e.value("what", std::string("?"))));
          }
          return false;
        });
    if (end == runner::LoopEnd::settled) return;
    bool timed_out = end != runner::LoopEnd::closed;
    s.stop();
    throw UserError(fmt::format("the cuda runner for GPU {} {}{}", s.device,
                                timed_out ? "did not start within 120 s" : "exited at start",
                                se.text().empty() ? "" : ": " + se.text()));
  }


  void retire_runners() override { retire_idle(); }

  // The GPU runs nothing else while a job holds its slot.
  Lease lease() {
    return Lease(*this, [this] { ensure_slots_locked(); });
  }

  // Nsight Compute, looked up once (measure() asks before every candidate).
  const std::optional<std::filesystem::path> ncu_ = find_program("ncu", "KEVO_NCU", cuda_bins());
  Spawner spawner_;  // the destructor stops the runners before it goes
  std::map<std::string, std::string> versions_;
  // Tells this target's files from another's in the same process.
  const unsigned instance_ = next_instance_++;
  static inline std::atomic<unsigned> next_instance_{0};
};

RunOutcome CudaTarget::run(const Task& task, const std::filesystem::path& artifact,
                           const std::vector<RunPhase>& phases, const CheckFn& check,
                           const ProgressFn& progress) {
  Lease held = lease();
  Slot& slot = held.slot;

  const double start = monotonic_seconds();
  if (!slot.alive()) {
    start_runner(slot);
  }
  // The candidate, where the runner may read it: a link (else a copy) in
  // the slot's directory, removed when the job ends.
  const auto linked = slot.files_dir / fmt::format("{}.so", ++slot.jobs);
  {
    std::error_code ec;
    std::filesystem::create_hard_link(artifact, linked, ec);
    if (ec) std::filesystem::copy_file(artifact, linked, ec);
    if (ec)
      throw UserError(fmt::format("kevo cannot put {} where the cuda runner reads it ({}): {}",
                                  artifact.string(), linked.string(), ec.message()));
  }
  struct Unlink {
    std::filesystem::path path;
    ~Unlink() {
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
  } unlink_after{linked};
  runner::Job job;
  job.mode = "kernel";
  job.artifact = linked.string();
  job.entry = "kevo_launch";
  job.op = std::string(task.op->name());
  job.op_definition = operator_definition(*task.op);
  job.dtype = task.dtype;
  job.dtypes = task.dtypes;
  job.scalars = task.scalars;
  for (const auto& p : phases)
    job.phases.push_back({p.kind == RunPhase::time, p.shapes.shapes, p.seed});
  job.timing = task.timing;
  job.output_path = slot.output_path.string();

  const size_t cap = static_cast<size_t>(task.limits.output_kb) * 1024;
  CappedBuffer so(cap), se(cap);
  {
    // Whatever the runner printed between candidates is not this one's.
    CappedBuffer drop(1);
    slot.child->drain(drop, drop);
  }
  write_line(slot.child->stdin_fd(), job.to_json().dump());

  runner::JobLoop loop;
  // The runner's start counts against the hard limit; the first step's
  // timeout counts from the job line.
  loop.start = start;
  loop.first_deadline = monotonic_seconds() + task.limits.timeout_s;
  loop.timeout_s = task.limits.timeout_s;
  loop.max_total_s = task.limits.max_total_s;
  loop.load_error = "cannot load the module";
  loop.setup_error = "runner setup failed";
  // The runner is kept for the next candidate unless it hung, died or lost
  // its CUDA context.
  bool lost_context = false;
  loop.finish = [&](runner::LoopEnd end, RunOutcome& out) {
    if (end == runner::LoopEnd::settled) {
      if (lost_context) slot.stop();
      return;
    }
    if (end == runner::LoopEnd::closed) {
      slot.child->wait();
      out.detail = describe_exit(*slot.child);
      out.kind = RunOutcome::crashed;
    } else if (end == runner::LoopEnd::no_progress) {
      out.detail = fmt::format(
          "no progress within {:.1f} s (the kernel hangs or is far too slow); the runner was "
          "restarted",
          task.limits.timeout_s);
    }
    slot.stop();  // a hung kernel: only ending the process frees the GPU
  };

  runner::KernelJob kernel;
  kernel.task = &task;
  kernel.phases = &phases;
  kernel.check = check;
  kernel.progress = progress;
  // The runner wrote the outputs to the slot's file: mapped for the check.
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
  // The events only a GPU runner sends, then those of every kernel job.
  auto on_event = [&](const nlohmann::json& e, RunOutcome& out, double& timeout_s) {
    const std::string kind = e.value("event", "");
    if (kind == "cuda_error") {
      bool sticky = e.value("sticky", false);
      out.kind = RunOutcome::crashed;
      out.detail =
          fmt::format("CUDA error on {}: {}{}", phase_label(e), e.value("what", std::string("?")),
                      sticky ? " (sticky: the context was lost; the runner is restarted)" : "");
      lost_context = sticky;  // the runner is stopped once the loop is done with it
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
  return runner::drive_job(*slot.child, *slot.events, so, se, loop, on_event);
}

Roof CudaTarget::calibrate(const ProgressFn& progress, const std::vector<double>& only_sizes) {
  Lease held = lease();
  Slot& slot = held.slot;
  if (!slot.alive()) start_runner(slot);
  runner::Job job;
  job.mode = "calibrate";
  job.op = "gemm";
  job.min_point_s = 0.2;
  // Working sets from a little over the L2 to several GiB.
  std::vector<double> sizes = {256.0 * (1 << 20), 1024.0 * (1 << 20), 4096.0 * (1 << 20)};
  if (!only_sizes.empty()) sizes = only_sizes;
  for (double s : sizes) job.points.push_back({"copy", 1, s});
  job.points.push_back({"bf16_tensor", 1, 8192});
  job.points.push_back({"fp32_fma", 1, 0});
  const std::string gpu = slot.info.value("name", std::string("GPU"));
  Roof roof;
  roof.target = "cuda";
  roof.hostname = hostname();
  roof.cpu_model = gpu;
  roof.ncpu = static_cast<int>(slots_.size());
  roof.measured_at = now_iso8601();
  write_line(slot.child->stdin_fd(), job.to_json().dump());
  // 300 s for the whole calibration: events do not move the deadline.
  double deadline = monotonic_seconds() + 300;
  CappedBuffer drop(1);
  const runner::LoopEnd end = runner::pump_events(
      *slot.child, *slot.events, drop, drop, deadline, deadline,
      [&](const nlohmann::json& e, double&) {
        const std::string kind = e.value("event", "");
        if (kind == "done") return true;
        if (kind == "cuda_error") {
          if (e.value("sticky", false)) slot.stop();
          throw UserError("GPU roof calibration failed: " + e.value("what", std::string("?")));
        }
        if (kind != "point") return false;
        size_t i = e.value("index", size_t{0});
        double v = e.value("value", -1.0);
        if (i >= job.points.size() || v <= 0) return false;
        const auto& p = job.points[i];
        if (p.kind == "bf16_tensor") {
          roof.peak.push_back({p.kind, 1, v});
          if (progress)
            progress(fmt::format("bf16 tensor-core rate (cuBLAS {0}x{0}x{0}): {1:.0f} TFLOP/s",
                                 static_cast<int>(p.bytes), v / 1e3));
        } else if (p.kind == "fp32_fma") {
          roof.peak.push_back({p.kind, 1, v});
          if (progress) progress(fmt::format("fp32 CUDA-core rate (FMA chains): {:.1f} TFLOP/s", v / 1e3));
        } else {
          roof.bandwidth.push_back({p.kind, 1, p.bytes, v});
          if (progress)
            progress(fmt::format("device copy, {:>5.0f} MiB working set: {:.0f} GB/s",
                                 p.bytes / (1 << 20), v));
        }
        return false;
      });
  if (end != runner::LoopEnd::settled) {
    slot.stop();
    throw UserError("GPU roof calibration failed: the runner stopped or hung");
  }
  if (roof.bandwidth.empty() || roof.peak.empty())
    throw UserError("GPU roof calibration measured nothing");
  if (const Datasheet* d = datasheet_for(gpu)) {
    roof.datasheet = d->source;
    if (progress) {
      double bw = 0;
      for (const auto& b : roof.bandwidth) bw = std::max(bw, b.gbps);
      double bf16 = 0;
      for (const auto& p : roof.peak)
        if (p.kind == "bf16_tensor") bf16 = p.gflops;
      progress(fmt::format("datasheet: {} (measured: {:.0f}% of its bandwidth, {:.0f}% of its bf16 rate)",
                           d->source, 100 * bw / d->gbps, 100 * bf16 / (d->bf16_tflops * 1e3)));
    }
  }
  roof.host_key = fmt::format("{} (cc {}) x{}", gpu, slot.info.value("cc", std::string("?")), slots_.size());
  return roof;
}

ProfileOutcome CudaTarget::profile(const Task& task, const std::filesystem::path& artifact,
                                   const RunPhase& phase, const std::string& source_tag) {
  ProfileOutcome out;
  const double t0 = monotonic_seconds();
  const auto& ncu = ncu_;
  if (!ncu) {
    out.note = "ncu (Nsight Compute) not found: set KEVO_NCU or put it on PATH";
    return out;
  }
  Lease held = lease();
  Slot& slot = held.slot;

  auto dir = cache_dir() / "cuda" / "profiles" / fmt::format("{}-{}", getpid(), slot.device);
  std::filesystem::create_directories(dir);
  runner::Job job;
  job.mode = "kernel";
  job.artifact = std::filesystem::absolute(artifact).string();
  job.entry = "kevo_launch";
  job.op = std::string(task.op->name());
  job.op_definition = operator_definition(*task.op);
  job.dtype = task.dtype;
  job.dtypes = task.dtypes;
  job.scalars = task.scalars;
  job.phases.push_back({false, phase.shapes.shapes, phase.seed});
  job.timing = task.timing;
  const auto job_file = dir / "job.json";
  std::string text = job.to_json().dump();
  write_file_atomic(job_file, text.data(), text.size());
  const auto report = dir / "profile";
  std::error_code ec;
  std::filesystem::remove(dir / "profile.ncu-rep", ec);

  auto tail = [](const std::string& s) {
    std::string t = s.size() > 600 ? s.substr(s.size() - 600) : s;
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    auto pos = t.rfind("==ERROR==");
    return pos == std::string::npos ? t : t.substr(pos);
  };
  SpawnOptions opt;
  opt.argv = {ncu->string(), "--clock-control", "none", "--profile-from-start", "off",
              "--metrics", cuda::ncu_metric_list(), "--section", "SourceCounters",
              "--import-source", "no", "-f", "-o", report.string(),
              cuda_runner_path().string(), "--device", std::to_string(slot.device), "--profile",
              job_file.string()};
  // ncu starts the runner with its own environment: the runner's allowlist,
  // and a home of its own in the profile's directory for ncu's settings.
  opt.inherit_env = false;
  opt.env = runner::runner_environment();
  opt.env.push_back("HOME=" + dir.string());
  // ncu's injection into the runner talks to ncu and starts its own helpers:
  // no system-call filter, no network namespace under the profiler.
  std::erase_if(opt.env,
                [](const std::string& v) { return v.rfind("KEVO_CUDA_NO_FILTER=", 0) == 0; });
  opt.env.push_back("KEVO_CUDA_NO_FILTER=1");
  ProcessResult r = run_process(opt, 120, 1 << 20);
  if (!r.exit_code || *r.exit_code != 0 || !std::filesystem::exists(dir / "profile.ncu-rep")) {
    out.note = fmt::format("ncu could not profile it ({}): {}",
                           r.timed_out ? "timed out" : "failed", tail(r.out + r.err));
    out.seconds = monotonic_seconds() - t0;
    return out;
  }
  if (r.err.find("ERR_NVGPUCTRPERM") != std::string::npos) {
    out.note = "ncu cannot read the GPU's performance counters here (ERR_NVGPUCTRPERM)";
    return out;
  }
  auto import = [&](std::vector<std::string> extra) {
    SpawnOptions o;
    o.argv = {ncu->string(), "--import", (dir / "profile.ncu-rep").string(), "--csv",
              "--print-kernel-base", "mangled", "--print-units", "base"};
    for (auto& x : extra) o.argv.push_back(x);
    return run_process(o, 120, 64 << 20);
  };
  std::vector<cuda::NcuKernel> kernels;
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
  // The launch that took longest is the one to look at.
  const cuda::NcuKernel* k = &kernels.front();
  for (const auto& x : kernels)
    if (x.value("gpu__time_duration.sum") > k->value("gpu__time_duration.sum")) k = &x;
  out.ok = true;
  out.metrics = cuda::ncu_metrics(*k);
  out.metrics.push_back({"ncu.launches", static_cast<double>(kernels.size()), "", 0});
  cuda::Bottleneck b = cuda::classify(*k, {});
  out.bottleneck = b.kind;
  out.why = "ncu: " + b.why;

  // Per source line: ncu's per-instruction stall samples, mapped to lines of
  // the candidate by the line table nvdisasm reads from the module.
  auto sass = cuda::parse_ncu_sass(import({"--page", "source", "--print-source", "sass"}).out);
  const cuda::SassKernel* sk = nullptr;
  for (const auto& s : sass)
    if (s.name == k->name) sk = &s;
  auto cuobjdump = find_program("cuobjdump", "KEVO_CUOBJDUMP", cuda_bins());
  auto nvdisasm = find_program("nvdisasm", "KEVO_NVDISASM", cuda_bins());
  if (sk && cuobjdump && nvdisasm) {
    SpawnOptions x;
    x.argv = {cuobjdump->string(), "-xelf", "all", std::filesystem::absolute(artifact).string()};
    x.cwd = dir;
    run_process(x, 60);
    cuda::LineMap lines;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() != ".cubin") continue;
      SpawnOptions d;
      d.argv = {nvdisasm->string(), "-g", "-c", entry.path().string()};
      ProcessResult dr = run_process(d, 60, 64 << 20);
      for (auto& [fn, m] : cuda::parse_nvdisasm_lines(dr.out, source_tag)) lines[fn] = m;
      std::filesystem::remove(entry.path(), ec);
    }
    auto it = lines.find(k->name);
    if (it != lines.end()) {
      auto hot = cuda::hot_lines(*sk, it->second);
      std::vector<std::string> parts;
      for (size_t i = 0; i < hot.size() && i < 5; ++i) {
        out.metrics.push_back({"ncu.line.stall_share", hot[i].share, "fraction", hot[i].line});
        if (i >= 3) continue;
        if (hot[i].reason.empty())
          parts.push_back(fmt::format("line {} ({:.0f}%)", hot[i].line, 100 * hot[i].share));
        else
          parts.push_back(fmt::format("line {} ({:.0f}%, {:.0f}% of it {})", hot[i].line, 100 * hot[i].share,
                                      100 * hot[i].reason_share, hot[i].reason));
      }
      if (!parts.empty()) out.why += fmt::format("; hottest source lines by stall samples: {}", fmt::join(parts, ", "));
    } else {
      out.why += "; no line table for the kernel (built without -lineinfo?)";
    }
  }
  out.seconds = monotonic_seconds() - t0;
  return out;
}

}  // namespace

std::filesystem::path cuda_runner_path() {
  if (const char* r = std::getenv("KEVO_CUDA_RUNNER"); r && *r) {
    if (!std::filesystem::exists(r))
      throw UserError(fmt::format("KEVO_CUDA_RUNNER='{}' does not exist", r));
    return r;
  }
  auto next_to_me = executable_dir() / "kevo-cuda-runner";
  if (std::filesystem::exists(next_to_me)) return next_to_me;
#ifdef KEVO_CUDA_RUNNER_BUILD_PATH
  if (std::filesystem::exists(KEVO_CUDA_RUNNER_BUILD_PATH)) return KEVO_CUDA_RUNNER_BUILD_PATH;
#endif
  throw UserError(fmt::format(
      "kevo-cuda-runner not found next to kevo ({}): build kevo where nvcc is installed, or set "
      "KEVO_CUDA_RUNNER",
      next_to_me.string()));
}

std::string cuda_unavailable_reason() {
  try {
    cuda_runner_path();
  } catch (const UserError& e) {
    return e.what();
  }
  if (const char* e = std::getenv("KEVO_NVCC"); e && *e && !std::filesystem::exists(e))
    return fmt::format("KEVO_NVCC='{}' does not exist", e);
  if (!find_program("nvcc", "KEVO_NVCC", cuda_bins()))
    return "nvcc not found on PATH or in /usr/local/cuda/bin (set KEVO_NVCC): candidates cannot be compiled";
  return "";
}

std::unique_ptr<Target> make_cuda_target() { return std::make_unique<CudaTarget>(); }

}  // namespace kevo
