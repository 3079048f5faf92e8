// kevo's runner for AWS's Neuron tools (targets/trainium/runner/kevo_neuron.py)
// driven by kevo as a user runs it (kevo eval, run, explain), against kevo's
// fake of the tools' documented interfaces (tests/targets/trainium_fake: nki's
// jit/simulate and NEFF artifacts, the compiler's NCC codes and log, nrtpy's
// load/benchmark/trace, neuron-explorer's summary). The fake is NOT the SDK:
// these tests check kevo's side of each interface, not Trainium. Needs the
// system's Python with NumPy (make test's setup installs python3-numpy); skips,
// saying so, where there is none.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/paths.h"
#include "core/process.h"
#include "support/test_support.h"
#include "targets/trainium/neuron_profile.h"

namespace kevo {
namespace {

bool system_numpy() { return std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0; }

class OnNeuronFake : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!system_numpy())
      GTEST_SKIP() << "/usr/bin/python3 has no NumPy (scripts/setup.sh test-trainium installs it)";
    fake_ = test::repo_dir() / "tests" / "targets" / "trainium_fake";
    dir_ = test::temp_dir("on-neuron-fake");
    task_ = dir_ / "rmsnorm.json";
    std::ofstream(task_) << R"({"name": "rmsnorm-small", "operator": "rmsnorm", "dtype": "bf16",
      "shapes": {"x": [130, 300]}, "target": "trainium",
      "timing": {"min_time_ms": 10, "min_samples": 3},
      "search": {"strategy": "mcts", "batch": 2, "stop": {"max_minutes": 0.5}}})";
    env_ = {"KEVO_NKI_MODEL=", "KEVO_NEURON_PYTHON=" + (fake_ / "python3").string(),
            "KEVO_NEURON_EXPLORER=" + (fake_ / "bin" / "neuron-explorer").string(), "KEVO_NEURON_CHECK=device",
            "KEVO_NEURON_TARGET=trn2"};
  }
  nlohmann::json eval(const std::filesystem::path& kernel, std::vector<std::string> extra_env = {}) {
    std::vector<std::string> env = env_;
    for (const std::string& e : extra_env) {  // replaces the same variable's
      const std::string name = e.substr(0, e.find('=') + 1);
      std::erase_if(env, [&](const std::string& v) { return v.rfind(name, 0) == 0; });
      env.push_back(e);
    }
    ProcessResult r = test::run_kevo(dir_, (dir_ / "k.db").string(),
                                     {"eval", "--task", task_.string(), kernel.string(), "--json"}, env);
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    if (j.is_discarded()) return {{"result", {{"status", "no json"}, {"detail", r.out + r.err}}}};
    return j;
  }
  std::filesystem::path seed_path() {
    return test::repo_dir() / "targets" / "trainium" / "kernels" / "rmsnorm" / "rows.py";
  }
  // The seed with `globals` inserted after its imports (the fake's failure knobs).
  std::filesystem::path seed_with(const std::string& name, const std::string& globals) {
    std::string text = read_text_file(seed_path());
    const std::string imports = "import nki.language as nl\n";
    text.insert(text.find(imports) + imports.size(), globals);
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }
  std::filesystem::path fake_, dir_, task_;
  std::vector<std::string> env_;
};

TEST_F(OnNeuronFake, ASeedIsCheckedOnTheDeviceTimedByNrtpyAndProfiled) {
  const nlohmann::json j = eval(seed_path());
  const nlohmann::json& r = j["result"];
  EXPECT_EQ(r.value("status", ""), "ok") << j.dump();
  EXPECT_GE(r["checks"].size(), 4u) << j.dump();  // the ragged shapes and the task's
  ASSERT_TRUE(r.contains("timing")) << j.dump();
  // The fake's cost model: 156.6 kB at 400 GB/s + 4 us, times 1, 1.15, 1.3 or 1.45.
  const double median = r["timing"].value("median_s", 0.0);
  EXPECT_GT(median, 4e-6) << j.dump();
  EXPECT_LT(median, 9e-6) << j.dump();
  // neuron-explorer's summary became kevo's bounds and bottleneck.
  const std::string why = r["diagnosis"].value("why", "");
  EXPECT_NE(why.find("DMA-bound"), std::string::npos) << why;
  EXPECT_NE(why.find("hardware sheet, not measured"), std::string::npos) << why;
  bool engine = false;
  for (const auto& m : r["profile"]) engine |= m.value("metric", "") == "neuron.engine.DMA_s";
  EXPECT_TRUE(engine) << j.dump();
}

// A compiler failure is the candidate's compile error, with the NCC code the
// compiler wrote in its log (or its message), and kevo's error index explains
// the code (what the repair loop shows the LLM).
TEST_F(OnNeuronFake, ACompilerFailureIsClassifiedByItsNccCode) {
  const nlohmann::json j = eval(seed_with("too_many.py", "FAKE_NCC = 'NCC_EVRF007'\n"));
  EXPECT_EQ(j["result"].value("status", ""), "compile_error") << j.dump();
  const std::string detail = j["result"].value("detail", "");
  EXPECT_NE(detail.find("NCC_EVRF007"), std::string::npos) << detail;
  EXPECT_NE(detail.find("compiler log"), std::string::npos) << detail;  // found in log-neuron-cc.txt
  std::ofstream(dir_ / "detail.txt") << detail;
  ProcessResult kb = test::run_kevo(dir_, (dir_ / "k.db").string(),
                                    {"kb", "errors", (dir_ / "detail.txt").string(), "--target", "trainium"});
  EXPECT_NE(kb.out.find("neuron-evrf007"), std::string::npos) << kb.out << kb.err;
  EXPECT_NE(kb.out.find("instruction"), std::string::npos) << kb.out;

  const nlohmann::json m = eval(seed_with("hbm.py", "FAKE_NCC = 'NCC_EOOM001'\nFAKE_NCC_MESSAGE = 1\n"));
  EXPECT_EQ(m["result"].value("status", ""), "compile_error") << m.dump();
  EXPECT_NE(m["result"].value("detail", "").find("NCC_EOOM001"), std::string::npos) << m.dump();
}

// A failure after the NEFF exists is the runtime's: a crash on the phase, not
// a compile error.
TEST_F(OnNeuronFake, ARuntimeFailureAfterTheNeffIsACrash) {
  const nlohmann::json j = eval(seed_with("oob.py", "FAKE_NRT = 1\n"));
  EXPECT_EQ(j["result"].value("status", ""), "crash") << j.dump();
  EXPECT_NE(j["result"].value("detail", "").find("NRT_EXEC_OOB"), std::string::npos) << j.dump();
  EXPECT_TRUE(j["result"]["checks"].empty()) << j.dump();  // the first check ran on the device
}

// KEVO_NEURON_CHECK=simulate: checks in nki.simulate (no device run), the
// timing still on the device: the same runtime fault passes every check and
// stops the timed phase.
TEST_F(OnNeuronFake, ChecksRunInSimulateWhereAsked) {
  const nlohmann::json ok = eval(seed_path(), {"KEVO_NEURON_CHECK=simulate"});
  EXPECT_EQ(ok["result"].value("status", ""), "ok") << ok.dump();
  const nlohmann::json j = eval(seed_with("oob.py", "FAKE_NRT = 1\n"), {"KEVO_NEURON_CHECK=simulate"});
  EXPECT_EQ(j["result"].value("status", ""), "crash") << j.dump();
  EXPECT_GE(j["result"]["checks"].size(), 4u) << j.dump();
  EXPECT_NE(j["result"].value("detail", "").find("NRT_EXEC_OOB"), std::string::npos) << j.dump();
}

TEST_F(OnNeuronFake, ASearchKeepsACheckedBestAndExplainShowsTheProfile) {
  ProcessResult r = test::run_kevo(dir_, (dir_ / "run.db").string(),
                                   {"run", task_.string(), "--max-minutes", "0.3", "-o",
                                    (dir_ / "best.py").string()},
                                   env_);
  ASSERT_TRUE(r.exit_code && *r.exit_code == 0) << r.out << r.err;
  EXPECT_NE(r.out.find("best "), std::string::npos) << r.out;
  EXPECT_NE(read_text_file(dir_ / "best.py").find("def kevo_nki("), std::string::npos);
  ProcessResult e = test::run_kevo(dir_, (dir_ / "run.db").string(), {"explain", "1"}, env_);
  ASSERT_TRUE(e.exit_code && *e.exit_code == 0) << e.out << e.err;
  EXPECT_NE(e.out.find("neuron.memory_ideal_s"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("DMA-bound"), std::string::npos) << e.out;
  EXPECT_EQ(e.out.find("not profiled"), std::string::npos) << e.out;
}

// The profile's tables (as pyarrow reads them from neuron-explorer's parquet)
// become kevo's profile document: Metadata's key/value rows one object, the
// columns the bounds need; kevo's bounds read it. Synthetic rows, built from
// the documented schema.
TEST_F(OnNeuronFake, ProfileTablesBecomeKevosDocument) {
  const std::string code = R"(
import json, sys
sys.path.insert(0, sys.argv[1])
from kevo_neuron import document_from_tables
tables = {
  "Metadata": [{"key": "dma_ddr_bandwidth", "value": 1e9}, {"key": "tensor_engine_num_rows", "value": 128},
               {"key": "tensor_engine_num_cols", "value": 128}, {"key": "tensor_engine_clock_freq", "value": 1.0},
               {"key": "instance_type", "value": "trn2.48xlarge"}],
  "Instruction": [{"start_ts": 0, "end_ts": 400, "duration_ns": 400, "engine": "Tensor", "opcode": "MATMUL",
                   "tensor_instruction_type": "REGULAR", "adjusted_flops": 32768000,
                   "nki_source_location": "candidate.py:31", "extra": 1},
                  {"start_ts": 100, "end_ts": 900, "duration_ns": 800, "engine": "Vector", "opcode": "TENSOR_TENSOR",
                   "nki_source_location": "candidate.py:40"}],
  "DmaPacket": [{"start_ts": 0, "end_ts": 600, "transfer_bytes": 500, "queue_type": "input"},
                {"start_ts": 500, "end_ts": 1000, "transfer_bytes": 300, "queue_type": "output"}],
  "TensorInfo": [{"variable_name": "x", "type": "IN", "size": 400}, {"variable_name": "y", "type": "OUT", "size": 200}],
}
print(json.dumps(document_from_tables({"total_time": 1e-6}, tables)))
)";
  SpawnOptions opt;
  opt.argv = {"/usr/bin/python3", "-B", "-c", code,
              (test::repo_dir() / "targets" / "trainium" / "runner").string()};
  ProcessResult r = run_process(opt, 60, 1 << 20);
  ASSERT_TRUE(r.exit_code && *r.exit_code == 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_FALSE(doc["instructions"][0].contains("extra"));
  using namespace trainium;
  const NeuronProfile p = parse_neuron_profile(doc);
  EXPECT_EQ(p.instance_type, "trn2.48xlarge");
  EXPECT_DOUBLE_EQ(p.dma_bandwidth, 1e9);
  const NeuronBounds b = neuron_bounds(p, NeuronRoof{});
  EXPECT_NEAR(b.memory_s, 1000e-9, 1e-12);            // [0, 600) and [500, 1000) merged
  EXPECT_NEAR(b.memory_ideal_s, 800 / 1e9, 1e-12);    // 800 bytes at 1 GB/s
  EXPECT_NEAR(b.memory_no_reloads_s, 600 / 1e9, 1e-12);
  EXPECT_NEAR(b.compute_ideal_s, 32768000 / (128.0 * 128 * 2 * 1e9), 1e-12);
  EXPECT_EQ(b.bottleneck, "DMA");
  ASSERT_FALSE(b.lines.empty());
  EXPECT_EQ(b.lines[0].line, 40);  // the Vector instruction: 800 of 1200 ns
}

}  // namespace
}  // namespace kevo
