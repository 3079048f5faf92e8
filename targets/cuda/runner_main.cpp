// kevo-cuda-runner: the persistent process that runs candidates on one GPU.
//
// kevo starts one per GPU (`kevo-cuda-runner --device N`) and keeps it for the
// whole search. It reads one JSON command per line on stdin and answers with
// JSON event lines on descriptor 3 (stdout and stderr belong to the kernels).
// Commands are runner::Job objects (targets/runner/protocol.h):
//   mode "kernel":    load the artifact, run the phases (checks and timing)
//   mode "calibrate": device-to-device copy bandwidth and bf16 tensor rate
//   mode "quit"
// A check copies the outputs into the file `output_path` and waits for
// "continue" or "stop" on stdin; kevo compares them with its CPU reference.
//
// What it guards against: outputs are poisoned (all bits set: NaN for floats)
// before each checked call; inputs come from pristine copies kept on the
// device and are compared with them after each checked call (a kernel that
// writes its inputs is caught); each output has a canary tail; every call's
// CUDA errors are read, and a sticky one (the context is lost) ends the
// process after reporting, so kevo starts a fresh runner.
//
// `--profile JOBFILE` runs the job's first phase once for a profiler: one
// warm-up call, then one call between cudaProfilerStart and cudaProfilerStop.
#include <cublas_v2.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/defined_operator.h"
#include "core/operator.h"
#include "targets/abi/kevo_kernel.h"
#include "targets/runner/launch_cover.h"

// A diagnostic build only, never kevo's: 1 records each sample's end event on
// the legacy default stream, as kevo's runner did until round 12, instead of
// the runner's own stream, to size what that event adds to a sample
// (bench/gpu_end_event.sh).
#ifndef KEVO_DIAG_END_ON_LEGACY
#define KEVO_DIAG_END_ON_LEGACY 0
#endif
#include "targets/runner/protocol.h"
#include "targets/runner/sandbox.h"

// Device code, in runner_kernels.cu.
void kevo_count_diff(const void* a, const void* b, size_t words, unsigned long long* count,
                     cudaStream_t stream);
void kevo_copy16(const void* src, void* dst, size_t bytes, int blocks, cudaStream_t stream);
void kevo_flush(void* p, size_t bytes, int mode, int value, int* sink, int blocks,
                cudaStream_t stream);
void kevo_spin(double us, cudaStream_t stream);
void kevo_fma_chains(int blocks, int iters, float* sink, cudaStream_t stream);

namespace kevo::cuda_runner {
namespace {

using runner::Job;
using runner::Phase;

constexpr size_t kCanaryBytes = 4096;
constexpr unsigned char kCanary = 0xA5;
constexpr int kMaxTensors = 16;
constexpr int kMaxScalars = 16;

int g_events_fd = runner::kEventsFd;  // stderr under a profiler (--profile)

void emit(const nlohmann::json& event) { runner::emit_event(g_events_fd, event); }

// The layers of containment this runner got (main), told to kevo at the
// start of each candidate's job.
std::vector<runner::ContainmentLayer> g_containment;

// The next command; "quit" at end of input (kevo is gone).
std::string read_line() {
  std::string line = runner::read_command_line();
  return line.empty() ? std::string("quit") : line;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The middle value (the upper one of an even count); 0 for none.
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string err_text(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

// ---- the GPU's state (NVML) -------------------------------------------------------------
//
// Read at the start and the end of each timing phase and sent with the
// samples, so that every time is stored with the clocks, temperatures and
// power it was taken under. libnvidia-ml.so.1 comes with the driver and is
// loaded at run time; without it only the host's state is sent.

struct NvmlField {  // nvmlFieldValue_t
  unsigned field_id, scope_id;
  long long timestamp, latency_us;
  int value_type, ret;
  union {
    double d;
    unsigned ui;
    unsigned long ul;
    unsigned long long ull;
    long long sll;
    int si;
    unsigned short us;
  } value;
};

class Nvml {
 public:
  // The clock-event reasons now, idle left out; none where NVML cannot say.
  std::optional<unsigned long long> throttle(int cuda_device) {
    unsigned long long reasons = 0;
    if (!open(cuda_device) || !reasons_ || reasons_(dev_, &reasons) != 0) return std::nullopt;
    return reasons & ~kReasonIdle;
  }

  // The state now: host_state() plus what NVML reads for the device, throttled
  // if it is now or `throttled_before` says it was.
  nlohmann::json state(int cuda_device, unsigned long long throttled_before) {
    nlohmann::json j = runner::host_state();
    if (!open(cuda_device)) return j;
    unsigned v = 0;
    if (clock_ && clock_(dev_, kClockSm, &v) == 0) j["sm_mhz"] = v;
    if (clock_ && clock_(dev_, kClockMem, &v) == 0) j["mem_mhz"] = v;
    if (temp_ && temp_(dev_, kTempGpu, &v) == 0) j["gpu_temp_c"] = v;
    if (power_ && power_(dev_, &v) == 0) j["power_w"] = v / 1000.0;
    if (fields_) {
      NvmlField f{};
      f.field_id = kFieldMemoryTemp;
      if (fields_(dev_, 1, &f) == 0 && f.ret == 0) {
        double t = f.value_type == 0   ? f.value.d
                   : f.value_type == 1 ? f.value.ui
                   : f.value_type == 2 ? static_cast<double>(f.value.ul)
                   : f.value_type == 3 ? static_cast<double>(f.value.ull)
                   : f.value_type == 4 ? static_cast<double>(f.value.sll)
                   : f.value_type == 5 ? f.value.si
                                       : f.value.us;
        if (t > 0) j["mem_temp_c"] = t;
      }
    }
    if (auto now = throttle(cuda_device)) j["throttle"] = *now | throttled_before;
    return j;
  }

 private:
  static constexpr int kClockSm = 1, kClockMem = 2, kTempGpu = 0;
  static constexpr unsigned kFieldMemoryTemp = 82;
  static constexpr unsigned long long kReasonIdle = 1;

  bool open(int cuda_device) {
    if (tried_) return dev_ != nullptr;
    tried_ = true;
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
    auto init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
    auto by_pci = reinterpret_cast<int (*)(const char*, void**)>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    clock_ = reinterpret_cast<int (*)(void*, int, unsigned*)>(dlsym(lib, "nvmlDeviceGetClockInfo"));
    temp_ = reinterpret_cast<int (*)(void*, int, unsigned*)>(dlsym(lib, "nvmlDeviceGetTemperature"));
    power_ = reinterpret_cast<int (*)(void*, unsigned*)>(dlsym(lib, "nvmlDeviceGetPowerUsage"));
    fields_ = reinterpret_cast<int (*)(void*, int, NvmlField*)>(dlsym(lib, "nvmlDeviceGetFieldValues"));
    void* r = dlsym(lib, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!r) r = dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
    reasons_ = reinterpret_cast<int (*)(void*, unsigned long long*)>(r);
    char bus[32] = {0};
    if (!init || !by_pci || init() != 0 ||
        cudaDeviceGetPCIBusId(bus, sizeof bus, cuda_device) != cudaSuccess || by_pci(bus, &dev_) != 0) {
      (void)cudaGetLastError();
      dev_ = nullptr;
    }
    return dev_ != nullptr;
  }

  bool tried_ = false;
  void* dev_ = nullptr;
  int (*clock_)(void*, int, unsigned*) = nullptr;
  int (*temp_)(void*, int, unsigned*) = nullptr;
  int (*power_)(void*, unsigned*) = nullptr;
  int (*fields_)(void*, int, NvmlField*) = nullptr;
  int (*reasons_)(void*, unsigned long long*) = nullptr;
};

Nvml g_nvml;

// ---- device buffers ----------------------------------------------------------------

struct DevBuf {
  void* p = nullptr;
  size_t bytes = 0;
  DevBuf() = default;
  explicit DevBuf(size_t n) : bytes(n) {
    if (cudaMalloc(&p, std::max<size_t>(n, 256)) != cudaSuccess) {
      p = nullptr;
      cudaGetLastError();
    }
  }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  ~DevBuf() {
    if (p) cudaFree(p);
  }
};

struct State {
  int device = 0;
  cudaDeviceProp prop{};
  cudaStream_t stream = nullptr;
  std::unique_ptr<DevBuf> flush;  // written before each timed call: evicts L2
  // How: 0 a kernel writes it (as torch's zero_(), the peers' method), 1
  // cudaMemsetAsync, 2 a kernel reads it (no dirty lines left). Each job's
  // timing.l2 picks 0 (dirty) or 2 (clean); KEVO_CUDA_FLUSH = fill | memset |
  // read overrides it for every job (-1: not set).
  int flush_mode = -1;
  int* flush_sink = nullptr;
  // GPU time of one flush by mode, measured at start for each mode a job can
  // use: the one KEVO_CUDA_FLUSH fixes, else fill and read.
  double flush_us[3] = {0, 0, 0};
  // Launch cover (KEVO_CUDA_COVER_US): GPU sleep queued between the flush and
  // the start event, so that a call whose host side takes longer than the
  // flush does not leave the GPU idle inside its sample. < 0: automatic
  // (targets/runner/launch_cover.h).
  double cover_us = -1;
  // Pristine inputs by (op, dtype, tensor, shape, seed): generated once on the
  // host, kept on the device for every later candidate.
  std::map<std::string, std::shared_ptr<DevBuf>> inputs;
  std::vector<std::string> input_order;  // oldest first, for eviction
  unsigned long long* diff_count = nullptr;
  // Pinned host memory that every device-to-host copy goes through (see
  // copy_to_host), kStageBytes long.
  void* stage = nullptr;
};

State g;

constexpr size_t kStageBytes = size_t(8) << 20;

// Copies `bytes` from the device to host memory `dst`, through the pinned
// stage, in chunks. Never a copy into pageable memory: on the H200, one
// cudaMemcpy to pageable memory (a check's outputs, its canary tail, the
// count of input words a kernel changed) left every later candidate of the
// process timed about 6% slower (rmsnorm 16384x4096: 68.5 us in the process's
// first job, 72.1-73.9 us in every job after one that had copied a byte to
// pageable memory; the same jobs without those copies stayed at 68.5 us).
// So the first candidate of a search was timed faster than all the others.
cudaError_t copy_to_host(void* dst, const void* src, size_t bytes) {
  for (size_t done = 0; done < bytes; done += kStageBytes) {
    const size_t n = std::min(kStageBytes, bytes - done);
    cudaError_t e = cudaMemcpyAsync(g.stage, static_cast<const char*>(src) + done, n,
                                    cudaMemcpyDeviceToHost, g.stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(g.stream);
    if (e != cudaSuccess) return e;
    std::memcpy(static_cast<char*>(dst) + done, g.stage, n);
  }
  return cudaSuccess;
}

std::string input_key(const Job& job, size_t i, const Shape& shape, uint64_t seed) {
  std::ostringstream k;
  k << job.op << '|' << dtype_name(job.dtypes.at(i)) << '|' << i << '|' << seed << '|';
  for (auto d : shape) k << d << ',';
  return k.str();
}

size_t free_device_bytes() {
  size_t free_b = 0, total_b = 0;
  cudaMemGetInfo(&free_b, &total_b);
  return free_b;
}

std::shared_ptr<DevBuf> allocate(size_t bytes) {
  // Evict cached inputs (oldest first) until the allocation fits.
  for (;;) {
    auto b = std::make_shared<DevBuf>(bytes);
    if (b->p) return b;
    if (g.input_order.empty()) return nullptr;
    g.inputs.erase(g.input_order.front());
    g.input_order.erase(g.input_order.begin());
  }
}

std::shared_ptr<DevBuf> pristine_input(const Job& job, const Operator& op, size_t i,
                                       const Shape& shape, uint64_t seed) {
  std::string key = input_key(job, i, shape, seed);
  auto it = g.inputs.find(key);
  if (it != g.inputs.end()) return it->second;
  size_t bytes = static_cast<size_t>(numel(shape)) * dtype_size(job.dtypes.at(i));
  std::vector<unsigned char> host(std::max<size_t>(bytes, 1));
  generate_input(op, i, TensorView{job.dtypes.at(i), shape, host.data()}, seed);
  auto buf = allocate(bytes);
  if (!buf) return nullptr;
  if (bytes && cudaMemcpy(buf->p, host.data(), bytes, cudaMemcpyHostToDevice) != cudaSuccess)
    return nullptr;
  g.inputs[key] = buf;
  g.input_order.push_back(key);
  return buf;
}

kevo_tensor make_tensor(void* data, DType dtype, const Shape& shape) {
  kevo_tensor t{};
  t.data = data;
  t.dtype = static_cast<int32_t>(dtype);
  t.rank = static_cast<int32_t>(shape.size());
  int64_t stride = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    t.shape[d] = shape[static_cast<size_t>(d)];
    t.stride[d] = stride;
    stride *= shape[static_cast<size_t>(d)];
  }
  return t;
}

// After a failed call or a CUDA error: clear what can be cleared and find out
// whether the context survived. A sticky error ends the runner.
bool context_lost() {
  cudaGetLastError();
  cudaError_t e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudaMemsetAsync(g.diff_count, 0, sizeof(unsigned long long), g.stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(g.stream);
  return e != cudaSuccess;
}

// Reports a CUDA error seen at `phase`; exits when the context is lost.
void report_cuda_error(size_t phase, cudaError_t e) {
  bool sticky = context_lost();
  emit({{"event", "cuda_error"}, {"phase", phase}, {"what", err_text(e)}, {"sticky", sticky}});
  if (sticky) _exit(3);
}

using LaunchFn = int (*)(const kevo_tensor*, int, kevo_tensor*, int, const double*, int,
                         cudaStream_t);

struct Loaded {
  void* lib = nullptr;
  LaunchFn fn = nullptr;
  ~Loaded() {
    if (lib) dlclose(lib);
  }
};

// ---- one candidate ---------------------------------------------------------------

int run_kernel(const Job& job, bool profile_only) {
  std::shared_ptr<const Operator> defined;
  const Operator* opp = nullptr;
  try {
    opp = &job_operator(job.op, job.op_definition, defined);
  } catch (const std::exception& e) {
    emit({{"event", "setup_error"}, {"what", e.what()}});
    return 0;
  }
  const Operator& op = *opp;
  if (!profile_only) emit(runner::containment_event(g_containment));
  Loaded mod;
  mod.lib = dlopen(job.artifact.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!mod.lib) {
    emit({{"event", "load_error"}, {"what", std::string(dlerror())}});
    return 0;
  }
  mod.fn = reinterpret_cast<LaunchFn>(dlsym(mod.lib, job.entry.c_str()));
  if (!mod.fn) {
    emit({{"event", "load_error"}, {"what", "no entry point " + job.entry}});
    return 0;
  }
  // Loading a module can leave an error behind (a kernel image for another GPU).
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) {
    emit({{"event", "load_error"}, {"what", err_text(e)}});
    return 0;
  }
  const size_t n_in = op.n_inputs(), n_out = op.n_outputs();
  if (n_in + n_out > kMaxTensors || job.scalars.size() > kMaxScalars) {
    emit({{"event", "setup_error"}, {"what", "too many tensors or scalars for the runner"}});
    return 0;
  }
  if (job.dtypes.size() != n_in + n_out) {
    emit({{"event", "setup_error"},
          {"what", "the job's dtypes do not match the operator's tensors"}});
    return 0;
  }
  const int n_scalars = static_cast<int>(job.scalars.size());
  const std::vector<DType>& dtypes = job.dtypes;

  for (size_t ph = 0; ph < job.phases.size(); ++ph) {
    const Phase& phase = job.phases[ph];
    // Inputs: a working copy of each pristine input.
    std::vector<std::shared_ptr<DevBuf>> pristine, work, outs;
    for (size_t i = 0; i < n_in; ++i) {
      auto p = pristine_input(job, op, i, phase.shapes[i], phase.seed);
      auto w = p ? allocate(p->bytes) : nullptr;
      if (!p || !w) {
        emit({{"event", "setup_error"}, {"what", "out of device memory for the inputs"}});
        return 0;
      }
      cudaMemcpyAsync(w->p, p->p, p->bytes, cudaMemcpyDeviceToDevice, g.stream);
      pristine.push_back(p);
      work.push_back(w);
    }
    for (size_t i = 0; i < n_out; ++i) {
      size_t bytes =
          static_cast<size_t>(numel(phase.shapes[n_in + i])) * dtype_size(dtypes[n_in + i]);
      auto o = allocate(bytes + kCanaryBytes);
      if (!o) {
        emit({{"event", "setup_error"}, {"what", "out of device memory for the outputs"}});
        return 0;
      }
      o->bytes = bytes;
      outs.push_back(o);
    }
    kevo_tensor in_t[kMaxTensors], out_t[kMaxTensors];
    for (size_t i = 0; i < n_in; ++i) in_t[i] = make_tensor(work[i]->p, dtypes[i], phase.shapes[i]);
    for (size_t i = 0; i < n_out; ++i)
      out_t[i] = make_tensor(outs[i]->p, dtypes[n_in + i], phase.shapes[n_in + i]);
    auto call = [&]() {
      // Fresh descriptors every call: a kernel may scribble on the ones it got.
      kevo_tensor in[kMaxTensors], out[kMaxTensors];
      double scalars[kMaxScalars];
      std::memcpy(in, in_t, n_in * sizeof(kevo_tensor));
      std::memcpy(out, out_t, n_out * sizeof(kevo_tensor));
      if (n_scalars) std::memcpy(scalars, job.scalars.data(), n_scalars * sizeof(double));
      return mod.fn(in, static_cast<int>(n_in), out, static_cast<int>(n_out),
                    n_scalars ? scalars : nullptr, n_scalars, g.stream);
    };
    // Waits for the whole device after a call that returned rc; false after reporting.
    auto wait_call = [&](int rc) -> bool {
      cudaError_t e = cudaDeviceSynchronize();
      if (e == cudaSuccess) e = cudaGetLastError();
      if (e != cudaSuccess) {
        report_cuda_error(ph, e);
        return false;
      }
      if (rc != 0) {
        emit({{"event", "kernel_error"}, {"phase", ph}, {"rc", rc}});
        return false;
      }
      return true;
    };
    // Runs one call and waits for it: wall seconds of both in *seconds, of
    // the call alone (until kevo_launch returns) in *host.
    auto call_and_wait = [&](double* seconds, double* host = nullptr) -> bool {
      double t0 = now_s();
      const int rc = call();
      if (host) *host = now_s() - t0;
      bool ok = wait_call(rc);
      if (seconds) *seconds = now_s() - t0;
      return ok;
    };
    cudaError_t setup = cudaStreamSynchronize(g.stream);
    if (setup != cudaSuccess) {
      report_cuda_error(ph, setup);
      return 0;
    }

    if (profile_only) {
      if (!call_and_wait(nullptr)) return 0;
      cudaProfilerStart();
      bool ok = call_and_wait(nullptr);
      cudaProfilerStop();
      if (ok) emit({{"event", "done"}});
      return 0;
    }

    // Outputs poisoned (all bits set: NaN for floats) and their canaries
    // set, queued on the stream.
    auto poison_outputs = [&] {
      for (size_t i = 0; i < n_out; ++i) {
        cudaMemsetAsync(outs[i]->p, 0xFF, outs[i]->bytes, g.stream);  // NaN poison
        cudaMemsetAsync(static_cast<char*>(outs[i]->p) + outs[i]->bytes, kCanary, kCanaryBytes,
                        g.stream);
      }
    };
    // After a call: inputs untouched, canaries intact, then the outputs to
    // kevo through the shared file and a "check" event; true when kevo
    // answers "continue".
    auto hand_over = [&](double seconds) -> bool {
      for (size_t i = 0; i < n_in; ++i) {
        size_t words = pristine[i]->bytes / 4;
        if (!words) continue;
        cudaMemsetAsync(g.diff_count, 0, sizeof(unsigned long long), g.stream);
        kevo_count_diff(work[i]->p, pristine[i]->p, words, g.diff_count, g.stream);
        unsigned long long diff = 0;
        if (cudaError_t e = copy_to_host(&diff, g.diff_count, sizeof(diff)); e != cudaSuccess) {
          report_cuda_error(ph, e);
          return false;
        }
        if (diff) {
          emit({{"event", "input_written"}, {"phase", ph}, {"tensor", op.tensor(i).name},
                {"words", diff}});
          return false;
        }
      }
      for (size_t i = 0; i < n_out; ++i) {
        std::vector<unsigned char> tail(kCanaryBytes);
        if (cudaError_t e = copy_to_host(tail.data(), static_cast<char*>(outs[i]->p) + outs[i]->bytes,
                                         kCanaryBytes);
            e != cudaSuccess) {
          report_cuda_error(ph, e);
          return false;
        }
        for (size_t k = 0; k < kCanaryBytes; ++k)
          if (tail[k] != kCanary) {
            emit({{"event", "overrun"}, {"phase", ph}, {"tensor", op.tensor(n_in + i).name},
                  {"offset", k}});
            return false;
          }
      }
      size_t total = 0;
      auto offsets = runner::output_offsets(n_in, dtypes, phase.shapes, &total);
      int fd = open(job.output_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
      if (fd < 0 || ftruncate(fd, static_cast<off_t>(std::max<size_t>(total, 1))) != 0) {
        emit({{"event", "setup_error"}, {"what", "cannot write the output file " + job.output_path}});
        if (fd >= 0) close(fd);
        return false;
      }
      void* map = mmap(nullptr, std::max<size_t>(total, 1), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      close(fd);
      if (map == MAP_FAILED) {
        emit({{"event", "setup_error"}, {"what", "cannot map the output file"}});
        return false;
      }
      cudaError_t copied = cudaSuccess;
      for (size_t i = 0; i < n_out && copied == cudaSuccess; ++i)
        copied = copy_to_host(static_cast<char*>(map) + offsets[i], outs[i]->p, outs[i]->bytes);
      munmap(map, std::max<size_t>(total, 1));
      if (copied != cudaSuccess) {
        report_cuda_error(ph, copied);
        return false;
      }
      emit({{"event", "check"}, {"phase", ph}, {"seconds", seconds}, {"bytes", total}});
      return read_line() == "continue";
    };

    if (!phase.timed) {
      poison_outputs();
      cudaStreamSynchronize(g.stream);
      double seconds = 0;
      if (!call_and_wait(&seconds)) return 0;
      if (!hand_over(seconds)) return 0;
      continue;
    }

    // Timing: warm-ups, then one sample per call with L2 flushed before it.
    const TimingConfig& tc = job.timing;
    const int flush_mode = g.flush_mode >= 0 ? g.flush_mode : tc.l2 == "clean" ? 2 : 0;
    const double flush_us = g.flush_us[flush_mode];
    int64_t warm = 0;
    double start = now_s(), last = 0, host_s = 0;
    std::vector<double> host;  // the warm-ups' host time per call, then the samples'
    std::vector<double> warm_call;  // the warm-ups' whole calls (launch and wait)
    while (warm < tc.min_warmup || now_s() - start < tc.warmup_s) {
      if (!call_and_wait(&last, &host_s)) return 0;
      host.push_back(host_s);
      warm_call.push_back(last);
      ++warm;
    }
    // The launch cover (targets/runner/launch_cover.h): from the warm-up's
    // host times and calls, unless KEVO_CUDA_COVER_US fixed it.
    std::vector<double> warm_host_us;
    for (double h : host) warm_host_us.push_back(h * 1e6);
    LaunchCover cover(flush_us, std::move(warm_host_us), g.cover_us, median(warm_call) * 1e6);
    host.clear();
    const unsigned long long throttled_before = g_nvml.throttle(g.device).value_or(0);
    emit({{"event", "timing_start"}, {"phase", ph}, {"estimate_s", last}, {"calls_per_sample", 1}});
    cudaEvent_t ev0, ev1;
    cudaEventCreate(&ev0);
    cudaEventCreate(&ev1);
    // One sample. Everything the last call started, on any stream, is
    // finished; with `poison` the outputs are poisoned (outside the timed
    // region: kevo checks what the call left); the L2 holds nothing of the
    // inputs; then either the device is left idle before the start event
    // (`fence`: nothing the kernel starts can run ahead of it) or the launch
    // cover is queued. The call runs between a start event and an end event
    // on our stream (work the kernel puts on the legacy default stream is
    // ordered before the end event: our stream is a blocking one); then the
    // whole device is synchronized, and how long it stayed busy is work the
    // end event did not wait for (a stream of the kernel's own, blocking or
    // not). An end event on the legacy stream would also wait for a blocking
    // stream of the kernel's, but not for a non-blocking one, so it defends
    // nothing this check does not; it cost each sample about 2% and doubled
    // its spread at 4096^3 on an H100 (bench/results round 11). False after
    // reporting an error.
    struct Sample {
      double event_s = 0, busy_s = 0, host_s = 0;
    };
    int flush_value = 0;
    auto take_sample = [&](bool fence, bool poison, Sample& out) -> bool {
      cudaDeviceSynchronize();
      if (poison) poison_outputs();
      kevo_flush(g.flush->p, g.flush->bytes, flush_mode, ++flush_value, g.flush_sink,
                 4 * g.prop.multiProcessorCount, g.stream);
      if (fence) cudaDeviceSynchronize();
      else if (cover.cover_us() > 0) kevo_spin(cover.cover_us(), g.stream);
      cudaEventRecord(ev0, g.stream);
      const double h0 = now_s();
      int rc = call();
      out.host_s = now_s() - h0;
      cudaEventRecord(ev1, KEVO_DIAG_END_ON_LEGACY ? nullptr : g.stream);
      cudaError_t e = cudaEventSynchronize(ev1);
      const double h1 = now_s();
      if (e == cudaSuccess) e = cudaDeviceSynchronize();
      out.busy_s = now_s() - h1;
      if (e == cudaSuccess) e = cudaGetLastError();
      if (e != cudaSuccess) {
        report_cuda_error(ph, e);
        return false;
      }
      if (rc != 0) {
        emit({{"event", "kernel_error"}, {"phase", ph}, {"rc", rc}});
        return false;
      }
      float ms = 0;
      cudaEventElapsedTime(&ms, ev0, ev1);
      out.event_s = ms * 1e-3;
      return true;
    };
    // Three samples fenced on the whole device come first, the time the
    // device stayed busy counted in: in the samples after them, work on a
    // stream of the kernel's own could run alongside the flush, ahead of
    // their start event. kevo holds those samples against these.
    std::vector<double> fenced;
    for (int k = 0; k < 3; ++k) {
      Sample one;
      if (!take_sample(true, false, one)) return 0;
      fenced.push_back(one.event_s + one.busy_s);
    }
    std::vector<double> samples;
    std::vector<double> after_end;  // per sample: the device busy after its end event
    double timed = 0;
    size_t outlasted = 0;      // kept samples whose call the flush and cover did not hide
    bool last_sample = false;  // the one sample more, its outputs poisoned first
    while (!last_sample) {
      last_sample = !((static_cast<int64_t>(samples.size()) < tc.min_samples || timed < tc.min_time_s) &&
                      static_cast<int64_t>(samples.size()) < tc.max_samples);
      Sample one;
      if (!take_sample(false, last_sample, one)) return 0;
      if (cover.take_again(one.host_s * 1e6, samples.size())) {
        last_sample = false;  // (a last sample is taken again, poisoned again)
        continue;
      }
      outlasted += !cover.hides(one.host_s * 1e6);
      host.push_back(one.host_s);
      after_end.push_back(one.busy_s);
      samples.push_back(one.event_s);
      timed += one.event_s;
    }
    cudaEventDestroy(ev0);
    cudaEventDestroy(ev1);
    const double host_us = median(host) * 1e6;
    // `outlasted`: the kept samples whose call the flush and the cover did not
    // hide with room to spare: the GPU may have idled inside them, waiting for
    // the launch. The median can hide a tail of them; this count does not.
    double host_max_us = 0;
    for (double h : host) host_max_us = std::max(host_max_us, h * 1e6);
    // Kept with the evaluation (its stderr): what the samples contain.
    std::fprintf(stderr,
                 "kevo-cuda-runner: timing: host time per call %.1f us (median), L2 flush (%s) "
                 "%.1f us of GPU time, launch cover %.0f us, device busy after the end event "
                 "%.1f us (median), fenced samples %.1f us (median), %zu of %zu samples' calls "
                 "outlasted the flush and cover (host at most %.0f us), %d taken again under a "
                 "longer cover%s\n",
                 host_us, flush_mode == 1 ? "memset" : flush_mode == 2 ? "read" : "fill",
                 flush_us, cover.cover_us(), median(after_end) * 1e6, median(fenced) * 1e6, outlasted,
                 host.size(), host_max_us, cover.retaken(),
                 host_us > 0.8 * (flush_us + cover.cover_us())
                     ? "; HOST-BOUND: the call's host time exceeds what the flush and cover hide, "
                       "so the GPU idles inside each sample"
                     : "");
    std::fflush(stderr);
    // The state at the end, throttled if it was at either end.
    const nlohmann::json machine = g_nvml.state(g.device, throttled_before);
    emit({{"event", "timing"},
          {"phase", ph},
          {"samples", samples},
          {"calls_per_sample", 1},
          {"warmup_calls", warm},
          {"after_end_s", after_end},
          {"fenced_s", fenced},
          {"host_call_s", host_us * 1e-6},
          {"machine", machine},
          {"launch",
           {{"host_us", host_us},
            {"cover_us", cover.cover_us()},
            {"outlasted", outlasted},
            {"retaken", cover.retaken()}}}});
    if (!hand_over(samples.back())) return 0;
  }
  emit({{"event", "done"}});
  return 0;
}

// ---- roof calibration ------------------------------------------------------------------

// Best device-to-device copy bandwidth for a working set of `bytes` (source
// plus destination), over cudaMemcpyAsync and a 16-byte copy kernel, in GB/s
// counting bytes read plus bytes written.
double copy_gbps(double bytes, double min_s) {
  size_t half = static_cast<size_t>(bytes / 2) / 16 * 16;
  DevBuf a(half), b(half);
  if (!a.p || !b.p) return 0;
  cudaMemset(a.p, 1, half);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  double best = 0;
  for (int method = 0; method < 2; ++method) {
    double spent = 0;
    int reps = 0;
    while (spent < min_s / 2 || reps < 5) {
      cudaEventRecord(e0, g.stream);
      if (method == 0)
        cudaMemcpyAsync(b.p, a.p, half, cudaMemcpyDeviceToDevice, g.stream);
      else
        kevo_copy16(a.p, b.p, half, g.prop.multiProcessorCount * 8, g.stream);
      cudaEventRecord(e1, g.stream);
      cudaEventSynchronize(e1);
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      if (ms > 0 && reps > 0) best = std::max(best, 2.0 * half / (ms * 1e-3) / 1e9);
      spent += ms * 1e-3;
      ++reps;
    }
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return best;
}

// The best rate (GFLOP/s) of `launch` (`flop` each, warmed up by the
// caller), timed with events on the runner's stream until `min_s` of GPU time
// and at least 5 launches; a launch that returns false stops it.
template <class Launch>
double best_gflops(const Launch& launch, double flop, double min_s) {
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  double best = 0, spent = 0;
  int reps = 0;
  while (spent < min_s || reps < 5) {
    cudaEventRecord(e0, g.stream);
    if (!launch()) break;
    cudaEventRecord(e1, g.stream);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    if (ms > 0) best = std::max(best, flop / (ms * 1e-3) / 1e9);
    spent += ms * 1e-3;
    ++reps;
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return best;
}

// fp32 CUDA-core rate (GFLOP/s): chains of FMAs filling every SM (8 blocks
// of 256 threads each), the best of repeated launches. The roof of a kernel
// that computes in fp32 without tensor cores.
double fp32_fma_gflops(double min_s) {
  DevBuf sink(sizeof(float));
  if (!sink.p) return 0;
  const int blocks = g.prop.multiProcessorCount * 8;
  const int iters = 1 << 16;
  auto launch = [&] {
    kevo_fma_chains(blocks, iters, static_cast<float*>(sink.p), g.stream);
    return true;
  };
  launch();
  cudaStreamSynchronize(g.stream);
  return best_gflops(launch, 16.0 * iters * blocks * 256, min_s);
}

// bf16 tensor-core rate (GFLOP/s) of cuBLAS on an n x n x n product of random
// data (never zeros: they run faster than real data).
double bf16_gemm_gflops(int n, double min_s) {
  size_t elems = static_cast<size_t>(n) * n;
  DevBuf a(elems * 2), b(elems * 2), c(elems * 2);
  if (!a.p || !b.p || !c.p) return 0;
  std::vector<uint16_t> host(elems);
  uint32_t s = 12345;
  for (auto& h : host) {
    s = s * 1664525u + 1013904223u;
    // bf16 in [-1, 1): sign, exponent 0x7E or lower, random mantissa.
    h = static_cast<uint16_t>(((s >> 16) & 0x807F) | (0x3C00 + ((s >> 8) & 0x0180)));
  }
  cudaMemcpy(a.p, host.data(), elems * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(b.p, host.data(), elems * 2, cudaMemcpyHostToDevice);
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 0;
  cublasSetStream(h, g.stream);
  float alpha = 1, beta = 0;
  auto gemm = [&] {
    return cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a.p, CUDA_R_16BF, n, b.p,
                        CUDA_R_16BF, n, &beta, c.p, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
  };
  for (int i = 0; i < 3; ++i) gemm();
  cudaStreamSynchronize(g.stream);
  const double best = best_gflops(gemm, 2.0 * n * double(n) * n, min_s);
  cublasDestroy(h);
  return best;
}

int run_calibration(const Job& job) {
  // The input cache would leave less memory for the large points.
  g.inputs.clear();
  g.input_order.clear();
  for (size_t i = 0; i < job.points.size(); ++i) {
    const runner::CalibrationPoint& p = job.points[i];
    double v = 0;
    if (p.kind == "copy")
      v = copy_gbps(p.bytes, job.min_point_s);
    else if (p.kind == "bf16_tensor")
      v = bf16_gemm_gflops(static_cast<int>(p.bytes), job.min_point_s);
    else if (p.kind == "fp32_fma")
      v = fp32_fma_gflops(job.min_point_s);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) {
      report_cuda_error(i, e);
      return 0;
    }
    emit({{"event", "point"}, {"index", i}, {"value", v}});
  }
  emit({{"event", "done"}});
  return 0;
}

nlohmann::json device_info() {
  int count = 0, driver = 0, runtime = 0;
  cudaGetDeviceCount(&count);
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  const cudaDeviceProp& p = g.prop;
  int clock_khz = 0, mem_clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, g.device);
  cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, g.device);
  return {{"device", g.device},
          {"device_count", count},
          {"name", p.name},
          {"cc", std::to_string(p.major) + "." + std::to_string(p.minor)},
          {"sms", p.multiProcessorCount},
          {"l2_bytes", p.l2CacheSize},
          {"memory_bytes", p.totalGlobalMem},
          {"smem_per_block_optin", p.sharedMemPerBlockOptin},
          {"clock_khz", clock_khz},
          {"memory_clock_khz", mem_clock_khz},
          {"bus_width", p.memoryBusWidth},
          {"driver", driver},
          {"runtime", runtime}};
}

}  // namespace
}  // namespace kevo::cuda_runner

int main(int argc, char** argv) {
  using namespace kevo::cuda_runner;
  signal(SIGPIPE, SIG_DFL);
  std::string profile_job, files_dir, output_file, no_landlock;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) g.device = std::atoi(argv[++i]);
    else if (a == "--profile" && i + 1 < argc) profile_job = argv[++i];
    else if (a == "--files" && i + 1 < argc) files_dir = argv[++i];
    else if (a == "--output" && i + 1 < argc) output_file = argv[++i];
    else if (a == "--no-landlock" && i + 1 < argc) no_landlock = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: kevo-cuda-runner [--device N] [--files DIR --output FILE | "
                   "--no-landlock WHY] [--profile JOBFILE]\n");
      return 2;
    }
  }
  // Under a profiler the events go to stderr: there is no descriptor 3.
  if (!profile_job.empty()) g_events_fd = 2;
  // A network namespace of its own, then the file system confined to what
  // the driver and the runner need (--files: the directory kevo puts each
  // candidate in; --output: the file the checks' outputs go to), while the
  // process has one thread: a user namespace needs that, and Landlock binds
  // only the threads started after it, so every thread the driver starts is
  // confined too. The driver reaches the GPU through /dev/nvidia* and MPS
  // through a unix socket's path, neither of which a network namespace
  // hides. KEVO_CUDA_NO_FILTER=1 (which kevo sets under ncu, whose injection
  // writes its own files and talks to ncu over the network) leaves all three
  // layers out.
  const bool contain = !kevo::runner::cuda_filter_disabled();
  kevo::runner::ContainmentSteps why_not;
  why_not.network =
      contain ? kevo::runner::enter_network_namespace() : "KEVO_CUDA_NO_FILTER=1";
  if (!contain)
    why_not.landlock = "KEVO_CUDA_NO_FILTER=1";
  else if (!no_landlock.empty())
    why_not.landlock = no_landlock;  // kevo's retry, where the driver failed under it
  else if (files_dir.empty() || output_file.empty())
    why_not.landlock = "started without --files and --output";
  else
    why_not.landlock = kevo::runner::confine_file_system(
        kevo::runner::cuda_runner_files(files_dir, output_file));
  // Timing options, read before the device so that a bad one is reported anywhere.
  if (const char* f = std::getenv("KEVO_CUDA_FLUSH")) {
    const std::string m = f;
    if (m == "fill") g.flush_mode = 0;
    else if (m == "memset") g.flush_mode = 1;
    else if (m == "read") g.flush_mode = 2;
    else if (!m.empty()) {
      emit({{"event", "setup_error"}, {"what", "KEVO_CUDA_FLUSH: expected fill, memset or read, got " + m}});
      return 2;
    }
  }
  if (const char* c = std::getenv("KEVO_CUDA_COVER_US")) {
    const std::string v = c;
    if (!v.empty() && v != "auto") {
      char* end = nullptr;
      const double us = std::strtod(v.c_str(), &end);
      if (*end || !(us >= 0 && us <= 1e5)) {
        emit({{"event", "setup_error"}, {"what", "KEVO_CUDA_COVER_US: expected auto or microseconds in [0, 100000], got " + v}});
        return 2;
      }
      g.cover_us = us;
    }
  }
  cudaError_t e = cudaSetDevice(g.device);
  if (e == cudaSuccess) e = cudaFree(nullptr);  // creates the context
  if (e == cudaSuccess) e = cudaGetDeviceProperties(&g.prop, g.device);
  if (e == cudaSuccess) e = cudaStreamCreate(&g.stream);  // blocking: see the timing loop (take_sample)
  if (e == cudaSuccess) e = cudaMalloc(&g.diff_count, sizeof(unsigned long long));
  if (e == cudaSuccess) e = cudaMalloc(&g.flush_sink, sizeof(int));
  if (e == cudaSuccess) e = cudaMallocHost(&g.stage, kStageBytes);

  if (e != cudaSuccess) {
    emit({{"event", "setup_error"}, {"what", "no usable CUDA device " + std::to_string(g.device) + ": " + err_text(e)}});
    return 4;
  }
  // Twice the L2, at least 64 MiB.
  g.flush = std::make_unique<DevBuf>(std::max<size_t>(size_t(2) * g.prop.l2CacheSize, size_t(64) << 20));
  if (!g.flush->p) {
    emit({{"event", "setup_error"}, {"what", "cannot allocate the L2 flush buffer"}});
    return 4;
  }

  {  // each usable flush's GPU time: the median of 5
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    for (int mode : g.flush_mode >= 0 ? std::vector<int>{g.flush_mode} : std::vector<int>{0, 2}) {
      std::vector<double> t;
      for (int i = 0; i < 5; ++i) {
        cudaEventRecord(a, g.stream);
        kevo_flush(g.flush->p, g.flush->bytes, mode, i, g.flush_sink, 4 * g.prop.multiProcessorCount,
                   g.stream);
        cudaEventRecord(b, g.stream);
        float ms = 0;
        if (cudaEventSynchronize(b) == cudaSuccess && cudaEventElapsedTime(&ms, a, b) == cudaSuccess)
          t.push_back(ms * 1e3);
      }
      g.flush_us[mode] = median(t);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    if (cudaGetLastError() != cudaSuccess) {
      emit({{"event", "setup_error"}, {"what", "the L2 flush failed"}});
      return 4;
    }
  }
  // The system-call filter, now that the context exists (the driver has
  // opened its devices and started its threads: TSYNC covers them) and
  // before any candidate is loaded. Allow by default with a deny list: what
  // the driver calls later cannot be listed without a GPU to watch it.
  // Tried on an H200 (the GPU tests pass with it on).
  why_not.filter = contain
                       ? kevo::runner::install_syscall_filter(kevo::runner::FilterProfile::cuda)
                       : "KEVO_CUDA_NO_FILTER=1";
  g_containment = kevo::runner::containment_got(kevo::runner::FilterProfile::cuda, why_not);
  if (!profile_job.empty()) {
    std::ifstream in(profile_job);
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded()) {
      emit({{"event", "setup_error"}, {"what", "cannot read " + profile_job}});
      return 2;
    }
    return run_kernel(kevo::runner::Job::from_json(j), true);
  }
  emit({{"event", "ready"}, {"pid", getpid()}, {"info", device_info()}});
  for (;;) {
    std::string line = read_line();
    if (line == "quit") return 0;
    kevo::runner::Job job;
    try {
      job = kevo::runner::Job::from_json(nlohmann::json::parse(line));
    } catch (const std::exception& ex) {
      emit({{"event", "setup_error"}, {"what", std::string("bad job: ") + ex.what()}});
      continue;
    }
    if (job.mode == "quit") return 0;
    if (job.mode == "calibrate")
      run_calibration(job);
    else
      run_kernel(job, false);
  }
}
