/* kevo run 1 best for gemm_swiglu-64x4096x14336: median 87.7 us (94% of roof)
 * family wgmma (/work/main/targets/cuda/kernels/gemm_swiglu/wgmma.cu), knobs baked in: BHINT=0 BN=128 KEEP=0 NCONS=1 SK=0 SPLIT=1 STAGES=2 WGM=64
 */
#define BHINT 0
#define BN 128
#define KEEP 0
#define NCONS 1
#define SK 0
#define SPLIT 1
#define STAGES 2
#define WGM 64
/* the shapes it was searched at (kevo defines its task's own when it compiles) */
#ifndef KEVO_RANK_A
#define KEVO_RANK_A 2
#endif
#ifndef KEVO_DIM_A_0
#define KEVO_DIM_A_0 64
#endif
#ifndef KEVO_DIM_A_1
#define KEVO_DIM_A_1 4096
#endif
#ifndef KEVO_LAST_A
#define KEVO_LAST_A 4096
#endif
#ifndef KEVO_RANK_Wg
#define KEVO_RANK_Wg 2
#endif
#ifndef KEVO_DIM_Wg_0
#define KEVO_DIM_Wg_0 4096
#endif
#ifndef KEVO_DIM_Wg_1
#define KEVO_DIM_Wg_1 14336
#endif
#ifndef KEVO_LAST_Wg
#define KEVO_LAST_Wg 14336
#endif
#ifndef KEVO_RANK_Wu
#define KEVO_RANK_Wu 2
#endif
#ifndef KEVO_DIM_Wu_0
#define KEVO_DIM_Wu_0 4096
#endif
#ifndef KEVO_DIM_Wu_1
#define KEVO_DIM_Wu_1 14336
#endif
#ifndef KEVO_LAST_Wu
#define KEVO_LAST_Wu 14336
#endif
#ifndef KEVO_RANK_y
#define KEVO_RANK_y 2
#endif
#ifndef KEVO_DIM_y_0
#define KEVO_DIM_y_0 64
#endif
#ifndef KEVO_DIM_y_1
#define KEVO_DIM_y_1 14336
#endif
#ifndef KEVO_LAST_y
#define KEVO_LAST_y 14336
#endif

/* gemm_swiglu / wgmma — the fused gate/up MLP on Hopper: TMA + mbarrier ring + wgmma.
 *
 * y[M,N] = silu(A·Wg) * (A·Wu), silu(g) = g / (1 + exp(-g)); A, Wg, Wu, y
 * row-major bf16, fp32 accumulation, bf16 out.
 *
 * At decode the two weight matrices are almost all the bytes; this family
 * streams them with the Hopper copy engine instead of per-thread copies. One
 * thread block computes a BM x BN tile of y, BM = NCONS * WGM. Warpgroup 0 is
 * the producer: one thread issues TMA loads of a BM x 64 slice of A and the
 * 64 x BN slices of Wg and Wu (BN/64 boxes of 64 x 64 each, 128-byte swizzle)
 * per k tile into a STAGES-deep ring, with an L2 evict-first hint on the
 * weights (BHINT), and signals the stage's "full" mbarrier with the byte
 * count. Warpgroups 1..NCONS are consumers: each issues wgmma m64nBNk16 twice
 * per k16 step and m64 tile, into a g and a u accumulator set, from one A
 * descriptor, and releases the stage on its "empty" mbarrier once the wgmmas
 * that read it are done. The epilogue applies silu(g) * u in registers and
 * stores bf16 y; g and u never reach global memory. Tiles are rastered with M
 * fastest, so the CTAs that read the same weight columns run together and
 * share them through L2.
 *
 * SPLIT > 1 splits K over a thread-block cluster of SPLIT CTAs (grid.y): at
 * decode the tiles of y are too few to fill the SMs. Each CTA runs the
 * pipeline over 1/SPLIT of the k tiles, the consumers store their fp32 g and
 * u partials in their own shared memory, and after a cluster barrier CTA r
 * sums its 1/SPLIT of the tile's valid rows over all ranks in rank order
 * (deterministic) through distributed shared memory, applies the epilogue
 * (silu needs the whole sum) and stores y. No workspace, no second pass.
 *
 * SK 1 makes the grid persistent and stream-K instead: as many CTAs as are
 * resident at once, each taking an even share of all the tiles' k tiles
 * (kevo_cuda_tile_walk.cuh), where one CTA per tile (224 tiles of 128 x 64 at
 * N = 14336) leaves the last wave part-empty and a tile per SM (112 of
 * 128 x 128) leaves 20 SMs idle. A CTA that takes the start of a tile but not
 * its end leaves its fp32 g and u partials in a static workspace slot of its
 * own and raises a flag holding the launch's number; the CTA with the tile's
 * end waits for the lower CTAs' flags, adds their partials in order
 * (deterministic for a given grid, i.e. GPU), applies the epilogue and
 * stores y. Two launches of this module must not run at the same time (on
 * two streams): they would share the workspace.
 *
 * Fast path (checked at launch): K % 8 == 0, N % 8 == 0 (TMA strides are
 * multiples of 16 bytes), 16-byte aligned pointers; TMA zero-fills the boxes
 * past M, N and K. Other shapes run a one-thread-per-output fallback.
 * Hopper primitives: kevo_cuda_tma.cuh.
 *
 * Knobs:
 *   BN       block tile width = wgmma N (64, 128).
 *   WGM      rows of y per consumer warpgroup: 64 or 128 (two m64 tiles);
 *            WGM/64 * BN fp32 accumulators per thread (g and u), at most 128.
 *   NCONS    consumer warpgroups per block (BM = NCONS * WGM).
 *   STAGES   depth of the TMA ring ((BM + 2 * BN) * 128 bytes each).
 *   KEEP     1: the next k tile's wgmmas queue behind the current ones (a
 *            stage is released one tile later); 0: wait every tile.
 *   SPLIT    split-K cluster size (1 = none).
 *   SK       1: the persistent stream-K grid above (needs SPLIT 1).
 *   BHINT    1: the weight loads carry an L2 evict-first policy; 0: none.
 *
 * Starts (besides the default): BM = NCONS * 64 covers M up to 128, so each
 * weight tile is streamed once, with BN 128 or 64 and the deepest ring that
 * fits. (The default, NCONS 1 with SPLIT 2, streams every weight tile twice
 * at M = 128, and a random move rarely reaches NCONS 2: SPLIT > 1 needs
 * NCONS 1.) And the same BM with BN 64 on the stream-K grid.
 */
// (baked in) kevo start WGM = 64, NCONS = 1 + (DIM_A_0 > 64), BN = 128, SPLIT = 1, STAGES = 230000 / ((NCONS * WGM + 2 * BN) * 128)
// (baked in) kevo start WGM = 64, NCONS = 1 + (DIM_A_0 > 64), BN = 64, SPLIT = 1, STAGES = 230000 / ((NCONS * WGM + 2 * BN) * 128)
// (baked in) kevo start WGM = 64, NCONS = 1 + (DIM_A_0 > 64), BN = 64, SPLIT = 1, SK = 1, STAGES = 230000 / ((NCONS * WGM + 2 * BN) * 128)
// (baked in) kevo knob BN 128 {64, 128}
// (baked in) kevo knob WGM 64 {64, 128}
// (baked in) kevo knob NCONS 1 {1, 2}
// (baked in) kevo knob STAGES 4 {2, 3, 4, 5, 6, 8, 10, 12}
// (baked in) kevo knob KEEP 1 {0, 1}
// (baked in) kevo knob SPLIT 2 {1, 2, 3, 4, 6, 8}
// (baked in) kevo knob BHINT 1 {0, 1}
// (baked in) kevo knob SK 0 {0, 1}
// (baked in) kevo require WGM / 64 * BN <= 128
// (baked in) kevo require STAGES * (NCONS * WGM + 2 * BN) * 128 + 2048 <= 232448
// (baked in) kevo require SPLIT == 1 || NCONS == 1
// (baked in) kevo require SPLIT == 1 || 2 * NCONS * WGM * (BN + 4) * 4 + 2048 <= 232448
// (baked in) kevo require SK == 0 || SPLIT == 1
#ifndef BN
#define BN 128
#endif
#ifndef WGM
#define WGM 64
#endif
#ifndef NCONS
#define NCONS 1
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef KEEP
#define KEEP 1
#endif
#ifndef SPLIT
#define SPLIT 2
#endif
#ifndef BHINT
#define BHINT 1
#endif
#ifndef SK
#define SK 0
#endif

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

/* kevo: begin kevo_cuda_tile_walk.cuh (inlined by kevo; sha256 c08315c67b0bdf2f) */
/* kevo_cuda_tile_walk.cuh — which output tiles, and which of their k tiles, a
 * persistent worker (a CTA, or a cluster of CTAs working as one) of a GEMM
 * takes: whole tiles in turn, or a stream-K share of the tiles that would
 * leave the last wave part-empty and then whole tiles. Shipped with kevo in
 * targets/cuda/include; a kernel includes it by name and kevo inlines it.
 * Plain C++ as well as CUDA (every function is __host__ __device__ under
 * nvcc), so kevo's CPU tests check the schedule that its kernels run.
 *
 * The walk of worker w of G over T tiles of KT k tiles each:
 *
 *   - with stream-K, when G does not divide T, first: the last T % G + G
 *     tiles (all T when T < G) are not taken whole. Their k tiles, laid end to
 *     end (tile by tile, KT each), are cut into G ranges as even as integers
 *     allow; worker w takes range [S*w/G, S*(w+1)/G), S = (T % G + G) * KT;
 *   - then data-parallel: tiles w, w + G, w + 2G, ... below dp_tiles, each
 *     whole.
 *
 * So every worker takes about 1 + (T % G) / G tiles' worth of k tiles and
 * then (T / G - 1) whole tiles, where the plain walk gives some workers one
 * whole tile more than others (the part-empty last wave). The stream-K part
 * comes first so that a tile's fix-up (the wait, reading the partials) is
 * hidden behind the loads of the whole tiles after it.
 *
 * A worker walks its stream-K range from its end down: first the start (or a
 * middle part) of the tile its range ends in, then whole tiles, then the end
 * of the tile its range starts in. A unit that stops short of its tile's end
 * (kb < KT) is a partial: the worker leaves it for a higher worker to add,
 * and a worker has at most one (the first unit of its walk). A unit that
 * ends its tile but starts past its start (ka > 0) completes the tile: its
 * worker adds the partials of the workers kv_first_holder() .. w - 1 (those
 * of them that kv_holds_sk()), which hold the tile's earlier k tiles, then
 * stores the tile. A worker so only waits on lower workers, and on their
 * first unit: lower workers start first, and nothing they do before that
 * unit waits on anyone.
 *
 *   KvTileWalk walk = kv_tile_walk(T, KT, G, w, streamk);
 *   int tile, ka, kb;
 *   while (kv_next_unit(walk, tile, ka, kb)) { ... k tiles [ka, kb) of tile ... }
 *
 * Under nvcc, the flags that say a partial is written (device functions):
 *
 *   kv_flag_raise(flag, value)  after the partial's stores and a
 *                               __threadfence() by every thread that wrote
 *                               it, and a barrier: one thread stores value
 *                               with release semantics (GPU scope)
 *   kv_flag_wait(flag, value)   spins until the flag holds value (acquire,
 *                               GPU scope); then the partial may be read
 *
 * A kernel gives each launch a value of its own (a launch counter), so a flag
 * left by an earlier launch, one stopped half-way included, never passes.
 */
#ifndef KEVO_CUDA_TILE_WALK_CUH
#define KEVO_CUDA_TILE_WALK_CUH

#include <stdint.h>

#if defined(__CUDACC__)
#define KV_WALK_FN __host__ __device__ __forceinline__
#else
#define KV_WALK_FN inline
#endif

struct KvTileWalk {
  int tiles, ktiles, workers, w;
  int dp_tiles;      // tiles [0, dp_tiles) are taken whole
  int64_t sk_iters;  // the k tiles of tiles [dp_tiles, tiles), laid end to end
  int next_dp;       // this worker's next whole tile
  int64_t end;       // one past the stream-K k tile this worker takes next (walking down)
};

// First stream-K k tile of worker w (w == workers: one past the last).
KV_WALK_FN int64_t kv_sk_begin(const KvTileWalk& t, int w) { return t.sk_iters * w / t.workers; }

KV_WALK_FN KvTileWalk kv_tile_walk(int tiles, int ktiles, int workers, int w, bool streamk) {
  KvTileWalk t;
  t.tiles = tiles;
  t.ktiles = ktiles;
  t.workers = workers;
  t.w = w;
  t.dp_tiles = tiles;
  t.sk_iters = 0;
  const int rem = tiles % workers;
  if (streamk && rem != 0) {
    const int sk = tiles >= workers ? rem + workers : tiles;
    t.dp_tiles = tiles - sk;
    t.sk_iters = (int64_t)sk * ktiles;
  }
  t.next_dp = w;
  t.end = kv_sk_begin(t, w + 1);
  return t;
}

// The next unit of the walk: k tiles [ka, kb) of `tile`; false when done.
KV_WALK_FN bool kv_next_unit(KvTileWalk& t, int& tile, int& ka, int& kb) {
  const int64_t lo = kv_sk_begin(t, t.w);
  if (t.end > lo) {
    const int s = (int)((t.end - 1) / t.ktiles);  // among the stream-K tiles
    const int64_t start = (int64_t)s * t.ktiles;
    tile = t.dp_tiles + s;
    kb = (int)(t.end - start);
    ka = (int)((lo > start ? lo : start) - start);
    t.end -= kb - ka;
    return true;
  }
  if (t.next_dp < t.dp_tiles) {
    tile = t.next_dp;
    ka = 0;
    kb = t.ktiles;
    t.next_dp += t.workers;
    return true;
  }
  return false;
}

// The lowest worker holding k tiles of stream-K tile `tile`, whose end this
// worker holds: the workers [kv_first_holder(t, tile), t.w) that hold any
// stream-K k tiles at all (kv_holds_sk: with fewer k tiles than workers, some
// hold none) hold its k tiles before this worker's, in that order.
KV_WALK_FN bool kv_holds_sk(const KvTileWalk& t, int q) { return kv_sk_begin(t, q) < kv_sk_begin(t, q + 1); }

KV_WALK_FN int kv_first_holder(const KvTileWalk& t, int tile) {
  const int64_t start = (int64_t)(tile - t.dp_tiles) * t.ktiles;
  int q = t.w;
  while (q > 0 && kv_sk_begin(t, q) > start) --q;
  return q;
}

#if defined(__CUDACC__)
__device__ __forceinline__ void kv_flag_raise(unsigned* flag, unsigned value) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(flag), "r"(value) : "memory");
}
__device__ __forceinline__ void kv_flag_wait(const unsigned* flag, unsigned value) {
  unsigned seen = 0;
  do {
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(seen) : "l"(flag) : "memory");
  } while (seen != value);
}
#endif

#undef KV_WALK_FN

#endif  // KEVO_CUDA_TILE_WALK_CUH
/* kevo: end kevo_cuda_tile_walk.cuh */
/* kevo: begin kevo_cuda_tma.cuh (inlined by kevo; sha256 57cfdcdc921e4b11) */
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
 *   kv_cluster_sync()                 barrier.cluster arrive.release + wait.acquire
 *   kv_cluster_rank()                 %cluster_ctarank
 *   kv_ld_cluster_f32x8(v, addr, r)   8 floats at local shared address addr of CTA r
 *   kv_named_barrier(id, count)       bar.sync id, count
 *   kv_named_arrive(id, count)        bar.arrive id, count (signal without waiting)
 *   kv_wgmma_fence(), kv_wgmma_commit(), kv_wgmma_wait<N>()
 *   kv_fence_operand(x)               keep accumulator x in place across wgmma issue/wait
 *   kv_make_desc_sw128(addr, lbo, sbo)  shared-memory matrix descriptor, 128-byte swizzle
 *   kv_consumer_regs(consumers, producer_regs)  registers per thread a consumer
 *                                     warpgroup can take (setmaxnreg.inc) when one
 *                                     producer warpgroup keeps producer_regs: the
 *                                     64K register file shared out, a multiple of 8,
 *                                     at most 240; 0 for one consumer (no rebalancing)
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

constexpr int kv_consumer_regs(int consumers, int producer_regs) {
  return consumers == 1 ? 0
         : ((65536 - 128 * producer_regs) / (consumers * 128)) / 8 * 8 > 240
             ? 240
             : ((65536 - 128 * producer_regs) / (consumers * 128)) / 8 * 8;
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
KV_DEV void kv_mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred P1;\n"
      "LAB_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
      "@P1 bra DONE;\n"
      "bra LAB_WAIT;\n"
      "DONE:\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
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
inline bool kv_tma_map_2d(CUtensorMap* map, const void* base, uint64_t inner, uint64_t outer,
              uint32_t box_inner, uint32_t box_outer) {
  struct Entry {
    const void* base;
    uint64_t inner, outer;
    uint32_t box_inner, box_outer;
    CUtensorMap map;
  };
  constexpr int kEntries = 8;
  thread_local Entry kept[kEntries];
  thread_local int used = 0, next = 0;
  for (int i = 0; i < used; ++i) {
    const Entry& e = kept[i];
    if (e.base == base && e.inner == inner && e.outer == outer && e.box_inner == box_inner &&
        e.box_outer == box_outer) {
      *map = e.map;
      return true;
    }
  }
  PFN_cuTensorMapEncodeTiled_v12000 fn = kv_encode_tiled();
  if (!fn) return false;
  const cuuint64_t dims[2] = {inner, outer};
  const cuuint64_t strides[1] = {inner * 2};  // bytes, dimension 1
  const cuuint32_t box[2] = {box_inner, box_outer};
  const cuuint32_t estr[2] = {1, 1};
  if (fn(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides, box, estr,
         CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
         CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
    return false;
  kept[next] = Entry{base, inner, outer, box_inner, box_outer, *map};
  next = (next + 1) % kEntries;
  if (used < kEntries) ++used;
  return true;
}

#endif  // KEVO_CUDA_TMA_CUH
/* kevo: end kevo_cuda_tma.cuh */
#include "kevo_kernel.h"

namespace {

typedef __nv_bfloat16 bf16;

constexpr int BM = NCONS * WGM;
constexpr int BK = 64;                 // one 128-byte swizzle span of bf16
constexpr int kMT = WGM / 64;          // m64 wgmma tiles per consumer
constexpr int kAcc = BN / 2;           // fp32 accumulators per thread per m64 tile, per matrix
constexpr int kThreads = (NCONS + 1) * 128;
constexpr int kAStage = BM * BK * 2;   // bytes
constexpr int kBBox = BK * 64 * 2;     // one 64(k) x 64(n) box of a weight
constexpr int kBStage = BK * BN * 2;   // one weight's slice; a stage holds Wg then Wu
constexpr int kStageBytes = kAStage + 2 * kBStage;
constexpr int kPipeBytes = STAGES * kStageBytes;
constexpr int kPartLd = BN + 4;        // padded fp32 row of a partial tile
constexpr int kPartBytes = SPLIT > 1 ? 2 * BM * kPartLd * 4 : 0;  // g then u
constexpr int kDataBytes = kPipeBytes > kPartBytes ? kPipeBytes : kPartBytes;
constexpr int kSmemBytes = 1024 /* alignment slack */ + kDataBytes + 2 * STAGES * 8;
// With two consumer warpgroups the producer gives most of its registers to them.
constexpr int kProducerRegs = 40;
constexpr int kConsumerRegs = kv_consumer_regs(NCONS, kProducerRegs);

static_assert(BN == 64 || BN == 128, "BN must be 64 or 128");
static_assert(WGM == 64 || WGM == 128, "WGM must be 64 or 128");
static_assert(2 * kMT * kAcc <= 128, "too many accumulators per thread");
static_assert(SPLIT >= 1 && SPLIT <= 8, "SPLIT must be 1..8 (portable cluster size)");
static_assert(kSmemBytes <= 232448, "shared memory over 227 KB");
static_assert(SK == 0 || SPLIT == 1, "SK needs SPLIT 1");

// Stream-K (SK 1): CTA c's g and u partials, 2 * kMT * kAcc floats per
// consumer thread laid out [i][thread] (each i one coalesced row), and its
// flag, which holds the number of the launch whose partials are in the slot.
constexpr int kSkSlots = 264;  // persistent CTAs at most (two per SM of a 132-SM part)
constexpr int kConsThreads = NCONS * 128;
constexpr int kSkSlotFloats = 2 * kMT * kAcc * kConsThreads;
__device__ float g_sk_part[SK ? kSkSlots * kSkSlotFloats : 1];
__device__ unsigned g_sk_ready[SK ? kSkSlots : 1];

__device__ __forceinline__ float silu_mul(float g, float u) { return g / (1.0f + __expf(-g)) * u; }

__global__ void __cluster_dims__(1, SPLIT, 1) __launch_bounds__(kThreads, 1)
    gemm_swiglu_wgmma_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmG,
                             const __grid_constant__ CUtensorMap tmU, bf16* __restrict__ Y, int M, int N, int K,
                             unsigned epoch) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // Stage buffers sit on 1024-byte boundaries (the swizzle pattern's period).
  const uint32_t raw = kv_smem_u32(smem_raw);
  const uint32_t s0 = (raw + 1023u) & ~1023u;
  const uint32_t sA = s0;
  const uint32_t sB = s0 + STAGES * kAStage;  // stage s: Wg boxes, then Wu boxes
  const uint32_t bar_full = s0 + kDataBytes;
  const uint32_t bar_empty = bar_full + STAGES * 8;
  float* part = reinterpret_cast<float*>(smem_raw + (s0 - raw));  // split-K partials (SPLIT > 1)

  const int wg = threadIdx.x / 128;
  const int tid_wg = threadIdx.x % 128;
  const int tiles_m = (M + BM - 1) / BM;
  const int tiles = tiles_m * ((N + BN - 1) / BN);
  // Tile t's origin, M fastest: the weight columns are shared in L2.
  auto origin = [&](int t, int& m0, int& n0) {
    m0 = (t % tiles_m) * BM;
    n0 = (t / tiles_m) * BN;
  };
  const int ktiles_all = (K + BK - 1) / BK;
  const int split_rank = SPLIT > 1 ? (int)blockIdx.y : 0;
  const int kt0 = (int)((int64_t)ktiles_all * split_rank / SPLIT);
  const int ktiles = (int)((int64_t)ktiles_all * (split_rank + 1) / SPLIT) - kt0;

  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      kv_mbar_init(bar_full + 8 * s, 1);           // the producer's arrive.expect_tx
      kv_mbar_init(bar_empty + 8 * s, NCONS * 4);  // every consumer warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (wg == 0) {
    // ------------------------------------------------------------ producer
    if constexpr (kConsumerRegs > 0) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs));
    if (tid_wg == 0) {
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmA)) : "memory");
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmG)) : "memory");
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmU)) : "memory");
      const uint64_t pol = BHINT ? kv_evict_first_policy() : 0;
      int s = 0;
      uint32_t phase = 0;  // parity of the empty-barrier phase to wait for
      int it = 0;          // k tiles issued so far, over all of this CTA's units
      // One CTA per tile (and split rank), or with SK a persistent CTA's walk.
      KvTileWalk walk = kv_tile_walk(tiles, ktiles, SK ? (int)gridDim.x : tiles, (int)blockIdx.x, SK);
      int tile, ka, kb;
      while (kv_next_unit(walk, tile, ka, kb)) {
        int m0, n0;
        origin(tile, m0, n0);
        for (int kt = ka; kt < kb; ++kt, ++it) {
          if (it >= STAGES) kv_mbar_wait(bar_empty + 8 * s, phase);
          const uint32_t full = bar_full + 8 * s;
          const int k = (kt0 + kt) * BK;
          kv_mbar_expect_tx(full, kStageBytes);
          kv_tma_load_2d(sA + s * kAStage, &tmA, k, m0, full);
          const uint32_t bg = sB + s * 2 * kBStage, bu = bg + kBStage;
#pragma unroll
          for (int j = 0; j < BN / 64; ++j) {
            if constexpr (BHINT) {
              kv_tma_load_2d_hint(bg + j * kBBox, &tmG, n0 + 64 * j, k, full, pol);
              kv_tma_load_2d_hint(bu + j * kBBox, &tmU, n0 + 64 * j, k, full, pol);
            } else {
              kv_tma_load_2d(bg + j * kBBox, &tmG, n0 + 64 * j, k, full);
              kv_tma_load_2d(bu + j * kBBox, &tmU, n0 + 64 * j, k, full);
            }
          }
          if (++s == STAGES) {
            s = 0;
            if (it >= STAGES) phase ^= 1;
          }
        }
      }
    }
  } else {
    // ------------------------------------------------------------ consumers
    if constexpr (kConsumerRegs > 0) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegs));
    const int cw = wg - 1;
    float accg[kMT][kAcc], accu[kMT][kAcc];
    auto fence_all = [&]() {
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int i = 0; i < kAcc; ++i) {
          kv_fence_operand(accg[mt][i]);
          kv_fence_operand(accu[mt][i]);
        }
    };
    // A: K-major, 128B swizzle, 8-row groups 1024 bytes apart; k16 step = +32
    // bytes. Weights: N-major, 8-k-row groups 1024 bytes apart, 64-column
    // boxes kBBox apart (LBO); k16 step = +16 rows * 128 bytes.
    const uint32_t a_row_off = (uint32_t)(cw * WGM) * 128u;
    const bool lane0 = (tid_wg & 31) == 0;
    // d[4j + e]: row 16w + lane/4 + 8*(e/2), column 8j + 2*(lane%4) + e%2.
    const int w = tid_wg >> 5;
    const int lane = tid_wg & 31;
    const int g = lane >> 2;
    const int t4 = lane & 3;
    int s = 0;
    uint32_t phase = 0;  // parity of the full-barrier phase to wait for
    // The producer's walk: k tiles [ka, kb) of tile `tile` per unit.
    KvTileWalk walk = kv_tile_walk(tiles, ktiles, SK ? (int)gridDim.x : tiles, (int)blockIdx.x, SK);
    int tile, ka, kb;
    while (kv_next_unit(walk, tile, ka, kb)) {
      int m0, n0;
      origin(tile, m0, n0);
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int i = 0; i < kAcc; ++i) accg[mt][i] = accu[mt][i] = 0.0f;
      int prev_s = 0;
      for (int kt = ka; kt < kb; ++kt) {
        kv_mbar_wait(bar_full + 8 * s, phase);
        fence_all();
        kv_wgmma_fence();
        const uint32_t a_base = sA + s * kAStage + a_row_off;
        const uint32_t g_base = sB + s * 2 * kBStage, u_base = g_base + kBStage;
#pragma unroll
        for (int ks = 0; ks < BK / 16; ++ks) {
          const uint64_t dg = kv_make_desc_sw128(g_base + ks * 16 * 128, kBBox, 1024);
          const uint64_t du = kv_make_desc_sw128(u_base + ks * 16 * 128, kBBox, 1024);
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt) {
            const uint64_t da = kv_make_desc_sw128(a_base + mt * 64 * 128 + ks * 32, 16, 1024);
            kv_wgmma_bf16<BN>(accg[mt], da, dg, 1);
            kv_wgmma_bf16<BN>(accu[mt], da, du, 1);
          }
        }
        kv_wgmma_commit();
        fence_all();
        if constexpr (KEEP) {
          kv_wgmma_wait<1>();  // the previous tile's wgmmas are done: release its stage
          if (kt > ka && lane0) kv_mbar_arrive(bar_empty + 8 * prev_s);
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
      fence_all();
      // The last k tile's stage: the producer may need it for the next unit.
      if (KEEP && kb > ka && lane0) kv_mbar_arrive(bar_empty + 8 * prev_s);

      if constexpr (SK) {
        const int ct = (int)threadIdx.x - 128;  // 0 .. kConsThreads - 1
        if (kb < ktiles) {
          // The start (or a middle part) of a tile whose end a higher CTA
          // holds: g and u go to this CTA's slot, then its flag.
          float* out_p = g_sk_part + (size_t)blockIdx.x * kSkSlotFloats;
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
            for (int i = 0; i < kAcc; ++i) {
              __stcg(out_p + (size_t)(mt * kAcc + i) * kConsThreads + ct, accg[mt][i]);
              __stcg(out_p + (size_t)((kMT + mt) * kAcc + i) * kConsThreads + ct, accu[mt][i]);
            }
          __threadfence();
          kv_named_barrier(1, kConsThreads);  // every consumer's share is written
          if (ct == 0) kv_flag_raise(g_sk_ready + blockIdx.x, epoch);
          continue;
        }
        if (ka > 0) {
          // The end of a tile whose earlier k tiles lower CTAs hold: add
          // their partials, lowest first.
          for (int q = kv_first_holder(walk, tile); q < walk.w; ++q) {
            if (!kv_holds_sk(walk, q)) continue;
            kv_flag_wait(g_sk_ready + q, epoch);
            const float* in_p = g_sk_part + (size_t)q * kSkSlotFloats;
#pragma unroll
            for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
              for (int i = 0; i < kAcc; ++i) {
                accg[mt][i] += __ldcg(in_p + (size_t)(mt * kAcc + i) * kConsThreads + ct);
                accu[mt][i] += __ldcg(in_p + (size_t)((kMT + mt) * kAcc + i) * kConsThreads + ct);
              }
          }
        }
      }

      // ------------------------------------------------------------ epilogue
      if constexpr (SPLIT > 1) {
        kv_named_barrier(1, NCONS * 128);  // every consumer is done reading the stages
        float* pu = part + BM * kPartLd;
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
          for (int j = 0; j < BN / 8; ++j) {
            const int r = cw * WGM + mt * 64 + 16 * w + g;
            const int c = 8 * j + 2 * t4;
            *reinterpret_cast<float2*>(&part[r * kPartLd + c]) = make_float2(accg[mt][4 * j], accg[mt][4 * j + 1]);
            *reinterpret_cast<float2*>(&part[(r + 8) * kPartLd + c]) =
                make_float2(accg[mt][4 * j + 2], accg[mt][4 * j + 3]);
            *reinterpret_cast<float2*>(&pu[r * kPartLd + c]) = make_float2(accu[mt][4 * j], accu[mt][4 * j + 1]);
            *reinterpret_cast<float2*>(&pu[(r + 8) * kPartLd + c]) =
                make_float2(accu[mt][4 * j + 2], accu[mt][4 * j + 3]);
          }
      } else {
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          const int gm = m0 + cw * WGM + mt * 64 + 16 * w + g;
#pragma unroll
          for (int j = 0; j < BN / 8; ++j) {
            const int gn = n0 + 8 * j + 2 * t4;
            if (gn < N) {  // N % 8 == 0 and gn even: gn + 1 < N too
              if (gm < M)
                *reinterpret_cast<__nv_bfloat162*>(Y + (size_t)gm * N + gn) =
                    __floats2bfloat162_rn(silu_mul(accg[mt][4 * j], accu[mt][4 * j]),
                                          silu_mul(accg[mt][4 * j + 1], accu[mt][4 * j + 1]));
              if (gm + 8 < M)
                *reinterpret_cast<__nv_bfloat162*>(Y + (size_t)(gm + 8) * N + gn) =
                    __floats2bfloat162_rn(silu_mul(accg[mt][4 * j + 2], accu[mt][4 * j + 2]),
                                          silu_mul(accg[mt][4 * j + 3], accu[mt][4 * j + 3]));
            }
          }
        }
      }
    }
  }
  if constexpr (SPLIT > 1) {
    // Rank r's consumer threads sum chunks [r*chunks/SPLIT, (r+1)*chunks/SPLIT)
    // of the valid rows (8 columns each) over ranks 0..SPLIT-1 in order.
    kv_cluster_sync();
    if (wg > 0) {
      int m0, n0;
      origin((int)blockIdx.x, m0, n0);  // not persistent: this CTA's one tile
      const int rows = min(BM, M - m0);
      constexpr int kCpr = BN / 8;
      const int chunks = rows * kCpr;
      const int c_begin = (int)((int64_t)chunks * split_rank / SPLIT);
      const int c_end = (int)((int64_t)chunks * (split_rank + 1) / SPLIT);
      const uint32_t pg_local = kv_smem_u32(part);
      const uint32_t pu_local = pg_local + (uint32_t)(BM * kPartLd * 4);
      for (int id = c_begin + (int)threadIdx.x - 128; id < c_end; id += NCONS * 128) {
        const int row = id / kCpr;
        const int col = (id % kCpr) * 8;
        const int gn = n0 + col;
        if (gn >= N) continue;  // N % 8 == 0: a chunk is all in or all out
        const uint32_t off = (uint32_t)(row * kPartLd + col) * 4u;
        float gs[8], us[8];
#pragma unroll
        for (int q = 0; q < SPLIT; ++q) {
          float pg[8], pu[8];
          kv_ld_cluster_f32x8(pg, pg_local + off, (uint32_t)q);
          kv_ld_cluster_f32x8(pu, pu_local + off, (uint32_t)q);
#pragma unroll
          for (int e = 0; e < 8; ++e) {
            gs[e] = q == 0 ? pg[e] : gs[e] + pg[e];
            us[e] = q == 0 ? pu[e] : us[e] + pu[e];
          }
        }
        uint4 o;
        __nv_bfloat162* ob = reinterpret_cast<__nv_bfloat162*>(&o);
#pragma unroll
        for (int e = 0; e < 4; ++e)
          ob[e] = __floats2bfloat162_rn(silu_mul(gs[2 * e], us[2 * e]), silu_mul(gs[2 * e + 1], us[2 * e + 1]));
        *reinterpret_cast<uint4*>(Y + (size_t)(m0 + row) * N + gn) = o;
      }
    }
    kv_cluster_sync();  // no CTA exits while a peer may still read its partials
  }
}

// Ragged shapes: one thread per output, two fp32 accumulators.
__global__ void __launch_bounds__(256)
    gemm_swiglu_fallback_kernel(const bf16* __restrict__ A, const bf16* __restrict__ Wg, const bf16* __restrict__ Wu,
                                bf16* __restrict__ Y, int64_t M, int64_t N, int64_t K) {
  const int64_t idx = (int64_t)blockIdx.x * 256 + threadIdx.x;
  if (idx >= M * N) return;
  const int64_t i = idx / N, j = idx - i * N;
  float g = 0.0f, u = 0.0f;
  for (int64_t k = 0; k < K; ++k) {
    const float av = __bfloat162float(A[i * K + k]);
    g = fmaf(av, __bfloat162float(Wg[k * N + j]), g);
    u = fmaf(av, __bfloat162float(Wu[k * N + j]), u);
  }
  Y[idx] = __float2bfloat16_rn(silu_mul(g, u));
}

}  // namespace

extern "C" KEVO_EXPORT int kevo_launch(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                                       const double* scalars, int n_scalars, cudaStream_t stream) {
  (void)scalars;
  if (n_in != 3 || n_out != 1 || n_scalars != 0) return KEVO_ERR_ARGS;
  for (int t = 0; t < 4; ++t) {
    const kevo_tensor* x = t < 3 ? &in[t] : &out[0];
    if (x->dtype != KEVO_BF16 || x->rank != 2 || !kevo_is_contiguous(x)) return KEVO_ERR_UNSUPPORTED;
  }
  const int64_t M64 = in[0].shape[0], K64 = in[0].shape[1], N64 = in[1].shape[1];
  if (in[1].shape[0] != K64 || in[2].shape[0] != K64 || in[2].shape[1] != N64 || out[0].shape[0] != M64 ||
      out[0].shape[1] != N64)
    return KEVO_ERR_ARGS;
  if (M64 > INT32_MAX - 1024 || N64 > INT32_MAX - 1024 || K64 > INT32_MAX - 1024) return KEVO_ERR_UNSUPPORTED;
  if (M64 == 0 || N64 == 0) return KEVO_OK;
  const int M = (int)M64, N = (int)N64, K = (int)K64;
  const bf16* A = static_cast<const bf16*>(in[0].data);
  const bf16* Wg = static_cast<const bf16*>(in[1].data);
  const bf16* Wu = static_cast<const bf16*>(in[2].data);
  bf16* Y = static_cast<bf16*>(out[0].data);
  const bool aligned = ((reinterpret_cast<uintptr_t>(A) | reinterpret_cast<uintptr_t>(Wg) |
                         reinterpret_cast<uintptr_t>(Wu) | reinterpret_cast<uintptr_t>(Y)) & 15) == 0;
  if (K > 0 && K % 8 == 0 && N % 8 == 0 && aligned) {
    const int64_t tiles = (int64_t)((M + BM - 1) / BM) * ((N + BN - 1) / BN);
    if (tiles > INT32_MAX) return KEVO_ERR_UNSUPPORTED;
    CUtensorMap mapA, mapG, mapU;
    if (!kv_tma_map_2d(&mapA, A, (uint64_t)K, (uint64_t)M, BK, BM) ||
        !kv_tma_map_2d(&mapG, Wg, (uint64_t)N, (uint64_t)K, 64, BK) ||
        !kv_tma_map_2d(&mapU, Wu, (uint64_t)N, (uint64_t)K, 64, BK))
      return KEVO_ERR_RUNTIME;
    if (cudaFuncSetAttribute(gemm_swiglu_wgmma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes) !=
        cudaSuccess)
      return KEVO_ERR_RUNTIME;
    int64_t grid = tiles;
    if (SK) {
      // As many CTAs as are resident at once (a CTA waits for lower ones: all
      // must be), a workspace slot each, and a k tile each at least.
      int dev = 0, sms = 0, fit = 0;
      if (cudaGetDevice(&dev) != cudaSuccess ||
          cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms <= 0 ||
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, gemm_swiglu_wgmma_kernel, kThreads, kSmemBytes) !=
              cudaSuccess ||
          fit <= 0)
        return KEVO_ERR_RUNTIME;
      grid = (int64_t)sms * fit;
      if (grid > kSkSlots) grid = kSkSlots;
      const int64_t work = tiles * ((K + BK - 1) / BK);
      if (grid > work) grid = work;
    }
    // The launch's number: a stream-K flag raised by an earlier launch (one
    // that was stopped half-way included) never passes for this one's.
    static unsigned launches = 0;
    if (++launches == 0) launches = 1;
    gemm_swiglu_wgmma_kernel<<<dim3((unsigned)grid, SPLIT), kThreads, kSmemBytes, stream>>>(mapA, mapG, mapU, Y, M,
                                                                                           N, K, launches);
  } else {
    const int64_t blocks = (M64 * N64 + 255) / 256;
    if (blocks > INT32_MAX) return KEVO_ERR_UNSUPPORTED;
    gemm_swiglu_fallback_kernel<<<(unsigned)blocks, 256, 0, stream>>>(A, Wg, Wu, Y, M64, N64, K64);
  }
  return cudaGetLastError() == cudaSuccess ? KEVO_OK : KEVO_ERR_RUNTIME;
}
