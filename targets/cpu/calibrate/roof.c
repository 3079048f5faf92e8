/* roof.c — what kevo's CPU roof calibration runs: STREAM-style copy, copy
 * with non-temporal stores, and triad at a given working-set size and thread
 * count, and the peak fp32 FMA rate. Compiled like a candidate (host
 * compiler, -O3 -march=native -fopenmp) and run in kevo-runner.
 *
 * Bandwidth counts bytes read plus bytes written (no write-allocate), the
 * STREAM convention; each figure is the best of repeated passes. */
#pragma GCC optimize("no-tree-loop-distribute-patterns") /* keep loops, not memcpy */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "kevo_kernel.h"
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#if defined(__AVX512F__)
#define VBYTES 64
#elif defined(__AVX__)
#define VBYTES 32
#else
#define VBYTES 16
#endif
#define LANES (VBYTES / 4)
typedef float vf __attribute__((vector_size(VBYTES)));

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A store that bypasses the caches (no read-for-ownership of the target line). */
static inline void stream_store(float* p, vf v) {
#if defined(__AVX512F__)
  _mm512_stream_ps(p, (__m512)v);
#elif defined(__AVX__)
  _mm256_stream_ps(p, (__m256)v);
#elif defined(__SSE__)
  _mm_stream_ps(p, (__m128)v);
#else
  *(vf*)p = v;
#endif
}

static float* alloc_floats(size_t n) {
  size_t bytes = (n * sizeof(float) + (2u << 20) - 1) / (2u << 20) * (2u << 20);
  float* p = (float*)aligned_alloc(2u << 20, bytes);
  if (p) madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

/* Seconds per pass over the arrays, from `reps` passes inside one parallel
 * region: small working sets need many passes to amortise the clock and the
 * fork/join, and the barrier between passes is what a real kernel pays too. */
static double timed_passes(int kind, int threads, float* a, float* b, float* c, long n, long reps) {
  const vf s = (vf){0} + 3.0f;
  double t0 = now();
  if (threads == 1) { /* no OpenMP bookkeeping between passes of one thread */
    for (long r = 0; r < reps; ++r) {
      if (kind == 0) {
        for (long i = 0; i < n; i += LANES) *(vf*)(b + i) = *(const vf*)(a + i);
      } else if (kind == 1) {
        for (long i = 0; i < n; i += LANES) stream_store(b + i, *(const vf*)(a + i));
#if defined(__x86_64__)
        __builtin_ia32_sfence();
#endif
      } else {
        for (long i = 0; i < n; i += LANES) *(vf*)(a + i) = *(const vf*)(b + i) + s * *(const vf*)(c + i);
      }
      __asm__ __volatile__("" ::: "memory"); /* each pass really happens */
    }
    return (now() - t0) / (double)reps;
  }
#pragma omp parallel num_threads(threads)
  for (long r = 0; r < reps; ++r) {
    if (kind == 0) {
#pragma omp for schedule(static)
      for (long i = 0; i < n; i += LANES) *(vf*)(b + i) = *(const vf*)(a + i);
    } else if (kind == 1) {
#pragma omp for schedule(static)
      for (long i = 0; i < n; i += LANES) stream_store(b + i, *(const vf*)(a + i));
#if defined(__x86_64__)
      __builtin_ia32_sfence();
#endif
    } else {
#pragma omp for schedule(static)
      for (long i = 0; i < n; i += LANES) *(vf*)(a + i) = *(const vf*)(b + i) + s * *(const vf*)(c + i);
    }
  }
  return (now() - t0) / (double)reps;
}

KEVO_EXPORT double kevo_roof_bandwidth(const char* kind_name, int threads, double bytes,
                                       double min_seconds) {
  int kind = !strcmp(kind_name, "copy") ? 0 : !strcmp(kind_name, "copy_nt") ? 1 : 2;
  int arrays = kind == 2 ? 3 : 2;
  long quantum = (long)LANES * 16 * threads;
  long n = (long)(bytes / arrays / sizeof(float)) / quantum * quantum;
  if (n < quantum) n = quantum;
  float *a = alloc_floats((size_t)n), *b = alloc_floats((size_t)n), *c = alloc_floats((size_t)n);
  if (!a || !b || !c) return -1;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (long i = 0; i < n; ++i) {
    a[i] = (float)(i & 1023);
    b[i] = 1.0f;
    c[i] = 2.0f;
  }
  /* Passes per sample so that a sample lasts about 200 us. */
  double one = timed_passes(kind, threads, a, b, c, n, 1);
  one = timed_passes(kind, threads, a, b, c, n, 1);
  long reps = one > 0 ? (long)(2e-4 / one) + 1 : 1;
  if (reps > 100000) reps = 100000;
  double best = 1e30, start = now();
  int samples = 0;
  do {
    double dt = timed_passes(kind, threads, a, b, c, n, reps);
    if (dt < best) best = dt;
    ++samples;
  } while (samples < 3 || now() - start < min_seconds);
  volatile float sink = a[n / 3] + b[n / 2] + c[n - 1];
  (void)sink;
  free(a);
  free(b);
  free(c);
  return (double)arrays * (double)n * sizeof(float) / best / 1e9;
}

#define ACC 12 /* independent chains: covers FMA latency x 2 ports */

static double fma_run(long iters) {
  float total = 0;
#pragma omp parallel reduction(+ : total)
  {
    vf acc[ACC];
    const vf m = (vf){0} + 0.9999999f, add = (vf){0} + 1e-7f;
    for (int j = 0; j < ACC; ++j) acc[j] = (vf){0} + (float)(j + omp_get_thread_num());
    for (long it = 0; it < iters; ++it) {
#pragma GCC unroll 12
      for (int j = 0; j < ACC; ++j) acc[j] = acc[j] * m + add;
    }
    for (int j = 0; j < ACC; ++j)
      for (int l = 0; l < LANES; ++l) total += acc[j][l];
  }
  return total;
}

KEVO_EXPORT double kevo_roof_fma(int threads, double min_seconds) {
  omp_set_num_threads(threads);
  long iters = 1 << 16;
  while (1) {
    double t0 = now();
    volatile double sink = fma_run(iters);
    (void)sink;
    if (now() - t0 > 0.02) break;
    iters *= 2;
  }
  double best = 1e30, start = now();
  int reps = 0;
  do {
    double t0 = now();
    volatile double sink = fma_run(iters);
    (void)sink;
    double dt = now() - t0;
    if (dt < best) best = dt;
    ++reps;
  } while (reps < 3 || now() - start < min_seconds);
  return (double)threads * (double)iters * ACC * LANES * 2.0 / best / 1e9;
}

/* Not a kernel: calibration artifacts are loaded by their own entry points. */
KEVO_EXPORT int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                            const double* scalars, int n_scalars) {
  return KEVO_ERR_UNSUPPORTED;
}
