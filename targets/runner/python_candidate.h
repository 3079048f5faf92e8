// What the targets whose candidates are Python modules (triton, trainium)
// share: their compile step (a syntax check, then the artifact: the source
// and one last line, "# kevo-globals: {...}", with the knob values and the
// task's shape constants, which the runner makes the module's globals), and
// where kevo's helper programs (kevo-contain, libkevo-inputs.so) are.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "targets/target.h"

namespace kevo::runner {

// A helper program built next to kevo (kevo-contain, libkevo-inputs.so).
std::filesystem::path beside_kevo(const std::string& name);

// A Python value for a knob's text: an int or a float where it reads as
// one, True/False, else the string.
nlohmann::json python_value(const std::string& text);

// Asks an interpreter about itself: runs `python -B ARGS...`, whose last
// stdout line is one JSON object. The object, or why there is none.
struct PythonAnswer {
  nlohmann::json facts;  // an object when error is empty
  std::string error;
};
PythonAnswer ask_python(const std::string& python, const std::vector<std::string>& args, double timeout_s = 120);
// A Python expression for the interpreter's directories (prefixes and
// sys.path), which Landlock must let a runner read.
inline constexpr const char* kPythonDirs =
    "sorted(set([sys.prefix, sys.base_prefix, sys.exec_prefix] + [p for p in sys.path if p]))";

// Checks the Python with `python` (a syntax error is the candidate's
// compile error, with its line) and writes the artifact.
CompileOutcome compile_python_candidate(const std::string& python, const CompileRequest& req);

}  // namespace kevo::runner
