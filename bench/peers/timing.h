// Timing and memory under kevo's rules: huge-page buffers, warm-ups, samples, quantiles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace peers {

// The timing minimums of kevo's configs/defaults.json and the runner's
// grouping of short calls (targets/cpu/runner_main.cpp).
struct TimingRules {
  double warmup_s = 0.020;
  int64_t min_warmup = 2;
  double min_time_s = 0.100;
  int64_t min_samples = 10;
  int64_t max_samples = 20000;
  double min_sample_s = 25e-6;  // calls shorter than this are timed in groups
};

struct Timing {
  double median_s = 0, p20_s = 0, p80_s = 0;
  int64_t samples = 0, calls_per_sample = 1, warmup_calls = 0;
};

double monotonic_seconds();

// Warm-ups, then samples until both the time and the count minimums are met;
// each sample is the mean time of one call (of a group when calls are short).
Timing measure(const std::function<void()>& call, const TimingRules& rules = {});

// fp32 buffer placed as kevo's runner places tensors: 2 MiB aligned and
// advised MADV_HUGEPAGE from 1 MiB up, page aligned below.
class Buffer {
 public:
  explicit Buffer(size_t count);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  float* data() { return data_; }
  const float* data() const { return data_; }
  size_t size() const { return count_; }
  float& operator[](size_t i) { return data_[i]; }
  float operator[](size_t i) const { return data_[i]; }

 private:
  void* map_ = nullptr;
  size_t map_len_ = 0;
  float* data_ = nullptr;
  size_t count_ = 0;
};

// kevo's input law: lo + (hi - lo) * u + (row % row_period) * row_step, u
// uniform in [0, 1) from a counter-based hash of (seed, tensor, index); the
// row is index / row_len. Every value is then multiplied by `factor`.
struct Distribution {
  double lo = -1.0, hi = 1.0;
  int64_t row_period = 0;  // 0: no per-row offset
  double row_step = 0.0;
  double factor = 1.0;
};
void fill(Buffer& buf, int64_t row_len, const Distribution& d, uint64_t seed, uint64_t tensor);

}  // namespace peers
