#include "core/dtype.h"

#include <cmath>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

namespace kevo {
namespace {

TEST(DType, NamesRoundTrip) {
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i8})
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);
  EXPECT_FALSE(parse_dtype("fp32").has_value());
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_size(DType::f64), 8u);
}

TEST(DType, Bf16KnownPatterns) {
  EXPECT_EQ(double_to_bf16(1.0), 0x3F80);
  EXPECT_EQ(double_to_bf16(-2.0), 0xC000);
  EXPECT_EQ(double_to_bf16(0.0), 0x0000);
  EXPECT_EQ(double_to_bf16(-0.0), 0x8000);
  EXPECT_EQ(double_to_bf16(INFINITY), 0x7F80);
  EXPECT_EQ(double_to_bf16(-INFINITY), 0xFF80);
  EXPECT_EQ(double_to_bf16(3.140625), 0x4049);  // exactly representable
  // Ties go to the even mantissa: 1 + 2^-8 lies between 0x3F80 and 0x3F81.
  EXPECT_EQ(double_to_bf16(1.0 + std::ldexp(1.0, -8)), 0x3F80);
  EXPECT_EQ(double_to_bf16(1.0 + 3 * std::ldexp(1.0, -8)), 0x3F82);
  // Just above the tie rounds up.
  EXPECT_EQ(double_to_bf16(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -20)), 0x3F81);
  // FLT_MAX has all mantissa bits set: it rounds past bf16's largest finite.
  EXPECT_EQ(double_to_bf16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(double_to_bf16(3.3895313892515355e38), 0x7F7F);  // bf16 max
  // Subnormals: the smallest bf16 subnormal is 2^-133.
  EXPECT_EQ(double_to_bf16(std::ldexp(1.0, -133)), 0x0001);
  EXPECT_EQ(double_to_bf16(std::ldexp(1.0, -134)), 0x0000);      // tie to even (zero)
  EXPECT_EQ(double_to_bf16(3 * std::ldexp(1.0, -135)), 0x0001);  // 0.75 of the quantum
}

TEST(DType, F16KnownPatterns) {
  EXPECT_EQ(double_to_f16(1.0), 0x3C00);
  EXPECT_EQ(double_to_f16(-1.5), 0xBE00);
  EXPECT_EQ(double_to_f16(65504.0), 0x7BFF);  // largest finite
  EXPECT_EQ(double_to_f16(65519.0), 0x7BFF);  // below the tie: stays finite
  EXPECT_EQ(double_to_f16(65520.0), 0x7C00);  // the tie rounds to even: overflow to Inf
  EXPECT_EQ(double_to_f16(std::ldexp(1.0, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(double_to_f16(std::ldexp(1.0, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(double_to_f16(std::ldexp(1.0, -25)), 0x0000);  // tie to even
  EXPECT_EQ(double_to_f16(std::ldexp(3.0, -26)), 0x0001);
  EXPECT_EQ(double_to_f16(1e-10), 0x0000);
  EXPECT_EQ(double_to_f16(-1e9), 0xFC00);
  EXPECT_DOUBLE_EQ(f16_to_double(0x3555), 0.333251953125);
}

TEST(DType, NanStaysNan) {
  EXPECT_TRUE(std::isnan(bf16_to_double(double_to_bf16(NAN))));
  EXPECT_TRUE(std::isnan(f16_to_double(double_to_f16(-NAN))));
  uint16_t b = double_to_bf16(NAN);
  EXPECT_EQ(b & 0x7F80, 0x7F80);
  EXPECT_NE(b & 0x007F, 0);
}

TEST(DType, EveryHalfPatternRoundTrips) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    const uint16_t b = static_cast<uint16_t>(bits);
    const double vb = bf16_to_double(b);
    const double vh = f16_to_double(b);
    if (std::isnan(vb)) {
      EXPECT_TRUE(std::isnan(bf16_to_double(double_to_bf16(vb))));
    } else {
      ASSERT_EQ(double_to_bf16(vb), b) << std::hex << bits;
      // bf16 is the top half of an f32.
      uint32_t f32bits = uint32_t{b} << 16;
      float f;
      std::memcpy(&f, &f32bits, 4);
      ASSERT_EQ(static_cast<double>(f), vb) << std::hex << bits;
    }
    if (std::isnan(vh))
      EXPECT_TRUE(std::isnan(f16_to_double(double_to_f16(vh))));
    else
      ASSERT_EQ(double_to_f16(vh), b) << std::hex << bits;
  }
}

TEST(DType, ElementAccessAndSaturation) {
  int8_t i8[2];
  store_element(DType::i8, i8, 0, 300.0);
  store_element(DType::i8, i8, 1, -2.5);  // ties to even
  EXPECT_EQ(i8[0], 127);
  EXPECT_EQ(i8[1], -2);
  int32_t i32;
  store_element(DType::i32, &i32, 0, NAN);
  EXPECT_EQ(i32, 0);
  uint16_t h;
  store_element(DType::bf16, &h, 0, 1.0);
  EXPECT_EQ(h, 0x3F80);
  EXPECT_EQ(load_element(DType::bf16, &h, 0), 1.0);
}

TEST(DType, UlpDistance) {
  float a[3] = {1.0f, 0.0f, -0.0f};
  float b[3] = {std::nextafter(std::nextafter(1.0f, 2.0f), 2.0f), -0.0f,
                std::nextafter(0.0f, 1.0f)};
  EXPECT_EQ(ulp_distance(DType::f32, a, b, 0), 2);
  EXPECT_EQ(ulp_distance(DType::f32, a, b, 1), 0);  // +0 and -0
  EXPECT_EQ(ulp_distance(DType::f32, a, b, 2), 1);  // across zero
  float n[1] = {NAN};
  EXPECT_TRUE(std::isinf(ulp_distance(DType::f32, a, n, 0)));
}

TEST(DType, PoisonIsNan) {
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    char buf[32];
    fill_poison(t, buf, 4);
    for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(std::isnan(load_element(t, buf, i)));
  }
}

}  // namespace
}  // namespace kevo
