#define BHINT 0
#define BN 64
#define CDIM 0
#define CLUSTER 1
#define DYN 0
#define EPI 0
#define EPIB 0
#define EPIR 0
#define GROUP_M 1
#define KEEP 1
#define KWG 1
#define NCONS 2
#define PERSIST 0
#define PING 0
#define SK 0
#define SPLIT 1
#define STAGES 12
#define STM 0
#define TAIL 0
#define WGM 64
/* gemm / wgmma — Hopper warpgroup GEMM: TMA + mbarrier pipeline + wgmma.mma_async.
 *
 * C[M,N] = A[M,K] · B[K,N]; A, B, C row-major bf16, fp32 accumulation, bf16 out.
 *
 * One thread block computes a BM x BN tile of C, BM = NCONS * WGM (WGM with
 * PING: each consumer then has a tile of its own). Warpgroup 0
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
 * pointers. Anything else runs the simple smem-tiled scalar fallback of
 * kevo_cuda_gemm_fallback.cuh (fp32 accumulation).
 *
 * Knobs:
 *   BN       block tile width = wgmma N (64, 128, 192, 256).
 *   WGM      rows of C per consumer warpgroup: 64 (one m64 wgmma per k16 step)
 *            or 128 (two); WGM/64 * BN/2 fp32 accumulators per thread (<= 128).
 *   NCONS    consumer warpgroups per block (BM = NCONS * WGM; WGM with PING).
 *   STAGES   depth of the TMA shared-memory ring ((BM + BN) * 128 bytes each).
 *   KEEP     wgmma groups left in flight when a k tile has been issued: 1 lets
 *            the next tile's wgmmas queue behind the current ones (its stage
 *            is released one tile later), 0 waits for completion every tile.
 *   GROUP_M  threadblock rasterization group along M (1 = row-major raster).
 *   EPI      0: bf16x2 stores straight from the accumulators; 1: each consumer
 *            warpgroup stages its tile in (padded) shared memory and writes it
 *            with coalesced 16-byte stores; 2: each consumer warpgroup stages
 *            its rows as 64-column boxes in the 128-byte swizzle and one thread
 *            stores them with TMA (cp.async.bulk.tensor, clipped to C), so the
 *            warpgroup goes on to its next tile while the stores drain.
 *   EPIB     with EPI 2: the 64-column boxes a warpgroup stages at a time
 *            (0: all BN/64 at once). Fewer boxes, staged in turn once TMA has
 *            read the ones before, take less shared memory, which a persistent
 *            kernel can give to the ring: 128 x 256 tiles fit 4 stages with
 *            EPIB 2 where they fit 3 with all boxes at once.
 *   EPIR     1 (with EPI 2, EPIB 1, PERSIST 1, PING 0, SK 0): the first box of
 *            a warpgroup's rows is staged in its own A rows of the tile's last
 *            ring stage instead of the staging area, so the second box need
 *            not wait for TMA to read the first. That stage goes back to the
 *            producer once TMA has read it (its issuing thread arrives on the
 *            empty barrier after cp.async.bulk.wait_group.read), not when the
 *            main loop ends. 0: every box in the staging area.
 *   STM      1 (with EPI 2): a warpgroup stages its boxes with stmatrix, four
 *            8 x 8 matrices of bf16 (16 output columns of 16 rows) an
 *            instruction, 16-byte rows in the same swizzle; 0: two 4-byte
 *            shared stores per 8-column group (four times the instructions).
 *   CLUSTER  thread-block cluster size (1, 2 or 4), along M unless CDIM 1. With 2,
 *            the two CTAs of a cluster compute vertically adjacent tiles that share the same
 *            B slice: each loads half of the B boxes and multicasts them to
 *            both (TMA .multicast::cluster), halving B traffic from L2; every
 *            consumer warp releases a stage on the empty barriers of both CTAs.
 *            Where the boxes do not halve (BN 64 or 192) each CTA loads half
 *            of every box's k rows instead: BN 64 with two m64 tiles a
 *            cluster is cuBLAS's decode tile at M = 128 (64 x 64, a cluster
 *            of two along M, the weights read once for both).
 *            4 (with CDIM 0, PING 0): a 2 x 2 block of tiles (rank r at tile
 *            row r % 2 and column r / 2 of the block); the two CTAs of a tile
 *            row share A (each loads half of its rows for both), the two of a
 *            column share B (each loads half of its boxes for both): a CTA
 *            reads a quarter less from L2 a k tile than with 2 (cuBLAS's
 *            256 x 128 tile: 24 KB instead of 32), and a consumer warp
 *            releases a stage in the three CTAs that write into its own. Its
 *            persistent grid is as many clusters of four as can be resident
 *            (a GPC's SMs beyond a multiple of four stay idle: 120 of 132 on
 *            an H100 or H200). At 4096^3 on an H200 (round 16) a 256 x 128
 *            tile took about 6% less time in it than in a cluster of two
 *            along N, but the 12 idle SMs cost more: 0.84x the cluster of
 *            two with DYN, 0.93x with SK 1. For shapes whose tiles fill 120
 *            SMs, not 132.
 *   CDIM     with CLUSTER 2, the cluster's direction: 0 along M (above), 1
 *            along N: the two CTAs compute horizontally adjacent tiles that
 *            share the same A rows; each loads half of A's rows and multicasts
 *            them to both, and loads its own B. Where BM > BN (cuBLAS's
 *            256 x 128 tile at 4096^3) this reads less from L2 per CTA than
 *            sharing B: 32 KB a k tile instead of 40.
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
 *   BHINT    1: with CLUSTER 1 or CDIM 1, B's (the weights') TMA loads carry an L2
 *            evict-first policy: a streamed weight line is replaced before
 *            lines still to be used or dirty lines still to be written back;
 *            0: no hint.
 *   PERSIST  1: a persistent grid, one CTA per SM (in whole clusters), each
 *            taking tiles pid, pid + CTAs, ... of the raster. The producer runs
 *            on into the next tile's k tiles while the consumers finish the
 *            current tile's epilogue, and the ring stays full across tiles;
 *            the epilogue staging (EPI 1, 2) then has its own shared memory
 *            after the ring. 0: one CTA per tile. (Needs SPLIT 1.)
 *   KWG      1 (with NCONS 2, PERSIST 0, PING 0, SPLIT 1, EPI 0, STAGES even):
 *            the two consumer warpgroups share one tile of WGM rows (BM =
 *            WGM) and take alternate k tiles of it, warpgroup c the ring's
 *            stages c, c + 2, ... (an even ring: each stage always read by
 *            the same warpgroup, so each waits on a barrier only it
 *            consumes, within one phase); at the end the second adds its
 *            fp32 accumulators to the first's through shared memory (the
 *            ring's, then free) and the first stores the tile. Two wgmma
 *            chains and twice the consumer warps on a tile too small to
 *            split by rows: cuBLAS's decode kernel at 128 x 4096 x 4096 on
 *            an H100 runs its 64 x 64 tile in 384 threads (ncu, round 24).
 *            0: the consumers take row blocks of the tile.
 *   PING     1 (with PERSIST 1, NCONS 2): the two consumer warpgroups take
 *            alternate tiles of their CTA, each a WGM x BN tile of its own
 *            (BM = WGM), so one warpgroup's epilogue runs while the other's
 *            wgmmas keep the tensor cores busy. The ring is shared in tile
 *            order; a warpgroup starts a tile's main loop once the other has
 *            waited for the last k tile of the tile before it (named
 *            barriers 4 and 5), which keeps every full-barrier wait within
 *            one phase of the barrier. 0: both consumers share each tile.
 *   SK       1 (with PERSIST 1, PING 0): stream-K for the last wave. Where the
 *            persistent CTAs (clusters) do not divide the tiles, the plain walk
 *            leaves some of them a tile short in the last wave (4096^3 at
 *            128 x 256: 512 tiles over 132 SMs, 3.88 waves timed as 4). With
 *            SK the last T % G + G tiles' k tiles are shared out evenly
 *            instead, before the whole tiles (kevo_cuda_tile_walk.cuh), so
 *            that the fix-ups hide behind the loads of the whole tiles that
 *            follow them: a CTA that takes the start of a tile but not its
 *            end leaves its fp32 partial in a static workspace slot of its
 *            own (one per CTA, at most one per launch)
 *            and raises a flag with the launch's number; the CTA with the
 *            tile's end waits for the flags of the lower CTAs that hold the
 *            rest, adds their partials in order (deterministic for a given
 *            grid, i.e. GPU) and stores the tile. Fewer tiles than SMs
 *            are shared out by their k tiles the same way (a CTA per k tile
 *            at most). Two launches of this module must not run at the same
 *            time (on two streams): they would share the workspace.
 *            2: the same, but the whole tiles first and stream-K only for the
 *            T % G tiles of the last wave, so that the tiles that share A rows
 *            and B columns still run side by side until then. 0: whole tiles
 *            only. (Either way the consumers read their units from shared
 *            memory, where a producer thread publishes the walk.)
 *   DYN      1 (with PERSIST 1, PING 0, SK 0): tiles after the first wave are
 *            handed out in raster order as clusters free up: a thread of rank
 *            0's producer warpgroup that issues no loads draws the cluster's
 *            next tile from a counter in global memory as the cluster starts
 *            the tile before, and publishes it in every CTA's shared memory
 *            (two slots in turn, each with a "published" mbarrier; the
 *            readers arrive on rank 0's "read" barrier, which the drawing
 *            thread waits for before it draws again). A cluster that runs
 *            slow takes fewer tiles instead of finishing the last wave late.
 *            The last cluster to draw past the end sets the counter back to
 *            0 for the next launch, so two launches of this module must not
 *            run at the same time (on two streams). 0: tiles pid,
 *            pid + clusters, ... in turn.
 *   TAIL     1 or 2 (with CLUSTER 4, PERSIST 1, SK 0, EPI 2): the SMs that
 *            clusters of four leave idle (12 of 132 on an H100 or H200) take
 *            a band of C's last rows or columns in a second launch, of
 *            clusters of TAIL CTAs along M, a programmatic dependent launch
 *            on the same stream: it starts once every CTA of the first has
 *            (so those take their SMs first) and ends after the first. The
 *            band is the one whose slower launch has the fewest waves of
 *            tiles; none where no band beats one launch. 0: one launch.
 *            At 4096^3 on an H100 (round 19): TAIL 2 182.37 us against
 *            213.92 for clusters of four alone and 180.61 for the start
 *            line (ncu, each launch alone: the main 174-176, the band 119;
 *            the main clocks 2-3% higher than the start line with 12 SMs
 *            idle, the clock falling with load as at the power cap, and
 *            loses that beside its band);
 *            TAIL 1 292.90, its two launches one after the other.
 *
 * Starts (besides the default; SMS is the GPU's multiprocessors, as its
 * runner reports them): for decode shapes, a BN 64 or 128 tile whose BM
 * covers M, the deepest ring that fits, and a split-K that fills the SMs:
 * weight streaming wants every SM loading. For large shapes, a persistent
 * 128 x 256 tile with TMA stores, the same with the two consumers on
 * alternate 128 x 128 tiles (PING), the 128 x 256 tile in clusters of
 * two with stream-K for the last wave (SK), the same with a fourth stage
 * in the room EPIB 2 frees, and a 256 x 128 tile (WGM 128) with four
 * stages and one box staged at a time, the tile cuBLAS takes at 4096^3 on
 * an H100, with its boxes staged by stmatrix (STM), and in a cluster along
 * N that shares A with its first box staged in the held stage and its tiles
 * after the first wave drawn as clusters free up (CDIM, EPIR, DYN).
 * Measured there (bench/results/2026-12-05-h100-decode-gemm-7.md): the
 * fourth stage +0.4%, SK -6 to -7%, PING -11% and worse; STM +0.2%
 * (2026-12-06-...-9.md); CDIM +0.6 to +0.8%, with EPIR +1.1 to +1.4%, the
 * best point at 0.980x cuBLAS in two calls (2026-12-06-...-10.md, where
 * the loads alone take 147 us with CDIM, the wgmmas alone 150 us, both
 * together 178.6: the main loop's two halves overlap badly, not either
 * one's floor, holds it back); GROUP_M 1 to 16 at that point: 8 and 1 tie,
 * 2, 4 and 16 0.6 to 1.0% slower (2026-12-06-...-12.md); DYN +0.37% there
 * (faster in 5 of 5 rounds; with the producer thread publishing, -3 to -4%).
 * The main loop's wgmma descriptors in uniform registers, stepped per stage,
 * and scale-d 0 on each tile's first k tile: +0.6%, 0.991x cuBLAS
 * (2026-12-06-...-13.md).
 * At M = 64 kevo's latest search on an H100 at each decode shape picked a
 * persistent tile without split-K (4096 x 14336, 14336 x 4096,
 * 4096 x 4096, 8192 x 8192: 2026-12-07-...-19.md, -20.md, -22.md), while
 * the first two starts below split K to fill the SMs: at 64 x 4096 x 4096
 * the split-2 start took 17.2 us in the search, a BN 64 tile without split
 * 15.9 (evaluation 32 of 147; round 20's search, 80 evaluations, tried no
 * wgmma tile without split there). The third and fourth starts begin at
 * those tiles, persistent, as the searches' bests were.
 * The fifth is cuBLAS's tile at 128 x 4096 x 4096 on an H100 (ncu, round 23:
 * nvjet 64x64, 13 stages, 16.4 us where kevo's best split-K point took 18.6):
 * 64 x 64 without split-K, above 64 rows in clusters of two along M that
 * read each weight tile once for both. Timed there (round 24): 18.8 us,
 * 0.90x cuBLAS, slower than round 23's swapab point (18.0); at
 * 128 x 8192 x 8192 0.81x. ncu: the same grid, clusters and DRAM bytes as
 * cuBLAS's kernel, which runs the tile in three warpgroups (KWG's layout).
 */
// @kevo start BN = 64, WGM = 64, NCONS = 1 + (DIM_A_0 > 64), STAGES = 230000 / ((NCONS * WGM + BN) * 128), SPLIT = SMS / ((DIM_A_0 + NCONS * WGM - 1) / (NCONS * WGM) * ((DIM_B_1 + BN - 1) / BN))
// @kevo start BN = 128, WGM = 64, NCONS = 1 + (DIM_A_0 > 64), STAGES = 230000 / ((NCONS * WGM + BN) * 128), SPLIT = SMS / ((DIM_A_0 + NCONS * WGM - 1) / (NCONS * WGM) * ((DIM_B_1 + BN - 1) / BN))
// @kevo start BN = 64, WGM = 64, NCONS = 1 + (DIM_A_0 > 64), STAGES = 230000 / ((NCONS * WGM + BN) * 128), EPI = 2, PERSIST = 1, SPLIT = 1
// @kevo start BN = 128, WGM = 64, NCONS = 1 + (DIM_A_0 > 64), STAGES = 230000 / ((NCONS * WGM + BN) * 128), EPI = 2, PERSIST = 1, SPLIT = 1
// @kevo start BN = 64, WGM = 64, NCONS = 1, CLUSTER = 1 + (DIM_A_0 > 64), STAGES = 230000 / ((NCONS * WGM + BN) * 128), SPLIT = 1, GROUP_M = 1
// @kevo start BN = 256, WGM = 64, NCONS = 2, STAGES = 3, EPI = 2, PERSIST = 1, GROUP_M = 8
// @kevo start BN = 128, WGM = 128, NCONS = 2, STAGES = 5, EPI = 2, PERSIST = 1, PING = 1, GROUP_M = 8
// @kevo start BN = 256, WGM = 64, NCONS = 2, STAGES = 3, EPI = 2, PERSIST = 1, CLUSTER = 2, SK = 1, GROUP_M = 8
// @kevo start BN = 256, WGM = 64, NCONS = 2, STAGES = 4, EPI = 2, EPIB = 2, PERSIST = 1, CLUSTER = 2, GROUP_M = 8
// @kevo start BN = 128, WGM = 128, NCONS = 2, STAGES = 4, EPI = 2, EPIB = 1, PERSIST = 1, CLUSTER = 2, GROUP_M = 8
// @kevo start BN = 128, WGM = 128, NCONS = 2, STAGES = 4, EPI = 2, EPIB = 1, STM = 1, PERSIST = 1, CLUSTER = 2, GROUP_M = 8
// @kevo start BN = 128, WGM = 128, NCONS = 2, STAGES = 4, EPI = 2, EPIB = 1, EPIR = 1, PERSIST = 1, CLUSTER = 2, CDIM = 1, GROUP_M = 8, DYN = 1
// @kevo knob BN 128 {64, 128, 192, 256}
// @kevo knob WGM 64 {64, 128}
// @kevo knob NCONS 2 {1, 2}
// @kevo knob STAGES 4 {2, 3, 4, 5, 6, 8, 10, 12}
// @kevo knob KEEP 1 {0, 1}
// @kevo knob GROUP_M 8 {1, 4, 8, 16}
// @kevo knob EPI 0 {0, 1, 2}
// @kevo knob EPIB 0 {0, 1, 2}
// @kevo knob EPIR 0 {0, 1}
// @kevo knob STM 0 {0, 1}
// @kevo knob CLUSTER 1 {1, 2, 4}
// @kevo knob CDIM 0 {0, 1}
// @kevo knob SPLIT 1 {1, 2, 3, 4, 6, 8}
// @kevo knob BHINT 0 {0, 1}
// @kevo knob PERSIST 0 {0, 1}
// @kevo knob PING 0 {0, 1}
// @kevo knob SK 0 {0, 1, 2}
// @kevo knob DYN 0 {0, 1}
// @kevo knob TAIL 0 {0, 1, 2}
// @kevo knob KWG 0 {0, 1}
// @kevo require WGM / 64 * BN / 2 <= 128
// @kevo require STAGES * ((NCONS - PING - KWG) * WGM + BN) * 128 + PERSIST * (EPI == 1) * NCONS * WGM * (BN + 8) * 2 + PERSIST * (EPI == 2) * NCONS * WGM * (BN - (EPIB > 0) * (BN - 64 * EPIB)) * 2 + 2048 <= 232448
// @kevo require EPIB == 0 || (EPI == 2 && (BN / 64) % EPIB == 0 && 64 * EPIB < BN)
// @kevo require EPI == 0 || NCONS * WGM * (BN + 8) * 2 + 2048 <= 232448
// @kevo require EPIR == 0 || (EPI == 2 && EPIB == 1 && PERSIST == 1 && PING == 0)
// @kevo require STM == 0 || EPI == 2
// @kevo require CDIM == 0 || (CLUSTER == 2 && PING == 0)
// @kevo require CLUSTER < 4 || PING == 0
// @kevo require SPLIT == 1 || CLUSTER == 1
// @kevo require SPLIT == 1 || EPI == 0
// @kevo require SPLIT == 1 || NCONS * WGM * (BN + 4) * 4 + 2048 <= 232448
// @kevo require PERSIST == 0 || SPLIT == 1
// @kevo require PING == 0 || (PERSIST == 1 && NCONS == 2)
// @kevo require SK == 0 || (PERSIST == 1 && PING == 0)
// @kevo require DYN == 0 || (PERSIST == 1 && PING == 0 && SK == 0)
// @kevo require TAIL == 0 || (CLUSTER == 4 && PERSIST == 1 && SK == 0 && EPI == 2)
// @kevo require KWG == 0 || (NCONS == 2 && PERSIST == 0 && PING == 0 && SPLIT == 1 && EPI == 0 && STAGES % 2 == 0)
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
#ifndef EPIB
#define EPIB 0
#endif
// Diagnostics, never knobs (kevo never sets them; each breaks the output):
// the ring's loads and handshakes with no wgmma issued (KEVO_DIAG_NO_MMA:
// what moving the data alone takes); with EPI 2, the epilogue without its
// TMA stores (KEVO_DIAG_EPI_NO_STORE),
// without the waits for TMA to read the staged boxes (KEVO_DIAG_EPI_NO_WAIT),
// or without the writes that stage them (KEVO_DIAG_EPI_NO_STAGE): each,
// timed beside the full epilogue and KEVO_DIAG_NO_EPILOGUE, says which part
// of the epilogue the main loop waits for. KEVO_DIAG_NO_LOAD: the producer
// issues no TMA load, only arrives on each stage's full barrier, so the
// wgmmas run on whatever the ring holds: what the math and the handshakes
// take alone, the other floor beside KEVO_DIAG_NO_MMA's.
#ifndef KEVO_DIAG_NO_LOAD
#define KEVO_DIAG_NO_LOAD 0
#endif
#ifndef KEVO_DIAG_NO_EPILOGUE
#define KEVO_DIAG_NO_EPILOGUE 0
#endif
#ifndef KEVO_DIAG_NO_MMA
#define KEVO_DIAG_NO_MMA 0
#endif
#ifndef KEVO_DIAG_EPI_NO_STORE
#define KEVO_DIAG_EPI_NO_STORE 0
#endif
#ifndef KEVO_DIAG_EPI_NO_WAIT
#define KEVO_DIAG_EPI_NO_WAIT 0
#endif
#ifndef KEVO_DIAG_EPI_NO_STAGE
#define KEVO_DIAG_EPI_NO_STAGE 0
#endif
// KEVO_DIAG_EPI_STORE_ONLY (EPI 2, a diagnostic): 1 stores only the tiles of
// the last wave (cluster tiles from tiles_c - tiles_c % clusters on), 2 only
// the tiles before it: which of the stores cost the time that
// KEVO_DIAG_EPI_NO_STORE saves, the drain at the end or those the next
// tile's main loop runs beside.
#ifndef KEVO_DIAG_EPI_STORE_ONLY
#define KEVO_DIAG_EPI_STORE_ONLY 0
#endif
// KEVO_DIAG_EPI_STORE_SAME (EPI 2, a diagnostic): every tile of a CTA is
// stored to one place of its own (its tile's region of C as if it were CTA
// blockIdx.x's only tile), so C's footprint in the L2 and DRAM is one tile per
// CTA: whether the stores cost the SM or the memory behind it.
#ifndef KEVO_DIAG_EPI_STORE_SAME
#define KEVO_DIAG_EPI_STORE_SAME 0
#endif
// A diagnostic for the GPU tests: the tail launch (TAIL) waits for the main
// one and writes nothing, so C's band keeps what was there. A check fails if
// and only if the band was launched (OnGpu.TailBandIsLaunched).
#ifndef KEVO_DIAG_TAIL_SKIP
#define KEVO_DIAG_TAIL_SKIP 0
#endif
#ifndef EPIR
#define EPIR 0
#endif
#ifndef STM
#define STM 0
#endif
#ifndef CLUSTER
#define CLUSTER 1
#endif
#ifndef CDIM
#define CDIM 0
#endif
#ifndef SPLIT
#define SPLIT 1
#endif
#ifndef BHINT
#define BHINT 0
#endif
#ifndef PERSIST
#define PERSIST 0
#endif
#ifndef PING
#define PING 0
#endif
#ifndef SK
#define SK 0
#endif
#ifndef DYN
#define DYN 0
#endif
#ifndef TAIL
#define TAIL 0
#endif
#ifndef KWG
#define KWG 0
#endif

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kevo_cuda_gemm_fallback.cuh"
// kevo_cuda_tma.cuh before the tile walk: its unit slots use the mbarriers.
#include "kevo_cuda_tma.cuh"
#include "kevo_cuda_tile_walk.cuh"
#include "kevo_kernel.h"

namespace {

constexpr int BM = PING || KWG ? WGM : NCONS * WGM;  // rows of a tile (of one A stage)
constexpr int kCRows = NCONS * WGM;           // rows the consumers hold at once (staging)
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
constexpr int kEpiBoxes = EPIB ? EPIB : BN / 64;  // EPI 2: boxes a warpgroup stages at a time
constexpr int kEpiPasses = BN / 64 / kEpiBoxes;
constexpr int kEpiBytes = EPI == 1 ? kCRows * kEpiLd * 2 : EPI == 2 ? kCRows * 64 * kEpiBoxes * 2 : 0;
constexpr int kPartLd = BN + 4;             // padded fp32 row of a split-K partial tile
// KWG: the second warpgroup's accumulators, [i][thread] (WGM * BN floats).
constexpr int kPartBytes = SPLIT > 1 ? BM * kPartLd * 4 : KWG ? WGM * BN * 4 : 0;
constexpr int kOutBytes = kEpiBytes > kPartBytes ? kEpiBytes : kPartBytes;
// The output staging (EPI, split-K partials) reuses the ring once the main
// loop is over; a persistent CTA's producer is already filling the ring for
// its next tile then, so there the staging has its own space after the ring.
constexpr int kOutOffset = PERSIST ? kPipeBytes : 0;
constexpr int kDataBytes = PERSIST ? kPipeBytes + kOutBytes : (kPipeBytes > kOutBytes ? kPipeBytes : kOutBytes);
// After the ring's barriers, with DYN or SK: two unit slots' "published"
// and "read" barriers, then the two slots (DYN: a tile; SK: a unit and
// where its partials are, kKvUnitWords words).
constexpr int kSlotBytes = DYN ? 2 * 8 + 2 * 8 + 2 * 4 : SK ? kKvUnitAreaBytes : 0;
constexpr int kSmemBytes = 1024 /* alignment slack */ + kDataBytes + 2 * STAGES * 8 + kSlotBytes;
// Registers: the producer warpgroup gives most of its registers to the
// consumers. With SK its publishing thread walks the units in 64-bit
// arithmetic and spilled in 40; two consumers then take 224 instead of 232.
constexpr int kProducerRegs = SK ? 48 : 40;
constexpr int kConsumerRegs = kv_consumer_regs(NCONS, kProducerRegs);

static_assert(BN % 64 == 0 && BN <= 256, "BN must be 64, 128, 192 or 256");
static_assert(WGM == 64 || WGM == 128, "WGM must be 64 or 128");
static_assert(kMT * kAcc <= 128, "too many accumulators per thread");
static_assert(BM <= 256, "TMA box rows <= 256");
static_assert(CLUSTER == 1 || CLUSTER == 2 || CLUSTER == 4, "CLUSTER must be 1, 2 or 4");
static_assert(CDIM == 0 || (CLUSTER == 2 && PING == 0), "CDIM 1 needs CLUSTER 2 and PING 0");
static_assert(CLUSTER < 4 || PING == 0, "CLUSTER 4 needs PING 0");
// A launch's cluster of kClu CTAs (along N with kCdim 1): its extent along
// M and along N, in tiles. Rank r's tile is at row r % kCM and column r / kCM
// of the cluster's block. A CTA shares A with the kCN CTAs of its row and B
// with the kCM CTAs of its column, loading 1 / kCN of A's rows and 1 / kCM of
// B's boxes for all of them. The kernel is built for the knobs' cluster and,
// with TAIL, for the tail's too (TAIL CTAs along M).
template <int kClu, int kCdim>
struct ClusterShape {
  static constexpr int kCM = kClu == 4 ? 2 : kCdim ? 1 : kClu;
  static constexpr int kCN = kClu / kCM;
  // The CTAs that write into a CTA's stages (itself included), whose
  // consumers all release a stage before its producer loads it again.
  static constexpr int kWriters = kCM + kCN - 1;
  // DYN: readers of a tile slot, every CTA's producer and every consumer warp
  // of the cluster, each arriving once on rank 0's "read" barrier.
  static constexpr int kDynReaders = kClu + kClu * NCONS * 4;
  static_assert(kClu == 1 || kClu == 2 || kClu == 4, "clusters of 1, 2 or 4 CTAs");
  // B's 64 x 64 boxes split across the kCM CTAs of a column: whole boxes
  // where their count allows, else each box by k rows (kBParts slices of
  // BK / kBParts rows, each a multiple of the swizzle's 8-row atom).
  static constexpr int kBParts = (BN / 64) % kCM == 0 ? 1 : kCM;
  static_assert(BK % (8 * kBParts) == 0, "a box's k slices must be whole swizzle atoms");
};
using MainShape = ClusterShape<CLUSTER, CDIM>;
static_assert(SPLIT >= 1 && SPLIT <= 8, "SPLIT must be 1..8 (portable cluster size)");
static_assert(SPLIT == 1 || CLUSTER == 1, "split-K and the M cluster do not combine");
static_assert(EPI >= 0 && EPI <= 2, "EPI must be 0, 1 or 2");
static_assert(EPIB == 0 || (EPI == 2 && (BN / 64) % EPIB == 0 && 64 * EPIB < BN),
              "EPIB needs EPI 2 and must divide BN's boxes into several passes");
static_assert(PERSIST == 0 || SPLIT == 1, "a persistent CTA does not split K");
static_assert(STM == 0 || EPI == 2, "STM stages the boxes of EPI 2");
static_assert(EPIR == 0 || (EPI == 2 && EPIB == 1 && PERSIST == 1 && PING == 0),
              "EPIR needs EPI 2, EPIB 1, PERSIST 1 and PING 0");
static_assert(PING == 0 || (PERSIST == 1 && NCONS == 2), "PING needs PERSIST 1 and NCONS 2");
static_assert(SK == 0 || (PERSIST == 1 && PING == 0), "SK needs PERSIST 1 and PING 0");
static_assert(DYN == 0 || (PERSIST == 1 && PING == 0 && SK == 0), "DYN needs PERSIST 1, PING 0 and SK 0");
static_assert(TAIL == 0 || TAIL == 1 || TAIL == 2, "TAIL must be 0, 1 or 2");
static_assert(KWG == 0 || (NCONS == 2 && PERSIST == 0 && PING == 0 && SPLIT == 1 && EPI == 0 && STAGES % 2 == 0),
              "KWG needs NCONS 2, PERSIST 0, PING 0, SPLIT 1, EPI 0 and an even STAGES");
static_assert(TAIL == 0 || (CLUSTER == 4 && PERSIST == 1 && SK == 0 && EPI == 2),
              "TAIL needs CLUSTER 4, PERSIST 1, SK 0 and EPI 2");

// Stream-K (SK 1): CTA c's partial tile, kMT * kAcc floats per consumer
// thread laid out [i][thread] (each i one coalesced row), and its flag, which
// holds the number of the launch whose partial is in the slot.
constexpr int kSkSlots = 160;  // persistent CTAs at most (one per SM)
constexpr int kConsThreads = NCONS * 128;
__device__ float g_sk_part[SK ? kSkSlots * kConsThreads * kMT * kAcc : 1];
__device__ unsigned g_sk_ready[SK ? kSkSlots : 1];
// DYN: the tiles drawn past the first wave in this launch, and the clusters
// that have drawn past the last tile (the last of them sets both back to 0);
// [1] is the tail launch's (TAIL), which runs beside the main one.
__device__ unsigned g_dyn_next[2] = {0, 0};
__device__ unsigned g_dyn_done[2] = {0, 0};
static_assert(kSmemBytes <= 232448, "shared memory over 227 KB");

// ------------------------------------------------------------------ kernels
template <int kClu, int kCdim>
__global__ void __cluster_dims__(kClu, SPLIT, 1) __launch_bounds__(kThreads, 1)
    gemm_wgmma_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                      const __grid_constant__ CUtensorMap tmC, __nv_bfloat16* __restrict__ C, int M,
                      int N, int K, unsigned epoch) {
  constexpr int kCM = ClusterShape<kClu, kCdim>::kCM;
  constexpr int kCN = ClusterShape<kClu, kCdim>::kCN;
  constexpr int kBParts = ClusterShape<kClu, kCdim>::kBParts;
  constexpr int kWriters = ClusterShape<kClu, kCdim>::kWriters;
  constexpr int kDynReaders = ClusterShape<kClu, kCdim>::kDynReaders;
  constexpr int kPart = kClu == CLUSTER && kCdim == CDIM ? 0 : 1;  // g_dyn_*'s
  // TAIL: the tail launch (a programmatic dependent launch) may start once
  // every CTA of the main one has, so it finds the SMs these left idle.
  if constexpr (TAIL && kPart == 0) asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  if constexpr (KEVO_DIAG_TAIL_SKIP && TAIL && kPart == 1) {
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
    return;
  }
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // Stage buffers must sit on 1024-byte boundaries (the 128-byte swizzle
  // pattern repeats every 8 rows of 128 bytes; descriptors assume base offset 0).
  const uint32_t raw = kv_smem_u32(smem_raw);
  const uint32_t s0 = (raw + 1023u) & ~1023u;
  const uint32_t sA = s0;
  const uint32_t sB = s0 + STAGES * kAStage;
  const uint32_t sOut = s0 + kOutOffset;  // EPI staging or the split-K partial tile
  const uint32_t bar_full = s0 + kDataBytes;
  const uint32_t bar_empty = bar_full + STAGES * 8;
  const uint32_t bar_tile = bar_empty + STAGES * 8;  // DYN, SK: slot j % 2 published
  const uint32_t bar_tile_read = bar_tile + 2 * 8;    // DYN, SK: slot j % 2 read by all
  const uint32_t tile_slot = bar_tile_read + 2 * 8;   // DYN: two u32 slots; SK: two of kKvUnitWords

  const int wg = threadIdx.x / 128;
  const int tid_wg = threadIdx.x % 128;

  // Threadblock rasterization (grouped along M for L2 reuse), in units of
  // clusters: the kClu CTAs of a cluster take kClu consecutive tile rows
  // of the same tile column, or with CDIM 1 consecutive tile columns of the
  // same row, or with four a 2 x 2 block (a CTA past the last tile row or
  // column still runs the pipeline for its peers, loading valid rows and
  // columns and storing nothing).
  // A persistent cluster takes the tiles pid, pid + clusters, ... in turn, so
  // the clusters resident at once work on consecutive tiles of the raster.
  constexpr int kGroup = GROUP_M / kCM > 1 ? GROUP_M / kCM : 1;
  const int tiles_m = (M + BM - 1) / BM;
  const int tiles_mc = (tiles_m + kCM - 1) / kCM;
  const int tiles_nc = (N + BN * kCN - 1) / (BN * kCN);
  const int tiles_c = tiles_mc * tiles_nc;  // tiles in cluster units
  const int pid_step = PERSIST ? (int)gridDim.x / kClu : tiles_c;
#ifdef KEVO_DIAG_SCRAMBLE
  // A diagnostic, never a knob: persistent cluster c takes the walk of
  // cluster (c * KEVO_DIAG_SCRAMBLE) % clusters (a permutation where the two
  // are coprime; -1 reverses), to see whether which SMs take which tiles
  // matters. The output is right either way.
  const int cid = (int)blockIdx.x / kClu;
  const int pid_first = KEVO_DIAG_SCRAMBLE < 0 ? pid_step - 1 - cid : (int)(((int64_t)cid * KEVO_DIAG_SCRAMBLE) % pid_step);
#else
  const int pid_first = (int)blockIdx.x / kClu;
#endif
  const uint32_t crank = kClu > 1 ? kv_cluster_rank() : 0;  // rank in the cluster (SPLIT is 1 then)
  const int rm = (int)crank % kCM, rn = (int)crank / kCM;     // its tile's row and column in the block
  // Multicast masks: the CTAs of this tile row (A) and of this column (B).
  uint16_t mask_a = 0, mask_b = 0;
#pragma unroll
  for (int x = 0; x < kCN; ++x) mask_a |= (uint16_t)(1u << (rm + kCM * x));
#pragma unroll
  for (int x = 0; x < kCM; ++x) mask_b |= (uint16_t)(1u << (x + kCM * rn));
  auto tile_origin = [&](int pid, int& m0, int& n0) {
    int pid_mc, pid_n;
    if constexpr (kGroup <= 1) {
      pid_mc = pid / tiles_nc;
      pid_n = pid % tiles_nc;
    } else {
      const int in_group = kGroup * tiles_nc;
      const int first_m = (pid / in_group) * kGroup;
      const int gsize = min(tiles_mc - first_m, kGroup);
      const int r = pid % in_group;
      pid_mc = first_m + r % gsize;
      pid_n = r / gsize;
    }
    m0 = (pid_mc * kCM + rm) * BM;
    n0 = (pid_n * kCN + rn) * BN;
  };
  // Split-K: this CTA's k tiles are [kt0, kt0 + ktiles) of the whole range;
  // its rank in the split cluster is blockIdx.y (the cluster spans grid.y).
  const int ktiles_all = (K + BK - 1) / BK;
  const int split_rank = SPLIT > 1 ? (int)blockIdx.y : 0;
  const int kt0 = (int)((int64_t)ktiles_all * split_rank / SPLIT);
  const int ktiles = (int)((int64_t)ktiles_all * (split_rank + 1) / SPLIT) - kt0;

  // The j-th unit of this CTA's work: k tiles [ka, kb) of tile pid. With DYN
  // (whole tiles), tile 0 is pid_first and tile j >= 1 comes through slot
  // j % 2, published by rank 0's scheduler thread (below); every CTA's
  // producer and consumer warps wait for it there and then say they have read
  // it (`warp`: one arrival for the calling warp, after all its lanes read).
  // A tile past the last ends the walk.
  auto next_tile = [&](KvTileWalk& walk, int j, bool warp, int& pid, int& ka, int& kb) -> bool {
    if constexpr (DYN) {
      ka = 0;
      kb = ktiles;
      if (j == 0) {
        pid = pid_first;
        return pid < tiles_c;
      }
      const uint32_t slot = (uint32_t)(j & 1);
      kv_mbar_wait_cluster(bar_tile + 8 * slot, (uint32_t)((j - 1) >> 1) & 1u);
      pid = (int)*reinterpret_cast<volatile uint32_t*>(smem_raw + (tile_slot + 4 * slot - raw));
      if (warp) __syncwarp();
      // The arrival waits on the value read (a branch on it: the read is
      // done before the slot can be written again). It is not a release at
      // cluster scope: in threads with TMA loads or stores in flight that
      // one made the 4096^3 kernel 2.6% slower on an H100 (round 12).
      if ((!warp || (threadIdx.x & 31) == 0) && pid >= 0) kv_mbar_arrive_cluster(bar_tile_read + 8 * slot, 0);
      return pid < tiles_c;
    } else {
      (void)j, (void)warp;
      return kv_next_unit(walk, pid, ka, kb);
    }
  };
  // DYN: rank 0's scheduler (one thread of the producer warpgroup, which
  // issues no loads: its release fences wait on nothing) draws tile j from
  // the counter once every reader has read tile j - 1, i.e. as the cluster
  // starts tile j - 1, and publishes it to every CTA of the cluster.
  auto schedule = [&]() {
    for (int j = 1;; ++j) {
      if (j >= 2) kv_mbar_wait_cluster(bar_tile_read + 8 * ((j - 1) & 1), (uint32_t)((j - 2) >> 1) & 1u);
      int pid = pid_step + (int)atomicAdd(&g_dyn_next[kPart], 1u);
      if (pid >= tiles_c) {
        pid = tiles_c;
        __threadfence();  // this cluster's last draw comes before its count
        if (atomicAdd(&g_dyn_done[kPart], 1u) == (unsigned)pid_step - 1u) {
          atomicExch(&g_dyn_next[kPart], 0u);  // every cluster has drawn its last
          atomicExch(&g_dyn_done[kPart], 0u);
        }
      }
      const uint32_t slot = (uint32_t)(j & 1);
#pragma unroll
      for (int r = 0; r < kClu; ++r)
        kv_publish_cluster(tile_slot + 4 * slot, (uint32_t)pid, bar_tile + 8 * slot, (uint32_t)r);
      if (pid >= tiles_c) return;
    }
  };
  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      kv_mbar_init(bar_full + 8 * s, 1);               // the producer's arrive.expect_tx
      // every consumer warp of the cluster that reads the stage (with PING, one warpgroup's)
      kv_mbar_init(bar_empty + 8 * s, kWriters * (PING || KWG ? 1 : NCONS) * 4);
    }
    if constexpr (DYN || SK) {
      for (int i = 0; i < 2; ++i) {
        kv_mbar_init(bar_tile + 8 * i, 1);  // the publishing thread
        // DYN: rank 0's, read by the cluster; SK: this CTA's, read by its consumer warps
        kv_mbar_init(bar_tile_read + 8 * i, DYN ? kDynReaders : NCONS * 4);
      }
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  if constexpr (kClu > 1) kv_cluster_sync();  // peers' barriers exist before any multicast
  else __syncthreads();
  float* part = reinterpret_cast<float*>(smem_raw + (sOut - raw));  // split-K partial (SPLIT > 1, KWG)

  if (wg == 0) {
    // ------------------------------------------------------------ producer
    if constexpr (kConsumerRegs > 0) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs));
    // Warps 1-3 of this warpgroup have no work. They leave now instead of
    // waiting the whole kernel at the closing barrier: an exited thread
    // counts as arrived at barrier.cluster and bar.sync, and ncu's stall
    // samples then come from warps that work, not from parked ones.
    if constexpr (DYN) {
      if (tid_wg == 32 && crank == 0) schedule();
    }
    if constexpr (SK) {
      // The stream-K walk for the consumers (kv_publish_units: walked in the
      // consumers themselves, it kept their main loop out of uniform
      // registers, 105.5 SASS instructions per k tile at 4096^3 against 57.5).
      if (tid_wg == 32)
        kv_publish_units(kv_tile_walk(tiles_c, ktiles, pid_step, pid_first, SK),
                         reinterpret_cast<volatile int*>(smem_raw + (tile_slot - raw)), bar_tile, bar_tile_read);
    }
    if (tid_wg >= 32) return;
    if (tid_wg == 0) {
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmA)) : "memory");
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmB)) : "memory");
      uint64_t bpolicy = 0;
      if constexpr (BHINT) bpolicy = kv_evict_first_policy();
      int s = 0;
      uint32_t phase = 0;  // parity of the empty-barrier phase to wait for
      int it = 0;          // k tiles issued so far, over all of this CTA's tiles
      KvTileWalk walk = kv_tile_walk(tiles_c, ktiles, pid_step, pid_first, SK);
      int pid, ka, kb;
      for (int j = 0; next_tile(walk, j, false, pid, ka, kb); ++j) {
        int m0, n0;
        tile_origin(pid, m0, n0);
        for (int kt = ka; kt < kb; ++kt, ++it) {
          if (it >= STAGES) kv_mbar_wait(bar_empty + 8 * s, phase);
          const uint32_t full = bar_full + 8 * s;
          const int k = (kt0 + kt) * BK;
          if constexpr (KEVO_DIAG_NO_LOAD) {
            kv_mbar_arrive(full);  // the stage "arrives" with what it held before
            if (++s == STAGES) {
              s = 0;
              if (it >= STAGES) phase ^= 1;
            }
            continue;
          }
          kv_mbar_expect_tx(full, kStageBytes);
          if constexpr (kCN > 1) {
            // This CTA's share of A's rows, to every CTA of its tile row (the
            // map's box is BM / kCN rows).
            const int ra = m0 + rn * (BM / kCN);
            kv_tma_load_2d_mc(sA + s * kAStage + rn * (BM / kCN) * 128, &tmA, k, ra < M ? ra : 0, full, mask_a);
          } else {
            kv_tma_load_2d(sA + s * kAStage, &tmA, k, m0 < M ? m0 : 0, full);
          }
          if constexpr (kCM == 1) {
            const int nb = n0 < N ? n0 : 0;  // CDIM: a CTA past the last tile column loads valid columns
#pragma unroll
            for (int j = 0; j < BN / 64; ++j) {
              if constexpr (BHINT)
                kv_tma_load_2d_hint(sB + s * kBStage + j * kBBox, &tmB, nb + 64 * j, k, full, bpolicy);
              else
                kv_tma_load_2d(sB + s * kBStage + j * kBBox, &tmB, nb + 64 * j, k, full);
            }
          } else {
            // This CTA's share of B's boxes, to every CTA of its tile column
            // (one past the last tile column loads valid columns).
            const int nb = n0 < N ? n0 : 0;
            if constexpr (kBParts == 1) {
#pragma unroll
              for (int jj = 0; jj < BN / 64 / kCM; ++jj) {
                const int j = jj * kCM + rm;
                kv_tma_load_2d_mc(sB + s * kBStage + j * kBBox, &tmB, nb + 64 * j, k, full, mask_b);
              }
            } else {
              // Boxes that do not split across the column (BN 64, 192): its
              // 1 / kCM of every box's k rows (the map's box is that tall).
              constexpr int kRows = BK / kBParts;
#pragma unroll
              for (int j = 0; j < BN / 64; ++j)
                kv_tma_load_2d_mc(sB + s * kBStage + j * kBBox + rm * kRows * 128, &tmB, nb + 64 * j,
                                  k + rm * kRows, full, mask_b);
            }
          }
          if (++s == STAGES) {
            s = 0;
            if (it >= STAGES) phase ^= 1;
          }
        }
      }
    }
  } else {
    // ------------------------------------------------------------ consumers
    if constexpr (kConsumerRegs > 0) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegs));
    // kv_warp_uniform keeps the wgmma descriptors built from it in uniform
    // registers (in ordinary ones, a k tile took 120 instructions per warp,
    // now 55 by bench/micro/sass_loop.py; 4096^3 0.47% faster on an H100,
    // round 13).
    const int cw = kv_warp_uniform(wg - 1);
    // A: K-major, 128B swizzle: 8-row groups 1024 bytes apart (SBO), LBO unused (16).
    //    k16 step = +32 bytes inside the 128-byte row; m64 tile = +64 rows * 128 bytes.
    // B: N-major ("transposed"), 128B swizzle: 8-k-row groups 1024 bytes apart
    //    (SBO), 64-column blocks kBBox bytes apart (LBO); k16 step = +16 rows * 128 bytes.
    const uint32_t a_row_off = PING || KWG ? 0u : (uint32_t)(cw * WGM) * 128u;
    const int crow = PING || KWG ? 0 : cw * WGM;  // this warpgroup's first row in the tile
    // One arrival per consumer warp on the stage's empty barrier of every CTA
    // that writes into this one's stages (its tile row's and column's: their
    // producers overwrite the stage here).
    const bool lane0 = (tid_wg & 31) == 0;
    auto release = [&](int stage) {
      if (lane0) {
        if constexpr (kClu == 1) {
          kv_mbar_arrive(bar_empty + 8 * stage);
        } else {
#pragma unroll
          for (int r = 0; r < kClu; ++r)
            if (r % kCM == rm || r / kCM == rn) kv_mbar_arrive_cluster(bar_empty + 8 * stage, (uint32_t)r);
        }
      }
    };
    // Accumulator layout of m64nN: warp w of the warpgroup owns rows 16w..16w+15;
    // d[4j + e]: row 16w + g + 8*(e/2), column 8j + 2t + (e%2), g = lane/4, t = lane%4.
    const int w = tid_wg >> 5;
    const int lane = tid_wg & 31;
    const int g = lane >> 2;
    const int t4 = lane & 3;
    // KWG: warpgroup cw takes k tiles ka + cw, ka + cw + 2, ... (the ring's
    // stages cw, cw + 2, ...: one tile a CTA, its k tiles from ring position 0).
    constexpr int kKStep = KWG ? 2 : 1;
    const int kFirst = KWG ? cw : 0;
    int s = kFirst;
    uint32_t phase = 0;  // parity of the full-barrier phase to wait for
    // Stage 0's wgmma descriptors; stage s's, and the k16 and m64 steps in it,
    // are these advanced (kv_desc_advance).
    const uint64_t da0 = kv_make_desc_sw128(sA + a_row_off, 16, 1024);
    const uint64_t db0 = kv_make_desc_sw128(sB, kBBox, 1024);
    float acc[kMT][kAcc];
    // The same walk as the producer's: unit j is k tiles [ka, kb) of tile pid
    // (whole tiles but for SK's stream-K units).
    // (SK: taken from the slots the publishing thread writes, kv_take_unit.)
    KvTileWalk walk = kv_tile_walk(tiles_c, ktiles, pid_step, pid_first, 0);
    int pid, ka, kb;
    const volatile int* sk_slots = reinterpret_cast<const volatile int*>(smem_raw + (tile_slot - raw));
    auto sk_unit = [&](int j) { return kv_take_unit(sk_slots, bar_tile, bar_tile_read, j, lane0, tiles_c, pid, ka, kb); };
    for (int j = 0; SK ? sk_unit(j) : next_tile(walk, j, true, pid, ka, kb); ++j) {
      if constexpr (PING) {
        // Tile j of this CTA is warpgroup j % 2's; its k tiles are the ring's
        // j * ktiles, ... in order. Wait until the other warpgroup has waited
        // for the last k tile of tile j - 1: then every stage has completed
        // the phase before the one this tile waits for.
        if (j % NCONS != cw) continue;
        const int first = j * ktiles;
        s = first % STAGES;
        phase = (uint32_t)((first / STAGES) & 1);
        if (j > 0) kv_named_barrier(4 + (j & 1), 2 * 128);
      }
      int m0, n0;
      tile_origin(pid, m0, n0);
      // The first k tile's wgmmas overwrite the accumulators (scale-d 0);
      // they are zeroed here only for a unit with no k tiles (and for the
      // diagnostic build without wgmmas).
      if (kb <= ka + kFirst || KEVO_DIAG_NO_MMA) {
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
          for (int i = 0; i < kAcc; ++i) acc[mt][i] = 0.0f;
      }
      int prev_s = 0;
      for (int kt = ka + kFirst; kt < kb; kt += kKStep) {
        kv_mbar_wait(bar_full + 8 * s, phase);
        if constexpr (PING) {
          // Tile j + 1 (the other warpgroup's) may start waiting on the ring.
          if (kt == ktiles - 1 && pid + pid_step < tiles_c) kv_named_arrive(4 + ((j + 1) & 1), 2 * 128);
        }
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
          for (int i = 0; i < kAcc; ++i) kv_fence_operand(acc[mt][i]);
        kv_wgmma_fence();
        const int scale_d = kt > ka + kFirst;
        const uint64_t da_s = kv_desc_advance(da0, s, kAStage);
        const uint64_t db_s = kv_desc_advance(db0, s, kBStage);
#pragma unroll
        for (int ks = 0; ks < BK / 16 * !KEVO_DIAG_NO_MMA; ++ks) {
          const uint64_t db = kv_desc_advance(db_s, ks * 16 * 128);
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt) {
            const uint64_t da = kv_desc_advance(da_s, mt * 64 * 128 + ks * 32);
            kv_wgmma_bf16<BN>(acc[mt], da, db, ks == 0 ? scale_d : 1);
          }
        }
        kv_wgmma_commit();
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
          for (int i = 0; i < kAcc; ++i) kv_fence_operand(acc[mt][i]);
        if constexpr (KEEP) {
          kv_wgmma_wait<1>();  // the previous tile's wgmmas are done: release its stage
          if (kt > ka + kFirst) release(prev_s);
        } else {
          kv_wgmma_wait<0>();
          if (!EPIR || kt + 1 < kb) release(s);  // EPIR: the epilogue releases the last one
        }
        prev_s = s;
        if ((s += kKStep) >= STAGES) {  // STAGES is even with KWG: s wraps to 0 or 1
          s -= STAGES;
          phase ^= 1;
        }
      }
      kv_wgmma_wait<0>();
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int i = 0; i < kAcc; ++i) kv_fence_operand(acc[mt][i]);
      // The last k tile's stage: the producer may need it for the next tile
      // (with EPIR the epilogue stages its first box there and releases it).
      if constexpr (KEEP && !EPIR) {
        if (kb > ka + kFirst) release(prev_s);
      }
      if constexpr (KWG) {
        // Every wgmma of both warpgroups has read its stages (and every load
        // into them has landed: each was waited for), so the ring is free: the
        // second warpgroup leaves its sums there, the first adds them.
        kv_named_barrier(1, 2 * 128);
        if (cw == 1) {
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
            for (int i = 0; i < kAcc; ++i) part[(mt * kAcc + i) * 128 + tid_wg] = acc[mt][i];
        }
        kv_named_barrier(1, 2 * 128);
        if (cw == 1) continue;
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
          for (int i = 0; i < kAcc; ++i) acc[mt][i] += part[(mt * kAcc + i) * 128 + tid_wg];
      }
      if constexpr (SK) {
        const int ct = (int)threadIdx.x - 128;  // 0 .. kConsThreads - 1
        if (kb < ktiles) {
          // The start (or a middle part) of a tile whose end a higher CTA
          // holds: the partial goes to this CTA's slot, then its flag.
          const int slot = pid_first * kClu + (int)crank;
          float* part_out = g_sk_part + (size_t)slot * (kConsThreads * kMT * kAcc);
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
            for (int i = 0; i < kAcc; ++i)
              __stcg(part_out + (size_t)(mt * kAcc + i) * kConsThreads + ct, acc[mt][i]);
          __threadfence();
          kv_named_barrier(1, kConsThreads);  // every consumer's share is written
          if (ct == 0) kv_flag_raise(g_sk_ready + slot, epoch);
          if constexpr (EPIR) release(prev_s);  // the stage held for the epilogue it skips
          continue;
        }
        if (ka > 0) {
          // The end of a tile whose earlier k tiles lower CTAs hold: add
          // their partials, lowest first.
          KvHolderScan holders = kv_unit_holders(sk_slots, j);
          for (int q; kv_next_holder(holders, pid_step, pid_first, q);) {
            const int slot = q * kClu + (int)crank;
            kv_flag_wait(g_sk_ready + slot, epoch);
            const float* part_in = g_sk_part + (size_t)slot * (kConsThreads * kMT * kAcc);
#pragma unroll
            for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
              for (int i = 0; i < kAcc; ++i) acc[mt][i] += __ldcg(part_in + (size_t)(mt * kAcc + i) * kConsThreads + ct);
          }
        }
      }

      // ------------------------------------------------------------ epilogue
#if KEVO_DIAG_NO_EPILOGUE || KEVO_DIAG_EPI_NO_STAGE
      // Diagnostics only: every accumulator is read (summed, stored never),
      // or ptxas drops the wgmmas whose results go unread, asm volatile or
      // not: with one accumulator read, half of WGM 128's (2026-12-06), with
      // none, all. bench/gpu_gemm_epilogue.sh counts each build's HGMMAs.
      {
        float keep = 0.0f;
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
          for (int i = 0; i < kAcc; ++i) keep += acc[mt][i];
        if (keep == 1.0e-38f && m0 < 0) C[0] = __float2bfloat16(keep);
      }
#endif
#if KEVO_DIAG_NO_EPILOGUE
      // A diagnostic, never a knob (its output is wrong): the main loop
      // alone, to bound what an epilogue hidden behind the next tile's main
      // loop could gain.
      if constexpr (EPIR) release(prev_s);
      continue;
#endif
      if constexpr (SPLIT > 1) {
        // All consumers must be done reading the stages before any overwrites them.
        kv_named_barrier(1, NCONS * 128);
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
      } else if constexpr (EPI == 1) {
        if constexpr (PERSIST)
          kv_named_barrier(2 + cw, 128);  // this warpgroup has stored its previous tile's rows
        else
          kv_named_barrier(1, NCONS * 128);  // all consumers are done reading the stages
        __nv_bfloat16* sC = reinterpret_cast<__nv_bfloat16*>(smem_raw + (sOut - raw));
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
        kv_named_barrier(2 + cw, 128);  // this warpgroup's rows are staged
        constexpr int kCpr = BN / 8;
        constexpr int kIters = WGM * kCpr / 128;
        static_assert(kIters * 128 == WGM * kCpr, "C tile chunks must divide among 128 threads");
#pragma unroll 4
        for (int i = 0; i < kIters; ++i) {
          const int id = tid_wg + i * 128;
          const int row = cw * WGM + id / kCpr;  // in the staging
          const int ch = id % kCpr;
          const int gm = m0 + crow + id / kCpr;
          const int gn = n0 + ch * 8;
          if (gm < M && gn < N)
            *reinterpret_cast<uint4*>(C + (size_t)gm * N + gn) =
                *reinterpret_cast<const uint4*>(&sC[row * kEpiLd + ch * 8]);
        }
      } else if constexpr (EPI == 2) {
        // This warpgroup's WGM rows go to shared memory as BN/64 boxes of
        // WGM x 64 in the 128-byte swizzle (16-byte chunk c of row r at chunk
        // c ^ (r % 8): a warp's stores hit 32 distinct banks), and one thread
        // stores the boxes with TMA, which clips rows and columns past C;
        // kEpiBoxes of them at a time (EPIB), each pass once TMA has read the
        // boxes of the one before.
        // EPIR: pass 0 goes to this warpgroup's A rows of the last k tile's
        // stage (held since the main loop), which only this warpgroup read.
        const uint32_t sCw = sOut + (uint32_t)(cw * WGM * 64 * kEpiBoxes * 2);
        const uint32_t sHold = sA + (uint32_t)(prev_s * kAStage) + a_row_off;
#pragma unroll
        for (int pass = 0; pass < kEpiPasses; ++pass) {
          const uint32_t sBox = EPIR && pass == 0 ? sHold : sCw;
          unsigned char* box0 = smem_raw + (sBox - raw);
          if (EPIR && pass == 0) {
            kv_named_barrier(2 + cw, 128);  // every warp's wgmmas on the stage are done
          } else if (PERSIST || pass > 0) {
            // The boxes staged here before have been read (with EPIR, pass 0's
            // store, from the held stage, may still be reading).
            if (tid_wg == 0 && !KEVO_DIAG_EPI_NO_WAIT) {
              if (EPIR && pass == 1) kv_bulk_wait_read<1>();
              else kv_bulk_wait_read<0>();
            }
            kv_named_barrier(2 + cw, 128);
          } else {
            kv_named_barrier(1, NCONS * 128);  // all consumers are done reading the stages
          }
          if constexpr (STM) {
            // Lane l gives row l % 8 (+ 8 for matrices 1 and 3) of its 16-byte
            // chunk of 8 columns (+ 8 columns for matrices 2 and 3).
            const int q = lane >> 3;
#pragma unroll
            for (int mt = 0; mt < kMT * !KEVO_DIAG_EPI_NO_STAGE; ++mt)
#pragma unroll
              for (int jj = 0; jj < 8 * kEpiBoxes; jj += 2) {
                const int j = pass * 8 * kEpiBoxes + jj;
                const int r = mt * 64 + 16 * w + (lane & 7) + 8 * (q & 1);
                const int jc = jj + (q >> 1);  // the chunk's 8-column group in this pass
                const uint32_t off = (uint32_t)((jc / 8) * WGM * 128 + r * 128 + (((jc % 8) ^ (lane & 7)) << 4));
                kv_stmatrix_x4(sBox + off, __floats2bfloat162_rn(acc[mt][4 * j], acc[mt][4 * j + 1]),
                               __floats2bfloat162_rn(acc[mt][4 * j + 2], acc[mt][4 * j + 3]),
                               __floats2bfloat162_rn(acc[mt][4 * j + 4], acc[mt][4 * j + 5]),
                               __floats2bfloat162_rn(acc[mt][4 * j + 6], acc[mt][4 * j + 7]));
              }
          } else {
#pragma unroll
            for (int mt = 0; mt < kMT * !KEVO_DIAG_EPI_NO_STAGE; ++mt)
#pragma unroll
              for (int jj = 0; jj < 8 * kEpiBoxes; ++jj) {
                const int j = pass * 8 * kEpiBoxes + jj;  // 8-column group of the tile
                const int r = mt * 64 + 16 * w + g;       // row in this warpgroup's rows; r % 8 == g
                const uint32_t off = (uint32_t)((jj / 8) * WGM * 128 + r * 128 + (((jj % 8) ^ g) << 4) + t4 * 4);
                *reinterpret_cast<__nv_bfloat162*>(box0 + off) =
                    __floats2bfloat162_rn(acc[mt][4 * j], acc[mt][4 * j + 1]);
                *reinterpret_cast<__nv_bfloat162*>(box0 + off + 8 * 128) =
                    __floats2bfloat162_rn(acc[mt][4 * j + 2], acc[mt][4 * j + 3]);
              }
          }
          kv_fence_async_smem();
          kv_named_barrier(2 + cw, 128);  // this warpgroup's boxes are written
          if (tid_wg == 0) {
            const int gm = (KEVO_DIAG_EPI_STORE_SAME ? (int)(blockIdx.x % 16) * BM : m0) + crow;
            const int last_wave = tiles_c - (tiles_c % pid_step ? tiles_c % pid_step : pid_step);
            const bool store = !KEVO_DIAG_EPI_NO_STORE &&
                               (KEVO_DIAG_EPI_STORE_ONLY == 0 || (pid >= last_wave) == (KEVO_DIAG_EPI_STORE_ONLY == 1));
            if (gm < M) {
#pragma unroll
              for (int b = 0; b < kEpiBoxes; ++b) {
                const int gn = (KEVO_DIAG_EPI_STORE_SAME ? (int)(blockIdx.x / 16) * BN : n0) + 64 * (pass * kEpiBoxes + b);
                if (gn < N && store) kv_tma_store_2d(&tmC, sBox + (uint32_t)(b * WGM * 128), gn, gm);
              }
            }
            kv_bulk_commit();
          }
        }
        if constexpr (EPIR) {
          // The held stage back to the producer: this warpgroup's other warps
          // arrive now; its storing thread once TMA has read pass 0's box (the
          // stage completes with the last arrival).
          if (tid_wg == 0 && !KEVO_DIAG_EPI_NO_WAIT) kv_bulk_wait_read<kEpiPasses - 1>();
          release(prev_s);
        }
      } else {
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          const int gm = m0 + crow + mt * 64 + 16 * w + g;
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
    // The TMA stores read shared memory and write C after they are issued:
    // both must be done before the CTA exits.
    if constexpr (EPI == 2 && SPLIT == 1) {
      if (tid_wg == 0) kv_bulk_wait<0>();
    }
  }
  if constexpr (SPLIT > 1) {
    // Every rank's partial tile is in its shared memory. The consumer threads
    // of rank r sum chunks [r*chunks/SPLIT, (r+1)*chunks/SPLIT) of the tile's
    // valid rows (8 columns each) over ranks 0..SPLIT-1 in order, and store bf16.
    // (Not persistent: this CTA has the one tile pid_first.)
    kv_cluster_sync();
    if (wg > 0 && pid_first < tiles_c) {
      int m0, n0;
      tile_origin(pid_first, m0, n0);
      const int rows = min(BM, M - m0);
      constexpr int kCpr = BN / 8;
      const int chunks = rows > 0 ? rows * kCpr : 0;
      const int c_begin = (int)((int64_t)chunks * split_rank / SPLIT);
      const int c_end = (int)((int64_t)chunks * (split_rank + 1) / SPLIT);
      const uint32_t part_local = kv_smem_u32(part);
      for (int id = c_begin + (int)threadIdx.x - 128; id < c_end; id += NCONS * 128) {
        const int row = id / kCpr;
        const int col = (id % kCpr) * 8;
        const int gn = n0 + col;
        if (gn >= N) continue;  // N % 8 == 0: a chunk is all in or all out
        float v[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
        const uint32_t off = part_local + (uint32_t)(row * kPartLd + col) * 4u;
#pragma unroll
        for (int q = 0; q < SPLIT; ++q) {
          float p[8];
          kv_ld_cluster_f32x8(p, off, (uint32_t)q);
#pragma unroll
          for (int e = 0; e < 8; ++e) v[e] += p[e];
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
  if constexpr (kClu > 1 || SPLIT > 1) kv_cluster_sync();
  // TAIL: the tail launch ends after the main one, so the work after it in
  // the stream (the caller's end event included) waits for both.
  if constexpr (TAIL && kPart == 1) asm volatile("griddepcontrol.wait;\n" ::: "memory");
}

// The CTAs of a kClu-cluster launch of this module that can be resident at
// once on an idle GPU (one per multiprocessor, in whole clusters: a GPC whose
// SM count is odd leaves one SM out of clusters of two, and clusters of four
// leave 12 of an H100's 132 SMs out); 0 on an error.
//
// The occupancy query needs the kernel's dynamic shared memory allowed first
// (over 48 KB it fails otherwise), so it sets that itself: TAIL asks before
// any launch. Where the query fails there is no guess for clusters, whose
// residency depends on how the GPCs were cut: the SM count over kClu (33
// clusters of four on an H100, where 30 fit) launched clusters that waited
// for others to finish, and made TAIL's split see no idle SMs at all (round
// 19). A failure is not cached.
template <int kClu, int kCdim>
int resident_ctas(int dev) {
  static int resident_dev = -1, resident = 0;
  if (resident_dev != dev) {
    auto kernel = gemm_wgmma_kernel<kClu, kCdim>;
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)(kClu * 1024), 1, 1);
    cfg.blockDim = dim3(kThreads, 1, 1);
    cfg.dynamicSmemBytes = kSmemBytes;
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg) != cudaSuccess || clusters < 1) {
      (void)cudaGetLastError();  // not sticky
      if (kClu > 1) return 0;
      // One CTA per multiprocessor at most (__launch_bounds__(kThreads, 1)).
      int sms = 0;
      if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms < 1) return 0;
      clusters = sms;
    }
    resident = clusters * kClu;
    resident_dev = dev;
  }
  return resident;
}

// One launch over the window C[0:M, 0:N] of a matrix whose rows are ldn
// elements apart (B's too; A's K), on at most max_ctas CTAs when persistent
// (0: as many as are resident). KEVO_OK or an error code.
template <int kClu, int kCdim>
int launch_part(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N, int K, int ldn,
                int max_ctas, bool dependent, cudaStream_t stream) {
  using Shape = ClusterShape<kClu, kCdim>;
  const int64_t tiles_mc = ((M + BM - 1) / BM + Shape::kCM - 1) / Shape::kCM;
  const int64_t tiles_nc = ((N + BN - 1) / BN + Shape::kCN - 1) / Shape::kCN;
  const int64_t tiles = tiles_mc * tiles_nc * kClu;  // a multiple of kClu
  if (tiles > INT32_MAX) return KEVO_ERR_UNSUPPORTED;
  CUtensorMap mapA, mapB, mapC = {};
  if (!kv_tma_map_2d(&mapA, A, (uint64_t)K, (uint64_t)M, BK, BM / Shape::kCN)) return KEVO_ERR_RUNTIME;
  if (!kv_tma_map_2d_ld(&mapB, B, (uint64_t)N, (uint64_t)K, (uint64_t)ldn, 64, BK / Shape::kBParts))
    return KEVO_ERR_RUNTIME;
  if (EPI == 2 && !kv_tma_map_2d_ld(&mapC, C, (uint64_t)N, (uint64_t)M, (uint64_t)ldn, 64, WGM))
    return KEVO_ERR_RUNTIME;
  auto kernel = gemm_wgmma_kernel<kClu, kCdim>;
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes) != cudaSuccess)
    return KEVO_ERR_RUNTIME;
  // The consumers' setmaxnreg.inc would wait for ever for registers the
  // launch does not hold: a build that ptxas gave fewer is refused.
  // (KEVO_DIAG_TAIL_SKIP's tail kernel returns before any setmaxnreg, and
  // ptxas gives it what an empty kernel needs.)
  if (!(KEVO_DIAG_TAIL_SKIP && dependent)) {
    static int regs_fit = -1;
    const int fit = kv_setmaxnreg_check(reinterpret_cast<const void*>(kernel), NCONS, kProducerRegs, regs_fit);
    if (fit <= 0) return fit < 0 ? KEVO_ERR_RUNTIME : KEVO_ERR_UNSUPPORTED;
  }
  // With SK, a CTA (cluster) per k tile at most: fewer tiles than SMs are
  // shared out by their k tiles too, as split-K would.
  int64_t grid = SK ? tiles * ((K + BK - 1) / BK) : tiles;
  if (PERSIST) {
    // As many CTAs as can be resident at once, and no more than the tiles.
    // A cluster that had to wait for a resident one to finish all of its
    // tiles would double the time of its own (and with SK, a CTA waits for
    // lower ones: all of them must be resident at once).
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return KEVO_ERR_RUNTIME;
    const int resident = resident_ctas<kClu, kCdim>(dev);
    if (resident < 1) return KEVO_ERR_RUNTIME;
    if (grid > resident) grid = resident;
    if (max_ctas > 0 && grid > max_ctas) grid = max_ctas / kClu * kClu;
    if (grid < kClu) return KEVO_ERR_RUNTIME;
    if (SK && grid > kSkSlots) grid = kSkSlots / kClu * kClu;  // a workspace slot each
  }
  // The launch's number: a stream-K flag raised by an earlier launch (one
  // that was stopped half-way included) never passes for this one's.
  static unsigned launches = 0;
  if (++launches == 0) launches = 1;
  if (!dependent) {
    kernel<<<dim3((unsigned)grid, SPLIT), kThreads, kSmemBytes, stream>>>(mapA, mapB, mapC, C, M, N, K, launches);
    return cudaGetLastError() == cudaSuccess ? KEVO_OK : KEVO_ERR_RUNTIME;
  }
  // A programmatic dependent launch: it may start before the launch ahead
  // of it in the stream ends (TAIL).
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3((unsigned)grid, SPLIT, 1);
  cfg.blockDim = dim3(kThreads, 1, 1);
  cfg.dynamicSmemBytes = kSmemBytes;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, kernel, mapA, mapB, mapC, C, M, N, K, launches) == cudaSuccess ? KEVO_OK
                                                                                                  : KEVO_ERR_RUNTIME;
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
#if TAIL
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
      return KEVO_ERR_RUNTIME;
    const int main_ctas = resident_ctas<CLUSTER, CDIM>(dev);
    if (main_ctas < 1) return KEVO_ERR_RUNTIME;
    const int tail_ctas = (sms - main_ctas) / TAIL * TAIL;
    // The SMs clusters of four leave idle take a band of C's last tile rows
    // or columns (kv_tail_split), if one beats a single launch.
    const int tm = (M + BM - 1) / BM, tn = (N + BN - 1) / BN;
    const KvTailSplit split = kv_tail_split(tm, tn, MainShape::kCM, MainShape::kCN, TAIL, main_ctas, tail_ctas);
    if (split.tiles > 0) {
      // The main launch, then the tail as a programmatic dependent launch on
      // the same stream: it starts once every main CTA has (they take their
      // SMs first), and it ends after the main launch (griddepcontrol.wait).
      int m_main, n_main;
      kv_tail_main_part(split, M, N, BM, BN, m_main, n_main);
      const int rc = launch_part<CLUSTER, CDIM>(A, B, C, m_main, n_main, K, N, main_ctas, false, stream);
      if (rc != KEVO_OK) return rc;
      const __nv_bfloat16* A2 = split.along_n ? A : A + (size_t)m_main * K;
      const __nv_bfloat16* B2 = split.along_n ? B + n_main : B;
      __nv_bfloat16* C2 = split.along_n ? C + n_main : C + (size_t)m_main * N;
      const int m_tail = split.along_n ? M : M - m_main, n_tail = split.along_n ? N - n_main : N;
      return launch_part<TAIL, 0>(A2, B2, C2, m_tail, n_tail, K, N, tail_ctas, true, stream);
    }
#endif
    return launch_part<CLUSTER, CDIM>(A, B, C, M, N, K, N, 0, false, stream);
  } else {
    const int rc = kv_gemm_fallback(A, B, C, M, N, K, stream);
    if (rc != KEVO_OK) return rc;
  }
  return cudaGetLastError() == cudaSuccess ? KEVO_OK : KEVO_ERR_RUNTIME;
}
