#include "eval/roofline.h"

#include <cmath>

#include <gtest/gtest.h>

#include "support/test_support.h"

namespace kevo {
namespace {

TEST(Roofline, MemoryBoundKernel) {
  // 1024x1024 f32 softmax: 8 MiB moved; at 10 GB/s the floor is 0.839 ms.
  Task t = test::quick_task("scaled_softmax", {{"x", {1024, 1024}}});
  Roof roof = test::fake_roof(10, 1000);
  TimingStats timing = TimingStats::from_samples({1.6777216e-3, 1.6777216e-3}, 1, 0);
  Diagnosis d = diagnose(t, timing, roof);
  EXPECT_EQ(d.bound, "memory");
  EXPECT_NEAR(d.floor_s, 8388608 / 10e9, 1e-12);
  EXPECT_NEAR(d.roof_fraction, 0.5, 1e-9);
  EXPECT_NEAR(d.achieved_gbps, 5.0, 1e-9);
  EXPECT_NE(d.why.find("memory-bound"), std::string::npos);
  EXPECT_NE(d.why.find("50%"), std::string::npos) << d.why;
  EXPECT_FALSE(is_suspect(d, timing));
}

TEST(Roofline, ComputeBoundKernel) {
  Task t = test::quick_task("gemm", {{"A", {512, 512}}, {"B", {512, 512}}});
  Roof roof = test::fake_roof(100, 100);  // floor: 0.268 GFLOP / 100 GFLOP/s
  TimingStats timing = TimingStats::from_samples({0.01}, 1, 0);
  Diagnosis d = diagnose(t, timing, roof);
  EXPECT_EQ(d.bound, "compute");
  EXPECT_NEAR(d.floor_s, 2.0 * 512 * 512 * 512 / 100e9, 1e-12);
  EXPECT_NE(d.why.find("compute-bound"), std::string::npos);
}

// A GPU roof has a tensor-core rate and a CUDA-core fp32 rate: an f32 gemm
// is judged against the fp32 rate, a bf16 one against the tensor cores'.
TEST(Roofline, TheComputeRoofIsTheOneForTheKernelsDtype) {
  Roof roof = test::fake_roof(1e6, 100);  // bandwidth to spare: the gemm is compute-bound
  roof.peak = {{"bf16_tensor", 1, 700000}, {"fp32_fma", 1, 60000}};
  EXPECT_DOUBLE_EQ(roof.peak_for_dtype("f32")->gflops, 60000);
  EXPECT_DOUBLE_EQ(roof.peak_for_dtype("bf16")->gflops, 700000);
  EXPECT_DOUBLE_EQ(roof.peak_for_dtype("f16")->gflops, 700000);
  Task f32 = test::quick_task("gemm", {{"A", {512, 512}}, {"B", {512, 512}}});
  TimingStats timing = TimingStats::from_samples({1e-3}, 1, 0);
  Diagnosis d = diagnose(f32, timing, roof);
  EXPECT_DOUBLE_EQ(d.roof_gflops, 60000);
  EXPECT_NE(d.why.find("fp32_fma"), std::string::npos) << d.why;
  Task bf16 = test::quick_task("gemm", {{"A", {512, 512}}, {"B", {512, 512}}}, {{"dtype", "bf16"}});
  EXPECT_DOUBLE_EQ(diagnose(bf16, timing, roof).roof_gflops, 700000);
  // A roof calibrated before the fp32 rate was measured: the best it has.
  roof.peak = {{"bf16_tensor", 1, 700000}};
  EXPECT_DOUBLE_EQ(roof.peak_for_dtype("f32")->gflops, 700000);
  // The CPU's one kind applies to every dtype.
  roof.peak = {{"fp32_fma", 1, 140}, {"fp32_fma", 2, 100}};
  EXPECT_DOUBLE_EQ(roof.peak_for_dtype("bf16")->gflops, 140);
  EXPECT_DOUBLE_EQ(roof.peak_for_dtype("f32", 2)->gflops, 100);
}

// Two groups of samples are named in the diagnosis; one spread-out group,
// or a few outliers, is not two groups.
TEST(Roofline, BimodalSamplesAreSaid) {
  std::vector<double> two(30, 1e-3);
  for (size_t i = 0; i < 9; ++i) two[i * 3] = 2.1e-3;  // 30% of them twice as slow
  const std::optional<Modes> m = two_modes(two);
  ASSERT_TRUE(m.has_value());
  EXPECT_NEAR(m->slow_share, 0.3, 1e-12);
  EXPECT_NEAR(m->ratio, 2.1, 1e-12);
  Task t = test::quick_task("swiglu", {{"g", {1024, 1024}}});
  Diagnosis d = diagnose(t, TimingStats::from_samples(two, 1, 0), test::fake_roof(10, 1000));
  EXPECT_NE(d.why.find("bimodal: 30% of the samples 2.10x slower"), std::string::npos) << d.why;

  std::vector<double> spread;
  for (int i = 0; i < 30; ++i) spread.push_back(1e-3 * (1 + 0.02 * i));  // 1.0 .. 1.58, even steps
  EXPECT_FALSE(two_modes(spread).has_value());
  std::vector<double> outliers(30, 1e-3);
  outliers[4] = outliers[17] = 5e-3;  // 2 of 30: below a tenth
  EXPECT_FALSE(two_modes(outliers).has_value());
  EXPECT_FALSE(two_modes({1e-3, 2e-3, 1e-3, 2e-3}).has_value());  // too few to tell
}

TEST(Roofline, BelowTheFloorIsSuspect) {
  Task t = test::quick_task("swiglu", {{"g", {1024, 1024}}});
  Roof roof = test::fake_roof(10, 1000);
  const double floor = 3.0 * 4 * 1024 * 1024 / 10e9;
  TimingStats fast = TimingStats::from_samples({0.5 * floor}, 1, 0);
  Diagnosis d = diagnose(t, fast, roof);
  EXPECT_TRUE(is_suspect(d, fast));
  EXPECT_NE(d.why.find("below the floor"), std::string::npos);
  // Within the margin of the roof's own noise: not suspect, but the roof
  // it beat is said to be measured low.
  TimingStats close = TimingStats::from_samples({0.95 * floor}, 1, 0);
  Diagnosis above = diagnose(t, close, roof);
  EXPECT_FALSE(is_suspect(above, close));
  EXPECT_NE(above.why.find("above the measured roof"), std::string::npos) << above.why;
  TimingStats under = TimingStats::from_samples({1.05 * floor}, 1, 0);
  EXPECT_EQ(diagnose(t, under, roof).why.find("above the measured roof"), std::string::npos);
}

TEST(Roofline, PicksTheBandwidthOfTheWorkingSet) {
  Roof r;
  r.bandwidth = {{"copy", 2, 1e6, 80}, {"copy_nt", 2, 1e6, 50}, {"copy", 2, 1e8, 30},
                 {"copy_nt", 2, 1e8, 40}, {"copy", 1, 1e8, 20}};
  EXPECT_DOUBLE_EQ(r.bandwidth_for(5e7)->gbps, 80);   // largest size not above: 1e6
  EXPECT_DOUBLE_EQ(r.bandwidth_for(2e8)->gbps, 40);   // best kind at 1e8
  EXPECT_DOUBLE_EQ(r.bandwidth_for(1e3)->gbps, 80);   // below all: the smallest size
  EXPECT_DOUBLE_EQ(r.bandwidth_for(2e8, 1)->gbps, 20);
  // Over thread counts: one thread can beat two on a small working set.
  r.bandwidth.push_back({"copy", 1, 1e6, 95});
  EXPECT_DOUBLE_EQ(r.bandwidth_for(5e7)->gbps, 95);
  EXPECT_EQ(r.bandwidth_for(5e7)->threads, 1);
  r.peak = {{"fp32_fma", 1, 200}, {"fp32_fma", 2, 410}};
  EXPECT_DOUBLE_EQ(r.peak_for()->gflops, 410);
  EXPECT_DOUBLE_EQ(r.peak_for(1)->gflops, 200);
  // Two threads measured below one: the roof is the best figure measured,
  // with its own thread count, never the one-thread rate times the threads.
  r.peak = {{"fp32_fma", 1, 142.9}, {"fp32_fma", 2, 100.5}};
  EXPECT_DOUBLE_EQ(r.peak_for()->gflops, 142.9);
  EXPECT_EQ(r.peak_for()->threads, 1);
  EXPECT_DOUBLE_EQ(r.peak_for(2)->gflops, 100.5);
}

TEST(Roofline, SecondsPrintInTheUnitOfTheirRoundedValue) {
  EXPECT_EQ(format_seconds(73.2e-6), "73.2 us");
  EXPECT_EQ(format_seconds(0.00099996), "1 ms");
  EXPECT_EQ(format_seconds(0.99996), "1 s");
  EXPECT_EQ(format_seconds(0.000999), "999 us");
  EXPECT_EQ(format_seconds(2.5e-9), "2.5 ns");
  EXPECT_EQ(format_seconds(0), "0 s");
}

TEST(Timing, SeveralShapesCombineAsAWeightedGeometricMean) {
  EXPECT_NEAR(weighted_geomean({2, 8}, {1, 1}), 4, 1e-12);
  EXPECT_NEAR(weighted_geomean({2, 8}, {3, 1}), std::pow(2.0, 1.5), 1e-12);  // 2^((3+3)/4)
  // Medians 2 and 8, weights 1 and 3: exp((ln 2 + 3 ln 8) / 4) = 2^2.5.
  TimingStats a = TimingStats::from_samples({1, 2, 3}, 1, 2);
  TimingStats b = TimingStats::from_samples({4, 8, 16, 8}, 1, 3);
  TimingStats t = combine_shape_timings({a, b}, {1, 3});
  const double objective = std::pow(2.0, 2.5);
  EXPECT_DOUBLE_EQ(t.median_s, objective);
  EXPECT_EQ(t.warmup_calls, 5);
  // Rounds pair the i-th samples (as many as the shorter has), each relative
  // to its shape's median: (0.5, 0.5), (1, 1), (1.5, 2) -> 0.5, 1, 1.5^.25 2^.75,
  // scaled so that the middle one is the objective.
  ASSERT_EQ(t.samples_s.size(), 3u);
  EXPECT_NEAR(t.samples_s[0], 0.5 * objective, 1e-12);
  EXPECT_NEAR(t.samples_s[1], objective, 1e-12);
  EXPECT_NEAR(t.samples_s[2], std::pow(1.5, 0.25) * std::pow(2.0, 0.75) * objective, 1e-12);
  EXPECT_LE(t.p20_s, t.median_s);
  EXPECT_GE(t.p80_s, t.median_s);
  // One shape: its timing as it is.
  TimingStats one = combine_shape_timings({b}, {7});
  EXPECT_EQ(one.samples_s, b.samples_s);
  EXPECT_DOUBLE_EQ(one.median_s, b.median_s);
}

TEST(Roofline, SeveralShapesDiagnoseAgainstTheGeometricMeanOfTheirFloors) {
  Diagnosis a, b;
  a.bound = "memory", a.floor_s = 1e-6, a.roof_fraction = 0.5, a.achieved_gbps = 10;
  b.bound = "memory", b.floor_s = 4e-6, b.roof_fraction = 0.8, b.achieved_gbps = 40;
  TimingStats objective = TimingStats::from_samples({4e-6}, 1, 0);
  Diagnosis d = combine_diagnoses({a, b}, {1, 1}, {"[8, 128]", "[64, 128]"}, objective);
  EXPECT_EQ(d.bound, "memory");
  EXPECT_NEAR(d.floor_s, 2e-6, 1e-18);       // sqrt(1 us * 4 us)
  EXPECT_NEAR(d.roof_fraction, 0.5, 1e-12);  // 2 us of 4 us
  EXPECT_NEAR(d.achieved_gbps, 20, 1e-9);
  EXPECT_NE(d.why.find("[8, 128] 50% (memory-bound), [64, 128] 80% (memory-bound)"),
            std::string::npos)
      << d.why;
  b.bound = "compute";
  EXPECT_EQ(combine_diagnoses({a, b}, {1, 1}, {"a", "b"}, objective).bound, "mixed");
}

TEST(Timing, Quantiles) {
  TimingStats t = TimingStats::from_samples({5, 1, 4, 2, 3}, 1, 0);
  EXPECT_DOUBLE_EQ(t.median_s, 3);
  EXPECT_DOUBLE_EQ(t.p20_s, 1.8);
  EXPECT_DOUBLE_EQ(t.p80_s, 4.2);
  EXPECT_DOUBLE_EQ(t.min_s, 1);
  EXPECT_DOUBLE_EQ(t.mean_s, 3);
  EXPECT_EQ(t.samples_s.front(), 5);  // raw order kept
}

}  // namespace
}  // namespace kevo

namespace kevo {
namespace {

TEST(Roof, BestOfCalibrationsKeepsTheHighestFigures) {
  Roof a, b;
  a.id = 1;
  a.bandwidth = {{"copy", 2, 1e6, 30}, {"copy", 2, 1e9, 10}};
  a.peak = {{"fp32_fma", 2, 400}};
  b.id = 2;
  b.measured_at = "later";
  b.bandwidth = {{"copy", 2, 1e6, 20}, {"copy", 2, 1e9, 12}, {"triad", 2, 1e9, 11}};
  b.peak = {{"fp32_fma", 2, 300}};
  Roof r = Roof::best_of({a, b});
  EXPECT_EQ(r.id, 2);
  EXPECT_EQ(r.measured_at, "later");
  EXPECT_EQ(r.calibrations, 2);
  EXPECT_DOUBLE_EQ(r.bandwidth_for(1e6)->gbps, 30);
  EXPECT_DOUBLE_EQ(r.bandwidth_for(1e9)->gbps, 12);
  EXPECT_DOUBLE_EQ(r.peak_for()->gflops, 400);
  EXPECT_EQ(r.bandwidth.size(), 3u);
}

}  // namespace
}  // namespace kevo
