/* gemm / wgmma — Hopper warpgroup GEMM: TMA + mbarrier pipeline + wgmma.mma_async.
 *
 * C[M,N] = A[M,K] · B[K,N]; A, B, C row-major bf16, fp32 accumulation, bf16 out.
 *
 * One thread block computes a BM x BN tile of C, BM = NCONS * WGM. Warpgroup 0
 * is the producer: one thread issues TMA (cp.async.bulk.tensor.2d) loads of a
 * BM x 64 slice of A and a 64 x BN slice of B (BN/64 boxes of 64 x 64) per k
 * tile into a STAGES-deep shared-memory ring, both with the 128-byte swizzle,
 * signalling a "full" mbarrier with the transaction byte count. Warpgroups
 * 1..NCONS are consumers: each waits on the stage's full barrier, issues
 * wgmma.mma_async.m64nBNk16 (A K-major, B "transposed" = N-major, both read
 * from shared memory through matrix descriptors) for its WGM rows, commits,
 * and releases the stage on its "empty" mbarrier once the wgmma that read it
 * has completed. The tensor maps are encoded on the host with
 * cuTensorMapEncodeTiled, obtained through cudaGetDriverEntryPointByVersion
 * (no libcuda link), and passed as __grid_constant__ parameters. TMA fills
 * out-of-range boxes with zeros, so M, N and K tails need no code; the
 * epilogue stores bf16 pairs with bounds checks.
 *
 * Fast path requirements (checked at launch): K % 8 == 0 and N % 8 == 0 (TMA
 * global strides must be multiples of 16 bytes), K > 0, 16-byte aligned base
 * pointers. Anything else runs a simple smem-tiled scalar fallback kernel
 * (fp32 accumulation) in this file.
 *
 * Knobs:
 *   BN       block tile width = wgmma N (64, 128, 192, 256).
 *   WGM      rows of C per consumer warpgroup: 64 (one m64 wgmma per k16 step)
 *            or 128 (two); WGM/64 * BN/2 fp32 accumulators per thread (<= 128).
 *   NCONS    consumer warpgroups per block (BM = NCONS * WGM).
 *   STAGES   depth of the TMA shared-memory ring ((BM + BN) * 128 bytes each).
 *   KEEP     wgmma groups left in flight when a k tile has been issued: 1 lets
 *            the next tile's wgmmas queue behind the current ones (its stage
 *            is released one tile later), 0 waits for completion every tile.
 *   GROUP_M  threadblock rasterization group along M (1 = row-major raster).
 *   EPI      0: bf16x2 stores straight from the accumulators; 1: each consumer
 *            warpgroup stages its tile in (padded) shared memory and writes it
 *            with coalesced 16-byte stores.
 *   CLUSTER  thread-block cluster size along M (1 or 2). With 2, the two CTAs
 *            of a cluster compute vertically adjacent tiles that share the same
 *            B slice: each loads half of the B boxes and multicasts them to
 *            both (TMA .multicast::cluster), halving B traffic from L2; every
 *            consumer warp releases a stage on the empty barriers of both CTAs.
 *   SPLIT    split-K over a thread-block cluster of SPLIT CTAs (grid.y; 1 =
 *            none; needs CLUSTER 1). For decode shapes (few rows of C) the
 *            tiles are too few to fill the SMs: each CTA of the cluster runs
 *            the pipeline over 1/SPLIT of the k tiles, the consumers store
 *            their fp32 accumulators in their own shared memory, and after a
 *            cluster barrier CTA r sums its 1/SPLIT of the tile's valid rows
 *            over all ranks' partials, in rank order (deterministic), through
 *            distributed shared memory, and stores bf16 C. No workspace, no
 *            second pass over global memory. (EPI does not apply: the
 *            reduction stores 16-byte chunks itself.)
 *   BHINT    1: the B (weight) TMA loads carry (CLUSTER 1) an L2 evict-first cache hint,
 *            so a streamed weight tile does not push out lines that are still
 *            to be used (A, C, other kernels' data); 0: no hint.
 */
// @kevo knob BN 128 {64, 128, 192, 256}
// @kevo knob WGM 64 {64, 128}
// @kevo knob NCONS 2 {1, 2}
// @kevo knob STAGES 4 {2, 3, 4, 5, 6}
// @kevo knob KEEP 1 {0, 1}
// @kevo knob GROUP_M 8 {1, 4, 8, 16}
// @kevo knob EPI 0 {0, 1}
// @kevo knob CLUSTER 1 {1, 2}
// @kevo knob SPLIT 1 {1, 2, 3, 4, 6, 8}
// @kevo knob BHINT 0 {0, 1}
// @kevo require WGM / 64 * BN / 2 <= 128
// @kevo require STAGES * (NCONS * WGM + BN) * 128 + 2048 <= 232448
// @kevo require EPI == 0 || NCONS * WGM * (BN + 8) * 2 + 2048 <= 232448
// @kevo require (BN / 64) % CLUSTER == 0
// @kevo require SPLIT == 1 || CLUSTER == 1
// @kevo require SPLIT == 1 || EPI == 0
// @kevo require SPLIT == 1 || NCONS * WGM * (BN + 4) * 4 + 2048 <= 232448
#ifndef BN
#define BN 128
#endif
#ifndef WGM
#define WGM 64
#endif
#ifndef NCONS
#define NCONS 2
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef KEEP
#define KEEP 1
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef EPI
#define EPI 0
#endif
#ifndef CLUSTER
#define CLUSTER 1
#endif
#ifndef SPLIT
#define SPLIT 1
#endif
#ifndef BHINT
#define BHINT 0
#endif

#include <cuda.h>  // CUtensorMap and its enums only (header; libcuda is not linked)
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kevo_kernel.h"

namespace {

constexpr int BM = NCONS * WGM;
constexpr int BK = 64;                      // one 128-byte swizzle span of bf16
constexpr int kMT = WGM / 64;               // m64 wgmma tiles per consumer
constexpr int kAcc = BN / 2;                // fp32 accumulators per thread per m64 tile
constexpr int kThreads = (NCONS + 1) * 128;
constexpr int kAStage = BM * BK * 2;        // bytes
constexpr int kBBox = BK * 64 * 2;          // one 64(k) x 64(n) box of B
constexpr int kBStage = BK * BN * 2;
constexpr int kStageBytes = kAStage + kBStage;
constexpr int kPipeBytes = STAGES * kStageBytes;
constexpr int kEpiLd = BN + 8;              // padded C-tile row (elements)
constexpr int kEpiBytes = EPI ? BM * kEpiLd * 2 : 0;
constexpr int kPartLd = BN + 4;             // padded fp32 row of a split-K partial tile
constexpr int kPartBytes = SPLIT > 1 ? BM * kPartLd * 4 : 0;
constexpr int kOutBytes = kEpiBytes > kPartBytes ? kEpiBytes : kPartBytes;
constexpr int kDataBytes = kPipeBytes > kOutBytes ? kPipeBytes : kOutBytes;
constexpr int kSmemBytes = 1024 /* alignment slack */ + kDataBytes + 2 * STAGES * 8;
// Registers: the producer warpgroup gives most of its registers to the consumers.
constexpr int kProducerRegs = 40;
constexpr int kConsumerRegs =
    NCONS == 1 ? 0 : ((65536 - 128 * kProducerRegs) / (NCONS * 128)) / 8 * 8 > 240
                         ? 240
                         : ((65536 - 128 * kProducerRegs) / (NCONS * 128)) / 8 * 8;

static_assert(BN % 64 == 0 && BN <= 256, "BN must be 64, 128, 192 or 256");
static_assert(WGM == 64 || WGM == 128, "WGM must be 64 or 128");
static_assert(kMT * kAcc <= 128, "too many accumulators per thread");
static_assert(BM <= 256, "TMA box rows <= 256");
static_assert(CLUSTER == 1 || CLUSTER == 2, "CLUSTER must be 1 or 2");
static_assert((BN / 64) % CLUSTER == 0, "B boxes must split evenly across the cluster");
static_assert(SPLIT >= 1 && SPLIT <= 8, "SPLIT must be 1..8 (portable cluster size)");
static_assert(SPLIT == 1 || CLUSTER == 1, "split-K and the M cluster do not combine");
static_assert(kSmemBytes <= 232448, "shared memory over 227 KB");

// ---------------------------------------------------------------- PTX helpers
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
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
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, int c0, int c1,
                                            uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
// The same load with an L2 cache-policy operand (createpolicy).
__device__ __forceinline__ void tma_load_2d_hint(uint32_t dst, const CUtensorMap* map, int c0, int c1,
                                                 uint32_t bar, uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar), "l"(policy)
      : "memory");
}
// Multicast variant: the box lands at the same smem offset in every CTA of
// cta_mask and completes bytes on the mbarrier at the same offset in each.
__device__ __forceinline__ void tma_load_2d_mc(uint32_t dst, const CUtensorMap* map, int c0, int c1,
                                               uint32_t bar, uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar), "h"(cta_mask)
      : "memory");
}
// Arrive on the mbarrier at local offset `bar` in CTA `rank` of the cluster.
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t rank) {
  asm volatile(
      "{\n"
      ".reg .b32 remAddr32;\n"
      "mapa.shared::cluster.u32 remAddr32, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remAddr32];\n"
      "}\n" ::"r"(bar),
      "r"(rank)
      : "memory");
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::
                   : "memory");
}
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accumulator reads/writes across wgmma issue/wait.
__device__ __forceinline__ void fence_operand(float& x) { asm volatile("" : "+f"(x)::"memory"); }
__device__ __forceinline__ void named_barrier(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// Shared-memory matrix descriptor, 128-byte swizzle (layout type 1 in bits 62-63).
// Addresses and byte offsets are encoded >> 4 in 14-bit fields.
__device__ __forceinline__ uint64_t make_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)((lbo >> 4) & 0x3FFF) << 16) |
         ((uint64_t)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);
}

// wgmma.mma_async m64nNk16, f32 += bf16 * bf16, A and B from shared memory,
// A K-major (imm-trans-a 0), B N-major (imm-trans-b 1); scale_d 0 overwrites d.
__device__ __forceinline__ void wgmma_n64(float* d, uint64_t da, uint64_t db, int scale_d) {
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
__device__ __forceinline__ void wgmma_n128(float* d, uint64_t da, uint64_t db, int scale_d) {
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
__device__ __forceinline__ void wgmma_n192(float* d, uint64_t da, uint64_t db, int scale_d) {
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
__device__ __forceinline__ void wgmma_n256(float* d, uint64_t da, uint64_t db, int scale_d) {
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
__device__ __forceinline__ void wgmma_tile(float* d, uint64_t da, uint64_t db, int scale_d) {
  if constexpr (N == 64) wgmma_n64(d, da, db, scale_d);
  else if constexpr (N == 128) wgmma_n128(d, da, db, scale_d);
  else if constexpr (N == 192) wgmma_n192(d, da, db, scale_d);
  else wgmma_n256(d, da, db, scale_d);
}

// ------------------------------------------------------------------ kernels
__global__ void __cluster_dims__(CLUSTER, SPLIT, 1) __launch_bounds__(kThreads, 1)
    gemm_wgmma_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                      __nv_bfloat16* __restrict__ C, int M, int N, int K) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // Stage buffers must sit on 1024-byte boundaries (the 128-byte swizzle
  // pattern repeats every 8 rows of 128 bytes; descriptors assume base offset 0).
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t s0 = (raw + 1023u) & ~1023u;
  const uint32_t sA = s0;
  const uint32_t sB = s0 + STAGES * kAStage;
  const uint32_t bar_full = s0 + kDataBytes;
  const uint32_t bar_empty = bar_full + STAGES * 8;

  const int wg = threadIdx.x / 128;
  const int tid_wg = threadIdx.x % 128;

  // Threadblock rasterization (grouped along M for L2 reuse), in units of
  // clusters: the CLUSTER CTAs of a cluster take CLUSTER consecutive tile rows
  // of the same tile column (a CTA past the last tile row still runs the
  // pipeline for its peer, loading valid A rows and storing nothing).
  constexpr int kGroup = GROUP_M / CLUSTER > 1 ? GROUP_M / CLUSTER : 1;
  const int tiles_m = (M + BM - 1) / BM;
  const int tiles_mc = (tiles_m + CLUSTER - 1) / CLUSTER;
  const int tiles_n = (N + BN - 1) / BN;
  const int pid = blockIdx.x / CLUSTER;
  const uint32_t crank = CLUSTER > 1 ? cluster_rank() : 0;  // rank along M (SPLIT is 1 then)
  int pid_mc, pid_n;
  if constexpr (kGroup <= 1) {
    pid_mc = pid / tiles_n;
    pid_n = pid % tiles_n;
  } else {
    const int in_group = kGroup * tiles_n;
    const int first_m = (pid / in_group) * kGroup;
    const int gsize = min(tiles_mc - first_m, kGroup);
    const int r = pid % in_group;
    pid_mc = first_m + r % gsize;
    pid_n = r / gsize;
  }
  const int m0 = (pid_mc * CLUSTER + (int)crank) * BM;
  const int n0 = pid_n * BN;
  // Split-K: this CTA's k tiles are [kt0, kt0 + ktiles) of the whole range;
  // its rank in the split cluster is blockIdx.y (the cluster spans grid.y).
  const int ktiles_all = (K + BK - 1) / BK;
  const int split_rank = SPLIT > 1 ? (int)blockIdx.y : 0;
  const int kt0 = (int)((int64_t)ktiles_all * split_rank / SPLIT);
  const int ktiles = (int)((int64_t)ktiles_all * (split_rank + 1) / SPLIT) - kt0;

  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(bar_full + 8 * s, 1);               // the producer's arrive.expect_tx
      mbar_init(bar_empty + 8 * s, CLUSTER * NCONS * 4);  // every consumer warp of the cluster
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  if constexpr (CLUSTER > 1) cluster_sync();  // peers' barriers exist before any multicast
  else __syncthreads();
  float* part = reinterpret_cast<float*>(smem_raw + (s0 - raw));  // split-K partial (SPLIT > 1)

  if (wg == 0) {
    // ------------------------------------------------------------ producer
    if constexpr (kConsumerRegs > 0) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs));
    if (tid_wg == 0) {
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmA)) : "memory");
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmB)) : "memory");
      uint64_t bpolicy = 0;
      if constexpr (BHINT) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(bpolicy));
      int s = 0;
      uint32_t phase = 0;  // parity of the empty-barrier phase to wait for
      for (int kt = 0; kt < ktiles; ++kt) {
        if (kt >= STAGES) mbar_wait(bar_empty + 8 * s, phase);
        const uint32_t full = bar_full + 8 * s;
        const int k = (kt0 + kt) * BK;
        mbar_expect_tx(full, kStageBytes);
        tma_load_2d(sA + s * kAStage, &tmA, k, m0 < M ? m0 : 0, full);
        if constexpr (CLUSTER == 1) {
#pragma unroll
          for (int j = 0; j < BN / 64; ++j) {
            if constexpr (BHINT)
              tma_load_2d_hint(sB + s * kBStage + j * kBBox, &tmB, n0 + 64 * j, k, full, bpolicy);
            else
              tma_load_2d(sB + s * kBStage + j * kBBox, &tmB, n0 + 64 * j, k, full);
          }
        } else {
#pragma unroll
          for (int jj = 0; jj < BN / 64 / CLUSTER; ++jj) {
            const int j = jj * CLUSTER + (int)crank;
            tma_load_2d_mc(sB + s * kBStage + j * kBBox, &tmB, n0 + 64 * j, k, full,
                           (uint16_t)((1u << CLUSTER) - 1));
          }
        }
        if (++s == STAGES) {
          s = 0;
          if (kt >= STAGES) phase ^= 1;
        }
      }
    }
  } else {
    // ------------------------------------------------------------ consumers
    if constexpr (kConsumerRegs > 0) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegs));
    const int cw = wg - 1;
    float acc[kMT][kAcc];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int i = 0; i < kAcc; ++i) acc[mt][i] = 0.0f;

    // A: K-major, 128B swizzle: 8-row groups 1024 bytes apart (SBO), LBO unused (16).
    //    k16 step = +32 bytes inside the 128-byte row; m64 tile = +64 rows * 128 bytes.
    // B: N-major ("transposed"), 128B swizzle: 8-k-row groups 1024 bytes apart
    //    (SBO), 64-column blocks kBBox bytes apart (LBO); k16 step = +16 rows * 128 bytes.
    const uint32_t a_row_off = (uint32_t)(cw * WGM) * 128u;
    // One arrival per consumer warp on the stage's empty barrier of every CTA
    // of the cluster (each CTA's producer overwrites the stage in all of them).
    const bool lane0 = (tid_wg & 31) == 0;
    auto release = [&](int stage) {
      if (lane0) {
        if constexpr (CLUSTER == 1) {
          mbar_arrive(bar_empty + 8 * stage);
        } else {
#pragma unroll
          for (int r = 0; r < CLUSTER; ++r) mbar_arrive_cluster(bar_empty + 8 * stage, r);
        }
      }
    };
    int s = 0;
    uint32_t phase = 0;  // parity of the full-barrier phase to wait for
    int prev_s = 0;
    for (int kt = 0; kt < ktiles; ++kt) {
      mbar_wait(bar_full + 8 * s, phase);
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int i = 0; i < kAcc; ++i) fence_operand(acc[mt][i]);
      wgmma_fence();
      const uint32_t a_base = sA + s * kAStage + a_row_off;
      const uint32_t b_base = sB + s * kBStage;
#pragma unroll
      for (int ks = 0; ks < BK / 16; ++ks) {
        const uint64_t db = make_desc(b_base + ks * 16 * 128, kBBox, 1024);
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          const uint64_t da = make_desc(a_base + mt * 64 * 128 + ks * 32, 16, 1024);
          wgmma_tile<BN>(acc[mt], da, db, 1);
        }
      }
      wgmma_commit();
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int i = 0; i < kAcc; ++i) fence_operand(acc[mt][i]);
      if constexpr (KEEP) {
        wgmma_wait<1>();  // the previous tile's wgmmas are done: release its stage
        if (kt > 0) release(prev_s);
      } else {
        wgmma_wait<0>();
        release(s);
      }
      prev_s = s;
      if (++s == STAGES) {
        s = 0;
        phase ^= 1;
      }
    }
    wgmma_wait<0>();
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int i = 0; i < kAcc; ++i) fence_operand(acc[mt][i]);

    // -------------------------------------------------------------- epilogue
    // Accumulator layout of m64nN: warp w of the warpgroup owns rows 16w..16w+15;
    // d[4j + e]: row 16w + g + 8*(e/2), column 8j + 2t + (e%2), g = lane/4, t = lane%4.
    const int w = tid_wg >> 5;
    const int lane = tid_wg & 31;
    const int g = lane >> 2;
    const int t4 = lane & 3;
    if constexpr (SPLIT > 1) {
      // All consumers must be done reading the stages before any overwrites them.
      named_barrier(1, NCONS * 128);
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
          const int r = cw * WGM + mt * 64 + 16 * w + g;
          const int c = 8 * j + 2 * t4;
          *reinterpret_cast<float2*>(&part[r * kPartLd + c]) = make_float2(acc[mt][4 * j], acc[mt][4 * j + 1]);
          *reinterpret_cast<float2*>(&part[(r + 8) * kPartLd + c]) =
              make_float2(acc[mt][4 * j + 2], acc[mt][4 * j + 3]);
        }
    } else if constexpr (EPI) {
      // All consumers must be done reading the stages before any overwrites them.
      named_barrier(1, NCONS * 128);
      __nv_bfloat16* sC = reinterpret_cast<__nv_bfloat16*>(smem_raw + (s0 - raw));
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
          const int r = cw * WGM + mt * 64 + 16 * w + g;
          const int c = 8 * j + 2 * t4;
          *reinterpret_cast<__nv_bfloat162*>(&sC[r * kEpiLd + c]) =
              __floats2bfloat162_rn(acc[mt][4 * j], acc[mt][4 * j + 1]);
          *reinterpret_cast<__nv_bfloat162*>(&sC[(r + 8) * kEpiLd + c]) =
              __floats2bfloat162_rn(acc[mt][4 * j + 2], acc[mt][4 * j + 3]);
        }
      named_barrier(2 + cw, 128);  // this warpgroup's rows are staged
      constexpr int kCpr = BN / 8;
      constexpr int kIters = WGM * kCpr / 128;
      static_assert(kIters * 128 == WGM * kCpr, "C tile chunks must divide among 128 threads");
#pragma unroll 4
      for (int i = 0; i < kIters; ++i) {
        const int id = tid_wg + i * 128;
        const int row = cw * WGM + id / kCpr;
        const int ch = id % kCpr;
        const int gm = m0 + row;
        const int gn = n0 + ch * 8;
        if (gm < M && gn < N)
          *reinterpret_cast<uint4*>(C + (size_t)gm * N + gn) =
              *reinterpret_cast<const uint4*>(&sC[row * kEpiLd + ch * 8]);
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
  if constexpr (SPLIT > 1) {
    // Every rank's partial tile is in its shared memory. The consumer threads
    // of rank r sum chunks [r*chunks/SPLIT, (r+1)*chunks/SPLIT) of the tile's
    // valid rows (8 columns each) over ranks 0..SPLIT-1 in order, and store bf16.
    cluster_sync();
    if (wg > 0) {
      const int rows = min(BM, M - m0);
      constexpr int kCpr = BN / 8;
      const int chunks = rows > 0 ? rows * kCpr : 0;
      const int c_begin = (int)((int64_t)chunks * split_rank / SPLIT);
      const int c_end = (int)((int64_t)chunks * (split_rank + 1) / SPLIT);
      const uint32_t part_local = smem_u32(part);
      for (int id = c_begin + (int)threadIdx.x - 128; id < c_end; id += NCONS * 128) {
        const int row = id / kCpr;
        const int col = (id % kCpr) * 8;
        const int gn = n0 + col;
        if (gn >= N) continue;  // N % 8 == 0: a chunk is all in or all out
        float v[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
        const uint32_t off = part_local + (uint32_t)(row * kPartLd + col) * 4u;
#pragma unroll
        for (int q = 0; q < SPLIT; ++q) {
          float4 a, b;
          asm volatile(
              "{\n.reg .b32 ra;\n"
              "mapa.shared::cluster.u32 ra, %8, %9;\n"
              "ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [ra];\n"
              "ld.shared::cluster.v4.f32 {%4, %5, %6, %7}, [ra+16];\n}\n"
              : "=f"(a.x), "=f"(a.y), "=f"(a.z), "=f"(a.w), "=f"(b.x), "=f"(b.y), "=f"(b.z), "=f"(b.w)
              : "r"(off), "r"(q)
              : "memory");
          v[0] += a.x; v[1] += a.y; v[2] += a.z; v[3] += a.w;
          v[4] += b.x; v[5] += b.y; v[6] += b.z; v[7] += b.w;
        }
        uint4 o;
        __nv_bfloat162 h0 = __floats2bfloat162_rn(v[0], v[1]), h1 = __floats2bfloat162_rn(v[2], v[3]);
        __nv_bfloat162 h2 = __floats2bfloat162_rn(v[4], v[5]), h3 = __floats2bfloat162_rn(v[6], v[7]);
        o.x = *reinterpret_cast<uint32_t*>(&h0);
        o.y = *reinterpret_cast<uint32_t*>(&h1);
        o.z = *reinterpret_cast<uint32_t*>(&h2);
        o.w = *reinterpret_cast<uint32_t*>(&h3);
        *reinterpret_cast<uint4*>(C + (size_t)(m0 + row) * N + gn) = o;
      }
    }
  }
  // No CTA may exit while a peer can still multicast into it, arrive on its
  // barriers or read its partial tile.
  if constexpr (CLUSTER > 1 || SPLIT > 1) cluster_sync();
}

// Ragged fallback: 32x32 C tile per block of 32x8 threads, 32-deep K slices
// staged in shared memory as fp32, scalar loads, fp32 accumulation.
constexpr int kFbT = 32;
__global__ void __launch_bounds__(256)
    gemm_fallback_kernel(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                         __nv_bfloat16* __restrict__ C, int M, int N, int K, int tiles_n) {
  __shared__ float As[kFbT][kFbT + 1];
  __shared__ float Bs[kFbT][kFbT + 1];
  const int tx = threadIdx.x;  // 0..31: column
  const int ty = threadIdx.y;  // 0..7
  const int m0 = (blockIdx.x / tiles_n) * kFbT;
  const int n0 = (blockIdx.x % tiles_n) * kFbT;
  float acc[kFbT / 8] = {};
  for (int k0 = 0; k0 < K; k0 += kFbT) {
#pragma unroll
    for (int r = ty; r < kFbT; r += 8) {
      const int gm = m0 + r, gk = k0 + tx;
      As[r][tx] = (gm < M && gk < K) ? __bfloat162float(A[(size_t)gm * K + gk]) : 0.0f;
      const int bk = k0 + r, bn = n0 + tx;
      Bs[r][tx] = (bk < K && bn < N) ? __bfloat162float(B[(size_t)bk * N + bn]) : 0.0f;
    }
    __syncthreads();
#pragma unroll 8
    for (int kk = 0; kk < kFbT; ++kk) {
      const float b = Bs[kk][tx];
#pragma unroll
      for (int i = 0; i < kFbT / 8; ++i) acc[i] = fmaf(As[ty + 8 * i][kk], b, acc[i]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kFbT / 8; ++i) {
    const int gm = m0 + ty + 8 * i, gn = n0 + tx;
    if (gm < M && gn < N) C[(size_t)gm * N + gn] = __float2bfloat16_rn(acc[i]);
  }
}


// cuTensorMapEncodeTiled from the driver, looked up once through the runtime.
PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
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
bool make_map(CUtensorMap* map, const void* base, uint64_t inner, uint64_t outer,
              uint32_t box_inner, uint32_t box_outer) {
  PFN_cuTensorMapEncodeTiled_v12000 fn = encode_tiled();
  if (!fn) return false;
  const cuuint64_t dims[2] = {inner, outer};
  const cuuint64_t strides[1] = {inner * 2};  // bytes, dimension 1
  const cuuint32_t box[2] = {box_inner, box_outer};
  const cuuint32_t estr[2] = {1, 1};
  return fn(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides, box,
            estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
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
  if (K > 0 && K % 8 == 0 && N % 8 == 0 && aligned) {
    const int64_t tiles_mc = ((M + BM - 1) / BM + CLUSTER - 1) / CLUSTER;
    const int64_t tiles = tiles_mc * CLUSTER * ((N + BN - 1) / BN);  // a multiple of CLUSTER
    if (tiles > INT32_MAX) return KEVO_ERR_UNSUPPORTED;
    CUtensorMap mapA, mapB;
    if (!make_map(&mapA, A, (uint64_t)K, (uint64_t)M, BK, BM)) return KEVO_ERR_RUNTIME;
    if (!make_map(&mapB, B, (uint64_t)N, (uint64_t)K, 64, BK)) return KEVO_ERR_RUNTIME;
    if (cudaFuncSetAttribute(gemm_wgmma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             kSmemBytes) != cudaSuccess)
      return KEVO_ERR_RUNTIME;
    gemm_wgmma_kernel<<<dim3((unsigned)tiles, SPLIT), kThreads, kSmemBytes, stream>>>(mapA, mapB, C, M, N,
                                                                                      K);
  } else {
    const int tiles_n = (N + kFbT - 1) / kFbT;
    const int64_t tiles = (int64_t)((M + kFbT - 1) / kFbT) * tiles_n;
    if (tiles > INT32_MAX) return KEVO_ERR_UNSUPPORTED;
    gemm_fallback_kernel<<<(unsigned)tiles, dim3(32, 8), 0, stream>>>(A, B, C, M, N, K, tiles_n);
  }
  return cudaGetLastError() == cudaSuccess ? KEVO_OK : KEVO_ERR_RUNTIME;
}
