/* hostile.cu — the GPU hostile set for kevo's cuda target, on swiglu
 * (y = g / (1 + exp(-g)) * u). MODE picks the misbehaviour; each must be
 * classified right and none may stop the search:
 *   0  correct (the control)                       -> ok
 *   1  writes far out of bounds (illegal address)  -> crash, sticky: runner restarted
 *   2  never finishes (spins forever)              -> timeout, runner restarted
 *   3  launch failure (2048 threads per block)     -> crash (not sticky)
 *   4  returns without launching anything          -> mismatch (outputs stay poisoned)
 *   5  computes only on its first call, then copies that answer
 *                                                  -> mismatch on the fresh inputs after timing
 *   6  writes into its input g                     -> crash: inputs are read-only
 *   7  writes one element past the end of y        -> crash: wrote past the end
 *   8  computes a quarter of the rows on kevo's stream, then the rest on a
 *      stream of its own, made non-blocking (bound by an assembler label,
 *      past the static check), after that quarter: the end event does not
 *      wait for them                           -> suspect: the device stays busy
 *   9  launches nothing when its input (address, size, first element) has not
 *      changed since its last call
 *      (every timed call repeats it)           -> mismatch on the last timed calls
 *  10  correct, but on its first call tries, from its own thread and from a
 *      driver thread (a host function on the stream), to read a file of the
 *      user's (/tmp/kevo_hostile_secret.txt, planted by the test) and to create one
 *      beside it (open bound by an assembler label, past the static check);
 *      says what it got on stderr               -> ok, and both refused
 *  11  correct, but every 25th call holds the host 300 us before it launches
 *      (a launch with a slow tail, which a cover sized by a median does not
 *      hide)                                    -> ok; the runner takes those
 *      samples again under a longer cover
 *  12  as 8, but its own stream is a blocking one (which an end event on the
 *      legacy default stream would wait for; kevo's is on its own stream)
 *                                          -> suspect: the device stays busy
 */
// @kevo knob MODE 0 {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
#ifndef MODE
#define MODE 0
#endif
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kevo_kernel.h"

// Never set: MODE 2 waits for it forever. (A loop on a local volatile was
// seen to finish on an H200: the compiler may drop a side-effect-free loop.)
__device__ int kevo_never_set = 0;

__global__ void swiglu(const __nv_bfloat16* g, const __nv_bfloat16* u, __nv_bfloat16* y, long n,
                       int mode) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (mode == 2)
    while (atomicAdd(&kevo_never_set, 0) == 0) __nanosleep(1000);
  if (i >= n + (mode == 7 ? 1 : 0)) return;
  if (mode == 1 && i == 0) *(volatile float*)(0x10) = 1.0f;
  float gv = __bfloat162float(g[i < n ? i : 0]);
  float r = gv / (1.0f + __expf(-gv)) * __bfloat162float(u[i < n ? i : 0]);
  y[i] = __float2bfloat16(r);
  if (mode == 6 && i == 0) ((__nv_bfloat16*)g)[0] = __float2bfloat16(123.0f);
}

// MODE 8 and 12: the runtime's own function under another name.
extern "C" cudaError_t kevo_hostile_stream(cudaStream_t* s, unsigned int flags)
    __asm__("cudaStreamCreateWithFlags");
static cudaStream_t g_escape = nullptr;
static cudaEvent_t g_head_done = nullptr;
// MODE 9: what the last call saw.
static const void* g_last_in = nullptr;
static long g_last_n = 0;
static unsigned short g_last_first = 0;

// MODE 10: open() under another name, tried from `who`'s thread.
extern "C" int kevo_hostile_open(const char* path, int flags, ...) __asm__("open");
static void try_files(void* who) {
  const char* names[2] = {"/tmp/kevo_hostile_secret.txt", "/tmp/kevo_hostile_created.txt"};
  const int flags[2] = {O_RDONLY, O_WRONLY | O_CREAT};
  for (int k = 0; k < 2; ++k) {
    const int fd = kevo_hostile_open(names[k], flags[k] | O_CLOEXEC, 0600);
    const int e = errno;
    if (fd >= 0) {
      char buf[64] = {0};
      const ssize_t got = k == 0 ? read(fd, buf, sizeof(buf) - 1) : 0;
      fprintf(stderr, "hostile: from the %s thread, opened %s%s%s\n", (const char*)who, names[k],
              got > 0 ? ": " : "", got > 0 ? buf : "");
      close(fd);
    } else {
      fprintf(stderr, "hostile: from the %s thread, cannot open %s: %s\n", (const char*)who,
              names[k], strerror(e));
    }
  }
}
static bool g_tried = false;

// MODE 11: the calls so far; the host spins (no sleep: only the time matters).
static long g_calls = 0;
static void hold_host_us(double us) {
  timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do clock_gettime(CLOCK_MONOTONIC, &t);
  while ((t.tv_sec - t0.tv_sec) * 1e6 + (t.tv_nsec - t0.tv_nsec) * 1e-3 < us);
}

static __nv_bfloat16* g_saved = nullptr;  // MODE 5: the first answer, kept
static long g_saved_n = 0;

extern "C" KEVO_EXPORT int kevo_launch(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                                       const double* scalars, int n_scalars, cudaStream_t stream) {
  if (n_in != 2 || n_out != 1 || in[0].dtype != KEVO_BF16) return KEVO_ERR_UNSUPPORTED;
  long n = (long)kevo_numel(&in[0]);
  if (MODE == 4) return KEVO_OK;
  if (MODE == 11 && ++g_calls % 25 == 0) hold_host_us(300);
  if (MODE == 10 && !g_tried) {
    g_tried = true;
    try_files((void*)"candidate's");
    cudaLaunchHostFunc(stream, try_files, (void*)"driver's");
    cudaStreamSynchronize(stream);
  }
  if (MODE == 9) {
    unsigned short first = 0;
    cudaMemcpy(&first, in[0].data, 2, cudaMemcpyDeviceToHost);
    const bool same = g_last_in == in[0].data && g_last_n == n && g_last_first == first;
    g_last_in = in[0].data;
    g_last_n = n;
    g_last_first = first;
    if (same) return KEVO_OK;
  }
  if (MODE == 8 || MODE == 12) {
    const unsigned int flags = MODE == 8 ? cudaStreamNonBlocking : cudaStreamDefault;
    if (!g_escape && kevo_hostile_stream(&g_escape, flags) != cudaSuccess)
      return KEVO_ERR_RUNTIME;
    const long head = n / 4, rest = n - head;
    const __nv_bfloat16 *g = (const __nv_bfloat16*)in[0].data, *u = (const __nv_bfloat16*)in[1].data;
    __nv_bfloat16* y = (__nv_bfloat16*)out[0].data;
    // A quarter on the timed stream; the rest on its own stream, after that
    // quarter is done, so that the timed stream's end comes long before it.
    swiglu<<<(head + 255) / 256, 256, 0, stream>>>(g, u, y, head, 0);
    if (!g_head_done) cudaEventCreateWithFlags(&g_head_done, cudaEventDisableTiming);
    cudaEventRecord(g_head_done, stream);
    cudaStreamWaitEvent(g_escape, g_head_done, 0);
    swiglu<<<(rest + 255) / 256, 256, 0, g_escape>>>(g + head, u + head, y + head, rest, 0);
    return cudaGetLastError() == cudaSuccess ? KEVO_OK : KEVO_ERR_RUNTIME;
  }
  int threads = MODE == 3 ? 2048 : 256;
  long blocks = (n + 255) / 256;
  __nv_bfloat16* y = (__nv_bfloat16*)out[0].data;
  if (MODE == 5) {
    if (g_saved && g_saved_n == n) {
      cudaMemcpyAsync(y, g_saved, n * 2, cudaMemcpyDeviceToDevice, stream);
      return cudaGetLastError() == cudaSuccess ? KEVO_OK : KEVO_ERR_RUNTIME;
    }
  }
  swiglu<<<blocks, threads, 0, stream>>>((const __nv_bfloat16*)in[0].data,
                                         (const __nv_bfloat16*)in[1].data, y, n, MODE);
  if (MODE == 5) {
    if (g_saved) cudaFree(g_saved);
    cudaMalloc(&g_saved, n * 2);
    g_saved_n = n;
    cudaMemcpyAsync(g_saved, y, n * 2, cudaMemcpyDeviceToDevice, stream);
  }
  return cudaGetLastError() == cudaSuccess ? KEVO_OK : KEVO_ERR_RUNTIME;
}
