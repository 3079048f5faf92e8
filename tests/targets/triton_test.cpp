// The triton target. Two parts:
//  - what needs no Python: the static check's Python rules, knobs declared
//    in Python comments, the best kernel exported as a Python file;
//  - the runner and the seed families for real, through Triton's interpreter
//    on the CPU (KEVO_TRITON_INTERPRET=1) where no GPU answers, on the GPU
//    where one does: the protocol, the hostile set and its recovery, every
//    seed family's numerics. These skip, saying why, where no Python with
//    torch and Triton is found (scripts/setup.sh triton makes one; KEVO_PYTHON
//    names another).
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "core/paths.h"
#include "core/space.h"
#include "eval/evaluator.h"
#include "eval/static_check.h"
#include "search/families.h"
#include "core/store.h"
#include "support/bias_gelu.h"  // test::write_file
#include "support/fake_llm_server.h"
#include "support/test_support.h"
#include "targets/triton/triton_target.h"

namespace kevo {
namespace {

#define EXPECT_STATUS(r, s) EXPECT_EQ(status_name((r).status), status_name(s)) << (r).detail

// ---- the static check's Python rules ------------------------------------------------

const char* kGood = R"(# @kevo knob BLOCK 1024 {512, 1024}
import math
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

CALLS = [0]  # module state without `global`: the runtime checks catch its use


@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    policy: tl.constexpr = "evict_first"
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + o, mask=o < n, eviction_policy=policy)
    tl.store(y_ptr + o, x, mask=o < n)


def kevo_launch(inputs, outputs, scalars):
    s = "open('/etc/passwd') and os.system('x') in a string"  # and in a comment: open(
    k[(triton.cdiv(inputs[0].numel(), BLOCK),)](inputs[0], outputs[0], inputs[0].numel(),
                                                BLOCK=BLOCK, num_warps=4)
    return 0
)";

std::optional<std::string> check_py(const std::string& source) {
  return static_check(source, "kevo_launch", "triton");
}

TEST(TritonStaticCheck, AnHonestCandidatePasses) {
  const auto why = check_py(kGood);
  EXPECT_FALSE(why) << *why;
}

TEST(TritonStaticCheck, RefusesWhatReachesOutside) {
  // Each line, added to the honest candidate, must be refused, naming it.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"import os", "imports os"},
      {"import torch, subprocess", "imports subprocess"},
      {"from os import path", "imports path from os"},
      {"import torch.utils.cpp_extension as ext", "imports torch.utils.cpp_extension"},
      {"from torch import hub", "imports hub from torch"},
      {"import importlib", "imports importlib"},
      {"x = open('/etc/shadow').read()", "open"},
      {"f = eval", "eval"},
      {"exec('print(1)')", "exec"},
      {"m = __import__('os')", "__import__"},
      {"b = __builtins__", "__builtins__"},
      {"s = torch._C", "._C"},
      {"f = kevo_launch.__globals__", ".__globals__"},
      {"t = torch.cuda._sleep", "._sleep"},
      {"g = getattr(torch, 'load')", "getattr"},
      {"w = torch.load('/tmp/x.pt')", "torch.load"},
      {"torch.save(inputs, '/tmp/x.pt')", "torch.save"},
      {"import torch as T\nT.save(1, 'x')", "T.save"},
      {"o = torch.ops.load_library('x.so')", "load_library"},
      {"b = triton.runtime.driver", "runtime"},
      {"c = triton.compiler", "compiler"},
      {"triton.knobs.cache = None", "knobs"},
      {"d = triton.autotune", "autotune"},
      {"s = torch.cuda.Stream()", "Stream"},
      {"torch.cuda.set_device(1)", "set_device"},
      {"torch.set_default_dtype(torch.float64)", "set_default_dtype"},
      {"torch.manual_seed(0)", "manual_seed"},
      {"torch.cuda.synchronize = lambda: None", "assigns torch.cuda.synchronize"},
      {"a, torch.cuda.synchronize = 1, 2", "assigns torch.cuda.synchronize"},
      {"tl.sum += 1", "assigns tl.sum"},
      {"del math.sqrt", "deletes math.sqrt"},
      {"def f():\n    global CALLS\n", "'global'"},
      {"v = f\"{open('x')}\"", "open"},
  };
  for (const auto& [line, says] : bad) {
    const auto why = check_py(std::string(kGood) + "\n" + line + "\n");
    ASSERT_TRUE(why) << "not refused: " << line;
    EXPECT_NE(why->find(says), std::string::npos) << line << " -> " << *why;
  }
  // Names of its own that only look like banned ones are fine: a keyword
  // argument, a local of another name, tl.load, a string.
  for (const char* line :
       {"def g(stream=None):\n    return 0", "openness = 1", "x = 'eval(os)'", "r = tl.load"}) {
    const auto why = check_py(std::string(kGood) + "\n" + line + "\n");
    EXPECT_FALSE(why) << line << " -> " << *why;
  }
}

TEST(TritonStaticCheck, NeedsTheEntryPointAtTheTopLevel) {
  const auto none = check_py("import torch\ndef launch(i, o, s):\n    return 0\n");
  ASSERT_TRUE(none);
  EXPECT_NE(none->find("kevo_launch"), std::string::npos);
  const auto nested = check_py("import torch\nclass A:\n    def kevo_launch(i, o, s):\n        return 0\n");
  ASSERT_TRUE(nested);
}

TEST(TritonStaticCheck, StripsPythonCommentsAndStrings) {
  const std::string src = "a = 'x#y' # open(\nb = \"\"\"\nos\n\"\"\"\nc = f'{d}'\n";
  const std::string code = strip_python_comments_and_strings(src);
  ASSERT_EQ(code.size(), src.size());
  EXPECT_EQ(code.find("open"), std::string::npos);
  EXPECT_EQ(code.find("os"), std::string::npos);
  EXPECT_EQ(code.find("x#y"), std::string::npos);
  EXPECT_NE(code.find("{d}"), std::string::npos);  // an f-string's braces are code
  EXPECT_EQ(std::count(code.begin(), code.end(), '\n'), std::count(src.begin(), src.end(), '\n'));
}

// ---- knobs and the exported best kernel ---------------------------------------------

TEST(TritonKnobs, DeclaredInPythonComments) {
  const KnobSpace space = KnobSpace::parse_source(
      "# @kevo knob BLOCK_N 4096 {512, 1024, 4096}\n# @kevo knob ROWS 1 {1, 2}\n"
      "# @kevo require ROWS * BLOCK_N <= 4096\nimport torch\n",
      "rows.py");
  ASSERT_EQ(space.knobs().size(), 2u);
  EXPECT_EQ(space.defaults().at("BLOCK_N"), 4096);
  EXPECT_TRUE(space.valid({{"BLOCK_N", 4096}, {"ROWS", 1}}));
  EXPECT_FALSE(space.valid({{"BLOCK_N", 4096}, {"ROWS", 2}}));
  // Every shipped family parses, and its default point meets its requirements.
  int families = 0;
  for (const auto& op : std::filesystem::directory_iterator(test::repo_dir() / "targets" / "triton" / "kernels"))
    for (const auto& f : std::filesystem::directory_iterator(op.path())) {
      const KnobSpace s = KnobSpace::parse_source(read_text_file(f.path()), f.path().string());
      EXPECT_FALSE(s.knobs().empty()) << f.path();
      EXPECT_TRUE(s.valid(s.defaults())) << f.path();
      const auto why = static_check(read_text_file(f.path()), "kevo_launch", "triton");
      EXPECT_FALSE(why) << f.path() << ": " << *why;
      ++families;
    }
  EXPECT_GE(families, 7);
}

TEST(TritonKnobs, TheBestKernelIsOnePythonFileWithItsKnobs) {
  Family f;
  f.name = "rows";
  f.origin = "targets/triton/kernels/rmsnorm/rows.py";
  f.language = "triton";
  f.text = "# @kevo knob BLOCK_N 4096 {512, 4096}\nimport torch\n\ndef kevo_launch(i, o, s):\n    return BLOCK_N\n";
  const std::string out = standalone_source(f, {{"BLOCK_N", 512}}, "best of run 3", {"KEVO_DIM_x_0=7"});
  EXPECT_NE(out.find("\nBLOCK_N = 512\n"), std::string::npos) << out;
  EXPECT_NE(out.find("# best of run 3"), std::string::npos) << out;
  EXPECT_EQ(out.find("#define"), std::string::npos) << out;
  EXPECT_EQ(out.find("KEVO_DIM_x_0"), std::string::npos) << out;  // kevo gives the task's own
  EXPECT_EQ(out.find("@kevo knob"), std::string::npos) << out;    // no knob to set over it
  EXPECT_FALSE(static_check(out, "kevo_launch", "triton"));
}

// ---- the runner, for real --------------------------------------------------------------

// The Python the tests run Triton with: KEVO_PYTHON, else the one
// scripts/setup.sh triton makes.
std::string test_python() {
  if (const char* p = std::getenv("KEVO_PYTHON"); p && *p) return p;
  const char* venv = std::getenv("KEVO_TRITON_VENV");
  std::filesystem::path dir;
  if (venv && *venv) dir = venv;
  else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) dir = std::filesystem::path(xdg) / "kevo" / "triton-venv";
  else if (const char* home = std::getenv("HOME"); home && *home) dir = std::filesystem::path(home) / ".cache" / "kevo" / "triton-venv";
  return dir.empty() ? "" : (dir / "bin" / "python").string();
}

class OnTriton : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string py = test_python();
    if (!py.empty() && std::filesystem::exists(py)) setenv("KEVO_PYTHON", py.c_str(), 1);
    // Where torch sees no GPU, the interpreter runs the kernels on the CPU.
    std::string why = triton_unavailable_reason();
    if (why.find("sees no CUDA GPU") != std::string::npos) {
      setenv("KEVO_TRITON_INTERPRET", "1", 1);
      why = triton_unavailable_reason();
    }
    why_not_ = why;
    if (why.empty()) target_ = make_target("triton").release();
  }
  static void TearDownTestSuite() {
    delete target_;
    target_ = nullptr;
  }
  void SetUp() override {
    if (!why_not_.empty()) GTEST_SKIP() << "no Python with torch and Triton: " << why_not_;
  }
  static bool interpreting() {
    const char* v = std::getenv("KEVO_TRITON_INTERPRET");
    return v && std::string(v) == "1";
  }
  EvalResult eval(const std::filesystem::path& path, const KnobValues& knobs, const Task& task) {
    CandidateSource src{read_text_file(path), path, "triton"};
    Evaluator ev(task, *target_, roof_, refs_, compiles_);
    ev.profile_top = 0;
    return ev.evaluate(src, knobs);
  }
  // A small task on the triton target; the interpreter is slow, so little timing.
  static Task task(const std::string& op, const nlohmann::json& shapes, nlohmann::json o = {}) {
    o["target"] = "triton";
    if (!o.contains("dtype")) o["dtype"] = "bf16";
    o["limits"] = {{"timeout_s", 20}, {"compile_timeout_s", 60}};
    o["timing"] = {{"min_time_ms", 1.0}, {"min_samples", 3}, {"max_samples", 5},
                   {"warmup_ms", 1.0}, {"min_warmup", 1}};
    return test::quick_task(op, shapes, o);
  }
  static inline std::string why_not_;
  static inline Target* target_ = nullptr;
  Roof roof_ = test::fake_roof(1e5, 1e9);
  ReferenceCache refs_{""};
  CompileCache compiles_{cache_dir()};
};

TEST_F(OnTriton, HostileSetIsClassifiedAndTheRunnerRecovers) {
  Task t = task("swiglu", {{"g", {8, 1000}}});
  t.limits.timeout_s = 5;
  t.limits.compile_timeout_s = 5;
  const auto path = test::source_dir() / "eval" / "kernels" / "triton" / "hostile.py";
  auto run = [&](int mode) { return eval(path, {{"MODE", mode}, {"BLOCK", 1024}}, t); };
  EvalResult ok = run(0);
  EXPECT_STATUS(ok, Status::ok);
  EXPECT_NE(ok.stderr_text.find("kevo-triton-runner: timing: host time per call"), std::string::npos)
      << ok.stderr_text;
  EXPECT_NE(ok.stderr_text.find("(Triton compiles the kernels) took"), std::string::npos) << ok.stderr_text;
  EXPECT_EQ(ok.stderr_text.find("containment: no "), std::string::npos) << ok.stderr_text;

  EvalResult raises = run(1);
  EXPECT_STATUS(raises, Status::crash);
  EXPECT_NE(raises.detail.find("ValueError: hostile: refusing to compute"), std::string::npos)
      << raises.detail;
  EXPECT_NE(raises.detail.find("candidate line"), std::string::npos) << raises.detail;

  EvalResult hang = run(2);
  EXPECT_STATUS(hang, Status::timeout);
  EXPECT_STATUS(run(0), Status::ok);  // a fresh runner took over

  EvalResult rc = run(3);
  EXPECT_STATUS(rc, Status::crash);
  EXPECT_NE(rc.detail.find("KEVO_ERR"), std::string::npos) << rc.detail;

  EvalResult writes = run(4);
  EXPECT_STATUS(writes, Status::crash);
  EXPECT_NE(writes.detail.find("input 'g'"), std::string::npos) << writes.detail;

  EvalResult stale = run(5);
  EXPECT_STATUS(stale, Status::mismatch);
  EXPECT_NE(stale.detail.find("the last timed calls"), std::string::npos) << stale.detail;

  EvalResult refused = run(6);
  EXPECT_STATUS(refused, Status::compile_error);
  EXPECT_NE(refused.detail.find("hostile: this kernel does not compile"), std::string::npos)
      << refused.detail;
  EXPECT_NE(refused.detail.find("line "), std::string::npos) << refused.detail;

  EvalResult tampers = run(7);
  EXPECT_STATUS(tampers, Status::crash);
  EXPECT_NE(tampers.detail.find("torch.cuda.synchronize"), std::string::npos) << tampers.detail;
  EXPECT_STATUS(run(0), Status::ok);  // and the next runner's torch is whole again

  EvalResult past = run(9);
  EXPECT_STATUS(past, Status::crash);
  EXPECT_NE(past.detail.find("past the end"), std::string::npos) << past.detail;

  if (!interpreting()) {  // a wild address is the GPU's to catch
    EvalResult wild = run(8);
    EXPECT_STATUS(wild, Status::crash);
    EXPECT_NE(wild.detail.find("CUDA error"), std::string::npos) << wild.detail;
    EXPECT_STATUS(run(0), Status::ok);
  }
}

TEST_F(OnTriton, ASyntaxErrorIsTheCandidatesCompileError) {
  const auto dir = test::temp_dir("triton_syntax");
  const auto path = dir / "broken.py";
  test::write_file(path, "import torch\n\ndef kevo_launch(inputs, outputs, scalars):\n    return (\n");
  EvalResult r = eval(path, {}, task("swiglu", {{"g", {8, 100}}}));
  EXPECT_STATUS(r, Status::compile_error);
  EXPECT_NE(r.compile_log.find("broken.py:4"), std::string::npos) << r.compile_log;
}

// A kernel Triton builds but the GPU cannot load (more shared memory than an
// SM has: the gemm tiles without their `require`) is the candidate's
// compile_error with Triton's words, not a crash.
TEST_F(OnTriton, AKernelThatNeedsMoreSharedMemoryThanTheGpuIsACompileError) {
  if (interpreting()) GTEST_SKIP() << "Triton's interpreter allocates no shared memory";
  const auto dir = test::temp_dir("triton_smem");
  std::string text = read_text_file(test::repo_dir() / "targets" / "triton" / "kernels" / "gemm" / "tiles.py");
  std::string kept;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("# @kevo require", 0) != 0) kept += line + "\n";
  const auto path = dir / "tiles_unbounded.py";
  test::write_file(path, kept);
  Task t = task("gemm", {{"A", {256, 256}}, {"B", {256, 256}}});
  EvalResult r = eval(path, {{"BM", 256}, {"BN", 256}, {"BK", 128}, {"GROUP_M", 8}, {"NUM_WARPS", 8},
                             {"NUM_STAGES", 5}},
                      t);
  EXPECT_STATUS(r, Status::compile_error);
  EXPECT_NE(r.detail.find("out of resource: shared memory"), std::string::npos) << r.detail;
}

// Every seed family, at its default point and at one that takes its other
// path (rows longer than the tile: the streaming loops), on the checks'
// ragged shapes and a small task shape. The interpreter's bf16 tl.dot gives
// wrong numbers (Triton 3.9), so there the gemm families are checked in f32.
TEST_F(OnTriton, SeedFamiliesAreRight) {
  const std::map<std::string, nlohmann::json> shapes = {
      {"scaled_softmax", {{"x", {2, 5, 700}}}}, {"rmsnorm", {{"x", {16, 700}}}},
      {"layernorm", {{"x", {16, 700}}}},        {"add_rmsnorm", {{"x", {16, 700}}}},
      {"swiglu", {{"g", {16, 700}}}},           {"gemm", {{"A", {64, 96}}, {"B", {96, 80}}}}};
  const auto root = test::repo_dir() / "targets" / "triton" / "kernels";
  int families = 0;
  for (const auto& [op, s] : shapes) {
    nlohmann::json o;
    if (op == "scaled_softmax") o["params"] = {{"scale", 0.125}};
    if (op == "gemm" && interpreting()) o["dtype"] = "f32";
    const Task t = task(op, s, o);
    for (const auto& f : std::filesystem::directory_iterator(root / op)) {
      if (f.path().extension() != ".py") continue;
      ++families;
      const KnobSpace space = KnobSpace::parse_source(read_text_file(f.path()), f.path().string());
      std::vector<KnobValues> points = {space.defaults()};
      if (space.defaults().count("BLOCK_N")) {
        KnobValues streaming = space.defaults();
        streaming["BLOCK_N"] = 512;  // rows of 700 and 1003: longer than the tile
        streaming["NUM_WARPS"] = 4;
        streaming["ROWS"] = 2;
        points.push_back(streaming);
      }
      // every cache policy of the loads (EVICT), at the default tile and at
      // the streaming one, so each compiles and is right
      for (const auto& kd : space.knobs()) {
        if (kd.name != "EVICT") continue;
        const std::size_t base = points.size();
        for (std::size_t i = 0; i < base; ++i)
          for (int64_t v : kd.values) {
            if (v == points[i].at("EVICT")) continue;
            KnobValues other = points[i];
            other["EVICT"] = v;
            points.push_back(other);
          }
      }
      for (const auto& k : points) {
        EvalResult r = eval(f.path(), k, t);
        EXPECT_STATUS(r, Status::ok) << " family " << f.path() << " " << knobs_to_string(k);
      }
    }
  }
  EXPECT_GE(families, 7);
}

// On a GPU with ncu: the best few are profiled, and the hot lines are those
// of the candidate's own Python source, for two points of one family (kernels
// of one name).
TEST_F(OnTriton, ProfilesMapHotLinesToThePythonSource) {
  if (!target_->can_profile())
    GTEST_SKIP() << (interpreting() ? "Triton's interpreter: nothing for ncu to profile"
                                    : "ncu (Nsight Compute) not found");
  const Task t = task("rmsnorm", {{"x", {4096, 4096}}});
  const auto path = test::repo_dir() / "targets" / "triton" / "kernels" / "rmsnorm" / "rows.py";
  const KnobSpace space = KnobSpace::parse_source(read_text_file(path), path.string());
  KnobValues other = space.defaults();
  other["BLOCK_N"] = 1024;
  other["ROWS"] = 2;
  const std::string text = read_text_file(path);
  const auto lines = std::count(text.begin(), text.end(), '\n');
  for (const KnobValues& point : {space.defaults(), other}) {
    CandidateSource src{text, path, "triton"};
    Evaluator ev(t, *target_, roof_, refs_, compiles_);
    ev.profile_top = 1;
    EvalResult r = ev.evaluate(src, point);
    EXPECT_STATUS(r, Status::ok);
    ASSERT_TRUE(r.diagnosis.has_value());
    EXPECT_NE(r.diagnosis->why.find("hottest Python source lines"), std::string::npos) << r.diagnosis->why;
    int mapped = 0;
    for (const auto& m : r.profile)
      if (m.metric == "ncu.line.stall_share") {
        ++mapped;
        EXPECT_GT(m.source_line, 0);
        EXPECT_LE(m.source_line, lines);
      }
    EXPECT_GT(mapped, 0);
  }
}


// A model's Triton kernel (written for the test's fake LLM); `broken` takes
// a tile that is not a power of two, which Triton refuses.
std::string llm_swiglu(bool broken) {
  return std::string(R"(# swiglu, one tile of BLOCK elements per program (the test's fake LLM)
# @kevo knob BLOCK 1024 {512, 1024}
import torch
import triton
import triton.language as tl


@triton.jit
def swiglu_tile(g_ptr, u_ptr, y_ptr, n, BLOCK: tl.constexpr):
)") + (broken ? "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK - 24)\n"
              : "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n") +
         R"(    mask = offs < n
    g = tl.load(g_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(u_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, (g / (1.0 + tl.exp(-g)) * u).to(y_ptr.dtype.element_ty), mask=mask)


def kevo_launch(inputs, outputs, scalars):
    g, u = inputs
    (y,) = outputs
    n = g.numel()
    if n == 0:
        return 0
    swiglu_tile[(triton.cdiv(n, BLOCK),)](g, u, y, n, BLOCK=BLOCK, num_warps=4)
    return 0
)";
}

// A search end to end on the triton target, with a model: the prompt is in
// Triton's terms (its own template, the Python contract, knobs as # comments
// and module globals), the model's ```python kernel that Triton refuses is a
// compile_error whose message, and the error index's help, go back in the
// repair prompt, and the repaired kernel is measured. In the interpreter
// where torch sees no GPU; on the GPU where it does.
TEST_F(OnTriton, ASearchAsksTheModelInTritonsTerms) {
  using testing::FakeLlmServer;
  using testing::Step;
  FakeLlmServer server;
  const std::string broken_line = "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK - 24)\n";
  server.set_responder([&](const testing::RecordedRequest& r) {
    const std::string p = testing::prompt_text(r);
    if (p.find("# The kernel to repair") != std::string::npos ||
        p.find("# Repairs keep failing") != std::string::npos)
      return Step::reply("The tile must be a power of two.\n<<<<<<< SEARCH\n" + broken_line +
                         "=======\n    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
                         ">>>>>>> REPLACE\n");
    return Step::reply("One tile per program.\n```python\n" + llm_swiglu(true) + "```\n");
  });
  const auto dir = test::temp_dir("triton_llm");
  const std::string db = (dir / "kevo.db").string();
  nlohmann::json task = {
      {"name", "swiglu-triton-llm"},
      {"operator", "swiglu"},
      {"target", "triton"},
      {"dtype", "bf16"},
      {"shapes", {{"g", {8, 1000}}}},
      {"limits", {{"timeout_s", 30}, {"compile_timeout_s", 60}}},
      {"timing", {{"min_time_ms", 1}, {"min_samples", 3}, {"max_samples", 5}, {"warmup_ms", 1}}},
      {"search",
       {{"strategy", "mcts"},
        {"batch", 2},
        {"confirm", 0},
        {"stop", {{"max_evals", 8}}},
        {"llm",
         {{"models",
           {{{"api", "openai"}, {"endpoint", server.base_url()}, {"model", "fake-triton"},
             {"api_key_env", ""}, {"retries", 1}, {"timeout_s", 20}}}},
          {"per_batch", 2},
          {"knowledge", 2}}}}}};
  std::ofstream(dir / "task.json") << task.dump(2);
  ProcessResult cal = test::run_kevo(dir, db, {"calibrate", "--target", "triton"});
  ASSERT_EQ(cal.exit_code, 0) << cal.err;
  ProcessResult r = test::run_kevo(dir, db, {"run", "task.json", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  const auto requests = server.requests();
  ASSERT_FALSE(requests.empty()) << r.err;
  const std::string first = testing::prompt_text(requests.front());
  for (const char* want : {"Triton kernels (Python", "```python", "def kevo_launch(inputs, outputs, scalars)",
                           "# @kevo knob NAME", "tl.constexpr", "KEVO_DIM_", ".shape"})
    EXPECT_NE(first.find(want), std::string::npos) << want << "\n" << first;
  for (const char* never : {"extern \"C\"", "#ifndef", "-D defines", "kevo_tensor"})
    EXPECT_EQ(first.find(never), std::string::npos) << never << "\n" << first;

  Store s(db, true);
  QueryResult refused = s.query(
      "SELECT e.detail || ' ' || e.compile_log FROM candidates c JOIN evaluations e ON e.candidate_id = c.id "
      "WHERE c.synthesizer = 'llm:fake-triton' AND e.status = 'compile_error'");
  ASSERT_FALSE(refused.rows.empty()) << r.err;
  EXPECT_NE(std::get<std::string>(refused.rows[0][0]).find("arange's range must be a power of 2"),
            std::string::npos)
      << std::get<std::string>(refused.rows[0][0]);
  QueryResult repaired = s.query(
      "SELECT e.status FROM candidates c JOIN evaluations e ON e.candidate_id = c.id "
      "WHERE c.synthesizer LIKE 'llm-repair:%'");
  ASSERT_FALSE(repaired.rows.empty()) << r.err;
  EXPECT_EQ(std::get<std::string>(repaired.rows[0][0]), "ok");
  // The repair prompt carried Triton's words and what the index says of them.
  bool saw = false;
  for (const auto& req : requests) {
    const std::string p = testing::prompt_text(req);
    if (p.find("# The kernel to repair") == std::string::npos) continue;
    saw = true;
    EXPECT_NE(p.find("arange's range must be a power of 2"), std::string::npos) << p;
    const std::string heading = "What these errors usually mean:\n";
    const size_t help = p.find(heading);
    ASSERT_NE(help, std::string::npos) << p;
    EXPECT_EQ(p.substr(help + heading.size(), 2), "- ") << p;  // an entry, not "(none)"
  }
  EXPECT_TRUE(saw);
}

}  // namespace
}  // namespace kevo
