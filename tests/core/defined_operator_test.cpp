// Operators defined in a task: parsing and validation (one line naming the
// key path), shape binding, the compiled C reference, and what runners get.
#include "core/defined_operator.h"

#include <cmath>
#include <functional>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/task.h"
#include "support/bias_gelu.h"
#include "support/test_support.h"

namespace kevo {
namespace {

class DefinedOp : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::temp_dir("defined-op");
    test::write_file(dir_ / "bias_gelu.json", test::kBiasGeluDefinition);
    test::write_file(dir_ / "bias_gelu_ref.c", test::kBiasGeluReference);
  }

  Task task(const nlohmann::json& config) { return parse_task(config, dir_ / "task.json"); }

  nlohmann::json inline_task(const nlohmann::json& definition) {
    return {{"operator", definition}, {"shapes", {{"x", {4, 10}}}}};
  }

  // The ConfigError message of a task whose inline definition is `definition`.
  std::string error_of(const nlohmann::json& definition) {
    try {
      task(inline_task(definition));
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "(no error)";
  }

  static nlohmann::json definition() { return nlohmann::json::parse(test::kBiasGeluDefinition); }

  std::filesystem::path dir_;
};

TEST_F(DefinedOp, FromAFileBindsShapesAndCounts) {
  Task t = task({{"operator", "bias_gelu.json"}, {"shapes", {{"x", {4, 10}}}}});
  EXPECT_EQ(t.op->name(), "bias_gelu");
  ASSERT_EQ(t.main.shapes.size(), 3u);
  EXPECT_EQ(t.main.shapes[0], (Shape{4, 10}));
  EXPECT_EQ(t.main.shapes[1], (Shape{10}));
  EXPECT_EQ(t.main.shapes[2], (Shape{4, 10}));
  EXPECT_EQ(t.flops(), 400.0);
  EXPECT_EQ(t.bytes(), 4.0 * (40 + 10 + 40));  // every tensor once, in f32
  EXPECT_EQ(t.scalars, std::vector<double>{1.0});
  EXPECT_EQ(t.compare.str(), "tol:1e-05,0.001");
  ASSERT_EQ(t.check_shapes.size(), 2u);
  EXPECT_EQ(t.check_shapes[1].shapes[1], (Shape{129}));
  EXPECT_EQ(t.op->distribution(0).lo, -3.0);
  EXPECT_EQ(t.resolved["operator"]["name"], "bias_gelu");
  // The stored config is self-contained: it parses anywhere, to the same task.
  Task again = parse_task(t.config);
  EXPECT_EQ(again.hash, t.hash);
  EXPECT_EQ(again.main.shapes, t.main.shapes);
  try {
    task({{"operator", "nope.json"}, {"shapes", {{"x", {4, 10}}}}});
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("$.operator: cannot read the operator definition", 0), 0u)
        << e.what();
  }
}

TEST_F(DefinedOp, TheStoredTaskRebuildsWithoutItsFiles) {
  test::write_file(dir_ / "kernels" / "fast.c", test::bias_gelu_fast());
  Task t = task({{"operator", "bias_gelu.json"},
                 {"shapes", {{"x", {4, 10}}}},
                 {"kernels", {"kernels/*.c"}}});
  // The operator as its definition, the reference inlined: no relative path.
  ASSERT_TRUE(t.resolved["operator"].is_object());
  EXPECT_FALSE(t.resolved["operator"].contains("reference"));
  EXPECT_FALSE(t.resolved.contains("operator_definition"));
  std::filesystem::remove_all(dir_);  // the task, definition, reference and kernels are gone
  Task again = parse_stored_task(nlohmann::json::parse(t.resolved.dump()));
  EXPECT_EQ(again.hash, t.hash);
  EXPECT_EQ(again.op->name(), "bias_gelu");
  EXPECT_EQ(again.flops(), t.flops());
  EXPECT_EQ(again.bytes(), t.bytes());
  EXPECT_TRUE(again.kernel_files.empty());
}

TEST_F(DefinedOp, ReferenceComputesInF64AndRoundsToTheTaskDtype) {
  Task t = task(
      {{"operator", "bias_gelu.json"}, {"shapes", {{"x", {2, 3}}}}, {"params", {{"alpha", 2.0}}}});
  std::vector<float> x = {-1, 0, 1, 2, 3, -3}, b = {0.5f, -0.5f, 0}, y(6);
  std::vector<ConstTensorView> in = {{DType::f32, {2, 3}, x.data()}, {DType::f32, {3}, b.data()}};
  std::vector<TensorView> out = {{DType::f32, {2, 3}, y.data()}};
  t.op->reference(in, t.scalars, out);
  for (size_t i = 0; i < 6; ++i) {
    const double v = static_cast<double>(x[i]) + b[i % 3];
    const double want =
        2.0 * 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    EXPECT_EQ(y[i], static_cast<float>(want)) << i;
  }
}

TEST_F(DefinedOp, InlineSourceAndEditsChangeTheTaskHash) {
  nlohmann::json d = definition();
  d.erase("reference");
  d["source"] = test::kBiasGeluReference;
  Task a = task(inline_task(d));
  d["source"] = std::string(test::kBiasGeluReference) + "/* edited */\n";
  Task b = task(inline_task(d));
  EXPECT_NE(a.hash, b.hash);
  d["flops"] = "11 * M * N";
  EXPECT_NE(task(inline_task(d)).hash, b.hash);
}

TEST_F(DefinedOp, BadDefinitionsNameTheKeyPathOnOneLine) {
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {[](auto& d) { d["tensors"][2]["shape"][1] = "K"; },
       "$.operator.tensors[2].shape[1]: unknown size 'K' (declared: M, N)"},
      {[](auto& d) { d["flops"] = "2 * M * Q"; }, "$.operator.flops: unknown size 'Q'"},
      {[](auto& d) { d["tensors"][1]["name"] = "x"; },
       "$.operator.tensors[1].name: duplicate tensor 'x'"},
      {[](auto& d) {
         d["sizes"] = {"M", "N", "M"};
       },
       "$.operator.sizes[2]: duplicate size 'M'"},
      {[](auto& d) { d["tensors"][0]["role"] = "inout"; },
       "$.operator.tensors[0].role: expected \"in\" or \"out\""},
      {[](auto& d) { d["tensors"].erase(2); }, "$.operator.tensors: no output tensor"},
      {[](auto& d) { d["tensors"][2]["compare"] = "close"; }, "$.operator.tensors[2].compare: "},
      {[](auto& d) {
         d["tensors"][0]["distribution"] = {{"lo", 3}, {"hi", -3}};
       },
       "$.operator.tensors[0].distribution: expected finite lo < hi"},
      {[](auto& d) {
         d["tensors"][0]["distribution"] = {{"mean", 0}};
       },
       "$.operator.tensors[0].distribution.mean: unknown key"},
      {[](auto& d) { d["reference"] = "missing.c"; }, "$.operator.reference: cannot read"},
      {[](auto& d) {
         d["sizes"] = {"M", "N", "K"};
         d["tensors"][1]["shape"] = {"N * K"};
       },
       "$.operator.sizes[2]: size 'K' is no tensor's whole dimension"},
      {[](auto& d) {
         d["check_sizes"] = {{{"M", 3}}};
       },
       "$.operator.check_sizes[0].N: missing"},
      {[](auto& d) { d["reduce"] = "sum"; }, "$.operator.reduce: unknown key"},
  };
  for (const auto& c : cases) {
    nlohmann::json d = definition();
    c.edit(d);
    const std::string e = error_of(d);
    EXPECT_EQ(e.rfind(c.expected, 0), 0u) << "want: " << c.expected << "\ngot:  " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

TEST_F(DefinedOp, ShapesThatDisagreeWithTheDeclarationAreErrors) {
  auto error = [&](const nlohmann::json& shapes) -> std::string {
    try {
      task({{"operator", "bias_gelu.json"}, {"shapes", shapes}});
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_EQ(
      error({{"x", {4, 10}}, {"b", {11}}}).rfind("$.shapes.b[0]: size N is 11 here but 10 in x", 0),
      0u)
      << error({{"x", {4, 10}}, {"b", {11}}});
  EXPECT_EQ(error({{"x", {4, 10, 2}}}).rfind("$.shapes.x: expected rank 2 ([M, N])", 0), 0u);
  EXPECT_EQ(error({{"b", {10}}}).rfind("$.shapes.x: missing: size M", 0), 0u)
      << error({{"b", {10}}});
  EXPECT_EQ(error({{"z", {10}}}).rfind("$.shapes.z: unknown tensor", 0), 0u);
  EXPECT_EQ(error({{"x", {4, 10}}, {"y", {4, 11}}}).rfind("$.shapes.y[1]: size N is 11", 0), 0u)
      << error({{"x", {4, 10}}, {"y", {4, 11}}});
}

TEST_F(DefinedOp, AReferenceThatDoesNotCompileOrCrashesIsOneLine) {
  test::write_file(dir_ / "bias_gelu_ref.c", "int kevo_kernel( { syntax error\n");
  try {
    task({{"operator", "bias_gelu.json"}, {"shapes", {{"x", {4, 10}}}}});
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("bias_gelu_ref.c"), std::string::npos) << what;
    EXPECT_NE(what.find("does not compile"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }

  test::write_file(dir_ / "bias_gelu_ref.c", R"(#include "kevo_kernel.h"
int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                const double* s, int n_s) { *(volatile int*)0 = 1; return 0; })");
  Task t = task({{"operator", "bias_gelu.json"}, {"shapes", {{"x", {1, 2}}}}});
  std::vector<float> x(2), b(2), y(2);
  std::vector<ConstTensorView> in = {{DType::f32, {1, 2}, x.data()}, {DType::f32, {2}, b.data()}};
  std::vector<TensorView> out = {{DType::f32, {1, 2}, y.data()}};
  try {
    t.op->reference(in, t.scalars, out);
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("the reference of bias_gelu crashed (SIGSEGV", 0), 0u) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST_F(DefinedOp, AHangingReferenceTimesOut) {
  ReferenceProgram p("spin",
                     "#include \"kevo_kernel.h\"\nint kevo_kernel(const kevo_tensor* i, "
                     "int a, kevo_tensor* o, int b, const double* s, int c) { for (;;) {} }\n",
                     "c", "spin.c");
  std::vector<std::vector<double>> out = {std::vector<double>(1)};
  try {
    p.run({}, {}, out, {Shape{1}}, {}, 0.2);
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("the reference of spin did not finish in 0.2 s", 0), 0u)
        << e.what();
  }
}

TEST_F(DefinedOp, RunnersRebuildTheSameOperatorFromTheDefinition) {
  Task t = task({{"operator", "bias_gelu.json"}, {"shapes", {{"x", {4, 10}}}}});
  const nlohmann::json def = operator_definition(*t.op);
  ASSERT_TRUE(def.is_object());
  EXPECT_FALSE(def.contains("reference"));  // inlined: the runner reads no file
  std::shared_ptr<const Operator> holder;
  const Operator& again = job_operator("bias_gelu", def, holder);
  ASSERT_EQ(again.tensors().size(), 3u);
  EXPECT_EQ(again.tensor(1).name, "b");
  EXPECT_EQ(again.distribution(0).hi, 3.0);
  EXPECT_EQ(again.bind_shapes({{"x", {4, 10}}}, "$"), t.main.shapes);
  // A built-in stays a name.
  EXPECT_TRUE(operator_definition(operators().get("swiglu")).is_null());
  EXPECT_EQ(&job_operator("swiglu", nullptr, holder), &operators().get("swiglu"));
}

}  // namespace
}  // namespace kevo
