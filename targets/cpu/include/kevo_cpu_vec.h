/* kevo_cpu_vec.h — kevo's fp32 vector layer for CPU kernels (shipped with
 * kevo in targets/cpu/include; a kernel includes it by name and kevo inlines
 * it, so the stored, compiled and exported kernel is one file).
 *
 * Define VW (256 or 512: the vector width in bits) before including it; it
 * picks the widest layer the compiler targets: 512-bit AVX-512, 256-bit
 * AVX-512VL (mask registers), 256-bit AVX2+FMA, or scalar. Needs
 * kevo_kernel.h (the ABI) included first.
 *
 *   VL                  floats per vector (16, 8 or 1)
 *   HAVE_STREAM         1 when non-temporal stores exist
 *   vf, vm              a vector of floats; a lane mask
 *   KV_INLINE           static inline, always inlined
 *   vm vmask_n(n)       mask of the first n lanes (0 <= n <= VL)
 *   VSET1(a) VZERO()    broadcast; zero
 *   VLOAD(p) VSTORE(p, v) VSTREAM(p, v)   unaligned load / store;
 *                       non-temporal store (p 64-byte aligned)
 *   VLOADM(p, k) VSTOREM(p, k, v)         masked load (zeros) / store
 *   VSEL(k, a, b)       lanes of a where k, else b
 *   VADD VSUB VMUL VDIV VMAX VMIN         lane-wise
 *   VFMA(a, b, c) = a*b+c   VFNMA = c-a*b   VFMS = a*b-c   (fused)
 *   VRCP14(v)           approximate 1/v;  VROUND(v) round to nearest
 *   VSCALEF(p, n)       p * 2^floor(n)
 *   VHSUM(v) VHMAX(v)   horizontal sum / max to a float
 *   KV_ANY_GT(a, b) KV_ANY_NE(a, b)       any lane a > b / a != b
 *   KV_SFENCE()         fence after streaming stores
 *   KV_PREFETCH(p, hint) prefetch into L1 (hint 0) or L2 (hint 1)
 *   int64_t kv_head(p, n, nt)  floats to peel so p + head is 64-byte aligned
 *                       (0 unless nt and HAVE_STREAM)
 *   int kv_check_f32(t) KEVO_OK for a contiguous fp32 tensor of rank 1..max,
 *                       else KEVO_ERR_UNSUPPORTED
 */
#ifndef KEVO_CPU_VEC_H
#define KEVO_CPU_VEC_H

#include <immintrin.h>
#include <math.h>
#include <stdint.h>

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
#define VFMS _mm512_fmsub_ps
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
#define VFMS _mm256_fmsub_ps
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
#define VFMS _mm256_fmsub_ps
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
#define VFMS(a, b, c) ((a) * (b) - (c))
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

#endif /* KEVO_CPU_VEC_H */
