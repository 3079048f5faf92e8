/* swiglu, correct, that also tries to write a file through fopen under
   another name (which the static check does not see): the file system must be
   out of its reach. It says on stderr what it managed. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "kevo_kernel.h"

/* fopen under another name: the static check does not read names in strings. */
extern FILE* open_file(const char* path, const char* mode) __asm__("fopen");

int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out, const double* s, int ns) {
  static int tried = 0;
  if (!tried) {
    tried = 1;
    FILE* f = open_file("/tmp/kevo_hostile_written.txt", "w");
    if (f) {
      fputs("written by a candidate\n", f);
      fclose(f);
      fprintf(stderr, "hostile: wrote the file\n");
    } else {
      fprintf(stderr, "hostile: cannot write: %s\n", strerror(errno));
    }
  }
  if (n_in != 2 || n_out != 1) return KEVO_ERR_ARGS;
  const float *g = in[0].data, *u = in[1].data;
  float* y = out[0].data;
  for (long i = 0; i < kevo_numel(&in[0]); ++i) y[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
  return KEVO_OK;
}
