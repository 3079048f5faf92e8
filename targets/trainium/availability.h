// What a Trainium host needs, and what this machine has of it: the Neuron
// SDK (a Python that imports the SDK's `nki`: not PyPI's placeholder, not
// kevo's model), nrtpy (to time a NEFF on the device), a Neuron device
// (/dev/neuron*) and the profiler (neuron-explorer). Asked through
// targets/trainium/runner/kevo_neuron.py --probe with the Neuron Python.
#pragma once

#include <string>
#include <vector>

namespace kevo {

struct NeuronAvailability {
  std::string python;      // the interpreter asked: KEVO_NEURON_PYTHON, else python3
  std::string nki;         // the nki version it imports, "" when it cannot
  std::string nki_error;   // why it cannot ("ImportError: ...", "kevo's model, not the SDK")
  std::string nrtpy;       // nrtpy's version in KEVO_NRTPY_PYTHON or that Python, "" when absent
  std::string nrtpy_error;
  std::string nrtpy_python;  // KEVO_NRTPY_PYTHON ("" = the Neuron Python)
  bool pyarrow = false;      // the profile's tables can be read (else the summary only)
  int devices = 0;           // /dev/neuron* entries
  std::string explorer;      // neuron-explorer's path, "" when not found
  std::vector<std::string> dirs;  // the interpreters' directories (Landlock)
};
// Asked once, and again when KEVO_NEURON_PYTHON, KEVO_NRTPY_PYTHON,
// KEVO_NEURON_EXPLORER, PYTHONPATH or PATH change.
const NeuronAvailability& probe_neuron();

// The compile target: KEVO_NEURON_TARGET (trn1, trn2 or trn3), trn2 when
// unset; UserError for any other value.
std::string neuron_platform();
// Where check phases run: KEVO_NEURON_CHECK ("device" or "simulate": the
// SDK's nki.simulate), else the device where there is one.
std::string neuron_check_mode();

// What this machine has of a Trainium host, in one line, and "" when the
// Neuron tools can run kevo's candidates here.
std::string neuron_host_summary();
// Why the trainium target cannot be used here, or "" (trainium_target.cpp):
// under KEVO_NKI_MODEL=1, a Python with NumPy and kevo-contain; else the
// Neuron SDK (neuron_host_summary()).
std::string trainium_unavailable_reason();

}  // namespace kevo
