// kevo-peers: times oneDNN and OpenBLAS peers of kevo's tasks under kevo's rules.
//
// Each measurement (op, shape, thread count) and each check runs in a fresh
// child process (this program run again with --result-fd), so that one thread
// count never inherits another's OpenMP or OpenBLAS thread pool.
#include <cblas.h>
#include <fcntl.h>
#include <omp.h>
#include <sched.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "peers.h"
#include "timing.h"

extern char** environ;

namespace {

using peers::Op;
using peers::Shape;
using peers::shape_str;

constexpr int kResultFd = 3;         // where a child writes its result
constexpr uint64_t kTimingSeed = 2;  // kevo times on inputs of a fresh seed too

const char* const kHelp = R"(kevo-peers: oneDNN and OpenBLAS baselines timed under kevo's rules

usage: kevo-peers [--op OP[,OP...]] [--shape SHAPE]... [--threads T[,T...]]
                  [--openblas-core CORE[,CORE...]] [--table]
       kevo-peers --verify [--op OP[,OP...]] [--threads T[,T...]] [--openblas-core CORE[,...]]

  --op       softmax    oneDNN softmax, fp32, forward inference, last axis; unscaled:
                        its input is kevo's x already multiplied by 0.125
             layernorm  oneDNN layer normalization, fp32, forward inference,
                        gamma and beta, eps 1e-5
             sgemm      OpenBLAS cblas_sgemm row-major, C = A*B, alpha 1, beta 0
             default: all three
  --shape    softmax: dims joined by x (last dim is the softmax axis), default
             4096x4096 and 65536x256; layernorm: MxN, default 4096x4096;
             sgemm: MxKxN or N for NxNxN, default 1024. Applies to every
             selected op; repeatable.
  --threads  thread counts, default 1 and nproc. Each runs in a fresh process.
  --openblas-core CORE[,CORE...]
             run sgemm once per core, with OPENBLAS_CORETYPE=CORE (e.g. SkylakeX,
             Cooperlake); "detected" lets OpenBLAS pick from the CPU model.
             Default: the caller's OPENBLAS_CORETYPE if set, else detected.
             OpenBLAS 0.3.21 does not know newer Xeon models and falls back to
             its SSE3 "Prescott" kernels; the note and table say which core ran.
  --table    after the JSON lines, print a table with rates (GB/s, GFLOP/s)
  --verify   check the selected ops against fp64 references on small shapes at
             each thread count; exit status 1 if any check fails
  --help     this text

Output: one JSON line per measurement on stdout:
  {"peer":"onednn","op":"softmax","shape":[4096,4096],"threads":1,"median_ms":..,
   "p20_ms":..,"p80_ms":..,"samples":N,"calls_per_sample":1,"warmup_calls":N,"note":".."}
Timing: >= 20 ms and >= 2 warm-up calls, then >= 10 samples and >= 100 ms timed
(CLOCK_MONOTONIC), calls under 25 us timed in groups; inputs in 2 MiB-aligned
MADV_HUGEPAGE memory. Exit status: 0 ok, 1 a measurement or check failed,
2 bad usage.
)";

struct UsageError {
  std::string what;
};

[[noreturn]] void usage_error(const std::string& what) {
  throw UsageError{what};
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (;;) {
    const size_t end = s.find(sep, start);
    parts.push_back(s.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

int64_t parse_int(std::string_view s, const char* what) {
  int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 1)
    usage_error(std::string(what) + ": '" + std::string(s) + "' is not a positive integer");
  return v;
}

Shape parse_shape(std::string_view s) {
  Shape shape;
  for (auto d : split(s, 'x')) shape.push_back(parse_int(d, "--shape"));
  return shape;
}

int cpus_available() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return CPU_COUNT(&set);
}

struct Options {
  std::vector<Op> ops;
  std::vector<Shape> shapes;  // empty: each op's defaults
  std::vector<int> threads;
  bool table = false;
  bool verify = false;
  // OpenBLAS cores to run sgemm on: nullopt keeps the caller's environment,
  // "" removes OPENBLAS_CORETYPE so OpenBLAS detects, a name forces that core.
  std::vector<std::optional<std::string>> openblas_cores;
  int result_fd = -1;  // set: this is a child running exactly one job
};

Options parse_args(int argc, char** argv) {
  Options o;
  bool threads_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> std::string_view {
      if (i + 1 >= argc) usage_error(std::string(a) + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kHelp, stdout);
      std::exit(0);
    } else if (a == "--op") {
      for (auto name : split(value(), ',')) {
        const auto op = peers::parse_op(name);
        if (!op)
          usage_error("--op: unknown op '" + std::string(name) +
                      "' (expected softmax, layernorm or sgemm)");
        o.ops.push_back(*op);
      }
    } else if (a == "--shape") {
      o.shapes.push_back(parse_shape(value()));
    } else if (a == "--threads") {
      threads_given = true;
      for (auto t : split(value(), ','))
        o.threads.push_back(static_cast<int>(std::min<int64_t>(parse_int(t, "--threads"), 4096)));
    } else if (a == "--openblas-core") {
      for (auto core : split(value(), ',')) {
        if (core.empty()) usage_error("--openblas-core: empty core name");
        o.openblas_cores.emplace_back(core == "detected" ? "" : std::string(core));
      }
    } else if (a == "--table") {
      o.table = true;
    } else if (a == "--verify") {
      o.verify = true;
    } else if (a == "--result-fd") {  // internal: see run_child
      o.result_fd = static_cast<int>(parse_int(value(), "--result-fd"));
    } else {
      usage_error("unknown argument '" + std::string(a) + "' (see --help)");
    }
  }
  if (o.ops.empty())
    for (const auto& i : peers::all_ops()) o.ops.push_back(i.op);
  if (o.openblas_cores.empty()) o.openblas_cores.emplace_back(std::nullopt);
  if (!threads_given) {
    o.threads = {1};
    if (cpus_available() > 1) o.threads.push_back(cpus_available());
  }
  if (o.verify && !o.shapes.empty())
    usage_error("--verify checks its own small shapes; drop --shape");
  if (o.verify && o.table) usage_error("--table is for measurements, not --verify");
  for (const Shape& s : o.shapes)
    for (Op op : o.ops)
      if (auto why = peers::shape_error(op, s); !why.empty())
        usage_error("--shape " + shape_str(s) + " for " + peers::info(op).name + ": " + why + " (" +
                    peers::info(op).name + " takes " + peers::info(op).shape_form + ")");
  if (o.result_fd >= 0 &&
      (o.ops.size() != 1 || o.threads.size() != 1 || (!o.verify && o.shapes.size() != 1)))
    usage_error("--result-fd runs exactly one job");
  return o;
}

// ---- the child: one job in this process -----------------------------------------

// Writes the job's result to `fd` as lines "note TEXT", "impl TEXT", "timing MEDIAN_S P20_S
// P80_S SAMPLES CALLS_PER_SAMPLE WARMUP_CALLS", "check ok|FAIL TEXT" or
// "error TEXT". Returns the exit status.
int run_job(const Options& o) {
  std::ostringstream out;
  int rc = 0;
  try {
    const int threads = o.threads[0];
    // oneDNN (built with OpenMP) reads the OpenMP thread count when it creates
    // and runs a primitive; OpenBLAS has its own pool.
    omp_set_num_threads(threads);
    openblas_set_num_threads(threads);
    if (omp_get_max_threads() != threads || openblas_get_num_threads() != threads)
      throw std::runtime_error("thread count did not take: OpenMP " +
                               std::to_string(omp_get_max_threads()) + ", OpenBLAS " +
                               std::to_string(openblas_get_num_threads()));
    if (o.verify) {
      const auto report = peers::verify(o.ops[0]);
      for (const auto& line : report.lines) out << "check " << line << '\n';
      rc = report.ok ? 0 : 1;
    } else {
      const Shape shape = peers::canonical_shape(o.ops[0], o.shapes[0]);
      auto prepared = peers::prepare(o.ops[0], shape, kTimingSeed);
      const peers::Timing t = peers::measure([&] { prepared->call(); });
      out.precision(9);
      out << "note " << prepared->note() << '\n'
          << "impl " << prepared->impl() << '\n'
          << "timing " << t.median_s << ' ' << t.p20_s << ' ' << t.p80_s << ' ' << t.samples << ' '
          << t.calls_per_sample << ' ' << t.warmup_calls << '\n';
    }
  } catch (const std::exception& e) {
    out << "error " << e.what() << '\n';
    rc = 1;
  }
  const std::string s = out.str();
  for (size_t done = 0; done < s.size();) {
    const ssize_t n = write(o.result_fd, s.data() + done, s.size() - done);
    if (n <= 0) return 1;
    done += static_cast<size_t>(n);
  }
  return rc;
}

// ---- the parent: spawns children, prints results ----------------------------------

struct ChildResult {
  bool ok = false;
  std::string error;
  std::string note;
  std::string impl;
  peers::Timing timing;
  std::vector<std::string> checks;
};

ChildResult run_child(const Options& o, Op op, const Shape* shape, int threads,
                      const std::optional<std::string>& openblas_core) {
  const bool verify = o.verify;
  std::vector<std::string> args = {"kevo-peers",
                                   "--op",
                                   peers::info(op).name,
                                   "--threads",
                                   std::to_string(threads),
                                   "--result-fd",
                                   std::to_string(kResultFd)};
  if (shape) args.insert(args.end(), {"--shape", shape_str(*shape)});
  if (verify) args.emplace_back("--verify");
  // The libraries size their pools at load from these; the child also sets
  // the counts through their APIs before any work.
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "OMP_NUM_THREADS=", 16) != 0 &&
        std::strncmp(*e, "OPENBLAS_NUM_THREADS=", 21) != 0 &&
        (!openblas_core || std::strncmp(*e, "OPENBLAS_CORETYPE=", 18) != 0))
      env.emplace_back(*e);
  env.push_back("OMP_NUM_THREADS=" + std::to_string(threads));
  env.push_back("OPENBLAS_NUM_THREADS=" + std::to_string(threads));
  if (openblas_core && !openblas_core->empty())
    env.push_back("OPENBLAS_CORETYPE=" + *openblas_core);
  auto c_strs = [](std::vector<std::string>& v) {
    std::vector<char*> p;
    for (auto& s : v) p.push_back(s.data());
    p.push_back(nullptr);
    return p;
  };
  auto argv = c_strs(args);
  auto envp = c_strs(env);

  ChildResult r;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    r.error = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], kResultFd);  // dup2 drops O_CLOEXEC
  pid_t pid = 0;
  const int err = posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (err != 0) {
    close(fds[0]);
    r.error = std::string("cannot start a child: ") + std::strerror(err);
    return r;
  }
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }

  std::istringstream in(text);
  bool timed = false;
  for (std::string line; std::getline(in, line);) {
    const size_t sp = line.find(' ');
    const std::string key = line.substr(0, sp);
    const std::string rest = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (key == "note") {
      r.note = rest;
    } else if (key == "impl") {
      r.impl = rest;
    } else if (key == "timing") {
      std::istringstream t(rest);
      auto& x = r.timing;
      timed = static_cast<bool>(t >> x.median_s >> x.p20_s >> x.p80_s >> x.samples >>
                                x.calls_per_sample >> x.warmup_calls);
    } else if (key == "check") {
      r.checks.push_back(rest);
    } else if (key == "error") {
      r.error = rest;
    }
  }
  if (WIFSIGNALED(status) && r.error.empty())
    r.error = std::string("child killed by signal ") + strsignal(WTERMSIG(status));
  const bool exited_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!exited_ok && r.error.empty() && r.checks.empty()) r.error = "child failed";
  r.ok = exited_ok && (verify || timed);
  return r;
}

std::string json_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

struct Row {
  Op op;
  Shape shape;
  int threads;
  peers::Timing timing;
  std::string impl;
};

void print_json(const Row& row, const std::string& note) {
  std::string shape = shape_str(row.shape);
  std::replace(shape.begin(), shape.end(), 'x', ',');
  const auto& t = row.timing;
  std::printf(
      "{\"peer\":\"%s\",\"op\":\"%s\",\"shape\":[%s],\"threads\":%d,\"median_ms\":%.6g,"
      "\"p20_ms\":%.6g,\"p80_ms\":%.6g,\"samples\":%lld,\"calls_per_sample\":%lld,"
      "\"warmup_calls\":%lld,\"note\":\"%s\"}\n",
      peers::info(row.op).peer, peers::info(row.op).name, shape.c_str(), row.threads,
      t.median_s * 1e3, t.p20_s * 1e3, t.p80_s * 1e3, static_cast<long long>(t.samples),
      static_cast<long long>(t.calls_per_sample), static_cast<long long>(t.warmup_calls),
      json_escape(note).c_str());
  std::fflush(stdout);
}

void print_table(const std::vector<Row>& rows) {
  std::printf("\n%-9s %-10s %-15s %7s %10s %10s %10s %7s  %-15s %s\n", "peer", "op", "shape",
              "threads", "median_ms", "p20_ms", "p80_ms", "samples", "rate", "implementation");
  bool softmax = false;
  for (const Row& r : rows) {
    const double s = r.timing.median_s;
    char rate[48];
    if (r.op == Op::sgemm)
      std::snprintf(rate, sizeof rate, "%.1f GFLOP/s", peers::call_flops(r.op, r.shape) / s * 1e-9);
    else
      std::snprintf(rate, sizeof rate, "%.1f GB/s", peers::call_bytes(r.op, r.shape) / s * 1e-9);
    softmax = softmax || r.op == Op::softmax;
    const std::string op = std::string(peers::info(r.op).name) + (r.op == Op::softmax ? "*" : "");
    std::printf("%-9s %-10s %-15s %7d %10.3f %10.3f %10.3f %7lld  %-15s %s\n",
                peers::info(r.op).peer, op.c_str(), shape_str(r.shape).c_str(), r.threads, s * 1e3,
                r.timing.p20_s * 1e3, r.timing.p80_s * 1e3,
                static_cast<long long>(r.timing.samples), rate, r.impl.c_str());
  }
  std::printf(
      "rate at the median: GB/s counts each tensor read once and written once; GFLOP/s\n"
      "is 2MKN.\n");
  if (softmax)
    std::printf(
        "* unscaled: oneDNN computes softmax(x') on x' = x*0.125 given pre-multiplied; kevo's\n"
        "  scaled_softmax computes softmax(x*0.125), one multiply per element more.\n");
}

// The OpenBLAS cores an op runs on: only sgemm uses OpenBLAS.
std::vector<std::optional<std::string>> cores_for(const Options& o, Op op) {
  if (op == Op::sgemm) return o.openblas_cores;
  return {std::nullopt};
}

int run_verify(const Options& o) {
  bool all_ok = true;
  for (Op op : o.ops)
    for (const auto& core : cores_for(o, op))
      for (int threads : o.threads) {
        const auto r = run_child(o, op, nullptr, threads, core);
        const std::string who = std::string(peers::info(op).peer) + " " + peers::info(op).name +
                                ", " + std::to_string(threads) + " thread(s)";
        for (const auto& line : r.checks) std::printf("%s: %s\n", who.c_str(), line.c_str());
        if (!r.error.empty()) std::printf("%s: FAIL  %s\n", who.c_str(), r.error.c_str());
        all_ok = all_ok && r.ok;
      }
  std::printf("verify: %s\n", all_ok ? "all checks passed" : "FAILED");
  return all_ok ? 0 : 1;
}

int run_measurements(const Options& o) {
  std::vector<Row> rows;
  bool all_ok = true;
  for (Op op : o.ops) {
    const auto& shapes = o.shapes.empty() ? peers::info(op).default_shapes : o.shapes;
    for (const Shape& given : shapes)
      for (const auto& core : cores_for(o, op))
        for (int threads : o.threads) {
          const auto r = run_child(o, op, &given, threads, core);
          const Shape shape = peers::canonical_shape(op, given);
          if (!r.ok) {
            std::fprintf(stderr, "kevo-peers: %s %s %s at %d thread(s) failed: %s\n",
                         peers::info(op).peer, peers::info(op).name, shape_str(shape).c_str(),
                         threads, r.error.c_str());
            all_ok = false;
            continue;
          }
          rows.push_back({op, shape, threads, r.timing, r.impl});
          print_json(rows.back(), r.note);
        }
  }
  if (o.table) print_table(rows);
  return all_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse_args(argc, argv);
    if (o.result_fd >= 0) return run_job(o);
    return o.verify ? run_verify(o) : run_measurements(o);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "kevo-peers: %s\n", e.what.c_str());
    return 2;
  }
}
