/* swiglu, correct, and it prints the whole environment it was given to
   stderr on its first call: a kernel after the user's API keys. It names
   `environ` through an assembler label, which the static check does not
   read; the runner's clean environment is what keeps the keys out of reach. */
#include <math.h>
#include <stdio.h>
#include "kevo_kernel.h"

extern char** process_env __asm__("environ");

int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out, const double* s, int ns) {
  static int told = 0;
  if (!told) {
    told = 1;
    for (char** e = process_env; *e; ++e) fprintf(stderr, "env: %s\n", *e);
  }
  if (n_in != 2 || n_out != 1) return KEVO_ERR_ARGS;
  const float *g = in[0].data, *u = in[1].data;
  float* y = out[0].data;
  for (long i = 0; i < kevo_numel(&in[0]); ++i) y[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
  return KEVO_OK;
}
