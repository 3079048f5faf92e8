/* gemm / mma — tiled tensor-core GEMM with mma.sync (Ampere-style, runs on sm_90).
 *
 * C[M,N] = A[M,K] · B[K,N]; A, B, C row-major bf16, fp32 accumulation, bf16 out.
 *
 * Each thread block computes a BM x BN tile of C; its warps are laid out as
 * (BM/WM) x (BN/WN), each warp owning a WM x WN sub-tile built from
 * mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 instructions
 * (WM/16 x WN/8 of them per k16 step, WM*WN/32 fp32 accumulators per thread).
 * The K loop streams BM x BK slices of A and BK x BN slices of B through a
 * STAGES-deep shared-memory ring filled with 16-byte cp.async.cg copies (one
 * commit group per k tile, wait_group STAGES-2, one __syncthreads per k tile).
 * Shared memory is XOR-swizzled in 16-byte chunks so that both the cp.async
 * writes and the ldmatrix reads (A: ldmatrix.x4; B, row-major K x N:
 * ldmatrix.x4.trans, which yields the "col" B fragment directly) are free of
 * bank conflicts. Tails in M, N and K are predicated: an out-of-range chunk
 * is a cp.async with src-size 0 (zero fill), stores are bounds-checked.
 *
 * Fast path requirements (checked at launch): K % 8 == 0 and N % 8 == 0 (every
 * 16-byte chunk of a row of A, B and C is 16-byte aligned and entirely in or
 * out of range) and 16-byte aligned base pointers. Any other shape (e.g.
 * A[7,129]·B[129,1003]) goes to the simple smem-tiled scalar fallback of
 * kevo_cuda_gemm_fallback.cuh (fp32 accumulation, same numerics class).
 *
 * Knobs:
 *   BM, BN   block tile (rows of C, columns of C).
 *   BK       k-depth of one pipeline stage (32 or 64 bf16 = 64 or 128 bytes per A row).
 *   WM, WN   warp tile; the block has (BM/WM)*(BN/WN) warps (2..16). WM*WN/32
 *            fp32 accumulators per thread, so WM*WN <= 4096.
 *   STAGES   depth of the cp.async shared-memory ring (2..8; the deep rings are for
 *            decode shapes, whose small A tiles leave room for more B in flight).
 *   GROUP_M  threadblock rasterization: blocks walk GROUP_M tile-rows of C
 *            column by column, so the A rows and B columns a wave of blocks
 *            touches stay in L2 (1 = plain row-major raster).
 *   EPI      0: each thread stores its accumulator pairs (bf16x2) straight to
 *            global memory; 1: the block stages its C tile in shared memory
 *            (padded rows) and writes it with coalesced 16-byte stores (split-K
 *            always stages, so SPLIT > 1 asks for EPI 1).
 *   FRAG_DB  1: double-buffer the ldmatrix fragments across the k16 steps of a
 *            stage (load step s+1 while issuing the mma of step s); 0: load
 *            then compute each step.
 *   MINB     __launch_bounds__ minimum resident blocks per SM (1 or 2; 2 caps
 *            registers at 32768/threads and needs 2 blocks' shared memory to fit).
 *            The register cap (65536 / (MINB * threads)) must leave about 80
 *            registers beyond the accumulators, or ptxas spills.
 *   L2PF     L2 prefetch size hint of the cp.async copies in bytes (0 = none,
 *            128, 256).
 *   SPLIT    split-K over a thread-block cluster of SPLIT blocks (1 = none). With
 *            few rows (decode: M = tokens in flight) the tiles of C are too few to
 *            fill the SMs and each streams a long strip of B; SPLIT blocks share a
 *            tile, each streaming 1/SPLIT of K, and reduce through distributed
 *            shared memory: each stores its fp32 partial tile in its own shared
 *            memory, and after a cluster barrier block r sums every block's
 *            partials for its 1/SPLIT of the tile in rank order (the same sum
 *            whichever block arrives first: deterministic) and stores bf16. No
 *            workspace, no second pass over global memory.
 *
 * Small BM (16, 32) with WM 16 are for decode shapes; BM 128-256 for square ones.
 *
 * Start (besides the default): BM covers M (decode), a BN 128 tile, and a
 * split-K that fills the SMs (SMS: the GPU's multiprocessors).
 */
// @kevo start BM = DIM_A_0, WM = BM - BM / 2 * (BM > 16), BN = 128, WN = 64, SPLIT = SMS / ((DIM_A_0 + BM - 1) / BM * ((DIM_B_1 + BN - 1) / BN))
// @kevo knob BM 128 {16, 32, 64, 128, 256}
// @kevo knob BN 128 {64, 128, 256}
// @kevo knob BK 32 {32, 64}
// @kevo knob WM 64 {16, 32, 64, 128}
// @kevo knob WN 64 {32, 64, 128}
// @kevo knob STAGES 4 {2, 3, 4, 5, 6, 8}
// @kevo knob GROUP_M 8 {1, 4, 8, 16}
// @kevo knob EPI 1 {0, 1}
// @kevo knob FRAG_DB 1 {0, 1}
// @kevo knob MINB 1 {1, 2}
// @kevo knob L2PF 128 {0, 128, 256}
// @kevo knob SPLIT 1 {1, 2, 3, 4, 6, 8}
// @kevo require BM % WM == 0 && BN % WN == 0
// @kevo require WM * WN <= 4096
// @kevo require (BM / WM) * (BN / WN) >= 2 && (BM / WM) * (BN / WN) <= 16
// @kevo require (BM * BK / 8) % ((BM / WM) * (BN / WN) * 32) == 0 || ((BM / WM) * (BN / WN) * 32) % (BM * BK / 8) == 0
// @kevo require (BK * BN / 8) % ((BM / WM) * (BN / WN) * 32) == 0
// @kevo require STAGES * (BM * BK + BK * BN) * 2 <= 232448
// @kevo require EPI == 0 || BM * (BN + 8) * 2 <= 232448
// @kevo require SPLIT == 1 || (EPI == 1 && BM * (BN + 4) * 4 <= 232448)
// @kevo require SPLIT == 1 || MINB == 1 || BM * (BN + 4) * 4 <= 115712
// @kevo require MINB * (BM / WM) * (BN / WN) * 32 * (WM * WN / 32 + 80) <= 65536
// @kevo require MINB == 1 || (STAGES * (BM * BK + BK * BN) * 2 <= 115712 && (EPI == 0 || BM * (BN + 8) * 2 <= 115712))
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 32
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 64
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef EPI
#define EPI 1
#endif
#ifndef FRAG_DB
#define FRAG_DB 1
#endif
#ifndef MINB
#define MINB 1
#endif
#ifndef L2PF
#define L2PF 128
#endif
#ifndef SPLIT
#define SPLIT 1
#endif

#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kevo_cuda_gemm_fallback.cuh"
#include "kevo_cuda_mma.cuh"
#include "kevo_kernel.h"

namespace {

constexpr int kWarpsM = BM / WM;
constexpr int kWarpsN = BN / WN;
constexpr int kThreads = kWarpsM * kWarpsN * 32;
constexpr int kMI = WM / 16;          // m16 fragments per warp
constexpr int kNI = WN / 8;           // n8 fragments per warp
constexpr int kKSteps = BK / 16;      // k16 steps per stage
constexpr int kACpr = BK / 8;         // 16-byte chunks per A row in smem
constexpr int kBCpr = BN / 8;         // 16-byte chunks per B row in smem
constexpr int kAStageBytes = BM * BK * 2;
constexpr int kBStageBytes = BK * BN * 2;
constexpr int kPipeBytes = STAGES * (kAStageBytes + kBStageBytes);
constexpr int kEpiLd = BN + 8;        // padded row (elements) of the staged C tile
constexpr int kEpiBytes = EPI ? BM * kEpiLd * 2 : 0;
constexpr int kPartLd = BN + 4;       // padded row (floats) of a split-K partial tile
constexpr int kPartBytes = SPLIT > 1 ? BM * kPartLd * 4 : 0;
constexpr int kEpiMax = kEpiBytes > kPartBytes ? kEpiBytes : kPartBytes;
constexpr int kSmemBytes = kPipeBytes > kEpiMax ? kPipeBytes : kEpiMax;
constexpr int kAChunks = BM * kACpr;  // 16-byte chunks of one A stage
// Small BM: fewer A chunks than threads, and the first kAChunks threads copy one each.
constexpr int kAIters = kAChunks >= kThreads ? kAChunks / kThreads : 1;
constexpr int kBIters = BK * kBCpr / kThreads;

static_assert(BM % WM == 0 && BN % WN == 0, "block tile must be a multiple of the warp tile");
static_assert(WM % 16 == 0 && WN % 16 == 0, "warp tile must be a multiple of 16x16");
static_assert(BK == 32 || BK == 64, "BK must be 32 or 64");
static_assert(BN % 64 == 0, "BN must be a multiple of 64 (B rows of >= 8 chunks)");
static_assert(STAGES >= 2, "need at least two stages");
static_assert(kAChunks < kThreads ? kThreads % kAChunks == 0 : kAIters * kThreads == kAChunks,
              "A tile chunks must divide among threads");
static_assert(SPLIT >= 1 && SPLIT <= 8, "SPLIT is a portable cluster size (1..8)");
static_assert(kBIters * kThreads == BK * kBCpr, "B tile chunks must divide among threads");
static_assert(kThreads <= 1024, "too many threads");
static_assert(kSmemBytes <= 232448, "shared memory over 227 KB");

// ------------------------------------------------------------------ swizzles
// Shared tiles are arrays of 16-byte chunks, XOR-swizzled (kv_swz) so that any
// 8 chunks read by one ldmatrix phase (8 consecutive rows, same logical chunk
// column) or written by 8 consecutive threads (8 consecutive chunks) fall into
// 8 distinct 16-byte bank groups.
__device__ __forceinline__ int a_swz(int row, int chunk) { return kv_swz<kACpr>(row, chunk); }
__device__ __forceinline__ int b_swz(int row, int chunk) { return kv_swz<kBCpr>(row, chunk); }

// ------------------------------------------------------------------ kernels
#if SPLIT > 1
#define KV_CLUSTER __cluster_dims__(1, SPLIT, 1)
#else
#define KV_CLUSTER
#endif
__global__ void KV_CLUSTER __launch_bounds__(kThreads, MINB)
    gemm_mma_kernel(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                    __nv_bfloat16* __restrict__ C, int M, int N, int K) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int warp_m = warp % kWarpsM;
  const int warp_n = warp / kWarpsM;

  // Threadblock rasterization (grouped along M for L2 reuse).
  const int tiles_m = (M + BM - 1) / BM;
  const int tiles_n = (N + BN - 1) / BN;
  const int pid = blockIdx.x;
  int pid_m, pid_n;
  if constexpr (GROUP_M <= 1) {
    pid_m = pid / tiles_n;
    pid_n = pid % tiles_n;
  } else {
    const int in_group = GROUP_M * tiles_n;
    const int first_m = (pid / in_group) * GROUP_M;
    const int gsize = min(tiles_m - first_m, GROUP_M);
    const int r = pid % in_group;
    pid_m = first_m + r % gsize;
    pid_n = r / gsize;
  }
  const int m0 = pid_m * BM;
  const int n0 = pid_n * BN;

  const uint32_t sA = kv_smem_u32(smem);
  const uint32_t sB = sA + STAGES * kAStageBytes;
  // This block's share of the k tiles (all of them without split-K; with it,
  // blockIdx.y = the block's rank in its cluster, which spans y).
  const int ktiles_all = (K + BK - 1) / BK;
  const int kt_per = (ktiles_all + SPLIT - 1) / SPLIT;
  const int kt_begin = min(ktiles_all, (int)blockIdx.y * kt_per);
  const int ktiles = min(ktiles_all, kt_begin + kt_per) - kt_begin;

  // Copies: chunk id = tid + i * kThreads walks the tile row by row, so 8
  // consecutive threads write 8 consecutive chunks (conflict-free). A thread
  // keeps its chunk column in every iteration and moves down kRowsA / kRowsB
  // rows per iteration.
  constexpr int kRowsA = kThreads / kACpr;
  constexpr int kRowsB = kThreads / kBCpr;
  static_assert(kThreads % kACpr == 0 && kThreads % kBCpr == 0, "copy layout");
  const int a_row0 = tid / kACpr;
  const int a_ch = tid % kACpr;
  const int b_row0 = tid / kBCpr;
  const int b_ch = tid % kBCpr;
  // The A swizzle is invariant under row += kRowsA (a multiple of 8 rows, or
  // of 16 rows when two rows share a line), so the smem offset is affine in i.
  static_assert(kAIters == 1 || kRowsA % 16 == 0 || (kACpr >= 8 && kRowsA % 8 == 0), "A copy rows");
  const uint32_t a_cp_off = a_swz(a_row0, a_ch) * 16;
  const __nv_bfloat16* a_src = A + (size_t)(m0 + a_row0) * K + a_ch * 8;
  const __nv_bfloat16* b_src = B + (size_t)b_row0 * N + n0 + b_ch * 8;
  const bool b_col_ok = n0 + b_ch * 8 < N;

  auto load_tile = [&](int stage, int kt) {
    const int k0 = (kt_begin + kt) * BK;
    const uint32_t a_st = sA + stage * kAStageBytes + a_cp_off;
    const bool a_k_ok = k0 + a_ch * 8 < K;
    if (kAChunks >= kThreads || tid < kAChunks) {
#pragma unroll
      for (int i = 0; i < kAIters; ++i) {
        const bool p = a_k_ok && (m0 + a_row0 + i * kRowsA < M);
        const __nv_bfloat16* src = p ? a_src + (size_t)i * kRowsA * K + k0 : A;
        kv_cp_async16<L2PF>(a_st + i * kRowsA * BK * 2, src, p ? 16 : 0);
      }
    }
    const uint32_t b_st = sB + stage * kBStageBytes;
#pragma unroll
    for (int i = 0; i < kBIters; ++i) {
      const int row = b_row0 + i * kRowsB;
      const bool p = b_col_ok && (k0 + row < K);
      const __nv_bfloat16* src = p ? b_src + (size_t)(k0 + i * kRowsB) * N : B;
      kv_cp_async16<L2PF>(b_st + b_swz(row, b_ch) * 16, src, p ? 16 : 0);
    }
  };

  float acc[kMI][kNI][4];
#pragma unroll
  for (int i = 0; i < kMI; ++i)
#pragma unroll
    for (int j = 0; j < kNI; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  // Prologue: tiles 0 .. STAGES-2, one commit group each (empty past the end).
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < ktiles) load_tile(s, s);
    kv_cp_async_commit();
  }

  // ldmatrix lane coordinates: lanes 0-15 address rows 0-15 of a 16-row
  // block at the low 8-column chunk, lanes 16-31 the same rows at the high
  // chunk. For A (x4) this yields a0..a3 of the m16k16 fragment; for B (x4,
  // trans, rows = k) it yields {b0,b1} of n-block 0 then {b0,b1} of n-block 1.
  // Both swizzles are invariant under row += 16, and for B under chunk += 8,
  // so per lane only the offsets of the first 16 rows are kept:
  //   A (mi, ks):  a_ld_off[ks] + mi * 16 rows
  //   B (nj, ks):  b_ld_off[nj % 4] + (nj / 4) * 8 chunks + ks * 16 rows
  // (for WN = 32 there are only nj = 0, 1).
  const int lrow = lane & 15;
  const int lhi = lane >> 4;
  constexpr int kBOffs = kNI / 2 < 4 ? kNI / 2 : 4;
  uint32_t a_ld_off[kKSteps];
  uint32_t b_ld_off[kBOffs];
#pragma unroll
  for (int ks = 0; ks < kKSteps; ++ks)
    a_ld_off[ks] = a_swz(warp_m * WM + lrow, ks * 2 + lhi) * 16;
#pragma unroll
  for (int j = 0; j < kBOffs; ++j)
    b_ld_off[j] = b_swz(lrow, (warp_n * WN) / 8 + lhi + 2 * j) * 16;

  uint32_t af[FRAG_DB ? 2 : 1][kMI][4];
  uint32_t bfr[FRAG_DB ? 2 : 1][kNI][2];

  int read_stage = 0;
  int write_stage = STAGES - 1;
  for (int kt = 0; kt < ktiles; ++kt) {
    // Tile kt has landed (this thread's copies) ...
    kv_cp_async_wait<STAGES - 2>();
    // ... and everyone's; everyone also finished reading stage write_stage
    // (it was read in iteration kt-1).
    __syncthreads();
    {
      const int nk = kt + STAGES - 1;
      if (nk < ktiles) load_tile(write_stage, nk);
      kv_cp_async_commit();
      write_stage = (write_stage + 1 == STAGES) ? 0 : write_stage + 1;
    }

    const uint32_t a_st = sA + read_stage * kAStageBytes;
    const uint32_t b_st = sB + read_stage * kBStageBytes;
    auto load_frags = [&](int buf, int ks) {
#pragma unroll
      for (int mi = 0; mi < kMI; ++mi)
        kv_ldmatrix_x4(af[buf][mi], a_st + a_ld_off[ks] + mi * 16 * BK * 2);
#pragma unroll
      for (int nj = 0; nj < kNI / 2; ++nj) {
        uint32_t r[4];
        kv_ldmatrix_x4_trans(r, b_st + b_ld_off[nj % kBOffs] + (nj / kBOffs) * 128 +
                                 ks * 16 * BN * 2);
        bfr[buf][2 * nj][0] = r[0];
        bfr[buf][2 * nj][1] = r[1];
        bfr[buf][2 * nj + 1][0] = r[2];
        bfr[buf][2 * nj + 1][1] = r[3];
      }
    };
    auto mma_all = [&](int buf) {
#pragma unroll
      for (int mi = 0; mi < kMI; ++mi)
#pragma unroll
        for (int ni = 0; ni < kNI; ++ni) {
          const int nn = (mi & 1) ? (kNI - 1 - ni) : ni;  // serpentine: reuse B regs
          kv_mma_bf16(acc[mi][nn], af[buf][mi], bfr[buf][nn][0], bfr[buf][nn][1]);
        }
    };

    if constexpr (FRAG_DB) {
      load_frags(0, 0);
#pragma unroll
      for (int ks = 0; ks < kKSteps; ++ks) {
        if (ks + 1 < kKSteps) load_frags((ks + 1) & 1, ks + 1);
        mma_all(ks & 1);
      }
    } else {
#pragma unroll
      for (int ks = 0; ks < kKSteps; ++ks) {
        load_frags(0, ks);
        mma_all(0);
      }
    }
    read_stage = (read_stage + 1 == STAGES) ? 0 : read_stage + 1;
  }

  // ---------------------------------------------------------------- epilogue
  // Accumulator layout of m16n8: c0,c1 -> (row g, cols 2t, 2t+1), c2,c3 ->
  // (row g+8, same cols), g = lane/4, t = lane%4.
  const int g = lane >> 2;
  const int t4 = lane & 3;
  if constexpr (SPLIT > 1) {
    // Split-K: partial tile -> own shared memory (fp32), cluster barrier, then
    // this block reduces every SPLIT-th 8-column chunk of the tile over the
    // cluster's blocks in rank order and stores it; a second barrier keeps each
    // block's shared memory alive until every peer has read it.
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    kv_cp_async_wait<0>();
    __syncthreads();
    float* sP = reinterpret_cast<float*>(smem);
#pragma unroll
    for (int mi = 0; mi < kMI; ++mi)
#pragma unroll
      for (int ni = 0; ni < kNI; ++ni) {
        const int r = warp_m * WM + mi * 16 + g;
        const int c = warp_n * WN + ni * 8 + t4 * 2;
        *reinterpret_cast<float2*>(&sP[r * kPartLd + c]) = make_float2(acc[mi][ni][0], acc[mi][ni][1]);
        *reinterpret_cast<float2*>(&sP[(r + 8) * kPartLd + c]) = make_float2(acc[mi][ni][2], acc[mi][ni][3]);
      }
    cluster.sync();
    const int rank = (int)cluster.block_rank();
    for (int id = rank * kThreads + tid; id < BM * kBCpr; id += SPLIT * kThreads) {
      const int row = id / kBCpr;
      const int ch = id % kBCpr;
      const int gm = m0 + row;
      const int gn = n0 + ch * 8;
      if (gm >= M || gn >= N) continue;
      float v[8];
#pragma unroll
      for (int s = 0; s < SPLIT; ++s) {
        const float4* q = reinterpret_cast<const float4*>(cluster.map_shared_rank(sP, s) + row * kPartLd + ch * 8);
        const float4 lo = q[0], hi = q[1];
        const float p[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
        for (int e = 0; e < 8; ++e) v[e] = s == 0 ? p[e] : v[e] + p[e];
      }
      uint4 o;
      __nv_bfloat162* ob = reinterpret_cast<__nv_bfloat162*>(&o);
#pragma unroll
      for (int e = 0; e < 4; ++e) ob[e] = __floats2bfloat162_rn(v[2 * e], v[2 * e + 1]);
      *reinterpret_cast<uint4*>(C + (size_t)gm * N + gn) = o;
    }
    cluster.sync();
  } else if constexpr (EPI) {
    kv_cp_async_wait<0>();  // only empty groups can be pending; be explicit anyway
    __syncthreads();     // all warps done reading the pipeline buffers
    __nv_bfloat16* sC = reinterpret_cast<__nv_bfloat16*>(smem);
#pragma unroll
    for (int mi = 0; mi < kMI; ++mi)
#pragma unroll
      for (int ni = 0; ni < kNI; ++ni) {
        const int r = warp_m * WM + mi * 16 + g;
        const int c = warp_n * WN + ni * 8 + t4 * 2;
        *reinterpret_cast<__nv_bfloat162*>(&sC[r * kEpiLd + c]) =
            __floats2bfloat162_rn(acc[mi][ni][0], acc[mi][ni][1]);
        *reinterpret_cast<__nv_bfloat162*>(&sC[(r + 8) * kEpiLd + c]) =
            __floats2bfloat162_rn(acc[mi][ni][2], acc[mi][ni][3]);
      }
    __syncthreads();
    constexpr int kCIters = BM * kBCpr / kThreads;
    static_assert(kCIters * kThreads == BM * kBCpr, "C tile chunks must divide among threads");
#pragma unroll
    for (int i = 0; i < kCIters; ++i) {
      const int id = tid + i * kThreads;
      const int row = id / kBCpr;
      const int ch = id % kBCpr;
      const int gm = m0 + row;
      const int gn = n0 + ch * 8;
      if (gm < M && gn < N)
        *reinterpret_cast<uint4*>(C + (size_t)gm * N + gn) =
            *reinterpret_cast<const uint4*>(&sC[row * kEpiLd + ch * 8]);
    }
  } else {
#pragma unroll
    for (int mi = 0; mi < kMI; ++mi)
#pragma unroll
      for (int ni = 0; ni < kNI; ++ni) {
        const int gm = m0 + warp_m * WM + mi * 16 + g;
        const int gn = n0 + warp_n * WN + ni * 8 + t4 * 2;
        if (gn < N) {  // N % 8 == 0 and gn even: gn + 1 < N too
          if (gm < M)
            *reinterpret_cast<__nv_bfloat162*>(C + (size_t)gm * N + gn) =
                __floats2bfloat162_rn(acc[mi][ni][0], acc[mi][ni][1]);
          if (gm + 8 < M)
            *reinterpret_cast<__nv_bfloat162*>(C + (size_t)(gm + 8) * N + gn) =
                __floats2bfloat162_rn(acc[mi][ni][2], acc[mi][ni][3]);
        }
      }
  }
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
  if (K % 8 == 0 && N % 8 == 0 && aligned) {
    const int64_t tiles = (int64_t)((M + BM - 1) / BM) * ((N + BN - 1) / BN);
    if (tiles > INT32_MAX) return KEVO_ERR_UNSUPPORTED;
    if (kSmemBytes > 48 * 1024) {
      if (cudaFuncSetAttribute(gemm_mma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               kSmemBytes) != cudaSuccess)
        return KEVO_ERR_RUNTIME;
    }
    // With SPLIT > 1 the kernel's cluster dimensions (1, SPLIT, 1) group the
    // SPLIT blocks of one tile.
    gemm_mma_kernel<<<dim3((unsigned)tiles, SPLIT), kThreads, kSmemBytes, stream>>>(A, B, C, M, N, K);
  } else {
    const int rc = kv_gemm_fallback(A, B, C, M, N, K, stream);
    if (rc != KEVO_OK) return rc;
  }
  return cudaGetLastError() == cudaSuccess ? KEVO_OK : KEVO_ERR_RUNTIME;
}
