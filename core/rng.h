// Counter-based random numbers: value i of stream s under seed k is a pure
// function of (k, s, i), so inputs are the same in every process and thread.
#pragma once

#include <cstdint>

namespace kevo {

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

inline uint64_t random_bits(uint64_t seed, uint64_t stream, uint64_t index) {
  return splitmix64(splitmix64(splitmix64(seed) ^ (stream * 0xD1B54A32D192ED03ull)) ^ index);
}

// Uniform in [0, 1) with 53 random bits.
inline double uniform01(uint64_t seed, uint64_t stream, uint64_t index) {
  return static_cast<double>(random_bits(seed, stream, index) >> 11) * 0x1.0p-53;
}

}  // namespace kevo
