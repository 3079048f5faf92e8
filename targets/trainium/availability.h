// What a Trainium host would need, and what this machine has of it: the
// Neuron SDK (a Python that imports the real `nki`, not PyPI's placeholder),
// a Neuron device (/dev/neuron*), the profiler (neuron-explorer). kevo's
// Trainium target reads Neuron profiles and computes their bounds
// (neuron_profile.h) and runs NKI kernels in its NumPy model of NKI
// (KEVO_NKI_MODEL=1); its runner for the Neuron tools is not written yet,
// and `kevo targets` says so with this machine's facts.
#pragma once

#include <string>

namespace kevo {

struct NeuronAvailability {
  std::string python;      // the interpreter asked: KEVO_NEURON_PYTHON, else python3
  std::string nki;         // the nki version it imports, "" when it cannot
  std::string nki_error;   // why it cannot ("ImportError: ...")
  int devices = 0;         // /dev/neuron* entries
  std::string explorer;    // neuron-explorer's path, "" when not found
};
NeuronAvailability probe_neuron();

// What this machine has of a Trainium host, and that the runner for the
// Neuron tools is not written yet: why the target is unavailable outside
// kevo's NKI model.
std::string neuron_host_summary();
// Why the trainium target cannot be used here, or "" (trainium_target.cpp):
// under KEVO_NKI_MODEL=1, a Python with NumPy and kevo-contain; else
// neuron_host_summary().
std::string trainium_unavailable_reason();

}  // namespace kevo
