// Reading what Neuron's profiler says about an NKI kernel: neuron-explorer's
// summary (`view --output-format summary-json`) and, when the runner could
// read them, rows of its tables (Metadata, Instruction, DmaPacket,
// TensorInfo), and the bounds the profile implies: how long the DMA queues
// and each engine were busy, how long they would need at the hardware's
// rates, the perfect-pipeline time and the bottleneck engine. Pure
// arithmetic on recorded documents: tested without a Neuron SDK.
//
// The document the trainium runner hands kevo (its "profile" event):
//   {"summary": {<summary-json fields of the kernel>},
//    "metadata": {"dma_ddr_bandwidth": B/s, "tensor_engine_num_rows": n,
//                 "tensor_engine_num_cols": n, "tensor_engine_clock_freq": GHz,
//                 "instance_type": "trn2.48xlarge"},
//    "active": [{"start_ts": ns, "end_ts": ns, "engine": "tensor"}],
//    "instructions": [{"start_ts": ns, "end_ts": ns, "engine": "Tensor",
//                      "opcode": "MATMUL", "tensor_instruction_type": "REGULAR",
//                      "adjusted_flops": n, "nki_source_location": "k.py:42"}],
//    "dma": [{"start_ts": ns, "end_ts": ns, "transfer_bytes": n, "queue_type": "input"}],
//    "tensors": [{"variable_name": "input0", "type": "IN", "size": n}]}
// The rows are those of the profile's ActiveTime, Instruction, DmaPacket and
// TensorInfo tables, with the columns the bounds need (aws-neuron-sdk
// tools/neuron-explorer/profile-schema-reference.rst, schema 7.4.0); the
// summary's fields are those of its Summary table (times in seconds,
// *_percent as fractions of 1). Every part but "summary" may be missing:
// the bounds use what is there, as the Neuron profile-querying skill does
// (memory bound = DMA packets merged; ideal = bytes the DMA queues moved
// over dma_ddr_bandwidth; compute ideal = MATMUL adjusted flops over
// rows x cols x 2 x clock; perfect pipeline = the busiest engine).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/eval_result.h"

namespace kevo::trainium {

// A half-open time interval, in nanoseconds.
struct Interval {
  double start = 0, end = 0;
};
// The length of the union of the intervals: time during which at least one
// of them was active (overlaps counted once).
double merged_length(std::vector<Interval> intervals);

struct NeuronInstruction {
  double start_ns = 0, end_ns = 0;
  std::string engine;   // Tensor, Vector, Scalar, GpSimd, Sync (as the profile names it)
  std::string opcode;
  std::string tensor_type;  // tensor_instruction_type: REGULAR or TRANSPOSE
  double adjusted_flops = 0;
  std::string location;  // "file.py:42": nki_source_location, else the BIR debug location
};

struct NeuronDma {
  double start_ns = 0, end_ns = 0;
  double bytes = 0;        // transfer_bytes
  std::string queue_type;  // input, output, data, instruction, software_dynamic, ...
};

struct NeuronProfile {
  std::map<std::string, double> summary;  // the summary's numeric fields
  std::string instance_type;
  // The roof the profile reports (0 where it does not).
  double dma_bandwidth = 0;  // bytes per second
  int te_rows = 0, te_cols = 0;
  double te_clock_ghz = 0;
  std::vector<NeuronInstruction> instructions;
  std::vector<NeuronDma> dma;
  // Busy intervals per engine as the profile merged them (ActiveTime).
  std::map<std::string, std::vector<Interval>> active;
  double io_bytes = 0;  // the kernel's own inputs and outputs, once (TensorInfo IN and OUT)

  double field(const std::string& name, double fallback = 0) const;
  bool has(const std::string& name) const { return summary.count(name) != 0; }
};

// neuron-explorer's summary JSON as it prints it (the kernel's fields, or an
// object or list holding them): UserError when no summary is found.
NeuronProfile parse_neuron_summary(const std::string& text);
// The runner's profile document (above): UserError when it is malformed.
NeuronProfile parse_neuron_profile(const nlohmann::json& doc);

// The hardware's rates where the profile's Metadata does not give them
// (the knowledge base's sheet of the instance's chip, per NeuronCore).
struct NeuronRoof {
  double dma_bandwidth = 0;  // bytes per second
  double te_peak_flops = 0;  // FLOP/s of the Tensor engine (bf16)
};
// A hardware sheet's figures (knowledge/corpus/hardware/trn*.json) per
// NeuronCore: the chip's HBM bandwidth and bf16 rate over its cores.
NeuronRoof roof_from_sheet(const nlohmann::json& figures);

struct NeuronBounds {
  double total_s = 0;  // the profiled execution
  // Busy time per engine (intervals merged), "DMA" included: from the
  // Instruction and DmaPacket rows where present, else the summary.
  std::map<std::string, double> engine_s;
  double memory_s = 0;            // DMA busy
  double memory_ideal_s = 0;      // bytes the DMA moved / DMA bandwidth
  double memory_no_reloads_s = 0; // the kernel's inputs and outputs once / DMA bandwidth
  double compute_s = 0;           // Tensor engine busy
  double compute_ideal_s = 0;     // MATMUL and TRANSPOSE flops / Tensor-engine peak
  double compute_useful_s = 0;    // MATMUL flops alone / Tensor-engine peak
  // The time if every engine overlapped perfectly with the others: the
  // busiest engine's time.
  double pipeline_s = 0;
  std::string bottleneck;  // the busiest engine: Tensor, Vector, Scalar, GpSimd or DMA
  double dma_bandwidth = 0, te_peak_flops = 0;  // the roof used
  std::string roof_source;                      // "profile metadata" or "hardware sheet"
  // Time per source line of the kernel (instruction durations summed),
  // hottest first: line number (0 when the location has none) and share.
  struct Line {
    std::string location;
    int64_t line = 0;
    double ns = 0;
    double share = 0;
  };
  std::vector<Line> lines;
};

NeuronBounds neuron_bounds(const NeuronProfile& p, const NeuronRoof& fallback);

// The bounds as profile rows ("neuron.total_s", "neuron.memory_ideal_s",
// "neuron.engine.Vector_s", "neuron.line.time_share" per line, ...).
std::vector<ProfileMetric> neuron_metrics(const NeuronBounds& b);

// What limits the kernel, in kevo's bottleneck words ("dram-bandwidth",
// "memory-latency", "compute", "latency", "spills"), and the sentence for
// the diagnosis, the LLM's prompt and `kevo explain`.
struct NeuronVerdict {
  std::string kind;
  std::string why;
};
NeuronVerdict classify(const NeuronProfile& p, const NeuronBounds& b);

}  // namespace kevo::trainium
