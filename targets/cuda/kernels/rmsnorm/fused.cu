/* rmsnorm / fused.cu — bf16 RMSNorm on the GPU: y = x * rsqrt(mean(x^2) + eps) * w
 * over the last dim, fp32 math.
 *
 * Rows are handled by "row groups" of TPR threads (a sub-warp, a warp or
 * several warps); a block holds ROWS groups, one row each. Each thread owns
 * the vectors at columns (v * TPR + lane) * VE, v = 0, 1, ... (VE = VEC / 2
 * bf16 per access), so a group's loads are fully coalesced.
 *   CACHE_ROW 1: the whole row is loaded once into registers (raw bf16, UNROLL
 *   vectors per thread), the sum of squares is reduced over the group, and the
 *   output pass works from the registers: one DRAM read and one write per
 *   element. A row longer than the register capacity TPR * VE * UNROLL falls
 *   back (at launch) to the streaming kernel below.
 *   CACHE_ROW 0: streaming: the row is read in batches of UNROLL vectors per
 *   thread for the sum of squares, then re-read (from L1/L2) for the output.
 * The group reduction is a warp butterfly (__shfl_xor_sync, full mask: every
 * lane of every warp always executes it), plus, for TPR > 32, one exchange of
 * the per-warp partials through shared memory (double-buffered, one
 * __syncthreads per reduction, always executed by the whole block: rows past
 * the end are handled by predication, never by early exit).
 * Rows whose length is not a multiple of VE, or misaligned pointers, use the
 * same kernels instantiated with 2-byte scalar accesses.
 * Knobs:
 *   TPR       threads per row group (8, 16: sub-warp; 32: warp per row;
 *             64..1024: several warps per row).
 *   ROWS      row groups (rows in flight) per block; block = TPR * ROWS threads.
 *   VEC       bytes per global access: 4, 8 or 16 (2, 4 or 8 bf16).
 *   UNROLL    vectors per thread: with CACHE_ROW 1 the register-cache size
 *             (capacity TPR*VEC/2*UNROLL elements; the require lines keep it
 *             >= the 4096-wide target row and < twice that); with CACHE_ROW 0
 *             the loads in flight per thread per batch (a batch of
 *             TPR*VEC/2*UNROLL elements is half or all of the target row).
 *             The last two require lines are a register budget, measured
 *             with ptxas: about 12 + 2 * cached 32-bit words + 2 * UNROLL
 *             (+ 8 with WLOAD 1, + UNROLL with several row groups per
 *             block, + UNROLL + 1 with HINT 1-3) registers, so that no valid
 *             point spills under its __launch_bounds__ (checked with
 *             kevo knobs --task ... --compile). HINT 2 and 3 also stay below
 *             2048 threads per SM: at 32 registers they spilled 8-28 bytes
 *             where plain loads fit, far inside the budget.
 *   CACHE_ROW 1: cache the row in registers; 0: stream it twice.
 *   WLOAD     weight w: 0 read-only global loads (ld.global.nc) per row;
 *             1 staged once per block in shared memory (bf16);
 *             2 held in registers across rows (cached rows).
 *             1 and 2 only with the persistent grid (WAVES > 0).
 *   HINT      cache hints for the x loads / y stores: 0 plain / plain;
 *             1 ld.global.nc.L1::no_allocate / plain; 2 ld.global.nc.
 *             L1::no_allocate.L2::256B (L2 prefetch hint) / st.global.cs;
 *             3 ld.global.cs (__ldcs, evict-first) / st.global.cs (__stcs);
 *             4 ld.global.L1::evict_last.L2::cache_hint with an L2 evict_last
 *             policy / plain: the row's lines outlast the dirty lines around
 *             them in L2, which measured faster when L2 starts full of dirty
 *             lines (a flush by writing, or the op before) and slower from a
 *             clean L2. Only with VEC 16: the policy takes two registers, and
 *             with narrower vectors ptxas spills at the budget's edge.
 *   WAVES     0: one block per ROWS rows (grid = ceil(rows / ROWS)); k > 0:
 *             persistent grid of k resident waves (k * #SMs * blocks per SM
 *             from the occupancy calculator) striding over the rows.
 *   PIPE      (CACHE_ROW 1, WAVES > 0) 1: load the block's next row into a
 *             second register buffer before reducing the current one.
 *   MINB      __launch_bounds__ minimum blocks per SM (0: 1, i.e. only the
 *             block size bounds the registers).
 *   SPEC      1: a second instantiation of the kernels for the task's row
 *             length (KEVO_LAST_x, defined by kevo at compile time), used when
 *             a call's row length is that one: offsets and bounds become
 *             constants. Other row lengths take the generic kernels. 0: the
 *             generic kernels only. Only with ROWS 1 and 8- or 16-byte
 *             vectors: with several row groups per block, or 4-byte vectors,
 *             the fixed-length kernels spill at the budget's edge.
 * The default point (TPR 256, ROWS 1, UNROLL 2, MINB 6: 40 registers, six
 * 256-thread blocks per SM; SPEC 1, HINT 4) was the fastest of the points
 * timed beside torch.compile on the H200 after an L2 flush by writing
 * (bench/results/2026-11-30-h200-rmsnorm-occupancy.md,
 * bench/results/2026-12-01-h200-rmsnorm-shape-and-l2-policy.md).
 */
// @kevo knob TPR 256 {32, 64, 128, 256, 512, 1024}
// @kevo knob ROWS 1 {1, 2, 4, 8, 16}
// @kevo require TPR * ROWS <= 1024
// @kevo knob VEC 16 {4, 8, 16}
// @kevo knob UNROLL 2 {1, 2, 4, 8, 16}
// @kevo knob CACHE_ROW 1 {0, 1}
// @kevo require (CACHE_ROW == 1 && TPR * VEC * UNROLL >= 8192 && TPR * VEC * UNROLL < 16384) || (CACHE_ROW == 0 && TPR * VEC * UNROLL >= 4096 && TPR * VEC * UNROLL <= 8192)
// @kevo knob WLOAD 0 {0, 1, 2}
// @kevo knob HINT 4 {0, 1, 2, 3, 4}
// @kevo knob WAVES 0 {0, 1, 2}
// @kevo knob PIPE 0 {0, 1}
// @kevo knob MINB 6 {0, 2, 3, 4, 5, 6, 8}
// @kevo knob SPEC 1 {0, 1}
// @kevo require HINT != 4 || VEC == 16
// @kevo require SPEC == 0 || (ROWS == 1 && VEC != 4)
// @kevo require PIPE == 0 || (CACHE_ROW == 1 && WAVES > 0)
// @kevo require WLOAD == 0 || WAVES > 0
// @kevo require WLOAD != 2 || CACHE_ROW == 1
// @kevo require TPR * ROWS * MINB <= 2048
// @kevo require HINT < 2 || HINT > 3 || TPR * ROWS * (MINB + (MINB == 0)) < 2048
// @kevo require 12 + 2 * (UNROLL * VEC / 4) * (1 + PIPE + (WLOAD == 2)) + 2 * UNROLL + 8 * (WLOAD == 1) + UNROLL * (ROWS > 1) + (UNROLL + 1) * (HINT >= 1 && HINT <= 3) <= 255
// @kevo require (12 + 2 * (UNROLL * VEC / 4) * (1 + PIPE + (WLOAD == 2)) + 2 * UNROLL + 8 * (WLOAD == 1) + UNROLL * (ROWS > 1) + (UNROLL + 1) * (HINT >= 1 && HINT <= 3)) * TPR * ROWS * (MINB + (MINB == 0)) <= 65536
#ifndef TPR
#define TPR 256
#endif
#ifndef ROWS
#define ROWS 1
#endif
#ifndef VEC
#define VEC 16
#endif
#ifndef UNROLL
#define UNROLL 2
#endif
#ifndef CACHE_ROW
#define CACHE_ROW 1
#endif
#ifndef WLOAD
#define WLOAD 0
#endif
#ifndef HINT
#define HINT 4
#endif
#ifndef WAVES
#define WAVES 0
#endif
#ifndef PIPE
#define PIPE 0
#endif
#ifndef MINB
#define MINB 6
#endif
#ifndef SPEC
#define SPEC 1
#endif

/* kevo's row-kernel layer (loads and stores with cache hints and the HINT
 * knob's choice of them, bf16 packing, the row-group reduction, the wave and
 * tensor checks of the launch): targets/cuda/include */
#include "kevo_cuda_rows.cuh"

/* ------------------------------------------------------------------------ */
/* CACHE_ROW 1 kernel: the row lives in registers (requires N <= TPR*VE*UNROLL) */
template <int VE, int NC>
__global__ void KV_BOUNDS rms_cached(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                     bf16* __restrict__ y, int64_t M, int n, float eps, float invN,
                                     int64_t nblk, int wsm) {
  constexpr int U = UNROLL;
  const int N = NC > 0 ? NC : n; /* NC: the row length fixed at compile time (SPEC) */
  __shared__ float red[2 * ROWS * NWG];
  extern __shared__ __align__(16) unsigned char kv_dsm[];
  bf16* ws = reinterpret_cast<bf16*>(kv_dsm);
  const int g = (int)threadIdx.x / TPR;
  const int lane = (int)threadIdx.x % TPR;
#if WLOAD == 1
  stage_vec<VE>(ws, w, N, wsm);
#else
  (void)ws;
  (void)wsm;
#endif
#if WLOAD == 2
  RawV<VE> wr[U];
#pragma unroll
  for (int v = 0; v < U; ++v) {
    const int c = (v * TPR + lane) * VE;
    wr[v] = c < N ? ld_ro<VE>(w + c) : rv_zero<VE>();
  }
#endif
  int phase = 0;
  RawV<VE> cur[U];
#if PIPE
  RawV<VE> nxt[U];
  {
    const int64_t row = (int64_t)blockIdx.x * ROWS + g;
    const bool valid = row < M;
    const bf16* xr = x + (valid ? row : 0) * (int64_t)N;
#pragma unroll
    for (int v = 0; v < U; ++v) {
      const int c = (v * TPR + lane) * VE;
      cur[v] = (valid && c < N) ? ld_hint<VE, LDHINT>(xr + c) : rv_zero<VE>();
    }
  }
#endif
  for (int64_t b = blockIdx.x; b < nblk; b += gridDim.x) {
    const int64_t row = b * ROWS + g;
    const bool valid = row < M;
#if PIPE
    {
      const int64_t rn = (b + gridDim.x) * ROWS + g;
      const bool vn = rn < M;
      const bf16* xn = x + (vn ? rn : 0) * (int64_t)N;
#pragma unroll
      for (int v = 0; v < U; ++v) {
        const int c = (v * TPR + lane) * VE;
        nxt[v] = (vn && c < N) ? ld_hint<VE, LDHINT>(xn + c) : rv_zero<VE>();
      }
    }
#else
    {
      const bf16* xr = x + (valid ? row : 0) * (int64_t)N;
#pragma unroll
      for (int v = 0; v < U; ++v) {
        const int c = (v * TPR + lane) * VE;
        cur[v] = (valid && c < N) ? ld_hint<VE, LDHINT>(xr + c) : rv_zero<VE>();
      }
    }
#endif
    /* invalid slots hold zeros and add nothing */
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int v = 0; v < U; ++v) {
#pragma unroll
      for (int e = 0; e < VE; ++e) {
        const float f = rv_get<VE>(cur[v], e);
        acc[(v * VE + e) & 3] = fmaf(f, f, acc[(v * VE + e) & 3]);
      }
    }
    float s[1] = {(acc[0] + acc[1]) + (acc[2] + acc[3])};
    group_sum<1>(s, red, phase, g, lane);
    const float inv = rsqrtf(fmaf(s[0], invN, eps));
    if (valid) {
      bf16* yr = y + row * (int64_t)N;
#pragma unroll
      for (int v = 0; v < U; ++v) {
        const int c = (v * TPR + lane) * VE;
        if (c < N) {
#if WLOAD == 2
          const RawV<VE> wv = wr[v];
#elif WLOAD == 1
          const RawV<VE> wv = wsm ? ld_sm<VE>(ws + c) : ld_ro<VE>(w + c);
#else
          const RawV<VE> wv = ld_ro<VE>(w + c);
#endif
          float o[VE];
#pragma unroll
          for (int e = 0; e < VE; ++e) o[e] = rv_get<VE>(cur[v], e) * inv * rv_get<VE>(wv, e);
          st_hint<VE, STHINT>(yr + c, rv_pack<VE>(o));
        }
      }
    }
#if PIPE
#pragma unroll
    for (int v = 0; v < U; ++v) cur[v] = nxt[v];
#endif
  }
}

/* ------------------------------------------------------------------------ */
/* streaming kernel (CACHE_ROW 0, or rows too long for the register cache) */
template <int VE, int NC>
__global__ void KV_BOUNDS rms_stream(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                     bf16* __restrict__ y, int64_t M, int n, float eps, float invN,
                                     int64_t nblk, int wsm) {
  constexpr int U = UNROLL;
  const int N = NC > 0 ? NC : n; /* NC: the row length fixed at compile time (SPEC) */
  constexpr int B = TPR * VE * U; /* elements per batch */
  __shared__ float red[2 * ROWS * NWG];
  extern __shared__ __align__(16) unsigned char kv_dsm[];
  bf16* ws = reinterpret_cast<bf16*>(kv_dsm);
  const int g = (int)threadIdx.x / TPR;
  const int lane = (int)threadIdx.x % TPR;
#if WLOAD == 1
  stage_vec<VE>(ws, w, N, wsm);
#else
  (void)ws;
  (void)wsm;
#endif
  int phase = 0;
  for (int64_t b = blockIdx.x; b < nblk; b += gridDim.x) {
    const int64_t row = b * ROWS + g;
    const bool valid = row < M;
    const bf16* xr = x + (valid ? row : 0) * (int64_t)N;
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    for (int base = 0; base < N; base += B) { /* same trip count for every thread */
      RawV<VE> t[U];
#pragma unroll
      for (int v = 0; v < U; ++v) {
        const int c = base + (v * TPR + lane) * VE;
        t[v] = (valid && c < N) ? ld_hint<VE, LDHINT>(xr + c) : rv_zero<VE>();
      }
#pragma unroll
      for (int v = 0; v < U; ++v) {
#pragma unroll
        for (int e = 0; e < VE; ++e) {
          const float f = rv_get<VE>(t[v], e);
          acc[(v * VE + e) & 3] = fmaf(f, f, acc[(v * VE + e) & 3]);
        }
      }
    }
    float s[1] = {(acc[0] + acc[1]) + (acc[2] + acc[3])};
    group_sum<1>(s, red, phase, g, lane);
    const float inv = rsqrtf(fmaf(s[0], invN, eps));
    if (valid) { /* no barrier inside */
      bf16* yr = y + row * (int64_t)N;
      for (int base = 0; base < N; base += B) {
        RawV<VE> t[U];
#pragma unroll
        for (int v = 0; v < U; ++v) {
          const int c = base + (v * TPR + lane) * VE;
          t[v] = c < N ? ld_hint<VE, 0>(xr + c) : rv_zero<VE>();
        }
#pragma unroll
        for (int v = 0; v < U; ++v) {
          const int c = base + (v * TPR + lane) * VE;
          if (c < N) {
#if WLOAD == 1
            const RawV<VE> wv = wsm ? ld_sm<VE>(ws + c) : ld_ro<VE>(w + c);
#else
            const RawV<VE> wv = ld_ro<VE>(w + c);
#endif
            float o[VE];
#pragma unroll
            for (int e = 0; e < VE; ++e) o[e] = rv_get<VE>(t[v], e) * inv * rv_get<VE>(wv, e);
            st_hint<VE, STHINT>(yr + c, rv_pack<VE>(o));
          }
        }
      }
    }
  }
}

/* ------------------------------------------------------------------------ */
typedef void (*rms_kernel_t)(const bf16*, const bf16*, bf16*, int64_t, int, float, float, int64_t, int);

/* persistent grid size: WAVES * #SMs * resident blocks per SM (cached per kernel and smem size) */
template <int VE, int NC>
static int launch(const bf16* x, const bf16* w, bf16* y, int64_t M, int N, float eps, cudaStream_t stream) {
  rms_kernel_t k = rms_stream<VE, NC>;
#if CACHE_ROW
  if ((int64_t)N <= (int64_t)TPR * VE * UNROLL) k = rms_cached<VE, NC>;
#endif
  const int64_t nblk = (M + ROWS - 1) / ROWS;
  size_t smem = 0;
  int wsm = 0;
#if WLOAD == 1
  {
    const size_t bytes = (((size_t)N + 7) / 8) * 8 * sizeof(bf16);
    if (bytes <= 200u * 1024u) {
      smem = bytes;
      wsm = 1;
      if (smem > 48u * 1024u &&
          cudaFuncSetAttribute((const void*)k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess)
        return KEVO_ERR_RUNTIME;
    }
  }
#endif
  int64_t grid = nblk;
  if (WAVES > 0) {
    const int64_t cap = (int64_t)WAVES * kv_wave_blocks((const void*)k, smem);
    if (grid > cap) grid = cap;
  }
  if (grid > 2147483647LL) grid = 2147483647LL;
  k<<<(unsigned)grid, BLOCK, smem, stream>>>(x, w, y, M, N, eps, 1.0f / (float)N, nblk, wsm);
  return cudaGetLastError() == cudaSuccess ? KEVO_OK : KEVO_ERR_RUNTIME;
}

extern "C" KEVO_EXPORT int kevo_launch(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                                       const double* scalars, int n_scalars, cudaStream_t stream) {
  if (n_in != 2 || n_out != 1 || n_scalars < 1) return KEVO_ERR_ARGS;
  int rc;
  if ((rc = kv_check(&in[0])) || (rc = kv_check(&in[1])) || (rc = kv_check(&out[0]))) return rc;
  const int64_t N = kevo_row_len(&in[0]);
  const int64_t M = kevo_rows(&in[0]);
  if (kevo_numel(&in[1]) != N || kevo_numel(&out[0]) != M * N || kevo_row_len(&out[0]) != N) return KEVO_ERR_ARGS;
  if (M <= 0 || N <= 0) return KEVO_OK;
  if (N > (1 << 30)) return KEVO_ERR_UNSUPPORTED;
  const bf16* x = (const bf16*)in[0].data;
  const bf16* w = (const bf16*)in[1].data;
  bf16* y = (bf16*)out[0].data;
  const float eps = (float)scalars[0];
  const uintptr_t al = (uintptr_t)x | (uintptr_t)w | (uintptr_t)y;
#if SPEC && defined(KEVO_LAST_x) && KEVO_LAST_x > 0 && KEVO_LAST_x % VE_MAIN == 0 && KEVO_LAST_x <= (1 << 30)
  /* the task's row length, known at compile time: constant offsets and bounds */
  if (N == KEVO_LAST_x && al % VEC == 0) return launch<VE_MAIN, KEVO_LAST_x>(x, w, y, M, (int)N, eps, stream);
#endif
  if (N % VE_MAIN == 0 && al % VEC == 0) return launch<VE_MAIN, 0>(x, w, y, M, (int)N, eps, stream);
  return launch<1, 0>(x, w, y, M, (int)N, eps, stream);
}
