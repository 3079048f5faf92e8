// Operators defined in a task: parsing and validation (one line naming the
// key path), shape binding, the compiled C reference, and what runners get.
#include "core/defined_operator.h"

#include <cmath>
#include <functional>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/task.h"
#include "support/bias_gelu.h"
#include "support/scale_rowmax.h"
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
  EXPECT_EQ(t.compare_str(), "tol:1e-05,0.001");
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
      {[](auto& d) { d["tensors"][1]["dtype"] = "float"; },
       "$.operator.tensors[1].dtype: unknown dtype 'float' (expected one of: f32, f64, f16, bf16, "
       "i32, i8)"},
      {[](auto& d) { d["tensors"][2]["dtype"] = 32; },
       "$.operator.tensors[2].dtype: expected a string, got 32"},
      {[](auto& d) { d["tensors"][0]["shape"] = {"M", "..."}; },
       "$.operator.tensors[0].shape[1]: \"...\" stands for leading dimensions"},
      {[](auto& d) {
         d["sizes"] = {"BATCH", "N"};
         d["tensors"][0]["shape"] = {"...", "BATCH", "N"};
       },
       "$.operator.sizes[0]: 'BATCH' is reserved"},
      {[](auto& d) {
         d["check_sizes"] = {{{"M", 3}, {"N", 5}, {"...", {2}}}};
       },
       "$.operator.check_sizes[0]....: no shape of this operator starts with \"...\""},
      {[](auto& d) {
         d.erase("check_sizes");
         d["check_shapes"] = {{{"x", {3, 5}}, {"b", {4}}}};
       },
       "$.operator.check_shapes[0].b[0]: size N is 4 here but 5 in x"},
      {[](auto& d) { d["check_shapes"] = {{{"x", {3, 5}}}}; },
       "$.operator.check_shapes: give either \"check_sizes\" or \"check_shapes\""},
      // Comparisons by dtype, with tolerances over sizes.
      {[](auto& d) { d["tensors"][2]["compare"] = {{"f8", "exact"}}; },
       "$.operator.tensors[2].compare.f8: unknown dtype 'f8' (expected one of: f32"},
      {[](auto& d) { d["tensors"][2]["compare"] = {{"f32", 1e-5}}; },
       "$.operator.tensors[2].compare.f32: expected a mode like \"tol:1e-6,1e-5\", got 1e-05"},
      {[](auto& d) { d["tensors"][2]["compare"] = nlohmann::json::object(); },
       "$.operator.tensors[2].compare: expected a mode like"},
      {[](auto& d) { d["tensors"][2]["compare"] = {{"bf16", "tol:1e-3*Q,1e-2"}}; },
       "$.operator.tensors[2].compare.bf16: unknown size 'Q' (declared: M, N) in \"Q\""},
      {[](auto& d) { d["tensors"][2]["compare"] = "tol:big*N,1e-2"; },
       "$.operator.tensors[2].compare: bad comparison 'tol:big*N,1e-2': tol needs two numbers"},
      {[](auto& d) { d["tensors"][2]["compare"] = {{"default", "ulp:x"}}; },
       "$.operator.tensors[2].compare.default: bad comparison 'ulp:x'"},
      {[](auto& d) { d["tensors"][2]["compare"] = "tol:1e-5"; },
       "$.operator.tensors[2].compare: bad comparison 'tol:1e-5': tol needs two numbers"},
  };
  for (const auto& c : cases) {
    nlohmann::json d = definition();
    c.edit(d);
    const std::string e = error_of(d);
    EXPECT_EQ(e.rfind(c.expected, 0), 0u) << "want: " << c.expected << "\ngot:  " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

TEST_F(DefinedOp, TensorsHaveTheirOwnDtypeOrTheTasks) {
  test::write_file(dir_ / "scale_rowmax.json", test::kScaleRowmaxDefinition);
  test::write_file(dir_ / "scale_rowmax_ref.c", test::kScaleRowmaxReference);
  Task t = task({{"operator", "scale_rowmax.json"}, {"shapes", {{"x", {4, 10}}}}});
  EXPECT_EQ(t.dtypes, (std::vector<DType>{DType::bf16, DType::f32, DType::f32, DType::bf16}));
  EXPECT_TRUE(t.mixed_dtypes());
  EXPECT_EQ(t.bytes(), 2.0 * 40 + 4.0 * 10 + 4.0 * 40 + 2.0 * 4);  // each at its own size
  EXPECT_EQ(t.resolved["dtypes"]["x"], "bf16");
  EXPECT_EQ(t.resolved["dtypes"]["s"], "f32");
  // Another task dtype moves only the tensors without their own.
  Task h =
      task({{"operator", "scale_rowmax.json"}, {"shapes", {{"x", {4, 10}}}}, {"dtype", "f64"}});
  EXPECT_EQ(h.dtypes, (std::vector<DType>{DType::bf16, DType::f64, DType::f64, DType::bf16}));
  EXPECT_NE(h.hash, t.hash);
  // A definition without dtypes: every tensor has the task's, as before.
  Task plain =
      task({{"operator", "bias_gelu.json"}, {"shapes", {{"x", {4, 10}}}}, {"dtype", "f16"}});
  EXPECT_EQ(plain.dtypes, std::vector<DType>(3, DType::f16));
  EXPECT_FALSE(plain.mixed_dtypes());
  EXPECT_FALSE(plain.resolved.contains("dtypes"));

  // The reference sees each input's values widened and rounds each output to
  // its own dtype: y keeps f32 precision, z is a bf16.
  std::vector<uint16_t> x = {float_to_bf16(1.5f), float_to_bf16(-2.0f), float_to_bf16(0.375f),
                             float_to_bf16(3.0f)};
  std::vector<float> s = {1.0f / 3, 0.1f}, y(4);
  std::vector<uint16_t> z(2);
  std::vector<ConstTensorView> in = {{DType::bf16, {2, 2}, x.data()}, {DType::f32, {2}, s.data()}};
  std::vector<TensorView> out = {{DType::f32, {2, 2}, y.data()}, {DType::bf16, {2}, z.data()}};
  t.op->reference(in, t.scalars, out);
  EXPECT_EQ(y[0], static_cast<float>(1.5 * static_cast<double>(s[0])));
  EXPECT_EQ(y[3], static_cast<float>(3.0 * static_cast<double>(s[1])));
  EXPECT_EQ(bf16_to_double(z[0]), 1.5);
  EXPECT_EQ(bf16_to_double(z[1]), 3.0);
}

TEST_F(DefinedOp, EachOutputHasItsOwnCompare) {
  test::write_file(dir_ / "scale_rowmax.json", test::kScaleRowmaxDefinition);
  test::write_file(dir_ / "scale_rowmax_ref.c", test::kScaleRowmaxReference);
  const nlohmann::json base = {{"operator", "scale_rowmax.json"}, {"shapes", {{"x", {4, 10}}}}};
  auto with = [&](const nlohmann::json& extra) {
    nlohmann::json c = base;
    c.update(extra);
    return task(c);
  };
  // y has no mode of its own: its dtype's; z says exact.
  Task t = with(nlohmann::json::object());
  ASSERT_EQ(t.compare.size(), 2u);
  EXPECT_EQ(t.compare[0].str(), "tol:1e-05,0.0001");
  EXPECT_EQ(t.compare[1].str(), "exact");
  EXPECT_EQ(t.compare_str(), "y tol:1e-05,0.0001, z exact");
  EXPECT_EQ(t.resolved["compare"], nlohmann::json({{"y", "tol:1e-05,0.0001"}, {"z", "exact"}}));
  // The task's compare: one mode for all, or modes by output name.
  Task all = with({{"compare", "ulp:2"}});
  EXPECT_EQ(all.compare_str(), "ulp:2");
  EXPECT_EQ(all.resolved["compare"], "ulp:2");
  Task one = with({{"compare", {{"z", "ulp:1"}}}});
  EXPECT_EQ(one.compare[0].str(), "tol:1e-05,0.0001");
  EXPECT_EQ(one.compare[1].str(), "ulp:1");
  EXPECT_NE(one.hash, t.hash);
  EXPECT_EQ(parse_task(one.config).hash, one.hash);

  auto error = [&](const nlohmann::json& compare) -> std::string {
    try {
      with({{"compare", compare}});
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_EQ(error({{"q", "exact"}}), "$.compare.q: no output 'q' to compare (outputs: y, z)");
  EXPECT_EQ(error({{"x", "exact"}}), "$.compare.x: no output 'x' to compare (outputs: y, z)");
  EXPECT_EQ(error({{"y", "close"}}).rfind("$.compare.y: bad comparison 'close'", 0), 0u)
      << error({{"y", "close"}});
  EXPECT_EQ(error({{"y", 1}}), "$.compare.y: expected a string, got 1");
  EXPECT_EQ(error(3).rfind("$.compare: expected a mode like \"ulp:2\"", 0), 0u) << error(3);
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

// A compare object picks a mode by the task dtype; its tol numbers may grow
// with the sizes.
TEST_F(DefinedOp, ComparisonsByDtypeWithTolerancesOverSizes) {
  nlohmann::json d = definition();
  d["tensors"][2]["compare"] = {{"f32", "tol:1e-6 * N,1e-5"}, {"f64", "exact"}};
  auto with = [&](const std::string& dtype, const nlohmann::json& shapes) {
    return task({{"operator", d}, {"shapes", shapes}, {"dtype", dtype}}).compare_str();
  };
  EXPECT_EQ(with("f32", {{"x", {4, 10}}}), "tol:1e-05,1e-05");
  EXPECT_EQ(with("f32", {{"x", {4, 1000}}}), "tol:0.001,1e-05");
  EXPECT_EQ(with("f64", {{"x", {4, 10}}}), "exact");
  // Neither the dtype nor a default: kevo's default for the dtype.
  EXPECT_EQ(with("bf16", {{"x", {4, 10}}}), "tol:0.01,0.02");
  d["tensors"][2]["compare"]["default"] = "ulp:2";
  EXPECT_EQ(with("bf16", {{"x", {4, 10}}}), "ulp:2");
  // The task's own compare still wins.
  Task own = task({{"operator", d}, {"shapes", {{"x", {4, 10}}}}, {"compare", "exact"}});
  EXPECT_EQ(own.compare_str(), "exact");
}

// Per-output modes by dtype: each output's "compare" object is resolved at
// that output's own dtype, not the task's.
TEST_F(DefinedOp, EachOutputsCompareObjectPicksItsOwnDtype) {
  nlohmann::json d = nlohmann::json::parse(test::kScaleRowmaxDefinition);
  test::write_file(dir_ / "scale_rowmax_ref.c", test::kScaleRowmaxReference);
  d["reference"] = (dir_ / "scale_rowmax_ref.c").string();
  d["tensors"][2]["compare"] = {{"f32", "tol:1e-6 * N,1e-5"}, {"bf16", "ulp:3"}};
  d["tensors"][3]["compare"] = {{"f32", "exact"}, {"bf16", "ulp:1"}};
  // Task bf16: y (no dtype of its own) is bf16, z is bf16 always.
  Task b = task({{"operator", d}, {"shapes", {{"x", {4, 10}}}}, {"dtype", "bf16"}});
  EXPECT_EQ(b.compare_str(), "y ulp:3, z ulp:1");
  // Task f32: y follows the task (tol over N), z keeps its bf16 entry.
  Task f = task({{"operator", d}, {"shapes", {{"x", {4, 1000}}}}, {"dtype", "f32"}});
  EXPECT_EQ(f.compare_str(), "y tol:0.001,1e-05, z ulp:1");
}

// "..." in a task's own definition: leading dimensions shared by the tensors
// that have them, counted by BATCH, checked with "..." in check_sizes.
TEST_F(DefinedOp, LeadingDimensionsInADefinition) {
  nlohmann::json d = definition();
  d["sizes"] = {"N"};
  d["tensors"][0]["shape"] = {"...", "N"};
  d["tensors"][2]["shape"] = {"...", "N"};
  d["flops"] = "10 * BATCH * N";
  d["check_sizes"] = {{{"N", 5}}, {{"N", 3}, {"...", {2, 4}}}};
  // Rows of any rank, not [M, N].
  std::string source = test::kBiasGeluReference;
  const std::string mn = "const long m = in[0].shape[0], n = in[0].shape[1];";
  source.replace(source.find(mn), mn.size(),
                 "const long m = kevo_rows(&in[0]), n = kevo_row_len(&in[0]);");
  d.erase("reference");
  d["source"] = source;
  Task t = task({{"operator", d}, {"shapes", {{"x", {2, 3, 10}}}}});
  EXPECT_EQ(t.main.shapes[1], (Shape{10}));
  EXPECT_EQ(t.main.shapes[2], (Shape{2, 3, 10}));
  EXPECT_EQ(t.flops(), 600.0);
  EXPECT_EQ(t.op->tensor(0).doc, "[..., N]");
  ASSERT_EQ(t.check_shapes.size(), 2u);
  EXPECT_EQ(t.check_shapes[0].shapes[0], (Shape{5}));
  EXPECT_EQ(t.check_shapes[1].shapes[2], (Shape{2, 4, 3}));
  Task rank1 = task({{"operator", d}, {"shapes", {{"x", {10}}}}});
  EXPECT_EQ(rank1.flops(), 100.0);
  // The reference sees the full shapes.
  std::vector<float> x(60, 1.0f), b(10, 0.0f), y(60);
  t.op->reference({{DType::f32, {2, 3, 10}, x.data()}, {DType::f32, {10}, b.data()}}, {1.0},
                  {{DType::f32, {2, 3, 10}, y.data()}});
  EXPECT_NEAR(y[59], 0.8411920070648193, 1e-6);  // gelu_tanh(1)
  try {
    task({{"operator", d}, {"shapes", {{"x", {2, 3, 10}}, {"y", {3, 3, 10}}}}});
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(
                  "$.shapes.y: leading dimensions [3, 3] (the \"...\" of [..., N]) differ from "
                  "[2, 3] in x",
                  0),
              0u)
        << e.what();
  }
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
