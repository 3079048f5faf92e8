/* gemm / blocked — BLIS/GotoBLAS-style packed, cache-blocked sgemm.
 *
 * C[M,N] = A[M,K] · B[K,N], fp32, row-major, fp32 accumulation.
 * Loop nest: jc over N in NC blocks -> pc over K in KC blocks (pack a KC x NC
 * panel of B into NR-wide, 64-byte aligned micro-panels) -> ic over M in MC
 * blocks (pack an MC x KC block of A, see PACKA) -> jr/ir over micro-tiles
 * (order: INNER) -> an MR x NR register-blocked micro-kernel: per k step it
 * loads NR/16 zmm vectors of B and broadcasts MR values of A into
 * MR*(NR/16) zmm accumulators (AVX-512 FMA intrinsics; a portable scalar
 * micro-kernel is used when the compiler does not target AVX-512F). Ragged
 * M/N are handled by zero-padded packing and masked stores, ragged K by a
 * short last KC block. The first K block stores C and later ones accumulate,
 * so C's old contents never matter. Packing buffers are allocated once (2 MiB
 * aligned, huge pages hinted) and reused.
 *
 * Knobs:
 *   MR       rows of the micro-tile (A values broadcast per k step)
 *   NR       columns of the micro-tile (multiple of 16 = one zmm); the
 *            require keeps the MR*(NR/16) accumulators plus the NR/16 B
 *            vectors within the 32 zmm registers. A narrow ragged right edge
 *            runs a micro-kernel variant with fewer vectors.
 *   KC       depth of a packed block (k-loop length of one micro-kernel call)
 *   MC       rows of a packed A block (rounded up to a multiple of MR)
 *   NC       columns of a packed B panel (rounded up to a multiple of NR)
 *   KU       unroll factor of the micro-kernel's k loop
 *   PACKA    how the micro-kernel reads A: 1 = packed into MR-tall k-major
 *            micro-panels (a transpose); 2 = the MC x KC block copied row by
 *            row into a buffer with a padded row stride (KC+16; cheap copy,
 *            broadcasts from MR row streams); 0 = broadcast straight from
 *            row-major A (only a ragged last row panel is copied)
 *   PFD      software prefetch distance, in k steps, for the operand that
 *            streams through the micro-kernel (A when INNER=0, B when
 *            INNER=1); 0 = none
 *   PFC      1: prefetch the C tile at the start of the micro-kernel
 *   PFNEXT   1: while a macro-kernel runs, prefetch (to L2) the rows of A that
 *            the next A block will read
 *   INNER    0: ir innermost (B micro-panel stays in L1, A block streams from
 *            L2); 1: jr innermost (A micro-panel stays in L1, B panel streams)
 *   THREADS  OpenMP threads
 *   PAR      how threads split the work: 0 = rows of C, B panel packed
 *            cooperatively and shared (barriers); 1 = columns of C, each thread
 *            packs its own B and A; 2 = rows of C, each thread packs its own
 *            copy of B (no barriers)
 */
// @kevo knob MR 6 {4, 6, 8, 12, 14, 16, 24, 28}
// @kevo knob NR 64 {16, 32, 48, 64}
// @kevo require MR * (NR / 16) <= 28
// @kevo knob KC 256 {128, 192, 256, 384, 512}
// @kevo knob MC 48 {48, 96, 192, 384}
// @kevo knob NC 1024 {512, 1024, 2048, 4096}
// @kevo knob KU 8 {1, 2, 4, 8}
// @kevo knob PACKA 2 {0, 1, 2}
// @kevo knob PFD 0 {0, 4, 16}
// @kevo knob PFC 1 {0, 1}
// @kevo knob PFNEXT 1 {0, 1}
// @kevo knob INNER 1 {0, 1}
// @kevo knob THREADS 1 {1, 2, 4, 8}
// @kevo require THREADS <= NCPU
// @kevo knob PAR 0 {0, 1, 2}
// @kevo require THREADS > 1 || PAR == 0

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "kevo_kernel.h"

#ifndef MR
#define MR 6
#endif
#ifndef NR
#define NR 64
#endif
#ifndef KC
#define KC 256
#endif
#ifndef MC
#define MC 48
#endif
#ifndef NC
#define NC 1024
#endif
#ifndef KU
#define KU 8
#endif
#ifndef PACKA
#define PACKA 2
#endif
#ifndef PFD
#define PFD 0
#endif
#ifndef PFC
#define PFC 1
#endif
#ifndef PFNEXT
#define PFNEXT 1
#endif
#ifndef INNER
#define INNER 1
#endif
#ifndef THREADS
#define THREADS 1
#endif
#ifndef PAR
#define PAR 0
#endif

#if NR % 16 != 0
#error "NR must be a multiple of 16"
#endif

#define NV (NR / 16)
#define MCE (((MC + MR - 1) / MR) * MR)
#define NCE (((NC + NR - 1) / NR) * NR)

#define KV_STR(x) #x
#define KV_PRAGMA(x) _Pragma(KV_STR(x))
#define KV_UNROLL(n) KV_PRAGMA(GCC unroll n)

#define KV_INLINE static inline __attribute__((always_inline))
#define KV_MIN(a, b) ((a) < (b) ? (a) : (b))
#define KV_MAX(a, b) ((a) > (b) ? (a) : (b))

/* ------------------------------------------------------------------------ */
/* Micro-kernel: C[0:m, 0:n] (+)= A_panel(MR x kc) · B_panel(kc x NR).
 * PACKA=1: a[p*MR + r]; PACKA=2: a[r*LDP + p]; PACKA=0: a[r*lda + p].
 * b[p*NR + c] (packed, aligned). */
#define LDP (KC + 16) /* row stride of the PACKA=2 buffer: breaks set aliasing */
#if PACKA == 1
#define AEL(r, p) a[(p)*MR + (r)]
#elif PACKA == 2
#define AEL(r, p) a[(r)*LDP + (p)]
#else
#define AEL(r, p) a[(r)*lda + (p)]
#endif

#if defined(__AVX512F__)

KV_INLINE __mmask16 col_mask(int n, int v) {
  int rem = n - 16 * v;
  if (rem >= 16) return (__mmask16)0xFFFF;
  if (rem <= 0) return (__mmask16)0;
  return (__mmask16)((1u << rem) - 1u);
}

/* nv (a constant at every call site) = zmm vectors per row actually computed:
   NV for full tiles, fewer for a narrow ragged right edge. */
KV_INLINE void ukernel_nv(const int nv, long kc, const float* restrict a, long lda,
                          const float* restrict b, float* restrict c, long ldc, int m, int n,
                          int first) {
  (void)lda;
  __m512 acc[MR][NV];
  KV_UNROLL(32)
  for (int i = 0; i < MR; ++i) {
    KV_UNROLL(8)
    for (int v = 0; v < nv; ++v) acc[i][v] = _mm512_setzero_ps();
  }
#if PFC
  KV_UNROLL(32)
  for (int i = 0; i < MR; ++i) {
    if (i < m) {
      KV_UNROLL(8)
      for (int v = 0; v < nv; ++v) __builtin_prefetch(c + i * ldc + 16 * v, 1, 3);
      __builtin_prefetch(c + i * ldc + 16 * nv - 1, 1, 3);
    }
  }
#endif
  KV_UNROLL(KU)
  for (long p = 0; p < kc; ++p) {
#if PFD && INNER == 0 /* A streams */
#if PACKA == 1
    __builtin_prefetch(a + (p + PFD) * MR, 0, 3);
#if MR > 16
    __builtin_prefetch(a + (p + PFD) * MR + 16, 0, 3);
#endif
#else
    if (((p + PFD) & 15) == 0) {
      KV_UNROLL(32)
      for (int i = 0; i < MR; ++i) __builtin_prefetch(&AEL(i, p + PFD), 0, 3);
    }
#endif
#elif PFD /* B streams */
    KV_UNROLL(8)
    for (int v = 0; v < nv; ++v) __builtin_prefetch(b + (p + PFD) * NR + 16 * v, 0, 3);
#endif
    __m512 bv[NV];
    KV_UNROLL(8)
    for (int v = 0; v < nv; ++v) bv[v] = _mm512_load_ps(b + p * NR + 16 * v);
    KV_UNROLL(32)
    for (int i = 0; i < MR; ++i) {
      __m512 av = _mm512_set1_ps(AEL(i, p));
      KV_UNROLL(8)
      for (int v = 0; v < nv; ++v) acc[i][v] = _mm512_fmadd_ps(av, bv[v], acc[i][v]);
    }
  }
  if (m == MR && n == 16 * nv) {
    if (first) {
      KV_UNROLL(32)
      for (int i = 0; i < MR; ++i) {
        KV_UNROLL(8)
        for (int v = 0; v < nv; ++v) _mm512_storeu_ps(c + i * ldc + 16 * v, acc[i][v]);
      }
    } else {
      KV_UNROLL(32)
      for (int i = 0; i < MR; ++i) {
        KV_UNROLL(8)
        for (int v = 0; v < nv; ++v)
          _mm512_storeu_ps(c + i * ldc + 16 * v,
                           _mm512_add_ps(_mm512_loadu_ps(c + i * ldc + 16 * v), acc[i][v]));
      }
    }
  } else {
    __mmask16 mk[NV];
    KV_UNROLL(8)
    for (int v = 0; v < nv; ++v) mk[v] = col_mask(n, v);
    KV_UNROLL(32)
    for (int i = 0; i < MR; ++i) {
      if (i < m) {
        KV_UNROLL(8)
        for (int v = 0; v < nv; ++v) {
          float* cp = c + i * ldc + 16 * v;
          __m512 r = acc[i][v];
          if (!first) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(mk[v], cp));
          _mm512_mask_storeu_ps(cp, mk[v], r);
        }
      }
    }
  }
}

KV_INLINE void ukernel(long kc, const float* restrict a, long lda, const float* restrict b,
                       float* restrict c, long ldc, int m, int n, int first) {
#if NV > 1
  const int nvec = (n + 15) / 16;
  if (nvec < NV) {
#if NV > 3
    if (nvec == 3) {
      ukernel_nv(3, kc, a, lda, b, c, ldc, m, n, first);
      return;
    }
#endif
#if NV > 2
    if (nvec == 2) {
      ukernel_nv(2, kc, a, lda, b, c, ldc, m, n, first);
      return;
    }
#endif
    ukernel_nv(1, kc, a, lda, b, c, ldc, m, n, first);
    return;
  }
#endif
  ukernel_nv(NV, kc, a, lda, b, c, ldc, m, n, first);
}

#else /* portable fallback micro-kernel */

KV_INLINE void ukernel(long kc, const float* restrict a, long lda, const float* restrict b,
                       float* restrict c, long ldc, int m, int n, int first) {
  (void)lda;
  float acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = 0.0f;
  for (long p = 0; p < kc; ++p)
    for (int i = 0; i < MR; ++i) {
      float av = AEL(i, p);
      for (int j = 0; j < NR; ++j) acc[i][j] += av * b[p * NR + j];
    }
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) c[i * ldc + j] = first ? acc[i][j] : c[i * ldc + j] + acc[i][j];
}

#endif

/* ------------------------------------------------------------------------ */
/* Packing. */

/* B[0:kc, 0:nc] (row stride ldb) -> NR-wide micro-panels, zero padded; only
   panels [j_first, j_last) are written. Rows are walked in order so that each
   row segment is read contiguously (hardware-prefetch friendly). */
static void pack_b_panels(const float* restrict B, long ldb, long kc, long nc, float* restrict dst,
                          long j_first, long j_last) {
  if (j_first >= j_last) return;
  const long nfull = KV_MIN(j_last, nc / NR); /* panels [j_first, nfull) are full */
  for (long p = 0; p < kc; ++p) {
    const float* s = B + p * ldb;
    for (long jp = j_first; jp < nfull; ++jp) {
      float* d = dst + jp * kc * NR + p * NR;
#if defined(__AVX512F__)
      KV_UNROLL(8)
      for (int v = 0; v < NV; ++v)
        _mm512_store_ps(d + 16 * v, _mm512_loadu_ps(s + jp * NR + 16 * v));
#else
      for (int j = 0; j < NR; ++j) d[j] = s[jp * NR + j];
#endif
    }
  }
  for (long jp = KV_MAX(nfull, j_first); jp < j_last; ++jp) { /* ragged last panel */
    const long j0 = jp * NR;
    const int nr = (int)KV_MIN((long)NR, nc - j0);
    float* d = dst + jp * kc * NR;
    const float* s = B + j0;
#if defined(__AVX512F__)
    __mmask16 mk[NV];
    for (int v = 0; v < NV; ++v) mk[v] = col_mask(nr, v);
    for (long p = 0; p < kc; ++p) {
      KV_UNROLL(8)
      for (int v = 0; v < NV; ++v)
        _mm512_store_ps(d + p * NR + 16 * v, _mm512_maskz_loadu_ps(mk[v], s + p * ldb + 16 * v));
    }
#else
    for (long p = 0; p < kc; ++p)
      for (int j = 0; j < NR; ++j) d[p * NR + j] = j < nr ? s[p * ldb + j] : 0.0f;
#endif
  }
}

#if PACKA == 2
/* A[0:mc, 0:kc] (row stride lda) -> rows with stride LDP; rows up to the next
   multiple of MR are zero. */
static void pack_a_block(const float* restrict A, long lda, long mc, long kc, float* restrict dst) {
  const long mpad = (mc + MR - 1) / MR * MR;
  for (long i = 0; i < mc; ++i) {
    const float* s = A + i * lda;
    float* d = dst + i * LDP;
    long p = 0;
#if defined(__AVX512F__)
    for (; p + 64 <= kc; p += 64) {
      __m512 x0 = _mm512_loadu_ps(s + p), x1 = _mm512_loadu_ps(s + p + 16);
      __m512 x2 = _mm512_loadu_ps(s + p + 32), x3 = _mm512_loadu_ps(s + p + 48);
      _mm512_store_ps(d + p, x0);
      _mm512_store_ps(d + p + 16, x1);
      _mm512_store_ps(d + p + 32, x2);
      _mm512_store_ps(d + p + 48, x3);
    }
    for (; p + 16 <= kc; p += 16) _mm512_store_ps(d + p, _mm512_loadu_ps(s + p));
    if (p < kc) {
      const __mmask16 mk = (__mmask16)((1u << (kc - p)) - 1u);
      _mm512_mask_storeu_ps(d + p, mk, _mm512_maskz_loadu_ps(mk, s + p));
    }
#else
    for (; p < kc; ++p) d[p] = s[p];
#endif
  }
  for (long i = mc; i < mpad; ++i) memset(dst + i * LDP, 0, (size_t)kc * sizeof(float));
}
#else
/* A[0:mc, 0:kc] (row stride lda) -> MR-tall micro-panels: d[p*MR + r], zero padded. */
static void pack_a_block(const float* restrict A, long lda, long mc, long kc, float* restrict dst) {
  for (long i0 = 0; i0 < mc; i0 += MR) {
    const int mr = (int)KV_MIN((long)MR, mc - i0);
    float* d = dst + (i0 / MR) * kc * MR;
    const float* s = A + i0 * lda;
    if (mr == MR) {
      long p = 0;
#if defined(__AVX512F__)
      /* 16 k values at a time: one unaligned load per row, scattered into the
         16 k-slices of the panel via a stack transpose buffer. */
      for (; p + 16 <= kc; p += 16) {
        float t[MR][16] __attribute__((aligned(64)));
        KV_UNROLL(32)
        for (int r = 0; r < MR; ++r) _mm512_store_ps(t[r], _mm512_loadu_ps(s + r * lda + p));
        for (int q = 0; q < 16; ++q) {
          KV_UNROLL(32)
          for (int r = 0; r < MR; ++r) d[(p + q) * MR + r] = t[r][q];
        }
      }
#endif
      for (; p < kc; ++p) {
        KV_UNROLL(32)
        for (int r = 0; r < MR; ++r) d[p * MR + r] = s[r * lda + p];
      }
    } else {
      for (long p = 0; p < kc; ++p)
        for (int r = 0; r < MR; ++r) d[p * MR + r] = r < mr ? s[r * lda + p] : 0.0f;
    }
  }
}
#endif

/* Split [0, total) in units of `unit` into nth near-equal parts. */
static void split_range(long total, long unit, int nth, int tid, long* lo, long* hi) {
  const long nu = (total + unit - 1) / unit;
  const long base = nu / nth, rem = nu % nth;
  const long u0 = tid * base + KV_MIN((long)tid, rem);
  const long u1 = u0 + base + (tid < rem ? 1 : 0);
  *lo = KV_MIN(u0 * unit, total);
  *hi = KV_MIN(u1 * unit, total);
}

/* ------------------------------------------------------------------------ */
/* Software prefetch (to L2) of the source rows of the next A block, spread
   over the micro-kernel calls of the current macro-kernel (PFNEXT=1). */
typedef struct {
  const float* p;
  long ld, rows, lpr; /* lines per row */
  long row, line;
} pf_region;

KV_INLINE void pf_issue(pf_region* r, int count) {
  for (int q = 0; q < count && r->row < r->rows; ++q) {
    __builtin_prefetch(r->p + r->row * r->ld + r->line * 16, 0, 2);
    if (++r->line == r->lpr) {
      r->line = 0;
      ++r->row;
    }
  }
}

/* Macro-kernel: C[0:mc, 0:nc] (+)= Ablock(mc x kc) · Bpanel(kc x nc).
 * PACKA=1,2: a is the packed block; PACKA=0: a points into A (row stride lda)
 * and edge is scratch for a ragged last row panel. */
static void macro_kernel(long mc, long nc, long kc, const float* a, long lda, const float* bp,
                         float* c, long ldc, int first, float* edge, pf_region* pf) {
  const long nmp = (mc + MR - 1) / MR, nnp = (nc + NR - 1) / NR;
#if PFNEXT
  const int pf_per = (int)((pf->rows * pf->lpr + nmp * nnp - 1) / (nmp * nnp));
#define PF_STEP() pf_issue(pf, pf_per)
#else
  (void)pf;
#define PF_STEP() ((void)0)
#endif
#if PACKA == 1
  (void)lda;
  (void)edge;
#define APANEL(ip) (a + (ip)*kc * MR)
#define ALD kc
#elif PACKA == 2
  (void)lda;
  (void)edge;
#define APANEL(ip) (a + (ip)*MR * LDP)
#define ALD LDP
#else
  const long mfull = mc / MR;
  if (mfull < nmp) { /* copy the ragged last row panel, zero padded, row stride kc */
    const int mr = (int)(mc - mfull * MR);
    for (int r = 0; r < MR; ++r)
      for (long p = 0; p < kc; ++p)
        edge[r * kc + p] = r < mr ? a[(mfull * MR + r) * lda + p] : 0.0f;
  }
#define APANEL(ip) ((ip) < mfull ? a + (ip)*MR * lda : edge)
#define ALD ((ip) < mfull ? lda : kc)
#endif
#if INNER == 0
  for (long jp = 0; jp < nnp; ++jp) {
    const int nr = (int)KV_MIN((long)NR, nc - jp * NR);
    const float* b = bp + jp * kc * NR;
    for (long ip = 0; ip < nmp; ++ip) {
      const int mr = (int)KV_MIN((long)MR, mc - ip * MR);
      ukernel(kc, APANEL(ip), ALD, b, c + ip * MR * ldc + jp * NR, ldc, mr, nr, first);
      PF_STEP();
    }
  }
#else
  for (long ip = 0; ip < nmp; ++ip) {
    const int mr = (int)KV_MIN((long)MR, mc - ip * MR);
    const float* ap = APANEL(ip);
    const long ald = ALD;
    for (long jp = 0; jp < nnp; ++jp) {
      const int nr = (int)KV_MIN((long)NR, nc - jp * NR);
      ukernel(kc, ap, ald, bp + jp * kc * NR, c + ip * MR * ldc + jp * NR, ldc, mr, nr, first);
      PF_STEP();
    }
  }
#endif
#undef APANEL
#undef ALD
#undef PF_STEP
}

/* GEMM on rows [0, m) of A and C, all n columns. With nth > 1 the packed B
   panel bufB is shared by the nth threads of the team, which pack it together
   (every thread must call this with the same n and k, even with m == 0).
   With nth == 1 everything is private. */
static void gemm_rows(const float* A, long lda, const float* B, long ldb, float* C, long ldc,
                      long m, long n, long k, float* bufA, float* bufB, int nth, int tid) {
  for (long jc = 0; jc < n; jc += NCE) {
    const long nc = KV_MIN((long)NCE, n - jc);
    const long npan = (nc + NR - 1) / NR;
    for (long pc = 0; pc < k; pc += KC) {
      const long kc = KV_MIN((long)KC, k - pc);
      if (nth > 1) {
        long p0, p1;
        split_range(npan, 1, nth, tid, &p0, &p1);
        pack_b_panels(B + pc * ldb + jc, ldb, kc, nc, bufB, p0, p1);
#pragma omp barrier
      } else {
        pack_b_panels(B + pc * ldb + jc, ldb, kc, nc, bufB, 0, npan);
      }
      for (long ic = 0; ic < m; ic += MCE) {
        const long mc = KV_MIN((long)MCE, m - ic);
        /* the A block that comes next: (ic + MCE, pc), else (0, pc + KC), else (0, 0) of the next
         * jc */
        pf_region pf = {A, lda, 0, 0, 0, 0};
        if (ic + MCE < m) {
          pf.p = A + (ic + MCE) * lda + pc;
          pf.rows = KV_MIN((long)MCE, m - ic - MCE);
          pf.lpr = (kc + 15) / 16;
        } else if (pc + KC < k || jc + NCE < n) {
          const long pn = pc + KC < k ? pc + KC : 0;
          pf.p = A + pn;
          pf.rows = KV_MIN((long)MCE, m);
          pf.lpr = (KV_MIN((long)KC, k - pn) + 15) / 16;
        }
#if PACKA
        pack_a_block(A + ic * lda + pc, lda, mc, kc, bufA);
        macro_kernel(mc, nc, kc, bufA, kc, bufB, C + ic * ldc + jc, ldc, pc == 0, NULL, &pf);
#else
        macro_kernel(mc, nc, kc, A + ic * lda + pc, lda, bufB, C + ic * ldc + jc, ldc, pc == 0,
                     bufA, &pf);
#endif
      }
      if (nth > 1) {
#pragma omp barrier
      }
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Buffers: one pool, allocated on first use, 2 MiB aligned, huge pages hinted. */
#define ABUF_FLOATS \
  ((long)(PACKA == 1 ? (long)MCE * KC : PACKA == 2 ? (long)MCE * LDP : (long)MR * KC))
#define BBUF_FLOATS ((long)KC * NCE)
#define ROUND_UP(x, a) ((((x) + (a)-1) / (a)) * (a))
#define ABUF_STRIDE ROUND_UP(ABUF_FLOATS + 64, 1024L)
#define BBUF_STRIDE ROUND_UP(BBUF_FLOATS + 64, 1024L)
#if THREADS > 1 && PAR != 0
#define N_BBUF THREADS
#else
#define N_BBUF 1
#endif

static float* g_pool = NULL;

static float* pool_get(void) {
  if (!g_pool) {
    const size_t bytes = (size_t)(ABUF_STRIDE * THREADS + BBUF_STRIDE * N_BBUF) * sizeof(float);
    const size_t align = (size_t)2 << 20;
    const size_t sz = (bytes + align - 1) / align * align;
    void* p = aligned_alloc(align, sz);
    if (!p) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, sz, MADV_HUGEPAGE);
#endif
    g_pool = (float*)p;
  }
  return g_pool;
}

KEVO_EXPORT int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                            const double* scalars, int n_scalars) {
  (void)scalars;
  if (n_in != 2 || n_out != 1 || n_scalars != 0) return KEVO_ERR_ARGS;
  const kevo_tensor *ta = &in[0], *tb = &in[1], *tc = &out[0];
  if (ta->dtype != KEVO_F32 || tb->dtype != KEVO_F32 || tc->dtype != KEVO_F32)
    return KEVO_ERR_UNSUPPORTED;
  if (ta->rank != 2 || tb->rank != 2 || tc->rank != 2) return KEVO_ERR_UNSUPPORTED;
  if (!kevo_is_contiguous(ta) || !kevo_is_contiguous(tb) || !kevo_is_contiguous(tc))
    return KEVO_ERR_UNSUPPORTED;
  const long M = ta->shape[0], K = ta->shape[1], N = tb->shape[1];
  if (tb->shape[0] != K || tc->shape[0] != M || tc->shape[1] != N) return KEVO_ERR_ARGS;
  const float* A = (const float*)ta->data;
  const float* B = (const float*)tb->data;
  float* C = (float*)tc->data;
  if (M <= 0 || N <= 0) return KEVO_OK;
  if (K <= 0) {
    memset(C, 0, (size_t)M * N * sizeof(float));
    return KEVO_OK;
  }
  float* pool = pool_get();
  if (!pool) return KEVO_ERR_RUNTIME;
  float* const bbase = pool + ABUF_STRIDE * THREADS;

#if THREADS == 1
  gemm_rows(A, K, B, N, C, N, M, N, K, pool, bbase, 1, 0);
#else
#pragma omp parallel num_threads(THREADS)
  {
#ifdef _OPENMP
    const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
#else
    const int tid = 0, nth = 1;
#endif
    float* const bufA = pool + ABUF_STRIDE * tid;
#if PAR == 1   /* columns split, everything private */
    long n0, n1;
    split_range(N, NR, nth, tid, &n0, &n1);
    if (n1 > n0)
      gemm_rows(A, K, B + n0, N, C + n0, N, M, n1 - n0, K, bufA, bbase + BBUF_STRIDE * tid, 1, 0);
#elif PAR == 2 /* rows split, everything private */
    long m0, m1;
    split_range(M, MR, nth, tid, &m0, &m1);
    if (m1 > m0)
      gemm_rows(A + m0 * K, K, B, N, C + m0 * N, N, m1 - m0, N, K, bufA, bbase + BBUF_STRIDE * tid,
                1, 0);
#else          /* PAR == 0: rows split, shared packed B */
    long m0, m1;
    split_range(M, MR, nth, tid, &m0, &m1);
    gemm_rows(A + m0 * K, K, B, N, C + m0 * N, N, m1 - m0, N, K, bufA, bbase, nth, tid);
#endif
  }
#endif
  return KEVO_OK;
}
