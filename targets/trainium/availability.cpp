#include "targets/trainium/availability.h"

#include <cstdlib>
#include <filesystem>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/process.h"
#include "targets/runner/gpu_host.h"

namespace kevo {

NeuronAvailability probe_neuron() {
  NeuronAvailability a;
  if (const char* p = std::getenv("KEVO_NEURON_PYTHON"); p && *p)
    a.python = p;
  else if (auto p3 = runner::find_program("python3", "KEVO_NEURON_PYTHON", {}))
    a.python = p3->string();
  else
    a.python = "python3";
  SpawnOptions opt;
  opt.argv = {a.python, "-B", "-c",
              "import json\n"
              "try:\n"
              "    import nki\n"
              "    print(json.dumps({'nki': str(getattr(nki, '__version__', 'unknown version'))}))\n"
              "except Exception as e:\n"
              "    print(json.dumps({'error': '%s: %s' % (type(e).__name__, str(e).splitlines()[0] if str(e) else '')}))\n"};
  try {
    ProcessResult r = run_process(opt, 60, 1 << 16);
    const auto j = nlohmann::json::parse(r.out, nullptr, false);
    if (j.is_object() && j.contains("nki"))
      a.nki = j["nki"].get<std::string>();
    else if (j.is_object() && j.contains("error"))
      a.nki_error = j["error"].get<std::string>();
    else
      a.nki_error = fmt::format("{} could not be asked ({})", a.python, r.err.substr(0, 200));
  } catch (const UserError& e) {
    a.nki_error = fmt::format("{} cannot be started: {}", a.python, e.what());
  }
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev", ec))
    if (e.path().filename().string().rfind("neuron", 0) == 0) ++a.devices;
  if (auto x = runner::find_program("neuron-explorer", "KEVO_NEURON_EXPLORER", {"/opt/aws/neuron/bin"}))
    a.explorer = x->string();
  return a;
}

std::string neuron_host_summary() {
  const NeuronAvailability a = probe_neuron();
  const std::string sdk = !a.nki.empty() ? fmt::format("nki {} imports in {}", a.nki, a.python)
                                         : fmt::format("no Neuron SDK ({} cannot import nki: {})",
                                                       a.python, a.nki_error);
  const std::string device =
      a.devices > 0 ? fmt::format("{} Neuron device node(s)", a.devices) : "no Neuron device (/dev/neuron*)";
  const std::string explorer = a.explorer.empty() ? "no neuron-explorer" : "neuron-explorer at " + a.explorer;
  return fmt::format(
      "its runner for the Neuron tools (compile to a NEFF, benchmark on the device, profile) is not "
      "written yet; KEVO_NKI_MODEL=1 runs NKI kernels in kevo's NumPy model of NKI (numerics, not "
      "Trainium's times). Here: {}; {}; {}",
      sdk, device, explorer);
}

}  // namespace kevo
