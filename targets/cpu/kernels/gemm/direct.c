/* gemm / direct — register-blocked sgemm without any packing.
 *
 * C[M,N] = A[M,K] · B[K,N], fp32, row-major, fp32 accumulation.
 * The MR x NR micro-kernel reads its operands where they lie: per k step it
 * loads NR/16 zmm vectors straight from a row of B (unaligned, masked on a
 * ragged right edge) and broadcasts MR values straight from the rows of A,
 * accumulating in MR*(NR/16) zmm registers (AVX-512 FMA; a portable scalar
 * micro-kernel is used when the compiler does not target AVX-512F). Loop nest:
 * jc over N in NC columns -> pc over K in KC steps -> ir over all rows in MR
 * steps -> jr over the NC columns in NR steps, so a KC x NC block of B is
 * reused from cache by every row panel and an MR x KC sliver of A by every
 * column tile. A ragged bottom edge is computed by 8/4/2/1-row variants of the
 * micro-kernel and a ragged right edge by one with fewer (masked) vectors, so
 * no padding work is done. With no packing there is no setup
 * cost, which suits small, skinny and odd-shaped problems; large squares
 * favour the packed `blocked` family.
 *
 * Knobs:
 *   MR       rows of the micro-tile
 *   NR       columns of the micro-tile (multiple of 16 = one zmm)
 *   KC       k-block length (C is stored after the first block, then updated)
 *   NC       column block width (multiple of NR after rounding up)
 *   KU       unroll factor of the micro-kernel's k loop
 *   PFD      software prefetch distance for the B rows, in k steps (0 = none)
 *   THREADS  OpenMP threads
 *   PAR      how threads split C: 0 = by rows (MR units), 1 = by columns
 *            (NR units)
 */
// @kevo knob MR 6 {1, 2, 4, 6, 8, 12}
// @kevo knob NR 64 {16, 32, 48, 64}
// @kevo require MR * (NR / 16) <= 28
// @kevo knob KC 256 {64, 128, 256, 512, 1024}
// @kevo knob NC 512 {64, 256, 512, 1024, 4096}
// @kevo knob KU 4 {1, 2, 4}
// @kevo knob PFD 0 {0, 8, 32}
// @kevo knob THREADS 1 {1, 2, 4, 8}
// @kevo require THREADS <= NCPU
// @kevo knob PAR 0 {0, 1}
// @kevo require THREADS > 1 || PAR == 0

#include <stdint.h>
#include <string.h>
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
#ifndef NC
#define NC 512
#endif
#ifndef KU
#define KU 4
#endif
#ifndef PFD
#define PFD 0
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
#define NCE (((NC + NR - 1) / NR) * NR)

#define KV_STR(x) #x
#define KV_PRAGMA(x) _Pragma(KV_STR(x))
#define KV_UNROLL(n) KV_PRAGMA(GCC unroll n)
#define KV_INLINE static inline __attribute__((always_inline))
#define KV_MIN(a, b) ((a) < (b) ? (a) : (b))

/* C[0:m, 0:n] (+)= A[0:m, 0:kc] · B[0:kc, 0:n]; m <= MR, n <= NR.
 * FULLN: n == NR (plain loads); otherwise masked loads of B. */
#if defined(__AVX512F__)

KV_INLINE __mmask16 col_mask(int n, int v) {
  int rem = n - 16 * v;
  if (rem >= 16) return (__mmask16)0xFFFF;
  if (rem <= 0) return (__mmask16)0;
  return (__mmask16)((1u << rem) - 1u);
}

/* rows, nv: constants at every call site — rows of A/C and zmm vectors per
   row actually computed (rows < MR and nv < NV only on ragged edges). */
KV_INLINE void ukernel_rn(const int rows, const int nv, const int fulln, long kc,
                          const float* restrict a, long lda, const float* restrict b, long ldb,
                          float* restrict c, long ldc, int n, int first) {
  __mmask16 mk[NV];
  KV_UNROLL(8)
  for (int v = 0; v < nv; ++v) mk[v] = fulln ? (__mmask16)0xFFFF : col_mask(n, v);
  __m512 acc[MR][NV];
  KV_UNROLL(32)
  for (int i = 0; i < rows; ++i) {
    KV_UNROLL(8)
    for (int v = 0; v < nv; ++v) acc[i][v] = _mm512_setzero_ps();
  }
  KV_UNROLL(KU)
  for (long p = 0; p < kc; ++p) {
    const float* brow = b + p * ldb;
#if PFD
    KV_UNROLL(8)
    for (int v = 0; v < nv; ++v) __builtin_prefetch(brow + PFD * ldb + 16 * v, 0, 3);
#endif
    __m512 bv[NV];
    KV_UNROLL(8)
    for (int v = 0; v < nv; ++v)
      bv[v] = fulln ? _mm512_loadu_ps(brow + 16 * v) : _mm512_maskz_loadu_ps(mk[v], brow + 16 * v);
    KV_UNROLL(32)
    for (int i = 0; i < rows; ++i) {
      __m512 av = _mm512_set1_ps(a[i * lda + p]);
      KV_UNROLL(8)
      for (int v = 0; v < nv; ++v) acc[i][v] = _mm512_fmadd_ps(av, bv[v], acc[i][v]);
    }
  }
  KV_UNROLL(32)
  for (int i = 0; i < rows; ++i) {
    KV_UNROLL(8)
    for (int v = 0; v < nv; ++v) {
      float* cp = c + i * ldc + 16 * v;
      __m512 r = acc[i][v];
      if (fulln) {
        if (!first) r = _mm512_add_ps(r, _mm512_loadu_ps(cp));
        _mm512_storeu_ps(cp, r);
      } else {
        if (!first) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(mk[v], cp));
        _mm512_mask_storeu_ps(cp, mk[v], r);
      }
    }
  }
}

/* m <= MR rows: a full tile, or a ragged bottom split into 8/4/2/1-row tiles. */
KV_INLINE void ukernel_n(const int nv, const int fulln, long kc, const float* restrict a, long lda,
                         const float* restrict b, long ldb, float* restrict c, long ldc, int m,
                         int n, int first) {
  if (m == MR) {
    ukernel_rn(MR, nv, fulln, kc, a, lda, b, ldb, c, ldc, n, first);
    return;
  }
  long i = 0;
#if MR > 8
  if (m - i >= 8) {
    ukernel_rn(8, nv, fulln, kc, a + i * lda, lda, b, ldb, c + i * ldc, ldc, n, first);
    i += 8;
  }
#endif
#if MR > 4
  if (m - i >= 4) {
    ukernel_rn(4, nv, fulln, kc, a + i * lda, lda, b, ldb, c + i * ldc, ldc, n, first);
    i += 4;
  }
#endif
#if MR > 2
  if (m - i >= 2) {
    ukernel_rn(2, nv, fulln, kc, a + i * lda, lda, b, ldb, c + i * ldc, ldc, n, first);
    i += 2;
  }
#endif
  if (m - i >= 1)
    ukernel_rn(1, nv, fulln, kc, a + i * lda, lda, b, ldb, c + i * ldc, ldc, n, first);
}

KV_INLINE void ukernel(const int fulln, long kc, const float* restrict a, long lda,
                       const float* restrict b, long ldb, float* restrict c, long ldc, int m, int n,
                       int first) {
  if (fulln) {
    ukernel_n(NV, 1, kc, a, lda, b, ldb, c, ldc, m, n, first);
    return;
  }
  const int nvec = (n + 15) / 16;
#if NV > 3
  if (nvec == 4) {
    ukernel_n(4, 0, kc, a, lda, b, ldb, c, ldc, m, n, first);
    return;
  }
#endif
#if NV > 2
  if (nvec == 3) {
    ukernel_n(3, 0, kc, a, lda, b, ldb, c, ldc, m, n, first);
    return;
  }
#endif
#if NV > 1
  if (nvec == 2) {
    ukernel_n(2, 0, kc, a, lda, b, ldb, c, ldc, m, n, first);
    return;
  }
#endif
  ukernel_n(1, 0, kc, a, lda, b, ldb, c, ldc, m, n, first);
}

#else /* portable fallback micro-kernel */

KV_INLINE void ukernel(const int fulln, long kc, const float* restrict a, long lda,
                       const float* restrict b, long ldb, float* restrict c, long ldc, int m, int n,
                       int first) {
  (void)fulln;
  float acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = 0.0f;
  for (long p = 0; p < kc; ++p)
    for (int i = 0; i < m; ++i) {
      const float av = a[i * lda + p];
      for (int j = 0; j < n; ++j) acc[i][j] += av * b[p * ldb + j];
    }
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) c[i * ldc + j] = first ? acc[i][j] : c[i * ldc + j] + acc[i][j];
}

#endif

/* C[0:m, 0:n] = A[0:m, :] · B[:, 0:n] (all K). */
static void gemm_direct(const float* A, long lda, const float* B, long ldb, float* C, long ldc,
                        long m, long n, long k) {
  for (long jc = 0; jc < n; jc += NCE) {
    const long nc = KV_MIN((long)NCE, n - jc);
    const long nfull = nc / NR * NR;
    for (long pc = 0; pc < k; pc += KC) {
      const long kc = KV_MIN((long)KC, k - pc);
      const int first = pc == 0;
      for (long i = 0; i < m; i += MR) {
        const int mr = (int)KV_MIN((long)MR, m - i);
        const float* a = A + i * lda + pc;
        float* c = C + i * ldc + jc;
        const float* b = B + pc * ldb + jc;
        for (long j = 0; j < nfull; j += NR)
          ukernel(1, kc, a, lda, b + j, ldb, c + j, ldc, mr, NR, first);
        if (nfull < nc)
          ukernel(0, kc, a, lda, b + nfull, ldb, c + nfull, ldc, mr, (int)(nc - nfull), first);
      }
    }
  }
}

#if THREADS > 1
/* Split [0, total) in units of `unit` into nth near-equal parts. */
static void split_range(long total, long unit, int nth, int tid, long* lo, long* hi) {
  const long nu = (total + unit - 1) / unit;
  const long base = nu / nth, rem = nu % nth;
  const long u0 = tid * base + KV_MIN((long)tid, rem);
  const long u1 = u0 + base + (tid < rem ? 1 : 0);
  *lo = KV_MIN(u0 * unit, total);
  *hi = KV_MIN(u1 * unit, total);
}
#endif

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
#if THREADS == 1
  gemm_direct(A, K, B, N, C, N, M, N, K);
#else
#pragma omp parallel num_threads(THREADS)
  {
#ifdef _OPENMP
    const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
#else
    const int tid = 0, nth = 1;
#endif
    long lo, hi;
#if PAR == 1
    split_range(N, NR, nth, tid, &lo, &hi);
    if (hi > lo) gemm_direct(A, K, B + lo, N, C + lo, N, M, hi - lo, K);
#else
    split_range(M, MR, nth, tid, &lo, &hi);
    if (hi > lo) gemm_direct(A + lo * K, K, B, N, C + lo * N, N, hi - lo, N, K);
#endif
  }
#endif
  return KEVO_OK;
}
