/* scaled_softmax / online.c — fast fp32 softmax(x * scale) over the last dim.
 *
 * Explicitly vectorised (AVX-512; 256-bit AVX-512VL or AVX2; scalar fallback),
 * with a vectorised exp2: scale*log2(e) is folded into one FMA per element
 * (x*c - max computed exactly inside the FMA), then range reduction and a
 * polynomial or table+polynomial (EXP), scaled by scalef. The row maximum is
 * subtracted, so x*scale up to the fp32 limit is safe. Every variant reads a
 * row from memory once and re-reads it while it is still in L1/L2.
 * Knobs:
 *   ALGO    0: online softmax: one pass keeps a per-lane reference max and a
 *              rescaled running sum (lazy: rescale only when the max grows
 *              by more than 2^32), then a second pass recomputes exp and
 *              writes y (2 exps per element).
 *           1: three passes: max; exp written to y (or to a scratch row when
 *              streaming) with the sum; scale by 1/sum (1 exp per element).
 *           2: fused online: one pass keeps a lazy per-lane reference max,
 *              writes exp(x - reference) to y/scratch and records the
 *              reference used by each block of UNROLL vectors; a second pass
 *              multiplies each block by exp(reference - row max) / sum
 *              (1 exp per element; the factor is recomputed only when the
 *              reference changed).
 *   PIPE    (ALGO 1) software-pipeline rows: the max of row i+1 is computed
 *           inside the exp pass (1) or the scale pass (2) of row i, so the
 *           next row's memory reads overlap this row's work; 0: separate.
 *   VW      vector width in bits (256 or 512).
 *   UNROLL  vectors per inner-loop iteration = independent accumulators.
 *   NT      1: non-temporal (streaming) stores of y, peeled to 64 B alignment.
 *   PF      software prefetch distance in bytes, rounded up to whole rows
 *           (so it targets the next rows; one more row with PIPE), issued
 *           from the pass that computes exp (ALGO 0: the output pass) (0 = off).
 *   PFHINT  0: prefetch into L1 (T0), 1: into L2 (T1).
 *   EXP     exp2 flavour: 0/1 polynomial degree 5/6, 2 32-entry table +
 *           degree 2, 3 16-entry table + degree 3 (all within a few ulp).
 *   THREADS OpenMP threads; rows are split into contiguous ranges.
 */
// @kevo knob ALGO 1 {0, 1, 2}
// @kevo knob PIPE 2 {0, 1, 2}
// @kevo require PIPE == 0 || ALGO == 1
// @kevo knob VW 512 {256, 512}
// @kevo knob UNROLL 4 {1, 2, 4, 8}
// @kevo knob NT 1 {0, 1}
// @kevo knob PF 16384 {0, 4096, 16384, 32768, 65536}
// @kevo knob PFHINT 1 {0, 1}
// @kevo knob EXP 2 {0, 1, 2, 3}
// @kevo knob THREADS 1 {1, 2, 4, 8}
// @kevo require THREADS <= NCPU
// @kevo require PF > 0 || PFHINT == 0
#ifndef ALGO
#define ALGO 1
#endif
#ifndef PIPE
#define PIPE 2
#endif
#ifndef VW
#define VW 512
#endif
#ifndef UNROLL
#define UNROLL 4
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
#ifndef EXP
#define EXP 2
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

typedef struct {
  vf c;        /* scale * log2(e) */
  float cs;    /* the same, scalar */
  int64_t n;   /* row length */
  int64_t pfn; /* prefetch distance in elements (0 = off) */
} sm_ctx;

KV_INLINE void pf_line(const float* p, int64_t j, int64_t pfn) {
#if PF > 0
  if (VL >= 16 || (j & 15) == 0) KV_PREFETCH(p + j + pfn, PFHINT);
#else
  (void)p; (void)j; (void)pfn;
#endif
}

/* store one output vector: masked, streaming (aligned) or plain */
KV_INLINE void put(float* y, int64_t j, vf v, vm k, int masked) {
  if (masked) VSTOREM(y + j, k, v);
#if NT
  else VSTREAM(y + j, v);
#else
  else VSTORE(y + j, v);
#endif
}

/* max (neg = 0) or min (neg = 1) of two vectors: the max of x*c when c < 0 */
KV_INLINE vf mm(vf a, vf b, int neg) { return neg ? VMIN(a, b) : VMAX(a, b); }

/* the maximum of x*c over the row, as fp32 (== max of the rounded products) */
KV_INLINE float row_max(const float* x, const sm_ctx* cx, int neg) {
  const int64_t n = cx->n;
  vf m[U];
  for (int u = 0; u < U; ++u) m[u] = VSET1(neg ? INFINITY : -INFINITY);
  int64_t j = 0;
  for (; j + U * VL <= n; j += U * VL)
    for (int u = 0; u < U; ++u) m[u] = mm(m[u], VLOAD(x + j + u * VL), neg);
  for (; j + VL <= n; j += VL) m[0] = mm(m[0], VLOAD(x + j), neg);
  if (j < n) {
    vm k = vmask_n(n - j);
    m[0] = VSEL(k, mm(m[0], VLOADM(x + j, k), neg), m[0]);
  }
  for (int u = 1; u < U; ++u) m[0] = mm(m[0], m[u], neg);
  const float raw = neg ? -VHMAX(VSUB(VZERO(), m[0])) : VHMAX(m[0]);
  return raw * cx->cs;
}

#if ALGO == 1
/* running max (min when neg) of the next row, fused into a pass of this row */
KV_INLINE void nx_acc(vf* m, vf xv, int neg) { *m = mm(*m, xv, neg); }
KV_INLINE float nx_final(vf* m, const sm_ctx* cx, int neg) {
  for (int u = 1; u < U; ++u) m[0] = mm(m[0], m[u], neg);
  const float raw = neg ? -VHMAX(VSUB(VZERO(), m[0])) : VHMAX(m[0]);
  return raw * cx->cs;
}

KV_INLINE void scale_vec(const float* buf, float* y, int64_t j, vf inv, vm k, int masked) {
  vf e = masked ? VLOADM(buf + j, k) : VLOAD(buf + j);
  put(y, j, VMUL(e, inv), k, masked);
}

/* One row given its max mx. pipe 1 / 2: the exp pass / the scale pass also
 * computes the max of the next row xn (-> *mxn), so the next row streams in
 * from memory while this one is computed (software pipelining by one row). */
KV_INLINE void row_softmax1(const float* x, float* y, float* buf, const sm_ctx* cx, int neg, float mx,
                            const float* xn, float* mxn, const int pipe) {
  const int64_t n = cx->n;
  if (!NT) buf = y;
  vf m[U];
  for (int u = 0; u < U; ++u) m[u] = VSET1(neg ? INFINITY : -INFINITY);
  /* e = exp2(x*c - mx) -> buf, with the sum */
  const vf nm = VSET1(-mx);
  vf s[U];
  for (int u = 0; u < U; ++u) s[u] = VZERO();
  int64_t j = 0;
  for (; j + U * VL <= n; j += U * VL)
    for (int u = 0; u < U; ++u) {
      pf_line(x, j + u * VL, cx->pfn);
      vf e = kv_exp2(VFMA(VLOAD(x + j + u * VL), cx->c, nm));
      VSTORE(buf + j + u * VL, e);
      s[u] = VADD(s[u], e);
      if (pipe == 1) nx_acc(&m[u], VLOAD(xn + j + u * VL), neg);
    }
  for (; j + VL <= n; j += VL) {
    pf_line(x, j, cx->pfn);
    vf e = kv_exp2(VFMA(VLOAD(x + j), cx->c, nm));
    VSTORE(buf + j, e);
    s[0] = VADD(s[0], e);
    if (pipe == 1) nx_acc(&m[0], VLOAD(xn + j), neg);
  }
  if (j < n) {
    vm k = vmask_n(n - j);
    vf e = kv_exp2(VFMA(VLOADM(x + j, k), cx->c, nm));
    VSTOREM(buf + j, k, e);
    s[0] = VADD(s[0], VSEL(k, e, VZERO()));
    if (pipe == 1) m[0] = VSEL(k, mm(m[0], VLOADM(xn + j, k), neg), m[0]);
  }
  for (int u = 1; u < U; ++u) s[0] = VADD(s[0], s[u]);
  const vf inv = VSET1(1.0f / VHSUM(s[0]));
  /* y = e / sum */
  const int64_t head = kv_head(y, n, NT);
  j = 0;
  while (j < head) {
    int64_t kk = head - j < VL ? head - j : VL;
    vm k = vmask_n(kk);
    scale_vec(buf, y, j, inv, k, 1);
    if (pipe == 2) m[0] = VSEL(k, mm(m[0], VLOADM(xn + j, k), neg), m[0]);
    j += kk;
  }
  for (; j + U * VL <= n; j += U * VL)
    for (int u = 0; u < U; ++u) {
      scale_vec(buf, y, j + u * VL, inv, vmask_n(0), 0);
      if (pipe == 2) nx_acc(&m[u], VLOAD(xn + j + u * VL), neg);
    }
  for (; j + VL <= n; j += VL) {
    scale_vec(buf, y, j, inv, vmask_n(0), 0);
    if (pipe == 2) nx_acc(&m[0], VLOAD(xn + j), neg);
  }
  if (j < n) {
    vm k = vmask_n(n - j);
    scale_vec(buf, y, j, inv, k, 1);
    if (pipe == 2) m[0] = VSEL(k, mm(m[0], VLOADM(xn + j, k), neg), m[0]);
  }
  if (pipe) *mxn = nx_final(m, cx, neg);
}
#endif /* ALGO 1 */

#if ALGO == 0 || ALGO == 2
/* running per-lane state of the online passes */
typedef struct { vf m; vf s[U]; } sm_state;

/* Lazy rescaling: the per-lane reference max only moves when a candidate
 * exceeds it by more than SM_SLACK (log2 units), so exp2(x*c - ref) <= 2^32
 * and the rescale (an exp + branch miss) is rare. Any reference is exact for
 * softmax: the final pass uses the row max of the references. */
#define SM_SLACK 32.0f
KV_INLINE void raise_max(sm_state* st, vf cand) {
  if (KV_ANY_GT(VSUB(cand, VSET1(SM_SLACK)), st->m)) {
    vf mn = VMAX(st->m, cand);
    vf r = kv_exp2(VSUB(st->m, mn));
    for (int u = 0; u < U; ++u) st->s[u] = VMUL(st->s[u], r);
    st->m = mn;
  }
}

/* one (possibly masked) vector of the online pass; ALGO 2 also stores e and the block max */
KV_INLINE void online_one(const float* x, float* buf, float* mbp, int64_t j, vm k, int masked, sm_state* st,
                          const sm_ctx* cx) {
  vf xv = masked ? VLOADM(x + j, k) : VLOAD(x + j);
  vf cand = VMUL(xv, cx->c);
  if (masked) cand = VSEL(k, cand, VSET1(-INFINITY));
  raise_max(st, cand);
  vf e = kv_exp2(VFMA(xv, cx->c, VSUB(VZERO(), st->m)));
  if (masked) e = VSEL(k, e, VZERO());
  st->s[0] = VADD(st->s[0], e);
#if ALGO == 2
  if (masked) VSTOREM(buf + j, k, e);
  else VSTORE(buf + j, e);
  VSTORE(mbp, st->m);
#else
  (void)buf; (void)mbp;
#endif
}

/* one block of U full vectors */
KV_INLINE void online_block(const float* x, float* buf, float* mbp, int64_t j, sm_state* st, const sm_ctx* cx,
                            int neg) {
  vf xv[U];
  for (int u = 0; u < U; ++u) xv[u] = VLOAD(x + j + u * VL);
#if ALGO == 2
  for (int u = 0; u < U; ++u) pf_line(x, j + u * VL, cx->pfn);
#endif
  vf bm = xv[0];
  for (int u = 1; u < U; ++u) bm = mm(bm, xv[u], neg);
  raise_max(st, VMUL(bm, cx->c));
  const vf nm = VSUB(VZERO(), st->m);
  for (int u = 0; u < U; ++u) {
    vf e = kv_exp2(VFMA(xv[u], cx->c, nm));
    st->s[u] = VADD(st->s[u], e);
#if ALGO == 2
    VSTORE(buf + j + u * VL, e);
#endif
  }
#if ALGO == 2
  VSTORE(mbp, st->m);
#else
  (void)buf; (void)mbp;
#endif
}

KV_INLINE void row_softmax(const float* x, float* y, float* buf, float* mb, const sm_ctx* cx, int neg) {
  const int64_t n = cx->n;
  /* ALGO 2 walks both passes in the same segments, aligned to y's 64-byte
     boundaries when streaming; ALGO 0's first pass does not care */
  const int64_t head = ALGO == 2 ? kv_head(y, n, NT) : 0;
  if (!NT) buf = y;
  sm_state st;
  st.m = VSET1(-INFINITY);
  for (int u = 0; u < U; ++u) st.s[u] = VZERO();
  float* mbp = mb;
  int64_t j = 0;
  while (j < head) {
    int64_t kk = head - j < VL ? head - j : VL;
    online_one(x, buf, mbp, j, vmask_n(kk), 1, &st, cx);
    mbp += VL; j += kk;
  }
  for (; j + U * VL <= n; j += U * VL) { online_block(x, buf, mbp, j, &st, cx, neg); mbp += VL; }
  for (; j + VL <= n; j += VL) { online_one(x, buf, mbp, j, vmask_n(0), 0, &st, cx); mbp += VL; }
  if (j < n) online_one(x, buf, mbp, j, vmask_n(n - j), 1, &st, cx);
  for (int u = 1; u < U; ++u) st.s[0] = VADD(st.s[0], st.s[u]);
  const float mx = VHMAX(st.m);
  const vf vmx = VSET1(mx);
  const float sum = VHSUM(VMUL(st.s[0], kv_exp2(VSUB(st.m, vmx))));
  const vf inv = VSET1(1.0f / sum);
#if ALGO == 0
  /* y = exp2(x*c - mx) / sum */
  const vf nm = VSET1(-mx);
  const int64_t h0 = kv_head(y, n, NT);
  j = 0;
  while (j < h0) {
    int64_t kk = h0 - j < VL ? h0 - j : VL;
    vm k = vmask_n(kk);
    put(y, j, VMUL(kv_exp2(VFMA(VLOADM(x + j, k), cx->c, nm)), inv), k, 1);
    j += kk;
  }
  for (; j + U * VL <= n; j += U * VL)
    for (int u = 0; u < U; ++u) {
      pf_line(x, j + u * VL, cx->pfn);
      put(y, j + u * VL, VMUL(kv_exp2(VFMA(VLOAD(x + j + u * VL), cx->c, nm)), inv), vmask_n(0), 0);
    }
  for (; j + VL <= n; j += VL) {
    pf_line(x, j, cx->pfn);
    put(y, j, VMUL(kv_exp2(VFMA(VLOAD(x + j), cx->c, nm)), inv), vmask_n(0), 0);
  }
  if (j < n) {
    vm k = vmask_n(n - j);
    put(y, j, VMUL(kv_exp2(VFMA(VLOADM(x + j, k), cx->c, nm)), inv), k, 1);
  }
  (void)mbp;
#else
  /* y = e * exp2(block max - mx) / sum; the factor is reused while the block max repeats */
  vf pm = VSET1(NAN), f = VZERO();
  mbp = mb;
  j = 0;
#define SM_FACTOR()                                                    \
  do {                                                                 \
    vf mbv = VLOAD(mbp);                                               \
    if (KV_ANY_NE(mbv, pm)) { f = VMUL(kv_exp2(VSUB(mbv, vmx)), inv); pm = mbv; } \
    mbp += VL;                                                         \
  } while (0)
  while (j < head) {
    int64_t kk = head - j < VL ? head - j : VL;
    vm k = vmask_n(kk);
    SM_FACTOR();
    put(y, j, VMUL(VLOADM(buf + j, k), f), k, 1);
    j += kk;
  }
  for (; j + U * VL <= n; j += U * VL) {
    SM_FACTOR();
    for (int u = 0; u < U; ++u) put(y, j + u * VL, VMUL(VLOAD(buf + j + u * VL), f), vmask_n(0), 0);
  }
  for (; j + VL <= n; j += VL) {
    SM_FACTOR();
    put(y, j, VMUL(VLOAD(buf + j), f), vmask_n(0), 0);
  }
  if (j < n) {
    vm k = vmask_n(n - j);
    SM_FACTOR();
    put(y, j, VMUL(VLOADM(buf + j, k), f), k, 1);
  }
#undef SM_FACTOR
#endif
}
#endif /* ALGO 0 || ALGO 2 */

KV_INLINE void rows_loop(const float* x, float* y, float* bufbase, float* mb, int64_t r0, int64_t r1,
                         const sm_ctx* cx, int neg) {
  const int64_t n = cx->n;
#if ALGO == 1
  (void)mb;
  float mx = row_max(x + r0 * n, cx, neg);
#endif
  for (int64_t i = r0; i < r1; ++i) {
    float* yi = y + i * n;
    /* scratch row with the same 64-byte phase as this output row */
    float* buf = NT ? bufbase + (((uintptr_t)yi & 63) >> 2) : NULL;
#if ALGO == 1
    if (PIPE && i + 1 < r1) {
      row_softmax1(x + i * n, yi, buf, cx, neg, mx, x + (i + 1) * n, &mx, PIPE);
    } else {
      row_softmax1(x + i * n, yi, buf, cx, neg, mx, NULL, NULL, 0);
      if (i + 1 < r1) mx = row_max(x + (i + 1) * n, cx, neg);
    }
#else
    row_softmax(x + i * n, yi, buf, mb, cx, neg);
#endif
  }
}

static int run_rows(const float* x, float* y, int64_t r0, int64_t r1, int64_t n, float c) {
  if (r0 >= r1) return 0;
  sm_ctx cx;
  cx.c = VSET1(c);
  cx.cs = c;
  cx.n = n;
  cx.pfn = PF > 0 ? ((PF / 4 + n - 1) / n) * n : 0;
  if (PF > 0 && PIPE) cx.pfn += n; /* the next row is demand-loaded: prefetch beyond it */
  float* mem = NULL;
  float* mb = NULL;
  size_t need = 0;
  if (NT) need += (size_t)n + 32;                        /* exp scratch row */
  if (ALGO == 2) need += (size_t)(n / VL + 8) * VL + 16; /* block maxima */
  if (need) {
    mem = (float*)aligned_alloc(64, ((need * sizeof(float)) + 63) & ~(size_t)63);
    if (!mem) return 1;
    mb = NT ? mem + n + 32 : mem;
  }
  if (c < 0) rows_loop(x, y, mem, mb, r0, r1, &cx, 1);
  else rows_loop(x, y, mem, mb, r0, r1, &cx, 0);
  free(mem);
  KV_SFENCE();
  return 0;
}

KEVO_EXPORT int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                            const double* scalars, int n_scalars) {
  if (n_in != 1 || n_out != 1 || n_scalars != 1) return KEVO_ERR_ARGS;
  int rc;
  if ((rc = kv_check_f32(&in[0])) || (rc = kv_check_f32(&out[0]))) return rc;
  if (in[0].rank < 2) return KEVO_ERR_UNSUPPORTED;
  const int64_t n = kevo_row_len(&in[0]);
  const int64_t rows = kevo_rows(&in[0]);
  if (kevo_numel(&out[0]) != rows * n || kevo_row_len(&out[0]) != n) return KEVO_ERR_ARGS;
  if (n <= 0 || rows <= 0) return KEVO_OK;
  const float* x = (const float*)in[0].data;
  float* y = (float*)out[0].data;
  const float c = (float)(scalars[0] * 1.44269504088896340736);
#if THREADS > 1
  if (rows > 1 && rows * n >= 16384) {
    int err = 0;
#pragma omp parallel num_threads(THREADS) reduction(| : err)
    {
      const int nt = omp_get_num_threads(), t = omp_get_thread_num();
      err |= run_rows(x, y, rows * t / nt, rows * (t + 1) / nt, n, c);
    }
    return err ? KEVO_ERR_RUNTIME : KEVO_OK;
  }
#endif
  return run_rows(x, y, 0, rows, n, c) ? KEVO_ERR_RUNTIME : KEVO_OK;
}
