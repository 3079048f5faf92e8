// The persistent GEMM schedule of targets/cuda/include/kevo_cuda_tile_walk.cuh,
// compiled as plain C++: the walk the wgmma family's PERSIST/SK kernels take.
// Every (tile, k tile) is taken once; stream-K (first, SK 1, or after the
// whole tiles, SK 2) evens the workers' loads; a tile's partials are where its
// completing worker looks for them (by the divisions or by the additions the
// kernel's consumers use), and it only waits on lower workers; and a GEMM
// summed along the walk, partials added as the kernel adds them, is exact on
// integer data.
#include "targets/cuda/include/kevo_cuda_tile_walk.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

namespace kevo {
namespace {

struct Unit {
  int tile, ka, kb;
};

std::vector<Unit> walk_of(int tiles, int ktiles, int workers, int w, int streamk) {
  KvTileWalk t = kv_tile_walk(tiles, ktiles, workers, w, streamk);
  std::vector<Unit> out;
  Unit u{};
  while (kv_next_unit(t, u.tile, u.ka, u.kb)) out.push_back(u);
  return out;
}

struct Case {
  int tiles, ktiles, workers;
};

// 4096^3 at 128 x 256 tiles on 132 SMs (and 66 clusters of two), the GPU test's
// 2000 x 520 x 2056, tiles that divide evenly, fewer tiles than workers, one k tile.
const std::vector<Case> kCases = {{512, 64, 132}, {256, 64, 66}, {144, 9, 132}, {72, 9, 66},
                                  {264, 5, 132},  {7, 13, 132},  {131, 1, 132}, {133, 1, 132},
                                  {1, 1, 1},      {5, 3, 2},     {1000, 7, 96}, {17, 100, 16}};

TEST(TileWalk, EveryKTileOfEveryTileIsTakenOnce) {
  for (const Case& c : kCases)
    for (int sk : {0, 1, 2}) {
      SCOPED_TRACE(::testing::Message() << c.tiles << " tiles x " << c.ktiles << " over "
                                        << c.workers << " stream-K " << sk);
      std::vector<int> seen(static_cast<size_t>(c.tiles) * c.ktiles, 0);
      std::vector<int> stores(c.tiles, 0);
      for (int w = 0; w < c.workers; ++w)
        for (const Unit& u : walk_of(c.tiles, c.ktiles, c.workers, w, sk)) {
          ASSERT_GE(u.tile, 0);
          ASSERT_LT(u.tile, c.tiles);
          ASSERT_GE(u.ka, 0);
          ASSERT_LT(u.ka, u.kb);
          ASSERT_LE(u.kb, c.ktiles);
          for (int k = u.ka; k < u.kb; ++k) ++seen[static_cast<size_t>(u.tile) * c.ktiles + k];
          stores[u.tile] += u.kb == c.ktiles;  // the unit that ends a tile stores it
          if (!sk) {
            EXPECT_EQ(u.ka, 0);
            EXPECT_EQ(u.kb, c.ktiles);
            EXPECT_EQ(u.tile % c.workers, w);
          }
        }
      for (int v : seen) ASSERT_EQ(v, 1);
      for (int v : stores) ASSERT_EQ(v, 1);
    }
}

// The part-empty last wave is what stream-K is for: the busiest worker takes
// at most one k tile more than the least busy, and no more than its share
// rounded up; the plain walk's busiest takes a whole tile more.
TEST(TileWalk, StreamKEvensTheLoads) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(::testing::Message()
                 << c.tiles << " tiles x " << c.ktiles << " over " << c.workers);
    auto load = [&](int sk) {
      std::vector<int64_t> k(c.workers, 0);
      for (int w = 0; w < c.workers; ++w)
        for (const Unit& u : walk_of(c.tiles, c.ktiles, c.workers, w, sk)) k[w] += u.kb - u.ka;
      return k;
    };
    const std::vector<int64_t> plain = load(0);
    const int64_t plain_max = *std::max_element(plain.begin(), plain.end());
    if (c.tiles % c.workers != 0) {
      EXPECT_EQ(plain_max, (c.tiles / c.workers + 1) * int64_t{c.ktiles});
    }
    const int64_t total = static_cast<int64_t>(c.tiles) * c.ktiles;
    for (int mode : {1, 2}) {
      SCOPED_TRACE(::testing::Message() << "stream-K " << mode);
      const std::vector<int64_t> sk = load(mode);
      const auto [lo, hi] = std::minmax_element(sk.begin(), sk.end());
      EXPECT_LE(*hi - *lo, 1);
      EXPECT_LE(*hi, (total + c.workers - 1) / c.workers);
      EXPECT_LE(*hi, plain_max);
      // SK 1, the hybrid: the stream-K share (about 1 + (T % G) / G tiles'
      // worth), then one wave fewer whole tiles than the plain walk's full
      // waves; SK 2: the full waves whole, then T % G tiles' worth.
      if (c.tiles % c.workers != 0 && c.tiles >= c.workers) {
        for (int w = 0; w < c.workers; ++w) {
          const KvTileWalk t = kv_tile_walk(c.tiles, c.ktiles, c.workers, w, mode);
          EXPECT_EQ(t.dp_tiles, (c.tiles / c.workers - (mode == 1)) * c.workers);
          EXPECT_EQ(t.sk_iters, int64_t{c.tiles % c.workers + (mode == 1) * c.workers} * c.ktiles);
        }
      }
    }
  }
}

// SK 2 takes the whole tiles first, in the plain walk's order, and only then
// its stream-K units.
TEST(TileWalk, StreamKLastTakesTheWholeTilesFirst) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(::testing::Message()
                 << c.tiles << " tiles x " << c.ktiles << " over " << c.workers);
    for (int w = 0; w < c.workers; ++w) {
      const std::vector<Unit> plain = walk_of(c.tiles, c.ktiles, c.workers, w, 0);
      const std::vector<Unit> last = walk_of(c.tiles, c.ktiles, c.workers, w, 2);
      const KvTileWalk t = kv_tile_walk(c.tiles, c.ktiles, c.workers, w, 2);
      size_t i = 0;
      for (; i < last.size() && last[i].tile < t.dp_tiles; ++i) {
        ASSERT_LT(i, plain.size());
        EXPECT_EQ(last[i].tile, plain[i].tile);
        EXPECT_EQ(last[i].ka, 0);
        EXPECT_EQ(last[i].kb, c.ktiles);
      }
      for (; i < last.size(); ++i)
        EXPECT_GE(last[i].tile, t.dp_tiles) << "a whole tile after a stream-K unit";
    }
  }
}

// A worker leaves at most one partial, the first unit of its walk; the worker
// that completes a tile finds the tile's earlier k tiles in the partials of
// workers kv_first_holder() .. w - 1, in k order and without a gap, and they
// are all lower than it.
TEST(TileWalk, PartialsAreWhereTheCompletingWorkerLooks) {
  for (const Case& c : kCases)
    for (int mode : {1, 2}) {
      SCOPED_TRACE(::testing::Message() << c.tiles << " tiles x " << c.ktiles << " over "
                                        << c.workers << " stream-K " << mode);
      std::map<int, Unit> partial;  // by worker
      for (int w = 0; w < c.workers; ++w) {
        const std::vector<Unit> units = walk_of(c.tiles, c.ktiles, c.workers, w, mode);
        const KvTileWalk t = kv_tile_walk(c.tiles, c.ktiles, c.workers, w, mode);
        size_t first_sk = 0;  // SK 2: after the whole tiles
        while (first_sk < units.size() && units[first_sk].tile < t.dp_tiles) ++first_sk;
        for (size_t i = 0; i < units.size(); ++i)
          if (units[i].kb < c.ktiles) {
            EXPECT_EQ(i, first_sk)
                << "worker " << w << ": a partial that is not the first stream-K unit of its walk";
            EXPECT_FALSE(partial.count(w)) << "worker " << w << " leaves two partials";
            partial[w] = units[i];
          }
      }
      int completing = 0;
      for (int w = 0; w < c.workers; ++w) {
        const KvTileWalk t = kv_tile_walk(c.tiles, c.ktiles, c.workers, w, mode);
        for (const Unit& u : walk_of(c.tiles, c.ktiles, c.workers, w, mode)) {
          if (u.kb < c.ktiles || u.ka == 0) continue;
          ++completing;
          const int first = kv_first_holder(t, u.tile);
          ASSERT_LT(first, w);
          int k = 0;
          std::vector<int> holders;
          for (int q = first; q < w; ++q) {
            if (!kv_holds_sk(t, q)) {
              EXPECT_FALSE(partial.count(q));
              continue;
            }
            holders.push_back(q);
            ASSERT_TRUE(partial.count(q)) << "worker " << q << " holds no partial";
            EXPECT_EQ(partial[q].tile, u.tile);
            EXPECT_EQ(partial[q].ka, k);
            k = partial[q].kb;
          }
          EXPECT_EQ(k, u.ka);
          // The kernel's consumers find the same workers by additions alone.
          KvHolderScan h = kv_holder_scan(t, u.tile);
          std::vector<int> scanned;
          for (int q; kv_next_holder(h, c.workers, w, q);) scanned.push_back(q);
          EXPECT_EQ(scanned, holders);
        }
      }
      // Every partial is added by exactly one completing unit.
      int added = 0;
      for (const auto& [q, p] : partial) {
        int by = 0;
        for (int w = q + 1; w < c.workers; ++w) {
          const KvTileWalk t = kv_tile_walk(c.tiles, c.ktiles, c.workers, w, mode);
          for (const Unit& u : walk_of(c.tiles, c.ktiles, c.workers, w, mode))
            by +=
                u.tile == p.tile && u.kb == c.ktiles && u.ka > 0 && kv_first_holder(t, u.tile) <= q;
        }
        EXPECT_EQ(by, 1) << "worker " << q << "'s partial";
        added += by;
      }
      EXPECT_EQ(added, static_cast<int>(partial.size()));
      if (c.tiles % c.workers != 0 && c.ktiles > 1 && c.workers > 1) {
        EXPECT_GT(completing, 0);
      }
    }
}

// A small GEMM computed as the kernel computes it: every worker sums its
// units' k tiles into an accumulator, a partial goes to the worker's slot, the
// completing unit adds the slots of its tile's lower holders in order, and
// only a unit that ends its tile stores it. Integer data: the result is exact.
TEST(TileWalk, AGemmSummedAlongTheWalkIsExact) {
  constexpr int kTileM = 2, kTileN = 3, kBk = 4;
  const int tm = 5, tn = 7, ktiles = 6;  // 35 tiles of 2 x 3, K = 24
  const int M = tm * kTileM, N = tn * kTileN, K = ktiles * kBk;
  std::mt19937 rng(29);
  std::uniform_int_distribution<int> d(-3, 3);
  std::vector<int64_t> A(static_cast<size_t>(M) * K), B(static_cast<size_t>(K) * N);
  for (auto& x : A) x = d(rng);
  for (auto& x : B) x = d(rng);
  std::vector<int64_t> want(static_cast<size_t>(M) * N, 0);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      for (int k = 0; k < K; ++k) want[i * N + j] += A[i * K + k] * B[k * N + j];
  const int tiles = tm * tn;
  for (int mode : {1, 2})
    for (int workers : {4, 6, 8, 34, 35, 36, 300}) {
      SCOPED_TRACE(::testing::Message() << workers << " workers, stream-K " << mode);
      std::vector<int64_t> C(want.size(), INT64_MIN);
      std::vector<std::vector<int64_t>> slot(workers);
      using Acc = std::vector<int64_t>;
      auto sum = [&](int tile, int ka, int kb) {
        Acc acc(kTileM * kTileN, 0);
        const int m0 = (tile / tn) * kTileM, n0 = (tile % tn) * kTileN;
        for (int r = 0; r < kTileM; ++r)
          for (int c = 0; c < kTileN; ++c)
            for (int k = ka * kBk; k < kb * kBk; ++k)
              acc[r * kTileN + c] += A[(m0 + r) * K + k] * B[k * N + n0 + c];
        return acc;
      };
      // Workers in order: a completing unit reads only lower workers' slots.
      for (int w = 0; w < workers; ++w) {
        KvTileWalk t = kv_tile_walk(tiles, ktiles, workers, w, mode);
        int tile, ka, kb;
        while (kv_next_unit(t, tile, ka, kb)) {
          Acc acc = sum(tile, ka, kb);
          if (kb < ktiles) {
            slot[w] = acc;
            continue;
          }
          if (ka > 0) {
            KvHolderScan h = kv_holder_scan(t, tile);  // as the kernel's consumers add them
            for (int q; kv_next_holder(h, workers, w, q);) {
              ASSERT_EQ(slot[q].size(), acc.size()) << "worker " << q << " left no partial";
              for (size_t i = 0; i < acc.size(); ++i) acc[i] += slot[q][i];
            }
          }
          const int m0 = (tile / tn) * kTileM, n0 = (tile % tn) * kTileN;
          for (int r = 0; r < kTileM; ++r)
            for (int c = 0; c < kTileN; ++c) C[(m0 + r) * N + n0 + c] = acc[r * kTileN + c];
        }
      }
      EXPECT_EQ(C, want);
    }
}

// gemm wgmma's TAIL band (kv_tail_split), for 2 x 2 clusters on a GPU of 132
// SMs (120 in clusters of four, 12 left): at 4096^3 in 256 x 128 tiles
// (16 x 32) the last 2 tile columns beside 30 (4 waves and 3 where one launch
// takes 5); in 128 x 256 tiles (32 x 16) the last 2 tile rows; the GPU test's
// two shapes (8 x 32: 2 columns; 22 x 12: 2 rows); none where the tiles fill
// the SMs' waves (10 x 12) or no SM is left.
TEST(TileWalk, TheTailBandIsTheOneWithTheFewestWaves) {
  struct Want {
    int tm, tn, tail_cm, main_ctas, tail_ctas;
    int along_n, tiles;
    int64_t waves;
  };
  const std::vector<Want> cases = {
      {16, 32, 2, 120, 12, 1, 2, 4}, {16, 32, 1, 120, 12, 1, 2, 4}, {32, 16, 2, 120, 12, 0, 2, 4},
      {8, 32, 2, 120, 12, 1, 2, 2},  {22, 12, 2, 120, 12, 0, 2, 2}, {10, 12, 2, 120, 12, 0, 0, 1},
      {16, 32, 2, 132, 0, 0, 0, 4},  {16, 32, 2, 120, 0, 0, 0, 5}};
  for (const Want& c : cases) {
    const KvTailSplit s = kv_tail_split(c.tm, c.tn, 2, 2, c.tail_cm, c.main_ctas, c.tail_ctas);
    EXPECT_EQ(s.along_n, c.along_n) << c.tm << " x " << c.tn;
    EXPECT_EQ(s.tiles, c.tiles) << c.tm << " x " << c.tn;
    EXPECT_EQ(s.waves, c.waves) << c.tm << " x " << c.tn;
  }
  // On any shape: the band is whole main clusters short of C's edge, never
  // all of C, and its waves (both launches', counted here from scratch) are
  // no more than one launch's.
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    const int tm = 1 + (int)(rng() % 40), tn = 1 + (int)(rng() % 40), cm = 1 + (int)(rng() % 2),
              cn = 1 + (int)(rng() % 2), tail_cm = 1 + (int)(rng() % 2);
    const int main_ctas = 4 + (int)(rng() % 130), tail_ctas = (int)(rng() % 20);
    const KvTailSplit s = kv_tail_split(tm, tn, cm, cn, tail_cm, main_ctas, tail_ctas);
    auto up = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
    const int64_t one = up(up(tm, cm) * cm * up(tn, cn) * cn, main_ctas);
    if (s.tiles == 0) {
      EXPECT_EQ(s.waves, one);
      continue;
    }
    ASSERT_GT(tail_ctas, 0);
    const int t_all = s.along_n ? tn : tm, step = s.along_n ? cn : cm;
    ASSERT_LT(s.tiles, t_all);
    ASSERT_EQ((t_all - s.tiles) % step, 0) << "the first launch takes whole clusters";
    const int64_t main_tiles = s.along_n ? (int64_t)up(tm, cm) * cm * (tn - s.tiles)
                                         : (int64_t)(tm - s.tiles) * up(tn, cn) * cn;
    const int64_t rest_tiles = s.along_n ? (int64_t)s.tiles * up(tm, tail_cm) * tail_cm
                                         : (int64_t)up(s.tiles, tail_cm) * tail_cm * tn;
    EXPECT_EQ(s.waves, std::max(up(main_tiles, main_ctas), up(rest_tiles, tail_ctas)));
    EXPECT_LT(s.waves, one);
    // The launcher's windows (kv_tail_main_part) on an output whose last
    // tile row and column are ragged: the first launch has whole tiles, as
    // many rows or columns of them as the split says, and the band the rest.
    const int bm = 128, bn = 64, M = tm * bm - (int)(rng() % bm), N = tn * bn - (int)(rng() % bn);
    int m_main = -1, n_main = -1;
    kv_tail_main_part(s, M, N, bm, bn, m_main, n_main);
    if (s.along_n) {
      EXPECT_EQ(m_main, M);
      EXPECT_EQ(n_main, (tn - s.tiles) * bn);
      EXPECT_EQ(up(N - n_main, bn), s.tiles) << "the band's columns, in tiles";
    } else {
      EXPECT_EQ(n_main, N);
      EXPECT_EQ(m_main, (tm - s.tiles) * bm);
      EXPECT_EQ(up(M - m_main, bm), s.tiles) << "the band's rows, in tiles";
    }
  }
  // No band: the first launch takes all of C.
  int m_main = -1, n_main = -1;
  kv_tail_main_part(KvTailSplit{0, 0, 5}, 4000, 4096, 256, 128, m_main, n_main);
  EXPECT_EQ(m_main, 4000);
  EXPECT_EQ(n_main, 4096);
}

}  // namespace
}  // namespace kevo
