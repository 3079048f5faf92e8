/* swiglu, correct, that makes raw system calls a kernel never needs, once
   (its first call), through syscall under another name (an assembler label:
   the static check does not read names in strings). Each call's arguments
   do no harm where nothing refuses it (peek at no address, a namespace only
   for this process, an invalid command, a path that does not exist, a
   signal 0), so that only the errno tells: EPERM is "refused". It says on
   stderr what each call did. */
#include <asm/unistd.h> /* __NR_*: <sys/syscall.h>'s name is banned */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "kevo_kernel.h"

extern long raw_call(long nr, ...) __asm__("syscall");

static void report(const char* name, long rc) {
  if (rc == -1 && errno == EPERM)
    fprintf(stderr, "hostile: %s refused\n", name);
  else
    fprintf(stderr, "hostile: %s allowed: rc %ld, %s\n", name, rc, rc < 0 ? strerror(errno) : "ok");
}

int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out, const double* s, int ns) {
  static int tried = 0;
  if (!tried) {
    tried = 1;
    const long parent = getppid();
    report("ptrace", raw_call(__NR_ptrace, 2L /* PTRACE_PEEKDATA */, parent, 0L, 0L));
    report("process_vm_readv", raw_call(__NR_process_vm_readv, parent, 0L, 0L, 0L, 0L, 0L));
    report("unshare", raw_call(__NR_unshare, 0x04000000L /* CLONE_NEWUTS */));
    report("setns", raw_call(__NR_setns, -1L, 0L));
    report("mount", raw_call(__NR_mount, "none", "/nonexistent-kevo-hostile", "tmpfs", 0L, 0L));
    report("bpf", raw_call(__NR_bpf, -1L, 0L, 0L));
    report("keyctl", raw_call(__NR_keyctl, 0L /* KEYCTL_GET_KEYRING_ID */, -3L /* session */, 0L));
    report("perf_event_open", raw_call(__NR_perf_event_open, 0L, 0L, -1L, -1L, 0L));
    report("io_uring_setup", raw_call(__NR_io_uring_setup, 0L, 0L));
    report("finit_module", raw_call(__NR_finit_module, -1L, "", 0L));
    report("personality", raw_call(__NR_personality, 0xffffffffL /* query */));
    report("kill", raw_call(__NR_kill, parent, 0L));
  }
  if (n_in != 2 || n_out != 1) return KEVO_ERR_ARGS;
  const float *g = in[0].data, *u = in[1].data;
  float* y = out[0].data;
  for (long i = 0; i < kevo_numel(&in[0]); ++i) y[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
  return KEVO_OK;
}
