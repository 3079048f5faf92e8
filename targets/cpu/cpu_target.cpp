#include "targets/cpu/cpu_target.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "core/clock.h"
#include "core/defined_operator.h"
#include "core/error.h"
#include "core/kernel_headers.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/paths.h"
#include "core/process.h"
#include "targets/runner/host_loop.h"
#include "targets/cpu/vectorizer_report.h"
#include "targets/runner/protocol.h"
#include "targets/wrapper.h"

namespace kevo {

std::filesystem::path runner_path() {
  if (const char* r = std::getenv("KEVO_RUNNER"); r && *r) {
    if (!std::filesystem::exists(r))
      throw UserError(fmt::format("KEVO_RUNNER='{}' does not exist", r));
    return r;
  }
  auto next_to_me = executable_dir() / "kevo-runner";
  if (std::filesystem::exists(next_to_me)) return next_to_me;
#ifdef KEVO_RUNNER_BUILD_PATH
  if (std::filesystem::exists(KEVO_RUNNER_BUILD_PATH)) return KEVO_RUNNER_BUILD_PATH;
#endif
  throw UserError(fmt::format("kevo-runner not found next to kevo ({}): build it or set KEVO_RUNNER",
                              next_to_me.string()));
}

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string m = line.substr(colon + 1);
        m.erase(0, m.find_first_not_of(' '));
        return m;
      }
    }
  }
  return "unknown CPU";
}

// A spawned kevo-runner with its event pipe and shared output file.
struct RunnerSession {
  int memfd = -1;
  void* outputs = nullptr;
  size_t output_bytes = 0;
  ~RunnerSession() {
    if (outputs) munmap(outputs, output_bytes);
    if (memfd >= 0) close(memfd);
  }
};

class CpuTarget : public Target {
 public:
  CpuTarget() {
    // Writing to a runner that just died must not kill kevo.
    signal(SIGPIPE, SIG_IGN);
  }

  const TargetTraits& traits() const override { return *find_target_traits("cpu"); }
  std::optional<std::string> hardware_sheet() override;

  std::string language_of(const std::filesystem::path& source) const override {
    std::string ext = source.extension().string();
    if (ext == ".c") return "c";
    if (ext == ".cc" || ext == ".cpp" || ext == ".cxx") return "c++";
    throw UserError(fmt::format("the cpu target compiles .c and .cpp files, not '{}' ({})",
                                ext.empty() ? "(no extension)" : ext, source.string()));
  }

  std::string artifact_extension() const override { return ".so"; }

  std::string toolchain_id(const Task& task, const std::string& language) override {
    std::string compiler = language == "c" ? task.compile.cc : task.compile.cxx;
    std::string id = fmt::format("{}|{}|{}|{}", compiler, compiler_version(compiler),
                                 fmt::join(task.compile.flags, " "),
                                 fmt::join(task.compile.extra_flags, " "));
    // -march=native means "this CPU": part of the key; so are the ABI header
    // and kevo's kernel headers.
    return fmt::format("{}|{}|{}|{}", id, host_key(), abi_header_hash(),
                       kernel_headers_hash(language));
  }

  CompileOutcome compile(const CompileRequest& req) override {
    const Task& task = *req.task;
    const CompileSource source(req);  // a plain kernel's generated wrapper, or the file
    SpawnOptions opt;
    opt.argv = compile_argv(req, source.path());
    for (const char* f : {"-shared", "-Wl,--no-undefined"}) opt.argv.emplace_back(f);
    opt.argv.push_back("-o");
    opt.argv.push_back(req.output.string());
    opt.argv.push_back("-lm");
    opt.limits.address_space_bytes = int64_t{8} << 30;
    opt.limits.file_size_bytes = int64_t{512} << 20;
    ProcessResult r = run_process(opt, task.limits.compile_timeout_s,
                                  static_cast<size_t>(task.limits.output_kb) * 1024);
    return compile_outcome(r, req.output, task.limits.compile_timeout_s);
  }

  bool has_compiler_report() const override { return true; }
  ProfileOutcome compiler_report(const CompileRequest& req) override;

  RunOutcome run(const Task& task, const std::filesystem::path& artifact,
                 const std::vector<RunPhase>& phases, const CheckFn& check,
                 const ProgressFn& progress) override;

  std::string host_key() override {
    static const std::string key = fmt::format("{} x{}", cpu_model(), online_cpus());
    return key;
  }

  Roof calibrate(const ProgressFn& progress, const std::vector<double>& sizes) override;

  std::vector<runner::ContainmentLayer> containment() override {
    return runner::probe_containment(runner::FilterProfile::cpu);
  }

 private:
  std::string compiler_version(const std::string& compiler) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = versions_.find(compiler);
    if (it != versions_.end()) return it->second;
    std::string v = "unknown";
    try {
      SpawnOptions opt;
      opt.argv = {compiler, "--version"};
      ProcessResult r = run_process(opt, 30);
      if (r.exit_code && *r.exit_code == 0) v = r.out.substr(0, r.out.find('\n'));
    } catch (const UserError&) {
      // Not startable: compile() will report it as the candidate's error.
    }
    versions_[compiler] = v;
    return v;
  }

  // The compiler, its flags, the ABI and knob defines and the source, as
  // every build of a candidate has them (without output or link options).
  std::vector<std::string> compile_argv(const CompileRequest& req,
                                        const std::filesystem::path& source) {
    const Task& task = *req.task;
    std::vector<std::string> argv;
    argv.push_back(req.language == "c" ? task.compile.cc : task.compile.cxx);
    for (const auto& f : task.compile.flags) argv.push_back(f);
    for (const auto& f : task.compile.extra_flags) argv.push_back(f);
    for (const char* f : {"-fPIC", "-fopenmp"}) argv.emplace_back(f);
    argv.push_back("-I" + (kevo_home() / "targets" / "abi").string());
    argv.push_back("-I" + kernel_include_dir(req.language).string());
    for (const auto& d : req.include_dirs) argv.push_back("-I" + d.string());
    for (const auto& [k, v] : req.knobs) argv.push_back(fmt::format("-D{}={}", k, v));
    for (const auto& d : shape_defines(task)) argv.push_back("-D" + d);
    argv.push_back(source.string());
    return argv;
  }

  // One runner process from spawn to exit; `on_event` sees the job's events
  // (runner::drive_job decodes the rest).
  RunOutcome drive(const Task* task, const runner::Job& job, double timeout_s, double max_total_s,
                   int64_t address_space, const runner::JobEventFn& on_event,
                   RunnerSession& session);

  std::mutex mutex_;
  std::map<std::string, std::string> versions_;
};

RunOutcome CpuTarget::drive(const Task* task, const runner::Job& job, double timeout_s,
                            double max_total_s, int64_t address_space,
                            const runner::JobEventFn& on_event, RunnerSession& session) {
  const double start = monotonic_seconds();
  const size_t output_cap = task ? static_cast<size_t>(task->limits.output_kb) * 1024 : 65536;

  const runner::EventPipe ev = runner::make_event_pipe();
  SpawnOptions opt;
  opt.argv = {runner_path().string()};
  opt.inherit_env = false;  // nothing of the user's: see runner_environment
  opt.env = runner::runner_environment();
  opt.extra_fds = {ev.write_fd};
  if (session.memfd >= 0) opt.extra_fds.push_back(session.memfd);
  opt.limits.address_space_bytes = address_space;
  opt.limits.cpu_s = max_total_s * std::max(1, online_cpus()) + 10;
  opt.limits.file_size_bytes = int64_t{16} << 20;
  std::unique_ptr<ChildProcess> child;
  try {
    child = std::make_unique<ChildProcess>(opt);
  } catch (...) {
    close(ev.read_fd);
    close(ev.write_fd);
    throw;
  }
  close(ev.write_fd);
  EventReader events(ev.read_fd);
  write_line(child->stdin_fd(), job.to_json().dump());

  CappedBuffer so(output_cap), se(output_cap);
  runner::JobLoop loop;
  loop.start = start;
  loop.first_deadline = start + timeout_s;
  loop.timeout_s = timeout_s;
  loop.max_total_s = max_total_s;
  loop.timing_go = job.mode == "kernel";
  loop.count_cpu = loop.timing_go;
  loop.held = {{0, runner::inode_of(child->stdin_fd()), "kevo's command pipe"},
               {runner::kEventsFd, runner::inode_of(ev.read_fd), "kevo's event pipe"}};
  loop.watch_s = 0.05;
  // One runner per candidate: whatever ended the job, the runner ends too.
  loop.finish = [&](runner::LoopEnd end, RunOutcome& out) {
    // A job settled by anything but its end or an answered check leaves the
    // runner waiting for an answer that will not come.
    const bool waiting = end == runner::LoopEnd::settled && out.kind != RunOutcome::finished &&
                         out.kind != RunOutcome::check_failed;
    if (end == runner::LoopEnd::no_progress || end == runner::LoopEnd::hard_limit || waiting)
      child->kill_group();
    // Let the runner finish dying, then collect what it printed.
    const double grace = monotonic_seconds() + 2.0;
    while (!child->try_wait()) {
      if (monotonic_seconds() > grace) {
        child->kill_group();
        child->wait();
        break;
      }
      child->drain(so, se);
      usleep(1000);
    }
    child->drain(so, se);
    if (end != runner::LoopEnd::closed) return;
    if (int sig = child->term_signal()) {
      out.kind = sig == SIGXCPU || sig == SIGKILL ? RunOutcome::timed_out : RunOutcome::crashed;
      out.detail = signal_description(sig);
      if (sig == SIGKILL) out.detail += " (killed: CPU time or memory limit?)";
    } else if (auto code = child->exit_code()) {
      out.detail = fmt::format("the runner exited with status {} before finishing", *code);
      if (*code == 0) out.detail += " (did the kernel call exit()?)";
    }
  };
  return runner::drive_job(*child, events, so, se, loop, on_event);
}

RunOutcome CpuTarget::run(const Task& task, const std::filesystem::path& artifact,
                          const std::vector<RunPhase>& phases, const CheckFn& check,
                          const ProgressFn& progress) {
  const Operator& op = *task.op;
  runner::Job job;
  job.mode = "kernel";
  job.artifact = std::filesystem::absolute(artifact).string();
  job.op = std::string(op.name());
  job.op_definition = operator_definition(op);
  job.dtype = task.dtype;
  job.dtypes = task.dtypes;
  job.scalars = task.scalars;
  job.timing = task.timing;
  size_t shared_bytes = 0, tensor_bytes = 0;
  for (const auto& p : phases) {
    job.phases.push_back({p.kind == RunPhase::time, p.shapes.shapes, p.seed});
    size_t total = 0;
    runner::output_offsets(op.n_inputs(), task.dtypes, p.shapes.shapes, &total);
    if (p.kind == RunPhase::check) shared_bytes = std::max(shared_bytes, total);
    size_t all = 0;
    for (size_t i = 0; i < p.shapes.shapes.size(); ++i)
      all += static_cast<size_t>(numel(p.shapes.shapes[i])) * dtype_size(task.dtypes[i]);
    tensor_bytes = std::max(tensor_bytes, all);
  }
  job.output_bytes = shared_bytes;

  RunnerSession session;
  if (shared_bytes > 0) {
    session.memfd = memfd_create("kevo-outputs", MFD_CLOEXEC);
    if (session.memfd < 0 || ftruncate(session.memfd, static_cast<off_t>(shared_bytes)) != 0)
      throw UserError(fmt::format("cannot create the shared output file: {}", strerror(errno)));
    session.output_bytes = shared_bytes;
    session.outputs = mmap(nullptr, shared_bytes, PROT_READ, MAP_SHARED, session.memfd, 0);
    if (session.outputs == MAP_FAILED) {
      session.outputs = nullptr;
      throw UserError(fmt::format("cannot map the shared output file: {}", strerror(errno)));
    }
  }
  // Address space: the tensors with their guard pages and alignment slack,
  // the shared outputs, the task's allowance, and room for the runtime.
  const int64_t address_space = static_cast<int64_t>(tensor_bytes + 2 * shared_bytes) +
                                static_cast<int64_t>(op.tensors().size()) * (8 << 20) +
                                task.limits.memory_mb * (int64_t{1} << 20) + (int64_t{1} << 30);

  runner::KernelJob kernel;
  kernel.task = &task;
  kernel.phases = &phases;
  kernel.check = check;
  kernel.progress = progress;
  // The outputs are in the shared file, mapped here before the runner started.
  kernel.outputs = [&](size_t, size_t) {
    runner::CheckOutputs o;
    o.base = static_cast<const char*>(session.outputs);
    return o;
  };
  // cpu: the samples at the runner's estimate, within the task's min/max
  // samples, with half again as much and a second on top of the timeout.
  // (cuda allows differently: see cuda_target.cpp.)
  kernel.timing_timeout = [&](const nlohmann::json& e, const RunPhase& phase) {
    // The runner goes quiet while it times: allow what the plan needs.
    double est = std::max(e.value("estimate_s", 0.0), 1e-9);
    double k = static_cast<double>(e.value("calls_per_sample", int64_t{1}));
    double samples = std::min<double>(static_cast<double>(task.timing.max_samples),
                                      std::max<double>(static_cast<double>(task.timing.min_samples),
                                                       task.timing.min_time_s / (est * k)));
    const double planned = samples * k * est;
    if (progress && planned > 2.0)
      progress(fmt::format("timing {}: about {:.0f} s", phase.label, planned));
    return task.limits.timeout_s + 1.5 * planned + 1.0;
  };
  kernel.overrun_offset = true;
  const runner::JobEventFn on_event = runner::kernel_events(kernel);
  return drive(&task, job, task.limits.timeout_s, task.limits.max_total_s, address_space, on_event,
               session);
}

// The vectorizer's remarks on the candidate: its build once more, to
// assembly thrown away, with gcc's -fopt-info (clang: -Rpass) for the
// vectorizer. Only for the best few (a gemm's report runs to ~90 KB).
ProfileOutcome CpuTarget::compiler_report(const CompileRequest& req) {
  const Task& task = *req.task;
  const std::string compiler = req.language == "c" ? task.compile.cc : task.compile.cxx;
  const std::string version = compiler_version(compiler);
  const bool clang = version.find("clang") != std::string::npos;  // else gcc's options
  const CompileSource source(req);
  SpawnOptions opt;
  opt.argv = compile_argv(req, source.path());
  if (clang) {
    for (const char* f : {"-Rpass=loop-vectorize", "-Rpass-missed=loop-vectorize",
                          "-Rpass-analysis=loop-vectorize"})
      opt.argv.emplace_back(f);
  } else {
    opt.argv.emplace_back("-fopt-info-vec-optimized-missed");
  }
  for (const char* f : {"-S", "-o", "/dev/null"}) opt.argv.emplace_back(f);
  opt.limits.address_space_bytes = int64_t{8} << 30;
  ProcessResult r = run_process(opt, task.limits.compile_timeout_s, size_t{4} << 20);
  if (!r.exit_code || *r.exit_code != 0) {
    ProfileOutcome out;
    out.note = fmt::format("{} gave no vectorizer report (it is neither gcc nor clang, or failed)",
                           compiler);
    return out;
  }
  // A plain kernel's wrapper includes the file: remarks name the file itself.
  return parse_vectorizer_remarks(r.err + r.out, req.source.filename().string());
}

// The x86 sheet by whether the CPU has AVX-512.
std::optional<std::string> CpuTarget::hardware_sheet() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("flags", 0) == 0)
      return line.find(" avx512f") != std::string::npos ? "x86-avx512" : "x86-avx2";
  return std::nullopt;
}

Roof CpuTarget::calibrate(const ProgressFn& progress, const std::vector<double>& only_sizes) {
  // Compile the calibration source like a candidate, into the cache.
  auto source = kevo_home() / "targets" / "cpu" / "calibrate" / "roof.c";
  if (!std::filesystem::exists(source))
    throw UserError(fmt::format("calibration source missing: {} (is KEVO_HOME right?)",
                                source.string()));
  Task task = parse_task({{"name", "calibrate"},
                          {"operator", "gemm"},
                          {"shapes", {{"A", {1, 1}}, {"B", {1, 1}}}}});
  std::string text = read_text_file(source);
  std::string key = sha256_hex(text + toolchain_id(task, "c")).substr(0, 24);
  auto artifact = cache_dir() / "cpu" / "roof" / (key + ".so");
  if (!std::filesystem::exists(artifact)) {
    std::filesystem::create_directories(artifact.parent_path());
    auto tmp = artifact.parent_path() / fmt::format("{}.tmp{}.so", key, getpid());
    CompileRequest req;
    req.task = &task;
    req.source = source;
    req.language = "c";
    req.output = tmp;
    CompileOutcome c = compile(req);
    if (!c.ok)
      throw UserError(fmt::format("cannot compile the calibration kernels:\n{}", c.log));
    std::filesystem::rename(tmp, artifact);
  }

  runner::Job job;
  job.mode = "calibrate";
  job.artifact = artifact.string();
  job.op = "gemm";
  const int ncpu = online_cpus();
  std::vector<int> thread_counts = {1};
  if (ncpu > 1) thread_counts.push_back(ncpu);
  // From L1-sized to far beyond the last-level cache: kernels are judged
  // against the bandwidth measured at (or just below) their working set.
  std::vector<double> sizes = {16 << 10, 256 << 10, 1 << 20,           8 << 20,
                               32 << 20, 128 << 20, 1024.0 * (1 << 20)};
  if (!only_sizes.empty()) sizes = only_sizes;
  for (int t : thread_counts) {
    job.points.push_back({"fp32_fma", t, 0});
    for (double s : sizes)
      for (const char* k : {"copy", "copy_nt", "triad"}) job.points.push_back({k, t, s});
  }
  Roof roof;
  roof.target = "cpu";
  roof.host_key = host_key();
  roof.hostname = hostname();
  roof.cpu_model = cpu_model();
  roof.ncpu = ncpu;
  roof.measured_at = now_iso8601();
  RunnerSession session;
  // Every event of the calibration moves the deadline on, as a point does.
  auto on_event = [&](const nlohmann::json& e, RunOutcome&, double&) {
    if (e.value("event", "") != "point") return runner::Reply::go_on;
    size_t i = e.value("index", size_t{0});
    double v = e.value("value", -1.0);
    if (i >= job.points.size() || v <= 0) return runner::Reply::go_on;
    const auto& p = job.points[i];
    if (p.kind == "fp32_fma") {
      roof.peak.push_back({p.kind, p.threads, v});
      progress(fmt::format("peak fp32 FMA, {} thread{}: {:.1f} GFLOP/s", p.threads,
                           p.threads > 1 ? "s" : "", v));
    } else {
      roof.bandwidth.push_back({p.kind, p.threads, p.bytes, v});
      progress(fmt::format("{:<7} {:>9}, {} thread{}: {:.1f} GB/s", p.kind,
                           p.bytes >= (1 << 20) ? fmt::format("{:.0f} MiB", p.bytes / (1 << 20))
                                                : fmt::format("{:.0f} KiB", p.bytes / 1024),
                           p.threads, p.threads > 1 ? "s" : "", v));
    }
    return runner::Reply::go_on;
  };
  RunOutcome r = drive(nullptr, job, 120, 900, 0, on_event, session);
  if (r.kind != RunOutcome::finished)
    throw UserError(fmt::format("roof calibration failed: {}\n{}", r.detail, r.stderr_text));
  return roof;
}

}  // namespace

Target* make_cpu_target() { return new CpuTarget(); }

}  // namespace kevo
