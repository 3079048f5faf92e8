#include "targets/runner/python_candidate.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"
#include "core/paths.h"
#include "core/process.h"

namespace kevo::runner {

std::filesystem::path beside_kevo(const std::string& name) {
  auto here = executable_dir() / name;
  if (std::filesystem::exists(here)) return here;
#ifdef KEVO_BUILD_BIN_DIR
  auto built = std::filesystem::path(KEVO_BUILD_BIN_DIR) / name;
  if (std::filesystem::exists(built)) return built;
#endif
  return here;
}

nlohmann::json python_value(const std::string& text) {
  try {
    size_t used = 0;
    const long long i = std::stoll(text, &used, 0);
    if (used == text.size()) return i;
  } catch (const std::exception&) {
  }
  try {
    size_t used = 0;
    const double d = std::stod(text, &used);
    if (used == text.size()) return d;
  } catch (const std::exception&) {
  }
  if (text == "True" || text == "true") return true;
  if (text == "False" || text == "false") return false;
  return text;
}

PythonAnswer ask_python(const std::string& python, const std::vector<std::string>& args, double timeout_s) {
  PythonAnswer a;
  SpawnOptions opt;
  opt.argv = {python, "-B"};
  opt.argv.insert(opt.argv.end(), args.begin(), args.end());
  try {
    ProcessResult r = run_process(opt, timeout_s, 1 << 20);
    std::string last;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);)
      if (!line.empty()) last = line;
    auto j = nlohmann::json::parse(last, nullptr, false);
    if (r.exit_code && *r.exit_code == 0 && j.is_object()) {
      a.facts = std::move(j);
      return a;
    }
    std::string err = r.err;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    if (const auto nl = err.find_last_of('\n'); nl != std::string::npos) err = err.substr(nl + 1);
    a.error = fmt::format("{} {}", python,
                          r.timed_out ? "did not answer in time"
                                      : err.empty() ? fmt::format("gave no answer (exit {})", r.exit_code.value_or(-1))
                                                    : "says: " + err);
  } catch (const UserError& e) {
    a.error = fmt::format("{} cannot be started: {}", python, e.what());
  }
  return a;
}

CompileOutcome compile_python_candidate(const std::string& python, const CompileRequest& req) {
  const Task& task = *req.task;
  SpawnOptions opt;
  opt.argv = {python, "-B", "-c",
              "import sys\n"
              "path = sys.argv[1]\n"
              "try:\n"
              "    compile(open(path, encoding='utf-8').read(), path, 'exec')\n"
              "except SyntaxError as e:\n"
              "    print('%s:%s:%s: error: %s' % (path, e.lineno, e.offset or 0, e.msg))\n"
              "    print(e.text or '')\n"
              "    sys.exit(1)\n",
              req.source.string()};
  ProcessResult r = run_process(opt, task.limits.compile_timeout_s,
                                std::max<size_t>(static_cast<size_t>(task.limits.output_kb) * 1024,
                                                 64 * 1024));
  if (r.exit_code && *r.exit_code == 0) {
    std::ifstream in(req.source, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    std::string out = text.str();
    if (!out.empty() && out.back() != '\n') out += '\n';
    nlohmann::json globals = nlohmann::json::object();
    for (const auto& [k, v] : req.knobs) globals[k] = v;
    for (const auto& d : shape_defines(task)) {
      const auto eq = d.find('=');
      globals[d.substr(0, eq)] = python_value(d.substr(eq + 1));
    }
    out += "# kevo-globals: " + globals.dump() + "\n";
    write_file_atomic(req.output, out.data(), out.size());
  }
  return compile_outcome(r, req.output, task.limits.compile_timeout_s);
}

}  // namespace kevo::runner
