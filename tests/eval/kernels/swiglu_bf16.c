/* swiglu on bf16 tensors, fp32 math, round-to-nearest-even on store. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "kevo_kernel.h"
static float bf2f(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint16_t f2bf(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out, const double* s, int ns) {
  if (in[0].dtype != KEVO_BF16) return KEVO_ERR_UNSUPPORTED;
  const uint16_t *g = in[0].data, *u = in[1].data;
  uint16_t* y = out[0].data;
  for (long i = 0; i < kevo_numel(&in[0]); ++i) {
    float gv = bf2f(g[i]);
    y[i] = f2bf(gv / (1.0f + expf(-gv)) * bf2f(u[i]));
  }
  return KEVO_OK;
}
