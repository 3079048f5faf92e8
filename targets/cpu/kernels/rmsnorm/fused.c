/* rmsnorm / fused.c — fast fp32 RMSNorm: y = x * rsqrt(mean(x^2) + eps) * w.
 *
 * Two passes per row: the sum of squares streams the row from memory (FMA into
 * UNROLL independent accumulators), then the output pass re-reads the row
 * from L1/L2 and writes y (PIPE fuses the two across rows), optionally with non-temporal
 * stores (peeled to 64-byte alignment; rows of ragged length are handled with
 * masked heads/tails). Software prefetch from the output pass pulls the next
 * rows in while the core is busy with the current one. AVX-512 or 256-bit
 * AVX-512VL / AVX2, scalar fallback. fp32 lane sums are flushed into double
 * every 64 values per lane; rsqrt is computed in double per row.
 * Knobs:
 *   VW      vector width in bits (256 or 512).
 *   UNROLL  vectors per inner-loop iteration = accumulators per row.
 *   PIPE    1: software-pipeline rows: the output pass of row i also reduces
 *           row i+1, so the memory reads of the next row overlap the work on
 *           this one (one fused streaming loop). 0: two separate passes.
 *   RB      (PIPE 0) rows whose reductions are interleaved (hides the
 *           reduction latency on short rows).
 *   NT      1: non-temporal stores of y.
 *   PF      software prefetch distance in bytes, rounded up to whole rows
 *           (one row more with PIPE), issued from the output pass (0 = off).
 *   PFHINT  0: prefetch into L1 (T0), 1: into L2 (T1).
 *   THREADS OpenMP threads; rows split into contiguous ranges.
 */
// @kevo knob VW 512 {256, 512}
// @kevo knob UNROLL 4 {1, 2, 4, 8}
// @kevo knob PIPE 1 {0, 1}
// @kevo knob RB 1 {1, 2, 4}
// @kevo require RB * UNROLL <= 16
// @kevo require PIPE == 0 || RB == 1
// @kevo knob NT 1 {0, 1}
// @kevo knob PF 16384 {0, 4096, 16384, 32768, 65536}
// @kevo knob PFHINT 1 {0, 1}
// @kevo require PF > 0 || PFHINT == 0
// @kevo knob THREADS 1 {1, 2, 4, 8}
// @kevo require THREADS <= NCPU
#ifndef VW
#define VW 512
#endif
#ifndef UNROLL
#define UNROLL 4
#endif
#ifndef PIPE
#define PIPE 1
#endif
#ifndef RB
#define RB 1
#endif
#ifndef NT
#define NT 1
#endif
#ifndef PF
#define PF 16384
#endif
#ifndef PFHINT
#define PFHINT 1
#endif
#ifndef THREADS
#define THREADS 1
#endif

#include <immintrin.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "kevo_kernel.h"

/* kevo's vector layer and exp2/exp (kevo_cpu_vec.h, kevo_cpu_exp.h): targets/cpu/include */
#include "kevo_cpu_exp.h"

#define U UNROLL

/* sum of squares of R rows (stride n) at once; fp32 lane accumulators are
 * flushed into double every KV_CHUNK elements so long rows stay accurate */
#define KV_CHUNK (64 * U * VL) /* elements per fp32 partial sum: 64 per lane */
KV_INLINE void sumsq_rows(const float* x, int64_t n, const int R, double* out) {
  for (int r = 0; r < R; ++r) out[r] = 0.0;
  const int64_t B = U * VL;
  int64_t j = 0;
  while (j + B <= n) {
    int64_t jend = j + ((n - j) / B) * B;
    if (jend - j > KV_CHUNK) jend = j + KV_CHUNK;
    vf a[RB][U];
    for (int r = 0; r < R; ++r)
      for (int u = 0; u < U; ++u) a[r][u] = VZERO();
    for (; j < jend; j += B)
      for (int r = 0; r < R; ++r)
        for (int u = 0; u < U; ++u) {
          vf v = VLOAD(x + r * n + j + u * VL);
          a[r][u] = VFMA(v, v, a[r][u]);
        }
    for (int r = 0; r < R; ++r) {
      for (int u = 1; u < U; ++u) a[r][0] = VADD(a[r][0], a[r][u]);
      out[r] += (double)VHSUM(a[r][0]);
    }
  }
  if (j < n) {
    vf a[RB];
    for (int r = 0; r < R; ++r) a[r] = VZERO();
    for (; j + VL <= n; j += VL)
      for (int r = 0; r < R; ++r) {
        vf v = VLOAD(x + r * n + j);
        a[r] = VFMA(v, v, a[r]);
      }
    if (j < n) {
      vm k = vmask_n(n - j);
      for (int r = 0; r < R; ++r) {
        vf v = VLOADM(x + r * n + j, k);
        a[r] = VFMA(v, v, a[r]);
      }
    }
    for (int r = 0; r < R; ++r) out[r] += (double)VHSUM(a[r]);
  }
}

KV_INLINE void out_vec(const float* x, const float* w, float* y, int64_t j, vf inv, vm k, int masked,
                       int64_t pfn) {
  if (masked) {
    VSTOREM(y + j, k, VMUL(VMUL(VLOADM(x + j, k), inv), VLOADM(w + j, k)));
    return;
  }
#if PF > 0
  if (VL >= 16 || (j & 15) == 0) KV_PREFETCH(x + j + pfn, PFHINT);
#else
  (void)pfn;
#endif
  vf v = VMUL(VMUL(VLOAD(x + j), inv), VLOAD(w + j));
#if NT
  VSTREAM(y + j, v);
#else
  VSTORE(y + j, v);
#endif
}

/* Output pass of one row. With pipe, the same loop also accumulates the sum
 * of squares of the next row xn (-> *ssn), so the next row's memory reads
 * overlap this row's arithmetic and stores (software pipelining by one row). */
KV_INLINE void out_row_p(const float* x, const float* w, float* y, int64_t n, float inv_s, int64_t pfn,
                         const float* xn, double* ssn, const int pipe) {
  const vf inv = VSET1(inv_s);
  const int64_t head = kv_head(y, n, NT);
  const int64_t B = U * VL;
  vf t = VZERO();
  double tot = 0.0;
  int64_t j = 0;
  while (j < head) {
    int64_t kk = head - j < VL ? head - j : VL;
    vm k = vmask_n(kk);
    out_vec(x, w, y, j, inv, k, 1, pfn);
    if (pipe) { vf v = VLOADM(xn + j, k); t = VFMA(v, v, t); }
    j += kk;
  }
  while (j + B <= n) {
    int64_t jend = j + ((n - j) / B) * B;
    if (jend - j > KV_CHUNK) jend = j + KV_CHUNK;
    vf a[U];
    for (int u = 0; u < U; ++u) a[u] = VZERO();
    for (; j < jend; j += B)
      for (int u = 0; u < U; ++u) {
        out_vec(x, w, y, j + u * VL, inv, vmask_n(0), 0, pfn);
        if (pipe) { vf v = VLOAD(xn + j + u * VL); a[u] = VFMA(v, v, a[u]); }
      }
    if (pipe) {
      for (int u = 1; u < U; ++u) a[0] = VADD(a[0], a[u]);
      tot += (double)VHSUM(a[0]);
    }
  }
  for (; j + VL <= n; j += VL) {
    out_vec(x, w, y, j, inv, vmask_n(0), 0, pfn);
    if (pipe) { vf v = VLOAD(xn + j); t = VFMA(v, v, t); }
  }
  if (j < n) {
    vm k = vmask_n(n - j);
    out_vec(x, w, y, j, inv, k, 1, pfn);
    if (pipe) { vf v = VLOADM(xn + j, k); t = VFMA(v, v, t); }
  }
  if (pipe) *ssn = tot + (double)VHSUM(t);
}

KV_INLINE float inv_rms(double ss, int64_t n, double eps) { return (float)(1.0 / sqrt(ss / (double)n + eps)); }

static void run_rows(const float* x, const float* w, float* y, int64_t r0, int64_t r1, int64_t n, double eps) {
  if (r0 >= r1) return;
  int64_t pfn = PF > 0 ? ((PF / 4 + n - 1) / n) * n : 0;
#if PIPE
  /* the next row is demand-loaded by the pipelined loop: prefetch beyond it */
  if (PF > 0) pfn += n;
  double ss;
  sumsq_rows(x + r0 * n, n, 1, &ss);
  for (int64_t i = r0; i < r1; ++i) {
    const float inv = inv_rms(ss, n, eps);
    if (i + 1 < r1) out_row_p(x + i * n, w, y + i * n, n, inv, pfn, x + (i + 1) * n, &ss, 1);
    else out_row_p(x + i * n, w, y + i * n, n, inv, pfn, NULL, NULL, 0);
  }
#else
  double ss[RB];
  int64_t i = r0;
  for (; i + RB <= r1; i += RB) {
    sumsq_rows(x + i * n, n, RB, ss);
    for (int r = 0; r < RB; ++r) out_row_p(x + (i + r) * n, w, y + (i + r) * n, n, inv_rms(ss[r], n, eps), pfn, NULL, NULL, 0);
  }
  for (; i < r1; ++i) {
    sumsq_rows(x + i * n, n, 1, ss);
    out_row_p(x + i * n, w, y + i * n, n, inv_rms(ss[0], n, eps), pfn, NULL, NULL, 0);
  }
#endif
  KV_SFENCE();
}

KEVO_EXPORT int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                            const double* scalars, int n_scalars) {
  if (n_in != 2 || n_out != 1 || n_scalars != 1) return KEVO_ERR_ARGS;
  int rc;
  if ((rc = kv_check_f32(&in[0])) || (rc = kv_check_f32(&in[1])) || (rc = kv_check_f32(&out[0]))) return rc;
  const int64_t n = kevo_row_len(&in[0]);
  const int64_t rows = kevo_rows(&in[0]);
  if (kevo_numel(&in[1]) != n || kevo_numel(&out[0]) != rows * n || kevo_row_len(&out[0]) != n) return KEVO_ERR_ARGS;
  if (n <= 0 || rows <= 0) return KEVO_OK;
  const float* x = (const float*)in[0].data;
  const float* w = (const float*)in[1].data;
  float* y = (float*)out[0].data;
  const double eps = scalars[0];
#if THREADS > 1
  if (rows > 1 && rows * n >= 16384) {
#pragma omp parallel num_threads(THREADS)
    {
      const int nt = omp_get_num_threads(), t = omp_get_thread_num();
      run_rows(x, w, y, rows * t / nt, rows * (t + 1) / nt, n, eps);
    }
    return KEVO_OK;
  }
#endif
  run_rows(x, w, y, 0, rows, n, eps);
  return KEVO_OK;
}
