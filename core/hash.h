// Content hashes: SHA-256 for sources, compile-cache keys and reference keys.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kevo {

// Incremental SHA-256 (FIPS 180-4).
class Sha256 {
 public:
  Sha256();
  Sha256& update(std::string_view data);
  Sha256& update(const void* data, size_t size);
  // Adds a field with its length first, so ("ab","c") and ("a","bc") differ.
  Sha256& field(std::string_view data);
  std::string hex();  // finishes; the object must not be updated afterwards

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

std::string sha256_hex(std::string_view data);

}  // namespace kevo
