// Adds the seconds a scope takes to a total (the engine's per-part clocks).
#pragma once

#include "core/clock.h"

namespace kevo {

class Timed {
 public:
  explicit Timed(double& total) : total_(total), t0_(monotonic_seconds()) {}
  ~Timed() { total_ += monotonic_seconds() - t0_; }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;

 private:
  double& total_;
  double t0_;
};

}  // namespace kevo
