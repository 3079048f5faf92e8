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
 * two streams): they would share the workspace. The consumers read their
 * units from shared memory, where a thread of the producer warpgroup that
 * issues no loads publishes the walk (walked in the consumers, its divisions
 * kept ptxas from proving their main loop warp-uniform: 100.5 SASS
 * instructions per warp and k tile instead of 43).
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
// @kevo start WGM = 64, NCONS = 1 + (DIM_A_0 > 64), BN = 128, SPLIT = 1, STAGES = 230000 / ((NCONS * WGM + 2 * BN) * 128)
// @kevo start WGM = 64, NCONS = 1 + (DIM_A_0 > 64), BN = 64, SPLIT = 1, STAGES = 230000 / ((NCONS * WGM + 2 * BN) * 128)
// @kevo start WGM = 64, NCONS = 1 + (DIM_A_0 > 64), BN = 64, SPLIT = 1, SK = 1, STAGES = 230000 / ((NCONS * WGM + 2 * BN) * 128)
// @kevo knob BN 128 {64, 128}
// @kevo knob WGM 64 {64, 128}
// @kevo knob NCONS 1 {1, 2}
// @kevo knob STAGES 4 {2, 3, 4, 5, 6, 8, 10, 12}
// @kevo knob KEEP 1 {0, 1}
// @kevo knob SPLIT 2 {1, 2, 3, 4, 6, 8}
// @kevo knob BHINT 1 {0, 1}
// @kevo knob SK 0 {0, 1}
// @kevo require WGM / 64 * BN <= 128
// @kevo require STAGES * (NCONS * WGM + 2 * BN) * 128 + 2048 <= 232448
// @kevo require SPLIT == 1 || NCONS == 1
// @kevo require SPLIT == 1 || 2 * NCONS * WGM * (BN + 4) * 4 + 2048 <= 232448
// @kevo require SK == 0 || SPLIT == 1
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

// kevo_cuda_tma.cuh before the tile walk: its unit slots use the mbarriers.
#include "kevo_cuda_tma.cuh"
#include "kevo_cuda_tile_walk.cuh"
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
// With SK, after the ring's barriers: two unit slots' "published" and "read"
// barriers, then the two slots of kKvUnitWords words (a unit and where its
// partials are; kevo_cuda_tile_walk.cuh).
constexpr int kSlotBytes = SK ? kKvUnitAreaBytes : 0;
constexpr int kSmemBytes = 1024 /* alignment slack */ + kDataBytes + 2 * STAGES * 8 + kSlotBytes;
// With two consumer warpgroups the producer gives most of its registers to
// them (with SK 48: its publishing thread walks in 64-bit arithmetic; two
// consumers then take 224 instead of 232).
constexpr int kProducerRegs = SK ? 48 : 40;
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
  const uint32_t bar_unit = bar_empty + STAGES * 8;  // SK: slot j % 2 published
  const uint32_t bar_unit_read = bar_unit + 2 * 8;   // SK: slot j % 2 read by every consumer warp
  const uint32_t unit_slot = bar_unit_read + 2 * 8;  // SK: two slots of kKvUnitWords words
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
    if constexpr (SK) {
      for (int i = 0; i < 2; ++i) {
        kv_mbar_init(bar_unit + 8 * i, 1);                // the publishing thread
        kv_mbar_init(bar_unit_read + 8 * i, NCONS * 4);  // every consumer warp
      }
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (wg == 0) {
    // ------------------------------------------------------------ producer
    if constexpr (kConsumerRegs > 0) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs));
    // Warps 1-3 of this warpgroup have no work. They leave now instead of
    // waiting the whole kernel at the closing barrier: an exited thread
    // counts as arrived at barrier.cluster and bar.sync, and ncu's stall
    // samples then come from warps that work, not from parked ones.
    if constexpr (SK) {
      // One thread of warp 1 publishes the stream-K walk for the consumers.
      if (tid_wg == 32)
        kv_publish_units(kv_tile_walk(tiles, ktiles, (int)gridDim.x, (int)blockIdx.x, SK),
                         reinterpret_cast<volatile int*>(smem_raw + (unit_slot - raw)), bar_unit, bar_unit_read);
    }
    if (tid_wg >= 32) return;
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
    const int cw = kv_warp_uniform(wg - 1);  // keeps the wgmma descriptors in uniform registers
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
    // Stage 0's descriptors; stage s's, and the k16 and m64 steps in it, are
    // these advanced (kv_desc_advance).
    const uint64_t da0 = kv_make_desc_sw128(sA + a_row_off, 16, 1024);
    const uint64_t dg0 = kv_make_desc_sw128(sB, kBBox, 1024);
    const bool lane0 = (tid_wg & 31) == 0;
    // d[4j + e]: row 16w + lane/4 + 8*(e/2), column 8j + 2*(lane%4) + e%2.
    const int w = tid_wg >> 5;
    const int lane = tid_wg & 31;
    const int g = lane >> 2;
    const int t4 = lane & 3;
    int s = 0;
    uint32_t phase = 0;  // parity of the full-barrier phase to wait for
    // The producer's walk: k tiles [ka, kb) of tile `tile` per unit; with SK
    // taken from the slots the publishing thread writes (kv_take_unit).
    KvTileWalk walk = kv_tile_walk(tiles, ktiles, tiles, (int)blockIdx.x, 0);
    int tile, ka, kb;
    const volatile int* sk_slots = reinterpret_cast<const volatile int*>(smem_raw + (unit_slot - raw));
    auto sk_unit = [&](int j) { return kv_take_unit(sk_slots, bar_unit, bar_unit_read, j, lane0, tiles, tile, ka, kb); };
    for (int j = 0; SK ? sk_unit(j) : kv_next_unit(walk, tile, ka, kb); ++j) {
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
        const uint64_t da_s = kv_desc_advance(da0, s, kAStage);
        const uint64_t dg_s = kv_desc_advance(dg0, s, 2 * kBStage);
#pragma unroll
        for (int ks = 0; ks < BK / 16; ++ks) {
          const uint64_t dg = kv_desc_advance(dg_s, ks * 16 * 128);
          const uint64_t du = kv_desc_advance(dg, kBStage);
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt) {
            const uint64_t da = kv_desc_advance(da_s, mt * 64 * 128 + ks * 32);
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
          KvHolderScan holders = kv_unit_holders(sk_slots, j);
          for (int q; kv_next_holder(holders, (int)gridDim.x, (int)blockIdx.x, q);) {
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
    // The consumers' setmaxnreg.inc would wait for ever for registers the
    // launch does not hold: a build that ptxas gave fewer is refused.
    static int regs_fit = -1;
    const int fit = kv_setmaxnreg_check(reinterpret_cast<const void*>(gemm_swiglu_wgmma_kernel), NCONS,
                                        kProducerRegs, regs_fit);
    if (fit <= 0) return fit < 0 ? KEVO_ERR_RUNTIME : KEVO_ERR_UNSUPPORTED;
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
