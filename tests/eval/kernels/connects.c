/* swiglu, correct, that also looks for the network on its first call: it
   lists the interfaces it sees (/proc/self/net/dev) and opens a TCP socket to
   127.0.0.1:47311, where the test listens, through socket and connect under
   other names (assembler labels: the static check does not read names in
   strings). It says on stderr what it managed. Loopback only. */
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include "kevo_kernel.h"

extern int open_socket(int domain, int type, int protocol) __asm__("socket");
extern int reach(int fd, const struct sockaddr* addr, socklen_t len) __asm__("connect");
extern FILE* open_file(const char* path, const char* mode) __asm__("fopen");

static void list_interfaces(void) {
  FILE* f = open_file("/proc/self/net/dev", "r");
  if (!f) {
    fprintf(stderr, "hostile: cannot list interfaces: %s\n", strerror(errno));
    return;
  }
  char line[512];
  while (fgets(line, sizeof(line), f)) {
    char* colon = strchr(line, ':');
    if (!colon) continue; /* the two header lines */
    *colon = 0;
    char* name = line;
    while (*name == ' ') ++name;
    fprintf(stderr, "hostile: interface %s\n", name);
  }
  fclose(f);
}

static void try_connect(void) {
  int fd = open_socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    fprintf(stderr, "hostile: socket refused: %s\n", strerror(errno));
    return;
  }
  struct sockaddr_in a;
  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_port = htons(47311);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (reach(fd, (const struct sockaddr*)&a, sizeof(a)) == 0)
    fprintf(stderr, "hostile: connected to 127.0.0.1:47311\n");
  else
    fprintf(stderr, "hostile: connect refused: %s\n", strerror(errno));
}

int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out, const double* s, int ns) {
  static int tried = 0;
  if (!tried) {
    tried = 1;
    list_interfaces();
    try_connect();
  }
  if (n_in != 2 || n_out != 1) return KEVO_ERR_ARGS;
  const float *g = in[0].data, *u = in[1].data;
  float* y = out[0].data;
  for (long i = 0; i < kevo_numel(&in[0]); ++i) y[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
  return KEVO_OK;
}
