/* kevo run 1 best for gemm-128x4096x4096: median 18 us (68% of roof)
 * family swapab (/work/main/targets/cuda/kernels/gemm/swapab.cu), knobs baked in: BHINT=0 KEEP=1 MT=1 NCONS=1 SPLIT=2 STAGES=5 TN=128
 */
#define BHINT 0
#define KEEP 1
#define MT 1
#define NCONS 1
#define SPLIT 2
#define STAGES 5
#define TN 128
/* the shapes it was searched at (kevo defines its task's own when it compiles) */
#ifndef KEVO_RANK_A
#define KEVO_RANK_A 2
#endif
#ifndef KEVO_DIM_A_0
#define KEVO_DIM_A_0 128
#endif
#ifndef KEVO_DIM_A_1
#define KEVO_DIM_A_1 4096
#endif
#ifndef KEVO_LAST_A
#define KEVO_LAST_A 4096
#endif
#ifndef KEVO_RANK_B
#define KEVO_RANK_B 2
#endif
#ifndef KEVO_DIM_B_0
#define KEVO_DIM_B_0 4096
#endif
#ifndef KEVO_DIM_B_1
#define KEVO_DIM_B_1 4096
#endif
#ifndef KEVO_LAST_B
#define KEVO_LAST_B 4096
#endif
#ifndef KEVO_RANK_C
#define KEVO_RANK_C 2
#endif
#ifndef KEVO_DIM_C_0
#define KEVO_DIM_C_0 128
#endif
#ifndef KEVO_DIM_C_1
#define KEVO_DIM_C_1 4096
#endif
#ifndef KEVO_LAST_C
#define KEVO_LAST_C 4096
#endif

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
// (baked in) kevo start TN = 8 + 8 * (DIM_A_0 > 8) + 16 * (DIM_A_0 > 16) + 32 * (DIM_A_0 > 32) + 64 * (DIM_A_0 > 64), MT = 1, NCONS = 1, STAGES = 225000 / ((64 + TN) * 128), SPLIT = SMS / ((DIM_A_0 + TN - 1) / TN * ((DIM_B_1 + 63) / 64))
// (baked in) kevo start TN = 8 + 8 * (DIM_A_0 > 8) + 16 * (DIM_A_0 > 16) + 32 * (DIM_A_0 > 32) + 64 * (DIM_A_0 > 64), MT = 2, NCONS = 1, STAGES = 225000 / ((128 + TN) * 128), SPLIT = SMS / ((DIM_A_0 + TN - 1) / TN * ((DIM_B_1 + 127) / 128))
// (baked in) kevo start TN = 8 + 8 * (DIM_A_0 > 8) + 16 * (DIM_A_0 > 16) + 32 * (DIM_A_0 > 32) + 64 * (DIM_A_0 > 64), MT = 1, NCONS = 1, STAGES = 112000 / ((64 + TN) * 128), SPLIT = 2 * SMS / ((DIM_A_0 + TN - 1) / TN * ((DIM_B_1 + 63) / 64))
// (baked in) kevo knob TN 16 {8, 16, 32, 64, 128}
// (baked in) kevo knob MT 2 {1, 2, 4}
// (baked in) kevo knob NCONS 1 {1, 2}
// (baked in) kevo knob STAGES 8 {2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 20, 24}
// (baked in) kevo knob KEEP 1 {0, 1}
// (baked in) kevo knob SPLIT 1 {1, 2, 3, 4, 6, 8}
// (baked in) kevo knob BHINT 1 {0, 1}
// (baked in) kevo require MT * TN / 2 <= 128
// (baked in) kevo require STAGES * (64 * MT * NCONS + TN) * 128 + 2048 <= 232448
// (baked in) kevo require TN * (64 * MT * NCONS + 4) * 4 + 2048 <= 232448
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

/* kevo: begin kevo_cuda_gemm_fallback.cuh (inlined by kevo; sha256 de02e876c00cc660) */
/* kevo_cuda_gemm_fallback.cuh — the plain bf16 GEMM that kevo's gemm families
 * run where their fast path does not apply (K or N not a multiple of 8, base
 * pointers not 16-byte aligned): C[M,N] = A[M,K] · B[K,N], row-major bf16, fp32
 * accumulation, a 32 x 32 tile of C per block of 32 x 8 threads, 32-deep K
 * slices staged in shared memory as fp32, scalar loads. Correct on any shape;
 * not fast. Includes cuda_bf16.h, cuda_runtime.h and stdint.h.
 *
 *   kv_gemm_fallback(A, B, C, M, N, K, stream)  launch it on stream; KEVO_OK,
 *                                     or KEVO_ERR_UNSUPPORTED when the grid
 *                                     would be too large (launch errors are
 *                                     the caller's cudaGetLastError)
 */
#ifndef KEVO_CUDA_GEMM_FALLBACK_CUH
#define KEVO_CUDA_GEMM_FALLBACK_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kevo_kernel.h"

constexpr int kv_gemm_fb_tile = 32;

__global__ void __launch_bounds__(256)
    kv_gemm_fallback_kernel(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                            __nv_bfloat16* __restrict__ C, int M, int N, int K, int tiles_n) {
  constexpr int T = kv_gemm_fb_tile;
  __shared__ float As[T][T + 1];
  __shared__ float Bs[T][T + 1];
  const int tx = threadIdx.x;  // 0..31: column
  const int ty = threadIdx.y;  // 0..7
  const int m0 = (blockIdx.x / tiles_n) * T;
  const int n0 = (blockIdx.x % tiles_n) * T;
  float acc[T / 8] = {};
  for (int k0 = 0; k0 < K; k0 += T) {
#pragma unroll
    for (int r = ty; r < T; r += 8) {
      const int gm = m0 + r, gk = k0 + tx;
      As[r][tx] = (gm < M && gk < K) ? __bfloat162float(A[(size_t)gm * K + gk]) : 0.0f;
      const int bk = k0 + r, bn = n0 + tx;
      Bs[r][tx] = (bk < K && bn < N) ? __bfloat162float(B[(size_t)bk * N + bn]) : 0.0f;
    }
    __syncthreads();
#pragma unroll 8
    for (int kk = 0; kk < T; ++kk) {
      const float b = Bs[kk][tx];
#pragma unroll
      for (int i = 0; i < T / 8; ++i) acc[i] = fmaf(As[ty + 8 * i][kk], b, acc[i]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < T / 8; ++i) {
    const int gm = m0 + ty + 8 * i, gn = n0 + tx;
    if (gm < M && gn < N) C[(size_t)gm * N + gn] = __float2bfloat16_rn(acc[i]);
  }
}

inline int kv_gemm_fallback(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                            int K, cudaStream_t stream) {
  constexpr int T = kv_gemm_fb_tile;
  const int tiles_n = (N + T - 1) / T;
  const int64_t tiles = (int64_t)((M + T - 1) / T) * tiles_n;
  if (tiles > INT32_MAX) return KEVO_ERR_UNSUPPORTED;
  kv_gemm_fallback_kernel<<<(unsigned)tiles, dim3(32, 8), 0, stream>>>(A, B, C, M, N, K, tiles_n);
  return KEVO_OK;
}

#endif  // KEVO_CUDA_GEMM_FALLBACK_CUH
/* kevo: end kevo_cuda_gemm_fallback.cuh */
/* kevo: begin kevo_cuda_tma.cuh (inlined by kevo; sha256 4cc4daf753a4c865) */
/* kevo_cuda_tma.cuh — kevo's layer for Hopper (sm_90a) tensor-core kernels: TMA
 * tile loads into shared memory signalled on mbarriers, warpgroup MMA
 * (wgmma.mma_async, bf16 in, fp32 accumulate) from shared-memory descriptors,
 * and the thread-block-cluster primitives (cluster barrier, ranks, arrivals
 * and reads of a peer's shared memory). Shipped with kevo in
 * targets/cuda/include; a kernel includes it by name and kevo inlines it, so
 * the stored, compiled and exported kernel is one file. Nothing to define
 * first. Includes cuda.h and cudaTypedefs.h (types only: libcuda is not
 * linked), cuda_bf16.h, cuda_runtime.h, stdint.h. Device functions:
 *
 *   kv_smem_u32(p)                    shared-state-space address of a generic pointer
 *   kv_mbar_init(bar, count)          initialise the mbarrier at shared address bar
 *   kv_mbar_expect_tx(bar, bytes)     arrive and expect `bytes` of transactions
 *   kv_mbar_arrive(bar)               plain arrive
 *   kv_mbar_wait(bar, parity)         spin until the phase of `parity` completes
 *   kv_mbar_arrive_cluster(bar, r)    arrive on the barrier at the same offset in CTA r
 *   kv_tma_load_2d(dst, map, c0, c1, bar)            box at (c0 inner, c1 outer) of a
 *                                     tensor map into shared dst, bytes completed on bar
 *   kv_tma_load_2d_hint(dst, map, c0, c1, bar, pol)  the same with an L2 cache policy
 *   kv_tma_load_2d_mc(dst, map, c0, c1, bar, mask)   multicast to the CTAs of mask
 *   kv_evict_first_policy()           an L2 evict-first policy (createpolicy) for _hint
 *   kv_tma_store_2d(map, src, c0, c1)  shared box at src to (c0, c1) of a tensor map,
 *                                     clipped to the tensor; a bulk-group operation
 *   kv_bulk_commit(), kv_bulk_wait_read<N>(), kv_bulk_wait<N>()  commit this thread's
 *                                     bulk stores; wait until at most N groups still
 *                                     read shared memory / are still writing
 *   kv_fence_async_smem()             order this thread's shared writes before TMA reads
 *   kv_stmatrix_x4(addr, r0, r1, r2, r3)  four 8x8 bf16 matrices to shared memory in
 *                                     one instruction (stmatrix): lanes 8q..8q+7 give the
 *                                     16-byte rows of matrix q; rq (a bf16 pair) is each
 *                                     lane's two elements of it, row lane / 4, columns
 *                                     2 (lane % 4) and + 1: an MMA accumulator fragment
 *   kv_cluster_sync()                 barrier.cluster arrive.release + wait.acquire
 *   kv_cluster_rank()                 %cluster_ctarank
 *   kv_ld_cluster_f32x8(v, addr, r)   8 floats at local shared address addr of CTA r
 *   kv_named_barrier(id, count)       bar.sync id, count
 *   kv_named_arrive(id, count)        bar.arrive id, count (signal without waiting)
 *   kv_wgmma_fence(), kv_wgmma_commit(), kv_wgmma_wait<N>()
 *   kv_fence_operand(x)               keep accumulator x in place across wgmma issue/wait
 *   kv_make_desc_sw128(addr, lbo, sbo)  shared-memory matrix descriptor, 128-byte swizzle
 *   kv_desc_advance(desc, bytes)      that descriptor `bytes` further on (one add);
 *   kv_desc_advance(desc, n, bytes)   n blocks of `bytes` further on
 *   kv_warp_uniform(x)                x as lane 0 holds it, known to ptxas to be the
 *                                     same in every lane (every lane calls it)
 *   kv_consumer_regs(consumers, producer_regs)  registers per thread a consumer
 *                                     warpgroup can take (setmaxnreg.inc) when one
 *                                     producer warpgroup keeps producer_regs: the
 *                                     registers the launch holds (what ptxas allows
 *                                     each of its threads, a multiple of 8, times
 *                                     the threads) shared out, a multiple of 8, at
 *                                     most 240; 0 for one consumer (no rebalancing).
 *                                     Asking for more than the launch holds makes
 *                                     setmaxnreg.inc wait for ever.
 *   kv_setmaxnreg_fits(regs, consumers, producer_regs)  (host) whether a build of
 *                                     `regs` registers a thread (numRegs) holds them
 *   kv_setmaxnreg_check(kernel, consumers, producer_regs, cache)  (host) the same for
 *                                     a kernel, from cudaFuncGetAttributes: 1, 0, or -1
 *                                     where the runtime could not say
 *   kv_wgmma_bf16<N>(d, da, db, scale_d)  d[N/2] (+)= A(64x16, K-major) * B(16xN,
 *                                     N-major) for N in 64, 128, 192, 256; scale_d 0
 *                                     overwrites d. Accumulator layout: warp w of the
 *                                     warpgroup owns rows 16w..16w+15; d[4j + e] is row
 *                                     16w + lane/4 + 8*(e/2), column 8j + 2*(lane%4) + e%2
 *   kv_wgmma_bf16_mn_a<N>(d, da, db, scale_d)  the same shape with A MN-major and B
 *                                     K-major (a GEMM computed transposed, the weights'
 *                                     columns as the MMA's rows), N in 8, 16, 32, 64, 128
 *
 * Host functions:
 *
 *   kv_tma_map_2d(map, base, inner, outer, box_inner, box_outer)  encode a 2-D
 *                                     row-major bf16 tensor map, 128-byte swizzle,
 *                                     zero fill out of range; false if the driver
 *                                     entry point is missing or encoding fails. The
 *                                     last 8 maps encoded on the calling thread are
 *                                     kept and returned again for the same arguments
 *   kv_tma_map_2d_ld(map, base, inner, outer, ld, box_inner, box_outer)  the same
 *                                     for a window of a wider matrix: rows `ld`
 *                                     elements apart, `inner` of them in the map
 */
#ifndef KEVO_CUDA_TMA_CUH
#define KEVO_CUDA_TMA_CUH

#include <cuda.h>  // CUtensorMap and its enums only (header; libcuda is not linked)
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#ifndef KV_DEV
#define KV_DEV __device__ __forceinline__

constexpr int kv_launch_regs(int threads) {  // per thread, at one CTA per SM
  return (65536 / threads) / 8 * 8 > 255 ? 255 : (65536 / threads) / 8 * 8;
}
constexpr int kv_consumer_regs(int consumers, int producer_regs) {
  return consumers == 1 ? 0
         : ((kv_launch_regs((consumers + 1) * 128) * (consumers + 1) - producer_regs) / consumers) / 8 * 8 > 240
             ? 240
             : ((kv_launch_regs((consumers + 1) * 128) * (consumers + 1) - producer_regs) / consumers) / 8 * 8;
}
static_assert(kv_consumer_regs(2, 40) == 232 && kv_consumer_regs(2, 48) == 224 && kv_consumer_regs(3, 40) == 152,
              "the launch's registers shared out");
// Whether a build whose threads ptxas gave `regs` registers each (what
// cudaFuncGetAttributes calls numRegs) holds what its setmaxnreg pair asks
// for: a launcher checks this before the launch, so that a build short of
// registers fails instead of waiting for ever.
constexpr bool kv_setmaxnreg_fits(int regs, int consumers, int producer_regs) {
  return consumers == 1 ||
         (producer_regs + consumers * kv_consumer_regs(consumers, producer_regs)) <= regs * (consumers + 1);
}
static_assert(kv_setmaxnreg_fits(168, 2, 40) && kv_setmaxnreg_fits(168, 2, 48) && !kv_setmaxnreg_fits(160, 2, 40) &&
                  kv_setmaxnreg_fits(128, 3, 40) && !kv_setmaxnreg_fits(120, 3, 40),
              "a pool short of the setmaxnreg pair is refused");
// For a launcher: 1 where `kernel`'s build holds its setmaxnreg pair (or has
// none: one consumer), 0 where it falls short (launching it would hang),
// -1 where the runtime could not say. `cache` (a static of the launcher's,
// -1 at first) keeps the answer once the runtime has given one.
inline int kv_setmaxnreg_check(const void* kernel, int consumers, int producer_regs, int& cache) {
  if (consumers == 1) return 1;
  if (cache < 0) {
    cudaFuncAttributes fa = {};
    if (cudaFuncGetAttributes(&fa, kernel) != cudaSuccess) return -1;
    cache = kv_setmaxnreg_fits(fa.numRegs, consumers, producer_regs) ? 1 : 0;
  }
  return cache;
}
#endif

#ifndef KV_HAVE_SMEM_U32
#define KV_HAVE_SMEM_U32
KV_DEV uint32_t kv_smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
#endif

KV_DEV void kv_mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
KV_DEV void kv_mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
KV_DEV void kv_mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// A diagnostic, never a knob: -DKEVO_DIAG_MBAR_SUSPEND_HINT=NS gives each
// try_wait a suspend-time hint of NS nanoseconds (round 13: 0.14% at 4096^3
// on an H100, inside what one call separates; not taken).
#ifdef KEVO_DIAG_MBAR_SUSPEND_HINT
#define KV_MBAR_HINT_STR2(x) #x
#define KV_MBAR_HINT_STR(x) KV_MBAR_HINT_STR2(x)
#define KV_MBAR_HINT_OPERAND ", " KV_MBAR_HINT_STR(KEVO_DIAG_MBAR_SUSPEND_HINT)
#else
#define KV_MBAR_HINT_OPERAND ""
#endif
// Spins until the mbarrier at `bar` has completed the phase of `parity`;
// SEM qualifies the wait ("" or, say, ".acquire.cluster").
#define KV_MBAR_WAIT_LOOP(SEM)                                          \
  "{\n"                                                                 \
  ".reg .pred P1;\n"                                                    \
  "LAB_WAIT:\n"                                                         \
  "mbarrier.try_wait.parity" SEM ".shared::cta.b64 P1, [%0], %1" KV_MBAR_HINT_OPERAND ";\n" \
  "@P1 bra DONE;\n"                                                     \
  "bra LAB_WAIT;\n"                                                     \
  "DONE:\n"                                                             \
  "}\n"
KV_DEV void kv_mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(KV_MBAR_WAIT_LOOP("") ::"r"(bar), "r"(parity) : "memory");
}
KV_DEV void kv_tma_load_2d(uint32_t dst, const CUtensorMap* map, int c0, int c1,
                                            uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
// The same load with an L2 cache-policy operand (createpolicy).
KV_DEV void kv_tma_load_2d_hint(uint32_t dst, const CUtensorMap* map, int c0, int c1,
                                                 uint32_t bar, uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar), "l"(policy)
      : "memory");
}
// Multicast variant: the box lands at the same smem offset in every CTA of
// cta_mask and completes bytes on the mbarrier at the same offset in each.
KV_DEV void kv_tma_load_2d_mc(uint32_t dst, const CUtensorMap* map, int c0, int c1,
                                               uint32_t bar, uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar), "h"(cta_mask)
      : "memory");
}
// TMA store: the box at shared src goes to (c0 inner, c1 outer) of a tensor
// map; out-of-range parts of the box are not written. Tracked by bulk groups:
// the issuing thread commits (kv_bulk_commit) and waits (kv_bulk_wait_read<N>
// before src may be overwritten, kv_bulk_wait<N> for the writes themselves).
// Generic-proxy writes to src must be fenced first (kv_fence_async_smem).
KV_DEV void kv_tma_store_2d(const CUtensorMap* map, uint32_t src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(c0), "r"(c1), "r"(src)
               : "memory");
}
KV_DEV void kv_bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
template <int N>
KV_DEV void kv_bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
template <int N>
KV_DEV void kv_bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}
KV_DEV void kv_stmatrix_x4(uint32_t addr, __nv_bfloat162 r0, __nv_bfloat162 r1, __nv_bfloat162 r2,
                           __nv_bfloat162 r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
               "r"(reinterpret_cast<const uint32_t&>(r0)), "r"(reinterpret_cast<const uint32_t&>(r1)),
               "r"(reinterpret_cast<const uint32_t&>(r2)), "r"(reinterpret_cast<const uint32_t&>(r3))
               : "memory");
}
// This thread's shared-memory writes become visible to the async proxy (TMA).
KV_DEV void kv_fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// Arrive on the mbarrier at local offset `bar` in CTA `rank` of the cluster.
KV_DEV void kv_mbar_arrive_cluster(uint32_t bar, uint32_t rank) {
  asm volatile(
      "{\n"
      ".reg .b32 remAddr32;\n"
      "mapa.shared::cluster.u32 remAddr32, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remAddr32];\n"
      "}\n" ::"r"(bar),
      "r"(rank)
      : "memory");
}
// Waits for the phase of `parity` of a local mbarrier whose arrivals may come
// from other CTAs of the cluster: what they wrote before arriving (release,
// cluster scope) is visible after it.
KV_DEV void kv_mbar_wait_cluster(uint32_t bar, uint32_t parity) {
  asm volatile(KV_MBAR_WAIT_LOOP(".acquire.cluster") ::"r"(bar), "r"(parity) : "memory");
}
// Stores `value` at local offset `slot` in CTA `rank` of the cluster, then
// arrives there on the mbarrier at `bar` (release, cluster scope): a reader
// that waited for the barrier's phase sees the value.
KV_DEV void kv_publish_cluster(uint32_t slot, uint32_t value, uint32_t bar, uint32_t rank) {
  asm volatile(
      "{\n"
      ".reg .b32 remSlot, remBar;\n"
      "mapa.shared::cluster.u32 remSlot, %0, %2;\n"
      "mapa.shared::cluster.u32 remBar, %1, %2;\n"
      "st.shared::cluster.u32 [remSlot], %3;\n"
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remBar];\n"
      "}\n" ::"r"(slot),
      "r"(bar), "r"(rank), "r"(value)
      : "memory");
}
KV_DEV void kv_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::
                   : "memory");
}
KV_DEV uint32_t kv_cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
KV_DEV void kv_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
KV_DEV void kv_wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
KV_DEV void kv_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accumulator reads/writes across wgmma issue/wait.
KV_DEV void kv_fence_operand(float& x) { asm volatile("" : "+f"(x)::"memory"); }
KV_DEV void kv_named_barrier(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
KV_DEV void kv_named_arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// Shared-memory matrix descriptor, 128-byte swizzle (layout type 1 in bits 62-63).
// Addresses and byte offsets are encoded >> 4 in 14-bit fields.
KV_DEV uint64_t kv_make_desc_sw128(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)((lbo >> 4) & 0x3FFF) << 16) |
         ((uint64_t)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);
}

// The descriptor of the matrix `bytes` (a multiple of 16) further on in
// shared memory: a stage of a ring, a k16 or m64 step. The address field
// holds address >> 4 in 14 bits, and shared memory (below 256 KB) never
// carries out of it, so this is one add; built once from stage 0's
// descriptor, a main loop's descriptors cost an add each per k tile.
KV_DEV uint64_t kv_desc_advance(uint64_t desc, uint32_t bytes) { return desc + (bytes >> 4); }
// The same, `count` blocks of `bytes_each` on (stage s of a ring: count s);
// the multiply by bytes_each / 16 saves ptxas a shift per descriptor.
KV_DEV uint64_t kv_desc_advance(uint64_t desc, uint32_t count, uint32_t bytes_each) {
  return desc + count * (bytes_each >> 4);
}

// x as lane 0 of the warp holds it (every lane of the warp calls this
// together). ptxas knows the result is the same in every lane, so what is
// built from it stays in uniform registers: computed from threadIdx, a
// consumer warpgroup's index put every wgmma descriptor of a main loop in
// ordinary registers, moved to uniform ones before each wgmma (twice the
// loop's instructions; bench/micro/sass_loop.py shows it).
KV_DEV int kv_warp_uniform(int x) { return __shfl_sync(0xffffffffu, x, 0); }

// wgmma.mma_async m64nNk16, f32 += bf16 * bf16, A and B from shared memory,
// A K-major (imm-trans-a 0), B N-major (imm-trans-b 1); scale_d 0 overwrites d.
KV_DEV void kv_wgmma_n64(float* d, uint64_t da, uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, %32, %33, p, 1, 1, 0, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(da), "l"(db), "r"(scale_d));
}
KV_DEV void kv_wgmma_n128(float* d, uint64_t da, uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, 0, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(scale_d));
}
KV_DEV void kv_wgmma_n192(float* d, uint64_t da, uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
      "}, %96, %97, p, 1, 1, 0, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
      : "l"(da), "l"(db), "r"(scale_d));
}
KV_DEV void kv_wgmma_n256(float* d, uint64_t da, uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, p, 1, 1, 0, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(da), "l"(db), "r"(scale_d));
}

template <int N>
KV_DEV void kv_wgmma_bf16(float* d, uint64_t da, uint64_t db, int scale_d) {
  if constexpr (N == 64) kv_wgmma_n64(d, da, db, scale_d);
  else if constexpr (N == 128) kv_wgmma_n128(d, da, db, scale_d);
  else if constexpr (N == 192) kv_wgmma_n192(d, da, db, scale_d);
  else kv_wgmma_n256(d, da, db, scale_d);
}

// wgmma.mma_async m64nNk16, f32 += bf16 * bf16, A and B from shared memory,
// A MN-major (imm-trans-a 1), B K-major (imm-trans-b 0): the operands of a GEMM
// computed transposed (C^T = B^T A^T) with B's columns as the MMA's rows.
// N is 8, 16, 32, 64 or 128; d holds N/2 floats per thread, in kv_wgmma_bf16's layout.
KV_DEV void kv_wgmma_mn_a_n8(float* d, uint64_t da, uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3"
      "}, %4, %5, p, 1, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "l"(da), "l"(db), "r"(scale_d));
}
KV_DEV void kv_wgmma_mn_a_n16(float* d, uint64_t da, uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7"
      "}, %8, %9, p, 1, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
      : "l"(da), "l"(db), "r"(scale_d));
}
KV_DEV void kv_wgmma_mn_a_n32(float* d, uint64_t da, uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
      "}, %16, %17, p, 1, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "l"(da), "l"(db), "r"(scale_d));
}
KV_DEV void kv_wgmma_mn_a_n64(float* d, uint64_t da, uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, %32, %33, p, 1, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(da), "l"(db), "r"(scale_d));
}
KV_DEV void kv_wgmma_mn_a_n128(float* d, uint64_t da, uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(scale_d));
}
template <int N>
KV_DEV void kv_wgmma_bf16_mn_a(float* d, uint64_t da, uint64_t db, int scale_d) {
  static_assert(N == 8 || N == 16 || N == 32 || N == 64 || N == 128, "N must be 8, 16, 32, 64 or 128");
  if constexpr (N == 8) kv_wgmma_mn_a_n8(d, da, db, scale_d);
  else if constexpr (N == 16) kv_wgmma_mn_a_n16(d, da, db, scale_d);
  else if constexpr (N == 32) kv_wgmma_mn_a_n32(d, da, db, scale_d);
  else if constexpr (N == 64) kv_wgmma_mn_a_n64(d, da, db, scale_d);
  else kv_wgmma_mn_a_n128(d, da, db, scale_d);
}

KV_DEV uint64_t kv_evict_first_policy() {
  uint64_t pol;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(pol));
  return pol;
}

KV_DEV void kv_ld_cluster_f32x8(float (&v)[8], uint32_t addr, uint32_t rank) {
  asm volatile(
      "{\n.reg .b32 ra;\n"
      "mapa.shared::cluster.u32 ra, %8, %9;\n"
      "ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [ra];\n"
      "ld.shared::cluster.v4.f32 {%4, %5, %6, %7}, [ra+16];\n}\n"
      : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3]), "=f"(v[4]), "=f"(v[5]), "=f"(v[6]), "=f"(v[7])
      : "r"(addr), "r"(rank)
      : "memory");
}

// cuTensorMapEncodeTiled from the driver, looked up once through the runtime.
inline PFN_cuTensorMapEncodeTiled_v12000 kv_encode_tiled() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  if (!fn) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                         &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }
  return fn;
}

// 2-D row-major bf16 tensor [outer][inner], box [box_outer][box_inner], 128B swizzle.
// A map is a function of these arguments alone, so the last few encoded on
// this thread are kept and handed out again: a decode GEMM's launch is called
// with the same tensors call after call, and its host time is part of what a
// caller pays per token.
inline bool kv_tma_map_2d_ld(CUtensorMap* map, const void* base, uint64_t inner, uint64_t outer, uint64_t ld,
                             uint32_t box_inner, uint32_t box_outer) {
  struct Entry {
    const void* base;
    uint64_t inner, outer, ld;
    uint32_t box_inner, box_outer;
    CUtensorMap map;
  };
  constexpr int kEntries = 8;
  thread_local Entry kept[kEntries];
  thread_local int used = 0, next = 0;
  for (int i = 0; i < used; ++i) {
    const Entry& e = kept[i];
    if (e.base == base && e.inner == inner && e.outer == outer && e.ld == ld && e.box_inner == box_inner &&
        e.box_outer == box_outer) {
      *map = e.map;
      return true;
    }
  }
  PFN_cuTensorMapEncodeTiled_v12000 fn = kv_encode_tiled();
  if (!fn) return false;
  const cuuint64_t dims[2] = {inner, outer};
  const cuuint64_t strides[1] = {ld * 2};  // bytes, dimension 1
  const cuuint32_t box[2] = {box_inner, box_outer};
  const cuuint32_t estr[2] = {1, 1};
  if (fn(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides, box, estr,
         CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
         CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
    return false;
  kept[next] = Entry{base, inner, outer, ld, box_inner, box_outer, *map};
  next = (next + 1) % kEntries;
  if (used < kEntries) ++used;
  return true;
}

inline bool kv_tma_map_2d(CUtensorMap* map, const void* base, uint64_t inner, uint64_t outer,
                          uint32_t box_inner, uint32_t box_outer) {
  return kv_tma_map_2d_ld(map, base, inner, outer, inner, box_inner, box_outer);
}

#endif  // KEVO_CUDA_TMA_CUH
/* kevo: end kevo_cuda_tma.cuh */
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
