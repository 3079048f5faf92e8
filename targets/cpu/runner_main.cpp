// kevo-runner: the child process that loads one candidate and calls it under
// kevo's protocol (see targets/runner/protocol.h). It expects the worst of the code it
// loads: inputs are read-only during calls, every buffer has guard pages
// around it and a canary after it, outputs are poisoned before each check
// and before the last timing sample (whose outputs kevo checks too), and a
// crash reports where it happened before the process dies.
//
// Start reading at main(), then run_kernel().
#include <dlfcn.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/defined_operator.h"
#include "core/operator.h"
#include "core/process.h"
#include "targets/abi/kevo_kernel.h"
#include "targets/runner/sandbox.h"
#include "targets/runner/protocol.h"

namespace kevo::runner {
namespace {

constexpr unsigned char kCanary = 0xC3;
constexpr size_t kPage = 4096;
constexpr size_t kHugePage = 2u << 20;

// ---- events to the parent -------------------------------------------------

void emit(const nlohmann::json& event) { emit_event(kEventsFd, event); }
std::string read_line() { return read_command_line(); }

// After a check: "continue" goes on; "stop" or the parent gone ends the run.
bool parent_says_continue() { return read_line() == "continue"; }

// ---- guarded buffers and the crash handler ---------------------------------

// Memory regions the crash handler can name. Written before any kernel call,
// read only from the signal handler.
struct Region {
  uintptr_t lo = 0, hi = 0;
  char what[96] = {};
};
Region g_regions[64];
volatile int g_region_count = 0;

void add_region(const void* lo, size_t size, const std::string& what) {
  if (g_region_count >= 64) return;
  Region& r = g_regions[g_region_count];
  r.lo = reinterpret_cast<uintptr_t>(lo);
  r.hi = r.lo + size;
  std::snprintf(r.what, sizeof(r.what), "%s", what.c_str());
  g_region_count = g_region_count + 1;
}

// A tensor's memory: a PROT_NONE page before it, its data (2 MiB aligned and
// huge-page advised when large), canary bytes up to the end of the next page,
// then another PROT_NONE page.
struct Guarded {
  char* base = nullptr;
  size_t map_len = 0;
  char* data = nullptr;
  size_t bytes = 0;
  size_t span = 0;  // data + canary

  Guarded() = default;
  Guarded(const Guarded&) = delete;
  Guarded& operator=(const Guarded&) = delete;
  Guarded(Guarded&& o) noexcept { *this = std::move(o); }
  Guarded& operator=(Guarded&& o) noexcept {
    std::swap(base, o.base);
    std::swap(map_len, o.map_len);
    std::swap(data, o.data);
    std::swap(bytes, o.bytes);
    std::swap(span, o.span);
    return *this;
  }
  ~Guarded() {
    if (base) munmap(base, map_len);
  }

  static Guarded allocate(size_t bytes) {
    Guarded g;
    g.bytes = bytes;
    g.span = (std::max<size_t>(bytes, 1) + kPage - 1) / kPage * kPage + kPage;
    const size_t align = bytes >= kHugePage / 2 ? kHugePage : kPage;
    g.map_len = kPage + g.span + kPage + align;
    void* p = mmap(nullptr, g.map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      emit({{"event", "setup_error"},
            {"what", std::string("cannot allocate tensor memory: ") + strerror(errno)}});
      _exit(4);
    }
    g.base = static_cast<char*>(p);
    uintptr_t d = reinterpret_cast<uintptr_t>(g.base) + kPage;
    d = (d + align - 1) / align * align;
    g.data = reinterpret_cast<char*>(d);
    if (align == kHugePage) madvise(g.data, g.span, MADV_HUGEPAGE);
    mprotect(g.data - kPage, kPage, PROT_NONE);
    mprotect(g.data + g.span, kPage, PROT_NONE);
    std::memset(g.data + bytes, kCanary, g.span - bytes);
    return g;
  }

  void set_read_only(bool ro) { mprotect(data, span, ro ? PROT_READ : PROT_READ | PROT_WRITE); }

  // Offset past the end of the first overwritten canary byte, or -1.
  long canary_damage() const {
    for (size_t i = bytes; i < span; ++i)
      if (static_cast<unsigned char>(data[i]) != kCanary) return static_cast<long>(i - bytes);
    return -1;
  }
};

size_t append_str(char* buf, size_t pos, size_t cap, const char* s) {
  while (*s && pos + 1 < cap) buf[pos++] = *s++;
  return pos;
}

size_t append_hex(char* buf, size_t pos, size_t cap, uintptr_t v) {
  char tmp[19] = "0x";
  const char* digits = "0123456789abcdef";
  char rev[16];
  int n = 0;
  do {
    rev[n++] = digits[v & 15];
    v >>= 4;
  } while (v && n < 16);
  int k = 2;
  while (n > 0) tmp[k++] = rev[--n];
  tmp[k] = 0;
  return append_str(buf, pos, cap, tmp);
}

size_t append_dec(char* buf, size_t pos, size_t cap, long v) {
  char tmp[24];
  int n = 0;
  bool neg = v < 0;
  unsigned long u = neg ? static_cast<unsigned long>(-v) : static_cast<unsigned long>(v);
  do {
    tmp[n++] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u && n < 22);
  if (neg) tmp[n++] = '-';
  char out[24];
  int k = 0;
  while (n > 0) out[k++] = tmp[--n];
  out[k] = 0;
  return append_str(buf, pos, cap, out);
}

// Async-signal-safe: formats by hand and writes one event line.
void on_fatal_signal(int sig, siginfo_t* info, void* ctx) {
  char buf[512];
  size_t p = 0;
  p = append_str(buf, p, sizeof(buf), "{\"event\":\"signal\",\"signal\":");
  p = append_dec(buf, p, sizeof(buf), sig);
  if (sig == SIGSEGV || sig == SIGBUS) {
    uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
    p = append_str(buf, p, sizeof(buf), ",\"address\":\"");
    p = append_hex(buf, p, sizeof(buf), addr);
    p = append_str(buf, p, sizeof(buf), "\",\"where\":\"");
    const char* where = nullptr;
    for (int i = 0; i < g_region_count; ++i)
      if (addr >= g_regions[i].lo && addr < g_regions[i].hi) where = g_regions[i].what;
    uintptr_t sp = 0;
#if defined(__x86_64__)
    sp = static_cast<uintptr_t>(static_cast<ucontext_t*>(ctx)->uc_mcontext.gregs[REG_RSP]);
#endif
    if (!where) {
      if (addr < 4096) where = "a null pointer";
      else if (sp && addr + 65536 > sp && addr < sp + 65536) where = "the stack (stack overflow?)";
      else where = "memory the kernel does not own";
    }
    p = append_str(buf, p, sizeof(buf), where);
    p = append_str(buf, p, sizeof(buf), "\"");
  }
  p = append_str(buf, p, sizeof(buf), "}\n");
  (void)!write(kEventsFd, buf, p);
  raise(sig);  // the handler was reset to the default action on entry
}

void install_crash_handlers() {
  static char altstack[256 * 1024];
  stack_t ss{};
  ss.ss_sp = altstack;
  ss.ss_size = sizeof(altstack);
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_sigaction = on_fatal_signal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS, SIGXCPU, SIGXFSZ})
    sigaction(s, &sa, nullptr);
}

// ---- the kernel protocol ----------------------------------------------------

using KernelFn = int (*)(const kevo_tensor*, int, kevo_tensor*, int, const double*, int);

struct Buffers {
  std::vector<Shape> shapes;
  std::vector<Guarded> tensors;  // ABI order
  uint64_t seed = 0;
  bool generated = false;
};

kevo_tensor make_tensor(const Guarded& g, DType dtype, const Shape& shape) {
  kevo_tensor t{};
  t.data = g.data;
  t.dtype = static_cast<int32_t>(dtype);
  t.rank = static_cast<int32_t>(shape.size());
  int64_t stride = 1;
  for (int i = t.rank - 1; i >= 0; --i) {
    t.shape[i] = shape[static_cast<size_t>(i)];
    t.stride[i] = stride;
    stride *= shape[static_cast<size_t>(i)];
  }
  return t;
}

int run_kernel(const Job& job) {
  std::shared_ptr<const Operator> defined;
  const Operator& op = job_operator(job.op, job.op_definition, defined);
  const size_t n_in = op.n_inputs();
  const size_t n_out = op.n_outputs();

  // The candidate's code may run from dlopen on (constructors): from here no
  // network, no file beyond what a runner reads, and no system call beyond
  // what a kernel needs (no processes, programs or sockets). A layer this
  // machine cannot give is said in one note (kevo puts it in the
  // evaluation's stderr), and the run goes on with the others.
  ContainmentSteps why_not;
  why_not.network = enter_network_namespace();
  why_not.landlock = confine_file_system(cpu_runner_files(job.artifact));
  why_not.filter = install_syscall_filter(FilterProfile::cpu);
  emit(containment_event(containment_got(FilterProfile::cpu, why_not)));
  void* lib = dlopen(job.artifact.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    emit({{"event", "load_error"}, {"what", std::string(dlerror())}});
    return 0;
  }
  auto fn = reinterpret_cast<KernelFn>(dlsym(lib, job.entry.c_str()));
  if (!fn) {
    emit({{"event", "load_error"},
          {"what", "the artifact does not export " + job.entry + " (is it extern \"C\"?)"}});
    return 0;
  }

  char* shared = nullptr;
  if (job.output_bytes > 0) {
    void* p = mmap(nullptr, job.output_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, kOutputFd, 0);
    if (p == MAP_FAILED) {
      emit({{"event", "setup_error"}, {"what", std::string("cannot map outputs: ") + strerror(errno)}});
      return 4;
    }
    shared = static_cast<char*>(p);
  }

  constexpr size_t kMaxTensors = 32, kMaxScalars = 64;
  if (n_in + n_out > kMaxTensors || job.scalars.size() > kMaxScalars) {
    emit({{"event", "setup_error"}, {"what", "too many tensors or scalars for the runner"}});
    return 4;
  }
  if (job.dtypes.size() != n_in + n_out) {
    emit({{"event", "setup_error"},
          {"what", "the job's dtypes do not match the operator's tensors"}});
    return 4;
  }
  const std::vector<DType>& dtypes = job.dtypes;
  Buffers buf;
  kevo_tensor in_t[kMaxTensors], out_t[kMaxTensors];
  const int n_scalars = static_cast<int>(job.scalars.size());
  auto call = [&]() {
    // Fresh descriptors and scalars every call (on the stack: no allocation
    // inside the timed region): a kernel may scribble on the ones it got.
    kevo_tensor in[kMaxTensors], out[kMaxTensors];
    double scalars[kMaxScalars];
    std::memcpy(in, in_t, n_in * sizeof(kevo_tensor));
    std::memcpy(out, out_t, n_out * sizeof(kevo_tensor));
    if (n_scalars) std::memcpy(scalars, job.scalars.data(), n_scalars * sizeof(double));
    return fn(in, static_cast<int>(n_in), out, static_cast<int>(n_out),
              n_scalars ? scalars : nullptr, n_scalars);
  };
  auto check_canaries = [&](size_t phase) -> bool {
    for (size_t i = n_in; i < buf.tensors.size(); ++i) {
      long off = buf.tensors[i].canary_damage();
      if (off >= 0) {
        emit({{"event", "overrun"},
              {"phase", phase},
              {"tensor", op.tensor(i).name},
              {"offset", off}});
        return false;
      }
    }
    return true;
  };

  auto poison_outputs = [&] {
    for (size_t i = 0; i < n_out; ++i) {
      Guarded& g = buf.tensors[n_in + i];
      fill_poison(dtypes[n_in + i], g.data, g.bytes / dtype_size(dtypes[n_in + i]));
    }
  };
  // The outputs to the shared file for kevo, and a "check" event.
  auto hand_over_outputs = [&](size_t ph, double seconds) -> bool {
    size_t total = 0;
    auto offsets = output_offsets(n_in, dtypes, job.phases[ph].shapes, &total);
    if (total > job.output_bytes) {
      emit({{"event", "setup_error"}, {"what", "shared output file too small"}});
      return false;
    }
    for (size_t i = 0; i < n_out; ++i)
      std::memcpy(shared + offsets[i], buf.tensors[n_in + i].data, buf.tensors[n_in + i].bytes);
    emit({{"event", "check"}, {"phase", ph}, {"seconds", seconds}});
    return true;
  };

  double last_call_s = 0;
  for (size_t ph = 0; ph < job.phases.size(); ++ph) {
    const Phase& phase = job.phases[ph];
    if (phase.shapes != buf.shapes) {
      buf = Buffers{};
      g_region_count = 0;
      buf.shapes = phase.shapes;
      for (size_t i = 0; i < phase.shapes.size(); ++i) {
        size_t bytes = static_cast<size_t>(numel(phase.shapes[i])) * dtype_size(dtypes[i]);
        buf.tensors.push_back(Guarded::allocate(bytes));
        const Guarded& g = buf.tensors.back();
        std::string kind = i < n_in ? "input" : "output";
        std::string name = kind + " '" + op.tensor(i).name + "'";
        add_region(g.data - kPage, kPage, "the guard page before " + name);
        add_region(g.data, g.span,
                   i < n_in ? name + " (inputs are read-only)" : name + " or just past its end");
        add_region(g.data + g.span, kPage, "the guard page after " + name);
      }
      for (size_t i = 0; i < n_in; ++i)
        in_t[i] = make_tensor(buf.tensors[i], dtypes[i], phase.shapes[i]);
      for (size_t i = 0; i < n_out; ++i)
        out_t[i] = make_tensor(buf.tensors[n_in + i], dtypes[n_in + i], phase.shapes[n_in + i]);
    }
    if (!buf.generated || buf.seed != phase.seed) {
      for (size_t i = 0; i < n_in; ++i) {
        Guarded& g = buf.tensors[i];
        g.set_read_only(false);
        generate_input(op, i, TensorView{dtypes[i], phase.shapes[i], g.data}, phase.seed);
        g.set_read_only(true);
      }
      buf.seed = phase.seed;
      buf.generated = true;
    }

    if (!phase.timed) {
      poison_outputs();
      double t0 = monotonic_seconds();
      int rc = call();
      last_call_s = monotonic_seconds() - t0;
      if (rc != 0) {
        emit({{"event", "kernel_error"}, {"phase", ph}, {"rc", rc}});
        return 0;
      }
      if (!check_canaries(ph)) return 0;
      if (!hand_over_outputs(ph, last_call_s)) return 4;
      if (!parent_says_continue()) return 0;
      continue;
    }

    // Timing: warm-ups, then samples until both the time and count minimums.
    const TimingConfig& tc = job.timing;
    int64_t warm = 0;
    double start = monotonic_seconds();
    while (warm < tc.min_warmup || monotonic_seconds() - start < tc.warmup_s) {
      double t0 = monotonic_seconds();
      int rc = call();
      last_call_s = monotonic_seconds() - t0;
      ++warm;
      if (rc != 0) {
        emit({{"event", "kernel_error"}, {"phase", ph}, {"rc", rc}});
        return 0;
      }
    }
    // Calls shorter than the clock can resolve well are timed in groups.
    const double kMinSample = 25e-6;
    int64_t per_sample = 1;
    if (last_call_s > 0 && last_call_s < kMinSample)
      per_sample = std::min<int64_t>(10000, static_cast<int64_t>(std::ceil(kMinSample / last_call_s)));
    emit({{"event", "timing_start"},
          {"phase", ph},
          {"estimate_s", last_call_s},
          {"calls_per_sample", per_sample}});
    // kevo's clock starts when it says "go": the samples that follow must add
    // up to what it sees (a report the candidate rewrote does not).
    if (read_line() != "go") return 0;
    // One sample: per_sample calls, timed together; the kernel's own error
    // code (rc) stops it, reported.
    int rc = 0;
    auto sample = [&]() -> double {
      const double t0 = monotonic_seconds();
      for (int64_t k = 0; k < per_sample; ++k)
        if ((rc = call()) != 0) {
          emit({{"event", "kernel_error"}, {"phase", ph}, {"rc", rc}});
          return 0;
        }
      return monotonic_seconds() - t0;
    };
    std::vector<double> samples;
    double timed = 0;
    while ((static_cast<int64_t>(samples.size()) < tc.min_samples || timed < tc.min_time_s) &&
           static_cast<int64_t>(samples.size()) < tc.max_samples) {
      const double dt = sample();
      if (rc != 0) return 0;
      timed += dt;
      samples.push_back(dt / static_cast<double>(per_sample));
    }
    // One sample more, its outputs poisoned first (outside the timed
    // region), and kevo checks what its calls left: a kernel that skips work
    // on inputs it has seen (every timed call repeats them) leaves the poison.
    poison_outputs();
    const double last = sample();
    if (rc != 0) return 0;
    samples.push_back(last / static_cast<double>(per_sample));
    if (!check_canaries(ph)) return 0;
    emit({{"event", "timing"},
          {"phase", ph},
          {"samples", samples},
          {"calls_per_sample", per_sample},
          {"warmup_calls", warm},
          {"machine", runner::host_state()}});
    if (!hand_over_outputs(ph, last_call_s)) return 4;
    if (!parent_says_continue()) return 0;
  }
  emit({{"event", "done"}});
  return 0;
}

// ---- roof calibration ---------------------------------------------------------

using BandwidthFn = double (*)(const char*, int, double, double);
using PeakFn = double (*)(int, double);

int run_calibration(const Job& job) {
  void* lib = dlopen(job.artifact.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    emit({{"event", "load_error"}, {"what", std::string(dlerror())}});
    return 0;
  }
  auto bw = reinterpret_cast<BandwidthFn>(dlsym(lib, "kevo_roof_bandwidth"));
  auto peak = reinterpret_cast<PeakFn>(dlsym(lib, "kevo_roof_fma"));
  if (!bw || !peak) {
    emit({{"event", "load_error"}, {"what", "calibration entry points missing"}});
    return 0;
  }
  for (size_t i = 0; i < job.points.size(); ++i) {
    const CalibrationPoint& p = job.points[i];
    double v = p.kind == "fp32_fma" ? peak(p.threads, job.min_point_s)
                                    : bw(p.kind.c_str(), p.threads, p.bytes, job.min_point_s);
    emit({{"event", "point"}, {"index", i}, {"value", v}});
  }
  emit({{"event", "done"}});
  return 0;
}

}  // namespace
}  // namespace kevo::runner

int main() {
  using namespace kevo::runner;
  signal(SIGPIPE, SIG_DFL);
  std::string line = read_line();
  Job job;
  try {
    job = Job::from_json(nlohmann::json::parse(line));
  } catch (const std::exception& e) {
    emit({{"event", "setup_error"}, {"what", std::string("bad job: ") + e.what()}});
    return 2;
  }
  install_crash_handlers();
  emit({{"event", "ready"}, {"pid", getpid()}});
  return job.mode == "calibrate" ? run_calibration(job) : run_kernel(job);
}
