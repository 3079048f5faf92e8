// Plain kernels: a C function or a __global__ function named by the task's
// "entry", with knobs declared in the config, wrapped by a generated
// kevo_kernel / kevo_launch. On the CPU through the kevo binary; on CUDA the
// wrapper compiles with nvcc (skips without it) and runs where a GPU answers.
#include <fstream>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/paths.h"
#include "core/process.h"
#include "core/task.h"
#include "core/task_kernels.h"
#include "core/space.h"
#include "core/store.h"
#include "eval/evaluator.h"
#include "support/scale_rowmax.h"
#include "support/test_support.h"
#include "targets/cuda/cuda_target.h"
#include "targets/wrapper.h"

namespace kevo {
namespace {

// swiglu as a plain C function, TILE elements per step of the outer loop.
const char* kPlainSwiglu = R"(#include <math.h>
#include <stdint.h>
void swiglu_plain(float* y, const float* g, const float* u, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  for (int64_t i = 0; i < n; i += TILE)
    for (int64_t j = i; j < i + TILE && j < n; ++j) y[j] = g[j] / (1.0f + expf(-g[j])) * u[j];
}
)";

const char* kWrongSwiglu = R"(#include <stdint.h>
void swiglu_plain(float* y, const float* g, const float* u, int64_t rows, int64_t cols) {
  for (int64_t j = 0; j < rows * cols; ++j) y[j] = g[j] * u[j];
}
)";

nlohmann::json cpu_task() {
  return {{"operator", "swiglu"},
          {"shapes", {{"g", {32, 257}}}},
          // [M, N] only: the sizes below read two dimensions.
          {"check_shapes", nlohmann::json::array({{{"g", {7, 33}}}})},
          {"timing", {{"min_time_ms", 2}, {"min_samples", 3}}},
          {"tune_params", {{"TILE", {1, 4, 16, 64}}}},
          {"restrictions", nlohmann::json::array({"TILE <= 16"})},
          {"entry",
           {{"kind", "function"},
            {"function", "swiglu_plain"},
            {"args", {"y", "g", "u", "M", "N"}},
            {"sizes", {{"M", "g[0]"}, {"N", "g[1]"}}}}}};
}

class PlainCpu : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::temp_dir("plain-cpu");
    db_ = (dir_ / "kevo.db").string();
    test::store_cpu_roof(db_);  // no command calibrates
    write("task.json", cpu_task().dump());
    write("plain.c", kPlainSwiglu);
    write("wrong.c", kWrongSwiglu);
  }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  ProcessResult kevo(std::vector<std::string> args) {
    return test::run_kevo(dir_, db_, std::move(args));
  }
  std::filesystem::path dir_;
  std::string db_;
};

TEST_F(PlainCpu, RightFunctionPassesAtEveryKnob) {
  for (const char* tile : {"TILE=1", "TILE=16"}) {
    auto r = kevo({"eval", "--task", "task.json", "plain.c", "--knob", tile, "--json"});
    ASSERT_EQ(r.exit_code, 0) << tile << "\n" << r.out << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["result"]["status"], "ok") << r.out;
    // The CPU runner sent the host's load with its samples.
    bool load = false;
    for (const auto& m : j["result"]["profile"]) load |= m["metric"] == "machine.load1";
    EXPECT_TRUE(load) << r.out;
  }
  // The restriction holds: TILE=64 is declared but not allowed.
  auto r = kevo({"eval", "--task", "task.json", "plain.c", "--knob", "TILE=64"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
}

TEST_F(PlainCpu, WrongFunctionMismatches) {
  auto r = kevo({"eval", "--task", "task.json", "wrong.c", "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["result"]["status"], "mismatch") << r.out;
}

TEST_F(PlainCpu, MissingFunctionIsRejected) {
  write("other.c", "void something_else(void) {}\n");
  auto r = kevo({"eval", "--task", "task.json", "other.c", "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["result"]["status"], "rejected") << r.out;
  EXPECT_NE(j["result"]["detail"].get<std::string>().find("swiglu_plain"), std::string::npos);
}

// KEVO_ERR_LAUNCH (the device cannot launch this configuration) makes the
// point rejected, not a crash: it is no candidate on this machine.
TEST_F(PlainCpu, ALaunchTheDeviceCannotMakeIsRejected) {
  write("nolaunch.c", R"(#include "kevo_kernel.h"
KEVO_EXPORT int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                            const double* scalars, int n_scalars) {
  (void)in; (void)n_in; (void)out; (void)n_out; (void)scalars; (void)n_scalars;
  return KEVO_ERR_LAUNCH;
}
)");
  write("abi.json", R"({"operator": "swiglu", "shapes": {"g": [32, 257]},
    "timing": {"min_time_ms": 2, "min_samples": 3}})");
  auto r = kevo({"eval", "--task", "abi.json", "nolaunch.c", "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["result"]["status"], "rejected") << r.out;
  EXPECT_NE(j["result"]["detail"].get<std::string>().find("KEVO_ERR_LAUNCH"), std::string::npos) << r.out;
}

// A defined operator whose tensors differ in dtype (bf16 x and z, f32 s and
// y): the plain function gets each as a pointer of its own type.
const char* kPlainScaleRowmax = R"(#include <stdint.h>
#include <string.h>
static float bf16_value(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
void scale_rowmax(float* y, uint16_t* z, const uint16_t* x, const float* s, int64_t m, int64_t n) {
  for (int64_t i = 0; i < m; ++i) {
    uint16_t best = x[i * n];
    for (int64_t j = 0; j < n; ++j) {
      y[i * n + j] = bf16_value(x[i * n + j]) * s[j];
      if (bf16_value(x[i * n + j]) > bf16_value(best)) best = x[i * n + j];
    }
    z[i] = best;
  }
}
)";

class PlainMixed : public PlainCpu {
 protected:
  void SetUp() override {
    PlainCpu::SetUp();
    write("scale_rowmax.json", test::kScaleRowmaxDefinition);
    write("scale_rowmax_ref.c", test::kScaleRowmaxReference);
    write("mixed.c", kPlainScaleRowmax);
    write("mixed.json", config("function").dump());
  }
  static nlohmann::json config(const std::string& kind) {
    nlohmann::json c = {{"operator", "scale_rowmax.json"},
                        {"shapes", {{"x", {16, 300}}}},
                        {"timing", {{"min_time_ms", 2}, {"min_samples", 3}}},
                        {"entry",
                         {{"kind", kind},
                          {"function", "scale_rowmax"},
                          {"args", {"y", "z", "x", "s", "M", "N"}},
                          {"sizes", {{"M", "x[0]"}, {"N", "x[1]"}}}}}};
    if (kind == "global") {
      c["target"] = "cuda";
      c["entry"]["block"] = nlohmann::json::array({"32"});
      c["entry"]["grid"] = nlohmann::json::array({"M"});
    }
    return c;
  }
};

TEST_F(PlainMixed, EachTensorIsAPointerOfItsOwnType) {
  Task cpu = parse_task(config("function"), dir_ / "mixed.json");
  std::string w = entry_wrapper(cpu, "/k/mixed.c");
  EXPECT_NE(w.find("scale_rowmax((float*)out[0].data, (uint16_t*)out[1].data, "
                   "(uint16_t*)in[0].data, (float*)in[1].data, M, N)"),
            std::string::npos)
      << w;
  // The wrapper refuses tensors of other dtypes than each one's own.
  EXPECT_NE(w.find("if (in[0].dtype != 3 ||"), std::string::npos) << w;   // bf16
  EXPECT_NE(w.find("if (in[1].dtype != 0 ||"), std::string::npos) << w;   // f32
  EXPECT_NE(w.find("if (out[1].dtype != 3 ||"), std::string::npos) << w;  // bf16
  Task cuda = parse_task(config("global"), dir_ / "mixed.json");
  w = entry_wrapper(cuda, "/k/mixed.cu");
  EXPECT_NE(w.find("scale_rowmax<<<grid, block, 0, stream>>>((float*)out[0].data, "
                   "(__nv_bfloat16*)out[1].data, (__nv_bfloat16*)in[0].data, "
                   "(float*)in[1].data, M, N)"),
            std::string::npos)
      << w;

  auto r = kevo({"eval", "--task", "mixed.json", "mixed.c", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["result"]["status"], "ok") << r.out;
}

// ---- CUDA ----------------------------------------------------------------------------

const char* kPlainCuda = R"(#include <cuda_bf16.h>
#include <stdint.h>
__global__ void swiglu_kernel(__nv_bfloat16* y, const __nv_bfloat16* g, const __nv_bfloat16* u,
                              int64_t rows, int64_t cols) {
  const int64_t row = blockIdx.y;
  for (int64_t c = (int64_t)blockIdx.x * blockDim.x * TILE + threadIdx.x; c < cols && row < rows;
       c += blockDim.x) {
    if (c >= ((int64_t)blockIdx.x + 1) * blockDim.x * TILE) break;
    const float a = __bfloat162float(g[row * cols + c]), b = __bfloat162float(u[row * cols + c]);
    y[row * cols + c] = __float2bfloat16(a / (1.0f + expf(-a)) * b);
  }
}
)";

Task cuda_task(const nlohmann::json& shape) {
  return test::quick_task("swiglu", {{"g", shape}},
                          {{"target", "cuda"},
                           {"dtype", "bf16"},
                           {"limits", {{"timeout_s", 20}}},
                           {"check_shapes", nlohmann::json::array({{{"g", {7, 33}}}})},
                           {"tune_params", {{"block_size_x", {64, 128, 256}}, {"TILE", {1, 2, 4}}}},
                           {"restrictions", nlohmann::json::array({"block_size_x * TILE <= 512"})},
                           {"entry",
                            {{"kind", "global"},
                             {"function", "swiglu_kernel"},
                             {"args", {"y", "g", "u", "M", "N"}},
                             {"sizes", {{"M", "g[0]"}, {"N", "g[1]"}}},
                             {"block", nlohmann::json::array({"block_size_x"})},
                             {"grid", {"ceil_div(N, block_size_x * TILE)", "M"}}}}});
}

std::filesystem::path write_cuda(const std::string& name) {
  auto path = test::temp_dir("plain-cuda") / name;
  std::ofstream(path) << kPlainCuda;
  return path;
}

TEST(PlainCuda, WrapperLaunchesTheNamedFunction) {
  Task task = cuda_task({8, 8});
  std::string w = entry_wrapper(task, "/k/plain.cu");
  EXPECT_NE(w.find("#include \"/k/plain.cu\""), std::string::npos) << w;
  EXPECT_NE(w.find("kevo_launch("), std::string::npos) << w;
  EXPECT_NE(w.find("swiglu_kernel<<<grid, block, 0, stream>>>((__nv_bfloat16*)out[0].data, "
                   "(__nv_bfloat16*)in[0].data, (__nv_bfloat16*)in[1].data, M, N)"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("kevo_entry_ceil_div(N, block_size_x * TILE)"), std::string::npos) << w;
}

// Points across the config's space compile with the target's nvcc.
TEST(PlainCuda, CompilesAcrossTheSpace) {
  std::string why = cuda_unavailable_reason();
  if (!why.empty()) GTEST_SKIP() << why;
  auto target = make_target("cuda");
  Task task = cuda_task({8, 8});
  auto src = write_cuda("plain.cu");
  Family f = make_family("plain", src, read_text_file(src), "cuda", task.config_knobs);
  auto points = f.space.enumerate_valid();
  ASSERT_EQ(points.size(), 8u);                    // 3 x 3 but 256 x 4
  for (size_t i = 0; i < points.size(); i += 3) {  // a few: nvcc is slow
    CompileRequest req;
    req.task = &task;
    req.source = src;
    req.language = "cuda";
    req.knobs = points[i];
    req.output = src.parent_path() / ("plain" + std::to_string(i) + ".so");
    CompileOutcome out = target->compile(req);
    EXPECT_TRUE(out.ok) << knobs_to_string(points[i]) << ":\n" << out.log;
  }
}

// The cuda target with a runner started on a GPU, or null and why not.
std::unique_ptr<Target> gpu_target(std::string& why) {
  why = cuda_unavailable_reason();
  if (!why.empty()) return nullptr;
  try {
    auto target = make_target("cuda");
    target->run_slots();  // starts a runner: fails without a GPU
    return target;
  } catch (const UserError& e) {
    why = std::string("no GPU here: ") + e.what();
    return nullptr;
  }
}

TEST(PlainCuda, RunsRightOnAGpu) {
  std::string why;
  std::unique_ptr<Target> target = gpu_target(why);
  if (!target) GTEST_SKIP() << why;
  Task task = cuda_task({33, 1000});
  auto src = write_cuda("plain.cu");
  ReferenceCache refs{""};
  CompileCache compiles{cache_dir()};
  Evaluator ev(task, *target, test::fake_roof(1e5, 1e9), refs, compiles);
  ev.profile_top = 0;
  for (const KnobValues& k : {KnobValues{{"block_size_x", 64}, {"TILE", 1}},
                              KnobValues{{"block_size_x", 128}, {"TILE", 4}}}) {
    EvalResult r = ev.evaluate({read_text_file(src), src, "cuda"}, k);
    EXPECT_EQ(status_name(r.status), status_name(Status::ok)) << knobs_to_string(k) << r.detail;
  }
}

// ---- Kernels in Kernel Tuner's style (tests/targets/kernel_tuner_style) -------------

std::filesystem::path kt_dir() { return test::repo_dir() / "tests" / "targets" / "kernel_tuner_style"; }

Family kt_family(const Task& task) {
  const auto file = task.kernel_files.at(0);
  return make_family(file.stem().string(), file, read_text_file(file), "cuda", task.config_knobs);
}

// Kernel Tuner has no default point: where the first listed values break a
// restriction, kevo starts from the first valid point and says so.
TEST(KernelTunerStyle, TheDefaultIsTheFirstValidPoint) {
  const Task mm = load_task(kt_dir() / "mm_tiles.json");
  const Family f = kt_family(mm);
  EXPECT_EQ(f.space.defaults(), (KnobValues{{"block_size_x", 16}, {"block_size_y", 2}, {"tile_size_y", 8}}));
  EXPECT_NE(f.space.default_note().find("violate 'block_size_x == block_size_y * tile_size_y'"),
            std::string::npos)
      << f.space.default_note();
  // 16: (2, 8) (4, 4) (8, 2) (16, 1); 32: (4, 8) (8, 4) (16, 2) (32, 1); 64: (8, 8) (16, 4);
  // 64 x 32 threads is past the device's 1024.
  EXPECT_EQ(f.space.enumerate_valid().size(), 10u);
  const Family rms = kt_family(load_task(kt_dir() / "rms_rows.json"));
  EXPECT_EQ(rms.space.defaults(), (KnobValues{{"block_size_x", 32}}));

  // No valid point at all is one clear error.
  nlohmann::json none = {{"operator", "swiglu"},
                         {"shapes", {{"g", {8, 8}}}},
                         {"tune_params", {{"TILE", {1, 2}}}},
                         {"restrictions", nlohmann::json::array({"TILE > 2"})}};
  const Task t = parse_task(none);
  try {
    make_family("x", "x.c", "void f(void) {}\n", "c", t.config_knobs);
    ADD_FAILURE() << "a space without a valid point was made";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("no point satisfies every restriction"), std::string::npos) << e.what();
  }
}

// Blocks past the device's launch limit are not points (never compiled).
TEST(KernelTunerStyle, BlocksPastTheDeviceLimitAreNotPoints) {
  const Task task = load_task(kt_dir() / "swiglu_flat.json");
  EXPECT_EQ(task.config_knobs.device, std::vector<std::string>{"(block_size_x) <= 1024"});
  const Family f = kt_family(task);
  const auto points = f.space.enumerate_valid();
  EXPECT_EQ(points.size(), 16u);  // 2048 of the 5 block sizes is gone
  for (const auto& p : points) EXPECT_LE(p.at("block_size_x"), 1024) << knobs_to_string(p);
  EXPECT_EQ(f.space.defaults(), (KnobValues{{"block_size_x", 1024}, {"tile_size_x", 1}}));
  // A block that reads sizes is left to the launch (KEVO_ERR_LAUNCH).
  KernelEntry e = task.entry;
  e.block = {"block_size_x", "rows"};
  EXPECT_EQ(device_restrictions(e, task.config_knobs), std::vector<std::string>{"(block_size_x) <= 1024"});
  e.block = {"block_size_x", "2", "tile_size_x"};
  EXPECT_EQ(device_restrictions(e, task.config_knobs),
            (std::vector<std::string>{"(block_size_x) * (2) * (tile_size_x) <= 1024", "(tile_size_x) <= 64"}));
  // The wrapper passes inputs as plain pointers (the kernels declare
  // `float *A`) and turns a launch the device refuses into KEVO_ERR_LAUNCH.
  const std::string w = entry_wrapper(task, "/k/swiglu_flat.cu");
  EXPECT_NE(w.find("swiglu_flat<<<grid, block, 0, stream>>>((float*)out[0].data, (float*)in[0].data, "
                   "(float*)in[1].data, rows, cols)"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("threads > attr.maxThreadsPerBlock) return KEVO_ERR_LAUNCH"), std::string::npos) << w;
  EXPECT_NE(w.find("cudaErrorLaunchOutOfResources"), std::string::npos) << w;
}

// Each kernel compiles as written, at every valid point, with the target's nvcc.
TEST(KernelTunerStyle, KernelsCompileAsWritten) {
  std::string why = cuda_unavailable_reason();
  if (!why.empty()) GTEST_SKIP() << why;
  auto target = make_target("cuda");
  const auto out = test::temp_dir("kt-style");
  for (const char* name : {"mm_tiles", "rms_rows", "swiglu_flat"}) {
    const Task task = load_task(kt_dir() / (std::string(name) + ".json"));
    const Family f = kt_family(task);
    const auto points = f.space.enumerate_valid();
    for (size_t i = 0; i < points.size(); i += 4) {  // a few: nvcc is slow
      CompileRequest req;
      req.task = &task;
      req.source = task.kernel_files.at(0);
      req.language = "cuda";
      req.knobs = points[i];
      req.output = out / fmt::format("{}-{}.so", name, i);
      CompileOutcome c = target->compile(req);
      EXPECT_TRUE(c.ok) << name << " " << knobs_to_string(points[i]) << ":\n" << c.log;
    }
  }
}

TEST(KernelTunerStyle, RunRightOnAGpu) {
  std::string why;
  std::unique_ptr<Target> target = gpu_target(why);
  if (!target) GTEST_SKIP() << why;
  for (const char* name : {"mm_tiles", "rms_rows", "swiglu_flat"}) {
    const Task task = load_task(kt_dir() / (std::string(name) + ".json"));
    const Family f = kt_family(task);
    ReferenceCache refs{""};
    CompileCache compiles{cache_dir()};
    Evaluator ev(task, *target, test::fake_roof(1e5, 1e9), refs, compiles);
    ev.profile_top = 0;
    EvalResult r = ev.evaluate({f.text, f.origin, "cuda"}, f.space.defaults());
    EXPECT_EQ(status_name(r.status), status_name(Status::ok)) << name << ": " << r.detail;
  }
}

}  // namespace
}  // namespace kevo
