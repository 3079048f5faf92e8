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
 *   - with stream-K first (streamk 1), when G does not divide T: the last
 *     T % G + G tiles (all T when T < G) are not taken whole. Their k tiles,
 *     laid end to end (tile by tile, KT each), are cut into G ranges as even
 *     as integers allow; worker w takes range [S*w/G, S*(w+1)/G),
 *     S = (T % G + G) * KT;
 *   - then data-parallel: tiles w, w + G, w + 2G, ... below dp_tiles, each
 *     whole.
 *   - stream-K last (streamk 2): the whole tiles first, then only the last
 *     T % G tiles (all T when T < G) shared out so, S = (T % G) * KT: the
 *     tiles that share rows of A and columns of B run side by side up to
 *     the last wave, and a tile's pieces meet at the end.
 *
 * So every worker takes about 1 + (T % G) / G tiles' worth of k tiles and
 * then (T / G - 1) whole tiles, where the plain walk gives some workers one
 * whole tile more than others (the part-empty last wave). The stream-K part
 * comes first so that a tile's fix-up (the wait, reading the partials) is
 * hidden behind the loads of the whole tiles after it (streamk 1).
 *
 * A worker walks its stream-K range from its end down: first the start (or a
 * middle part) of the tile its range ends in, then whole tiles, then the end
 * of the tile its range starts in. A unit that stops short of its tile's end
 * (kb < KT) is a partial: the worker leaves it for a higher worker to add,
 * and a worker has at most one (the first stream-K unit of its walk). A unit that
 * ends its tile but starts past its start (ka > 0) completes the tile: its
 * worker adds the partials of the workers kv_first_holder() .. w - 1 (those
 * of them that kv_holds_sk()), which hold the tile's earlier k tiles, then
 * stores the tile. A worker so only waits on lower workers, and on their
 * first stream-K unit: nothing they do before that unit waits on anyone.
 *
 *   KvTileWalk walk = kv_tile_walk(T, KT, G, w, streamk);
 *   int tile, ka, kb;
 *   while (kv_next_unit(walk, tile, ka, kb)) { ... k tiles [ka, kb) of tile ... }
 *
 * Under nvcc, the units published in shared memory for a kernel's consumers
 * (kv_publish_units, kv_take_unit, kv_unit_holders, below; where
 * kevo_cuda_tma.cuh is included first), and the flags that say a partial is
 * written (device functions):
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
  int64_t begin;     // this worker's first stream-K k tile
  int64_t end;       // one past the stream-K k tile this worker takes next (walking down)
  int mode;          // 0 whole tiles, 1 stream-K first, 2 stream-K last
};

// First stream-K k tile of worker w (w == workers: one past the last).
KV_WALK_FN int64_t kv_sk_begin(const KvTileWalk& t, int w) { return t.sk_iters * w / t.workers; }

// streamk: 0 whole tiles only, 1 stream-K first, 2 stream-K last (above).
KV_WALK_FN KvTileWalk kv_tile_walk(int tiles, int ktiles, int workers, int w, int streamk) {
  KvTileWalk t;
  t.mode = streamk;
  t.tiles = tiles;
  t.ktiles = ktiles;
  t.workers = workers;
  t.w = w;
  t.dp_tiles = tiles;
  t.sk_iters = 0;
  const int rem = tiles % workers;
  if (streamk && rem != 0) {
    const int sk = tiles >= workers ? rem + (streamk == 1 ? workers : 0) : tiles;
    t.dp_tiles = tiles - sk;
    t.sk_iters = (int64_t)sk * ktiles;
  }
  t.next_dp = w;
  t.begin = kv_sk_begin(t, w);
  t.end = kv_sk_begin(t, w + 1);
  return t;
}

// The next unit of the walk: k tiles [ka, kb) of `tile`; false when done.
KV_WALK_FN bool kv_next_unit(KvTileWalk& t, int& tile, int& ka, int& kb) {
  if (t.mode == 2 && t.next_dp < t.dp_tiles) {
    tile = t.next_dp;
    ka = 0;
    kb = t.ktiles;
    t.next_dp += t.workers;
    return true;
  }
  const int64_t lo = t.begin;
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
  // The highest q <= w with kv_sk_begin(q) = S * q / G <= start, i.e. with
  // S * q < (start + 1) * G.
  const int64_t start = (int64_t)(tile - t.dp_tiles) * t.ktiles;
  const int64_t q = ((start + 1) * t.workers - 1) / t.sk_iters;
  return q < t.w ? (int)q : t.w;
}

// The same workers, kv_first_holder(t, tile) .. t.w - 1 that kv_holds_sk(),
// found by additions alone: kv_holder_scan (divisions, once, where the unit
// is published) and kv_next_holder (in the loop that adds the partials). A
// GPU kernel's consumer that walked the divisions itself kept ptxas from
// proving its main loop warp-uniform.
struct KvHolderScan {
  int q;           // the next worker to look at
  int b, r;        // kv_sk_begin(t, q) and sk_iters * q % workers
  int sdiv, smod;  // sk_iters / workers and sk_iters % workers
};

KV_WALK_FN KvHolderScan kv_holder_scan(const KvTileWalk& t, int tile) {
  KvHolderScan h;
  h.q = kv_first_holder(t, tile);
  const int64_t sq = t.sk_iters * h.q, b = sq / t.workers, sdiv = t.sk_iters / t.workers;
  h.b = (int)b;
  h.r = (int)(sq - b * t.workers);
  h.sdiv = (int)sdiv;
  h.smod = (int)(t.sk_iters - sdiv * t.workers);
  return h;
}

// The next holder q below worker w; false when there is none left.
KV_WALK_FN bool kv_next_holder(KvHolderScan& h, int workers, int w, int& q) {
  while (h.q < w) {
    const int t = h.r + h.smod;  // kv_sk_begin(q + 1) = b + sdiv + (r + smod) / workers
    const int b1 = h.b + h.sdiv + (t >= workers);
    h.r = t >= workers ? t - workers : t;
    const bool holds = b1 > h.b;
    h.b = b1;
    q = h.q++;
    if (holds) return true;
  }
  return false;
}

// A band of C for a second launch beside the first (gemm wgmma's TAIL): the
// first launch's clusters (cm x cn tiles each) fit main_ctas CTAs of the GPU
// and leave tail_ctas SMs idle, where a launch of clusters of tail_cm CTAs
// along M takes the band. Of the bands of whole main clusters (the last tile
// rows or the last tile columns), the one whose slower launch has the fewest
// waves of tiles, counting the tiles of both launches as equally long (the
// tiles past C's edge that fill the launches' clusters included); a tie goes
// to the larger first launch, and to one launch when a band does not beat it.
struct KvTailSplit {
  int along_n;  // 1: the band is the last `tiles` tile columns, 0: tile rows
  int tiles;    // 0: no band, one launch
  int64_t waves;  // of the slower launch (of the one launch with no band)
};

KV_WALK_FN KvTailSplit kv_tail_split(int tiles_m, int tiles_n, int cm, int cn, int tail_cm, int main_ctas,
                                     int tail_ctas) {
  KvTailSplit best = {0, 0, 0};
  if (tiles_m < 1 || tiles_n < 1 || main_ctas < 1) return best;
  const int64_t tm_c = (int64_t)(tiles_m + cm - 1) / cm * cm, tn_c = (int64_t)(tiles_n + cn - 1) / cn * cn;
  best.waves = (tm_c * tn_c + main_ctas - 1) / main_ctas;
  if (tail_ctas < 1 || tail_cm < 1) return best;
  int64_t best_main = tm_c * tn_c;
  for (int along_n = 0; along_n < 2; ++along_n) {
    const int t_all = along_n ? tiles_n : tiles_m, step = along_n ? cn : cm;
    const int64_t other = along_n ? tm_c : tn_c;  // the main launch's tiles across the band
    for (int t_main = step; t_main < t_all; t_main += step) {
      const int64_t t_rest = t_all - t_main;
      const int64_t rest_tiles = along_n ? t_rest * ((tiles_m + tail_cm - 1) / tail_cm * tail_cm)
                                         : (t_rest + tail_cm - 1) / tail_cm * tail_cm * tiles_n;
      const int64_t main_tiles = (int64_t)t_main * other;
      const int64_t wm = (main_tiles + main_ctas - 1) / main_ctas, wt = (rest_tiles + tail_ctas - 1) / tail_ctas;
      const int64_t w = wm > wt ? wm : wt;
      if (w < best.waves || (w == best.waves && best.tiles > 0 && main_tiles > best_main)) {
        best.waves = w;
        best.along_n = along_n;
        best.tiles = (int)t_rest;
        best_main = main_tiles;
      }
    }
  }
  return best;
}

// The first launch's part of an M x N output in bm x bn tiles under split
// `s`: C[0:m_main, 0:n_main], whole tiles; the band is the rest of C's rows
// (along M) or columns (along N), its last tile ragged where C's is. With no
// band, all of C.
KV_WALK_FN void kv_tail_main_part(const KvTailSplit& s, int M, int N, int bm, int bn, int& m_main, int& n_main) {
  m_main = M;
  n_main = N;
  if (s.tiles <= 0) return;
  if (s.along_n)
    n_main = ((N + bn - 1) / bn - s.tiles) * bn;
  else
    m_main = ((M + bm - 1) / bm - s.tiles) * bm;
}

#if defined(__CUDACC__)
#if defined(KEVO_CUDA_TMA_CUH)  // the unit slots need its mbarriers: include it first
// A GEMM's consumers that walk the schedule themselves (64-bit divisions
// among its steps) keep ptxas from proving their main loop warp-uniform, and
// every k tile then builds its wgmma descriptors in ordinary registers
// (about twice the instructions). So one thread that issues no loads walks
// it and publishes the units in shared memory, in two slots of
// kKvUnitWords ints in turn (`slots`), each with a "published" mbarrier
// (count 1, at bar_pub + 8 * slot) and a "read" one (one arrival per
// reading warp, at bar_read + 8 * slot):
//
//   publisher:  kv_publish_units(walk, slots, bar_pub, bar_read);
//   each reading warp:
//     for (int j = 0; kv_take_unit(slots, bar_pub, bar_read, j, lane0, tile, ka, kb); ++j) {
//       ... k tiles [ka, kb) of tile; a completing unit's partials:
//       KvHolderScan h = kv_unit_holders(slots, j); ...
//     }
//
// A warp is done with unit j's slot when it takes unit j + 1, so the fix-up
// words are read after the main loop, not carried through it in registers;
// the publisher writes unit j once every reader is done with unit j - 2.
constexpr int kKvUnitWords = 8;  // tile, ka, kb, then a completing unit's KvHolderScan
// The shared memory a kernel sets aside for them: the two "published"
// mbarriers, the two "read" ones, then the two slots, in that order.
constexpr int kKvUnitAreaBytes = 2 * 8 + 2 * 8 + 2 * 4 * kKvUnitWords;

__device__ __forceinline__ void kv_publish_units(KvTileWalk walk, volatile int* slots, uint32_t bar_pub,
                                                 uint32_t bar_read) {
  for (int j = 0;; ++j) {
    int tile = walk.tiles, ka = 0, kb = 0;
    const bool more = kv_next_unit(walk, tile, ka, kb);
    const uint32_t slot = (uint32_t)(j & 1);
    if (j >= 2) kv_mbar_wait(bar_read + 8 * slot, (uint32_t)((j - 2) >> 1) & 1u);
    volatile int* u = slots + kKvUnitWords * slot;
    u[0] = more ? tile : walk.tiles;  // past the last: the end
    u[1] = ka;
    u[2] = kb;
    if (more && ka > 0 && kb == walk.ktiles) {
      const KvHolderScan h = kv_holder_scan(walk, tile);
      u[3] = h.q;
      u[4] = h.b;
      u[5] = h.r;
      u[6] = h.sdiv;
      u[7] = h.smod;
    }
    kv_mbar_arrive(bar_pub + 8 * slot);  // release: the words before it
    if (!more) return;
  }
}

// Unit j for the calling warp (all its lanes); false past the last unit of
// a walk over `tiles` tiles.
__device__ __forceinline__ bool kv_take_unit(const volatile int* slots, uint32_t bar_pub, uint32_t bar_read, int j,
                                             bool lane0, int tiles, int& tile, int& ka, int& kb) {
  if (j > 0) {
    __syncwarp();
    if (lane0) kv_mbar_arrive(bar_read + 8 * ((j - 1) & 1));  // done with unit j - 1
  }
  kv_mbar_wait(bar_pub + 8 * (j & 1), (uint32_t)(j >> 1) & 1u);
  const volatile int* u = slots + kKvUnitWords * (j & 1);
  tile = u[0];
  ka = u[1];
  kb = u[2];
  return tile < tiles;
}

// Where the partials of unit j (a completing one, taken last) are.
__device__ __forceinline__ KvHolderScan kv_unit_holders(const volatile int* slots, int j) {
  const volatile int* u = slots + kKvUnitWords * (j & 1);
  return KvHolderScan{u[3], u[4], u[5], u[6], u[7]};
}
#endif  // KEVO_CUDA_TMA_CUH

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
