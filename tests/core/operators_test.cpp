#include "core/operator.h"

#include <cmath>

#include <gtest/gtest.h>

#include "core/error.h"

namespace kevo {
namespace {

// Runs an operator's reference in f64 on small hand-made inputs.
std::vector<std::vector<double>> run(const std::string& name, const ShapeMap& given,
                                     const std::vector<std::vector<double>>& inputs,
                                     const std::vector<double>& scalars) {
  const Operator& op = operators().get(name);
  auto shapes = op.bind_shapes(given, "$.shapes");
  std::vector<ConstTensorView> in;
  for (size_t i = 0; i < op.n_inputs(); ++i) {
    EXPECT_EQ(static_cast<int64_t>(inputs[i].size()), numel(shapes[i]));
    in.emplace_back(DType::f64, shapes[i], inputs[i].data());
  }
  std::vector<std::vector<double>> outs;
  for (size_t i = op.n_inputs(); i < shapes.size(); ++i)
    outs.emplace_back(static_cast<size_t>(numel(shapes[i])), NAN);
  std::vector<TensorView> out;
  for (size_t i = 0; i < outs.size(); ++i)
    out.push_back({DType::f64, shapes[op.n_inputs() + i], outs[i].data()});
  op.reference(in, scalars, out);
  return outs;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "at " << i;
}

TEST(Operators, AllRegistered) {
  for (const char* n : {"scaled_softmax", "rmsnorm", "layernorm", "add_rmsnorm", "swiglu", "gemm"})
    EXPECT_NE(operators().find(n), nullptr) << n;
  EXPECT_THROW(operators().get("conv2d"), UserError);
}

TEST(Operators, ScaledSoftmax) {
  // exp(x * 1) of [0, ln 2, ln 3] is 1, 2, 3.
  auto y = run("scaled_softmax", {{"x", {1, 3}}}, {{0, std::log(2.0), std::log(3.0)}}, {1.0});
  expect_near(y[0], {1 / 6.0, 2 / 6.0, 3 / 6.0});
  // The scale applies before the exponential; rows are independent; large
  // values do not overflow.
  auto z = run("scaled_softmax", {{"x", {2, 1, 2}}}, {{0, std::log(2.0), 1000, 1000}}, {2.0});
  expect_near(z[0], {1 / 5.0, 4 / 5.0, 0.5, 0.5});
}

TEST(Operators, Rmsnorm) {
  auto y = run("rmsnorm", {{"x", {1, 2}}}, {{3, 4}, {1, 2}}, {0.0});
  const double r = 1 / std::sqrt(12.5);
  expect_near(y[0], {3 * r, 8 * r});
  auto e = run("rmsnorm", {{"x", {1, 2}}}, {{0, 0}, {1, 1}}, {1e-6});
  expect_near(e[0], {0, 0});
}

TEST(Operators, Layernorm) {
  auto y = run("layernorm", {{"x", {1, 3}}}, {{1, 2, 3}, {1, 1, 2}, {0, 0, 1}}, {0.0});
  const double r = 1 / std::sqrt(2.0 / 3.0);
  expect_near(y[0], {-r, 0, 2 * r + 1});
}

TEST(Operators, AddRmsnorm) {
  auto out = run("add_rmsnorm", {{"x", {1, 2}}}, {{1, 2}, {2, 2}, {1, 1}}, {0.0});
  expect_near(out[0], {3, 4});
  const double r = 1 / std::sqrt(12.5);
  expect_near(out[1], {3 * r, 4 * r});
}

TEST(Operators, Swiglu) {
  auto y = run("swiglu", {{"g", {1, 2}}}, {{0, 1}, {5, 2}}, {});
  expect_near(y[0], {0, 2 / (1 + std::exp(-1.0))});
}

TEST(Operators, Gemm) {
  auto c = run("gemm", {{"A", {2, 2}}, {"B", {2, 2}}}, {{1, 2, 3, 4}, {5, 6, 7, 8}}, {});
  expect_near(c[0], {19, 22, 43, 50});
  auto d = run("gemm", {{"A", {1, 3}}, {"B", {3, 1}}}, {{1, 2, 3}, {4, 5, 6}}, {});
  expect_near(d[0], {32});
  const Operator& op = operators().get("gemm");
  auto shapes = op.bind_shapes({{"A", {8, 4}}, {"B", {4, 16}}}, "$");
  EXPECT_EQ(shapes[2], (Shape{8, 16}));
  EXPECT_DOUBLE_EQ(op.flops(shapes), 2.0 * 8 * 4 * 16);
  EXPECT_DOUBLE_EQ(op.bytes(shapes, DType::f32), 4.0 * (32 + 64 + 128));
}

void expect_shape_error(const std::string& op, const ShapeMap& given, const std::string& path,
                        const std::string& fragment) {
  try {
    operators().get(op).bind_shapes(given, "$.shapes");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), path);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Operators, ShapeErrorsNameTheTensor) {
  expect_shape_error("scaled_softmax", {{"x", {16}}}, "$.shapes.x", "expected rank 2 to 8");
  expect_shape_error("scaled_softmax", {}, "$.shapes.x", "missing");
  expect_shape_error("rmsnorm", {{"x", {4, 8}}, {"w", {4}}}, "$.shapes.w", "does not match [8]");
  expect_shape_error("rmsnorm", {{"x", {4, 8}}, {"q", {4}}}, "$.shapes.q", "unknown tensor");
  expect_shape_error("gemm", {{"A", {4, 8}}, {"B", {7, 2}}}, "$.shapes.B", "inner dimensions differ");
  expect_shape_error("gemm", {{"A", {4, 8}}}, "$.shapes.B", "missing");
  expect_shape_error("swiglu", {{"g", {4, 0}}}, "$.shapes.g[1]", "expected a size >= 1");
}

TEST(Operators, GeneratedInputsAreDeterministicAndInRange) {
  const Operator& op = operators().get("layernorm");
  Shape s = {10, 64};
  std::vector<float> a(640), b(640), c(640);
  generate_input(op, 0, {DType::f32, s, a.data()}, 7);
  generate_input(op, 0, {DType::f32, s, b.data()}, 7);
  generate_input(op, 0, {DType::f32, s, c.data()}, 8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // Rows carry offsets: means from about -6 to +6.
  for (int r = 0; r < 10; ++r) {
    double mean = 0;
    for (int j = 0; j < 64; ++j) mean += a[r * 64 + j];
    mean /= 64;
    double expect = -6 + 3 * (r % 5);
    EXPECT_NEAR(mean, expect, 0.8) << "row " << r;
  }
}

}  // namespace
}  // namespace kevo
