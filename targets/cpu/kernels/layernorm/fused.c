/* layernorm / fused.c — fast fp32 LayerNorm over the last dim:
 * y = (x - mean) * rsqrt(var + eps) * w + b, var = biased (population) variance.
 *
 * The row is streamed from memory once by the first reduction pass (UNROLL
 * independent accumulators; with PIPE fused into the previous row's output
 * pass); later passes re-read it from L1/L2. The output pass writes y with
 * optional non-temporal stores (peeled to 64-byte alignment, masked ragged
 * heads/tails) and prefetches the next rows. AVX-512 or 256-bit AVX-512VL /
 * AVX2, scalar fallback. All sums use the shift d = x - x[0] and flush fp32
 * lane accumulators into double every 64 values per lane; the output uses
 * (x - x[0]) - (mean - x[0]), which keeps x - mean accurate even when the
 * mean is large relative to the spread (x - fp32(mean) would carry an error
 * of ~ulp(mean) * rstd).
 * Knobs:
 *   VAR     0: two-pass statistics: sum -> mean, then sum((x-mean)^2) from
 *              cache (robust to any mean offset).
 *           1: one pass of shifted sums, d = x - x[0]: sum(d), sum(d^2);
 *              var = E[d^2] - E[d]^2 (in double). The shift by the row's
 *              first element removes the mean offset, so the cancellation
 *              that breaks a plain E[x^2] - E[x]^2 in fp32 does not occur.
 *   PIPE    1: software pipelining: the output pass of row i (of row block
 *              k when OB > 0) also does the first reduction of row i+1 (of
 *              block k+1), so the next rows' memory reads overlap the work on
 *              this one. 0: separate passes.
 *   VW      vector width in bits (256 or 512).
 *   UNROLL  vectors per inner-loop iteration = accumulators per row.
 *   RB      (PIPE 0) rows whose reductions are interleaved (hides the
 *           reduction latency on short rows).
 *   OB      0: row by row. >0: blocks of OB rows: statistics for the block,
 *           then the output in column chunks of COL elements across the
 *           block's rows, so the w/b chunk stays in L1 and the rows come
 *           from L2; the output pass prefetches the next block (PF > 0; the
 *           PF value itself is not used).
 *   COL     (OB > 0) column chunk in elements.
 *   NT      1: non-temporal stores of y.
 *   PF      software prefetch distance in bytes, rounded up to whole rows
 *           (one row more with PIPE), issued from the output pass (0 = off).
 *   PFHINT  0: prefetch into L1 (T0), 1: into L2 (T1).
 *   THREADS OpenMP threads; rows split into contiguous ranges.
 */
// @kevo knob VAR 1 {0, 1}
// @kevo knob PIPE 1 {0, 1}
// @kevo knob VW 512 {256, 512}
// @kevo knob UNROLL 4 {1, 2, 4, 8}
// @kevo knob RB 1 {1, 2, 4}
// @kevo require RB * UNROLL * (VAR + 1) <= 16
// @kevo require PIPE == 0 || RB == 1
// @kevo knob OB 8 {0, 4, 8, 16}
// @kevo knob COL 1024 {512, 1024, 2048}
// @kevo require OB > 0 || COL == 1024
// @kevo require OB == 0 || PF == 0 || PF == 16384
// @kevo knob NT 1 {0, 1}
// @kevo knob PF 16384 {0, 4096, 16384, 32768, 65536}
// @kevo knob PFHINT 1 {0, 1}
// @kevo require PF > 0 || PFHINT == 0
// @kevo knob THREADS 1 {1, 2, 4, 8}
// @kevo require THREADS <= NCPU
#ifndef VAR
#define VAR 1
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
#define OB 8
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

/* Row reductions, R rows (stride n) interleaved. With d = x - K (K = the
 * row's first element, which removes the mean offset): s1 = sum(d) when
 * WANT1, s2 = sum((d - C)^2) when WANT2 (C = 0 when !CENTER). fp32 lane
 * accumulators are flushed into double every KV_CHUNK elements, so long rows
 * stay accurate. */
#define KV_CHUNK (64 * U * VL) /* elements per fp32 partial sum: 64 per lane */
KV_INLINE void reduce_rows(const float* x, int64_t n, const int R, const float* K, const float* C, const int want1,
                           const int want2, const int center, double* s1, double* s2) {
  vf kv[RB], cv[RB];
  for (int r = 0; r < R; ++r) {
    kv[r] = VSET1(K[r]);
    cv[r] = VSET1(center ? C[r] : 0.0f);
    s1[r] = s2[r] = 0.0;
  }
  const int64_t B = U * VL;
  int64_t j = 0;
  while (j + B <= n) {
    int64_t jend = j + ((n - j) / B) * B;
    if (jend - j > KV_CHUNK) jend = j + KV_CHUNK;
    vf a[RB][U], q[RB][U];
    for (int r = 0; r < R; ++r)
      for (int u = 0; u < U; ++u) a[r][u] = q[r][u] = VZERO();
    for (; j < jend; j += B)
      for (int r = 0; r < R; ++r)
        for (int u = 0; u < U; ++u) {
          vf d = VSUB(VLOAD(x + r * n + j + u * VL), kv[r]);
          if (want1) a[r][u] = VADD(a[r][u], d);
          if (want2) {
            vf e = center ? VSUB(d, cv[r]) : d;
            q[r][u] = VFMA(e, e, q[r][u]);
          }
        }
    for (int r = 0; r < R; ++r) {
      for (int u = 1; u < U; ++u) {
        if (want1) a[r][0] = VADD(a[r][0], a[r][u]);
        if (want2) q[r][0] = VADD(q[r][0], q[r][u]);
      }
      if (want1) s1[r] += (double)VHSUM(a[r][0]);
      if (want2) s2[r] += (double)VHSUM(q[r][0]);
    }
  }
  if (j < n) {
    vf a[RB], q[RB];
    for (int r = 0; r < R; ++r) a[r] = q[r] = VZERO();
    for (; j + VL <= n; j += VL)
      for (int r = 0; r < R; ++r) {
        vf d = VSUB(VLOAD(x + r * n + j), kv[r]);
        if (want1) a[r] = VADD(a[r], d);
        if (want2) {
          vf e = center ? VSUB(d, cv[r]) : d;
          q[r] = VFMA(e, e, q[r]);
        }
      }
    if (j < n) {
      vm k = vmask_n(n - j);
      for (int r = 0; r < R; ++r) {
        vf d = VSUB(VLOADM(x + r * n + j, k), kv[r]);
        if (want1) a[r] = VADD(a[r], VSEL(k, d, VZERO()));
        if (want2) {
          vf e = VSEL(k, center ? VSUB(d, cv[r]) : d, VZERO());
          q[r] = VFMA(e, e, q[r]);
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      if (want1) s1[r] += (double)VHSUM(a[r]);
      if (want2) s2[r] += (double)VHSUM(q[r]);
    }
  }
}

/* per-row statistics: y = ((x - K) - m1) * rstd * w + b, with mean = K + m1 */
typedef struct { vf k, m1, rstd; } ln_stat;

KV_INLINE vf ln_apply(vf xv, vf wv, vf bv, ln_stat st) {
  return VFMA(VMUL(VSUB(VSUB(xv, st.k), st.m1), st.rstd), wv, bv);
}

KV_INLINE void out_vec(const float* x, const float* w, const float* b, float* y, int64_t j, ln_stat st, vm k,
                       int masked, int64_t pfn) {
  if (masked) {
    VSTOREM(y + j, k, ln_apply(VLOADM(x + j, k), VLOADM(w + j, k), VLOADM(b + j, k), st));
    return;
  }
#if PF > 0
  if (VL >= 16 || (j & 15) == 0) KV_PREFETCH(x + j + pfn, PFHINT);
#else
  (void)pfn;
#endif
  vf v = ln_apply(VLOAD(x + j), VLOAD(w + j), VLOAD(b + j), st);
#if NT
  VSTREAM(y + j, v);
#else
  VSTORE(y + j, v);
#endif
}

/* accumulate the next row's first reduction: d = xn - Kn; a += d; q += d^2 (VAR 1) */
KV_INLINE void acc_next(vf xv, vf kn, vf* a, vf* q) {
  vf d = VSUB(xv, kn);
  *a = VADD(*a, d);
  if (VAR) *q = VFMA(d, d, *q);
}

/* Output pass of one row. With pipe, the same loop also does the first
 * reduction of the next row xn (shift Kn) -> *s1n, *s2n: the next row's
 * memory reads overlap this row's arithmetic and stores. */
KV_INLINE void out_row_p(const float* x, const float* w, const float* b, float* y, int64_t n, float K, float m1,
                         float rstd, int64_t pfn, const float* xn, float Kn, double* s1n, double* s2n,
                         const int pipe) {
  ln_stat st;
  st.k = VSET1(K);
  st.m1 = VSET1(m1);
  st.rstd = VSET1(rstd);
  const vf kn = VSET1(pipe ? Kn : 0.0f);
  const int64_t head = kv_head(y, n, NT);
  const int64_t B = U * VL;
  vf ta = VZERO(), tq = VZERO();
  double t1 = 0.0, t2 = 0.0;
  int64_t j = 0;
  while (j < head) {
    int64_t kk = head - j < VL ? head - j : VL;
    vm k = vmask_n(kk);
    out_vec(x, w, b, y, j, st, k, 1, pfn);
    if (pipe) acc_next(VSEL(k, VLOADM(xn + j, k), kn), kn, &ta, &tq);
    j += kk;
  }
  while (j + B <= n) {
    int64_t jend = j + ((n - j) / B) * B;
    if (jend - j > KV_CHUNK) jend = j + KV_CHUNK;
    vf a[U], q[U];
    for (int u = 0; u < U; ++u) a[u] = q[u] = VZERO();
    for (; j < jend; j += B)
      for (int u = 0; u < U; ++u) {
        out_vec(x, w, b, y, j + u * VL, st, vmask_n(0), 0, pfn);
        if (pipe) acc_next(VLOAD(xn + j + u * VL), kn, &a[u], &q[u]);
      }
    if (pipe) {
      for (int u = 1; u < U; ++u) {
        a[0] = VADD(a[0], a[u]);
        if (VAR) q[0] = VADD(q[0], q[u]);
      }
      t1 += (double)VHSUM(a[0]);
      if (VAR) t2 += (double)VHSUM(q[0]);
    }
  }
  for (; j + VL <= n; j += VL) {
    out_vec(x, w, b, y, j, st, vmask_n(0), 0, pfn);
    if (pipe) acc_next(VLOAD(xn + j), kn, &ta, &tq);
  }
  if (j < n) {
    vm k = vmask_n(n - j);
    out_vec(x, w, b, y, j, st, k, 1, pfn);
    if (pipe) acc_next(VSEL(k, VLOADM(xn + j, k), kn), kn, &ta, &tq);
  }
  if (pipe) {
    *s1n = t1 + (double)VHSUM(ta);
    *s2n = VAR ? t2 + (double)VHSUM(tq) : 0.0;
  }
}

/* statistics of R rows -> K[], m1[], rstd[]; have1: the first reduction
 * (s1, and s2 for VAR 1) is already in s1[], s2[] */
KV_INLINE void stats_rows(const float* x, int64_t n, const int R, double eps, float* K, float* m1, float* rstd,
                          double* s1, double* s2, const int have1) {
  for (int r = 0; r < R; ++r) K[r] = x[r * n];
  const double dn = (double)n;
#if VAR == 0
  if (!have1) reduce_rows(x, n, R, K, NULL, 1, 0, 0, s1, s2);
  for (int r = 0; r < R; ++r) m1[r] = (float)(s1[r] / dn);
  reduce_rows(x, n, R, K, m1, 0, 1, 1, s1, s2);
  for (int r = 0; r < R; ++r) rstd[r] = (float)(1.0 / sqrt(s2[r] / dn + eps));
#else
  if (!have1) reduce_rows(x, n, R, K, NULL, 1, 1, 0, s1, s2);
  for (int r = 0; r < R; ++r) {
    const double mu = s1[r] / dn;
    double var = s2[r] / dn - mu * mu;
    if (var < 0.0) var = 0.0;
    m1[r] = (float)mu;
    rstd[r] = (float)(1.0 / sqrt(var + eps));
  }
#endif
}

#if OB > 0
/* y over columns [j0, j1) of one row (j0 is 0 or a 64-byte aligned point of
 * y past the row's head; j1 is n or aligned), plus, with pipe, the first
 * reduction of row xn (shift kn) over
 * the same columns, added to *s1n (and *s2n for VAR 1) */
KV_INLINE void out_range_p(const float* x, const float* w, const float* b, float* y, ln_stat st, int64_t head,
                           int64_t j0, int64_t j1, int64_t pfn, const float* xn, vf kn, double* s1n, double* s2n,
                           const int pipe) {
  vf a[U], q[U], ta = VZERO(), tq = VZERO();
  for (int u = 0; u < U; ++u) a[u] = q[u] = VZERO();
  int64_t j = j0;
  while (j < head && j < j1) {
    int64_t kk = head - j < VL ? head - j : VL;
    vm k = vmask_n(kk);
    out_vec(x, w, b, y, j, st, k, 1, pfn);
    if (pipe) acc_next(VSEL(k, VLOADM(xn + j, k), kn), kn, &ta, &tq);
    j += kk;
  }
  while (j + U * VL <= j1) {
    /* flush the fp32 partial sums every KV_CHUNK elements */
    int64_t jend = j + ((j1 - j) / (U * VL)) * (U * VL);
    if (jend - j > KV_CHUNK) jend = j + KV_CHUNK;
    for (; j < jend; j += U * VL)
      for (int u = 0; u < U; ++u) {
        out_vec(x, w, b, y, j + u * VL, st, vmask_n(0), 0, pfn);
        if (pipe) acc_next(VLOAD(xn + j + u * VL), kn, &a[u], &q[u]);
      }
    if (pipe) {
      for (int u = 0; u < U; ++u) {
        *s1n += (double)VHSUM(a[u]);
        if (VAR) *s2n += (double)VHSUM(q[u]);
        a[u] = q[u] = VZERO();
      }
    }
  }
  for (; j + VL <= j1; j += VL) {
    out_vec(x, w, b, y, j, st, vmask_n(0), 0, pfn);
    if (pipe) acc_next(VLOAD(xn + j), kn, &ta, &tq);
  }
  if (j < j1) {
    vm k = vmask_n(j1 - j);
    out_vec(x, w, b, y, j, st, k, 1, pfn);
    if (pipe) acc_next(VSEL(k, VLOADM(xn + j, k), kn), kn, &ta, &tq);
  }
  if (pipe) {
    *s1n += (double)VHSUM(ta);
    if (VAR) *s2n += (double)VHSUM(tq);
  }
}

/* Row blocks of OB rows: statistics for the block, then the output in column
 * chunks of COL elements across the block's rows, so the chunk of w and b
 * stays in L1 while the rows come from L2 (instead of w, b and two 16 KB rows
 * competing for L1). With PIPE the output chunks of block k also do the first
 * reduction of the rows of block k+1 (one streaming loop); the output pass
 * prefetches one block further ahead. */
static void run_blocks(const float* x, const float* w, const float* b, float* y, int64_t r0, int64_t r1, int64_t n,
                       double eps) {
  float K[OB], m1[OB], rstd[OB];
  double s1[OB], s2[OB];
  int64_t head[OB];
  ln_stat st[OB];
  vf kn[OB];
  const int64_t pfn = PF > 0 ? (int64_t)(PIPE ? 2 : 1) * OB * n : 0;
  for (int64_t i = r0; i < r1; i += OB) {
    const int nb = (int)(r1 - i < OB ? r1 - i : OB);
    int r = 0;
    if (!PIPE || i == r0) {
      for (; r + RB <= nb; r += RB) stats_rows(x + (i + r) * n, n, RB, eps, K + r, m1 + r, rstd + r, s1 + r, s2 + r, 0);
      for (; r < nb; ++r) stats_rows(x + (i + r) * n, n, 1, eps, K + r, m1 + r, rstd + r, s1 + r, s2 + r, 0);
    } else {
      for (; r < nb; ++r) stats_rows(x + (i + r) * n, n, 1, eps, K + r, m1 + r, rstd + r, s1 + r, s2 + r, 1);
    }
    for (r = 0; r < nb; ++r) {
      st[r].k = VSET1(K[r]);
      st[r].m1 = VSET1(m1[r]);
      st[r].rstd = VSET1(rstd[r]);
      head[r] = kv_head(y + (i + r) * n, n, NT);
    }
    const int64_t i2 = i + OB;
    const int nbn = PIPE && i2 < r1 ? (int)(r1 - i2 < OB ? r1 - i2 : OB) : 0;
    for (r = 0; r < nbn; ++r) {
      s1[r] = s2[r] = 0.0;
      kn[r] = VSET1(x[(i2 + r) * n]);
    }
    for (int64_t c = 0; c < n + 16; c += COL) {
      for (r = 0; r < nb; ++r) {
        int64_t j0 = c == 0 ? 0 : head[r] + c, j1 = head[r] + c + COL;
        if (j0 > n) j0 = n;
        if (j1 > n) j1 = n;
        if (j0 >= j1) continue;
        const int64_t o = (i + r) * n;
        if (r < nbn)
          out_range_p(x + o, w, b, y + o, st[r], head[r], j0, j1, pfn, x + (i2 + r) * n, kn[r], s1 + r, s2 + r, 1);
        else
          out_range_p(x + o, w, b, y + o, st[r], head[r], j0, j1, pfn, NULL, kn[0], NULL, NULL, 0);
      }
    }
  }
  KV_SFENCE();
}
#endif

#if OB == 0
static void run_rows(const float* x, const float* w, const float* b, float* y, int64_t r0, int64_t r1, int64_t n,
                     double eps) {
  if (r0 >= r1) return;
  int64_t pfn = PF > 0 ? ((PF / 4 + n - 1) / n) * n : 0;
  float K[RB], m1[RB], rstd[RB];
  double s1[RB], s2[RB];
#if PIPE
  if (PF > 0) pfn += n; /* the next row is demand-loaded: prefetch beyond it */
  stats_rows(x + r0 * n, n, 1, eps, K, m1, rstd, s1, s2, 0);
  for (int64_t i = r0; i < r1; ++i) {
    if (i > r0) stats_rows(x + i * n, n, 1, eps, K, m1, rstd, s1, s2, 1);
    if (i + 1 < r1)
      out_row_p(x + i * n, w, b, y + i * n, n, K[0], m1[0], rstd[0], pfn, x + (i + 1) * n, x[(i + 1) * n], s1, s2, 1);
    else
      out_row_p(x + i * n, w, b, y + i * n, n, K[0], m1[0], rstd[0], pfn, NULL, 0.0f, NULL, NULL, 0);
  }
#else
  int64_t i = r0;
  for (; i + RB <= r1; i += RB) {
    stats_rows(x + i * n, n, RB, eps, K, m1, rstd, s1, s2, 0);
    for (int r = 0; r < RB; ++r)
      out_row_p(x + (i + r) * n, w, b, y + (i + r) * n, n, K[r], m1[r], rstd[r], pfn, NULL, 0.0f, NULL, NULL, 0);
  }
  for (; i < r1; ++i) {
    stats_rows(x + i * n, n, 1, eps, K, m1, rstd, s1, s2, 0);
    out_row_p(x + i * n, w, b, y + i * n, n, K[0], m1[0], rstd[0], pfn, NULL, 0.0f, NULL, NULL, 0);
  }
#endif
  KV_SFENCE();
}
#endif

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
      RUN(x, w, b, y, rows * t / nt, rows * (t + 1) / nt, n, eps);
    }
    return KEVO_OK;
  }
#endif
  RUN(x, w, b, y, 0, rows, n, eps);
  return KEVO_OK;
}
