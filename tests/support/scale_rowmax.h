// An operator whose tensors do not share one dtype and whose outputs are
// compared differently: y = x * s in f32 from a bf16 x and an f32 s
// (compared within a tolerance), and z = the row maxima of x in bf16
// (compared exactly). With its C reference and kernels, right and wrong.
#pragma once

#include <string>

namespace kevo::test {

// The task's dtype is f32: s and y have it, x and z say their own.
inline const char* kScaleRowmaxDefinition = R"json({
  "name": "scale_rowmax", "formula": "y = x * s; z = max over each row of x",
  "sizes": ["M", "N"],
  "tensors": [
    {"name": "x", "role": "in", "dtype": "bf16", "shape": ["M", "N"]},
    {"name": "s", "role": "in", "shape": ["N"]},
    {"name": "y", "role": "out", "shape": ["M", "N"]},
    {"name": "z", "role": "out", "dtype": "bf16", "shape": ["M"], "compare": "exact"}],
  "flops": "2 * M * N",
  "reference": "scale_rowmax_ref.c"})json";

inline const char* kScaleRowmaxReference = R"(#include "kevo_kernel.h"
int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                const double* sc, int n_s) {
  if (n_in != 2 || n_out != 2 || in[0].dtype != KEVO_F64) return KEVO_ERR_ARGS;
  const double *x = in[0].data, *s = in[1].data;
  double *y = out[0].data, *z = out[1].data;
  const long m = in[0].shape[0], n = in[0].shape[1];
  for (long i = 0; i < m; ++i) {
    double best = x[i * n];
    for (long j = 0; j < n; ++j) {
      y[i * n + j] = x[i * n + j] * s[j];
      if (x[i * n + j] > best) best = x[i * n + j];
    }
    z[i] = best;
  }
  return KEVO_OK;
}
)";

// A kernel that insists on the dtypes of the definition (anything else is
// KEVO_ERR_UNSUPPORTED, a crash verdict). Y_SCALE scales y; Z_BUMP is added
// to z's bits (1: one bf16 ulp off).
inline std::string scale_rowmax_kernel(const std::string& y_scale, int z_bump) {
  return "#define Y_SCALE " + y_scale + "\n#define Z_BUMP " + std::to_string(z_bump) + "\n" +
         R"(#include <stdint.h>
#include <string.h>
#include "kevo_kernel.h"
static float bf16_value(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                const double* sc, int n_s) {
  if (n_in != 2 || n_out != 2) return KEVO_ERR_ARGS;
  if (in[0].dtype != KEVO_BF16 || in[1].dtype != KEVO_F32 || out[0].dtype != KEVO_F32 ||
      out[1].dtype != KEVO_BF16)
    return KEVO_ERR_UNSUPPORTED;
  const uint16_t* x = in[0].data;
  const float* s = in[1].data;
  float* y = out[0].data;
  uint16_t* z = out[1].data;
  const long m = in[0].shape[0], n = in[0].shape[1];
  for (long i = 0; i < m; ++i) {
    uint16_t best = x[i * n];
    for (long j = 0; j < n; ++j) {
      const float v = bf16_value(x[i * n + j]);
      y[i * n + j] = v * s[j] * Y_SCALE;
      if (v > bf16_value(best)) best = x[i * n + j];
    }
    z[i] = (uint16_t)(best + Z_BUMP);
  }
  return KEVO_OK;
}
)";
}

inline std::string scale_rowmax_right() {
  return scale_rowmax_kernel("1.0f", 0);
}
// y 1% off: wrong under any tolerance.
inline std::string scale_rowmax_wrong() {
  return scale_rowmax_kernel("1.01f", 0);
}
// y within f32's default tolerance, z one ulp off: only the exact output fails.
inline std::string scale_rowmax_near() {
  return scale_rowmax_kernel("(1.0f + 1e-6f)", 1);
}

}  // namespace kevo::test
