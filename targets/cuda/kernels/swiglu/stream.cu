/* swiglu / stream.cu — fast bf16 SwiGLU: y = g / (1 + exp(-g)) * u.
 *
 * Purely elementwise and bandwidth-bound, so the contiguous tensors are one
 * flat stream (any rank; ragged rows do not matter). The stream is cut into
 * tiles of THREADS * UNROLL vectors of VEC bytes; a thread loads its UNROLL
 * vectors of g and of u (2*UNROLL independent loads in flight, coalesced:
 * consecutive threads take consecutive vectors) before computing and storing.
 * Full tiles run unpredicated; the last partial tile is predicated per vector;
 * the numel % (VEC/2) trailing elements are done by block 0 with scalar
 * accesses (the bases are >= 256-byte aligned, so the vectors are aligned).
 * fp32 math.
 * Knobs:
 *   THREADS threads per block.
 *   VEC     bytes per access: 4, 8 or 16 (2, 4, 8 bf16 elements).
 *   UNROLL  vectors per thread per tile (loads in flight per input).
 *   GRID    0: one block per tile; k > 0: persistent grid of k blocks per SM
 *           looping over the tiles (grid-stride).
 *   LD      loads of g, u: 0 plain ld.global, 1 ld.global.nc (__ldg),
 *           2 ld.global.cs (__ldcs, evict-first), 3 ld.global.nc.L1::no_allocate,
 *           4 ld.global.L1::evict_last.L2::cache_hint under an L2 evict_last
 *           policy (the default), 5 ld.global.L1::no_allocate.L2::cache_hint
 *           under an L2 evict_first policy. Only with VEC 16. On the H200 the
 *           default layout read 1.013x torch.compile with LD 4 against
 *           0.996-1.000x with plain loads, and 0.89x with LD 3 or 5
 *           (bench/results/2026-12-01-h200-l2-policy-loads.md).
 *   ST      stores of y: 0 plain, 1 st.global.cs (__stcs, streaming).
 *   EXP     0: expf (accurate), 1: __expf (ex2.approx of g*log2(e)).
 *   DIV     0: IEEE division g / (1 + e); 1: g * rcp.approx(1 + e)
 *           (rcp(inf) = 0, so g -> -inf still gives -0).
 */
// @kevo knob THREADS 256 {128, 256, 512, 1024}
// @kevo knob VEC 16 {4, 8, 16}
// @kevo knob UNROLL 2 {1, 2, 4, 8}
// @kevo require THREADS * (UNROLL * VEC / 2 + 24) <= 65536
// @kevo knob GRID 0 {0, 1, 2, 4, 8, 16, 32}
// @kevo require GRID == 0 || (THREADS * GRID >= 1024 && THREADS * GRID <= 4096)
// @kevo knob LD 4 {0, 1, 2, 3, 4, 5}
// @kevo require LD < 4 || VEC == 16
// @kevo knob ST 0 {0, 1}
// @kevo knob EXP 1 {0, 1}
// @kevo knob DIV 0 {0, 1}
#ifndef THREADS
#define THREADS 256
#endif
#ifndef VEC
#define VEC 16
#endif
#ifndef UNROLL
#define UNROLL 2
#endif
#ifndef GRID
#define GRID 0
#endif
#ifndef LD
#define LD 4
#endif
#ifndef ST
#define ST 0
#endif
#ifndef EXP
#define EXP 1
#endif
#ifndef DIV
#define DIV 0
#endif

#include "kevo_kernel.h"
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <limits.h>
#include <stdint.h>

#define VE (VEC / 2) /* bf16 elements per vector */

static_assert(VEC == 4 || VEC == 8 || VEC == 16, "VEC must be 4, 8 or 16");
static_assert(THREADS >= 32 && THREADS <= 1024 && THREADS % 32 == 0, "THREADS");

struct Raw {
  uint32_t w[VE / 2]; /* VE bf16 values, 2 per word (low half = even element) */
};

#if LD >= 4
/* an L2 cache-hint policy for every line it touches: evict_last (LD 4) or evict_first (LD 5) */
__device__ __forceinline__ uint64_t l2_policy() {
  uint64_t pol;
#if LD == 4
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
#else
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
#endif
  return pol;
}
#endif

__device__ __forceinline__ uint4 ldh(const uint4* p) {
#if LD == 0
  return *p;
#elif LD == 1
  return __ldg(p);
#elif LD == 2
  return __ldcs(p);
#elif LD == 4
  uint4 v;
  asm volatile("ld.global.L1::evict_last.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(l2_policy()));
  return v;
#elif LD == 5
  uint4 v;
  asm volatile("ld.global.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(l2_policy()));
  return v;
#else
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
#endif
}
__device__ __forceinline__ uint2 ldh(const uint2* p) {
#if LD == 0 || LD >= 4 /* LD 4, 5 only with VEC 16 */
  return *p;
#elif LD == 1
  return __ldg(p);
#elif LD == 2
  return __ldcs(p);
#else
  uint2 v;
  asm("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
#endif
}
__device__ __forceinline__ unsigned int ldh(const unsigned int* p) {
#if LD == 0 || LD >= 4 /* LD 4, 5 only with VEC 16 */
  return *p;
#elif LD == 1
  return __ldg(p);
#elif LD == 2
  return __ldcs(p);
#else
  unsigned int v;
  asm("ld.global.nc.L1::no_allocate.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
#endif
}

__device__ __forceinline__ Raw ld_vec(const __nv_bfloat16* p) {
  Raw r;
#if VE == 8
  uint4 v = ldh(reinterpret_cast<const uint4*>(p));
  r.w[0] = v.x; r.w[1] = v.y; r.w[2] = v.z; r.w[3] = v.w;
#elif VE == 4
  uint2 v = ldh(reinterpret_cast<const uint2*>(p));
  r.w[0] = v.x; r.w[1] = v.y;
#else
  r.w[0] = ldh(reinterpret_cast<const unsigned int*>(p));
#endif
  return r;
}

__device__ __forceinline__ void st_vec(__nv_bfloat16* p, const Raw& r) {
#if VE == 8
  const uint4 v = make_uint4(r.w[0], r.w[1], r.w[2], r.w[3]);
#if ST == 1
  __stcs(reinterpret_cast<uint4*>(p), v);
#else
  *reinterpret_cast<uint4*>(p) = v;
#endif
#elif VE == 4
  const uint2 v = make_uint2(r.w[0], r.w[1]);
#if ST == 1
  __stcs(reinterpret_cast<uint2*>(p), v);
#else
  *reinterpret_cast<uint2*>(p) = v;
#endif
#else
#if ST == 1
  __stcs(reinterpret_cast<unsigned int*>(p), r.w[0]);
#else
  *reinterpret_cast<unsigned int*>(p) = r.w[0];
#endif
#endif
}

__device__ __forceinline__ float silu_mul(float g, float u) {
#if EXP == 1
  const float e = __expf(-g);
#else
  const float e = expf(-g);
#endif
  const float d = 1.0f + e;
#if DIV == 1
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
  return g * r * u;
#else
  return g / d * u;
#endif
}

__device__ __forceinline__ Raw compute(const Raw& a, const Raw& b) {
  Raw r;
#pragma unroll
  for (int j = 0; j < VE / 2; ++j) {
    const float g0 = __uint_as_float(a.w[j] << 16), g1 = __uint_as_float(a.w[j] & 0xffff0000u);
    const float u0 = __uint_as_float(b.w[j] << 16), u1 = __uint_as_float(b.w[j] & 0xffff0000u);
    const float y0 = silu_mul(g0, u0), y1 = silu_mul(g1, u1);
    uint32_t w;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(y1), "f"(y0)); /* y1 -> upper half */
    r.w[j] = w;
  }
  return r;
}

/* nvec = numel / VE full vectors; the numel % VE tail is done by block 0 */
__global__ void __launch_bounds__(THREADS) swiglu_stream(const __nv_bfloat16* g, const __nv_bfloat16* u,
                                                         __nv_bfloat16* y, int64_t nvec, int64_t numel) {
  constexpr int64_t TILE = (int64_t)THREADS * UNROLL;
  const int64_t ntiles = (nvec + TILE - 1) / TILE;
  for (int64_t t = blockIdx.x; t < ntiles; t += gridDim.x) {
    const int64_t base = t * TILE + threadIdx.x;
    Raw a[UNROLL], b[UNROLL];
    if ((t + 1) * TILE <= nvec) {
#pragma unroll
      for (int k = 0; k < UNROLL; ++k) {
        const int64_t off = (base + (int64_t)k * THREADS) * VE;
        a[k] = ld_vec(g + off);
        b[k] = ld_vec(u + off);
      }
#pragma unroll
      for (int k = 0; k < UNROLL; ++k) st_vec(y + (base + (int64_t)k * THREADS) * VE, compute(a[k], b[k]));
    } else {
#pragma unroll
      for (int k = 0; k < UNROLL; ++k) {
        const int64_t v = base + (int64_t)k * THREADS;
        if (v < nvec) {
          a[k] = ld_vec(g + v * VE);
          b[k] = ld_vec(u + v * VE);
        }
      }
#pragma unroll
      for (int k = 0; k < UNROLL; ++k) {
        const int64_t v = base + (int64_t)k * THREADS;
        if (v < nvec) st_vec(y + v * VE, compute(a[k], b[k]));
      }
    }
  }
  if (blockIdx.x == 0) {
    const int64_t i = nvec * VE + threadIdx.x; /* fewer than VE <= 8 < THREADS elements */
    if (i < numel) {
      const float r = silu_mul(__bfloat162float(g[i]), __bfloat162float(u[i]));
      y[i] = __float2bfloat16_rn(r);
    }
  }
}

static int num_sms() {
  int dev = 0, v = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 132;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || v <= 0) return 132;
  return v;
}

extern "C" KEVO_EXPORT int kevo_launch(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                                       const double* scalars, int n_scalars, cudaStream_t stream) {
  (void)scalars;
  (void)n_scalars;
  if (n_in != 2 || n_out != 1 || !in || !out) return KEVO_ERR_ARGS;
  for (int i = 0; i < 3; ++i) {
    const kevo_tensor* t = i < 2 ? &in[i] : &out[0];
    if (t->dtype != KEVO_BF16) return KEVO_ERR_UNSUPPORTED;
    if (t->rank < 1 || t->rank > KEVO_MAX_RANK || !kevo_is_contiguous(t)) return KEVO_ERR_UNSUPPORTED;
  }
  const int64_t numel = kevo_numel(&in[0]);
  if (kevo_numel(&in[1]) != numel || kevo_numel(&out[0]) != numel) return KEVO_ERR_ARGS;
  if (numel == 0) return KEVO_OK;
  const int64_t nvec = numel / VE;
  const int64_t TILE = (int64_t)THREADS * UNROLL;
  int64_t grid = (nvec + TILE - 1) / TILE;
  if (GRID > 0) {
    const int64_t cap = (int64_t)GRID * num_sms();
    if (grid > cap) grid = cap;
  }
  if (grid > INT_MAX) grid = INT_MAX;
  if (grid < 1) grid = 1; /* the tail alone still needs block 0 */
  swiglu_stream<<<(unsigned int)grid, THREADS, 0, stream>>>(static_cast<const __nv_bfloat16*>(in[0].data),
                                                            static_cast<const __nv_bfloat16*>(in[1].data),
                                                            static_cast<__nv_bfloat16*>(out[0].data), nvec, numel);
  return cudaGetLastError() == cudaSuccess ? KEVO_OK : KEVO_ERR_RUNTIME;
}
