/* kevo run 1 best for gemm_swiglu-16x4096x14336: median 82.8 us (98% of roof)
 * family mma (/work/main/targets/cuda/kernels/gemm_swiglu/mma.cu), knobs baked in: BK=64 BM=16 BN=128 FRAG_DB=0 L2PF=128 MINB=2 SPLIT=2 STAGES=2 WM=16 WN=32
 */
#define BK 64
#define BM 16
#define BN 128
#define FRAG_DB 0
#define L2PF 128
#define MINB 2
#define SPLIT 2
#define STAGES 2
#define WM 16
#define WN 32
/* the shapes it was searched at (kevo defines its task's own when it compiles) */
#ifndef KEVO_RANK_A
#define KEVO_RANK_A 2
#endif
#ifndef KEVO_DIM_A_0
#define KEVO_DIM_A_0 16
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
#define KEVO_DIM_y_0 16
#endif
#ifndef KEVO_DIM_y_1
#define KEVO_DIM_y_1 14336
#endif
#ifndef KEVO_LAST_y
#define KEVO_LAST_y 14336
#endif

/* gemm_swiglu / mma — the fused gate/up MLP on tensor cores (mma.sync), for decode.
 *
 * y[M,N] = silu(A·Wg) * (A·Wu), silu(g) = g / (1 + exp(-g)); A, Wg, Wu, y
 * row-major bf16, fp32 accumulation, bf16 out.
 *
 * At decode (M = tokens in flight, 1..256) the two weight matrices are almost
 * all the bytes: the kernel must stream Wg and Wu once, at the copy roof, and
 * never write g or u. Each thread block owns a BM x BN tile of y and keeps two
 * accumulator sets, g and u, over the same A fragments: a STAGES-deep
 * shared-memory ring holds, per k tile, a BM x BK slice of A and the BK x BN
 * slices of Wg and Wu side by side, filled with 16-byte cp.async.cg copies
 * (one commit group per k tile). The warps are laid out (BM/WM) x (BN/WN); a
 * warp issues mma.sync m16n8k16 for g and for u from one ldmatrix of A. The
 * epilogue applies silu(g) * u in registers, in fp32, and stores bf16 y.
 *
 * SPLIT > 1 splits K over a thread-block cluster of SPLIT blocks (the tiles of
 * y are too few at decode to fill the SMs and each streams a long strip of
 * both weights): each block stores its fp32 partial g and u tiles in its own
 * shared memory; after a cluster barrier block r sums, for its 1/SPLIT of the
 * tile, every block's partials in rank order (deterministic), applies the
 * epilogue (silu needs the whole sum) and stores y. No workspace, no second
 * pass over global memory.
 *
 * Fast path (checked at launch): K % 8 == 0, N % 8 == 0, 16-byte aligned
 * pointers. Other shapes go to a one-thread-per-output fallback in this file.
 * The copy, fragment and MMA primitives are kevo_cuda_mma.cuh's. (Compiled
 * without spills across its space; not yet timed on a GPU when it was added:
 * every candidate is still checked against the reference at the task's shape.)
 *
 * Knobs:
 *   BM, BN   block tile of y (rows, columns).
 *   BK       k depth of one ring stage (32 or 64).
 *   WM, WN   warp tile; (BM/WM)*(BN/WN) warps (2..16); 2*WM*WN/32 fp32
 *            accumulators per thread (g and u), at most 64 (WM*WN <= 1024:
 *            at 2048 ptxas spills some points).
 *   STAGES   depth of the cp.async ring (2..8).
 *   SPLIT    split-K cluster size (1 = none).
 *   FRAG_DB  1: load the fragments of k16 step s+1 while step s multiplies.
 *   MINB     __launch_bounds__ minimum resident blocks per SM (1 or 2).
 *   L2PF     L2 prefetch size hint of the copies in bytes (0, 128, 256).
 */
// (baked in) kevo knob BM 16 {16, 32, 64, 128}
// (baked in) kevo knob BN 128 {64, 128, 256}
// (baked in) kevo knob BK 64 {32, 64}
// (baked in) kevo knob WM 16 {16, 32, 64}
// (baked in) kevo knob WN 32 {32, 64}
// (baked in) kevo knob STAGES 4 {2, 3, 4, 5, 6, 8}
// (baked in) kevo knob SPLIT 2 {1, 2, 3, 4, 6, 8}
// (baked in) kevo knob FRAG_DB 1 {0, 1}
// (baked in) kevo knob MINB 1 {1, 2}
// (baked in) kevo knob L2PF 128 {0, 128, 256}
// (baked in) kevo require BM % WM == 0 && BN % WN == 0
// (baked in) kevo require WM * WN <= 1024
// (baked in) kevo require (BM / WM) * (BN / WN) >= 2 && (BM / WM) * (BN / WN) <= 16
// (baked in) kevo require (BM * BK / 8) % ((BM / WM) * (BN / WN) * 32) == 0 || ((BM / WM) * (BN / WN) * 32) % (BM * BK / 8) == 0
// (baked in) kevo require (BK * BN / 8) % ((BM / WM) * (BN / WN) * 32) == 0
// (baked in) kevo require MINB * STAGES * (BM * BK + 2 * BK * BN) * 2 <= 232448
// (baked in) kevo require SPLIT == 1 || MINB * 2 * BM * (BN + 4) * 4 <= 232448
// (baked in) kevo require MINB * (BM / WM) * (BN / WN) * 32 * (2 * WM * WN / 32 + 80) <= 65536
#ifndef BM
#define BM 16
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 64
#endif
#ifndef WM
#define WM 16
#endif
#ifndef WN
#define WN 32
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef SPLIT
#define SPLIT 2
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

#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

/* kevo: begin kevo_cuda_mma.cuh (inlined by kevo; sha256 1018b500452456ba) */
/* kevo_cuda_mma.cuh — kevo's layer for tensor-core tiles with mma.sync (bf16 in,
 * fp32 accumulate; sm_80 and later): the cp.async copies that fill a shared-
 * memory ring, the ldmatrix loads of fragments and the m16n8k16 MMA. Shipped
 * with kevo in targets/cuda/include; a kernel includes it by name and kevo
 * inlines it, so the stored, compiled and exported kernel is one file.
 * Nothing to define first. Includes cuda_bf16.h, cuda_runtime.h, stdint.h.
 *
 *   KV_DEV                        __device__ __forceinline__
 *   kv_smem_u32(p)                shared-state-space address of a generic pointer
 *   kv_cp_async16<PF>(dst, src, n)  16-byte cp.async.cg global -> shared (dst a
 *                                 kv_smem_u32 address); n = 16 copies, n = 0
 *                                 zero-fills (src must still be a valid address);
 *                                 PF: L2 prefetch size hint in bytes (0, 128, 256)
 *   kv_cp_async_commit()          close the thread's current copy group
 *   kv_cp_async_wait<N>()         wait until at most N of its groups are pending
 *   kv_ldmatrix_x4(r, addr)       four 8x8 b16 matrices from shared memory (the
 *                                 A fragment of m16k16 when lanes 0-15 address
 *                                 rows 0-15 at the low 8 columns, 16-31 the high)
 *   kv_ldmatrix_x4_trans(r, addr) the same, transposed (from a row-major K x N
 *                                 tile: {b0, b1} of two n8 blocks)
 *   kv_mma_bf16(d, a, b0, b1)     d += a * b: mma.sync m16n8k16 row.col
 *                                 f32.bf16.bf16.f32; d[0..1] at (row lane/4,
 *                                 cols 2*(lane%4) + 0..1), d[2..3] 8 rows below
 *   kv_swz<CPR>(row, chunk)       index of 16-byte chunk `chunk` of row `row` in
 *                                 a tile whose rows are CPR chunks, XOR-swizzled
 *                                 so 8 consecutive rows at one chunk column, or
 *                                 8 consecutive chunks, fall in 8 distinct bank
 *                                 groups (CPR >= 8: chunk ^ row % 8; CPR 4: two
 *                                 rows share a 128-byte line, position ^ line % 8)
 */
#ifndef KEVO_CUDA_MMA_CUH
#define KEVO_CUDA_MMA_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#ifndef KV_DEV
#define KV_DEV __device__ __forceinline__
#endif

#ifndef KV_HAVE_SMEM_U32  // also defined by kevo_cuda_tma.cuh
#define KV_HAVE_SMEM_U32
KV_DEV uint32_t kv_smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
#endif

template <int PF>
KV_DEV void kv_cp_async16(uint32_t dst, const void* src, int src_bytes) {
  static_assert(PF == 0 || PF == 128 || PF == 256, "prefetch hint: 0, 128 or 256 bytes");
  if constexpr (PF == 128) {
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
  } else if constexpr (PF == 256) {
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
  } else {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
  }
}
KV_DEV void kv_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
KV_DEV void kv_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

KV_DEV void kv_ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
KV_DEV void kv_ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

KV_DEV void kv_mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <int CPR>
KV_DEV int kv_swz(int row, int chunk) {
  static_assert(CPR == 4 || (CPR >= 8 && CPR % 8 == 0), "rows of 4 or a multiple of 8 chunks");
  if constexpr (CPR >= 8) {
    return row * CPR + (chunk ^ (row & 7));
  } else {
    const int i = row * CPR + chunk;
    const int line = i >> 3;
    return (line << 3) | ((i & 7) ^ (line & 7));
  }
}

#endif  // KEVO_CUDA_MMA_CUH
/* kevo: end kevo_cuda_mma.cuh */
#include "kevo_kernel.h"

namespace {

typedef __nv_bfloat16 bf16;

constexpr int kWarpsM = BM / WM;
constexpr int kWarpsN = BN / WN;
constexpr int kThreads = kWarpsM * kWarpsN * 32;
constexpr int kMI = WM / 16;  // m16 fragments per warp
constexpr int kNI = WN / 8;   // n8 fragments per warp
constexpr int kKSteps = BK / 16;
constexpr int kACpr = BK / 8;  // 16-byte chunks per A row
constexpr int kBCpr = BN / 8;  // 16-byte chunks per weight row
constexpr int kAStageBytes = BM * BK * 2;
constexpr int kBStageBytes = BK * BN * 2;  // one weight; a stage holds Wg then Wu
constexpr int kStageBytes = kAStageBytes + 2 * kBStageBytes;
constexpr int kPipeBytes = STAGES * kStageBytes;
constexpr int kPartLd = BN + 4;  // padded row (floats) of a partial tile
constexpr int kPartBytes = SPLIT > 1 ? 2 * BM * kPartLd * 4 : 0;
constexpr int kSmemBytes = kPipeBytes > kPartBytes ? kPipeBytes : kPartBytes;
constexpr int kAChunks = BM * kACpr;
constexpr int kAIters = kAChunks >= kThreads ? kAChunks / kThreads : 1;
constexpr int kBIters = BK * kBCpr / kThreads;

static_assert(BM % WM == 0 && BN % WN == 0, "block tile must be a multiple of the warp tile");
static_assert(WM % 16 == 0 && WN % 16 == 0, "warp tile must be a multiple of 16x16");
static_assert(BK == 32 || BK == 64, "BK must be 32 or 64");
static_assert(BN % 64 == 0, "BN must be a multiple of 64");
static_assert(STAGES >= 2, "need at least two stages");
static_assert(kAChunks < kThreads ? kThreads % kAChunks == 0 : kAIters * kThreads == kAChunks,
              "A tile chunks must divide among threads");
static_assert(kBIters * kThreads == BK * kBCpr, "weight tile chunks must divide among threads");
static_assert(SPLIT >= 1 && SPLIT <= 8, "SPLIT is a portable cluster size (1..8)");
static_assert(kSmemBytes <= 232448, "shared memory over 227 KB");

__device__ __forceinline__ float silu_mul(float g, float u) { return g / (1.0f + __expf(-g)) * u; }

#if SPLIT > 1
#define KV_CLUSTER __cluster_dims__(1, SPLIT, 1)
#else
#define KV_CLUSTER
#endif
__global__ void KV_CLUSTER __launch_bounds__(kThreads, MINB)
    gemm_swiglu_mma_kernel(const bf16* __restrict__ A, const bf16* __restrict__ Wg, const bf16* __restrict__ Wu,
                           bf16* __restrict__ Y, int M, int N, int K) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int warp_m = warp % kWarpsM;
  const int warp_n = warp / kWarpsM;

  // Tiles of y: m fastest, so the blocks in flight share the weight columns' rows of A.
  const int tiles_m = (M + BM - 1) / BM;
  const int m0 = (blockIdx.x % tiles_m) * BM;
  const int n0 = (blockIdx.x / tiles_m) * BN;

  const uint32_t s0 = kv_smem_u32(smem);
  // This block's share of the k tiles (blockIdx.y = its rank in the cluster).
  const int ktiles_all = (K + BK - 1) / BK;
  const int kt_per = (ktiles_all + SPLIT - 1) / SPLIT;
  const int kt_begin = min(ktiles_all, (int)blockIdx.y * kt_per);
  const int ktiles = min(ktiles_all, kt_begin + kt_per) - kt_begin;

  constexpr int kRowsA = kThreads / kACpr;
  constexpr int kRowsB = kThreads / kBCpr;
  static_assert(kThreads % kACpr == 0 && kThreads % kBCpr == 0, "copy layout");
  static_assert(kAIters == 1 || kRowsA % 16 == 0 || (kACpr >= 8 && kRowsA % 8 == 0), "A copy rows");
  const int a_row0 = tid / kACpr;
  const int a_ch = tid % kACpr;
  const int b_row0 = tid / kBCpr;
  const int b_ch = tid % kBCpr;
  const uint32_t a_cp_off = kv_swz<kACpr>(a_row0, a_ch) * 16;
  const size_t b_off = (size_t)b_row0 * N + n0 + b_ch * 8;
  const bool b_col_ok = n0 + b_ch * 8 < N;

  auto load_tile = [&](int stage, int kt) {
    const int k0 = (kt_begin + kt) * BK;
    const uint32_t st = s0 + stage * kStageBytes;
    if (kAChunks >= kThreads || tid < kAChunks) {
      const bool a_k_ok = k0 + a_ch * 8 < K;
#pragma unroll
      for (int i = 0; i < kAIters; ++i) {
        const int row = m0 + a_row0 + i * kRowsA;
        const bool p = a_k_ok && row < M;
        kv_cp_async16<L2PF>(st + a_cp_off + i * kRowsA * BK * 2, p ? A + (size_t)row * K + k0 + a_ch * 8 : A,
                            p ? 16 : 0);
      }
    }
#pragma unroll
    for (int i = 0; i < kBIters; ++i) {
      const int row = b_row0 + i * kRowsB;
      const bool p = b_col_ok && (k0 + row < K);
      const size_t off = b_off + (size_t)(k0 + i * kRowsB) * N;
      const uint32_t d = st + kAStageBytes + kv_swz<kBCpr>(row, b_ch) * 16;
      kv_cp_async16<L2PF>(d, p ? Wg + off : Wg, p ? 16 : 0);
      kv_cp_async16<L2PF>(d + kBStageBytes, p ? Wu + off : Wu, p ? 16 : 0);
    }
  };

  float accg[kMI][kNI][4], accu[kMI][kNI][4];
#pragma unroll
  for (int i = 0; i < kMI; ++i)
#pragma unroll
    for (int j = 0; j < kNI; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) accg[i][j][e] = accu[i][j][e] = 0.0f;

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < ktiles) load_tile(s, s);
    kv_cp_async_commit();
  }

  // ldmatrix lane offsets (see kevo_cuda_mma.cuh): A (mi, ks) at a_ld_off[ks] +
  // mi * 16 rows; a weight (nj, ks) at b_ld_off[nj % kBOffs] + (nj / kBOffs) * 8
  // chunks + ks * 16 rows (both swizzles are invariant under those moves).
  const int lrow = lane & 15;
  const int lhi = lane >> 4;
  constexpr int kBOffs = kNI / 2 < 4 ? kNI / 2 : 4;
  uint32_t a_ld_off[kKSteps];
  uint32_t b_ld_off[kBOffs];
#pragma unroll
  for (int ks = 0; ks < kKSteps; ++ks) a_ld_off[ks] = kv_swz<kACpr>(warp_m * WM + lrow, ks * 2 + lhi) * 16;
#pragma unroll
  for (int j = 0; j < kBOffs; ++j) b_ld_off[j] = kv_swz<kBCpr>(lrow, (warp_n * WN) / 8 + lhi + 2 * j) * 16;

  uint32_t af[FRAG_DB ? 2 : 1][kMI][4];
  uint32_t gf[FRAG_DB ? 2 : 1][kNI][2], uf[FRAG_DB ? 2 : 1][kNI][2];

  int read_stage = 0;
  int write_stage = STAGES - 1;
  for (int kt = 0; kt < ktiles; ++kt) {
    kv_cp_async_wait<STAGES - 2>();
    __syncthreads();
    {
      const int nk = kt + STAGES - 1;
      if (nk < ktiles) load_tile(write_stage, nk);
      kv_cp_async_commit();
      write_stage = (write_stage + 1 == STAGES) ? 0 : write_stage + 1;
    }
    const uint32_t a_st = s0 + read_stage * kStageBytes;
    const uint32_t g_st = a_st + kAStageBytes;
    const uint32_t u_st = g_st + kBStageBytes;
    auto load_frags = [&](int buf, int ks) {
#pragma unroll
      for (int mi = 0; mi < kMI; ++mi) kv_ldmatrix_x4(af[buf][mi], a_st + a_ld_off[ks] + mi * 16 * BK * 2);
#pragma unroll
      for (int nj = 0; nj < kNI / 2; ++nj) {
        const uint32_t o = b_ld_off[nj % kBOffs] + (nj / kBOffs) * 128 + ks * 16 * BN * 2;
        uint32_t r[4];
        kv_ldmatrix_x4_trans(r, g_st + o);
        gf[buf][2 * nj][0] = r[0];
        gf[buf][2 * nj][1] = r[1];
        gf[buf][2 * nj + 1][0] = r[2];
        gf[buf][2 * nj + 1][1] = r[3];
        kv_ldmatrix_x4_trans(r, u_st + o);
        uf[buf][2 * nj][0] = r[0];
        uf[buf][2 * nj][1] = r[1];
        uf[buf][2 * nj + 1][0] = r[2];
        uf[buf][2 * nj + 1][1] = r[3];
      }
    };
    auto mma_all = [&](int buf) {
#pragma unroll
      for (int mi = 0; mi < kMI; ++mi)
#pragma unroll
        for (int ni = 0; ni < kNI; ++ni) {
          kv_mma_bf16(accg[mi][ni], af[buf][mi], gf[buf][ni][0], gf[buf][ni][1]);
          kv_mma_bf16(accu[mi][ni], af[buf][mi], uf[buf][ni][0], uf[buf][ni][1]);
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

  // Accumulator layout of m16n8: e 0,1 -> (row g, cols 2t, 2t+1), e 2,3 -> row g+8.
  const int gq = lane >> 2;
  const int t4 = lane & 3;
  if constexpr (SPLIT > 1) {
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    kv_cp_async_wait<0>();
    __syncthreads();  // every warp is done with the ring before it becomes the partial tiles
    float* pg = reinterpret_cast<float*>(smem);
    float* pu = pg + BM * kPartLd;
#pragma unroll
    for (int mi = 0; mi < kMI; ++mi)
#pragma unroll
      for (int ni = 0; ni < kNI; ++ni) {
        const int r = warp_m * WM + mi * 16 + gq;
        const int c = warp_n * WN + ni * 8 + t4 * 2;
        *reinterpret_cast<float2*>(&pg[r * kPartLd + c]) = make_float2(accg[mi][ni][0], accg[mi][ni][1]);
        *reinterpret_cast<float2*>(&pg[(r + 8) * kPartLd + c]) = make_float2(accg[mi][ni][2], accg[mi][ni][3]);
        *reinterpret_cast<float2*>(&pu[r * kPartLd + c]) = make_float2(accu[mi][ni][0], accu[mi][ni][1]);
        *reinterpret_cast<float2*>(&pu[(r + 8) * kPartLd + c]) = make_float2(accu[mi][ni][2], accu[mi][ni][3]);
      }
    cluster.sync();
    const int rank = (int)cluster.block_rank();
    for (int id = rank * kThreads + tid; id < BM * kBCpr; id += SPLIT * kThreads) {
      const int row = id / kBCpr;
      const int ch = id % kBCpr;
      const int gm = m0 + row;
      const int gn = n0 + ch * 8;
      if (gm >= M || gn >= N) continue;
      float g[8], u[8];
#pragma unroll
      for (int s = 0; s < SPLIT; ++s) {
        const float* peer = cluster.map_shared_rank(pg, s);
        const float4* qg = reinterpret_cast<const float4*>(peer + row * kPartLd + ch * 8);
        const float4* qu = reinterpret_cast<const float4*>(peer + BM * kPartLd + row * kPartLd + ch * 8);
        const float4 g0 = qg[0], g1 = qg[1], u0 = qu[0], u1 = qu[1];
        const float pgv[8] = {g0.x, g0.y, g0.z, g0.w, g1.x, g1.y, g1.z, g1.w};
        const float puv[8] = {u0.x, u0.y, u0.z, u0.w, u1.x, u1.y, u1.z, u1.w};
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          g[e] = s == 0 ? pgv[e] : g[e] + pgv[e];
          u[e] = s == 0 ? puv[e] : u[e] + puv[e];
        }
      }
      uint4 o;
      __nv_bfloat162* ob = reinterpret_cast<__nv_bfloat162*>(&o);
#pragma unroll
      for (int e = 0; e < 4; ++e)
        ob[e] = __floats2bfloat162_rn(silu_mul(g[2 * e], u[2 * e]), silu_mul(g[2 * e + 1], u[2 * e + 1]));
      *reinterpret_cast<uint4*>(Y + (size_t)gm * N + gn) = o;
    }
    cluster.sync();  // keep this block's partials alive until every peer has read them
  } else {
#pragma unroll
    for (int mi = 0; mi < kMI; ++mi)
#pragma unroll
      for (int ni = 0; ni < kNI; ++ni) {
        const int gm = m0 + warp_m * WM + mi * 16 + gq;
        const int gn = n0 + warp_n * WN + ni * 8 + t4 * 2;
        if (gn < N) {  // N % 8 == 0 and gn even: gn + 1 < N too
          if (gm < M)
            *reinterpret_cast<__nv_bfloat162*>(Y + (size_t)gm * N + gn) = __floats2bfloat162_rn(
                silu_mul(accg[mi][ni][0], accu[mi][ni][0]), silu_mul(accg[mi][ni][1], accu[mi][ni][1]));
          if (gm + 8 < M)
            *reinterpret_cast<__nv_bfloat162*>(Y + (size_t)(gm + 8) * N + gn) = __floats2bfloat162_rn(
                silu_mul(accg[mi][ni][2], accu[mi][ni][2]), silu_mul(accg[mi][ni][3], accu[mi][ni][3]));
        }
      }
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
  if (K % 8 == 0 && N % 8 == 0 && aligned) {
    const int64_t tiles = (int64_t)((M + BM - 1) / BM) * ((N + BN - 1) / BN);
    if (tiles > INT32_MAX) return KEVO_ERR_UNSUPPORTED;
    if (kSmemBytes > 48 * 1024 &&
        cudaFuncSetAttribute(gemm_swiglu_mma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes) !=
            cudaSuccess)
      return KEVO_ERR_RUNTIME;
    // With SPLIT > 1 the kernel's cluster dimensions (1, SPLIT, 1) group the SPLIT blocks of one tile.
    gemm_swiglu_mma_kernel<<<dim3((unsigned)tiles, SPLIT), kThreads, kSmemBytes, stream>>>(A, Wg, Wu, Y, M, N, K);
  } else {
    const int64_t blocks = (M64 * N64 + 255) / 256;
    if (blocks > INT32_MAX) return KEVO_ERR_UNSUPPORTED;
    gemm_swiglu_fallback_kernel<<<(unsigned)blocks, 256, 0, stream>>>(A, Wg, Wu, Y, M64, N64, K64);
  }
  return cudaGetLastError() == cudaSuccess ? KEVO_OK : KEVO_ERR_RUNTIME;
}
