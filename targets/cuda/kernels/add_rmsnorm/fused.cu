/* add_rmsnorm / fused.cu — bf16 residual add + RMSNorm on the GPU:
 * h = bf16(x + r) (stored), y = h * rsqrt(mean(h^2) + eps) * w, where the
 * statistics and y use the ROUNDED h values; fp32 math.
 *
 * Rows are handled by "row groups" of TPR threads (a warp or several warps);
 * a block holds ROWS groups, one row each. Each thread owns the vectors at
 * columns (v * TPR + lane) * VE, v = 0, 1, ... (VE = VEC / 2 bf16 per access),
 * so a group's loads are fully coalesced.
 *   CACHE_ROW 1: x and r are read once, h is rounded, stored, and kept in
 *   registers (raw bf16, UNROLL vectors per thread); the sum of squares is
 *   reduced over the group and y is computed from the registers. A row longer
 *   than the register capacity TPR * VE * UNROLL falls back (at launch) to the
 *   streaming kernel.
 *   CACHE_ROW 0: streaming: batches of UNROLL vectors per thread: read x, r,
 *   store h, accumulate; then h is re-read (ld.global.cg: the thread's own
 *   stores, coherent at L2) for the output pass.
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
 *             the vectors of x and of r in flight per thread per batch (a batch of
 *             TPR*VEC/2*UNROLL elements is half or all of the target row).
 *             The last two require lines are a register budget, measured with
 *             ptxas (nvcc 13.0, sm_90a) where each point of the space starts to
 *             spill as MINB grows: 27 + 2 * cached 32-bit words
 *             (UNROLL * VEC / 4 per buffer; one more buffer each with PIPE 1
 *             and WLOAD 2) + 2 * UNROLL (+ 5 * UNROLL with HINT 3: the
 *             evict-first loads of the 2-byte fallback kernel hold more
 *             registers) registers per thread, the threads counted in whole
 *             groups of 128 (an SM's 65536 registers are four quarters; a warp
 *             takes its registers from one), so that no valid point spills
 *             under its __launch_bounds__.
 *   CACHE_ROW 1: cache h in registers; 0: stream (re-read h).
 *   WLOAD     weight w: 0 read-only global loads (ld.global.nc) per row;
 *             1 staged once per block in shared memory (bf16);
 *             2 held in registers across rows (cached rows).
 *             1 and 2 only with the persistent grid (WAVES > 0).
 *   HINT      cache hints for the x, r loads / h, y stores: 0 plain / plain;
 *             1 ld.global.nc.L1::no_allocate / plain; 2 ld.global.nc.
 *             L1::no_allocate.L2::256B (L2 prefetch hint) / st.global.cs;
 *             3 ld.global.cs (__ldcs, evict-first) / st.global.cs (__stcs);
 *             4 ld.global.L1::evict_last.L2::cache_hint with an L2 evict_last
 *             policy / plain stores (the default): on the H200 the default
 *             layout read 1.045x torch.compile with it against 1.016x
 *             without, from a dirty L2 and from a clean one alike
 *             (bench/results/2026-12-01-h200-l2-policy-loads.md). Only with
 *             VEC 16.
 *   WAVES     0: one block per ROWS rows (grid = ceil(rows / ROWS)); k > 0:
 *             persistent grid of k resident waves (k * #SMs * blocks per SM
 *             from the occupancy calculator) striding over the rows.
 *   PIPE      (CACHE_ROW 1, WAVES > 0) 1: load the block's next rows of x
 *             and r into second register buffers before reducing the current
 *             row.
 *   MINB      __launch_bounds__ minimum blocks per SM (0: 1, i.e. only the
 *             block size bounds the registers).
 */
// @kevo knob TPR 128 {32, 64, 128, 256, 512, 1024}
// @kevo knob ROWS 2 {1, 2, 4, 8, 16}
// @kevo require TPR * ROWS <= 1024
// @kevo knob VEC 16 {4, 8, 16}
// @kevo knob UNROLL 4 {1, 2, 4, 8, 16}
// @kevo knob CACHE_ROW 1 {0, 1}
// @kevo require (CACHE_ROW == 1 && TPR * VEC * UNROLL >= 8192 && TPR * VEC * UNROLL < 16384) || (CACHE_ROW == 0 && TPR * VEC * UNROLL >= 4096 && TPR * VEC * UNROLL <= 8192)
// @kevo knob WLOAD 0 {0, 1, 2}
// @kevo knob HINT 4 {0, 1, 2, 3, 4}
// @kevo knob WAVES 0 {0, 1, 2}
// @kevo knob PIPE 0 {0, 1}
// @kevo require HINT != 4 || VEC == 16
// @kevo knob MINB 0 {0, 2, 3, 4, 5, 6, 8}
// @kevo require PIPE == 0 || (CACHE_ROW == 1 && WAVES > 0)
// @kevo require WLOAD == 0 || WAVES > 0
// @kevo require WLOAD != 2 || CACHE_ROW == 1
// @kevo require TPR * ROWS * MINB <= 2048
// @kevo require 27 + 2 * (UNROLL * VEC / 4) * (1 + PIPE + (WLOAD == 2)) + 2 * UNROLL + 5 * UNROLL * (HINT == 3) <= 255
// @kevo require (27 + 2 * (UNROLL * VEC / 4) * (1 + PIPE + (WLOAD == 2)) + 2 * UNROLL + 5 * UNROLL * (HINT == 3)) * 128 * ((TPR * ROWS * (MINB + (MINB == 0)) + 127) / 128) <= 65536
#ifndef TPR
#define TPR 128
#endif
#ifndef ROWS
#define ROWS 2
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
#define MINB 0
#endif

/* kevo's row-kernel layer (loads and stores with cache hints and the HINT
 * knob's choice of them, bf16 packing, the row-group reduction, the wave and
 * tensor checks of the launch): targets/cuda/include */
#include "kevo_cuda_rows.cuh"

/* ------------------------------------------------------------------------ */
/* L2-coherent load (ld.global.cg) of data this thread stored earlier in the kernel */
template <int VE>
KV_DEV RawV<VE> ld_cg(const bf16* p) {
  RawV<VE> r;
  if constexpr (VE == 8) {
    const uint4 u = __ldcg(reinterpret_cast<const uint4*>(p));
    r.w[0] = u.x; r.w[1] = u.y; r.w[2] = u.z; r.w[3] = u.w;
  } else if constexpr (VE == 4) {
    const uint2 u = __ldcg(reinterpret_cast<const uint2*>(p));
    r.w[0] = u.x; r.w[1] = u.y;
  } else if constexpr (VE == 2) {
    r.w[0] = __ldcg(reinterpret_cast<const unsigned int*>(p));
  } else {
    r.w[0] = (uint32_t)__ldcg(reinterpret_cast<const unsigned short*>(p));
  }
  return r;
}

/* h = bf16(x + r), element by element (fp32 add, round to nearest even) */
template <int VE>
KV_DEV RawV<VE> add_round(const RawV<VE>& a, const RawV<VE>& b) {
  float f[VE];
#pragma unroll
  for (int e = 0; e < VE; ++e) f[e] = rv_get<VE>(a, e) + rv_get<VE>(b, e);
  return rv_pack<VE>(f);
}

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

/* load the slots of x and r for row `row` (zeros where invalid) */
template <int VE>
KV_DEV void load_xr(RawV<VE> (&tx)[UNROLL], RawV<VE> (&tr)[UNROLL], const bf16* __restrict__ x,
                    const bf16* __restrict__ r, int64_t row, int64_t M, int N, int lane) {
  const bool valid = row < M;
  const int64_t off = (valid ? row : 0) * (int64_t)N;
#pragma unroll
  for (int v = 0; v < UNROLL; ++v) {
    const int c = (v * TPR + lane) * VE;
    const bool ok = valid && c < N;
    tx[v] = ok ? ld_hint<VE, LDHINT>(x + off + c) : rv_zero<VE>();
    tr[v] = ok ? ld_hint<VE, LDHINT>(r + off + c) : rv_zero<VE>();
  }
}

/* CACHE_ROW 1 kernel: h lives in registers (requires N <= TPR*VE*UNROLL) */
template <int VE>
__global__ void KV_BOUNDS ar_cached(const bf16* __restrict__ x, const bf16* __restrict__ r,
                                    const bf16* __restrict__ w, bf16* __restrict__ h, bf16* __restrict__ y,
                                    int64_t M, int N, float eps, float invN, int64_t nblk, int wsm) {
  constexpr int U = UNROLL;
  __shared__ float red[2 * ROWS * NWG];
  extern __shared__ __align__(16) unsigned char kv_dsm[];
  bf16* ws = reinterpret_cast<bf16*>(kv_dsm);
  const int g = (int)threadIdx.x / TPR;
  const int lane = (int)threadIdx.x % TPR;
#if WLOAD == 1
  stage_vec<VE>(ws, w, N, wsm);
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
  RawV<VE> cx[U], cr[U];
#if PIPE
  RawV<VE> nx[U], nr[U];
  load_xr<VE>(cx, cr, x, r, (int64_t)blockIdx.x * ROWS + g, M, N, lane);
#endif
  for (int64_t b = blockIdx.x; b < nblk; b += gridDim.x) {
    const int64_t row = b * ROWS + g;
    const bool valid = row < M;
#if PIPE
    load_xr<VE>(nx, nr, x, r, (b + gridDim.x) * ROWS + g, M, N, lane);
#else
    load_xr<VE>(cx, cr, x, r, row, M, N, lane);
#endif
    RawV<VE> hv[U];
#pragma unroll
    for (int v = 0; v < U; ++v) hv[v] = add_round<VE>(cx[v], cr[v]); /* zeros where invalid */
    if (valid) {
      bf16* hr = h + row * (int64_t)N;
#pragma unroll
      for (int v = 0; v < U; ++v) {
        const int c = (v * TPR + lane) * VE;
        if (c < N) st_hint<VE, STHINT>(hr + c, hv[v]);
      }
    }
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int v = 0; v < U; ++v) {
#pragma unroll
      for (int e = 0; e < VE; ++e) {
        const float f = rv_get<VE>(hv[v], e); /* the rounded h */
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
#else
          const RawV<VE> wv = ld_param<VE>(w, ws, c, wsm);
#endif
          float o[VE];
#pragma unroll
          for (int e = 0; e < VE; ++e) o[e] = rv_get<VE>(hv[v], e) * inv * rv_get<VE>(wv, e);
          st_hint<VE, STHINT>(yr + c, rv_pack<VE>(o));
        }
      }
    }
#if PIPE
#pragma unroll
    for (int v = 0; v < U; ++v) {
      cx[v] = nx[v];
      cr[v] = nr[v];
    }
#endif
  }
}

/* ------------------------------------------------------------------------ */
/* streaming kernel (CACHE_ROW 0, or rows too long for the register cache) */
template <int VE>
__global__ void KV_BOUNDS ar_stream(const bf16* __restrict__ x, const bf16* __restrict__ r,
                                    const bf16* __restrict__ w, bf16* __restrict__ h, bf16* __restrict__ y,
                                    int64_t M, int N, float eps, float invN, int64_t nblk, int wsm) {
  constexpr int U = UNROLL;
  constexpr int B = TPR * VE * U; /* elements per batch */
  __shared__ float red[2 * ROWS * NWG];
  extern __shared__ __align__(16) unsigned char kv_dsm[];
  bf16* ws = reinterpret_cast<bf16*>(kv_dsm);
  const int g = (int)threadIdx.x / TPR;
  const int lane = (int)threadIdx.x % TPR;
#if WLOAD == 1
  stage_vec<VE>(ws, w, N, wsm);
#endif
  int phase = 0;
  for (int64_t b = blockIdx.x; b < nblk; b += gridDim.x) {
    const int64_t row = b * ROWS + g;
    const bool valid = row < M;
    const int64_t off = (valid ? row : 0) * (int64_t)N;
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    for (int base = 0; base < N; base += B) { /* same trip count for every thread */
      RawV<VE> tx[U], tr[U];
#pragma unroll
      for (int v = 0; v < U; ++v) {
        const int c = base + (v * TPR + lane) * VE;
        const bool ok = valid && c < N;
        tx[v] = ok ? ld_hint<VE, LDHINT>(x + off + c) : rv_zero<VE>();
        tr[v] = ok ? ld_hint<VE, LDHINT>(r + off + c) : rv_zero<VE>();
      }
#pragma unroll
      for (int v = 0; v < U; ++v) {
        const int c = base + (v * TPR + lane) * VE;
        const RawV<VE> hv = add_round<VE>(tx[v], tr[v]);
        if (valid && c < N) st_hint<VE, STHINT>(h + off + c, hv);
#pragma unroll
        for (int e = 0; e < VE; ++e) {
          const float f = rv_get<VE>(hv, e);
          acc[(v * VE + e) & 3] = fmaf(f, f, acc[(v * VE + e) & 3]);
        }
      }
    }
    float s[1] = {(acc[0] + acc[1]) + (acc[2] + acc[3])};
    group_sum<1>(s, red, phase, g, lane);
    const float inv = rsqrtf(fmaf(s[0], invN, eps));
    if (valid) { /* no barrier inside */
      for (int base = 0; base < N; base += B) {
        RawV<VE> t[U];
#pragma unroll
        for (int v = 0; v < U; ++v) {
          const int c = base + (v * TPR + lane) * VE;
          t[v] = c < N ? ld_cg<VE>(h + off + c) : rv_zero<VE>(); /* same thread, same addresses as the stores */
        }
#pragma unroll
        for (int v = 0; v < U; ++v) {
          const int c = base + (v * TPR + lane) * VE;
          if (c < N) {
            const RawV<VE> wv = ld_param<VE>(w, ws, c, wsm);
            float o[VE];
#pragma unroll
            for (int e = 0; e < VE; ++e) o[e] = rv_get<VE>(t[v], e) * inv * rv_get<VE>(wv, e);
            st_hint<VE, STHINT>(y + off + c, rv_pack<VE>(o));
          }
        }
      }
    }
  }
}

/* ------------------------------------------------------------------------ */
typedef void (*ar_kernel_t)(const bf16*, const bf16*, const bf16*, bf16*, bf16*, int64_t, int, float, float,
                            int64_t, int);

/* persistent grid size: WAVES * #SMs * resident blocks per SM (cached per kernel and smem size) */
template <int VE>
static int launch(const bf16* x, const bf16* r, const bf16* w, bf16* h, bf16* y, int64_t M, int N, float eps,
                  cudaStream_t stream) {
  ar_kernel_t k = ar_stream<VE>;
#if CACHE_ROW
  if ((int64_t)N <= (int64_t)TPR * VE * UNROLL) k = ar_cached<VE>;
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
  k<<<(unsigned)grid, BLOCK, smem, stream>>>(x, r, w, h, y, M, N, eps, 1.0f / (float)N, nblk, wsm);
  return cudaGetLastError() == cudaSuccess ? KEVO_OK : KEVO_ERR_RUNTIME;
}

extern "C" KEVO_EXPORT int kevo_launch(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                                       const double* scalars, int n_scalars, cudaStream_t stream) {
  if (n_in != 3 || n_out != 2 || n_scalars < 1) return KEVO_ERR_ARGS;
  int rc;
  if ((rc = kv_check(&in[0])) || (rc = kv_check(&in[1])) || (rc = kv_check(&in[2])) || (rc = kv_check(&out[0])) ||
      (rc = kv_check(&out[1])))
    return rc;
  const int64_t N = kevo_row_len(&in[0]);
  const int64_t M = kevo_rows(&in[0]);
  if (kevo_numel(&in[1]) != M * N || kevo_row_len(&in[1]) != N || kevo_numel(&in[2]) != N ||
      kevo_numel(&out[0]) != M * N || kevo_row_len(&out[0]) != N || kevo_numel(&out[1]) != M * N ||
      kevo_row_len(&out[1]) != N)
    return KEVO_ERR_ARGS;
  if (M <= 0 || N <= 0) return KEVO_OK;
  if (N > (1 << 30)) return KEVO_ERR_UNSUPPORTED;
  const bf16* x = (const bf16*)in[0].data;
  const bf16* r = (const bf16*)in[1].data;
  const bf16* w = (const bf16*)in[2].data;
  bf16* h = (bf16*)out[0].data;
  bf16* y = (bf16*)out[1].data;
  const float eps = (float)scalars[0];
  const uintptr_t al = (uintptr_t)x | (uintptr_t)r | (uintptr_t)w | (uintptr_t)h | (uintptr_t)y;
  if (N % VE_MAIN == 0 && al % VEC == 0) return launch<VE_MAIN>(x, r, w, h, y, M, (int)N, eps, stream);
  return launch<1>(x, r, w, h, y, M, (int)N, eps, stream);
}
