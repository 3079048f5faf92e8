// kevo worker: evaluates one candidate from a request file and writes its
// result, for a backend whose jobs run elsewhere (a Slurm array task on a
// cluster node). Timing happens here, on the node, with the sandbox and the
// timing defenses of a local evaluation; only JSON goes back.
#include <unistd.h>

#include <fmt/format.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/paths.h"
#include "core/process.h"
#include "eval/request.h"

namespace kevo::cli {

int cmd_worker(const Argv& argv) {
  Args a("worker", "worker REQUEST.json -o RESULT.json",
         "Evaluates the candidate of REQUEST.json (written by a backend that sends jobs away:\n"
         "the resolved task, the source, the knobs, the roofs the submitting store knows) on\n"
         "this machine and writes {\"result\": ..., \"host\": ..., \"seconds\": ...} to RESULT.json\n"
         "atomically: the file appears whole or not at all. The result is judged against this\n"
         "node type's roof: the request's, else one calibrated here once (kept in the cache\n"
         "directory) and written with the result as \"roof\" for the store. A candidate's\n"
         "failure is its result. A request kevo cannot read is written as {\"error\": ...}\n"
         "and exits 2.",
         {{"-o", "RESULT", "where the result goes (required)"}}, 1, 1);
  a.parse(argv);
  if (a.help()) {
    fmt::print("{}", a.help_text());
    return 0;
  }
  const auto out = a.value("-o");
  if (!out) throw UserError("kevo worker: -o RESULT.json is required");
  const double t0 = monotonic_seconds();
  nlohmann::json written;
  int status = 0;
  try {
    const nlohmann::json j = nlohmann::json::parse(read_text_file(a.positional()[0]));
    const EvalRequest request = request_from_json(j);
    RequestOutcome how;
    const EvalResult r = evaluate_request(request, cache_dir(), {}, &how);
    const Roof& roof = how.roof;
    written = {{"result", result_to_wire(r)}, {"profiled", how.profiled}};
    // A roof measured on this node, which the submitting store has not seen.
    if (request.roof_by_node && roof.id == 0) {
      written["roof"] = roof.to_json();
      if (const char* node = std::getenv("SLURMD_NODENAME"); node && *node)
        written["roof"]["hostname"] = node;
    }
    if (const char* node = std::getenv("SLURMD_NODENAME"); node && *node) written["node"] = node;
  } catch (const nlohmann::json::exception& e) {
    written = {{"error", fmt::format("{}: not a request kevo can read: {}", a.positional()[0], e.what())}};
    status = 2;
  } catch (const UserError& e) {
    written = {{"error", e.what()}};
    status = 2;
  }
  written["host"] = hostname();
  written["kevo_version"] = KEVO_VERSION;
  written["seconds"] = monotonic_seconds() - t0;
  const std::string text = written.dump();
  write_file_atomic(*out, text.data(), text.size());
  if (status) fmt::print(stderr, "kevo worker: {}\n", written["error"].get<std::string>());
  return status;
}

}  // namespace kevo::cli
