// Element types of kevo tensors and exact conversions between them and double
// (f16/bf16 rounded to nearest even, NaN and Inf kept).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kevo {

// Values match the kevo_dtype enum of targets/abi/kevo_kernel.h.
enum class DType : int32_t { f32 = 0, f64 = 1, f16 = 2, bf16 = 3, i32 = 4, i8 = 5 };

size_t dtype_size(DType t);
std::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view name);
bool dtype_is_float(DType t);
std::string dtype_names();  // "f32, f64, f16, bf16, i32, i8"

// Round a double to IEEE binary16 / bfloat16, nearest-even, with overflow to
// Inf, gradual underflow, and NaN kept NaN (quiet, sign kept).
uint16_t double_to_f16(double x);
uint16_t double_to_bf16(double x);
double f16_to_double(uint16_t bits);
double bf16_to_double(uint16_t bits);
inline uint16_t float_to_f16(float x) { return double_to_f16(x); }
inline uint16_t float_to_bf16(float x) { return double_to_bf16(x); }

// Element access on raw buffers of a given dtype. Integers are rounded to
// nearest (ties to even) and saturated; NaN becomes 0.
double load_element(DType t, const void* data, size_t index);
void store_element(DType t, void* data, size_t index, double value);

// Distance in units in the last place between two values of a float dtype,
// counted along the ordered bit patterns (so -0 and +0 are 0 apart). Either
// value being NaN gives +infinity.
double ulp_distance(DType t, const void* a, const void* b, size_t index);

// A quiet-NaN bit pattern (ints: 0xA5 bytes) to poison output buffers with.
void fill_poison(DType t, void* data, size_t count);

}  // namespace kevo
