/* swiglu, correct on its first call, which also writes events of its own to
   the runner's event descriptor: a timing report and "done", before the
   runner has sent a single check. A verdict must not rest on such a stream:
   every check of the plan has to be there. */
#include <math.h>
#include <string.h>
#include <unistd.h>
#include "kevo_kernel.h"

int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out, const double* s, int ns) {
  static int forged = 0;
  if (n_in != 2 || n_out != 1) return KEVO_ERR_ARGS;
  const float *g = in[0].data, *u = in[1].data;
  float* y = out[0].data;
  for (long i = 0; i < kevo_numel(&in[0]); ++i) y[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
  if (!forged) {
    forged = 1;
    ssize_t (*put)(int, const void*, size_t) = write;
    const char* lines =
        "{\"event\":\"timing\",\"phase\":4,\"samples\":[1e-3,1e-3,1e-3],\"calls_per_sample\":1}\n"
        "{\"event\":\"done\"}\n";
    put(3, lines, strlen(lines));
    _exit(0);
  }
  return KEVO_OK;
}
