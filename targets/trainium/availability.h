// What a Trainium host would need, and what this machine has of it: the
// Neuron SDK (a Python that imports the real `nki`, not PyPI's placeholder),
// a Neuron device (/dev/neuron*), the profiler (neuron-explorer). kevo's
// Trainium target reads Neuron profiles and computes their bounds
// (neuron_profile.h); its runner is not written yet, so the target is not
// built into kevo, and `kevo targets` says so with this machine's facts.
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

// Why the trainium target cannot be used here: never "" while its runner is
// not written; the sentence names what this machine has and lacks.
std::string trainium_unavailable_reason();

}  // namespace kevo
