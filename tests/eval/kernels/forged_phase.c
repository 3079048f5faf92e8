/* swiglu that writes a malformed event to the runner's event descriptor (a
   phase that is not a number): kevo must end the job, not throw. */
#include <math.h>
#include <string.h>
#include <unistd.h>
#include "kevo_kernel.h"

int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out, const double* s, int ns) {
  if (n_in != 2 || n_out != 1) return KEVO_ERR_ARGS;
  const float *g = in[0].data, *u = in[1].data;
  float* y = out[0].data;
  for (long i = 0; i < kevo_numel(&in[0]); ++i) y[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
  ssize_t (*put)(int, const void*, size_t) = write;
  const char* line = "{\"event\":\"check\",\"phase\":\"zero\"}\n";
  put(3, line, strlen(line));
  return KEVO_OK;
}
