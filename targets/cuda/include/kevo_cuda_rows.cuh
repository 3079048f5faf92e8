/* kevo_cuda_rows.cuh — kevo's layer for bf16 row kernels on the GPU (norms:
 * a row per group of TPR threads, ROWS groups per block). Shipped with kevo
 * in targets/cuda/include; a kernel includes it by name and kevo inlines it,
 * so the stored, compiled and exported kernel is one file.
 *
 * Define first: TPR (threads per row group, a power of two in [8, 1024]),
 * ROWS (groups per block), VEC (bytes per global access: 4, 8 or 16), MINB
 * (minimum blocks per SM for __launch_bounds__, 0: none); optionally HINT
 * (below). Includes cuda_bf16.h, cuda_runtime.h, stdint.h and kevo_kernel.h.
 *
 *   BLOCK = TPR*ROWS    threads per block;  VE_MAIN = VEC/2  bf16 per access
 *   NWG                 warps per row group;  KV_BOUNDS  __launch_bounds__
 *   KV_DEV              __device__ __forceinline__;   bf16  __nv_bfloat16
 *   RawV<VE>            VE raw bf16 values in VE/2 32-bit words (w[])
 *   rv_zero<VE>()  rv_get(v, e) -> float  rv_pack<VE>(float (&)[VE]) (RNE)
 *   kv_pack2(lo, hi)    two floats to a bf16x2 word
 *   kv_evict_last()     an L2 policy marking lines evict_last
 *   ld_hint<VE, H>(p)   global load with hint H: 0 plain, 1 nc.L1::no_allocate,
 *                       2 .cs, 3 nc.L1::no_allocate.L2::256B, 4 L1::evict_last
 *                       under an L2 evict_last policy
 *   ld_ro<VE>(p)        read-only (nc) load;  ld_sm / st_sm  shared memory
 *   st_hint<VE, S>(p, r) global store with hint S: 0 plain, 1 .cs
 *   group_sum<K>(v, red, phase, g, lane)  sum K floats over the TPR threads of
 *                       row group g (warp butterfly; for TPR > 32 one exchange
 *                       through `red`, 2*ROWS*NWG*K floats of shared memory,
 *                       double-buffered by `phase`; the whole block calls it)
 *   stage_vec<VE>(dst, src, N, use)  copy N bf16 into shared memory when use,
 *                       then a barrier every thread reaches
 *   LDHINT, STHINT      the load / store hints the HINT knob (0-4) selects,
 *                       when HINT is defined and LDHINT is not: 0 plain/plain,
 *                       1 nc.L1::no_allocate/plain, 2 nc.L1::no_allocate.L2::256B/.cs,
 *                       3 .cs/.cs, 4 evict_last/plain
 * Host side:
 *   kv_wave_blocks(k, smem)  blocks of kernel k (BLOCK threads, smem bytes of
 *                       dynamic shared memory) resident at once on the current
 *                       GPU: SMs x occupancy, remembered per kernel and device
 *   kv_check(t)         KEVO_OK for a contiguous bf16 tensor of rank
 *                       1..KEVO_MAX_RANK, else KEVO_ERR_UNSUPPORTED
 */
#ifndef KEVO_CUDA_ROWS_CUH
#define KEVO_CUDA_ROWS_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kevo_kernel.h"

#if (TPR & (TPR - 1)) != 0 || TPR < 8 || TPR > 1024
#error "TPR must be a power of two in [8, 1024]"
#endif
#if (ROWS & (ROWS - 1)) != 0 || TPR * ROWS < 32 || TPR * ROWS > 1024
#error "TPR * ROWS must be a power of two in [32, 1024]"
#endif
#if VEC != 4 && VEC != 8 && VEC != 16
#error "VEC must be 4, 8 or 16"
#endif

#define BLOCK (TPR * ROWS)
#define VE_MAIN (VEC / 2)
#define NWG (TPR > 32 ? TPR / 32 : 1) /* warps per row group */
#if MINB > 0
#define KV_BOUNDS __launch_bounds__(BLOCK, MINB)
#else
#define KV_BOUNDS __launch_bounds__(BLOCK, 1)
#endif
#define KV_DEV __device__ __forceinline__

/* the HINT knob: which load hint (ld_hint) and store hint (st_hint) */
#if defined(HINT) && !defined(LDHINT)
#if HINT == 0
#define LDHINT 0
#define STHINT 0
#elif HINT == 1
#define LDHINT 1
#define STHINT 0
#elif HINT == 2
#define LDHINT 3
#define STHINT 1
#elif HINT == 3
#define LDHINT 2
#define STHINT 1
#else
#define LDHINT 4
#define STHINT 0
#endif
#endif

typedef __nv_bfloat16 bf16;

/* ---- VE raw bf16 values (VE/2 32-bit words; VE == 1: low half of w[0]) ---- */
template <int VE>
struct RawV {
  uint32_t w[VE >= 2 ? VE / 2 : 1];
};

template <int VE>
KV_DEV RawV<VE> rv_zero() {
  RawV<VE> r;
#pragma unroll
  for (int i = 0; i < (VE >= 2 ? VE / 2 : 1); ++i) r.w[i] = 0u;
  return r;
}

/* element e as float (bf16 -> fp32 is exact: the bits go to the top half) */
template <int VE>
KV_DEV float rv_get(const RawV<VE>& v, int e) {
  if constexpr (VE == 1) {
    return __uint_as_float(v.w[0] << 16);
  } else {
    const uint32_t w = v.w[e >> 1];
    return (e & 1) ? __uint_as_float(w & 0xffff0000u) : __uint_as_float(w << 16);
  }
}

KV_DEV uint32_t kv_pack2(float lo, float hi) {
  __nv_bfloat162 t = __floats2bfloat162_rn(lo, hi); /* .x = lo (low address) */
  return (uint32_t)__bfloat16_as_ushort(t.x) | ((uint32_t)__bfloat16_as_ushort(t.y) << 16);
}

/* pack VE fp32 values into bf16 (round to nearest even) */
template <int VE>
KV_DEV RawV<VE> rv_pack(const float (&f)[VE]) {
  RawV<VE> r;
  if constexpr (VE == 1) {
    r.w[0] = (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(f[0]));
  } else {
#pragma unroll
    for (int i = 0; i < VE / 2; ++i) r.w[i] = kv_pack2(f[2 * i], f[2 * i + 1]);
  }
  return r;
}

/* an L2 cache-hint policy that marks every line it touches evict_last */
KV_DEV uint64_t kv_evict_last() {
  uint64_t pol;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
  return pol;
}

/* ---- global loads with a cache hint H: 0 plain, 1 nc.L1::no_allocate, 2 .cs, 3 nc.L1::no_allocate.L2::256B,
 * 4 L1::evict_last with an L2 evict_last policy ---- */
template <int VE, int H>
KV_DEV RawV<VE> ld_hint(const bf16* p) {
  RawV<VE> r;
  [[maybe_unused]] uint64_t pol = 0;
  if constexpr (H == 4) pol = kv_evict_last();
  if constexpr (VE == 8) {
    const uint4* q = reinterpret_cast<const uint4*>(p);
    uint4 u;
    if constexpr (H == 1)
      asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
          : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w) : "l"(q));
    else if constexpr (H == 2)
      u = __ldcs(q);
    else if constexpr (H == 3)
      asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
          : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w) : "l"(q));
    else if constexpr (H == 4)
      asm volatile("ld.global.L1::evict_last.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                   : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w) : "l"(q), "l"(pol));
    else
      u = *q;
    r.w[0] = u.x; r.w[1] = u.y; r.w[2] = u.z; r.w[3] = u.w;
  } else if constexpr (VE == 4) {
    const uint2* q = reinterpret_cast<const uint2*>(p);
    uint2 u;
    if constexpr (H == 1)
      asm("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];" : "=r"(u.x), "=r"(u.y) : "l"(q));
    else if constexpr (H == 2)
      u = __ldcs(q);
    else if constexpr (H == 3)
      asm("ld.global.nc.L1::no_allocate.L2::256B.v2.u32 {%0, %1}, [%2];" : "=r"(u.x), "=r"(u.y) : "l"(q));
    else if constexpr (H == 4)
      asm volatile("ld.global.L1::evict_last.L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;"
                   : "=r"(u.x), "=r"(u.y) : "l"(q), "l"(pol));
    else
      u = *q;
    r.w[0] = u.x; r.w[1] = u.y;
  } else if constexpr (VE == 2) {
    const unsigned int* q = reinterpret_cast<const unsigned int*>(p);
    unsigned int u;
    if constexpr (H == 1)
      asm("ld.global.nc.L1::no_allocate.u32 %0, [%1];" : "=r"(u) : "l"(q));
    else if constexpr (H == 2)
      u = __ldcs(q);
    else if constexpr (H == 3)
      asm("ld.global.nc.L1::no_allocate.L2::256B.u32 %0, [%1];" : "=r"(u) : "l"(q));
    else if constexpr (H == 4)
      asm volatile("ld.global.L1::evict_last.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(u) : "l"(q), "l"(pol));
    else
      u = *q;
    r.w[0] = u;
  } else {
    const unsigned short* q = reinterpret_cast<const unsigned short*>(p);
    unsigned short u;
    if constexpr (H == 1)
      asm("ld.global.nc.L1::no_allocate.u16 %0, [%1];" : "=h"(u) : "l"(q));
    else if constexpr (H == 2)
      u = __ldcs(q);
    else if constexpr (H == 3)
      asm("ld.global.nc.L1::no_allocate.L2::256B.u16 %0, [%1];" : "=h"(u) : "l"(q));
    else if constexpr (H == 4)
      asm volatile("ld.global.L1::evict_last.L2::cache_hint.u16 %0, [%1], %2;" : "=h"(u) : "l"(q), "l"(pol));
    else
      u = *q;
    r.w[0] = (uint32_t)u;
  }
  return r;
}

/* read-only (ld.global.nc) load, used for the weights */
template <int VE>
KV_DEV RawV<VE> ld_ro(const bf16* p) {
  RawV<VE> r;
  if constexpr (VE == 8) {
    const uint4 u = __ldg(reinterpret_cast<const uint4*>(p));
    r.w[0] = u.x; r.w[1] = u.y; r.w[2] = u.z; r.w[3] = u.w;
  } else if constexpr (VE == 4) {
    const uint2 u = __ldg(reinterpret_cast<const uint2*>(p));
    r.w[0] = u.x; r.w[1] = u.y;
  } else if constexpr (VE == 2) {
    r.w[0] = __ldg(reinterpret_cast<const unsigned int*>(p));
  } else {
    r.w[0] = (uint32_t)__ldg(reinterpret_cast<const unsigned short*>(p));
  }
  return r;
}

/* shared-memory load / store of VE bf16 (address aligned to VE * 2 bytes) */
template <int VE>
KV_DEV RawV<VE> ld_sm(const bf16* p) {
  RawV<VE> r;
  if constexpr (VE == 8) {
    const uint4 u = *reinterpret_cast<const uint4*>(p);
    r.w[0] = u.x; r.w[1] = u.y; r.w[2] = u.z; r.w[3] = u.w;
  } else if constexpr (VE == 4) {
    const uint2 u = *reinterpret_cast<const uint2*>(p);
    r.w[0] = u.x; r.w[1] = u.y;
  } else if constexpr (VE == 2) {
    r.w[0] = *reinterpret_cast<const unsigned int*>(p);
  } else {
    r.w[0] = (uint32_t)*reinterpret_cast<const unsigned short*>(p);
  }
  return r;
}

template <int VE>
KV_DEV void st_sm(bf16* p, const RawV<VE>& r) {
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

/* global store with hint S: 0 plain, 1 .cs */
template <int VE, int S>
KV_DEV void st_hint(bf16* p, const RawV<VE>& r) {
  if constexpr (VE == 8) {
    uint4* q = reinterpret_cast<uint4*>(p);
    const uint4 u = make_uint4(r.w[0], r.w[1], r.w[2], r.w[3]);
    if constexpr (S == 1) __stcs(q, u); else *q = u;
  } else if constexpr (VE == 4) {
    uint2* q = reinterpret_cast<uint2*>(p);
    const uint2 u = make_uint2(r.w[0], r.w[1]);
    if constexpr (S == 1) __stcs(q, u); else *q = u;
  } else if constexpr (VE == 2) {
    unsigned int* q = reinterpret_cast<unsigned int*>(p);
    if constexpr (S == 1) __stcs(q, r.w[0]); else *q = r.w[0];
  } else {
    unsigned short* q = reinterpret_cast<unsigned short*>(p);
    const unsigned short u = (unsigned short)r.w[0];
    if constexpr (S == 1) __stcs(q, u); else *q = u;
  }
}

/* ---- sum of K values over the TPR threads of a row group.
 * Must be called by every thread of the block (uniform control flow).
 * red: shared scratch of 2 * ROWS * NWG * K floats; phase alternates the two
 * halves, so one __syncthreads per call suffices: a half is rewritten only
 * after the next call's barrier, which every reader of the previous use of
 * that half has passed. All lanes end with bitwise-identical sums (butterfly
 * steps add a + b and b + a, which are equal). */
template <int K>
KV_DEV void group_sum(float (&v)[K], float* red, int& phase, int g, int lane) {
#pragma unroll
  for (int o = (TPR < 32 ? TPR : 32) / 2; o > 0; o >>= 1) {
#pragma unroll
    for (int k = 0; k < K; ++k) v[k] += __shfl_xor_sync(0xffffffffu, v[k], o);
  }
  if constexpr (TPR > 32) {
    float* base = red + (phase * ROWS + g) * (NWG * K);
    if ((lane & 31) == 0) {
#pragma unroll
      for (int k = 0; k < K; ++k) base[(lane >> 5) * K + k] = v[k];
    }
    __syncthreads();
    const int i = lane & (NWG - 1); /* each aligned run of NWG lanes holds all partials */
#pragma unroll
    for (int k = 0; k < K; ++k) {
      float s = base[i * K + k];
#pragma unroll
      for (int o = NWG / 2; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
      v[k] = s;
    }
    phase ^= 1;
  }
}

/* stage w into shared memory (whole block; ends with a barrier every thread reaches) */
template <int VE>
KV_DEV void stage_vec(bf16* dst, const bf16* __restrict__ src, int N, int use) {
  if (use) {
    for (int c = (int)threadIdx.x * VE; c < N; c += BLOCK * VE) st_sm<VE>(dst + c, ld_ro<VE>(src + c));
  }
  __syncthreads();
}


/* ---- host side ---- */

/* blocks of kernel k resident at once on the current GPU (a failed query
 * falls back to 132 SMs, 1 block each) */
static int64_t kv_wave_blocks(const void* k, size_t smem) {
  struct Entry { const void* k; size_t smem; int dev; int64_t n; };
  static Entry cache[8];
  static int next = 0;
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    dev = 0;
  }
  for (int i = 0; i < 8; ++i)
    if (cache[i].k == k && cache[i].smem == smem && cache[i].dev == dev && cache[i].n > 0) return cache[i].n;
  int sms = 0, per_sm = 0;
  /* a failed query falls back to a safe value; its error must not leak into the launch status */
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    sms = 0;
  }
  if (sms <= 0) sms = 132;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, BLOCK, smem) != cudaSuccess) {
    (void)cudaGetLastError();
    per_sm = 0;
  }
  if (per_sm <= 0) per_sm = 1;
  const int64_t n = (int64_t)sms * per_sm;
  cache[next] = Entry{k, smem, dev, n};
  next = (next + 1) % 8;
  return n;
}

/* a tensor the row kernels take: contiguous bf16 of rank 1..KEVO_MAX_RANK */
static int kv_check(const kevo_tensor* t) {
  if (t->dtype != KEVO_BF16) return KEVO_ERR_UNSUPPORTED;
  if (t->rank < 1 || t->rank > KEVO_MAX_RANK || !kevo_is_contiguous(t)) return KEVO_ERR_UNSUPPORTED;
  return KEVO_OK;
}

#endif /* KEVO_CUDA_ROWS_CUH */
