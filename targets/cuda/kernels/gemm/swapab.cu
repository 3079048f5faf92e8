/* gemm / swapab — a decode GEMM with the tokens on the tensor core's N side.
 *
 * C[M,N] = A[M,K] · B[K,N]; A, B, C row-major bf16, fp32 accumulation, bf16 out.
 * Built for few rows of A (decode: M = tokens in flight), where the time goes
 * to streaming the weights B. It computes C^T = B^T · A^T: a wgmma m64nTNk16
 * takes 64 columns of B as the MMA's rows (the A operand, read MN-major from
 * shared memory, which bf16 allows) and TN tokens as its N (the B operand,
 * K-major, as A lies in memory). So the MMA multiplies only rows of A that
 * exist: at M = 16 a row-tiled family's m64 tile is three quarters zeros, and
 * its shared memory holds them too.
 *
 * One CTA computes BW = 64 * MT * NCONS columns of C for TN tokens, over
 * 1/SPLIT of K. One thread of warpgroup 0 is the producer: for each 64-deep k
 * tile it TMA-loads BW/64 boxes of 64(k) x 64(n) of B (8 KB each) and one
 * TN x 64 box of A into a STAGES-deep ring, both with the 128-byte swizzle,
 * on the stage's "full" mbarrier with the byte count. Consumer warpgroups
 * 1..NCONS each own MT of the CTA's m64 column tiles: they wait on the stage,
 * issue the wgmmas, and release it on its "empty" mbarrier once the wgmmas
 * that read it are done. TMA fills out-of-range boxes with zeros, so M, N and
 * K tails need no code.
 *
 * Epilogue: each consumer writes its fp32 accumulators transposed into shared
 * memory (a [TN][BW] tile, rows padded), so that C is written row-major with
 * 16-byte stores. With SPLIT > 1 the CTAs of a cluster (grid.y) each hold the
 * partial tile of their share of K; after a cluster barrier, CTA r sums its
 * 1/SPLIT of the tile's 8-column chunks over all ranks' partials in rank
 * order (deterministic) through distributed shared memory, and stores bf16.
 * No workspace, no second pass over global memory.
 *
 * Fast path requirements (checked at launch): K % 8 == 0 and N % 8 == 0 (TMA
 * global strides must be multiples of 16 bytes), K > 0, 16-byte aligned base
 * pointers. Anything else runs kevo_cuda_gemm_fallback.cuh.
 *
 * Knobs:
 *   TN       tokens per CTA = the wgmma's N (8, 16, 32, 64, 128); M > TN runs
 *            ceil(M / TN) CTAs per column tile, neighbours in the grid.
 *   MT       m64 column tiles (64 columns of C each) per consumer warpgroup.
 *   NCONS    consumer warpgroups per CTA (BW = 64 * MT * NCONS).
 *   STAGES   depth of the ring ((BW + TN) * 128 bytes a stage).
 *   KEEP     1: a k tile's wgmmas queue behind the previous tile's (its stage
 *            is released one tile later); 0: wait for them every tile.
 *   SPLIT    split-K over a cluster of SPLIT CTAs (grid.y; 1 = none).
 *   BHINT    1: the weights' TMA loads carry an L2 evict-first policy.
 *
 * Starts: TN the power of two that covers M; one or two m64 column tiles; the
 * deepest ring that fits one CTA per SM, or two CTAs per SM with half the
 * ring; a split-K that brings the CTAs to the SMs' count (SMS, as the GPU's
 * runner reports it).
 */
// @kevo start TN = 8 + 8 * (DIM_A_0 > 8) + 16 * (DIM_A_0 > 16) + 32 * (DIM_A_0 > 32) + 64 * (DIM_A_0 > 64), MT = 1, NCONS = 1, STAGES = 225000 / ((64 + TN) * 128), SPLIT = SMS / ((DIM_A_0 + TN - 1) / TN * ((DIM_B_1 + 63) / 64))
// @kevo start TN = 8 + 8 * (DIM_A_0 > 8) + 16 * (DIM_A_0 > 16) + 32 * (DIM_A_0 > 32) + 64 * (DIM_A_0 > 64), MT = 2, NCONS = 1, STAGES = 225000 / ((128 + TN) * 128), SPLIT = SMS / ((DIM_A_0 + TN - 1) / TN * ((DIM_B_1 + 127) / 128))
// @kevo start TN = 8 + 8 * (DIM_A_0 > 8) + 16 * (DIM_A_0 > 16) + 32 * (DIM_A_0 > 32) + 64 * (DIM_A_0 > 64), MT = 1, NCONS = 1, STAGES = 112000 / ((64 + TN) * 128), SPLIT = 2 * SMS / ((DIM_A_0 + TN - 1) / TN * ((DIM_B_1 + 63) / 64))
// @kevo knob TN 16 {8, 16, 32, 64, 128}
// @kevo knob MT 2 {1, 2, 4}
// @kevo knob NCONS 1 {1, 2}
// @kevo knob STAGES 8 {2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 20, 24}
// @kevo knob KEEP 1 {0, 1}
// @kevo knob SPLIT 1 {1, 2, 3, 4, 6, 8}
// @kevo knob BHINT 1 {0, 1}
// @kevo require MT * TN / 2 <= 128
// @kevo require STAGES * (64 * MT * NCONS + TN) * 128 + 2048 <= 232448
// @kevo require TN * (64 * MT * NCONS + 4) * 4 + 2048 <= 232448
#ifndef TN
#define TN 16
#endif
#ifndef MT
#define MT 2
#endif
#ifndef NCONS
#define NCONS 1
#endif
#ifndef STAGES
#define STAGES 8
#endif
#ifndef KEEP
#define KEEP 1
#endif
#ifndef SPLIT
#define SPLIT 1
#endif
#ifndef BHINT
#define BHINT 1
#endif

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kevo_cuda_gemm_fallback.cuh"
#include "kevo_cuda_tma.cuh"
#include "kevo_kernel.h"

namespace {

constexpr int BW = 64 * MT * NCONS;         // columns of C per CTA
constexpr int BK = 64;                      // one 128-byte swizzle span of bf16
constexpr int kAcc = TN / 2;                // fp32 accumulators per thread per m64 tile
constexpr int kThreads = (NCONS + 1) * 128;
constexpr int kWBox = BK * 64 * 2;          // one 64(k) x 64(n) box of B, bytes
constexpr int kWStage = BW * BK * 2;
constexpr int kAStage = TN * BK * 2;        // TN rows of 128 bytes: a multiple of 1024
constexpr int kStageBytes = kWStage + kAStage;
constexpr int kPipeBytes = STAGES * kStageBytes;
constexpr int kPartLd = BW + 4;             // padded fp32 row of the [TN][BW] output tile
constexpr int kPartBytes = TN * kPartLd * 4;
constexpr int kDataBytes = kPipeBytes > kPartBytes ? kPipeBytes : kPartBytes;
constexpr int kSmemBytes = 1024 /* alignment slack */ + kDataBytes + 2 * STAGES * 8;
constexpr int kProducerRegs = 40;
constexpr int kConsumerRegs = kv_consumer_regs(NCONS, kProducerRegs);

static_assert(TN == 8 || TN == 16 || TN == 32 || TN == 64 || TN == 128, "TN must be 8..128, a power of two");
static_assert(MT * kAcc <= 128, "too many accumulators per thread");
static_assert(SPLIT >= 1 && SPLIT <= 8, "SPLIT must be 1..8 (portable cluster size)");
static_assert(kSmemBytes <= 232448, "shared memory over 227 KB");

__global__ void __cluster_dims__(1, SPLIT, 1) __launch_bounds__(kThreads, 1)
    gemm_swapab_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                       __nv_bfloat16* __restrict__ C, int M, int N, int K) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // Stage buffers on 1024-byte boundaries: the swizzle pattern repeats every
  // 8 rows of 128 bytes, and the descriptors assume base offset 0.
  const uint32_t raw = kv_smem_u32(smem_raw);
  const uint32_t s0 = (raw + 1023u) & ~1023u;
  const uint32_t sW = s0;
  const uint32_t sA = s0 + STAGES * kWStage;
  const uint32_t bar_full = s0 + kDataBytes;
  const uint32_t bar_empty = bar_full + STAGES * 8;
  float* part = reinterpret_cast<float*>(smem_raw + (s0 - raw));  // the output tile, after the ring

  const int wg = threadIdx.x / 128;
  const int tid_wg = threadIdx.x % 128;

  // The token tiles of one column tile are neighbours in the grid: they read
  // the same weights, which L2 then serves to all but the first.
  const int tiles_t = (M + TN - 1) / TN;
  const int t0 = (int)(blockIdx.x % (unsigned)tiles_t) * TN;
  const int n0 = (int)(blockIdx.x / (unsigned)tiles_t) * BW;
  const int ktiles_all = (K + BK - 1) / BK;
  const int split_rank = SPLIT > 1 ? (int)blockIdx.y : 0;
  const int kt0 = (int)((int64_t)ktiles_all * split_rank / SPLIT);
  const int ktiles = (int)((int64_t)ktiles_all * (split_rank + 1) / SPLIT) - kt0;

  if (threadIdx.x == 0) {
#pragma unroll 1
    for (int s = 0; s < STAGES; ++s) {
      kv_mbar_init(bar_full + 8 * s, 1);              // the producer's arrive.expect_tx
      kv_mbar_init(bar_empty + 8 * s, NCONS * 4);     // every consumer warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (wg == 0) {
    // ------------------------------------------------------------ producer
    if constexpr (kConsumerRegs > 0) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs));
    // Warps 1-3 of this warpgroup have no work: they leave rather than wait
    // at the cluster barrier below (an exited thread counts as arrived there).
    if (tid_wg >= 32) return;
    if (tid_wg == 0) {
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmA)) : "memory");
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmB)) : "memory");
      uint64_t wpolicy = 0;
      if constexpr (BHINT) wpolicy = kv_evict_first_policy();
      int s = 0;
      uint32_t phase = 0;  // parity of the empty-barrier phase to wait for
      for (int kt = 0; kt < ktiles; ++kt) {
        if (kt >= STAGES) kv_mbar_wait(bar_empty + 8 * s, phase);
        const uint32_t full = bar_full + 8 * s;
        const int k = (kt0 + kt) * BK;
        kv_mbar_expect_tx(full, kStageBytes);
#pragma unroll
        for (int j = 0; j < BW / 64; ++j) {
          if constexpr (BHINT)
            kv_tma_load_2d_hint(sW + s * kWStage + j * kWBox, &tmB, n0 + 64 * j, k, full, wpolicy);
          else
            kv_tma_load_2d(sW + s * kWStage + j * kWBox, &tmB, n0 + 64 * j, k, full);
        }
        kv_tma_load_2d(sA + s * kAStage, &tmA, k, t0, full);
        if (++s == STAGES) {
          s = 0;
          if (kt >= STAGES) phase ^= 1;
        }
      }
    }
  } else {
    // ------------------------------------------------------------ consumers
    if constexpr (kConsumerRegs > 0) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegs));
    const int cw = kv_warp_uniform(wg - 1);  // keeps the wgmma descriptors in uniform registers
    float acc[MT][kAcc];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int i = 0; i < kAcc; ++i) acc[mt][i] = 0.0f;

    // The weights (MMA A, MN-major, 128B swizzle): 8-k-row groups 1024 bytes
    //   apart (SBO); an m64 tile is one 64-column box; k16 step = +16 rows * 128 bytes.
    // The tokens (MMA B, K-major, 128B swizzle): 8-token groups 1024 bytes
    //   apart (SBO), LBO unused (16); k16 step = +32 bytes inside the 128-byte row.
    // Stage 0's descriptors; stage s's, and the k16 and m64 steps in it, are
    // these advanced (kv_desc_advance).
    const uint64_t dw0 = kv_make_desc_sw128(sW + cw * MT * kWBox, kWBox, 1024);
    const uint64_t da0 = kv_make_desc_sw128(sA, 16, 1024);
    const bool lane0 = (tid_wg & 31) == 0;
    int s = 0;
    uint32_t phase = 0;  // parity of the full-barrier phase to wait for
    int prev_s = 0;
    for (int kt = 0; kt < ktiles; ++kt) {
      kv_mbar_wait(bar_full + 8 * s, phase);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int i = 0; i < kAcc; ++i) kv_fence_operand(acc[mt][i]);
      kv_wgmma_fence();
      const uint64_t dw_s = kv_desc_advance(dw0, s, kWStage);
      const uint64_t da_s = kv_desc_advance(da0, s, kAStage);
#pragma unroll
      for (int ks = 0; ks < BK / 16; ++ks) {
        const uint64_t db = kv_desc_advance(da_s, ks * 32);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          const uint64_t da = kv_desc_advance(dw_s, mt * kWBox + ks * 16 * 128);
          kv_wgmma_bf16_mn_a<TN>(acc[mt], da, db, 1);
        }
      }
      kv_wgmma_commit();
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int i = 0; i < kAcc; ++i) kv_fence_operand(acc[mt][i]);
      if constexpr (KEEP) {
        kv_wgmma_wait<1>();  // the previous tile's wgmmas are done: release its stage
        if (kt > 0 && lane0) kv_mbar_arrive(bar_empty + 8 * prev_s);
      } else {
        kv_wgmma_wait<0>();
        if (lane0) kv_mbar_arrive(bar_empty + 8 * s);
      }
      prev_s = s;
      if (++s == STAGES) {
        s = 0;
        phase ^= 1;
      }
    }
    kv_wgmma_wait<0>();
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int i = 0; i < kAcc; ++i) kv_fence_operand(acc[mt][i]);

    // The output tile, transposed: accumulator d[4j + e] of m64 tile mt is
    // column (of C) 16w + g + 8*(e/2) of the tile and token 8j + 2t + e%2
    // (g = lane/4, t = lane%4). A row is BW + 4 floats: the 8 g's and 4 t's
    // of a warp's store fall on 32 different banks.
    kv_named_barrier(1, NCONS * 128);  // every consumer is done reading the ring
    const int w = tid_wg >> 5;
    const int lane = tid_wg & 31;
    const int g = lane >> 2;
    const int t4 = lane & 3;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      const int c = (cw * MT + mt) * 64 + 16 * w + g;
#pragma unroll
      for (int j = 0; j < TN / 8; ++j) {
        const int r = 8 * j + 2 * t4;
        part[r * kPartLd + c] = acc[mt][4 * j];
        part[(r + 1) * kPartLd + c] = acc[mt][4 * j + 1];
        part[r * kPartLd + c + 8] = acc[mt][4 * j + 2];
        part[(r + 1) * kPartLd + c + 8] = acc[mt][4 * j + 3];
      }
    }
  }

  // Every rank's output tile is in its shared memory. The consumer threads
  // of rank r sum chunks [r*chunks/SPLIT, (r+1)*chunks/SPLIT) of the tile's
  // valid tokens (8 columns each) over ranks 0..SPLIT-1 in order, and store
  // them as 16 bytes of bf16.
  if constexpr (SPLIT > 1) kv_cluster_sync();
  else __syncthreads();
  if (wg > 0) {
    const int rows = min(TN, M - t0);
    constexpr int kCpr = BW / 8;
    const int chunks = rows * kCpr;
    const int c_begin = (int)((int64_t)chunks * split_rank / SPLIT);
    const int c_end = (int)((int64_t)chunks * (split_rank + 1) / SPLIT);
    const uint32_t part_local = kv_smem_u32(part);
    for (int id = c_begin + (int)threadIdx.x - 128; id < c_end; id += NCONS * 128) {
      const int row = id / kCpr;
      const int col = (id % kCpr) * 8;
      const int gn = n0 + col;
      if (gn >= N) continue;  // N % 8 == 0: a chunk is all in or all out
      float v[8];
      if constexpr (SPLIT > 1) {
#pragma unroll
        for (int e = 0; e < 8; ++e) v[e] = 0.f;
        const uint32_t off = part_local + (uint32_t)(row * kPartLd + col) * 4u;
#pragma unroll
        for (int q = 0; q < SPLIT; ++q) {
          float p[8];
          kv_ld_cluster_f32x8(p, off, (uint32_t)q);
#pragma unroll
          for (int e = 0; e < 8; ++e) v[e] += p[e];
        }
      } else {
        const float4 lo = *reinterpret_cast<const float4*>(&part[row * kPartLd + col]);
        const float4 hi = *reinterpret_cast<const float4*>(&part[row * kPartLd + col + 4]);
        v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w;
        v[4] = hi.x, v[5] = hi.y, v[6] = hi.z, v[7] = hi.w;
      }
      uint4 o;
      __nv_bfloat162 h0 = __floats2bfloat162_rn(v[0], v[1]), h1 = __floats2bfloat162_rn(v[2], v[3]);
      __nv_bfloat162 h2 = __floats2bfloat162_rn(v[4], v[5]), h3 = __floats2bfloat162_rn(v[6], v[7]);
      o.x = *reinterpret_cast<uint32_t*>(&h0);
      o.y = *reinterpret_cast<uint32_t*>(&h1);
      o.z = *reinterpret_cast<uint32_t*>(&h2);
      o.w = *reinterpret_cast<uint32_t*>(&h3);
      *reinterpret_cast<uint4*>(C + (size_t)(t0 + row) * N + gn) = o;
    }
  }
  // No CTA may exit while a peer can still read its output tile.
  if constexpr (SPLIT > 1) kv_cluster_sync();
}

}  // namespace

extern "C" KEVO_EXPORT int kevo_launch(const kevo_tensor* in, int n_in, kevo_tensor* out,
                                       int n_out, const double* scalars, int n_scalars,
                                       cudaStream_t stream) {
  (void)scalars;
  if (n_in != 2 || n_out != 1 || n_scalars != 0) return KEVO_ERR_ARGS;
  const kevo_tensor *ta = &in[0], *tb = &in[1], *tc = &out[0];
  if (ta->dtype != KEVO_BF16 || tb->dtype != KEVO_BF16 || tc->dtype != KEVO_BF16)
    return KEVO_ERR_UNSUPPORTED;
  if (ta->rank != 2 || tb->rank != 2 || tc->rank != 2) return KEVO_ERR_UNSUPPORTED;
  if (!kevo_is_contiguous(ta) || !kevo_is_contiguous(tb) || !kevo_is_contiguous(tc))
    return KEVO_ERR_UNSUPPORTED;
  const int64_t M64 = ta->shape[0], K64 = ta->shape[1], N64 = tb->shape[1];
  if (tb->shape[0] != K64 || tc->shape[0] != M64 || tc->shape[1] != N64) return KEVO_ERR_ARGS;
  if (M64 > INT32_MAX - 1024 || N64 > INT32_MAX - 1024 || K64 > INT32_MAX - 1024)
    return KEVO_ERR_UNSUPPORTED;
  const int M = (int)M64, N = (int)N64, K = (int)K64;
  if (M == 0 || N == 0) return KEVO_OK;
  const __nv_bfloat16* A = static_cast<const __nv_bfloat16*>(ta->data);
  const __nv_bfloat16* B = static_cast<const __nv_bfloat16*>(tb->data);
  __nv_bfloat16* C = static_cast<__nv_bfloat16*>(tc->data);

  const bool aligned = ((reinterpret_cast<uintptr_t>(A) | reinterpret_cast<uintptr_t>(B) |
                         reinterpret_cast<uintptr_t>(C)) &
                        15) == 0;
  if (!(K > 0 && K % 8 == 0 && N % 8 == 0 && aligned)) {
    const int rc = kv_gemm_fallback(A, B, C, M, N, K, stream);
    if (rc != KEVO_OK) return rc;
    return cudaGetLastError() == cudaSuccess ? KEVO_OK : KEVO_ERR_RUNTIME;
  }
  const int64_t tiles = (int64_t)((M + TN - 1) / TN) * ((N + BW - 1) / BW);
  if (tiles > INT32_MAX) return KEVO_ERR_UNSUPPORTED;
  CUtensorMap mapA, mapB;
  if (!kv_tma_map_2d(&mapA, A, (uint64_t)K, (uint64_t)M, BK, TN)) return KEVO_ERR_RUNTIME;
  if (!kv_tma_map_2d(&mapB, B, (uint64_t)N, (uint64_t)K, 64, BK)) return KEVO_ERR_RUNTIME;
  if (cudaFuncSetAttribute(gemm_swapab_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes) !=
      cudaSuccess)
    return KEVO_ERR_RUNTIME;
  gemm_swapab_kernel<<<dim3((unsigned)tiles, SPLIT), kThreads, kSmemBytes, stream>>>(mapA, mapB, C, M, N, K);
  return cudaGetLastError() == cudaSuccess ? KEVO_OK : KEVO_ERR_RUNTIME;
}
