// The Trainium target's reading of Neuron profiles: interval merging, the
// bounds of the Neuron profile-querying skill on its own worked example
// (trn2, 4096^3 bf16 matmul, three versions of the kernel), a summary
// recorded on a trn1.2xlarge (tests/targets/trainium_data/README.md says
// where it comes from), and rows shaped after the documented schema
// (synthetic).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/paths.h"
#include "support/test_support.h"
#include "targets/trainium/neuron_profile.h"

namespace kevo::trainium {
namespace {

TEST(NeuronProfile, MergedLengthCountsOverlapsOnce) {
  EXPECT_DOUBLE_EQ(merged_length({}), 0);
  EXPECT_DOUBLE_EQ(merged_length({{0, 10}}), 10);
  EXPECT_DOUBLE_EQ(merged_length({{0, 10}, {5, 15}}), 15);       // overlap
  EXPECT_DOUBLE_EQ(merged_length({{20, 30}, {0, 10}}), 20);      // unsorted, disjoint
  EXPECT_DOUBLE_EQ(merged_length({{0, 100}, {10, 20}, {30, 40}}), 100);  // nested
  EXPECT_DOUBLE_EQ(merged_length({{0, 10}, {10, 20}}), 20);      // touching
  EXPECT_DOUBLE_EQ(merged_length({{5, 5}, {7, 3}}), 0);          // empty and reversed
}

// One version of the skill's worked example as a profile document: the
// published engine active times, bytes and flops (summary fields) and the
// trn2 NeuronCore's Metadata (435 GB/s; 128 x 128 at 2.4 GHz = 78.6 TFLOP/s).
nlohmann::json worked_example(double total_us, double dma_us, double tensor_us, double vector_us,
                              double dma_bytes) {
  return {{"summary",
           {{"total_time", total_us * 1e-6},
            {"dma_active_time", dma_us * 1e-6},
            {"tensor_engine_active_time", tensor_us * 1e-6},
            {"vector_engine_active_time", vector_us * 1e-6},
            {"scalar_engine_active_time", 0.0},
            {"gpsimd_engine_active_time", 0.0},
            {"dma_transfer_total_bytes", dma_bytes},
            {"inputs_outputs_weights_size_bytes", 3.0 * 4096 * 4096 * 2},
            {"hardware_flops", 2.0 * 4096 * 4096 * 4096},
            {"transpose_flops", 0}}},
          {"metadata",
           {{"dma_ddr_bandwidth", 435e9},
            {"tensor_engine_num_rows", 128},
            {"tensor_engine_num_cols", 128},
            {"tensor_engine_clock_freq", 2.4},
            {"instance_type", "trn2.48xlarge"}}}};
}

TEST(NeuronProfile, TheWorkedTrn2MatmulGivesThePublishedBounds) {
  // V0: 8,602 us, DMA-bound; published bounds: memory 7,906, ideal 2,776,
  // no reloads 231, compute 4,806, compute ideal 1,748, pipeline 7,906 (DMA).
  const NeuronProfile v0 = parse_neuron_profile(worked_example(8602, 7906, 4806, 176, 1207697408.0));
  const NeuronBounds b0 = neuron_bounds(v0, {});
  EXPECT_EQ(b0.roof_source, "profile metadata");
  EXPECT_NEAR(b0.te_peak_flops / 1e12, 78.6, 0.1);
  EXPECT_NEAR(b0.memory_s * 1e6, 7906, 0.5);
  EXPECT_NEAR(b0.memory_ideal_s * 1e6, 2776, 1);
  EXPECT_NEAR(b0.memory_no_reloads_s * 1e6, 231, 1);
  EXPECT_NEAR(b0.compute_s * 1e6, 4806, 0.5);
  EXPECT_NEAR(b0.compute_ideal_s * 1e6, 1748, 1);
  EXPECT_NEAR(b0.compute_useful_s * 1e6, 1748, 1);
  EXPECT_EQ(b0.bottleneck, "DMA");
  EXPECT_NEAR(b0.pipeline_s * 1e6, 7906, 0.5);
  const NeuronVerdict c0 = classify(v0, b0);
  // DMA busy 7,906 us for 2,776 us of bytes: the queues, not the bandwidth.
  EXPECT_EQ(c0.kind, "memory-latency") << c0.why;
  EXPECT_NE(c0.why.find("12.0x the bytes"), std::string::npos) << c0.why;

  // V1 (2,451 us): "DMA -> Tensor": the Tensor engine's 2,163 us is the pipeline.
  const NeuronBounds b1 = neuron_bounds(parse_neuron_profile(worked_example(2451, 1325, 2163, 174, 463e-6 * 435e9)), {});
  EXPECT_EQ(b1.bottleneck, "Tensor");
  EXPECT_NEAR(b1.pipeline_s * 1e6, 2163, 0.5);
  EXPECT_NEAR(b1.memory_ideal_s * 1e6, 463, 1);

  // V2 (1,801 us): Tensor-bound at 1,781 us against 1,748 ideal.
  const NeuronProfile v2 = parse_neuron_profile(worked_example(1801, 819, 1781, 172, 463e-6 * 435e9));
  const NeuronBounds b2 = neuron_bounds(v2, {});
  EXPECT_EQ(b2.bottleneck, "Tensor");
  EXPECT_NEAR(b2.pipeline_s * 1e6, 1781, 0.5);
  const NeuronVerdict c2 = classify(v2, b2);
  EXPECT_EQ(c2.kind, "compute") << c2.why;
  EXPECT_NE(c2.why.find("Tensor engine at 98% of 78.6 TFLOP/s"), std::string::npos) << c2.why;
}

TEST(NeuronProfile, ASummaryRecordedOnTrn1IsVectorBound) {
  const NeuronProfile p =
      parse_neuron_summary(read_text_file(test::source_dir() / "targets" / "trainium_data" /
                                          "trnblas_mp2_energy_summary.json"));
  EXPECT_EQ(p.instance_type, "trn1.2xlarge");
  EXPECT_NEAR(p.field("total_time"), 0.213808, 1e-6);
  // No Metadata in a summary: the roof comes from the trn1 sheet (per core).
  const auto sheet = nlohmann::json::parse(
      read_text_file(test::repo_dir() / "knowledge" / "corpus" / "hardware" / "trn1.json"));
  const NeuronRoof roof = roof_from_sheet(sheet.at("figures"));
  EXPECT_GT(roof.dma_bandwidth, 0);
  const NeuronBounds b = neuron_bounds(p, roof);
  EXPECT_EQ(b.roof_source, "hardware sheet");
  // The summary gives the Vector engine's share, not its seconds.
  EXPECT_NEAR(b.engine_s.at("Vector"), 0.9645396 * 0.213808, 1e-5);
  EXPECT_NEAR(b.engine_s.at("DMA"), 0.2641662 * 0.213808, 1e-5);
  EXPECT_NEAR(b.engine_s.at("Tensor"), 4.83557e-07, 1e-12);  // its seconds, where given
  EXPECT_EQ(b.bottleneck, "Vector");
  EXPECT_NEAR(b.memory_ideal_s, 3288352768.0 / roof.dma_bandwidth, 1e-9);
  const NeuronVerdict v = classify(p, b);
  EXPECT_EQ(v.kind, "compute") << v.why;
  EXPECT_NE(v.why.find("Vector-engine-bound"), std::string::npos) << v.why;
  // The tool's own shape (the fields under the profile's name) reads the same.
  const auto flat = nlohmann::json::parse(read_text_file(
      test::source_dir() / "targets" / "trainium_data" / "trnblas_mp2_energy_summary.json"));
  const NeuronProfile wrapped = parse_neuron_summary(nlohmann::json{{"n_0123", flat}}.dump());
  EXPECT_EQ(wrapped.summary, p.summary);
}

TEST(NeuronProfile, ASummaryWithoutATotalIsRefused) {
  EXPECT_THROW(parse_neuron_summary("not json"), UserError);
  EXPECT_THROW(parse_neuron_summary(R"({"n": {"hbm_read_bytes": 1}})"), UserError);
  EXPECT_THROW(parse_neuron_profile(nlohmann::json{{"metadata", nlohmann::json::object()}}), UserError);
  EXPECT_THROW(parse_neuron_profile(nlohmann::json{{"summary", {{"total_time", 1}}}, {"dma", {1, 2}}}),
               UserError);
}

// Synthetic rows, shaped as the schema documents them.
TEST(NeuronProfile, RowsGiveMergedBusyTimesBytesFlopsAndLines) {
  nlohmann::json doc = {
      {"summary", {{"total_time", 500e-9}}},
      {"metadata",
       {{"dma_ddr_bandwidth", 1e9}, {"tensor_engine_num_rows", 2}, {"tensor_engine_num_cols", 2},
        {"tensor_engine_clock_freq", 1.0}}},
      {"instructions",
       {{{"start_ts", 0}, {"end_ts", 100}, {"engine", "tensor"}, {"opcode", "MATMUL"},
         {"tensor_instruction_type", "REGULAR"}, {"adjusted_flops", 1000},
         {"nki_source_location", "/home/u/k.py:10"}},
        {{"start_ts", 50}, {"end_ts", 150}, {"engine", "tensor"}, {"opcode", "MATMUL"},
         {"tensor_instruction_type", "REGULAR"}, {"adjusted_flops", 1000},
         {"nki_source_location", {"/home/u/k.py:10"}}},
        {{"start_ts", 200}, {"duration_ns", 50}, {"engine", "tensor"}, {"opcode", "MATMUL"},
         {"tensor_instruction_type", "TRANSPOSE"}, {"adjusted_flops", 500},
         {"bir_debug_info_source_location", "/x/y/k.py:12"}},
        {{"start_ts", 0}, {"end_ts", 30}, {"engine", "vector"}, {"opcode", "TENSOR_TENSOR"},
         {"nki_source_location", "k.py:14"}}}},
      {"dma",
       {{{"start_ts", 0}, {"end_ts", 100}, {"transfer_bytes", 1000}, {"queue_type", "input"}},
        {{"start_ts", 80}, {"end_ts", 300}, {"transfer_bytes", 2000}, {"queue_type", "output"}},
        {{"start_ts", 0}, {"end_ts", 10}, {"transfer_bytes", 500}, {"queue_type", "instruction"}},
        {{"start_ts", 400}, {"end_ts", 401}, {"transfer_bytes", 4}, {"queue_type", "data"}}}},
      {"tensors",
       {{{"variable_name", "input0"}, {"type", "IN"}, {"size", 1000}},
        {{"variable_name", "output0"}, {"type", "OUT"}, {"size", 1000}},
        {{"variable_name", "w"}, {"type", "WEIGHT"}, {"size", 99999}}}}};
  NeuronProfile p = parse_neuron_profile(doc);
  NeuronBounds b = neuron_bounds(p, {});
  EXPECT_NEAR(b.engine_s.at("Tensor"), 200e-9, 1e-15);  // [0,150] and [200,250]
  EXPECT_NEAR(b.engine_s.at("Vector"), 30e-9, 1e-15);
  EXPECT_NEAR(b.memory_s, 301e-9, 1e-15);               // every packet, merged
  EXPECT_NEAR(b.memory_ideal_s, 3000 / 1e9, 1e-15);     // not the instruction fetch, not 4 bytes
  EXPECT_NEAR(b.memory_no_reloads_s, 2000 / 1e9, 1e-15);  // IN and OUT once
  EXPECT_NEAR(b.te_peak_flops, 8e9, 1);                 // 2 x 2 x 2 x 1 GHz
  EXPECT_NEAR(b.compute_ideal_s, 2500 / 8e9, 1e-15);
  EXPECT_NEAR(b.compute_useful_s, 2000 / 8e9, 1e-15);   // the transpose does no useful work
  EXPECT_EQ(b.bottleneck, "DMA");
  ASSERT_EQ(b.lines.size(), 3u);
  EXPECT_EQ(b.lines[0].location, "k.py:10");
  EXPECT_EQ(b.lines[0].line, 10);
  EXPECT_NEAR(b.lines[0].share, 200.0 / 280.0, 1e-12);  // durations summed, overlaps too
  EXPECT_EQ(b.lines[1].line, 12);  // from the BIR location, directories dropped
  bool line_metric = false;
  for (const auto& m : neuron_metrics(b))
    if (m.metric == "neuron.line.time_share" && m.source_line == 10) line_metric = true;
  EXPECT_TRUE(line_metric);

  // The profile's own merged ActiveTime rows win over merging instructions.
  doc["active"] = {{{"start_ts", 0}, {"end_ts", 400}, {"engine", "tensor"}}};
  b = neuron_bounds(parse_neuron_profile(doc), {});
  EXPECT_NEAR(b.engine_s.at("Tensor"), 400e-9, 1e-15);
  EXPECT_EQ(b.bottleneck, "Tensor");
  EXPECT_EQ(classify(parse_neuron_profile(doc), b).kind, "compute");
}

}  // namespace
}  // namespace kevo::trainium
