#include "core/dtype.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"

namespace kevo {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::f64: return 8;
    case DType::f32:
    case DType::i32: return 4;
    case DType::f16:
    case DType::bf16: return 2;
    case DType::i8: return 1;
  }
  KEVO_ASSERT(false);
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i32: return "i32";
    case DType::i8: return "i8";
  }
  KEVO_ASSERT(false);
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i8})
    if (dtype_name(t) == name) return t;
  return std::nullopt;
}

std::string dtype_names() { return "f32, f64, f16, bf16, i32, i8"; }

bool dtype_is_float(DType t) { return t != DType::i32 && t != DType::i8; }

namespace {

// Rounds x to a binary format with `ebits` exponent bits and `mbits` stored
// mantissa bits (nearest-even) and returns its bit pattern. Exact: the
// quotient by a power of two is exact in double, and nearbyint rounds it once.
uint64_t encode_binary(double x, int ebits, int mbits) {
  const uint64_t sign = std::signbit(x) ? 1 : 0;
  const uint64_t emax_field = (uint64_t{1} << ebits) - 1;
  const int bias = (1 << (ebits - 1)) - 1;
  const int emin = 1 - bias;
  const uint64_t sign_bit = sign << (ebits + mbits);
  if (std::isnan(x)) {
    // Quiet NaN with the top payload bits of the double kept where they fit.
    uint64_t dbits;
    std::memcpy(&dbits, &x, 8);
    uint64_t payload = (dbits & ((uint64_t{1} << 52) - 1)) >> (52 - mbits);
    payload |= uint64_t{1} << (mbits - 1);
    return sign_bit | (emax_field << mbits) | payload;
  }
  double a = std::fabs(x);
  if (std::isinf(a)) return sign_bit | (emax_field << mbits);
  if (a == 0.0) return sign_bit;
  int e2;
  std::frexp(a, &e2);  // a = m * 2^e2, m in [0.5, 1)
  int exponent = std::max(e2 - 1, emin);
  // Quantum of the target format at this exponent; subnormals share emin's.
  double q = std::ldexp(a, mbits - exponent);
  double r = std::nearbyint(q);  // the default rounding mode: nearest-even
  uint64_t mant = static_cast<uint64_t>(r);
  if (mant >= (uint64_t{1} << (mbits + 1))) {  // rounding carried into the next binade
    mant >>= 1;
    exponent += 1;
  }
  if (mant < (uint64_t{1} << mbits)) {  // subnormal (or rounded to zero)
    return sign_bit | mant;
  }
  if (exponent > bias) return sign_bit | (emax_field << mbits);  // overflow to Inf
  const auto efield = static_cast<uint64_t>(static_cast<int64_t>(exponent) + bias);
  return sign_bit | (efield << mbits) | (mant & ((uint64_t{1} << mbits) - 1));
}

double decode_binary(uint64_t bits, int ebits, int mbits) {
  const uint64_t emax_field = (uint64_t{1} << ebits) - 1;
  const int bias = (1 << (ebits - 1)) - 1;
  bool neg = (bits >> (ebits + mbits)) & 1;
  uint64_t efield = (bits >> mbits) & emax_field;
  uint64_t mant = bits & ((uint64_t{1} << mbits) - 1);
  double v;
  if (efield == emax_field) {
    v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (efield == 0) {
    v = std::ldexp(static_cast<double>(mant), 1 - bias - mbits);
  } else {
    v = std::ldexp(static_cast<double>(mant | (uint64_t{1} << mbits)),
                   static_cast<int>(efield) - bias - mbits);
  }
  return neg ? -v : v;
}

// Signed-magnitude bit pattern to a monotonically ordered integer.
int64_t ordered(uint64_t bits, int width) {
  uint64_t sign_mask = uint64_t{1} << (width - 1);
  int64_t magnitude = static_cast<int64_t>(bits & (sign_mask - 1));
  return (bits & sign_mask) ? -magnitude : magnitude;
}

template <class T>
T round_saturate(double v) {
  if (std::isnan(v)) return 0;
  double r = std::nearbyint(v);
  if (r < static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (r > static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(r);
}

}  // namespace

uint16_t double_to_f16(double x) { return static_cast<uint16_t>(encode_binary(x, 5, 10)); }
uint16_t double_to_bf16(double x) { return static_cast<uint16_t>(encode_binary(x, 8, 7)); }
double f16_to_double(uint16_t bits) { return decode_binary(bits, 5, 10); }
double bf16_to_double(uint16_t bits) { return decode_binary(bits, 8, 7); }

double load_element(DType t, const void* data, size_t i) {
  switch (t) {
    case DType::f32: return static_cast<const float*>(data)[i];
    case DType::f64: return static_cast<const double*>(data)[i];
    case DType::f16: return f16_to_double(static_cast<const uint16_t*>(data)[i]);
    case DType::bf16: return bf16_to_double(static_cast<const uint16_t*>(data)[i]);
    case DType::i32: return static_cast<const int32_t*>(data)[i];
    case DType::i8: return static_cast<const int8_t*>(data)[i];
  }
  KEVO_ASSERT(false);
}

void store_element(DType t, void* data, size_t i, double v) {
  switch (t) {
    case DType::f32: static_cast<float*>(data)[i] = static_cast<float>(v); return;
    case DType::f64: static_cast<double*>(data)[i] = v; return;
    case DType::f16: static_cast<uint16_t*>(data)[i] = double_to_f16(v); return;
    case DType::bf16: static_cast<uint16_t*>(data)[i] = double_to_bf16(v); return;
    case DType::i32: static_cast<int32_t*>(data)[i] = round_saturate<int32_t>(v); return;
    case DType::i8: static_cast<int8_t*>(data)[i] = round_saturate<int8_t>(v); return;
  }
  KEVO_ASSERT(false);
}

double ulp_distance(DType t, const void* a, const void* b, size_t i) {
  int width = static_cast<int>(dtype_size(t) * 8);
  uint64_t ba = 0, bb = 0;
  switch (t) {
    case DType::f32:
    case DType::f64:
    case DType::f16:
    case DType::bf16: {
      double va = load_element(t, a, i), vb = load_element(t, b, i);
      if (std::isnan(va) || std::isnan(vb)) return std::numeric_limits<double>::infinity();
      std::memcpy(&ba, static_cast<const char*>(a) + i * dtype_size(t), dtype_size(t));
      std::memcpy(&bb, static_cast<const char*>(b) + i * dtype_size(t), dtype_size(t));
      int64_t oa = ordered(ba, width), ob = ordered(bb, width);
      return std::fabs(static_cast<double>(oa) - static_cast<double>(ob));
    }
    case DType::i32:
    case DType::i8:
      return std::fabs(load_element(t, a, i) - load_element(t, b, i));
  }
  KEVO_ASSERT(false);
}

void fill_poison(DType t, void* data, size_t count) {
  switch (t) {
    case DType::f32: {
      uint32_t p = 0x7FC5A5A5u;
      for (size_t i = 0; i < count; ++i) std::memcpy(static_cast<char*>(data) + 4 * i, &p, 4);
      return;
    }
    case DType::f64: {
      uint64_t p = 0x7FF8A5A5A5A5A5A5ull;
      for (size_t i = 0; i < count; ++i) std::memcpy(static_cast<char*>(data) + 8 * i, &p, 8);
      return;
    }
    case DType::f16:
    case DType::bf16: {
      uint16_t p = t == DType::f16 ? 0x7E5A : 0x7FC5;
      for (size_t i = 0; i < count; ++i) static_cast<uint16_t*>(data)[i] = p;
      return;
    }
    case DType::i32:
    case DType::i8:
      std::memset(data, 0xA5, count * dtype_size(t));
      return;
  }
}

}  // namespace kevo
