/* kevo_cpu_exp.h — vectorised exp2 and exp for kevo's CPU kernels, on the
 * vector layer of kevo_cpu_vec.h (included here; define VW first). Shipped
 * with kevo in targets/cpu/include; kevo inlines it into the kernel.
 *
 * Define EXP (default 1) to pick the 2^t flavour:
 *   0: polynomial degree 5 (~4e-7 rel), 1: polynomial degree 6 (~3e-9 rel),
 *   2: 32-entry table + degree 2 (~5e-8 rel), 3: 16-entry table + degree 3.
 *   vf kv_exp2(vf t)    2^t; t below the fp32 range gives 0 (-inf too)
 *   vf kv_exp(vf x)     e^x, the same way
 */
#ifndef KEVO_CPU_EXP_H
#define KEVO_CPU_EXP_H

#include "kevo_cpu_vec.h"

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

#endif /* KEVO_CPU_EXP_H */
