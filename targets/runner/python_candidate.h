// What the targets whose candidates are Python modules (triton, trainium)
// share: their compile step (a syntax check, then the artifact: the source
// and one last line, "# kevo-globals: {...}", with the knob values and the
// task's shape constants, which the runner makes the module's globals), and
// where kevo's helper programs (kevo-contain, libkevo-inputs.so) are.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "targets/target.h"

namespace kevo::runner {

// A helper program built next to kevo (kevo-contain, libkevo-inputs.so).
std::filesystem::path beside_kevo(const std::string& name);

// A Python value for a knob's text: an int or a float where it reads as
// one, True/False, else the string.
nlohmann::json python_value(const std::string& text);

// Checks the Python with `python` (a syntax error is the candidate's
// compile error, with its line) and writes the artifact.
CompileOutcome compile_python_candidate(const std::string& python, const CompileRequest& req);

}  // namespace kevo::runner
