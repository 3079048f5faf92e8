// kevo: the command-line entry point. A table of subcommands, nothing else.
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <system_error>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/redact.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const kevo::cli::Argv&);
};

const Command kCommands[] = {
    {"run", "search for the fastest correct kernel for a task: kevo run CONFIG",
     kevo::cli::cmd_run},
    {"eval", "compile, check, time and diagnose one kernel: kevo eval --task TASK KERNEL",
     kevo::cli::cmd_eval},
    {"calibrate", "measure this machine's roof (bandwidth, peak FMA rate) and store it",
     kevo::cli::cmd_calibrate},
    {"query", "run SQL against the store: kevo query \"SELECT ...\"", kevo::cli::cmd_query},
    {"targets", "list the hardware targets this kevo was built with", kevo::cli::cmd_targets},
    {"operators", "list the operators, their tensors (in ABI order) and parameters",
     kevo::cli::cmd_operators},
    {"knobs", "a kernel's knob space, or a task's: kevo knobs KERNEL | --task TASK [KERNEL]",
     kevo::cli::cmd_knobs},
    {"tree", "write a run's candidate tree as Graphviz DOT", kevo::cli::cmd_tree},
    {"bench", "compare the search strategies in replay: kevo bench strategies",
     kevo::cli::cmd_bench},
    {"kb", "search the knowledge base: kevo kb search \"TEXT\" [--target T]", kevo::cli::cmd_kb},
    {"export", "write a run's results as JSON (kevo's, or T4 for Kernel Tuner and KTT)",
     kevo::cli::cmd_export},
    {"compare", "compare two exports or runs task by task; exit 1 on a regression",
     kevo::cli::cmd_compare},
    {"explain", "the evidence for one candidate: bounds, bottleneck, profile, hot lines",
     kevo::cli::cmd_explain},
    {"batch", "search every task of a suite, resumable: kevo batch SUITE", kevo::cli::cmd_batch},
    {"report", "what a run or batch found: kevo report RUN|BATCH --format md|html|json",
     kevo::cli::cmd_report},
    {"worker", "evaluate one candidate from a request file (a cluster node's job)",
     kevo::cli::cmd_worker},
};

void print_overview() {
  fmt::print("kevo {} — searches for fast compute kernels and measures them honestly\n\n",
             KEVO_VERSION);
  fmt::print("usage: kevo COMMAND [ARGS...]     kevo COMMAND --help for its options\n\n");
  fmt::print("commands:\n");
  for (const auto& c : kCommands) fmt::print("  {:<10} {}\n", c.name, c.summary);
  fmt::print("\nenvironment: KEVO_DB (store path), KEVO_CACHE_DIR (compile and reference caches,\n"
             "             knowledge index), KEVO_HOME (kernel families, ABI header, knowledge corpus,\n"
             "             prompt templates), KEVO_LOG (debug|info|warn); the LLM synthesizer reads its\n"
             "             keys from the variables its config names (search.llm.models[].api_key_env);\n"
             "             the targets' own: KEVO_PYTHON, KEVO_TRITON_INTERPRET (triton), KEVO_NKI_MODEL,\n"
             "             KEVO_NEURON_PYTHON, KEVO_NEURON_TARGET, KEVO_NEURON_CHECK, KEVO_NRTPY_PYTHON,\n"
             "             KEVO_NEURON_EXPLORER (trainium), KEVO_NCU, KEVO_CUDA_* (README)\n");
}

// The exit status of a command whose reader went away (`kevo export | head`):
// what a shell reports for a process that SIGPIPE ended.
constexpr int kClosedStdout = 128 + SIGPIPE;

bool closed_pipe(const std::system_error& e) { return e.code() == std::errc::broken_pipe; }

int dispatch(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    print_overview();
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    fmt::print("kevo {}\n", KEVO_VERSION);
    return 0;
  }
  kevo::cli::Argv args(argv + 2, argv + argc);
  for (const auto& c : kCommands) {
    if (std::strcmp(argv[1], c.name) != 0) continue;
    try {
      return c.run(args);
    } catch (const kevo::UserError& e) {
      fmt::print(stderr, "kevo: {}\n", e.what());
      return 2;
    } catch (const std::system_error& e) {
      if (closed_pipe(e)) throw;  // for main: not an error of the command's
      fmt::print(stderr, "kevo: internal error: {}\n", e.what());
      return 3;
    } catch (const std::exception& e) {
      fmt::print(stderr, "kevo: internal error: {}\n", e.what());
      return 3;
    }
  }
  fmt::print(stderr, "kevo: unknown command '{}' (run kevo --help for the list)\n", argv[1]);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // Ignored, so that a runner or compiler that dies while kevo writes to its
  // stdin is a failed write kevo reports, not the end of kevo. A closed stdout
  // then shows as EPIPE too: kevo ends quietly with the status SIGPIPE would
  // have given, as other Unix tools do.
  std::signal(SIGPIPE, SIG_IGN);
  kevo::add_secrets_from_environment();  // kept out of all kevo stores, prints or sends
  int status;
  try {
    status = dispatch(argc, argv);
  } catch (const std::system_error& e) {
    if (!closed_pipe(e)) throw;
    return kClosedStdout;
  }
  // What is still buffered: a reader that left before it was written.
  if (std::fflush(stdout) != 0 && errno == EPIPE) return kClosedStdout;
  return status;
}
