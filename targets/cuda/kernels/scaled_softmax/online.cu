/* scaled_softmax / online.cu — fast bf16 softmax(x * scale) over the last dim.
 *
 * A group of TPR threads owns one row; a block holds ROWS such groups, so
 * TPR = 32 is warp-per-row, ROWS > 1 is several rows per block, and ROWS = 1
 * is block-per-row. Inactive groups of the last block (rows % ROWS != 0) do
 * no memory access but still join every barrier. Loads and stores use VEC-byte vectors
 * (coalesced: consecutive threads of a group take consecutive vectors) when
 * the row length N is a multiple of the vector's element count, else a scalar
 * (2-byte) path. Math is fp32: t = x * c with c = scale * log2(e) folded into
 * one FMA (x*c - max), and exp2 is the hardware ex2.approx.ftz (rel. error
 * ~2^-22, far below bf16's 2^-9). The row max is subtracted, so x*scale ~ 80
 * is safe.
 *
 * Online softmax: each thread keeps a running (max m, sum s) pair, with the
 * sum rescaled by exp2(m_old - m_new) whenever its max grows (once per chunk
 * of UNROLL vectors), and the group combines (m, s) pairs in ONE reduction
 * (warp shuffles, then shared memory across the group's warps).
 *
 * Knobs:
 *   TPR     threads per row (32 = one warp per row ... 1024 = block per row).
 *   ROWS    rows (thread groups) per block; block size = TPR * ROWS.
 *   VEC     bytes per global access: 4, 8 or 16 (2, 4, 8 bf16 elements).
 *   CACHE   where the row lives between reading it and writing y:
 *             1: registers (REG_ELEMS elements per thread; the whole row is
 *                loaded at once, one read of x), used when N <= TPR*REG_ELEMS
 *                and N % (VEC/2) == 0, else falls back to 0;
 *             2: shared memory (ROWS * N * 2 bytes of dynamic shared memory;
 *                each thread re-reads only what it wrote, so no barrier),
 *                falls back to 0 when it does not fit;
 *             0: none: the output pass re-reads x from L1/L2.
 *   REG_ELEMS (CACHE 1) bf16 elements of the row cached per thread (raw bf16
 *           bits, 2 per register; ONLINE 0 also keeps REG_ELEMS fp32 exps).
 *   PIN     (CACHE 1) 1: hide the cached raw bf16 words from the compiler
 *           between passes (empty asm), so it re-unpacks them (1 ALU op per
 *           element) instead of keeping fp32 copies: ~REG_ELEMS/2 registers
 *           for the cache instead of ~2*REG_ELEMS. 0: let the compiler choose.
 *   UNROLL  (CACHE 0/2) vectors per thread loaded before their first use in
 *           the streaming passes (loads in flight). CACHE 1 uses 2 for its
 *           fallback (rows that do not fit / ragged rows).
 *   ONLINE  1: single statistics pass with the online (max, rescaled sum)
 *              and one combined reduction; the output pass recomputes exp
 *              (2 exp2 per element).
 *           0: max pass + reduction, then exp/sum pass + reduction, then the
 *              output pass; with CACHE 1 the exps stay in fp32 registers
 *              (1 exp2 per element), else they are recomputed.
 *   LD      first read of x: 0 plain ld.global, 1 ld.global.nc (__ldg),
 *           2 ld.global.cs (__ldcs, evict-first), 3 ld.global.nc.L1::no_allocate.
 *           (Re-reads of x with CACHE 0 are always plain loads.)
 *   ST      stores of y: 0 plain, 1 st.global.cs (__stcs, streaming).
 *   MINB    __launch_bounds__ minimum resident blocks per SM (caps registers at
 *           65536 / (TPR*ROWS*MINB); points where that cap cannot bind are pruned).
 *   GRID    0: one block per ROWS rows; k > 0: persistent grid of k blocks per
 *           SM looping over the row groups (grid-stride).
 * Register-budget requires: estimated registers per thread (streaming
 * ~UNROLL*VEC + 40, register cache as above) times TPR*ROWS*MINB must fit
 * the 64K-register file, so no admitted point spills.
 * The knob space is pruned for the task shape (16384 rows of N = 4096):
 * register caches smaller than a 4096-element row are never used there, so
 * CACHE 1 requires TPR*REG_ELEMS >= 4096 (and at most 4x that, to not waste
 * registers on predicated-off slots).
 */
// @kevo knob TPR 256 {32, 64, 128, 256, 512, 1024}
// @kevo knob ROWS 1 {1, 2, 4, 8, 16}
// @kevo require TPR * ROWS <= 1024
// @kevo knob VEC 16 {4, 8, 16}
// @kevo knob CACHE 1 {0, 1, 2}
// @kevo knob REG_ELEMS 16 {8, 16, 32, 64, 128}
// @kevo require CACHE == 1 || REG_ELEMS == 8
// @kevo require CACHE != 1 || (TPR * REG_ELEMS >= 4096 && TPR * REG_ELEMS <= 16384)
// @kevo require REG_ELEMS * 2 >= VEC
// @kevo knob PIN 1 {0, 1}
// @kevo require CACHE == 1 || PIN == 0
// @kevo knob UNROLL 2 {1, 2, 4, 8}
// @kevo require CACHE != 1 || UNROLL == 2
// @kevo knob ONLINE 1 {0, 1}
// @kevo knob LD 0 {0, 1, 2, 3}
// @kevo knob ST 0 {0, 1}
// @kevo knob MINB 1 {1, 2, 4}
// @kevo require TPR * ROWS * MINB <= 2048
// @kevo require MINB == 1 || TPR * ROWS * MINB >= 512
// @kevo require TPR * ROWS * MINB * (UNROLL * VEC + 40) <= 65536
// @kevo require CACHE != 1 || PIN == 0 || ONLINE == 0 || TPR * ROWS * MINB * (REG_ELEMS / 2 + 40) <= 65536
// @kevo require CACHE != 1 || PIN == 0 || ONLINE == 1 || TPR * ROWS * MINB * (REG_ELEMS + 40) <= 65536
// @kevo require CACHE != 1 || PIN == 1 || TPR * ROWS * MINB * (2 * REG_ELEMS + 16) <= 65536
// @kevo knob GRID 0 {0, 1, 2, 4, 8}
// @kevo require GRID == 0 || (TPR * ROWS * GRID >= 1024 && TPR * ROWS * GRID <= 2048)
#ifndef TPR
#define TPR 256
#endif
#ifndef ROWS
#define ROWS 1
#endif
#ifndef VEC
#define VEC 16
#endif
#ifndef CACHE
#define CACHE 1
#endif
#ifndef REG_ELEMS
#define REG_ELEMS 16
#endif
#ifndef UNROLL
#define UNROLL 2
#endif
#ifndef ONLINE
#define ONLINE 1
#endif
#ifndef PIN
#define PIN 1
#endif
#ifndef LD
#define LD 0
#endif
#ifndef ST
#define ST 0
#endif
#ifndef MINB
#define MINB 1
#endif
#ifndef GRID
#define GRID 0
#endif

#include "kevo_kernel.h"
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <float.h>
#include <limits.h>
#include <stdint.h>

#define BLOCK (TPR * ROWS)
#define NWG (TPR / 32) /* warps per row group */
#define VE_K (VEC / 2) /* bf16 elements per vector */

static_assert(TPR % 32 == 0 && TPR >= 32 && TPR <= 1024, "TPR must be a multiple of 32 in [32, 1024]");
static_assert((TPR & (TPR - 1)) == 0, "TPR must be a power of two");
static_assert(BLOCK <= 1024, "block too large");
static_assert(VEC == 4 || VEC == 8 || VEC == 16, "VEC must be 4, 8 or 16");
static_assert(REG_ELEMS % VE_K == 0, "REG_ELEMS must hold whole vectors");

enum { MODE_GLOBAL = 0, MODE_REG = 1, MODE_SMEM = 2 };

/* ---------------------------------------------------------------- helpers */

__device__ __forceinline__ float ex2(float v) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
  return r;
}

/* VE bf16 values as raw bits: 2 per 32-bit word (VE = 1: low 16 bits). */
template <int VE>
struct Raw {
  uint32_t w[VE >= 2 ? VE / 2 : 1];
};

/* first (hinted) read of x */
__device__ __forceinline__ uint4 ldh(const uint4* p) {
#if LD == 0
  return *p;
#elif LD == 1
  return __ldg(p);
#elif LD == 2
  return __ldcs(p);
#else
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
#endif
}
__device__ __forceinline__ uint2 ldh(const uint2* p) {
#if LD == 0
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
#if LD == 0
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
__device__ __forceinline__ unsigned short ldh(const unsigned short* p) {
#if LD == 0
  return *p;
#elif LD == 1
  return __ldg(p);
#elif LD == 2
  return __ldcs(p);
#else
  unsigned short v;
  asm("ld.global.nc.L1::no_allocate.u16 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
#endif
}

template <int VE>
__device__ __forceinline__ Raw<VE> ld_first(const __nv_bfloat16* p) {
  Raw<VE> r;
  if constexpr (VE == 8) {
    uint4 v = ldh(reinterpret_cast<const uint4*>(p));
    r.w[0] = v.x; r.w[1] = v.y; r.w[2] = v.z; r.w[3] = v.w;
  } else if constexpr (VE == 4) {
    uint2 v = ldh(reinterpret_cast<const uint2*>(p));
    r.w[0] = v.x; r.w[1] = v.y;
  } else if constexpr (VE == 2) {
    r.w[0] = ldh(reinterpret_cast<const unsigned int*>(p));
  } else {
    r.w[0] = ldh(reinterpret_cast<const unsigned short*>(p));
  }
  return r;
}

/* plain load: re-reads of x (global) and reads of the shared-memory copy */
template <int VE>
__device__ __forceinline__ Raw<VE> ld_plain(const __nv_bfloat16* p) {
  Raw<VE> r;
  if constexpr (VE == 8) {
    uint4 v = *reinterpret_cast<const uint4*>(p);
    r.w[0] = v.x; r.w[1] = v.y; r.w[2] = v.z; r.w[3] = v.w;
  } else if constexpr (VE == 4) {
    uint2 v = *reinterpret_cast<const uint2*>(p);
    r.w[0] = v.x; r.w[1] = v.y;
  } else if constexpr (VE == 2) {
    r.w[0] = *reinterpret_cast<const unsigned int*>(p);
  } else {
    r.w[0] = *reinterpret_cast<const unsigned short*>(p);
  }
  return r;
}

/* plain store (shared-memory copy) */
template <int VE>
__device__ __forceinline__ void st_plain(__nv_bfloat16* p, const Raw<VE>& r) {
  if constexpr (VE == 8) {
    *reinterpret_cast<uint4*>(p) = make_uint4(r.w[0], r.w[1], r.w[2], r.w[3]);
  } else if constexpr (VE == 4) {
    *reinterpret_cast<uint2*>(p) = make_uint2(r.w[0], r.w[1]);
  } else if constexpr (VE == 2) {
    *reinterpret_cast<unsigned int*>(p) = r.w[0];
  } else {
    *reinterpret_cast<unsigned short*>(p) = (unsigned short)r.w[0];
  }
}

/* store of y, with the ST hint */
template <int VE>
__device__ __forceinline__ void st_out(__nv_bfloat16* p, const Raw<VE>& r) {
#if ST == 1
  if constexpr (VE == 8) {
    __stcs(reinterpret_cast<uint4*>(p), make_uint4(r.w[0], r.w[1], r.w[2], r.w[3]));
  } else if constexpr (VE == 4) {
    __stcs(reinterpret_cast<uint2*>(p), make_uint2(r.w[0], r.w[1]));
  } else if constexpr (VE == 2) {
    __stcs(reinterpret_cast<unsigned int*>(p), r.w[0]);
  } else {
    __stcs(reinterpret_cast<unsigned short*>(p), (unsigned short)r.w[0]);
  }
#else
  st_plain<VE>(p, r);
#endif
}

/* element i of a raw vector as fp32 (i a compile-time constant after unrolling) */
template <int VE>
__device__ __forceinline__ float elem(const Raw<VE>& r, int i) {
  if constexpr (VE == 1) {
    return __uint_as_float(r.w[0] << 16);
  } else {
    const uint32_t w = r.w[i >> 1];
    return (i & 1) ? __uint_as_float(w & 0xffff0000u) : __uint_as_float(w << 16);
  }
}

/* PIN: make the raw words opaque so the compiler re-unpacks them in the next
 * pass instead of keeping fp32 copies of the whole cached row live */
template <int VE, int NV>
__device__ __forceinline__ void pin(Raw<VE> (&buf)[NV]) {
#if PIN
#pragma unroll
  for (int v = 0; v < NV; ++v) {
#pragma unroll
    for (int j = 0; j < (VE >= 2 ? VE / 2 : 1); ++j) asm volatile("" : "+r"(buf[v].w[j]));
  }
#endif
}

/* fp32 values -> raw bf16 (round to nearest even) */
template <int VE>
__device__ __forceinline__ Raw<VE> pack(const float* f) {
  Raw<VE> r;
  if constexpr (VE == 1) {
    r.w[0] = (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(f[0]));
  } else {
#pragma unroll
    for (int j = 0; j < VE / 2; ++j) {
      uint32_t w;
      /* cvt.rn.bf16x2.f32 d, a, b: a -> upper half, b -> lower half */
      asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(f[2 * j + 1]), "f"(f[2 * j]));
      r.w[j] = w;
    }
  }
  return r;
}

/* ------------------------------------------------------------ reductions */

struct MS {
  float m, s; /* max of t = x*c, sum of exp2(t - m) */
};

/* -FLT_MAX (not -inf) as the empty max: exp2(m_a - m) never sees inf - inf */
struct OpMS {
  typedef MS T;
  static __device__ __forceinline__ MS id() { return MS{-FLT_MAX, 0.0f}; }
  static __device__ __forceinline__ MS comb(MS a, MS b) {
    const float m = fmaxf(a.m, b.m);
    return MS{m, a.s * ex2(a.m - m) + b.s * ex2(b.m - m)};
  }
  static __device__ __forceinline__ MS shfl_xor(MS v, int off) {
    return MS{__shfl_xor_sync(0xffffffffu, v.m, off), __shfl_xor_sync(0xffffffffu, v.s, off)};
  }
  static __device__ __forceinline__ MS shfl0(MS v) {
    return MS{__shfl_sync(0xffffffffu, v.m, 0), __shfl_sync(0xffffffffu, v.s, 0)};
  }
};
struct OpMax {
  typedef float T;
  static __device__ __forceinline__ float id() { return -FLT_MAX; }
  static __device__ __forceinline__ float comb(float a, float b) { return fmaxf(a, b); }
  static __device__ __forceinline__ float shfl_xor(float v, int off) { return __shfl_xor_sync(0xffffffffu, v, off); }
  static __device__ __forceinline__ float shfl0(float v) { return __shfl_sync(0xffffffffu, v, 0); }
};
struct OpSum {
  typedef float T;
  static __device__ __forceinline__ float id() { return 0.0f; }
  static __device__ __forceinline__ float comb(float a, float b) { return a + b; }
  static __device__ __forceinline__ float shfl_xor(float v, int off) { return __shfl_xor_sync(0xffffffffu, v, off); }
  static __device__ __forceinline__ float shfl0(float v) { return __shfl_sync(0xffffffffu, v, 0); }
};

/* Reduce v over the TPR threads of row group g; every thread of the group gets
 * the same result. Must be called by ALL threads of the block (it contains
 * __syncthreads when a group spans several warps); the xor butterfly keeps a
 * warp's lanes bit-identical (each step combines the same two values).
 * red: shared scratch of ROWS * NWG entries (unused when NWG == 1). */
template <class Op>
__device__ __forceinline__ typename Op::T group_reduce(typename Op::T v, typename Op::T* red, int g, int w,
                                                       int lane) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v = Op::comb(v, Op::shfl_xor(v, off));
  if constexpr (NWG > 1) {
    if (lane == 0) red[g * NWG + w] = v;
    __syncthreads();
    typename Op::T t = lane < NWG ? red[g * NWG + lane] : Op::id();
#pragma unroll
    for (int off = NWG / 2; off > 0; off >>= 1) t = Op::comb(t, Op::shfl_xor(t, off));
    v = Op::shfl0(t); /* lanes 0..NWG-1 hold the full result; broadcast lane 0 */
    __syncthreads();  /* red may be rewritten by the next reduction */
  }
  return v;
}

extern __shared__ __align__(16) unsigned char kv_dsmem[];

/* ----------------------------------------------------------------- kernel */

/* x, y: [rows, n]; VE elements per vector access (n % VE == 0 guaranteed by
 * the launcher); c = scale * log2(e); sstride: shared-memory row stride in
 * elements (MODE_SMEM). */
template <int VE, int MODE>
__global__ void __launch_bounds__(BLOCK, MINB)
    softmax_online(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t rows, int n, float c, int sstride) {
  __shared__ MS red_ms[ROWS * NWG];
  __shared__ float red_f[ROWS * NWG];
  const int tid = threadIdx.x;
  const int g = tid / TPR;      /* row group in the block */
  const int lt = tid % TPR;     /* thread within the group */
  const int w = lt / 32;        /* warp within the group */
  const int lane = tid & 31;
  const int nvec = n / VE;
  const int64_t ngroups = (rows + ROWS - 1) / ROWS;
  __nv_bfloat16* srow = reinterpret_cast<__nv_bfloat16*>(kv_dsmem) + (size_t)g * (size_t)sstride;
  (void)srow;
  (void)red_ms;
  (void)red_f;

  /* block-uniform loop: every thread runs the same iterations (barriers inside) */
  for (int64_t rb = blockIdx.x; rb < ngroups; rb += gridDim.x) {
    const int64_t row = rb * ROWS + g;
    const bool active = row < rows;
    const int lim = active ? nvec : 0; /* inactive groups do no memory access */
    const __nv_bfloat16* xr = x + (active ? row : 0) * (int64_t)n;
    __nv_bfloat16* yr = y + (active ? row : 0) * (int64_t)n;

    if constexpr (MODE == MODE_REG) {
      constexpr int NV = REG_ELEMS / VE; /* vectors cached per thread; launcher: nvec <= TPR*NV */
      Raw<VE> buf[NV];
#pragma unroll
      for (int v = 0; v < NV; ++v) {
        const int idx = v * TPR + lt;
        if (idx < lim) buf[v] = ld_first<VE>(xr + (int64_t)idx * VE);
      }
      float m4[4] = {-FLT_MAX, -FLT_MAX, -FLT_MAX, -FLT_MAX};
#pragma unroll
      for (int v = 0; v < NV; ++v) {
        const int idx = v * TPR + lt;
        if (idx < lim) {
#pragma unroll
          for (int e = 0; e < VE; ++e) m4[(v * VE + e) & 3] = fmaxf(m4[(v * VE + e) & 3], elem<VE>(buf[v], e) * c);
        }
      }
      const float mloc = fmaxf(fmaxf(m4[0], m4[1]), fmaxf(m4[2], m4[3]));
      pin<VE, NV>(buf);
#if ONLINE
      float s4[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int v = 0; v < NV; ++v) {
        const int idx = v * TPR + lt;
        if (idx < lim) {
#pragma unroll
          for (int e = 0; e < VE; ++e) s4[(v * VE + e) & 3] += ex2(fmaf(elem<VE>(buf[v], e), c, -mloc));
        }
      }
      pin<VE, NV>(buf);
      const MS r = group_reduce<OpMS>(MS{mloc, (s4[0] + s4[1]) + (s4[2] + s4[3])}, red_ms, g, w, lane);
      const float mx = r.m;
      const float inv = 1.0f / r.s;
#pragma unroll
      for (int v = 0; v < NV; ++v) {
        const int idx = v * TPR + lt;
        if (idx < lim) {
          float f[VE];
#pragma unroll
          for (int e = 0; e < VE; ++e) f[e] = ex2(fmaf(elem<VE>(buf[v], e), c, -mx)) * inv;
          st_out<VE>(yr + (int64_t)idx * VE, pack<VE>(f));
        }
      }
#else
      const float mx = group_reduce<OpMax>(mloc, red_f, g, w, lane);
      float ev[NV][VE];
      float s4[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int v = 0; v < NV; ++v) {
        const int idx = v * TPR + lt;
#pragma unroll
        for (int e = 0; e < VE; ++e) {
          ev[v][e] = idx < lim ? ex2(fmaf(elem<VE>(buf[v], e), c, -mx)) : 0.0f;
          s4[(v * VE + e) & 3] += ev[v][e];
        }
      }
      const float sum = group_reduce<OpSum>((s4[0] + s4[1]) + (s4[2] + s4[3]), red_f, g, w, lane);
      const float inv = 1.0f / sum;
#pragma unroll
      for (int v = 0; v < NV; ++v) {
        const int idx = v * TPR + lt;
        if (idx < lim) {
          float f[VE];
#pragma unroll
          for (int e = 0; e < VE; ++e) f[e] = ev[v][e] * inv;
          st_out<VE>(yr + (int64_t)idx * VE, pack<VE>(f));
        }
      }
#endif
    } else {
      /* streaming: chunks of UNROLL vectors per thread; vector idx = base + u*TPR */
      constexpr int STEP = TPR * UNROLL;
#if ONLINE
      /* pass 1: online (max, rescaled sum); MODE_SMEM also keeps a copy */
      MS acc = OpMS::id();
      for (int base = lt; base < lim; base += STEP) {
        Raw<VE> b[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
          const int idx = base + u * TPR;
          if (idx < lim) b[u] = ld_first<VE>(xr + (int64_t)idx * VE);
        }
        float cm = -FLT_MAX;
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
          const int idx = base + u * TPR;
          if (idx < lim) {
            if constexpr (MODE == MODE_SMEM) st_plain<VE>(srow + idx * VE, b[u]);
#pragma unroll
            for (int e = 0; e < VE; ++e) cm = fmaxf(cm, elem<VE>(b[u], e) * c);
          }
        }
        const float nm = fmaxf(acc.m, cm);
        float s = acc.s * ex2(acc.m - nm);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
          const int idx = base + u * TPR;
          if (idx < lim) {
#pragma unroll
            for (int e = 0; e < VE; ++e) s += ex2(fmaf(elem<VE>(b[u], e), c, -nm));
          }
        }
        acc = MS{nm, s};
      }
      const MS r = group_reduce<OpMS>(acc, red_ms, g, w, lane);
      const float mx = r.m;
      const float inv = 1.0f / r.s;
#else
      /* pass A: max (MODE_SMEM keeps a copy) */
      float cm = -FLT_MAX;
      for (int base = lt; base < lim; base += STEP) {
        Raw<VE> b[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
          const int idx = base + u * TPR;
          if (idx < lim) b[u] = ld_first<VE>(xr + (int64_t)idx * VE);
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
          const int idx = base + u * TPR;
          if (idx < lim) {
            if constexpr (MODE == MODE_SMEM) st_plain<VE>(srow + idx * VE, b[u]);
#pragma unroll
            for (int e = 0; e < VE; ++e) cm = fmaxf(cm, elem<VE>(b[u], e) * c);
          }
        }
      }
      const float mx = group_reduce<OpMax>(cm, red_f, g, w, lane);
      /* pass B: sum of exp2 (re-read: own shared-memory copy or L1/L2) */
      float s = 0.0f;
      for (int base = lt; base < lim; base += STEP) {
        Raw<VE> b[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
          const int idx = base + u * TPR;
          if (idx < lim) b[u] = ld_plain<VE>(MODE == MODE_SMEM ? srow + idx * VE : xr + (int64_t)idx * VE);
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
          const int idx = base + u * TPR;
          if (idx < lim) {
#pragma unroll
            for (int e = 0; e < VE; ++e) s += ex2(fmaf(elem<VE>(b[u], e), c, -mx));
          }
        }
      }
      const float inv = 1.0f / group_reduce<OpSum>(s, red_f, g, w, lane);
#endif
      /* output pass */
      for (int base = lt; base < lim; base += STEP) {
        Raw<VE> b[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
          const int idx = base + u * TPR;
          if (idx < lim) b[u] = ld_plain<VE>(MODE == MODE_SMEM ? srow + idx * VE : xr + (int64_t)idx * VE);
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
          const int idx = base + u * TPR;
          if (idx < lim) {
            float f[VE];
#pragma unroll
            for (int e = 0; e < VE; ++e) f[e] = ex2(fmaf(elem<VE>(b[u], e), c, -mx)) * inv;
            st_out<VE>(yr + (int64_t)idx * VE, pack<VE>(f));
          }
        }
      }
    }
  }
}

/* ------------------------------------------------------------------- host */

static int device_attr(cudaDeviceAttr a) {
  int dev = 0, v = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 0;
  if (cudaDeviceGetAttribute(&v, a, dev) != cudaSuccess) return 0;
  return v;
}

template <int VE, int MODE>
static int launch(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t rows, int n, float c, int sstride,
                  size_t smem, cudaStream_t stream) {
  const int64_t ngroups = (rows + ROWS - 1) / ROWS;
  int64_t grid = ngroups;
  if (GRID > 0) {
    int sms = device_attr(cudaDevAttrMultiProcessorCount);
    if (sms <= 0) sms = 132;
    if (grid > (int64_t)GRID * sms) grid = (int64_t)GRID * sms;
  }
  if (grid > INT_MAX) grid = INT_MAX;
  if (grid < 1) grid = 1;
  if (smem > 48 * 1024) {
    if (cudaFuncSetAttribute(softmax_online<VE, MODE>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) !=
        cudaSuccess)
      return KEVO_ERR_RUNTIME;
  }
  softmax_online<VE, MODE><<<(unsigned int)grid, BLOCK, smem, stream>>>(x, y, rows, n, c, sstride);
  return cudaGetLastError() == cudaSuccess ? KEVO_OK : KEVO_ERR_RUNTIME;
}

/* pick the cache mode for a vector width (VE elements per access) */
template <int VE>
static int dispatch(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t rows, int n, float c, cudaStream_t stream) {
#if CACHE == 1
  if constexpr (VE > 1) {
    if ((int64_t)n <= (int64_t)TPR * REG_ELEMS) return launch<VE, MODE_REG>(x, y, rows, n, c, 0, 0, stream);
  }
#elif CACHE == 2
  {
    const int64_t sstride = ((int64_t)n + 7) / 8 * 8; /* 16-byte aligned row copies */
    const int64_t smem = (int64_t)ROWS * sstride * 2;
    const int64_t optin = device_attr(cudaDevAttrMaxSharedMemoryPerBlockOptin);
    if (smem + 1024 <= optin)
      return launch<VE, MODE_SMEM>(x, y, rows, n, c, (int)sstride, (size_t)smem, stream);
  }
#endif
  return launch<VE, MODE_GLOBAL>(x, y, rows, n, c, 0, 0, stream);
}

extern "C" KEVO_EXPORT int kevo_launch(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                                       const double* scalars, int n_scalars, cudaStream_t stream) {
  if (n_in != 1 || n_out != 1 || n_scalars < 1 || !in || !out || !scalars) return KEVO_ERR_ARGS;
  const kevo_tensor* xt = &in[0];
  kevo_tensor* yt = &out[0];
  if (xt->dtype != KEVO_BF16 || yt->dtype != KEVO_BF16) return KEVO_ERR_UNSUPPORTED;
  if (xt->rank < 1 || xt->rank > KEVO_MAX_RANK || yt->rank < 1 || yt->rank > KEVO_MAX_RANK)
    return KEVO_ERR_UNSUPPORTED;
  if (!kevo_is_contiguous(xt) || !kevo_is_contiguous(yt)) return KEVO_ERR_UNSUPPORTED;
  const int64_t n = kevo_row_len(xt);
  const int64_t numel = kevo_numel(xt);
  if (kevo_numel(yt) != numel || kevo_row_len(yt) != n) return KEVO_ERR_ARGS;
  if (numel == 0 || n <= 0) return KEVO_OK;
  if (n > (1 << 30)) return KEVO_ERR_UNSUPPORTED; /* int indexing within a row */
  const int64_t rows = numel / n;
  const float c = (float)(scalars[0] * 1.4426950408889634);
  const __nv_bfloat16* x = static_cast<const __nv_bfloat16*>(xt->data);
  __nv_bfloat16* y = static_cast<__nv_bfloat16*>(yt->data);
  /* vector accesses only when every row starts VEC-aligned (bases are >= 256-byte aligned) */
  if (n % VE_K == 0) return dispatch<VE_K>(x, y, rows, (int)n, c, stream);
  return dispatch<1>(x, y, rows, (int)n, c, stream);
}
