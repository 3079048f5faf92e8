/* swiglu / stream.c — fast fp32 SwiGLU: y = silu(g) * u = g * u / (1 + exp(-g)).
 *
 * Purely elementwise, so the contiguous tensors are processed as one flat
 * stream (any rank, ragged rows do not matter), split into 64-byte aligned
 * contiguous chunks among THREADS. Explicit AVX-512 (or 256-bit AVX-512VL /
 * AVX2, scalar fallback) with a vectorised exp (Cody-Waite reduction with two
 * FMAs, polynomial or table+polynomial, scalef), optional non-temporal stores
 * and software prefetch of both inputs.
 * Knobs:
 *   VW      vector width in bits (256 or 512).
 *   UNROLL  vectors per inner-loop iteration.
 *   NT      1: non-temporal stores of y.
 *   PF      software prefetch distance in bytes ahead of the loads (0 = off).
 *   PFHINT  0: prefetch into L1 (T0), 1: into L2 (T1).
 *   EXP     exp flavour: 0/1 polynomial degree 5/6, 2 32-entry table +
 *           degree 2, 3 16-entry table + degree 3 (all within a few ulp).
 *   DIV     0: exact division by 1 + exp(-g); 1: rcp14 (rcp on AVX2) plus one
 *           Newton step (~1 ulp), avoiding the divider.
 *   THREADS OpenMP threads.
 */
// @kevo knob VW 512 {256, 512}
// @kevo knob UNROLL 4 {1, 2, 4, 8}
// @kevo knob NT 1 {0, 1}
// @kevo knob PF 4096 {0, 1024, 4096, 16384}
// @kevo knob PFHINT 1 {0, 1}
// @kevo require PF > 0 || PFHINT == 0
// @kevo knob EXP 2 {0, 1, 2, 3}
// @kevo knob DIV 0 {0, 1}
// @kevo knob THREADS 1 {1, 2, 4, 8}
// @kevo require THREADS <= NCPU
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
#define PF 4096
#endif
#ifndef PFHINT
#define PFHINT 1
#endif
#ifndef EXP
#define EXP 2
#endif
#ifndef DIV
#define DIV 0
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

KV_INLINE vf swiglu_vec(vf g, vf u) {
#if DIV
  /* exp(-g) capped at e^88 so 1 + e stays finite for the reciprocal */
  vf e = kv_exp(VMIN(VSUB(VZERO(), g), VSET1(88.0f)));
  vf d = VADD(VSET1(1.0f), e);
  vf r = VRCP14(d);
  r = VFMA(r, VFNMA(d, r, VSET1(1.0f)), r); /* Newton: r += r * (1 - d r) */
  return VMUL(VMUL(g, u), r);
#else
  vf e = kv_exp(VSUB(VZERO(), g));
  return VDIV(VMUL(g, u), VADD(VSET1(1.0f), e));
#endif
}

static void run_range(const float* g, const float* u, float* y, int64_t i0, int64_t i1) {
  int64_t i = i0;
  /* i0 is a multiple of 16 elements, so with 64-byte aligned bases the main
     loop is aligned for streaming stores */
  for (; i + U * VL <= i1; i += U * VL) {
#if PF > 0
    for (int q = 0; q < U * VL; q += 16) {
      KV_PREFETCH(g + i + q + PF / 4, PFHINT);
      KV_PREFETCH(u + i + q + PF / 4, PFHINT);
    }
#endif
    vf gv[U], uv[U];
    for (int q = 0; q < U; ++q) {
      gv[q] = VLOAD(g + i + q * VL);
      uv[q] = VLOAD(u + i + q * VL);
    }
    for (int q = 0; q < U; ++q) {
      vf v = swiglu_vec(gv[q], uv[q]);
#if NT
      VSTREAM(y + i + q * VL, v);
#else
      VSTORE(y + i + q * VL, v);
#endif
    }
  }
  for (; i + VL <= i1; i += VL) {
    vf v = swiglu_vec(VLOAD(g + i), VLOAD(u + i));
#if NT
    VSTREAM(y + i, v);
#else
    VSTORE(y + i, v);
#endif
  }
  if (i < i1) {
    vm k = vmask_n(i1 - i);
    VSTOREM(y + i, k, swiglu_vec(VLOADM(g + i, k), VLOADM(u + i, k)));
  }
  KV_SFENCE();
}

KEVO_EXPORT int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                            const double* scalars, int n_scalars) {
  (void)scalars;
  if (n_in != 2 || n_out != 1 || n_scalars != 0) return KEVO_ERR_ARGS;
  int rc;
  if ((rc = kv_check_f32(&in[0])) || (rc = kv_check_f32(&in[1])) || (rc = kv_check_f32(&out[0]))) return rc;
  const int64_t total = kevo_numel(&in[0]);
  if (kevo_numel(&in[1]) != total || kevo_numel(&out[0]) != total) return KEVO_ERR_ARGS;
  if (total <= 0) return KEVO_OK;
  const float* g = (const float*)in[0].data;
  const float* u = (const float*)in[1].data;
  float* y = (float*)out[0].data;
#if THREADS > 1
  if (total >= 32768) {
#pragma omp parallel num_threads(THREADS)
    {
      const int nt = omp_get_num_threads(), t = omp_get_thread_num();
      const int64_t blocks = (total + 15) / 16;
      int64_t i0 = blocks * t / nt * 16, i1 = blocks * (t + 1) / nt * 16;
      if (i1 > total) i1 = total;
      if (i0 < i1) run_range(g, u, y, i0, i1);
    }
    return KEVO_OK;
  }
#endif
  run_range(g, u, y, 0, total);
  return KEVO_OK;
}
