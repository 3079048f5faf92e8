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
