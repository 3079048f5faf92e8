#include "core/reference_program.h"

#include <dlfcn.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <sstream>

#include <fmt/format.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/paths.h"
#include "core/process.h"
// The C contract every kernel meets, and a reference's extras; headers only,
// no dependency on the targets library.
#include "targets/abi/kevo_kernel.h"
#include "targets/abi/kevo_reference.h"

namespace kevo {

namespace {

using KernelFn = int (*)(const kevo_tensor*, int, kevo_tensor*, int, const double*, int);
using ReferenceFn = int (*)(const kevo_tensor*, int, kevo_tensor*, int, const double*, int,
                            const kevo_reference_context*);

// kevo_reference_context::round: `v` stored as kevo stores an output of
// `dtype`, read back.
double round_to_dtype(double v, int32_t dtype) {
  if (dtype < 0 || dtype > static_cast<int32_t>(DType::i8)) return v;
  alignas(8) unsigned char buf[8];
  store_element(static_cast<DType>(dtype), buf, 0, v);
  return load_element(static_cast<DType>(dtype), buf, 0);
}

kevo_tensor f64_tensor(const void* data, const Shape& shape) {
  kevo_tensor t{};
  t.data = const_cast<void*>(data);
  t.dtype = KEVO_F64;
  t.rank = static_cast<int32_t>(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    t.shape[i] = shape[i];
    t.stride[i] = stride;
    stride *= shape[i];
  }
  return t;
}

// The first line of compiler output that names an error, else the first line.
std::string first_error_line(const std::string& text) {
  std::istringstream lines(text);
  std::string line, first;
  while (std::getline(lines, line)) {
    if (first.empty() && !line.empty()) first = line;
    if (line.find("error") != std::string::npos) return line;
  }
  return first;
}

}  // namespace

struct ReferenceProgram::Loaded {
  std::mutex mutex;
  void* handle = nullptr;
  KernelFn fn = nullptr;
  ReferenceFn ref_fn = nullptr;  // kevo_reference, preferred when defined
};

ReferenceProgram::ReferenceProgram(std::string op_name, std::string source, std::string language,
                                   std::string origin)
    : op_name_(std::move(op_name)),
      source_(std::move(source)),
      language_(std::move(language)),
      origin_(std::move(origin)),
      hash_(sha256_hex(language_ + "\n" + source_).substr(0, 32)),
      loaded_(std::make_shared<Loaded>()) {}

void ReferenceProgram::prepare() const {
  std::lock_guard<std::mutex> lock(loaded_->mutex);
  if (loaded_->fn || loaded_->ref_fn) return;
  const auto dir = cache_dir() / "references";
  std::filesystem::create_directories(dir);
  const bool cxx = language_ == "c++";
  const auto lib = dir / (hash_ + ".so");
  if (!std::filesystem::exists(lib)) {
    const auto src = dir / (hash_ + (cxx ? ".cpp" : ".c"));
    write_file_atomic(src, source_.data(), source_.size());
    // Each process compiles to its own name, then renames: concurrent kevos
    // never load a half-written library.
    const auto tmp = dir / fmt::format("{}.{}.so.tmp", hash_, getpid());
    SpawnOptions o;
    o.argv = {cxx ? "c++" : "cc",
              "-O2",
              "-pthread",
              "-shared",
              "-fPIC",
              "-I" + (kevo_home() / "targets" / "abi").string(),
              "-o",
              tmp.string(),
              src.string()};
    ProcessResult r = run_process(o, 120);
    if (r.exit_code != 0) {
      std::filesystem::remove(tmp);
      std::string why = r.timed_out ? "the compiler timed out" : first_error_line(r.err + r.out);
      throw UserError(
          fmt::format("{}: the reference of {} does not compile: {}", origin_, op_name_, why));
    }
    std::filesystem::rename(tmp, lib);
  }
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h)
    throw UserError(
        fmt::format("{}: cannot load the reference of {}: {}", origin_, op_name_, dlerror()));
  auto ref_fn = reinterpret_cast<ReferenceFn>(dlsym(h, "kevo_reference"));
  auto fn = reinterpret_cast<KernelFn>(dlsym(h, "kevo_kernel"));
  if (!fn && !ref_fn) {
    dlclose(h);
    throw UserError(fmt::format(
        "{}: the reference of {} defines no kevo_kernel (or kevo_reference) function", origin_,
        op_name_));
  }
  loaded_->handle = h;
  loaded_->fn = fn;
  loaded_->ref_fn = ref_fn;
}

void ReferenceProgram::run(const std::vector<std::vector<double>>& in,
                           const std::vector<Shape>& in_shapes,
                           std::vector<std::vector<double>>& out,
                           const std::vector<Shape>& out_shapes, const std::vector<double>& scalars,
                           double timeout_s, const std::vector<DType>& dtypes) const {
  prepare();
  // Everything the child needs is built before fork: after it, the child
  // only calls the reference and exits.
  std::vector<kevo_tensor> tin, tout;
  for (size_t i = 0; i < in.size(); ++i) tin.push_back(f64_tensor(in[i].data(), in_shapes[i]));
  size_t total = sizeof(int64_t);  // the return code first
  std::vector<size_t> offsets;
  for (const auto& s : out_shapes) {
    offsets.push_back(total);
    total += static_cast<size_t>(numel(s)) * sizeof(double);
  }
  void* shared = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED)
    throw UserError(fmt::format("cannot map {} bytes for the reference of {}", total, op_name_));
  char* base = static_cast<char*>(shared);
  for (size_t i = 0; i < out_shapes.size(); ++i)
    tout.push_back(f64_tensor(base + offsets[i], out_shapes[i]));
  const KernelFn fn = loaded_->fn;
  const ReferenceFn ref_fn = loaded_->ref_fn;
  std::vector<int32_t> dtype_codes;
  for (DType t : dtypes) dtype_codes.push_back(static_cast<int32_t>(t));
  dtype_codes.resize(in.size() + out_shapes.size(), KEVO_F64);
  const kevo_reference_context context{dtype_codes.data(), round_to_dtype};
  // Stays unless the reference returns: an exit() inside it is a failure too.
  constexpr int64_t kNoReturn = INT64_MIN;
  *reinterpret_cast<int64_t*>(base) = kNoReturn;

  pid_t pid = fork();
  if (pid < 0) {
    munmap(shared, total);
    throw UserError(
        fmt::format("cannot fork to run the reference of {}: {}", op_name_, std::strerror(errno)));
  }
  if (pid == 0) {
    // The reference is the user's code: it dies of its own faults, whatever
    // handlers kevo's process holds (ASan's, in make test-asan, turned a
    // crash into exit status 1, which read as "exited instead of returning").
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) signal(sig, SIG_DFL);
    const int n_in = static_cast<int>(tin.size()), n_out = static_cast<int>(tout.size());
    const int n_s = static_cast<int>(scalars.size());
    const int rc = ref_fn ? ref_fn(tin.data(), n_in, tout.data(), n_out, scalars.data(), n_s,
                                   &context)
                          : fn(tin.data(), n_in, tout.data(), n_out, scalars.data(), n_s);
    *reinterpret_cast<int64_t*>(base) = rc;
    _exit(0);
  }
  int status = 0;
  const double deadline = monotonic_seconds() + timeout_s;
  bool timed_out = false;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (monotonic_seconds() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      timed_out = true;
      break;
    }
    usleep(1000);
  }
  std::string failure;
  if (timed_out)
    failure = fmt::format("did not finish in {:g} s", timeout_s);
  else if (WIFSIGNALED(status))
    failure = fmt::format("crashed ({})", signal_description(WTERMSIG(status)));
  else if (const int64_t rc = *reinterpret_cast<int64_t*>(base); rc == kNoReturn)
    failure = fmt::format("exited (status {}) instead of returning", WEXITSTATUS(status));
  else if (rc != 0)
    failure = fmt::format("returned {}", rc);
  if (failure.empty())
    for (size_t i = 0; i < out.size(); ++i)
      std::memcpy(out[i].data(), base + offsets[i], out[i].size() * sizeof(double));
  munmap(shared, total);
  if (!failure.empty())
    throw UserError(fmt::format("the reference of {} {} ({})", op_name_, failure, origin_));
}

}  // namespace kevo
