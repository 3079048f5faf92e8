/* returns without writing its output */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "kevo_kernel.h"
int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out, const double* s, int ns) {
  const float *g = in[0].data, *u = in[1].data;
  float* y = out[0].data;
  long n = kevo_numel(&in[0]);
  (void)g; (void)u; (void)y; return 0;
}
