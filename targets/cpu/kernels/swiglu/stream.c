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

/* ---- vector abstraction: 512-bit AVX-512, 256-bit AVX-512VL (mask registers),
 * 256-bit AVX2+FMA fallback, scalar fallback. VW=512 without AVX-512 drops to 256. */
#define KV_INLINE static inline __attribute__((always_inline))
#if VW == 512 && defined(__AVX512F__)
#define VL 16
#define HAVE_STREAM 1
typedef __m512 vf;
typedef __mmask16 vm;
KV_INLINE vm vmask_n(int64_t n) { return (vm)((1u << n) - 1u); }
#define VSET1(a) _mm512_set1_ps(a)
#define VZERO() _mm512_setzero_ps()
#define VLOAD(p) _mm512_loadu_ps(p)
#define VSTORE(p, v) _mm512_storeu_ps(p, v)
#define VSTREAM(p, v) _mm512_stream_ps(p, v)
#define VLOADM(p, k) _mm512_maskz_loadu_ps(k, p)
#define VSTOREM(p, k, v) _mm512_mask_storeu_ps(p, k, v)
#define VSEL(k, a, b) _mm512_mask_blend_ps(k, b, a)
#define VADD _mm512_add_ps
#define VSUB _mm512_sub_ps
#define VMUL _mm512_mul_ps
#define VDIV _mm512_div_ps
#define VMAX _mm512_max_ps
#define VMIN _mm512_min_ps
#define KV_ANY_GT(a, b) (_mm512_cmp_ps_mask(a, b, _CMP_GT_OQ) != 0)
#define KV_ANY_NE(a, b) (_mm512_cmp_ps_mask(a, b, _CMP_NEQ_UQ) != 0)
#define VFMA _mm512_fmadd_ps
#define VFNMA _mm512_fnmadd_ps
#define VRCP14 _mm512_rcp14_ps
#define VROUND(v) _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VSCALEF(p, n) _mm512_scalef_ps(p, n)
#define VHSUM(v) _mm512_reduce_add_ps(v)
#define VHMAX(v) _mm512_reduce_max_ps(v)
#elif defined(__AVX512F__) && defined(__AVX512VL__)
#define VL 8
#define HAVE_STREAM 1
typedef __m256 vf;
typedef __mmask8 vm;
KV_INLINE vm vmask_n(int64_t n) { return (vm)((1u << n) - 1u); }
#define VSET1(a) _mm256_set1_ps(a)
#define VZERO() _mm256_setzero_ps()
#define VLOAD(p) _mm256_loadu_ps(p)
#define VSTORE(p, v) _mm256_storeu_ps(p, v)
#define VSTREAM(p, v) _mm256_stream_ps(p, v)
#define VLOADM(p, k) _mm256_maskz_loadu_ps(k, p)
#define VSTOREM(p, k, v) _mm256_mask_storeu_ps(p, k, v)
#define VSEL(k, a, b) _mm256_mask_blend_ps(k, b, a)
#define VADD _mm256_add_ps
#define VSUB _mm256_sub_ps
#define VMUL _mm256_mul_ps
#define VDIV _mm256_div_ps
#define VMAX _mm256_max_ps
#define VMIN _mm256_min_ps
#define KV_ANY_GT(a, b) (_mm256_cmp_ps_mask(a, b, _CMP_GT_OQ) != 0)
#define KV_ANY_NE(a, b) (_mm256_cmp_ps_mask(a, b, _CMP_NEQ_UQ) != 0)
#define VFMA _mm256_fmadd_ps
#define VFNMA _mm256_fnmadd_ps
#define VRCP14 _mm256_rcp14_ps
#define VROUND(v) _mm256_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VSCALEF(p, n) _mm256_scalef_ps(p, n)
KV_INLINE float kv_hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
KV_INLINE float kv_hmax256(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
#define VHSUM(v) kv_hsum256(v)
#define VHMAX(v) kv_hmax256(v)
#elif defined(__AVX2__) && defined(__FMA__)
#define VL 8
#define HAVE_STREAM 1
#define KV_AVX2_ONLY 1
typedef __m256 vf;
typedef __m256i vm;
static const int32_t kv_masktab[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
KV_INLINE vm vmask_n(int64_t n) { return _mm256_loadu_si256((const __m256i*)(kv_masktab + 8 - n)); }
#define VSET1(a) _mm256_set1_ps(a)
#define VZERO() _mm256_setzero_ps()
#define VLOAD(p) _mm256_loadu_ps(p)
#define VSTORE(p, v) _mm256_storeu_ps(p, v)
#define VSTREAM(p, v) _mm256_stream_ps(p, v)
#define VLOADM(p, k) _mm256_maskload_ps(p, k)
#define VSTOREM(p, k, v) _mm256_maskstore_ps(p, k, v)
#define VSEL(k, a, b) _mm256_blendv_ps(b, a, _mm256_castsi256_ps(k))
#define VADD _mm256_add_ps
#define VSUB _mm256_sub_ps
#define VMUL _mm256_mul_ps
#define VDIV _mm256_div_ps
#define VMAX _mm256_max_ps
#define VMIN _mm256_min_ps
#define KV_ANY_GT(a, b) (_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_GT_OQ)) != 0)
#define KV_ANY_NE(a, b) (_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_NEQ_UQ)) != 0)
#define VFMA _mm256_fmadd_ps
#define VFNMA _mm256_fnmadd_ps
#define VRCP14 _mm256_rcp_ps
#define VROUND(v) _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
/* p * 2^floor(n), floor(n) clamped to the normal range [-126, 127] */
KV_INLINE __m256 kv_scalef256(__m256 p, __m256 n) {
  n = _mm256_min_ps(_mm256_max_ps(n, _mm256_set1_ps(-126.f)), _mm256_set1_ps(127.f));
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(_mm256_floor_ps(n)), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}
#define VSCALEF(p, n) kv_scalef256(p, n)
KV_INLINE float kv_hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
KV_INLINE float kv_hmax256(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
#define VHSUM(v) kv_hsum256(v)
#define VHMAX(v) kv_hmax256(v)
#else
#define VL 1
#define HAVE_STREAM 0
typedef float vf;
typedef int vm;
KV_INLINE vm vmask_n(int64_t n) { return n > 0; }
#define VSET1(a) ((float)(a))
#define VZERO() 0.0f
#define VLOAD(p) (*(p))
#define VSTORE(p, v) (*(p) = (v))
#define VSTREAM(p, v) (*(p) = (v))
#define VLOADM(p, k) ((k) ? *(p) : 0.0f)
#define VSTOREM(p, k, v) do { if (k) *(p) = (v); } while (0)
#define VSEL(k, a, b) ((k) ? (a) : (b))
KV_INLINE float kv_add(float a, float b) { return a + b; }
KV_INLINE float kv_sub(float a, float b) { return a - b; }
KV_INLINE float kv_mul(float a, float b) { return a * b; }
KV_INLINE float kv_div(float a, float b) { return a / b; }
KV_INLINE float kv_max(float a, float b) { return a > b ? a : b; }
KV_INLINE float kv_min(float a, float b) { return a < b ? a : b; }
#define KV_ANY_GT(a, b) ((a) > (b))
#define KV_ANY_NE(a, b) (!((a) == (b)))
KV_INLINE float kv_fma(float a, float b, float c) { return a * b + c; }
KV_INLINE float kv_fnma(float a, float b, float c) { return c - a * b; }
KV_INLINE float kv_rcp(float a) { return 1.0f / a; }
#define VADD kv_add
#define VSUB kv_sub
#define VMUL kv_mul
#define VDIV kv_div
#define VMAX kv_max
#define VMIN kv_min
#define VFMA kv_fma
#define VFNMA kv_fnma
#define VRCP14 kv_rcp
#define VROUND(v) nearbyintf(v)
#define VSCALEF(p, n) ldexpf(p, (int)floorf(n))
#define VHSUM(v) (v)
#define VHMAX(v) (v)
#endif

#if HAVE_STREAM
#define KV_SFENCE() _mm_sfence()
#else
#define KV_SFENCE() ((void)0)
#endif
#define KV_PREFETCH(p, hint) _mm_prefetch((const char*)(p), (hint) ? _MM_HINT_T1 : _MM_HINT_T0)

/* elements to peel so that p + head is 64-byte aligned (0 when streaming is off) */
KV_INLINE int64_t kv_head(const float* p, int64_t n, int nt) {
  if (!nt || !HAVE_STREAM) return 0;
  int64_t h = (int64_t)(((64 - ((uintptr_t)p & 63)) & 63) >> 2);
  return h < n ? h : n;
}

/* shared argument checks */
KV_INLINE int kv_check_f32(const kevo_tensor* t) {
  if (t->dtype != KEVO_F32) return KEVO_ERR_UNSUPPORTED;
  if (!kevo_is_contiguous(t)) return KEVO_ERR_UNSUPPORTED;
  if (t->rank < 1 || t->rank > KEVO_MAX_RANK) return KEVO_ERR_UNSUPPORTED;
  return KEVO_OK;
}

/* ---- exp kernels. All clamp the argument from below (so -inf gives 0) and
 * use scalef (AVX-512) for the 2^n scaling, which also handles underflow.
 * EXP selects the 2^t flavour used by kv_exp2 (and kv_exp):
 *   0: polynomial degree 5 on [-1/2,1/2]           (~4e-7 rel, 3-4 ulp)
 *   1: polynomial degree 6 on [-1/2,1/2]           (~3e-9 rel, ~1 ulp total)
 *   2: 32-entry table 2^(i/32) + degree-2 minimax   (~5e-8 rel, ~1 ulp total)
 *   3: 16-entry table 2^(i/16) + degree-3 Taylor    (~1e-8 rel, ~1 ulp total)
 * The table flavours need fewer FMAs: one in-register permute replaces the
 * polynomial's upper terms. */
#ifndef EXP
#define EXP 1
#endif
static const float kv_tab32[32] __attribute__((aligned(64))) = {1.000000000e+00f, 1.021897149e+00f, 1.044273782e+00f, 1.067140401e+00f, 1.090507733e+00f, 1.114386743e+00f, 1.138788635e+00f, 1.163724859e+00f, 1.189207115e+00f, 1.215247360e+00f, 1.241857812e+00f, 1.269050957e+00f, 1.296839555e+00f, 1.325236643e+00f, 1.354255547e+00f, 1.383909882e+00f, 1.414213562e+00f, 1.445180807e+00f, 1.476826146e+00f, 1.509164428e+00f, 1.542210825e+00f, 1.575980845e+00f, 1.610490332e+00f, 1.645755478e+00f, 1.681792831e+00f, 1.718619298e+00f, 1.756252160e+00f, 1.794709075e+00f, 1.834008086e+00f, 1.874167634e+00f, 1.915206561e+00f, 1.957144124e+00f};
static const float kv_tab16[16] __attribute__((aligned(64))) = {1.000000000e+00f, 1.044273782e+00f, 1.090507733e+00f, 1.138788635e+00f, 1.189207115e+00f, 1.241857812e+00f, 1.296839555e+00f, 1.354255547e+00f, 1.414213562e+00f, 1.476826146e+00f, 1.542210825e+00f, 1.610490332e+00f, 1.681792831e+00f, 1.756252160e+00f, 1.834008086e+00f, 1.915206561e+00f};
#if VL == 16
#define KV_BITS(v) _mm512_castps_si512(v)
KV_INLINE vf kv_tab32_lookup(vf tm) {
  return _mm512_permutex2var_ps(_mm512_load_ps(kv_tab32), KV_BITS(tm), _mm512_load_ps(kv_tab32 + 16));
}
KV_INLINE vf kv_tab16_lookup(vf tm) { return _mm512_permutexvar_ps(KV_BITS(tm), _mm512_load_ps(kv_tab16)); }
#elif VL == 8 && !defined(KV_AVX2_ONLY)
#define KV_BITS(v) _mm256_castps_si256(v)
KV_INLINE vf kv_tab32_lookup(vf tm) {
  __m256i i = KV_BITS(tm);
  vf a = _mm256_permutex2var_ps(_mm256_load_ps(kv_tab32), i, _mm256_load_ps(kv_tab32 + 8));
  vf b = _mm256_permutex2var_ps(_mm256_load_ps(kv_tab32 + 16), i, _mm256_load_ps(kv_tab32 + 24));
  return _mm256_mask_blend_ps(_mm256_test_epi32_mask(i, _mm256_set1_epi32(16)), a, b);
}
KV_INLINE vf kv_tab16_lookup(vf tm) {
  return _mm256_permutex2var_ps(_mm256_load_ps(kv_tab16), KV_BITS(tm), _mm256_load_ps(kv_tab16 + 8));
}
#elif VL == 8
KV_INLINE vf kv_tab32_lookup(vf tm) {
  return _mm256_i32gather_ps(kv_tab32, _mm256_and_si256(_mm256_castps_si256(tm), _mm256_set1_epi32(31)), 4);
}
KV_INLINE vf kv_tab16_lookup(vf tm) {
  return _mm256_i32gather_ps(kv_tab16, _mm256_and_si256(_mm256_castps_si256(tm), _mm256_set1_epi32(15)), 4);
}
#else
KV_INLINE vf kv_tab32_lookup(vf tm) { uint32_t b; memcpy(&b, &tm, 4); return kv_tab32[b & 31]; }
KV_INLINE vf kv_tab16_lookup(vf tm) { uint32_t b; memcpy(&b, &tm, 4); return kv_tab16[b & 15]; }
#endif

/* 2^t for t in [-inf, ~2^17); results below 2^-149 flush toward 0. */
KV_INLINE vf kv_exp2(vf t) {
  t = VMAX(t, VSET1(-150.0f));
#if EXP == 2 || EXP == 3
#if EXP == 2
  const float magic = 0x1.8p18f; /* ulp 1/32: low mantissa bits = round(32 t) */
#else
  const float magic = 0x1.8p19f; /* ulp 1/16 */
#endif
  vf tm = VADD(t, VSET1(magic));
  vf kq = VSUB(tm, VSET1(magic)); /* t rounded to a multiple of 1/32 (1/16) */
  vf f = VSUB(t, kq);             /* |f| <= 1/64 (1/32) */
#if EXP == 2
  vf T = kv_tab32_lookup(tm);     /* 2^(frac(kq)) via index = low 5 bits */
  vf q = VFMA(VSET1(2.402318191897e-01f), f, VSET1(6.931573991253e-01f));
#else
  vf T = kv_tab16_lookup(tm);
  vf q = VFMA(VSET1(5.550410866e-02f), f, VSET1(2.402265070e-01f));
  q = VFMA(q, f, VSET1(6.931471806e-01f));
#endif
  vf r = VFMA(VMUL(T, f), q, T);  /* T * 2^f */
  return VSCALEF(r, kq);          /* scalef uses floor(kq) = the integer part */
#else
  vf n = VROUND(t);
  vf f = VSUB(t, n);
#if EXP == 0
  vf p = VSET1(1.1125507682e-03f);
  p = VFMA(p, f, VSET1(9.6662825247e-03f));
  p = VFMA(p, f, VSET1(5.5574004733e-02f));
  p = VFMA(p, f, VSET1(2.4022350651e-01f));
  p = VFMA(p, f, VSET1(6.9314283061e-01f));
#else
  vf p = VSET1(1.5594677549e-04f);
  p = VFMA(p, f, VSET1(1.3406643905e-03f));
  p = VFMA(p, f, VSET1(9.6176929749e-03f));
  p = VFMA(p, f, VSET1(5.5503105510e-02f));
  p = VFMA(p, f, VSET1(2.4022652783e-01f));
  p = VFMA(p, f, VSET1(6.9314721497e-01f));
#endif
  p = VFMA(p, f, VSET1(1.0f));
  return VSCALEF(p, n);
#endif
}

/* e^x: the same flavours with Cody-Waite reduction x = k ln2 + r (two FMAs),
 * polynomial in r. Used where the argument is not pre-scaled (swiglu). */
KV_INLINE vf kv_exp(vf x) {
  x = VMAX(x, VSET1(-104.0f));
#if EXP == 2 || EXP == 3
#if EXP == 2
  const float magic = 0x1.8p18f;
#else
  const float magic = 0x1.8p19f;
#endif
  vf tm = VFMA(x, VSET1(1.44269504088896341f), VSET1(magic));
  vf kq = VSUB(tm, VSET1(magic));
  vf r = VFNMA(kq, VSET1(0.693145751953125f), x);
  r = VFNMA(kq, VSET1(1.428606765330187e-06f), r); /* |r| <= ln2/64 (ln2/32) */
#if EXP == 2
  vf T = kv_tab32_lookup(tm);
  vf q = VFMA(VSET1(5.0001105671e-01f), r, VSET1(1.0000147423e+00f));
#else
  vf T = kv_tab16_lookup(tm);
  vf q = VFMA(VSET1(1.666666716e-01f), r, VSET1(0.5f));
  q = VFMA(q, r, VSET1(1.0f));
#endif
  vf e = VFMA(VMUL(T, r), q, T);
  return VSCALEF(e, kq);
#else
  vf n = VROUND(VMUL(x, VSET1(1.44269504088896341f)));
  vf r = VFNMA(n, VSET1(0.693145751953125f), x);
  r = VFNMA(n, VSET1(1.428606765330187e-06f), r);
#if EXP == 0
  vf p = VSET1(6.9533250614e-03f);
  p = VFMA(p, r, VSET1(4.1875271932e-02f));
  p = VFMA(p, r, VSET1(1.6687654923e-01f));
  p = VFMA(p, r, VSET1(4.9999375495e-01f));
  p = VFMA(p, r, VSET1(9.9999372435e-01f));
#else
  vf p = VSET1(1.4061240414e-03f);
  p = VFMA(p, r, VSET1(8.3790111626e-03f));
  p = VFMA(p, r, VSET1(4.1664777297e-02f));
  p = VFMA(p, r, VSET1(1.6666365441e-01f));
  p = VFMA(p, r, VSET1(5.0000004344e-01f));
  p = VFMA(p, r, VSET1(1.0000000496e+00f));
#endif
  p = VFMA(p, r, VSET1(1.0f));
  return VSCALEF(p, n);
#endif
}

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
