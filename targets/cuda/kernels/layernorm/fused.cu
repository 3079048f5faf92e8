/* layernorm / fused.cu — bf16 LayerNorm on the GPU over the last dim:
 * y = (x - mean) * rsqrt(var + eps) * w + b, var = biased variance, fp32 math.
 *
 * Rows are handled by "row groups" of TPR threads (a warp or several warps);
 * a block holds ROWS groups, one row each. Each thread owns the vectors at
 * columns (v * TPR + lane) * VE, v = 0, 1, ... (VE = VEC / 2 bf16 per access),
 * so a group's loads are fully coalesced.
 *   CACHE_ROW 1: the whole row is loaded once into registers (raw bf16, UNROLL
 *   vectors per thread); the statistics and the output are computed from the
 *   registers: one DRAM read and one write per element. A row longer than the
 *   register capacity TPR * VE * UNROLL falls back (at launch) to the
 *   streaming kernel.
 *   CACHE_ROW 0: streaming: the row is read in batches of UNROLL vectors per
 *   thread for each statistics pass, then re-read (from L1/L2) for the output.
 * Variance (row means are far from 0 relative to the spread, so the naive
 * E[x^2] - E[x]^2 in fp32 is not used):
 *   VARMODE 0: exact two-pass: mean first, then sum((x - mean)^2) (over the
 *              registers when cached; one more streaming pass otherwise).
 *   VARMODE 1: shifted sums with the shift K = x[row, 0]: d = x - K,
 *              mean = K + E[d], var = max(E[d^2] - E[d]^2, 0); one paired
 *              reduction (one pass fewer when streaming). The shift removes
 *              the mean offset, so the cancellation is only of order
 *              (x0 - mean)^2 / var, a few units for normal-like rows.
 * The group reduction is a warp butterfly (__shfl_xor_sync, full mask: every
 * lane of every warp always executes it), plus, for TPR > 32, one exchange of
 * the per-warp partials through shared memory (double-buffered, one
 * __syncthreads per reduction, always executed by the whole block: rows past
 * the end are handled by predication, never by early exit).
 * Rows whose length is not a multiple of VE, or misaligned pointers, use the
 * same kernels instantiated with 2-byte scalar accesses.
 * Knobs:
 *   TPR       threads per row group (32: warp per row; 64..1024: several
 *             warps per row).
 *   ROWS      row groups (rows in flight) per block; block = TPR * ROWS threads.
 *   VEC       bytes per global access: 4, 8 or 16 (2, 4 or 8 bf16).
 *   UNROLL    vectors per thread: with CACHE_ROW 1 the register-cache size
 *             (capacity TPR*VEC/2*UNROLL elements; the require lines keep it
 *             >= the 4096-wide target row and < twice that); with CACHE_ROW 0
 *             the loads in flight per thread per batch (a batch of
 *             TPR*VEC/2*UNROLL elements is half or all of the target row).
 *             The last two require lines are a register budget, measured with
 *             ptxas (nvcc 13.0, sm_90a) where each point of the space starts to
 *             spill as MINB grows: 28 + cached 32-bit words
 *             (UNROLL * VEC / 4 for x; as many more with PIPE 1, four times as
 *             many with WLOAD 2: w and b) + 4 * UNROLL (+ 12 with WLOAD 1)
 *             registers per thread, the threads counted in whole groups of 128
 *             (an SM's 65536 registers are four quarters; a warp takes its
 *             registers from one), so that no valid point spills under its
 *             __launch_bounds__.
 *   CACHE_ROW 1: cache the row in registers; 0: stream it.
 *   VARMODE   0: two-pass variance; 1: shifted sums (see above).
 *   WLOAD     w and b: 0 read-only global loads (ld.global.nc) per row;
 *             1 staged once per block in shared memory (bf16);
 *             2 held in registers across rows (cached rows).
 *             1 and 2 only with the persistent grid (WAVES > 0).
 *   HINT      cache hints for the x loads / y stores: 0 plain / plain;
 *             1 ld.global.nc.L1::no_allocate / plain; 2 ld.global.nc.
 *             L1::no_allocate.L2::256B (L2 prefetch hint) / st.global.cs;
 *             3 ld.global.cs (__ldcs, evict-first) / st.global.cs (__stcs);
 *             4 ld.global.L1::evict_last.L2::cache_hint with an L2 evict_last
 *             policy / plain: on the H200 no faster than plain loads at the
 *             default point (1.004x against 1.007x torch.compile after a
 *             flush by writing; bench/results/2026-12-01-h200-l2-policy-loads.md),
 *             where it pays for rmsnorm, add_rmsnorm and swiglu. Only with VEC 16.
 *   WAVES     0: one block per ROWS rows (grid = ceil(rows / ROWS)); k > 0:
 *             persistent grid of k resident waves (k * #SMs * blocks per SM
 *             from the occupancy calculator) striding over the rows.
 *   PIPE      (CACHE_ROW 1, WAVES > 0) 1: load the block's next row into a
 *             second register buffer before reducing the current one.
 *   MINB      __launch_bounds__ minimum blocks per SM (0: 1, i.e. only the
 *             block size bounds the registers).
 * The default point (TPR 128, ROWS 1, UNROLL 4, MINB 2) is what kevo's searches
 * on the H200 found: 1.040x torch.compile in one harness
 * (bench/results/2026-11-30-h200-rmsnorm-and-confirmation.md), where the old
 * default (ROWS 2, MINB 0) read 0.943x (2026-11-30-h200-rmsnorm-occupancy.md).
 */
// @kevo knob TPR 128 {32, 64, 128, 256, 512, 1024}
// @kevo knob ROWS 1 {1, 2, 4, 8, 16}
// @kevo require TPR * ROWS <= 1024
// @kevo knob VEC 16 {4, 8, 16}
// @kevo knob UNROLL 4 {1, 2, 4, 8, 16}
// @kevo knob CACHE_ROW 1 {0, 1}
// @kevo require (CACHE_ROW == 1 && TPR * VEC * UNROLL >= 8192 && TPR * VEC * UNROLL < 16384) || (CACHE_ROW == 0 && TPR * VEC * UNROLL >= 4096 && TPR * VEC * UNROLL <= 8192)
// @kevo knob VARMODE 0 {0, 1}
// @kevo knob WLOAD 0 {0, 1, 2}
// @kevo knob HINT 0 {0, 1, 2, 3, 4}
// @kevo knob WAVES 0 {0, 1, 2}
// @kevo knob PIPE 0 {0, 1}
// @kevo require HINT != 4 || VEC == 16
// @kevo knob MINB 2 {0, 2, 3, 4, 5, 6, 8}
// @kevo require PIPE == 0 || (CACHE_ROW == 1 && WAVES > 0)
// @kevo require WLOAD == 0 || WAVES > 0
// @kevo require WLOAD != 2 || CACHE_ROW == 1
// @kevo require TPR * ROWS * MINB <= 2048
// @kevo require 28 + (UNROLL * VEC / 4) * (1 + PIPE + 4 * (WLOAD == 2)) + 4 * UNROLL + 12 * (WLOAD == 1) <= 255
// @kevo require (28 + (UNROLL * VEC / 4) * (1 + PIPE + 4 * (WLOAD == 2)) + 4 * UNROLL + 12 * (WLOAD == 1)) * 128 * ((TPR * ROWS * (MINB + (MINB == 0)) + 127) / 128) <= 65536
#ifndef TPR
#define TPR 128
#endif
#ifndef ROWS
#define ROWS 1
#endif
#ifndef VEC
#define VEC 16
#endif
#ifndef UNROLL
#define UNROLL 4
#endif
#ifndef CACHE_ROW
#define CACHE_ROW 1
#endif
#ifndef VARMODE
#define VARMODE 0
#endif
#ifndef WLOAD
#define WLOAD 0
#endif
#ifndef HINT
#define HINT 0
#endif
#ifndef WAVES
#define WAVES 0
#endif
#ifndef PIPE
#define PIPE 0
#endif
#ifndef MINB
#define MINB 2
#endif

/* kevo's row-kernel layer (loads and stores with cache hints and the HINT
 * knob's choice of them, bf16 packing, the row-group reduction, the wave and
 * tensor checks of the launch): targets/cuda/include */
#include "kevo_cuda_rows.cuh"

/* ------------------------------------------------------------------------ */
/* w (and b) for the vector at column c */
template <int VE>
KV_DEV RawV<VE> ld_param(const bf16* __restrict__ g, const bf16* s, int c, int wsm) {
#if WLOAD == 1
  return wsm ? ld_sm<VE>(s + c) : ld_ro<VE>(g + c);
#else
  (void)s;
  (void)wsm;
  return ld_ro<VE>(g + c);
#endif
}

/* load the cached slots of row `row` (zeros where invalid) */
template <int VE>
KV_DEV void load_row(RawV<VE> (&t)[UNROLL], const bf16* __restrict__ x, int64_t row, int64_t M, int N,
                     int lane) {
  const bool valid = row < M;
  const bf16* xr = x + (valid ? row : 0) * (int64_t)N;
#pragma unroll
  for (int v = 0; v < UNROLL; ++v) {
    const int c = (v * TPR + lane) * VE;
    t[v] = (valid && c < N) ? ld_hint<VE, LDHINT>(xr + c) : rv_zero<VE>();
  }
}

/* CACHE_ROW 1 kernel: the row lives in registers (requires N <= TPR*VE*UNROLL) */
template <int VE>
__global__ void KV_BOUNDS ln_cached(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                    const bf16* __restrict__ bias, bf16* __restrict__ y, int64_t M, int N,
                                    float eps, float invN, int64_t nblk, int wsm) {
  constexpr int U = UNROLL;
  __shared__ float red[2 * ROWS * NWG * 2];
  extern __shared__ __align__(16) unsigned char kv_dsm[];
  bf16* ws = reinterpret_cast<bf16*>(kv_dsm);
  bf16* bs = ws + ((N + 7) / 8) * 8; /* 16-byte aligned */
  const int g = (int)threadIdx.x / TPR;
  const int lane = (int)threadIdx.x % TPR;
#if WLOAD == 1
  stage_vec<VE>(ws, w, N, wsm);
  stage_vec<VE>(bs, bias, N, wsm);
#endif
#if WLOAD == 2
  RawV<VE> wr[U], br[U];
#pragma unroll
  for (int v = 0; v < U; ++v) {
    const int c = (v * TPR + lane) * VE;
    wr[v] = c < N ? ld_ro<VE>(w + c) : rv_zero<VE>();
    br[v] = c < N ? ld_ro<VE>(bias + c) : rv_zero<VE>();
  }
#endif
  int phase = 0;
  RawV<VE> cur[U];
#if VARMODE == 1
  float K = 0.f; /* shift: the row's first element */
#endif
#if PIPE
  RawV<VE> nxt[U];
  load_row<VE>(cur, x, (int64_t)blockIdx.x * ROWS + g, M, N, lane);
#if VARMODE == 1
  {
    const int64_t row = (int64_t)blockIdx.x * ROWS + g;
    K = row < M ? rv_get<1>(ld_ro<1>(x + row * (int64_t)N), 0) : 0.f;
  }
#endif
#endif
  for (int64_t b = blockIdx.x; b < nblk; b += gridDim.x) {
    const int64_t row = b * ROWS + g;
    const bool valid = row < M;
#if PIPE
    const int64_t rn = (b + gridDim.x) * ROWS + g;
    load_row<VE>(nxt, x, rn, M, N, lane);
#if VARMODE == 1
    const float Kn = rn < M ? rv_get<1>(ld_ro<1>(x + rn * (int64_t)N), 0) : 0.f;
#endif
#else
    load_row<VE>(cur, x, row, M, N, lane);
#if VARMODE == 1
    K = valid ? rv_get<1>(ld_ro<1>(x + row * (int64_t)N), 0) : 0.f;
#endif
#endif
    float mean, rstd;
#if VARMODE == 0
    {
      float acc[4] = {0.f, 0.f, 0.f, 0.f}; /* invalid slots hold zeros and add nothing */
#pragma unroll
      for (int v = 0; v < U; ++v) {
#pragma unroll
        for (int e = 0; e < VE; ++e) acc[(v * VE + e) & 3] += rv_get<VE>(cur[v], e);
      }
      float s[1] = {(acc[0] + acc[1]) + (acc[2] + acc[3])};
      group_sum<1>(s, red, phase, g, lane);
      mean = s[0] * invN;
      float q[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int v = 0; v < U; ++v) {
        const int c = (v * TPR + lane) * VE;
        if (c < N) { /* invalid rows: the value is unused */
#pragma unroll
          for (int e = 0; e < VE; ++e) {
            const float d = rv_get<VE>(cur[v], e) - mean;
            q[(v * VE + e) & 3] = fmaf(d, d, q[(v * VE + e) & 3]);
          }
        }
      }
      float s2[1] = {(q[0] + q[1]) + (q[2] + q[3])};
      group_sum<1>(s2, red, phase, g, lane);
      rstd = rsqrtf(fmaf(s2[0], invN, eps));
    }
#else
    {
      float a1[2] = {0.f, 0.f}, a2[2] = {0.f, 0.f};
#pragma unroll
      for (int v = 0; v < U; ++v) {
        const int c = (v * TPR + lane) * VE;
        if (c < N) {
#pragma unroll
          for (int e = 0; e < VE; ++e) {
            const float d = rv_get<VE>(cur[v], e) - K;
            a1[e & 1] += d;
            a2[e & 1] = fmaf(d, d, a2[e & 1]);
          }
        }
      }
      float s[2] = {a1[0] + a1[1], a2[0] + a2[1]};
      group_sum<2>(s, red, phase, g, lane);
      const float m1 = s[0] * invN;
      mean = K + m1;
      rstd = rsqrtf(fmaxf(fmaf(s[1], invN, -m1 * m1), 0.f) + eps);
    }
#endif
    if (valid) {
      bf16* yr = y + row * (int64_t)N;
#pragma unroll
      for (int v = 0; v < U; ++v) {
        const int c = (v * TPR + lane) * VE;
        if (c < N) {
#if WLOAD == 2
          const RawV<VE> wv = wr[v], bv = br[v];
#else
          const RawV<VE> wv = ld_param<VE>(w, ws, c, wsm), bv = ld_param<VE>(bias, bs, c, wsm);
#endif
          float o[VE];
#pragma unroll
          for (int e = 0; e < VE; ++e)
            o[e] = fmaf((rv_get<VE>(cur[v], e) - mean) * rstd, rv_get<VE>(wv, e), rv_get<VE>(bv, e));
          st_hint<VE, STHINT>(yr + c, rv_pack<VE>(o));
        }
      }
    }
#if PIPE
#pragma unroll
    for (int v = 0; v < U; ++v) cur[v] = nxt[v];
#if VARMODE == 1
    K = Kn;
#endif
#endif
  }
}

/* ------------------------------------------------------------------------ */
/* streaming kernel (CACHE_ROW 0, or rows too long for the register cache) */
template <int VE>
__global__ void KV_BOUNDS ln_stream(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                    const bf16* __restrict__ bias, bf16* __restrict__ y, int64_t M, int N,
                                    float eps, float invN, int64_t nblk, int wsm) {
  constexpr int U = UNROLL;
  constexpr int B = TPR * VE * U; /* elements per batch */
  __shared__ float red[2 * ROWS * NWG * 2];
  extern __shared__ __align__(16) unsigned char kv_dsm[];
  bf16* ws = reinterpret_cast<bf16*>(kv_dsm);
  bf16* bs = ws + ((N + 7) / 8) * 8;
  const int g = (int)threadIdx.x / TPR;
  const int lane = (int)threadIdx.x % TPR;
#if WLOAD == 1
  stage_vec<VE>(ws, w, N, wsm);
  stage_vec<VE>(bs, bias, N, wsm);
#endif
  int phase = 0;
  for (int64_t b = blockIdx.x; b < nblk; b += gridDim.x) {
    const int64_t row = b * ROWS + g;
    const bool valid = row < M;
    const bf16* xr = x + (valid ? row : 0) * (int64_t)N;
    float mean, rstd;
#if VARMODE == 0
    {
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
          for (int e = 0; e < VE; ++e) acc[(v * VE + e) & 3] += rv_get<VE>(t[v], e);
        }
      }
      float s[1] = {(acc[0] + acc[1]) + (acc[2] + acc[3])};
      group_sum<1>(s, red, phase, g, lane);
      mean = s[0] * invN;
      float q[4] = {0.f, 0.f, 0.f, 0.f};
      for (int base = 0; base < N; base += B) {
        RawV<VE> t[U];
#pragma unroll
        for (int v = 0; v < U; ++v) {
          const int c = base + (v * TPR + lane) * VE;
          t[v] = (valid && c < N) ? ld_hint<VE, 0>(xr + c) : rv_zero<VE>();
        }
#pragma unroll
        for (int v = 0; v < U; ++v) {
          const int c = base + (v * TPR + lane) * VE;
          if (c < N) {
#pragma unroll
            for (int e = 0; e < VE; ++e) {
              const float d = rv_get<VE>(t[v], e) - mean;
              q[(v * VE + e) & 3] = fmaf(d, d, q[(v * VE + e) & 3]);
            }
          }
        }
      }
      float s2[1] = {(q[0] + q[1]) + (q[2] + q[3])};
      group_sum<1>(s2, red, phase, g, lane);
      rstd = rsqrtf(fmaf(s2[0], invN, eps));
    }
#else
    {
      const float K = valid ? rv_get<1>(ld_ro<1>(xr), 0) : 0.f;
      float a1[2] = {0.f, 0.f}, a2[2] = {0.f, 0.f};
      for (int base = 0; base < N; base += B) {
        RawV<VE> t[U];
#pragma unroll
        for (int v = 0; v < U; ++v) {
          const int c = base + (v * TPR + lane) * VE;
          t[v] = (valid && c < N) ? ld_hint<VE, LDHINT>(xr + c) : rv_zero<VE>();
        }
#pragma unroll
        for (int v = 0; v < U; ++v) {
          const int c = base + (v * TPR + lane) * VE;
          if (c < N) {
#pragma unroll
            for (int e = 0; e < VE; ++e) {
              const float d = rv_get<VE>(t[v], e) - K;
              a1[e & 1] += d;
              a2[e & 1] = fmaf(d, d, a2[e & 1]);
            }
          }
        }
      }
      float s[2] = {a1[0] + a1[1], a2[0] + a2[1]};
      group_sum<2>(s, red, phase, g, lane);
      const float m1 = s[0] * invN;
      mean = K + m1;
      rstd = rsqrtf(fmaxf(fmaf(s[1], invN, -m1 * m1), 0.f) + eps);
    }
#endif
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
            const RawV<VE> wv = ld_param<VE>(w, ws, c, wsm), bv = ld_param<VE>(bias, bs, c, wsm);
            float o[VE];
#pragma unroll
            for (int e = 0; e < VE; ++e)
              o[e] = fmaf((rv_get<VE>(t[v], e) - mean) * rstd, rv_get<VE>(wv, e), rv_get<VE>(bv, e));
            st_hint<VE, STHINT>(yr + c, rv_pack<VE>(o));
          }
        }
      }
    }
  }
}

/* ------------------------------------------------------------------------ */
typedef void (*ln_kernel_t)(const bf16*, const bf16*, const bf16*, bf16*, int64_t, int, float, float, int64_t,
                            int);

/* persistent grid size: WAVES * #SMs * resident blocks per SM (cached per kernel and smem size) */
template <int VE>
static int launch(const bf16* x, const bf16* w, const bf16* b, bf16* y, int64_t M, int N, float eps,
                  cudaStream_t stream) {
  ln_kernel_t k = ln_stream<VE>;
#if CACHE_ROW
  if ((int64_t)N <= (int64_t)TPR * VE * UNROLL) k = ln_cached<VE>;
#endif
  const int64_t nblk = (M + ROWS - 1) / ROWS;
  size_t smem = 0;
  int wsm = 0;
#if WLOAD == 1
  {
    const size_t bytes = 2 * (((size_t)N + 7) / 8) * 8 * sizeof(bf16); /* w, then b */
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
  k<<<(unsigned)grid, BLOCK, smem, stream>>>(x, w, b, y, M, N, eps, 1.0f / (float)N, nblk, wsm);
  return cudaGetLastError() == cudaSuccess ? KEVO_OK : KEVO_ERR_RUNTIME;
}

extern "C" KEVO_EXPORT int kevo_launch(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                                       const double* scalars, int n_scalars, cudaStream_t stream) {
  if (n_in != 3 || n_out != 1 || n_scalars < 1) return KEVO_ERR_ARGS;
  int rc;
  if ((rc = kv_check(&in[0])) || (rc = kv_check(&in[1])) || (rc = kv_check(&in[2])) || (rc = kv_check(&out[0])))
    return rc;
  const int64_t N = kevo_row_len(&in[0]);
  const int64_t M = kevo_rows(&in[0]);
  if (kevo_numel(&in[1]) != N || kevo_numel(&in[2]) != N || kevo_numel(&out[0]) != M * N ||
      kevo_row_len(&out[0]) != N)
    return KEVO_ERR_ARGS;
  if (M <= 0 || N <= 0) return KEVO_OK;
  if (N > (1 << 30)) return KEVO_ERR_UNSUPPORTED;
  const bf16* x = (const bf16*)in[0].data;
  const bf16* w = (const bf16*)in[1].data;
  const bf16* b = (const bf16*)in[2].data;
  bf16* y = (bf16*)out[0].data;
  const float eps = (float)scalars[0];
  const uintptr_t al = (uintptr_t)x | (uintptr_t)w | (uintptr_t)b | (uintptr_t)y;
  if (N % VE_MAIN == 0 && al % VEC == 0) return launch<VE_MAIN>(x, w, b, y, M, (int)N, eps, stream);
  return launch<1>(x, w, b, y, M, (int)N, eps, stream);
}
