// kevo's NKI seed families (targets/trainium/kernels) checked numerically in
// kevo's NumPy model of NKI (targets/trainium/model): kevo's own inputs and
// CPU reference, every knob value, the operators' ragged check shapes, bf16
// and f32. The model is not the Neuron compiler, simulator or hardware: what
// passes here is right arithmetic under the NKI rules the model enforces,
// not a kernel verified on Trainium. Needs a Python with NumPy (make test's
// setup installs python3-numpy); skips, saying so, where there is none.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/knobs.h"
#include "core/operator.h"
#include "core/paths.h"
#include "core/process.h"
#include "eval/compare.h"
#include "support/test_support.h"

namespace kevo {
namespace {

// A Python that imports NumPy: KEVO_NEURON_PYTHON, the system's, PATH's.
std::string numpy_python() {
  std::vector<std::string> candidates;
  if (const char* p = std::getenv("KEVO_NEURON_PYTHON"); p && *p) candidates.push_back(p);
  candidates.push_back("/usr/bin/python3");
  candidates.push_back("python3");
  for (const auto& py : candidates) {
    SpawnOptions opt;
    opt.argv = {py, "-c", "import numpy"};
    try {
      ProcessResult r = run_process(opt, 60);
      if (r.exit_code && *r.exit_code == 0) return py;
    } catch (const std::exception&) {
    }
  }
  return "";
}

struct ModelRun {
  nlohmann::json result;
  std::vector<std::vector<char>> outputs;
};

// Runs `family` with `knobs` on kevo's inputs of `shapes` in the model.
ModelRun run_in_model(const std::string& python, const Operator& op, const std::filesystem::path& family,
                      const KnobValues& knobs, const std::vector<Shape>& shapes, DType dtype,
                      const std::vector<double>& scalars, uint64_t seed) {
  const auto dir = test::temp_dir("nki-model");
  nlohmann::json job = {{"candidate", family.string()}, {"scalars", scalars}};
  nlohmann::json k = nlohmann::json::object();
  for (const auto& [name, v] : knobs) k[name] = v;
  job["knobs"] = k;
  const std::vector<DType> dtypes = op.tensor_dtypes(dtype);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto path = dir / fmt::format("t{}.bin", i);
    nlohmann::json spec = {{"path", path.string()}, {"dtype", std::string(dtype_name(dtypes[i]))},
                           {"shape", shapes[i]}};
    if (i < op.n_inputs()) {
      std::vector<char> data(static_cast<size_t>(numel(shapes[i])) * dtype_size(dtypes[i]));
      generate_input(op, i, TensorView{dtypes[i], shapes[i], data.data()}, seed);
      std::ofstream(path, std::ios::binary).write(data.data(), static_cast<std::streamsize>(data.size()));
      job["inputs"].push_back(spec);
    } else {
      job["outputs"].push_back(spec);
    }
  }
  const auto job_path = dir / "job.json";
  std::ofstream(job_path) << job.dump();
  SpawnOptions opt;
  opt.argv = {python, "-B", (test::repo_dir() / "targets" / "trainium" / "model" / "kevo_nki_model.py").string(),
              job_path.string()};
  ProcessResult r = run_process(opt, 120, 1 << 20);
  ModelRun run;
  run.result = nlohmann::json::parse(r.out, nullptr, false);
  if (run.result.is_discarded())
    run.result = {{"error", "no result"}, {"what", r.out + r.err}};
  for (size_t i = op.n_inputs(); i < shapes.size(); ++i) {
    std::vector<char> data(static_cast<size_t>(numel(shapes[i])) * dtype_size(dtypes[i]));
    std::ifstream(dir / fmt::format("t{}.bin", i), std::ios::binary)
        .read(data.data(), static_cast<std::streamsize>(data.size()));
    run.outputs.push_back(std::move(data));
  }
  return run;
}

CheckReport check_against_reference(const Operator& op, const std::vector<Shape>& shapes, DType dtype,
                                    const std::vector<double>& scalars, uint64_t seed, const ModelRun& run) {
  const std::vector<DType> dtypes = op.tensor_dtypes(dtype);
  std::vector<std::vector<char>> in_data, ref_data;
  std::vector<ConstTensorView> in, got, want;
  std::vector<TensorView> ref;
  for (size_t i = 0; i < op.n_inputs(); ++i) {
    in_data.emplace_back(static_cast<size_t>(numel(shapes[i])) * dtype_size(dtypes[i]));
    generate_input(op, i, TensorView{dtypes[i], shapes[i], in_data.back().data()}, seed);
  }
  for (size_t i = 0; i < op.n_inputs(); ++i) in.emplace_back(dtypes[i], shapes[i], in_data[i].data());
  for (size_t i = op.n_inputs(); i < shapes.size(); ++i)
    ref_data.emplace_back(static_cast<size_t>(numel(shapes[i])) * dtype_size(dtypes[i]));
  for (size_t i = op.n_inputs(), o = 0; i < shapes.size(); ++i, ++o) {
    ref.push_back(TensorView{dtypes[i], shapes[i], ref_data[o].data()});
    got.emplace_back(dtypes[i], shapes[i], run.outputs[o].data());
  }
  op.reference(in, scalars, ref);
  for (const auto& r : ref) want.emplace_back(r);
  return compare_outputs(op, got, want, op.default_compares(dtype, shapes));
}

std::vector<double> scalars_of(const Operator& op) {
  std::vector<double> s;
  for (const auto& d : op.scalars()) s.push_back(op.name() == "scaled_softmax" ? 0.125 : d.default_value.value_or(0));
  return s;
}

class NkiModel : public ::testing::Test {
 protected:
  void SetUp() override {
    python_ = numpy_python();
    if (python_.empty())
      GTEST_SKIP() << "no Python with NumPy (KEVO_NEURON_PYTHON, /usr/bin/python3, python3): "
                      "make test's setup installs python3-numpy";
  }
  std::string python_;
};

TEST_F(NkiModel, SeedFamiliesAreRightAtEveryKnobValue) {
  const auto root = test::repo_dir() / "targets" / "trainium" / "kernels";
  int families = 0, runs = 0;
  for (const char* name : {"rmsnorm", "scaled_softmax", "layernorm", "gemm"}) {
    const Operator& op = operators().get(name);
    for (const auto& f : std::filesystem::directory_iterator(root / name)) {
      if (f.path().extension() != ".py") continue;
      ++families;
      const KnobSpace space = KnobSpace::parse_source(read_text_file(f.path()), f.path().string());
      std::vector<KnobValues> points = {space.defaults()};
      for (const auto& kd : space.knobs())
        for (int64_t v : kd.values)
          if (v != kd.default_value) {
            KnobValues p = space.defaults();
            p[kd.name] = v;
            points.push_back(p);
          }
      for (const auto& knobs : points)
        for (const auto& given : op.small_check_shapes())
          for (DType dtype : {DType::bf16, DType::f32}) {
            const std::vector<Shape> shapes = op.bind_shapes(given, "test");
            const uint64_t seed = 7 + static_cast<uint64_t>(runs);
            const ModelRun run = run_in_model(python_, op, f.path(), knobs, shapes, dtype, scalars_of(op), seed);
            ++runs;
            const std::string what = fmt::format("{} {} {} {}", f.path().filename().string(), name,
                                                 knobs_to_string(knobs), shape_str(shapes[0]));
            ASSERT_TRUE(run.result.value("ok", false)) << what << ": " << run.result.dump();
            const CheckReport c = check_against_reference(op, shapes, dtype, scalars_of(op), seed, run);
            EXPECT_TRUE(c.passed) << what << " " << dtype_name(dtype) << ": " << c.mismatches
                                  << " mismatches, max abs err " << c.max_abs_err << " " << c.note;
          }
    }
  }
  EXPECT_GE(families, 4);
  EXPECT_GT(runs, 40);
}

// The check can fail: a kernel that forgets eps, and one that breaks an NKI
// rule the model enforces (the engines do not read HBM) is a compile error
// at its line.
TEST_F(NkiModel, AWrongKernelFailsAndABrokenRuleIsACompileError) {
  const Operator& op = operators().get("rmsnorm");
  const std::string seed_text =
      read_text_file(test::repo_dir() / "targets" / "trainium" / "kernels" / "rmsnorm" / "rows.py");
  const auto dir = test::temp_dir("nki-model-wrong");
  const std::vector<Shape> shapes = op.bind_shapes({{"x", {5, 1}}}, "test");
  // Without eps, rows of one small element come out wrong.
  std::string no_eps = seed_text;
  const auto at = no_eps.find("operand0=1.0 / n, op1=nl.add, operand1=eps");
  ASSERT_NE(at, std::string::npos);
  no_eps.replace(at, std::string("operand0=1.0 / n, op1=nl.add, operand1=eps").size(), "operand0=1.0 / n");
  std::ofstream(dir / "no_eps.py") << no_eps;
  KnobValues knobs = KnobSpace::parse_source(seed_text, "rows.py").defaults();
  const std::vector<double> scalars = {0.5};  // large enough to matter
  ModelRun run = run_in_model(python_, op, dir / "no_eps.py", knobs, shapes, DType::f32, scalars, 3);
  ASSERT_TRUE(run.result.value("ok", false)) << run.result.dump();
  EXPECT_FALSE(check_against_reference(op, shapes, DType::f32, scalars, 3, run).passed);

  // The Scalar engine reading x straight from HBM.
  std::string from_hbm = seed_text;
  const std::string load = "data=xt[0:pr, 0:n],\n                            reduce_op=nl.add";
  const auto at2 = from_hbm.find(load);
  ASSERT_NE(at2, std::string::npos);
  from_hbm.replace(at2, load.size(), "data=x[r0:r0 + pr, 0:n],\n                            reduce_op=nl.add");
  std::ofstream(dir / "from_hbm.py") << from_hbm;
  run = run_in_model(python_, op, dir / "from_hbm.py", knobs, shapes, DType::f32, scalars, 3);
  EXPECT_EQ(run.result.value("error", ""), "compile_error") << run.result.dump();
  EXPECT_NE(run.result.value("what", "").find("is in hbm"), std::string::npos) << run.result.dump();
  EXPECT_GT(run.result.value("line", 0), 0) << run.result.dump();
}

}  // namespace
}  // namespace kevo

namespace kevo {
namespace {

// The trainium target under KEVO_NKI_MODEL=1, as a user runs it: kevo eval
// and kevo run on a small task, candidates that break an NKI rule, print a
// made-up result line, or import what they may not.
class OnNkiModel : public NkiModel {
 protected:
  void SetUp() override {
    NkiModel::SetUp();
    if (IsSkipped()) return;
    dir_ = test::temp_dir("on-nki-model");
    task_ = dir_ / "rmsnorm.json";
    std::ofstream(task_) << R"({"name": "rmsnorm-small", "operator": "rmsnorm", "dtype": "bf16",
      "shapes": {"x": [130, 300]}, "target": "trainium",
      "timing": {"min_time_ms": 10, "min_samples": 3},
      "search": {"strategy": "mcts", "batch": 2, "stop": {"max_minutes": 0.5}}})";
    env_ = {"KEVO_NKI_MODEL=1", "KEVO_NEURON_PYTHON=" + python_};
  }
  nlohmann::json eval(const std::filesystem::path& kernel) {
    ProcessResult r = test::run_kevo(dir_, (dir_ / "k.db").string(),
                                     {"eval", "--task", task_.string(), kernel.string(), "--json"}, env_);
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    if (j.is_discarded()) return {{"result", {{"status", "no json"}, {"detail", r.out + r.err}}}};
    return j;
  }
  std::filesystem::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }
  std::string seed() {
    return read_text_file(test::repo_dir() / "targets" / "trainium" / "kernels" / "rmsnorm" / "rows.py");
  }
  std::filesystem::path dir_, task_;
  std::vector<std::string> env_;
};

TEST_F(OnNkiModel, ASeedIsCheckedAndTimed) {
  const nlohmann::json j = eval(test::repo_dir() / "targets" / "trainium" / "kernels" / "rmsnorm" / "rows.py");
  EXPECT_EQ(j["result"].value("status", ""), "ok") << j.dump();
  EXPECT_GE(j["result"]["checks"].size(), 4u) << j.dump();  // the ragged shapes and the task's
}

TEST_F(OnNkiModel, ABrokenNkiRuleIsACompileErrorAtItsLine) {
  std::string text = seed();
  // A 256-partition tile.
  const std::string from = "w_all = nl.ndarray((P, n)";
  const auto at = text.find(from);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, from.size(), "w_all = nl.ndarray((2 * P, n)");
  const nlohmann::json j = eval(write("wide.py", text));
  EXPECT_EQ(j["result"].value("status", ""), "compile_error") << j.dump();
  EXPECT_NE(j["result"].value("detail", "").find("at most 128 partitions"), std::string::npos) << j.dump();
  EXPECT_NE(j["result"].value("detail", "").find("line "), std::string::npos) << j.dump();
}

TEST_F(OnNkiModel, AMadeUpResultLineIsNotTheModels) {
  // Prints what the model's answer looks like, then leaves the output unwritten.
  std::string text = seed();
  const std::string from = "    return y\n";
  const auto at = text.rfind(from);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, from.size(),
               "    print('{\"phase\": 0, \"ok\": true, \"seconds\": 0.001, \"samples\": []}')\n"
               "    return nl.ndarray((rows, n), dtype=x.dtype, buffer=nl.shared_hbm)\n");
  const nlohmann::json j = eval(write("liar.py", text));
  EXPECT_EQ(j["result"].value("status", ""), "mismatch") << j.dump();  // NaN: never written
}

TEST_F(OnNkiModel, ACandidateImportsOnlyNki) {
  std::string text = seed();
  text.insert(text.find("import nki\n"), "import os\n");
  const nlohmann::json j = eval(write("os.py", text));
  EXPECT_EQ(j["result"].value("status", ""), "rejected") << j.dump();
  EXPECT_NE(j["result"].value("detail", "").find("imports only nki"), std::string::npos) << j.dump();
}

TEST_F(OnNkiModel, ASearchFindsAndKeepsACheckedBest) {
  ProcessResult r = test::run_kevo(dir_, (dir_ / "run.db").string(),
                                   {"run", task_.string(), "--max-minutes", "0.3", "-o",
                                    (dir_ / "best.py").string()},
                                   env_);
  ASSERT_TRUE(r.exit_code && *r.exit_code == 0) << r.out << r.err;
  EXPECT_NE(r.out.find("best "), std::string::npos) << r.out;
  const std::string best = read_text_file(dir_ / "best.py");
  EXPECT_NE(best.find("def kevo_nki("), std::string::npos);
}

}  // namespace
}  // namespace kevo
