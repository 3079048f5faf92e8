/* gemm_swiglu / blocked — register-blocked fused gate/up MLP.
 *
 * y[M,N] = silu(A·Wg) * (A·Wu), silu(g) = g / (1 + exp(-g)); A[M,K],
 * Wg[K,N], Wu[K,N], fp32, row-major, fp32 accumulation. Made for decode
 * shapes (M small, the weights the bulk of the bytes): a block of MC rows of
 * A stays in cache while Wg and Wu stream past it once, column tile by
 * column tile. A tile is NR = NV vectors wide; with PACK its K x NR slices of
 * Wg and Wu are first copied into one k-major panel (per k: NV vectors of
 * Wg, then NV of Wu; zero padded on a ragged right edge) that the block's row
 * panels then read contiguously. The MR x NR micro-kernel runs over all of K
 * with 2 * MR * NV accumulators in registers (per k: NV vectors of each
 * weight, MR broadcasts of A), then applies the epilogue to them in
 * registers (silu(g) * u with kevo's vectorised exp) and stores y once, so
 * neither g nor u is ever written. A ragged last row panel recomputes its
 * last row in the missing slots and stores only its own; a ragged right edge
 * is read and stored masked. Vector layer: kevo_cpu_vec.h (AVX-512,
 * AVX-512VL, AVX2 or scalar, by VW and the compiler's target).
 *
 * Knobs:
 *   VW       vector width in bits (256 or 512; 512 without AVX-512 gives 256)
 *   MR       rows of the micro-tile (A values broadcast per k step)
 *   NV       vectors per weight per micro-tile (NR = NV * VL columns); the
 *            require keeps the 2 * MR * NV accumulators within 24 registers
 *            (of AVX-512's 32; AVX2's 16 hold MR * NV <= 6 without spills)
 *   MC       rows of A per block (rounded up to a multiple of MR): the weights
 *            are streamed ceil(M / MC) times
 *   PACK     1: copy each tile's Wg and Wu into the interleaved panel, reused
 *            by the block's MC / MR row panels; 0: read them in place (row
 *            stride N), no copy
 *   KU       unroll factor of the micro-kernel's k loop
 *   PFD      software prefetch of the weight rows PFD k steps ahead where they
 *            are read from memory (the copy with PACK 1, the micro-kernel with
 *            PACK 0); 0 = none
 *   EXP      exp flavour of kevo_cpu_exp.h (0/1 polynomial, 2/3 table)
 *   THREADS  OpenMP threads, each taking a share of the column tiles (and its
 *            own panel)
 */
// @kevo knob VW 512 {256, 512}
// @kevo knob MR 3 {1, 2, 3, 4, 6, 8}
// @kevo knob NV 2 {1, 2, 3, 4}
// @kevo require 2 * MR * NV <= 24
// @kevo knob MC 64 {16, 32, 64, 128, 256}
// @kevo knob PACK 1 {0, 1}
// @kevo knob KU 1 {1, 2, 4}
// @kevo knob PFD 0 {0, 4, 16}
// @kevo knob EXP 2 {0, 1, 2, 3}
// @kevo knob THREADS 1 {1, 2, 4, 8}
// @kevo require THREADS <= NCPU
#ifndef VW
#define VW 512
#endif
#ifndef MR
#define MR 3
#endif
#ifndef NV
#define NV 2
#endif
#ifndef MC
#define MC 64
#endif
#ifndef PACK
#define PACK 1
#endif
#ifndef KU
#define KU 1
#endif
#ifndef PFD
#define PFD 0
#endif
#ifndef EXP
#define EXP 2
#endif
#ifndef THREADS
#define THREADS 1
#endif

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "kevo_kernel.h"

/* kevo's vector layer and exp (kevo_cpu_vec.h, kevo_cpu_exp.h): targets/cpu/include */
#include "kevo_cpu_exp.h"

#define NR (NV * VL)
#define MCE (((MC + MR - 1) / MR) * MR)

#define KV_STR(x) #x
#define KV_PRAGMA(x) _Pragma(KV_STR(x))
#define KV_UNROLL(n) KV_PRAGMA(GCC unroll n)
#define KV_MIN(a, b) ((a) < (b) ? (a) : (b))

/* mask of the lanes of vector v that lie within n columns */
KV_INLINE vm tile_mask(int64_t n, int v) {
  const int64_t rem = n - (int64_t)v * VL;
  return vmask_n(rem >= VL ? VL : rem <= 0 ? 0 : rem);
}

/* silu(g) * u = g * u / (1 + e^-g): e^-g overflowing to inf gives 0, the limit */
KV_INLINE vf silu_mul(vf g, vf u) { return VDIV(VMUL(g, u), VADD(VSET1(1.0f), kv_exp(VSUB(VZERO(), g)))); }

/* y[0:m, 0:n] = silu(A·Wg) * (A·Wu) for one micro-tile; m <= MR, n <= NR.
 * a: the tile's first row of A (row stride K). wg, wu: the tile's first
 * column in row 0 of each weight, row stride ldw (the panel: 2 * NR, both
 * padded to NR; in place: N). full: n == NR or the weights are padded, so
 * loads need no mask (a constant at every call site). */
KV_INLINE void ukernel(const int full, int64_t K, const float* restrict a, const float* restrict wg,
                       const float* restrict wu, int64_t ldw, float* restrict y, int64_t ldy, int m,
                       int64_t n) {
  const float* ar[MR];
  KV_UNROLL(8)
  for (int i = 0; i < MR; ++i) ar[i] = a + (i < m ? i : m - 1) * K;
  vm mk[NV];
  KV_UNROLL(4)
  for (int v = 0; v < NV; ++v) mk[v] = tile_mask(n, v);
  vf accg[MR][NV], accu[MR][NV];
  KV_UNROLL(8)
  for (int i = 0; i < MR; ++i) {
    KV_UNROLL(4)
    for (int v = 0; v < NV; ++v) accg[i][v] = accu[i][v] = VZERO();
  }
  KV_UNROLL(KU)
  for (int64_t p = 0; p < K; ++p) {
    const float* gp = wg + p * ldw;
    const float* up = wu + p * ldw;
#if PFD && !PACK
    KV_UNROLL(4)
    for (int v = 0; v < NV; ++v) {
      KV_PREFETCH(gp + PFD * ldw + v * VL, 0);
      KV_PREFETCH(up + PFD * ldw + v * VL, 0);
    }
#endif
    vf bg[NV], bu[NV];
    KV_UNROLL(4)
    for (int v = 0; v < NV; ++v) {
      bg[v] = full ? VLOAD(gp + v * VL) : VLOADM(gp + v * VL, mk[v]);
      bu[v] = full ? VLOAD(up + v * VL) : VLOADM(up + v * VL, mk[v]);
    }
    KV_UNROLL(8)
    for (int i = 0; i < MR; ++i) {
      const vf av = VSET1(ar[i][p]);
      KV_UNROLL(4)
      for (int v = 0; v < NV; ++v) {
        accg[i][v] = VFMA(av, bg[v], accg[i][v]);
        accu[i][v] = VFMA(av, bu[v], accu[i][v]);
      }
    }
  }
  KV_UNROLL(8)
  for (int i = 0; i < MR; ++i) {
    if (i < m) {
      KV_UNROLL(4)
      for (int v = 0; v < NV; ++v) {
        const vf r = silu_mul(accg[i][v], accu[i][v]);
        if (n == NR)
          VSTORE(y + i * ldy + v * VL, r);
        else
          VSTOREM(y + i * ldy + v * VL, mk[v], r);
      }
    }
  }
}

#if PACK
/* columns [j0, j0 + n) of Wg and Wu, all K rows -> panel[p * 2NR + ...]:
   NR of Wg, then NR of Wu, zeros past n */
static void pack_tile(const float* Wg, const float* Wu, int64_t K, int64_t N, int64_t j0, int64_t n,
                      float* restrict panel) {
  vm mk[NV];
  for (int v = 0; v < NV; ++v) mk[v] = tile_mask(n, v);
  for (int64_t p = 0; p < K; ++p) {
    const float* gs = Wg + p * N + j0;
    const float* us = Wu + p * N + j0;
    float* d = panel + p * 2 * NR;
#if PFD
    if (p + PFD < K) {
      KV_PREFETCH(gs + PFD * N, 0);
      KV_PREFETCH(us + PFD * N, 0);
    }
#endif
    if (n == NR) {
      KV_UNROLL(4)
      for (int v = 0; v < NV; ++v) {
        VSTORE(d + v * VL, VLOAD(gs + v * VL));
        VSTORE(d + NR + v * VL, VLOAD(us + v * VL));
      }
    } else {
      for (int v = 0; v < NV; ++v) {
        VSTORE(d + v * VL, VLOADM(gs + v * VL, mk[v]));
        VSTORE(d + NR + v * VL, VLOADM(us + v * VL, mk[v]));
      }
    }
  }
}

/* one K x 2NR panel per thread, kept between calls and grown with K */
static float* g_panels = NULL;
static int64_t g_panel_k = 0;

static float* panels_for(int64_t K) {
  if (K > g_panel_k) {
    free(g_panels);
    g_panel_k = 0;
    const size_t bytes = ((size_t)K * 2 * NR * sizeof(float) * THREADS + 63) / 64 * 64;
    g_panels = (float*)aligned_alloc(64, bytes);
    if (!g_panels) return NULL;
    g_panel_k = K;
  }
  return g_panels;
}
#endif

/* y[ic:ic+mc, tiles t0..t1) */
static void block_tiles(const float* A, const float* Wg, const float* Wu, float* y, int64_t K, int64_t N,
                        int64_t ic, int64_t mc, int64_t t0, int64_t t1, float* panel) {
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t j0 = t * NR, n = KV_MIN((int64_t)NR, N - j0);
#if PACK
    pack_tile(Wg, Wu, K, N, j0, n, panel);
#else
    (void)panel;
#endif
    for (int64_t ir = ic; ir < ic + mc; ir += MR) {
      const int m = (int)KV_MIN((int64_t)MR, ic + mc - ir);
#if PACK
      ukernel(1, K, A + ir * K, panel, panel + NR, 2 * NR, y + ir * N + j0, N, m, n);
#else
      if (n == NR)
        ukernel(1, K, A + ir * K, Wg + j0, Wu + j0, N, y + ir * N + j0, N, m, n);
      else
        ukernel(0, K, A + ir * K, Wg + j0, Wu + j0, N, y + ir * N + j0, N, m, n);
#endif
    }
  }
}

KEVO_EXPORT int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                            const double* scalars, int n_scalars) {
  (void)scalars;
  if (n_in != 3 || n_out != 1 || n_scalars != 0) return KEVO_ERR_ARGS;
  int rc;
  if ((rc = kv_check_f32(&in[0])) || (rc = kv_check_f32(&in[1])) || (rc = kv_check_f32(&in[2])) ||
      (rc = kv_check_f32(&out[0])))
    return rc;
  const kevo_tensor *ta = &in[0], *tg = &in[1], *tu = &in[2], *ty = &out[0];
  if (ta->rank != 2 || tg->rank != 2 || tu->rank != 2 || ty->rank != 2) return KEVO_ERR_UNSUPPORTED;
  const int64_t M = ta->shape[0], K = ta->shape[1], N = tg->shape[1];
  if (tg->shape[0] != K || tu->shape[0] != K || tu->shape[1] != N || ty->shape[0] != M ||
      ty->shape[1] != N)
    return KEVO_ERR_ARGS;
  if (M <= 0 || N <= 0) return KEVO_OK;
  const float* A = (const float*)ta->data;
  const float* Wg = (const float*)tg->data;
  const float* Wu = (const float*)tu->data;
  float* y = (float*)ty->data;
  if (K <= 0) { /* g = u = 0, y = 0 */
    memset(y, 0, (size_t)(M * N) * sizeof(float));
    return KEVO_OK;
  }
  float* panels = NULL;
#if PACK
  panels = panels_for(K);
  if (!panels) return KEVO_ERR_RUNTIME;
#endif
  const int64_t tiles = (N + NR - 1) / NR;
#if THREADS > 1
#pragma omp parallel num_threads(THREADS)
  {
    const int nt = omp_get_num_threads(), tid = omp_get_thread_num();
    const int64_t t0 = tiles * tid / nt, t1 = tiles * (tid + 1) / nt;
    float* panel = panels ? panels + (int64_t)tid * K * 2 * NR : NULL;
    for (int64_t ic = 0; ic < M; ic += MCE)
      block_tiles(A, Wg, Wu, y, K, N, ic, KV_MIN((int64_t)MCE, M - ic), t0, t1, panel);
  }
#else
  for (int64_t ic = 0; ic < M; ic += MCE)
    block_tiles(A, Wg, Wu, y, K, N, ic, KV_MIN((int64_t)MCE, M - ic), 0, tiles, panels);
#endif
  return KEVO_OK;
}
