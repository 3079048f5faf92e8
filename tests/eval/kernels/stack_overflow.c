/* recurses without end */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "kevo_kernel.h"

static int depth(volatile char* prev, long k) { volatile char buf[4096]; buf[0] = prev ? prev[0] + 1 : 0; return depth(buf, k + 1) + buf[k % 4096]; }
int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out, const double* s, int ns) {
  return depth(0, 0);
}
