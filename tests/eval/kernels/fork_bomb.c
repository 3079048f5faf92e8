/* tries to start 8 processes through fork under another name (an assembler
   label: the static check does not read names in strings); the runner's
   system-call filter must refuse them all. Right (and ok) when every fork
   fails; an error when any succeeds. */
#include <math.h>
#include <unistd.h>
#include "kevo_kernel.h"
extern int spawn(void) __asm__("fork");
int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out, const double* s, int ns) {
  int started = 0;
  for (int i = 0; i < 8; ++i) {
    int pid = spawn();
    if (pid == 0) _exit(0);
    if (pid > 0) ++started;
  }
  if (started) return KEVO_ERR_RUNTIME;
  const float *g = in[0].data, *u = in[1].data;
  float* y = out[0].data;
  for (long i = 0; i < kevo_numel(&in[0]); ++i) y[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
  return KEVO_OK;
}
