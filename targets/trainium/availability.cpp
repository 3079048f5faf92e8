#include "targets/trainium/availability.h"

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/paths.h"
#include "targets/runner/gpu_host.h"
#include "targets/runner/python_candidate.h"

namespace kevo {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

const NeuronAvailability& probe_neuron() {
  // Asked again only when what it depends on changes (tests change it).
  static std::mutex mu;
  static std::string asked_for;
  static NeuronAvailability a;
  const std::string key = env("KEVO_NEURON_PYTHON") + "|" + env("KEVO_NRTPY_PYTHON") + "|" +
                          env("KEVO_NEURON_EXPLORER") + "|" + env("PYTHONPATH") + "|" + env("PATH");
  std::lock_guard<std::mutex> lock(mu);
  if (asked_for == key) return a;
  asked_for = key;
  a = NeuronAvailability{};
  {
    a.python = env("KEVO_NEURON_PYTHON");
    if (a.python.empty()) {
      const auto p3 = runner::find_program("python3", "KEVO_NEURON_PYTHON", {});
      a.python = p3 ? p3->string() : "python3";
    }
    const auto script = kevo_home() / "targets" / "trainium" / "runner" / "kevo_neuron.py";
    const runner::PythonAnswer got = runner::ask_python(a.python, {script.string(), "--probe"});
    const nlohmann::json& f = got.facts;
    if (!got.error.empty())
      a.nki_error = got.error;
    else if (f.value("nki_is_kevo_model", false)) {
      a.nki_error = "its nki is kevo's NumPy model, not the Neuron SDK";
    } else if (f.contains("nki") && !f.contains("numpy_error")) {
      a.nki = f["nki"].get<std::string>();
    } else {
      a.nki_error = f.value("nki_error", f.value("numpy_error", std::string("nki does not import")));
    }
    a.pyarrow = f.is_object() && f.contains("pyarrow");
    if (f.is_object()) a.dirs = f.value("dirs", std::vector<std::string>{});
    a.nrtpy_python = env("KEVO_NRTPY_PYTHON");
    if (a.nrtpy_python.empty() && f.is_object()) {
      a.nrtpy = f.value("nrtpy", std::string());
      a.nrtpy_error = f.value("nrtpy_error", std::string());
    } else if (!a.nrtpy_python.empty()) {
      const runner::PythonAnswer n = runner::ask_python(a.nrtpy_python, {script.string(), "--probe"});
      a.nrtpy = n.facts.is_object() ? n.facts.value("nrtpy", std::string()) : "";
      a.nrtpy_error = !n.error.empty() ? n.error : n.facts.value("nrtpy_error", std::string());
      for (const auto& d : n.facts.is_object() ? n.facts.value("dirs", std::vector<std::string>{})
                                               : std::vector<std::string>{})
        a.dirs.push_back(d);
    }
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/dev", ec))
      if (e.path().filename().string().rfind("neuron", 0) == 0) ++a.devices;
    if (auto x = runner::find_program("neuron-explorer", "KEVO_NEURON_EXPLORER", {"/opt/aws/neuron/bin"}))
      a.explorer = x->string();
    // What kevo-contain runs: the interpreters (and, from the runner, the
    // profiler) where they are, a virtual environment's bin/ or a wrapper's.
    for (const std::string& p : {a.python, a.nrtpy_python, a.explorer})
      if (!p.empty() && p[0] == '/') a.dirs.push_back(std::filesystem::path(p).parent_path().string());
  }
  return a;
}

std::string neuron_platform() {
  const std::string v = env("KEVO_NEURON_TARGET");
  if (v.empty()) return "trn2";
  if (v == "trn1" || v == "trn2" || v == "trn3") return v;
  throw UserError(fmt::format("KEVO_NEURON_TARGET is '{}': kevo compiles NKI kernels for trn1, trn2 or trn3", v));
}

std::string neuron_check_mode() {
  const std::string v = env("KEVO_NEURON_CHECK");
  if (v == "device" || v == "simulate") return v;
  if (!v.empty())
    throw UserError(fmt::format("KEVO_NEURON_CHECK is '{}': 'device' or 'simulate' (nki.simulate)", v));
  return probe_neuron().devices > 0 ? "device" : "simulate";
}

std::string neuron_host_summary() {
  const NeuronAvailability& a = probe_neuron();
  if (!a.nki.empty()) return "";
  const std::string device =
      a.devices > 0 ? fmt::format("{} Neuron device node(s)", a.devices) : "no Neuron device (/dev/neuron*)";
  const std::string explorer = a.explorer.empty() ? "no neuron-explorer" : "neuron-explorer at " + a.explorer;
  return fmt::format(
      "no Neuron SDK ({} cannot import the SDK's nki: {}); {}; {}. On a Trainium host set "
      "KEVO_NEURON_PYTHON to the Neuron environment's Python; elsewhere KEVO_NKI_MODEL=1 runs NKI "
      "kernels in kevo's NumPy model of NKI (numerics, not Trainium's times)",
      a.python, a.nki_error, device, explorer);
}

}  // namespace kevo
