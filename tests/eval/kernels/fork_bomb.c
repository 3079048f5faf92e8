/* tries to start 8 processes through a function pointer the static check
   cannot see; the runner's system-call filter must refuse them all. Right
   (and ok) when every fork fails; an error when any succeeds. */
#include <math.h>
#include <unistd.h>
#include "kevo_kernel.h"
typedef int (*spawn_fn)(void);
int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out, const double* s, int ns) {
  spawn_fn spawn = (spawn_fn)fork;
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
