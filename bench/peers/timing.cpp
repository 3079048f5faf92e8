// Timing and memory under kevo's rules (see timing.h).
#include "timing.h"

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <new>
#include <vector>

namespace peers {

double monotonic_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

namespace {

// Linear interpolation between closest ranks (type 7), as kevo computes them.
double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

constexpr size_t kPage = 4096;
constexpr size_t kHugePage = size_t{2} << 20;

uint64_t mix(uint64_t z) {  // splitmix64 finalizer
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

Timing measure(const std::function<void()>& call, const TimingRules& rules) {
  Timing t;
  double last_call_s = 0;
  const double warm_start = monotonic_seconds();
  while (t.warmup_calls < rules.min_warmup || monotonic_seconds() - warm_start < rules.warmup_s) {
    const double t0 = monotonic_seconds();
    call();
    last_call_s = monotonic_seconds() - t0;
    ++t.warmup_calls;
  }
  if (last_call_s > 0 && last_call_s < rules.min_sample_s)
    t.calls_per_sample =
        std::min<int64_t>(10000, static_cast<int64_t>(std::ceil(rules.min_sample_s / last_call_s)));

  std::vector<double> samples;
  double timed = 0;
  while ((static_cast<int64_t>(samples.size()) < rules.min_samples || timed < rules.min_time_s) &&
         static_cast<int64_t>(samples.size()) < rules.max_samples) {
    const double t0 = monotonic_seconds();
    for (int64_t k = 0; k < t.calls_per_sample; ++k) call();
    const double dt = monotonic_seconds() - t0;
    timed += dt;
    samples.push_back(dt / static_cast<double>(t.calls_per_sample));
  }
  std::sort(samples.begin(), samples.end());
  t.samples = static_cast<int64_t>(samples.size());
  t.median_s = quantile(samples, 0.5);
  t.p20_s = quantile(samples, 0.2);
  t.p80_s = quantile(samples, 0.8);
  return t;
}

Buffer::Buffer(size_t count) : count_(count) {
  const size_t bytes = std::max<size_t>(count * sizeof(float), 1);
  const size_t align = bytes >= kHugePage / 2 ? kHugePage : kPage;
  const size_t span = (bytes + kPage - 1) / kPage * kPage;
  map_len_ = span + align;
  map_ = mmap(nullptr, map_len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map_ == MAP_FAILED) throw std::bad_alloc();
  auto p = reinterpret_cast<uintptr_t>(map_);
  p = (p + align - 1) / align * align;
  data_ = reinterpret_cast<float*>(p);
  if (align == kHugePage) madvise(data_, span, MADV_HUGEPAGE);
}

Buffer::~Buffer() {
  munmap(map_, map_len_);
}

void fill(Buffer& buf, int64_t row_len, const Distribution& d, uint64_t seed, uint64_t tensor) {
  const uint64_t key = mix(mix(seed) ^ (tensor * 0x9e3779b97f4a7c15ULL));
  for (size_t i = 0; i < buf.size(); ++i) {
    const double u = static_cast<double>(mix(key + i) >> 11) * 0x1p-53;
    double v = d.lo + (d.hi - d.lo) * u;
    if (d.row_period > 0)
      v += static_cast<double>((static_cast<int64_t>(i) / row_len) % d.row_period) * d.row_step;
    buf[i] = static_cast<float>(v * d.factor);
  }
}

}  // namespace peers
