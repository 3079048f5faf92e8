/* add_rmsnorm / fused.c — fast fp32 residual add + RMSNorm:
 * h = x + r, y = h * rsqrt(mean(h^2) + eps) * w. Outputs h and y.
 *
 * Two passes per row: the first streams x and r from memory and accumulates
 * sum(h^2) (UNROLL accumulators; with PIPE fused into the previous row's
 * output pass; fp32 lane sums flushed into double every 64 values per lane);
 * the second re-reads from L1/L2 and writes the outputs, optionally with
 * non-temporal stores (peeled to 64-byte alignment; ragged rows use masked
 * heads/tails) while prefetching the next rows. AVX-512 or 256-bit
 * AVX-512VL / AVX2, scalar fallback.
 * Knobs:
 *   HSTORE  0: h is recomputed (x + r) in the second pass and written there
 *              together with y (both streamed when NT).
 *           1: h is written by the first pass with plain stores and read back
 *              from cache by the second pass (NT applies to y only).
 *   VW      vector width in bits (256 or 512).
 *   UNROLL  vectors per inner-loop iteration = accumulators per row.
 *   PIPE    1: software-pipeline rows: the output pass of row i also does
 *              the first pass of row i+1, so the next row's memory reads
 *              overlap the work on this one. 0: separate passes.
 *   RB      (PIPE 0) rows whose reductions are interleaved.
 *   OB      0: row by row. >0: blocks of OB rows: first passes for the
 *           block, then the output in column chunks of COL elements across
 *           the block's rows, so the w chunk stays in L1 and x, r come from
 *           L2; the output pass prefetches the next block (PF > 0; the PF
 *           value itself is not used).
 *   COL     (OB > 0) column chunk in elements.
 *   NT      1: non-temporal stores (see HSTORE).
 *   PF      software prefetch distance in bytes, rounded up to whole rows
 *           (one row more with PIPE), issued from the output pass for x and
 *           r (0 = off).
 *   PFHINT  0: prefetch into L1 (T0), 1: into L2 (T1).
 *   THREADS OpenMP threads; rows split into contiguous ranges.
 */
// @kevo knob HSTORE 0 {0, 1}
// @kevo knob VW 512 {256, 512}
// @kevo knob UNROLL 4 {1, 2, 4, 8}
// @kevo knob PIPE 1 {0, 1}
// @kevo knob RB 1 {1, 2, 4}
// @kevo require RB * UNROLL <= 16
// @kevo require PIPE == 0 || RB == 1
// @kevo knob OB 0 {0, 4, 8, 16}
// @kevo knob COL 1024 {512, 1024, 2048}
// @kevo require OB == 0 || PIPE == 0
// @kevo require OB > 0 || COL == 1024
// @kevo require OB == 0 || PF == 0 || PF == 16384
// @kevo knob NT 1 {0, 1}
// @kevo knob PF 16384 {0, 4096, 16384, 32768, 65536}
// @kevo knob PFHINT 1 {0, 1}
// @kevo require PF > 0 || PFHINT == 0
// @kevo knob THREADS 1 {1, 2, 4, 8}
// @kevo require THREADS <= NCPU
#ifndef HSTORE
#define HSTORE 0
#endif
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
#ifndef OB
#define OB 0
#endif
#ifndef COL
#define COL 1024
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
#define KV_CHUNK (64 * U * VL) /* elements per fp32 partial sum: 64 per lane */

/* h = x + r for R rows (stride n): sum of h^2 -> out[]; HSTORE 1 also stores h */
KV_INLINE void pass1_rows(const float* x, const float* rr, float* h, int64_t n, const int R, double* out) {
  for (int q = 0; q < R; ++q) out[q] = 0.0;
  const int64_t B = U * VL;
  int64_t j = 0;
  while (j + B <= n) {
    int64_t jend = j + ((n - j) / B) * B;
    if (jend - j > KV_CHUNK) jend = j + KV_CHUNK;
    vf a[RB][U];
    for (int q = 0; q < R; ++q)
      for (int u = 0; u < U; ++u) a[q][u] = VZERO();
    for (; j < jend; j += B)
      for (int q = 0; q < R; ++q)
        for (int u = 0; u < U; ++u) {
          const int64_t o = q * n + j + u * VL;
          vf v = VADD(VLOAD(x + o), VLOAD(rr + o));
          if (HSTORE) VSTORE(h + o, v);
          a[q][u] = VFMA(v, v, a[q][u]);
        }
    for (int q = 0; q < R; ++q) {
      for (int u = 1; u < U; ++u) a[q][0] = VADD(a[q][0], a[q][u]);
      out[q] += (double)VHSUM(a[q][0]);
    }
  }
  if (j < n) {
    vf a[RB];
    for (int q = 0; q < R; ++q) a[q] = VZERO();
    for (; j + VL <= n; j += VL)
      for (int q = 0; q < R; ++q) {
        const int64_t o = q * n + j;
        vf v = VADD(VLOAD(x + o), VLOAD(rr + o));
        if (HSTORE) VSTORE(h + o, v);
        a[q] = VFMA(v, v, a[q]);
      }
    if (j < n) {
      vm k = vmask_n(n - j);
      for (int q = 0; q < R; ++q) {
        const int64_t o = q * n + j;
        vf v = VADD(VLOADM(x + o, k), VLOADM(rr + o, k));
        if (HSTORE) VSTOREM(h + o, k, v);
        a[q] = VFMA(v, v, a[q]);
      }
    }
    for (int q = 0; q < R; ++q) out[q] += (double)VHSUM(a[q]);
  }
}

KV_INLINE void out_vec(const float* x, const float* rr, const float* w, float* h, float* y, int64_t j, vf inv, vm k,
                       int masked, int64_t pfn) {
  if (masked) {
    vf v = HSTORE ? VLOADM(h + j, k) : VADD(VLOADM(x + j, k), VLOADM(rr + j, k));
    if (!HSTORE) VSTOREM(h + j, k, v);
    VSTOREM(y + j, k, VMUL(VMUL(v, inv), VLOADM(w + j, k)));
    return;
  }
#if PF > 0
  if (VL >= 16 || (j & 15) == 0) {
    KV_PREFETCH(x + j + pfn, PFHINT);
    KV_PREFETCH(rr + j + pfn, PFHINT);
  }
#else
  (void)pfn;
#endif
  vf v = HSTORE ? VLOAD(h + j) : VADD(VLOAD(x + j), VLOAD(rr + j));
  vf o = VMUL(VMUL(v, inv), VLOAD(w + j));
#if NT
  if (!HSTORE) VSTREAM(h + j, v);
  VSTREAM(y + j, o);
#else
  if (!HSTORE) VSTORE(h + j, v);
  VSTORE(y + j, o);
#endif
}

/* first-pass work for one vector of the next row (o = offset in that row) */
KV_INLINE vf next_h(const float* xn, const float* rn, float* hn, int64_t o, vm k, int masked) {
  vf v = masked ? VADD(VLOADM(xn + o, k), VLOADM(rn + o, k)) : VADD(VLOAD(xn + o), VLOAD(rn + o));
  if (HSTORE) {
    if (masked) VSTOREM(hn + o, k, v);
    else VSTORE(hn + o, v);
  }
  return v;
}

/* Output pass of one row. With pipe, the same loop also does the first pass
 * of the next row (xn, rn -> sum of squares *ssn, and h when HSTORE), so its
 * memory reads overlap this row's arithmetic and stores. */
KV_INLINE void out_row_p(const float* x, const float* rr, const float* w, float* h, float* y, int64_t n,
                         float inv_s, int64_t pfn, const float* xn, const float* rn, float* hn, double* ssn,
                         const int pipe) {
  const vf inv = VSET1(inv_s);
  const int64_t head = kv_head(y, n, NT); /* h and y share the 64-byte phase */
  const int64_t B = U * VL;
  vf t = VZERO();
  double tot = 0.0;
  int64_t j = 0;
  while (j < head) {
    int64_t kk = head - j < VL ? head - j : VL;
    vm k = vmask_n(kk);
    out_vec(x, rr, w, h, y, j, inv, k, 1, pfn);
    if (pipe) { vf v = next_h(xn, rn, hn, j, k, 1); t = VFMA(v, v, t); }
    j += kk;
  }
  while (j + B <= n) {
    int64_t jend = j + ((n - j) / B) * B;
    if (jend - j > KV_CHUNK) jend = j + KV_CHUNK;
    vf a[U];
    for (int u = 0; u < U; ++u) a[u] = VZERO();
    for (; j < jend; j += B)
      for (int u = 0; u < U; ++u) {
        out_vec(x, rr, w, h, y, j + u * VL, inv, vmask_n(0), 0, pfn);
        if (pipe) { vf v = next_h(xn, rn, hn, j + u * VL, vmask_n(0), 0); a[u] = VFMA(v, v, a[u]); }
      }
    if (pipe) {
      for (int u = 1; u < U; ++u) a[0] = VADD(a[0], a[u]);
      tot += (double)VHSUM(a[0]);
    }
  }
  for (; j + VL <= n; j += VL) {
    out_vec(x, rr, w, h, y, j, inv, vmask_n(0), 0, pfn);
    if (pipe) { vf v = next_h(xn, rn, hn, j, vmask_n(0), 0); t = VFMA(v, v, t); }
  }
  if (j < n) {
    vm k = vmask_n(n - j);
    out_vec(x, rr, w, h, y, j, inv, k, 1, pfn);
    if (pipe) { vf v = next_h(xn, rn, hn, j, k, 1); t = VFMA(v, v, t); }
  }
  if (pipe) *ssn = tot + (double)VHSUM(t);
}

KV_INLINE float inv_rms(double ss, int64_t n, double eps) { return (float)(1.0 / sqrt(ss / (double)n + eps)); }

#if OB > 0
/* h, y over columns [j0, j1) of one row; j0 is 0 or a 64-byte aligned point
 * (past the row's head), j1 is n or aligned */
KV_INLINE void out_range(const float* x, const float* rr, const float* w, float* h, float* y, vf inv, int64_t head,
                         int64_t j0, int64_t j1, int64_t pfn) {
  int64_t j = j0;
  while (j < head && j < j1) {
    int64_t kk = head - j < VL ? head - j : VL;
    out_vec(x, rr, w, h, y, j, inv, vmask_n(kk), 1, pfn);
    j += kk;
  }
  for (; j + U * VL <= j1; j += U * VL)
    for (int u = 0; u < U; ++u) out_vec(x, rr, w, h, y, j + u * VL, inv, vmask_n(0), 0, pfn);
  for (; j + VL <= j1; j += VL) out_vec(x, rr, w, h, y, j, inv, vmask_n(0), 0, pfn);
  if (j < j1) out_vec(x, rr, w, h, y, j, inv, vmask_n(j1 - j), 1, pfn);
}

/* Row blocks of OB rows: first passes row-group by row-group, then the
 * output in column chunks of COL elements across the block's rows, so the w
 * chunk stays in L1 while x and r come from L2; the output pass prefetches
 * the next block. */
static void run_blocks(const float* x, const float* rr, const float* w, float* h, float* y, int64_t r0, int64_t r1,
                       int64_t n, double eps) {
  double ss[OB];
  vf inv[OB];
  int64_t head[OB];
  for (int64_t i = r0; i < r1; i += OB) {
    const int nb = (int)(r1 - i < OB ? r1 - i : OB);
    const int64_t pfn = PF > 0 ? (int64_t)OB * n : 0;
    int q = 0;
    for (; q + RB <= nb; q += RB) pass1_rows(x + (i + q) * n, rr + (i + q) * n, h + (i + q) * n, n, RB, ss + q);
    for (; q < nb; ++q) pass1_rows(x + (i + q) * n, rr + (i + q) * n, h + (i + q) * n, n, 1, ss + q);
    for (q = 0; q < nb; ++q) {
      inv[q] = VSET1((float)(1.0 / sqrt(ss[q] / (double)n + eps)));
      head[q] = kv_head(y + (i + q) * n, n, NT);
    }
    for (int64_t c = 0; c < n + 16; c += COL) {
      for (q = 0; q < nb; ++q) {
        int64_t j0 = c == 0 ? 0 : head[q] + c, j1 = head[q] + c + COL;
        if (j0 > n) j0 = n;
        if (j1 > n) j1 = n;
        const int64_t o = (i + q) * n;
        if (j0 < j1) out_range(x + o, rr + o, w, h + o, y + o, inv[q], head[q], j0, j1, pfn);
      }
    }
  }
  KV_SFENCE();
}
#endif

#if OB == 0
static void run_rows(const float* x, const float* rr, const float* w, float* h, float* y, int64_t r0, int64_t r1,
                     int64_t n, double eps) {
  if (r0 >= r1) return;
  int64_t pfn = PF > 0 ? ((PF / 4 + n - 1) / n) * n : 0;
#if PIPE
  if (PF > 0) pfn += n; /* the next row is demand-loaded: prefetch beyond it */
  double ss;
  pass1_rows(x + r0 * n, rr + r0 * n, h + r0 * n, n, 1, &ss);
  for (int64_t i = r0; i < r1; ++i) {
    const int64_t o = i * n;
    const float inv = inv_rms(ss, n, eps);
    if (i + 1 < r1)
      out_row_p(x + o, rr + o, w, h + o, y + o, n, inv, pfn, x + o + n, rr + o + n, h + o + n, &ss, 1);
    else
      out_row_p(x + o, rr + o, w, h + o, y + o, n, inv, pfn, NULL, NULL, NULL, NULL, 0);
  }
#else
  double ss[RB];
  int64_t i = r0;
  for (; i + RB <= r1; i += RB) {
    pass1_rows(x + i * n, rr + i * n, h + i * n, n, RB, ss);
    for (int q = 0; q < RB; ++q) {
      const int64_t o = (i + q) * n;
      out_row_p(x + o, rr + o, w, h + o, y + o, n, inv_rms(ss[q], n, eps), pfn, NULL, NULL, NULL, NULL, 0);
    }
  }
  for (; i < r1; ++i) {
    const int64_t o = i * n;
    pass1_rows(x + o, rr + o, h + o, n, 1, ss);
    out_row_p(x + o, rr + o, w, h + o, y + o, n, inv_rms(ss[0], n, eps), pfn, NULL, NULL, NULL, NULL, 0);
  }
#endif
  KV_SFENCE();
}
#endif

KEVO_EXPORT int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                            const double* scalars, int n_scalars) {
  if (n_in != 3 || n_out != 2 || n_scalars != 1) return KEVO_ERR_ARGS;
  int rc;
  for (int i = 0; i < 3; ++i)
    if ((rc = kv_check_f32(&in[i]))) return rc;
  for (int i = 0; i < 2; ++i)
    if ((rc = kv_check_f32(&out[i]))) return rc;
  const int64_t n = kevo_row_len(&in[0]);
  const int64_t rows = kevo_rows(&in[0]);
  if (kevo_numel(&in[1]) != rows * n || kevo_numel(&in[2]) != n || kevo_numel(&out[0]) != rows * n ||
      kevo_numel(&out[1]) != rows * n || kevo_row_len(&out[0]) != n || kevo_row_len(&out[1]) != n ||
      kevo_row_len(&in[1]) != n)
    return KEVO_ERR_ARGS;
  if (n <= 0 || rows <= 0) return KEVO_OK;
  const float* x = (const float*)in[0].data;
  const float* rr = (const float*)in[1].data;
  const float* w = (const float*)in[2].data;
  float* h = (float*)out[0].data;
  float* y = (float*)out[1].data;
  const double eps = scalars[0];
#if NT
  /* one alignment head serves both outputs only if they share the 64-byte phase */
  if ((((uintptr_t)h ^ (uintptr_t)y) & 63) != 0) return KEVO_ERR_UNSUPPORTED;
#endif
#if OB > 0
#define RUN run_blocks
#else
#define RUN run_rows
#endif
#if THREADS > 1
  if (rows > 1 && rows * n >= 16384) {
#pragma omp parallel num_threads(THREADS)
    {
      const int nt = omp_get_num_threads(), t = omp_get_thread_num();
      RUN(x, rr, w, h, y, rows * t / nt, rows * (t + 1) / nt, n, eps);
    }
    return KEVO_OK;
  }
#endif
  RUN(x, rr, w, h, y, 0, rows, n, eps);
  return KEVO_OK;
}
