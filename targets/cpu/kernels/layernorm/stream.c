/* layernorm / stream.c — fp32 LayerNorm over the last dim as one stream of
 * row blocks: y = (x - mean) * rsqrt(var + eps) * w + b (biased variance).
 *
 * Rows are handled RB at a time. The output loop walks the columns once for
 * the whole block, so each vector of w and b is loaded once and used for RB
 * rows (w and b are 32 KB together: with one row at a time they and the row
 * do not fit L1 at once). With PIPE the same loop also accumulates the
 * statistics of the next block, whose rows come from memory, so reads,
 * arithmetic and the (non-temporal) stores of y all overlap instead of
 * alternating between a read-only statistics pass and a write pass; each row
 * is read from DRAM once and re-read from L2. Software prefetch walks the
 * rows PF bytes ahead of those being read from memory, in step with them.
 * Rows are split statically into contiguous ranges among THREADS. All sums use
 * the shift d = x - x[0] and flush fp32 lane accumulators into double every
 * 64 values per lane; y = fma((x - x[0]) * rstd - (mean - x[0]) * rstd, w, b)
 * keeps x - mean accurate with a large mean offset. Non-temporal stores are
 * used when every row of y is 64-byte aligned (row length a multiple of 16);
 * other shapes use ordinary stores. AVX-512 or 256-bit AVX-512VL / AVX2,
 * scalar fallback.
 * Knobs:
 *   VAR     0: two-pass statistics (sum -> mean, then sum((x-mean)^2) from
 *              cache); 1: one pass of shifted sums, var = E[d^2] - E[d]^2.
 *   PIPE    1: the output loop of block k also does the (first) statistics
 *              pass of block k+1; 0: statistics pass, then output pass.
 *   RB      rows per block (share the w/b loads; accumulators per column).
 *   VW      vector width in bits (256 or 512).
 *   UNROLL  column vectors per inner-loop iteration (= accumulators per row).
 *   NT      1: non-temporal stores of y (aligned shapes only).
 *   PF      prefetch distance in bytes: the output loop prefetches each
 *           row being read from memory PF bytes further on, same column
 *           (0 = off).
 *   PFHINT  0: prefetch into L1 (T0), 1: into L2 (T1).
 *   THREADS OpenMP threads; rows split into contiguous ranges.
 */
// @kevo knob VAR 1 {0, 1}
// @kevo knob PIPE 1 {0, 1}
// @kevo knob RB 4 {1, 2, 4, 8}
// @kevo knob VW 512 {256, 512}
// @kevo knob UNROLL 2 {1, 2, 4}
// @kevo require RB * UNROLL <= 8
// @kevo knob NT 1 {0, 1}
// @kevo knob PF 65536 {0, 16384, 32768, 65536, 131072}
// @kevo knob PFHINT 1 {0, 1}
// @kevo require PF > 0 || PFHINT == 0
// @kevo knob THREADS 1 {1, 2, 4, 8}
// @kevo require THREADS <= NCPU
#ifndef VAR
#define VAR 1
#endif
#ifndef PIPE
#define PIPE 1
#endif
#ifndef RB
#define RB 4
#endif
#ifndef VW
#define VW 512
#endif
#ifndef UNROLL
#define UNROLL 2
#endif
#ifndef NT
#define NT 1
#endif
#ifndef PF
#define PF 65536
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

/* kevo's vector layer: targets/cpu/include */
#include "kevo_cpu_vec.h"

#define U UNROLL
#define KV_CHUNK (64 * U * VL) /* columns per fp32 partial sum: 64 per lane */

/* per-row output constants: y = fma((x - K) * rstd - m1r, w, b) */
typedef struct {
  vf k, rstd, m1r;
} ln_row;

KV_INLINE vf ln_apply(vf xv, vf wv, vf bv, ln_row s) { return VFMA(VFMS(VSUB(xv, s.k), s.rstd, s.m1r), wv, bv); }

KV_INLINE void put(float* p, vf v, const int nt) {
  if (nt)
    VSTREAM(p, v);
  else
    VSTORE(p, v);
}

/* Software prefetch of column j of R rows at p (row stride n), one line per
 * row per 64 bytes of columns; p == NULL: off. */
KV_INLINE void pf_rows(const float* p, int64_t n, const int R, int64_t j, const int lines) {
#if PF > 0
  if (!p) return;
  for (int r = 0; r < R; ++r)
    for (int l = 0; l < lines; ++l) KV_PREFETCH(p + r * n + j + 16 * l, PFHINT);
#else
  (void)p, (void)n, (void)R, (void)j, (void)lines;
#endif
}

/* Statistics pass over R rows at x (shift K[r] = first element): s1 = sum(d)
 * (want1), s2 = sum((d - C[r])^2) (want2; C = 0 for VAR 1 one-pass sums). */
KV_INLINE void reduce_rows(const float* x, int64_t n, const int R, const float* K, const float* C, const int want1,
                           const int want2, double* s1, double* s2) {
  vf kv[RB], cv[RB];
  for (int r = 0; r < R; ++r) {
    kv[r] = VSET1(K[r]);
    cv[r] = VSET1(C ? C[r] : 0.0f);
    if (want1) s1[r] = 0.0;
    if (want2) s2[r] = 0.0;
  }
  const int64_t B = U * VL;
  int64_t j = 0;
  while (j < n) {
    int64_t jend = j + KV_CHUNK < n ? j + KV_CHUNK : n;
    vf a[RB][U], q[RB][U];
    for (int r = 0; r < R; ++r)
      for (int u = 0; u < U; ++u) a[r][u] = q[r][u] = VZERO();
    for (; j + B <= jend; j += B)
      for (int r = 0; r < R; ++r)
        for (int u = 0; u < U; ++u) {
          vf d = VSUB(VLOAD(x + r * n + j + u * VL), kv[r]);
          if (want1) a[r][u] = VADD(a[r][u], d);
          if (want2) {
            vf e = C ? VSUB(d, cv[r]) : d;
            q[r][u] = VFMA(e, e, q[r][u]);
          }
        }
    for (; j < jend; j += VL) {
      const int64_t m = jend - j < VL ? jend - j : VL;
      vm k = vmask_n(m);
      for (int r = 0; r < R; ++r) {
        vf d = VSEL(k, VSUB(VLOADM(x + r * n + j, k), kv[r]), VZERO());
        if (want1) a[r][0] = VADD(a[r][0], d);
        if (want2) {
          vf e = VSEL(k, C ? VSUB(d, cv[r]) : d, VZERO());
          q[r][0] = VFMA(e, e, q[r][0]);
        }
      }
    }
    for (int r = 0; r < R; ++r)
      for (int u = 0; u < U; ++u) {
        if (want1) s1[r] += (double)VHSUM(a[r][u]);
        if (want2) s2[r] += (double)VHSUM(q[r][u]);
      }
  }
}

/* Output of R rows (constants st[]) at columns of x/y; with Rn > 0 also the
 * first statistics pass of the Rn rows at xn (shifts kn) -> s1n, s2n.
 * Prefetches the same columns of the R rows at pf. */
KV_INLINE void out_rows(const float* x, const float* w, const float* b, float* y, int64_t n, const int R,
                        const ln_row* st, const float* xn, const int Rn, const float* Kn, double* s1n, double* s2n,
                        const float* pf, const int nt) {
  vf kn[RB];
  for (int r = 0; r < Rn; ++r) {
    kn[r] = VSET1(Kn[r]);
    s1n[r] = s2n[r] = 0.0;
  }
  const int64_t B = U * VL;
  int64_t j = 0;
  while (j < n) {
    int64_t jend = j + KV_CHUNK < n ? j + KV_CHUNK : n;
    vf a[RB][U], q[RB][U];
    for (int r = 0; r < Rn; ++r)
      for (int u = 0; u < U; ++u) a[r][u] = q[r][u] = VZERO();
    for (; j + B <= jend; j += B) {
      if (VL >= 16 || (j & 15) == 0) pf_rows(pf, n, R, j, (int)((B + 15) / 16));
      for (int u = 0; u < U; ++u) {
        const int64_t o = j + u * VL;
        const vf wv = VLOAD(w + o), bv = VLOAD(b + o);
        for (int r = 0; r < R; ++r) put(y + r * n + o, ln_apply(VLOAD(x + r * n + o), wv, bv, st[r]), nt);
        for (int r = 0; r < Rn; ++r) {
          vf d = VSUB(VLOAD(xn + r * n + o), kn[r]);
          a[r][u] = VADD(a[r][u], d);
          if (VAR) q[r][u] = VFMA(d, d, q[r][u]);
        }
      }
    }
    for (; j < jend; j += VL) {
      const int64_t m = jend - j < VL ? jend - j : VL;
      vm k = vmask_n(m);
      const vf wv = VLOADM(w + j, k), bv = VLOADM(b + j, k);
      for (int r = 0; r < R; ++r) {
        vf v = ln_apply(VLOADM(x + r * n + j, k), wv, bv, st[r]);
        if (m == VL)
          put(y + r * n + j, v, nt);
        else
          VSTOREM(y + r * n + j, k, v);
      }
      for (int r = 0; r < Rn; ++r) {
        vf d = VSEL(k, VSUB(VLOADM(xn + r * n + j, k), kn[r]), VZERO());
        a[r][0] = VADD(a[r][0], d);
        if (VAR) q[r][0] = VFMA(d, d, q[r][0]);
      }
    }
    for (int r = 0; r < Rn; ++r)
      for (int u = 0; u < U; ++u) {
        s1n[r] += (double)VHSUM(a[r][u]);
        if (VAR) s2n[r] += (double)VHSUM(q[r][u]);
      }
  }
}

/* Row statistics from the first pass (s1, and s2 for VAR 1) of R rows at x. */
KV_INLINE void finish_stats(const float* x, int64_t n, const int R, double eps, const float* K, double* s1,
                            double* s2, ln_row* st) {
  const double dn = (double)n;
  float m1[RB];
  for (int r = 0; r < R; ++r) m1[r] = (float)(s1[r] / dn);
#if VAR == 0
  reduce_rows(x, n, R, K, m1, 0, 1, s1, s2);
#endif
  for (int r = 0; r < R; ++r) {
    const double mu = s1[r] / dn;
#if VAR
    double var = s2[r] / dn - mu * mu;
    if (var < 0.0) var = 0.0;
#else
    const double var = s2[r] / dn;
#endif
    const float rstd = (float)(1.0 / sqrt(var + eps));
    st[r].k = VSET1(K[r]);
    st[r].rstd = VSET1(rstd);
    st[r].m1r = VSET1((float)(mu * (double)rstd));
  }
}

KV_INLINE void run_rows_nt(const float* x, const float* w, const float* b, float* y, int64_t r0, int64_t r1, int64_t n,
                           double eps, const int nt) {
  ln_row st[RB];
  float K[RB];
  double s1[RB], s2[RB];
  const float* end = x + r1 * n;
  int64_t i = r0;
  if (r1 - r0 >= RB) {
    /* first block: statistics pass */
    for (int r = 0; r < RB; ++r) K[r] = x[(i + r) * n];
    reduce_rows(x + i * n, n, RB, K, NULL, 1, VAR, s1, s2);
    finish_stats(x + i * n, n, RB, eps, K, s1, s2, st);
    for (; i + RB <= r1; i += RB) {
      const int64_t i2 = i + RB;
      const int more = i2 + RB <= r1;
      /* rows read from memory during this output loop: the next block (PIPE)
       * or this one (already read by its statistics pass) */
      const float* pf = x + (PIPE ? i2 : i) * n + PF / 4;
      if (PF == 0 || pf + RB * n > end) pf = NULL;
      if (PIPE && more) {
        float Kn[RB];
        for (int r = 0; r < RB; ++r) Kn[r] = x[(i2 + r) * n];
        out_rows(x + i * n, w, b, y + i * n, n, RB, st, x + i2 * n, RB, Kn, s1, s2, pf, nt);
        finish_stats(x + i2 * n, n, RB, eps, Kn, s1, s2, st);
      } else {
        out_rows(x + i * n, w, b, y + i * n, n, RB, st, NULL, 0, NULL, NULL, NULL, pf, nt);
        if (more) {
          for (int r = 0; r < RB; ++r) K[r] = x[(i2 + r) * n];
          reduce_rows(x + i2 * n, n, RB, K, NULL, 1, VAR, s1, s2);
          finish_stats(x + i2 * n, n, RB, eps, K, s1, s2, st);
        }
      }
    }
  }
  for (; i < r1; ++i) { /* leftover rows, one at a time */
    K[0] = x[i * n];
    reduce_rows(x + i * n, n, 1, K, NULL, 1, VAR, s1, s2);
    finish_stats(x + i * n, n, 1, eps, K, s1, s2, st);
    out_rows(x + i * n, w, b, y + i * n, n, 1, st, NULL, 0, NULL, NULL, NULL, NULL, nt);
  }
  if (nt) KV_SFENCE();
}

static void run_rows(const float* x, const float* w, const float* b, float* y, int64_t r0, int64_t r1, int64_t n,
                     double eps) {
  if (r0 >= r1) return;
  /* streaming stores need every row of y 64-byte aligned */
  if (NT && HAVE_STREAM && n % 16 == 0 && ((uintptr_t)y & 63) == 0)
    run_rows_nt(x, w, b, y, r0, r1, n, eps, 1);
  else
    run_rows_nt(x, w, b, y, r0, r1, n, eps, 0);
}

KEVO_EXPORT int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                            const double* scalars, int n_scalars) {
  if (n_in != 3 || n_out != 1 || n_scalars != 1) return KEVO_ERR_ARGS;
  int rc;
  for (int i = 0; i < 3; ++i)
    if ((rc = kv_check_f32(&in[i]))) return rc;
  if ((rc = kv_check_f32(&out[0]))) return rc;
  const int64_t n = kevo_row_len(&in[0]);
  const int64_t rows = kevo_rows(&in[0]);
  if (kevo_numel(&in[1]) != n || kevo_numel(&in[2]) != n || kevo_numel(&out[0]) != rows * n ||
      kevo_row_len(&out[0]) != n)
    return KEVO_ERR_ARGS;
  if (n <= 0 || rows <= 0) return KEVO_OK;
  const float* x = (const float*)in[0].data;
  const float* w = (const float*)in[1].data;
  const float* b = (const float*)in[2].data;
  float* y = (float*)out[0].data;
  const double eps = scalars[0];
#if THREADS > 1
  if (rows > 1 && rows * n >= 16384) {
#pragma omp parallel num_threads(THREADS)
    {
      const int nt = omp_get_num_threads(), t = omp_get_thread_num();
      run_rows(x, w, b, y, rows * t / nt, rows * (t + 1) / nt, n, eps);
    }
    return KEVO_OK;
  }
#endif
  run_rows(x, w, b, y, 0, rows, n, eps);
  return KEVO_OK;
}
