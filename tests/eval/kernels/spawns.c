/* swiglu, correct, that tries once (its first call) to start processes by
   ways the static check does not see: glibc's _Fork through a pointer, fork
   and vfork under other names (assembler labels), a raw clone without
   CLONE_THREAD and clone3 through syscall (also a label), then to exec
   /bin/true. Each child it gets exits at once, so even where nothing refuses
   them there are at most five. It says on stderr what each way did, and
   returns an error when any process started. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <asm/unistd.h> /* __NR_*: <sys/syscall.h>'s name is banned */
#include <sys/types.h>
#include <unistd.h>
#include "kevo_kernel.h"

extern pid_t _Fork(void);
extern pid_t spawn(void) __asm__("fork");
extern pid_t spawn_shared(void) __asm__("vfork");
extern long raw_call(long nr, ...) __asm__("syscall");
extern int run_program(const char* path, char* const argv[], char* const envp[]) __asm__("execve");

static int started = 0;

static void report(const char* way, long pid) {
  if (pid > 0) {
    ++started;
    fprintf(stderr, "hostile: %s started a process\n", way);
  } else {
    fprintf(stderr, "hostile: %s refused: %s\n", way, strerror(errno));
  }
}

/* The child, where one starts, exits on the spot (vfork's shares the stack). */
#define TRY(way, call)        \
  do {                        \
    long pid = (call);        \
    if (pid == 0) _exit(0);   \
    report(way, pid);         \
  } while (0)

int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out, const double* s, int ns) {
  static int tried = 0;
  if (!tried) {
    tried = 1;
    pid_t (*volatile fork_fn)(void) = _Fork;
    TRY("_Fork", fork_fn());
    TRY("fork", spawn());
    TRY("vfork", spawn_shared());
    TRY("clone", raw_call(__NR_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L));
#ifdef __NR_clone3
    long args[11] = {0};
    args[4] = SIGCHLD; /* exit_signal */
    TRY("clone3", raw_call(__NR_clone3, args, sizeof(args)));
#endif
    char* argv[] = {"/bin/true", NULL};
    char* envp[] = {NULL};
    run_program("/bin/true", argv, envp); /* returns only when refused */
    fprintf(stderr, "hostile: execve refused: %s\n", strerror(errno));
  }
  if (started) return KEVO_ERR_RUNTIME;
  if (n_in != 2 || n_out != 1) return KEVO_ERR_ARGS;
  const float *g = in[0].data, *u = in[1].data;
  float* y = out[0].data;
  for (long i = 0; i < kevo_numel(&in[0]); ++i) y[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
  return KEVO_OK;
}
