/* allocates far more than the memory limit and touches it */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "kevo_kernel.h"
int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out, const double* s, int ns) {
  const float *g = in[0].data, *u = in[1].data;
  float* y = out[0].data;
  long n = kevo_numel(&in[0]);
  size_t big = (size_t)64 << 30; char* p = malloc(big); for (size_t i = 0; i < big; i += 4096) p[i] = 1; y[0] = p[0]; return 0;
}
