/* gemm / streamk — persistent stream-K GEMM on Hopper (TMA + mbarrier ring + wgmma).
 *
 * C[M,N] = A[M,K] · B[K,N]; A, B, C row-major bf16, fp32 accumulation, bf16 out.
 *
 * For shapes whose tiles do not divide evenly over the SMs (decode: N / BN
 * tiles of a weight, 32 at N = 4096 or 112 at N = 14336 on 132 SMs), a
 * one-tile-per-block grid leaves SMs idle for the whole kernel or for its
 * last wave. Here the grid is persistent (as many blocks as fit at once, at
 * most one per unit of work) and the work is the tiles' k iterations laid end
 * to end: block c takes the iterations [c*T/G, (c+1)*T/G) of the T = tiles *
 * k_tiles, so every block streams the same number of k tiles. A block's range
 * covers, in tile order, the end of one tile, whole tiles, and the start of
 * another. It works through them backwards:
 *   - the start of its last tile first: its fp32 partial goes to the block's
 *     slot of a global workspace, and a flag says it is there;
 *   - whole tiles: stored from registers;
 *   - the end of its first tile last: the block waits for the flags of the
 *     lower blocks that hold the rest of that tile (by then they have long
 *     written it), adds their partials in block order (deterministic), and
 *     stores the tile.
 * A block only ever waits on lower-numbered blocks, which started before it.
 * The workspace and flags are static device arrays; the waiting block resets
 * each flag it consumed, so every launch starts clean. So two launches of
 * this module that overlap in time (on two streams) would share them: an
 * application that exports this kernel must not run it concurrently with
 * itself. The sums are deterministic for a given grid, i.e. for a given GPU.
 *
 * Per block, warpgroup 0 is the producer: one thread issues the TMA loads (a
 * BM x 64 slice of A, BN/64 boxes of 64 x 64 of B, 128-byte swizzle, B under
 * an L2 evict-first policy with BHINT) into a STAGES-deep ring, across the
 * block's tiles without a break. Warpgroups 1..NCONS consume with wgmma
 * m64nBNk16 and release each stage on its "empty" mbarrier. Tiles are taken
 * with M fastest, so blocks on the same weight columns run together.
 *
 * Fast path (checked at launch): K % 8 == 0, N % 8 == 0, 16-byte aligned
 * pointers; TMA zero-fills boxes past M, N and K. Other shapes run the scalar
 * fallback of kevo_cuda_gemm_fallback.cuh. Hopper primitives: kevo_cuda_tma.cuh. (Compiled here without
 * spills across the space; not yet timed on a GPU when it was added: every
 * candidate is still checked against the reference at the task's shape.)
 *
 * Knobs:
 *   BN       block tile width = wgmma N (64, 128, 256).
 *   WGM      rows per consumer warpgroup: 64 or 128 (two m64 tiles).
 *   NCONS    consumer warpgroups (BM = NCONS * WGM).
 *   STAGES   depth of the TMA ring ((BM + BN) * 128 bytes each).
 *   KEEP     1: the next k tile's wgmmas queue behind the current ones.
 *   BHINT    1: B's loads carry an L2 evict-first policy.
 *   OCC      blocks per SM the persistent grid counts on (2 only for the
 *            smallest tile, where two blocks fit in the registers).
 *
 * Start (besides the default): a BN 64 tile whose BM covers M (decode), with
 * the deepest ring that fits.
 */
// @kevo start BN = 64, WGM = 64, NCONS = 1 + (DIM_A_0 > 64), STAGES = 230000 / ((NCONS * WGM + BN) * 128)
// @kevo knob BN 128 {64, 128, 256}
// @kevo knob WGM 64 {64, 128}
// @kevo knob NCONS 1 {1, 2}
// @kevo knob STAGES 4 {2, 3, 4, 5, 6, 8, 10, 12}
// @kevo knob KEEP 1 {0, 1}
// @kevo knob BHINT 1 {0, 1}
// @kevo knob OCC 1 {1, 2}
// @kevo require WGM / 64 * BN / 2 <= 128
// @kevo require NCONS * WGM * BN <= 32768
// @kevo require OCC * (STAGES * (NCONS * WGM + BN) * 128 + 2048) <= 232448
// @kevo require OCC == 1 || (NCONS == 1 && WGM == 64 && BN == 64)
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
#ifndef BHINT
#define BHINT 1
#endif
#ifndef OCC
#define OCC 1
#endif

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kevo_cuda_gemm_fallback.cuh"
#include "kevo_cuda_tma.cuh"
#include "kevo_kernel.h"

namespace {

typedef __nv_bfloat16 bf16;

constexpr int BM = NCONS * WGM;
constexpr int BK = 64;               // one 128-byte swizzle span of bf16
constexpr int kMT = WGM / 64;        // m64 wgmma tiles per consumer
constexpr int kAcc = BN / 2;         // fp32 accumulators per thread per m64 tile
constexpr int kPerThread = kMT * kAcc;
constexpr int kConsThreads = NCONS * 128;
constexpr int kThreads = kConsThreads + 128;
constexpr int kAStage = BM * BK * 2;
constexpr int kBBox = BK * 64 * 2;   // one 64(k) x 64(n) box of B
constexpr int kBStage = BK * BN * 2;
constexpr int kStageBytes = kAStage + kBStage;
constexpr int kDataBytes = STAGES * kStageBytes;
constexpr int kSmemBytes = 1024 /* alignment slack */ + kDataBytes + 2 * STAGES * 8;
constexpr int kMaxBlocks = 320;      // persistent blocks at most (2 per SM of a 160-SM part)
constexpr int kProducerRegs = 40;
constexpr int kConsumerRegs = kv_consumer_regs(NCONS, kProducerRegs);

static_assert(BN == 64 || BN == 128 || BN == 256, "BN must be 64, 128 or 256");
static_assert(WGM == 64 || WGM == 128, "WGM must be 64 or 128");
static_assert(kPerThread <= 128, "too many accumulators per thread");
static_assert(kSmemBytes <= 232448, "shared memory over 227 KB");

// Block c's partial of the tile whose start it holds: kPerThread floats per
// consumer thread, laid out [i][thread] so each i is one coalesced row.
__device__ float g_partial[kMaxBlocks * BM * BN];
__device__ unsigned g_ready[kMaxBlocks];  // 1: block c's partial is written

// First k iteration of block c out of T over G blocks.
__device__ __forceinline__ int64_t range_begin(int64_t T, int G, int c) { return T * c / G; }

__global__ void __launch_bounds__(kThreads, 1)
    gemm_streamk_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                        bf16* __restrict__ C, int M, int N, int K) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const uint32_t raw = kv_smem_u32(smem_raw);
  const uint32_t s0 = (raw + 1023u) & ~1023u;
  const uint32_t sA = s0;
  const uint32_t sB = s0 + STAGES * kAStage;
  const uint32_t bar_full = s0 + kDataBytes;
  const uint32_t bar_empty = bar_full + STAGES * 8;

  const int wg = threadIdx.x / 128;
  const int tid_wg = threadIdx.x % 128;
  const int tiles_m = (M + BM - 1) / BM;
  const int tiles = tiles_m * ((N + BN - 1) / BN);
  const int kt_all = (K + BK - 1) / BK;
  const int64_t T = (int64_t)tiles * kt_all;
  const int G = (int)gridDim.x;
  const int c = (int)blockIdx.x;
  const int64_t it0 = range_begin(T, G, c), it1 = range_begin(T, G, c + 1);

  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      kv_mbar_init(bar_full + 8 * s, 1);
      kv_mbar_init(bar_empty + 8 * s, NCONS * 4);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  // The block's segments, last tile first: segment j covers k tiles [ka, kb)
  // of tile t. Producer and consumers walk the same list.
  // end: one past the last iteration still to do (walking down from it1).
  auto segment = [&](int64_t end, int& t, int& ka, int& kb) {
    t = (int)((end - 1) / kt_all);
    const int64_t tile_start = (int64_t)t * kt_all;
    kb = (int)(end - tile_start);
    ka = (int)((it0 > tile_start ? it0 : tile_start) - tile_start);
  };

  if (wg == 0) {
    // ------------------------------------------------------------ producer
    if constexpr (kConsumerRegs > 0) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs));
    if (tid_wg == 0) {
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmA)) : "memory");
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmB)) : "memory");
      const uint64_t pol = BHINT ? kv_evict_first_policy() : 0;
      uint32_t n = 0;  // k tiles loaded so far
      for (int64_t end = it1; end > it0;) {
        int t, ka, kb;
        segment(end, t, ka, kb);
        const int m0 = (t % tiles_m) * BM, n0 = (t / tiles_m) * BN;
        for (int kt = ka; kt < kb; ++kt, ++n) {
          const int s = (int)(n % STAGES);
          if (n >= STAGES) kv_mbar_wait(bar_empty + 8 * s, ((n / STAGES) + 1) & 1);
          const uint32_t full = bar_full + 8 * s;
          kv_mbar_expect_tx(full, kStageBytes);
          kv_tma_load_2d(sA + s * kAStage, &tmA, kt * BK, m0, full);
#pragma unroll
          for (int j = 0; j < BN / 64; ++j) {
            if constexpr (BHINT)
              kv_tma_load_2d_hint(sB + s * kBStage + j * kBBox, &tmB, n0 + 64 * j, kt * BK, full, pol);
            else
              kv_tma_load_2d(sB + s * kBStage + j * kBBox, &tmB, n0 + 64 * j, kt * BK, full);
          }
        }
        end -= kb - ka;
      }
    }
  } else {
    // ------------------------------------------------------------ consumers
    if constexpr (kConsumerRegs > 0) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegs));
    const int cw = kv_warp_uniform(wg - 1);  // keeps the wgmma descriptors in uniform registers
    const int ct = (int)threadIdx.x - 128;  // 0 .. kConsThreads-1
    const uint32_t a_row_off = (uint32_t)(cw * WGM) * 128u;
    // Stage 0's descriptors; stage s's, and the k16 and m64 steps in it, are
    // these advanced (kv_desc_advance).
    const uint64_t da0 = kv_make_desc_sw128(sA + a_row_off, 16, 1024);
    const uint64_t db0 = kv_make_desc_sw128(sB, kBBox, 1024);
    const bool lane0 = (tid_wg & 31) == 0;
    const int w = tid_wg >> 5, lane = tid_wg & 31, g = lane >> 2, t4 = lane & 3;
    float acc[kMT][kAcc];
    auto fence_acc = [&]() {
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int i = 0; i < kAcc; ++i) kv_fence_operand(acc[mt][i]);
    };
    uint32_t n = 0;  // k tiles consumed so far
    for (int64_t end = it1; end > it0;) {
      int t, ka, kb;
      segment(end, t, ka, kb);
      const int m0 = (t % tiles_m) * BM, n0 = (t / tiles_m) * BN;
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int i = 0; i < kAcc; ++i) acc[mt][i] = 0.0f;
      for (int kt = ka; kt < kb; ++kt, ++n) {
        const int s = (int)(n % STAGES);
        kv_mbar_wait(bar_full + 8 * s, (n / STAGES) & 1);
        fence_acc();
        kv_wgmma_fence();
        const uint64_t da_s = kv_desc_advance(da0, s, kAStage);
        const uint64_t db_s = kv_desc_advance(db0, s, kBStage);
#pragma unroll
        for (int ks = 0; ks < BK / 16; ++ks) {
          const uint64_t db = kv_desc_advance(db_s, ks * 16 * 128);
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt) {
            const uint64_t da = kv_desc_advance(da_s, mt * 64 * 128 + ks * 32);
            kv_wgmma_bf16<BN>(acc[mt], da, db, 1);
          }
        }
        kv_wgmma_commit();
        fence_acc();
        if constexpr (KEEP) {
          kv_wgmma_wait<1>();  // the previous k tile's wgmmas are done: release its stage
          if (kt > ka && lane0) kv_mbar_arrive(bar_empty + 8 * (int)((n - 1) % STAGES));
        } else {
          kv_wgmma_wait<0>();
          if (lane0) kv_mbar_arrive(bar_empty + 8 * s);
        }
      }
      kv_wgmma_wait<0>();
      fence_acc();
      if (KEEP && kb > ka && lane0) kv_mbar_arrive(bar_empty + 8 * (int)((n - 1) % STAGES));
      end -= kb - ka;

      if (kb < kt_all) {
        // The start (or a middle part) of a tile whose end a higher block holds.
        float* slot = g_partial + (size_t)c * BM * BN;
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
          for (int i = 0; i < kAcc; ++i) __stcg(slot + (size_t)(mt * kAcc + i) * kConsThreads + ct, acc[mt][i]);
        __threadfence();
        kv_named_barrier(1, kConsThreads);
        if (ct == 0) asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(g_ready + c), "r"(1u) : "memory");
        continue;
      }
      if (ka > 0) {
        // The end of a tile whose earlier k tiles lower blocks hold: add their
        // partials, lowest block first.
        const int64_t tile_start = (int64_t)t * kt_all;
        int first = c - 1;
        while (range_begin(T, G, first) > tile_start) --first;
        for (int q = first; q < c; ++q) {
          unsigned ready = 0;
          do {
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(ready) : "l"(g_ready + q) : "memory");
          } while (ready == 0);
          const float* slot = g_partial + (size_t)q * BM * BN;
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
            for (int i = 0; i < kAcc; ++i) acc[mt][i] += __ldcg(slot + (size_t)(mt * kAcc + i) * kConsThreads + ct);
        }
        kv_named_barrier(1, kConsThreads);  // every thread has read every partial
        if (ct == 0)
          for (int q = first; q < c; ++q) g_ready[q] = 0u;
      }
      // d[4j + e]: row 16w + lane/4 + 8*(e/2), column 8j + 2*(lane%4) + e%2.
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        const int gm = m0 + cw * WGM + mt * 64 + 16 * w + g;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
          const int gn = n0 + 8 * j + 2 * t4;
          if (gn < N) {  // N % 8 == 0 and gn even: gn + 1 < N too
            if (gm < M)
              *reinterpret_cast<__nv_bfloat162*>(C + (size_t)gm * N + gn) =
                  __floats2bfloat162_rn(acc[mt][4 * j], acc[mt][4 * j + 1]);
            if (gm + 8 < M)
              *reinterpret_cast<__nv_bfloat162*>(C + (size_t)(gm + 8) * N + gn) =
                  __floats2bfloat162_rn(acc[mt][4 * j + 2], acc[mt][4 * j + 3]);
          }
        }
      }
    }
  }
}

}  // namespace

extern "C" KEVO_EXPORT int kevo_launch(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                                       const double* scalars, int n_scalars, cudaStream_t stream) {
  (void)scalars;
  if (n_in != 2 || n_out != 1 || n_scalars != 0) return KEVO_ERR_ARGS;
  const kevo_tensor *ta = &in[0], *tb = &in[1], *tc = &out[0];
  if (ta->dtype != KEVO_BF16 || tb->dtype != KEVO_BF16 || tc->dtype != KEVO_BF16) return KEVO_ERR_UNSUPPORTED;
  if (ta->rank != 2 || tb->rank != 2 || tc->rank != 2) return KEVO_ERR_UNSUPPORTED;
  if (!kevo_is_contiguous(ta) || !kevo_is_contiguous(tb) || !kevo_is_contiguous(tc)) return KEVO_ERR_UNSUPPORTED;
  const int64_t M64 = ta->shape[0], K64 = ta->shape[1], N64 = tb->shape[1];
  if (tb->shape[0] != K64 || tc->shape[0] != M64 || tc->shape[1] != N64) return KEVO_ERR_ARGS;
  if (M64 > INT32_MAX - 1024 || N64 > INT32_MAX - 1024 || K64 > INT32_MAX - 1024) return KEVO_ERR_UNSUPPORTED;
  const int M = (int)M64, N = (int)N64, K = (int)K64;
  if (M == 0 || N == 0) return KEVO_OK;
  const bf16* A = static_cast<const bf16*>(ta->data);
  const bf16* B = static_cast<const bf16*>(tb->data);
  bf16* C = static_cast<bf16*>(tc->data);
  const bool aligned =
      ((reinterpret_cast<uintptr_t>(A) | reinterpret_cast<uintptr_t>(B) | reinterpret_cast<uintptr_t>(C)) & 15) == 0;
  if (K > 0 && K % 8 == 0 && N % 8 == 0 && aligned) {
    const int64_t tiles = (int64_t)((M + BM - 1) / BM) * ((N + BN - 1) / BN);
    const int64_t work = tiles * ((K + 63) / 64);
    if (tiles > INT32_MAX || work > ((int64_t)1 << 53)) return KEVO_ERR_UNSUPPORTED;
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms <= 0)
      return KEVO_ERR_RUNTIME;
    if (cudaFuncSetAttribute(gemm_streamk_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes) !=
        cudaSuccess)
      return KEVO_ERR_RUNTIME;
    // Every block must be resident at once (a block waits on lower ones): no
    // more than fit, as the occupancy calculator says, and at most OCC per SM.
    int fit = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, gemm_streamk_kernel, kThreads, kSmemBytes) !=
            cudaSuccess ||
        fit <= 0)
      return KEVO_ERR_RUNTIME;
    int64_t grid = (int64_t)sms * (fit < OCC ? fit : OCC);
    if (grid > work) grid = work;
    if (grid > kMaxBlocks) grid = kMaxBlocks;
    CUtensorMap mapA, mapB;
    if (!kv_tma_map_2d(&mapA, A, (uint64_t)K, (uint64_t)M, BK, BM)) return KEVO_ERR_RUNTIME;
    if (!kv_tma_map_2d(&mapB, B, (uint64_t)N, (uint64_t)K, 64, BK)) return KEVO_ERR_RUNTIME;
    gemm_streamk_kernel<<<(unsigned)grid, kThreads, kSmemBytes, stream>>>(mapA, mapB, C, M, N, K);
  } else {
    const int rc = kv_gemm_fallback(A, B, C, M, N, K, stream);
    if (rc != KEVO_OK) return rc;
  }
  return cudaGetLastError() == cudaSuccess ? KEVO_OK : KEVO_ERR_RUNTIME;
}
