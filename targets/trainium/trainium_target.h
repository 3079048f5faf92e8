// The trainium target: NKI 0.4 kernels in Python (targets/abi/kevo_nki.py).
// Today it runs them only in kevo's NumPy model of NKI (targets/trainium/model),
// when KEVO_NKI_MODEL=1: numerics against kevo's CPU reference, the NKI rules
// the model enforces as compile errors, and times that are NumPy's on this
// CPU, not Trainium's. The runner for the Neuron tools (compile to a NEFF,
// benchmark on the device, profile with neuron-explorer) is not written yet.
#pragma once

#include <memory>
#include <string>

#include "targets/target.h"

namespace kevo {

std::unique_ptr<Target> make_trainium_target();

}  // namespace kevo
