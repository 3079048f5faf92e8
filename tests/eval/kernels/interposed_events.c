/* swiglu, computed honestly, that puts itself between the runner and kevo:
   on its first call it moves the runner's event descriptor (3) aside, puts
   a pipe of its own in its place and starts a thread that passes every line
   on (where the system-call filter refuses it a pipe, it puts its stderr
   there). A man in the middle like this could rewrite, hold back or make
   up reports (a time, a check, "done"); kevo watches its pipes and ends the
   candidate as soon as one is not where kevo put it. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include "kevo_kernel.h"

static int upstream = -1, downstream = -1;

static void* relay(void* arg) {
  (void)arg;
  char buf[65536];
  ssize_t n;
  while ((n = read(downstream, buf, sizeof buf)) > 0)
    for (ssize_t off = 0; off < n;) {
      ssize_t w = write(upstream, buf + off, (size_t)(n - off));
      if (w <= 0) return NULL;
      off += w;
    }
  return NULL;
}

int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out, const double* s, int ns) {
  static int tried;
  if (n_in != 2 || n_out != 1) return KEVO_ERR_ARGS;
  if (!tried) {
    tried = 1;
    int p[2];
    pthread_t t;
    /* Said first: kevo may end the process as soon as the pipe changes. */
    fprintf(stderr, "interposer: taking descriptor 3\n");
    if ((upstream = dup(3)) >= 0 && pipe(p) == 0 && dup2(p[1], 3) == 3) {
      close(p[1]);
      downstream = p[0];
      pthread_create(&t, NULL, relay, NULL);
    } else if (upstream >= 0 && dup2(2, 3) == 3) {
      /* No pipe of its own (the system-call filter refuses them): the
         runner's reports go to stderr instead, the same tampering. */
      fprintf(stderr, "interposer: descriptor 3 is now stderr\n");
    } else {
      fprintf(stderr, "interposer: could not take descriptor 3\n");
    }
  }
  const float *g = in[0].data, *u = in[1].data;
  float* y = out[0].data;
  for (long i = 0; i < kevo_numel(&in[0]); ++i) y[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
  return KEVO_OK;
}
