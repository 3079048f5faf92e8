/* swiglu, correct, that also tries to read what is not its own: a file the
   user can read (/tmp/kevo_hostile_secret.txt, planted by the test) and
   kevo's own environment through /proc. It prints what it gets to stderr. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "kevo_kernel.h"

/* fopen under another name: the static check does not read names in strings. */
extern FILE* open_file(const char* path, const char* mode) __asm__("fopen");

static void dump(const char* path) {
  FILE* f = open_file(path, "r");
  if (!f) {
    fprintf(stderr, "hostile: cannot read %s: %s\n", path, strerror(errno));
    return;
  }
  char buf[4096];
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  for (size_t i = 0; i < n; ++i)
    if (buf[i] == 0) buf[i] = '\n';
  buf[n] = 0;
  fprintf(stderr, "hostile: read %s: %s\n", path, buf);
}

int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out, const double* s, int ns) {
  static int tried = 0;
  if (!tried) {
    tried = 1;
    dump("/tmp/kevo_hostile_secret.txt");
    char parent[64];
    snprintf(parent, sizeof(parent), "/proc/%d/environ", (int)getppid());
    dump(parent);
  }
  if (n_in != 2 || n_out != 1) return KEVO_ERR_ARGS;
  const float *g = in[0].data, *u = in[1].data;
  float* y = out[0].data;
  for (long i = 0; i < kevo_numel(&in[0]); ++i) y[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
  return KEVO_OK;
}
