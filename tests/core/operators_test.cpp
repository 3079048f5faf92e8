#include "core/operator.h"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/defined_operator.h"
#include "core/error.h"
#include "core/task.h"

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
  for (const char* n :
       {"scaled_softmax", "rmsnorm", "layernorm", "add_rmsnorm", "swiglu", "gemm", "gemm_swiglu"})
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

double silu(double g) {
  return g / (1 + std::exp(-g));
}

TEST(Operators, GemmSwiglu) {
  // g = A·Wg = [2, -1], u = A·Wu = [3, 5] for the one row [1, 2].
  auto y = run("gemm_swiglu", {{"A", {1, 2}}, {"Wg", {2, 2}}},
               {{1, 2}, {1, -1, 0.5, 0}, {3, 1, 0, 2}}, {});
  expect_near(y[0], {2 / (1 + std::exp(-2.0)) * 3, -1 / (1 + std::exp(1.0)) * 5});
  // Rows are independent; g = 0 gives 0 whatever u is; K = 1.
  auto z = run("gemm_swiglu", {{"A", {2, 1}}, {"Wg", {1, 3}}}, {{0, 2}, {1, 2, 3}, {4, 5, 6}}, {});
  expect_near(z[0], {0, 0, 0, silu(2) * 8, silu(4) * 10, silu(6) * 12});
  const Operator& op = operators().get("gemm_swiglu");
  auto shapes = op.bind_shapes({{"A", {8, 4}}, {"Wg", {4, 16}}}, "$");
  EXPECT_EQ(shapes[2], (Shape{4, 16}));
  EXPECT_EQ(shapes[3], (Shape{8, 16}));
  EXPECT_DOUBLE_EQ(op.flops(shapes), 4.0 * 8 * 4 * 16 + 5.0 * 8 * 16);
  EXPECT_DOUBLE_EQ(op.bytes(shapes, DType::f32), 4.0 * (32 + 64 + 64 + 128));
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
  expect_shape_error("scaled_softmax", {{"x", {1, 1, 1, 1, 1, 1, 1, 1, 16}}}, "$.shapes.x",
                     "expected rank 1 to 8");
  expect_shape_error("scaled_softmax", {}, "$.shapes.x", "missing");
  expect_shape_error("rmsnorm", {{"x", {4, 8}}, {"w", {4}}}, "$.shapes.w[0]",
                     "size N is 4 here but 8 in x");
  expect_shape_error("rmsnorm", {{"x", {4, 8}}, {"q", {4}}}, "$.shapes.q", "unknown tensor");
  expect_shape_error("gemm", {{"A", {4, 8}}, {"B", {7, 2}}}, "$.shapes.B[0]",
                     "size K is 7 here but 8 in A");
  expect_shape_error("gemm", {{"A", {4, 8}}, {"B", {8, 2}}, {"C", {4, 3}}}, "$.shapes.C[1]",
                     "size N is 3 here but 2 in B");
  expect_shape_error("gemm", {{"A", {4, 8}}}, "$.shapes.B", "missing");
  expect_shape_error("swiglu", {{"g", {4, 0}}}, "$.shapes.g[1]", "expected a size >= 1");
  expect_shape_error("gemm_swiglu", {{"A", {4, 8}}, {"Wg", {8, 2}}, {"Wu", {8, 3}}},
                     "$.shapes.Wu[1]", "size N is 3 here but 2 in Wg");
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

// Each shipped reference (operators/*.cpp) on small ragged shapes, inputs from
// its own distributions, against a plain computation written here.
struct Generated {
  std::vector<Shape> shapes;
  std::vector<std::vector<double>> in, out;
};

Generated generate_and_run(const std::string& name, const ShapeMap& given,
                           const std::vector<double>& scalars) {
  const Operator& op = operators().get(name);
  Generated g;
  g.shapes = op.bind_shapes(given, "$.shapes");
  std::vector<ConstTensorView> in;
  for (size_t i = 0; i < op.n_inputs(); ++i) {
    g.in.emplace_back(static_cast<size_t>(numel(g.shapes[i])));
    generate_input(op, i, {DType::f64, g.shapes[i], g.in.back().data()}, 3);
  }
  for (size_t i = 0; i < op.n_inputs(); ++i)
    in.emplace_back(DType::f64, g.shapes[i], g.in[i].data());
  for (size_t i = op.n_inputs(); i < g.shapes.size(); ++i)
    g.out.emplace_back(static_cast<size_t>(numel(g.shapes[i])), NAN);
  std::vector<TensorView> out;
  for (size_t i = 0; i < g.out.size(); ++i)
    out.push_back({DType::f64, g.shapes[op.n_inputs() + i], g.out[i].data()});
  op.reference(in, scalars, out);
  return g;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-12 + 1e-10 * std::fabs(want[i])) << what << " at " << i;
}

const std::vector<ShapeMap> kRagged = {
    {{"x", {5}}}, {{"x", {3, 37}}}, {{"x", {2, 3, 17}}}, {{"x", {1, 1}}}};

TEST(ShippedReferences, ScaledSoftmax) {
  for (const auto& given : kRagged) {
    auto g = generate_and_run("scaled_softmax", given, {0.125});
    const int64_t n = g.shapes[0].back(), rows = numel(g.shapes[0]) / n;
    std::vector<double> want(g.out[0].size());
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0;  // no max subtracted: x * 0.125 stays far below exp's limit in f64
      for (int64_t j = 0; j < n; ++j) sum += std::exp(0.125 * g.in[0][r * n + j]);
      for (int64_t j = 0; j < n; ++j) want[r * n + j] = std::exp(0.125 * g.in[0][r * n + j]) / sum;
    }
    expect_close(g.out[0], want, "scaled_softmax " + shape_str(g.shapes[0]));
  }
}

TEST(ShippedReferences, RmsnormLayernormAndSwiglu) {
  for (const auto& given : kRagged) {
    const Shape x = given.at("x");
    const int64_t n = x.back(), rows = numel(x) / n;
    auto rms = generate_and_run("rmsnorm", given, {1e-6});
    auto ln = generate_and_run("layernorm", given, {1e-5});
    auto sw = generate_and_run("swiglu", {{"g", x}}, {});
    std::vector<double> want_rms(rms.out[0].size()), want_ln(ln.out[0].size()),
        want_sw(sw.out[0].size());
    for (int64_t r = 0; r < rows; ++r) {
      double sq = 0, sum = 0, sum_ln = 0;
      for (int64_t j = 0; j < n; ++j) {
        sq += rms.in[0][r * n + j] * rms.in[0][r * n + j];
        sum_ln += ln.in[0][r * n + j];
      }
      const double mean = sum_ln / n;
      for (int64_t j = 0; j < n; ++j) sum += std::pow(ln.in[0][r * n + j] - mean, 2);
      for (int64_t j = 0; j < n; ++j) {
        want_rms[r * n + j] = rms.in[0][r * n + j] / std::sqrt(sq / n + 1e-6) * rms.in[1][j];
        want_ln[r * n + j] =
            (ln.in[0][r * n + j] - mean) / std::sqrt(sum / n + 1e-5) * ln.in[1][j] + ln.in[2][j];
        const double gv = sw.in[0][r * n + j];
        want_sw[r * n + j] = gv * (1 / (1 + std::exp(-gv))) * sw.in[1][r * n + j];
      }
    }
    expect_close(rms.out[0], want_rms, "rmsnorm " + shape_str(x));
    expect_close(ln.out[0], want_ln, "layernorm " + shape_str(x));
    expect_close(sw.out[0], want_sw, "swiglu " + shape_str(x));
  }
}

TEST(ShippedReferences, Gemm) {
  const std::vector<std::array<int64_t, 3>> mkn = {{5, 37, 19}, {1, 1, 1}, {3, 130, 7}};
  for (const auto& [m, k, n] : mkn) {
    auto g = generate_and_run("gemm", {{"A", {m, k}}, {"B", {k, n}}}, {});
    std::vector<double> want(static_cast<size_t>(m * n));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) acc += g.in[0][i * k + p] * g.in[1][p * n + j];
        want[i * n + j] = acc;
      }
    expect_close(g.out[0], want, fmt::format("gemm {}x{}x{}", m, k, n));
  }
}

// The weights come from [-1/8, 1/8] (operators/gemm_swiglu.cpp says why), A
// from [-1, 1]; the ragged shapes include M = 1 and K = 1.
TEST(ShippedReferences, GemmSwiglu) {
  const std::vector<std::array<int64_t, 3>> mkn = {
      {5, 37, 19}, {1, 517, 75}, {1, 1, 1}, {3, 130, 7}};
  for (const auto& [m, k, n] : mkn) {
    auto g = generate_and_run("gemm_swiglu", {{"A", {m, k}}, {"Wg", {k, n}}}, {});
    ASSERT_EQ(g.shapes[2], (Shape{k, n}));
    double a_max = 0, w_max = 0;
    for (double v : g.in[0]) a_max = std::max(a_max, std::fabs(v));
    for (size_t t = 1; t <= 2; ++t)
      for (double v : g.in[t]) w_max = std::max(w_max, std::fabs(v));
    EXPECT_LE(a_max, 1.0);
    EXPECT_LE(w_max, 0.125);
    if (k * n >= 1000) {
      EXPECT_GT(a_max, 0.9);
      EXPECT_GT(w_max, 0.11);
    }
    std::vector<double> want(static_cast<size_t>(m * n));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double gate = 0, up = 0;
        for (int64_t p = 0; p < k; ++p) {
          gate += g.in[0][i * k + p] * g.in[1][p * n + j];
          up += g.in[0][i * k + p] * g.in[2][p * n + j];
        }
        want[i * n + j] = silu(gate) * up;
      }
    expect_close(g.out[0], want, fmt::format("gemm_swiglu {}x{}x{}", m, k, n));
  }
}

// h is an output in the task dtype and y the norm of that stored h: with h in
// bf16 and y read in f64, y must follow the rounded h, not x + r.
TEST(ShippedReferences, AddRmsnormNormalizesTheStoredH) {
  const Operator& op = operators().get("add_rmsnorm");
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    const Shape s = {3, 37};
    const int64_t n = 37;
    std::vector<std::vector<char>> in;
    std::vector<ConstTensorView> views;
    auto shapes = op.bind_shapes({{"x", s}}, "$");
    for (size_t i = 0; i < 3; ++i) {
      in.emplace_back(static_cast<size_t>(numel(shapes[i])) * dtype_size(dt));
      generate_input(op, i, {dt, shapes[i], in.back().data()}, 5);
      views.emplace_back(dt, shapes[i], in.back().data());
    }
    std::vector<char> h(static_cast<size_t>(numel(s)) * dtype_size(dt));
    std::vector<double> y(static_cast<size_t>(numel(s)));
    op.reference(views, {1e-6}, {{dt, s, h.data()}, {DType::f64, s, y.data()}});
    for (int64_t r = 0; r < 3; ++r) {
      std::vector<double> stored(n);
      double sq = 0;
      for (int64_t j = 0; j < n; ++j) {
        const size_t i = static_cast<size_t>(r * n + j);
        std::vector<char> one(dtype_size(dt));
        store_element(dt, one.data(), 0, views[0].at(i) + views[1].at(i));
        stored[j] = load_element(dt, one.data(), 0);
        EXPECT_EQ(load_element(dt, h.data(), i), stored[j]) << dtype_name(dt) << " h at " << i;
        sq += stored[j] * stored[j];
      }
      for (int64_t j = 0; j < n; ++j) {
        const double want = stored[j] / std::sqrt(sq / n + 1e-6) * views[2].at(j);
        ASSERT_NEAR(y[r * n + j], want, 1e-13 * std::fabs(want) + 1e-15)
            << dtype_name(dt) << " y at " << r * n + j;
      }
    }
  }
}

// The built-ins are definitions like a task's own, but keep their identity as
// names: runners find them by name, and task hashes do not carry a definition.
TEST(Operators, BuiltinsAreShippedDefinitions) {
  for (const auto& name : operators().names()) {
    auto* d = dynamic_cast<const DefinedOperator*>(&operators().get(name));
    ASSERT_NE(d, nullptr) << name;
    EXPECT_TRUE(d->builtin()) << name;
    EXPECT_TRUE(operator_definition(*d).is_null()) << name;
    EXPECT_EQ(d->definition()["origin"], "operators/" + name + ".cpp");
  }
  EXPECT_EQ(operators().names().size(), 7u);
  // The task hash holds the operator's name and its check shapes as given:
  // both as they were when the built-ins were C++ classes.
  Task t = parse_task({{"operator", "swiglu"}, {"shapes", {{"g", {4, 8}}}}});
  EXPECT_EQ(t.config["operator"], "swiglu");
  EXPECT_FALSE(t.resolved.contains("operator_definition"));
  EXPECT_EQ(t.resolved["check_shapes"],
            nlohmann::json::parse(R"([{"g": [7, 1003]}, {"g": [3, 2, 17]}, {"g": [5, 1]}])"));
  EXPECT_EQ(operators().get("gemm").small_check_shapes()[1],
            (ShapeMap{{"A", {130, 61}}, {"B", {61, 67}}}));
}

TEST(Operators, DefaultComparisonsDependOnDtypeAndSize) {
  const Operator& gemm = operators().get("gemm");
  auto shapes = gemm.bind_shapes({{"A", {8, 1000}}, {"B", {1000, 3}}}, "$");
  EXPECT_EQ(gemm.default_compares(DType::f32, shapes)[0].str(), "tol:0.0005,1e-05");
  EXPECT_EQ(gemm.default_compares(DType::bf16, shapes)[0].str(), "tol:1,0.016");
  EXPECT_EQ(gemm.default_compares(DType::i8, shapes)[0].str(), "exact");
  // gemm_swiglu: one atol, 4e-7 per term of K, for every float dtype; rtol by the output's.
  const Operator& gs = operators().get("gemm_swiglu");
  auto gss = gs.bind_shapes({{"A", {8, 1000}}, {"Wg", {1000, 3}}}, "$");
  EXPECT_EQ(gs.default_compares(DType::f32, gss)[0].str(), "tol:0.0004,1e-05");
  EXPECT_EQ(gs.default_compares(DType::f16, gss)[0].str(), "tol:0.0004,0.002");
  EXPECT_EQ(gs.default_compares(DType::bf16, gss)[0].str(), "tol:0.0004,0.016");
  EXPECT_EQ(gs.default_compares(DType::i8, gss)[0].str(), "exact");
  const Operator& softmax = operators().get("scaled_softmax");
  auto s = softmax.bind_shapes({{"x", {4, 8}}}, "$");
  EXPECT_EQ(softmax.default_compares(DType::f32, s)[0].str(), "tol:1e-07,0.0001");
  EXPECT_EQ(softmax.default_compares(DType::f16, s)[0].str(), "tol:1e-05,0.002");
  EXPECT_EQ(operators().get("rmsnorm").default_compares(DType::f32, s)[0].str(),
            "tol:1e-06,1e-05");
}

// "..." takes any number of leading dimensions, shared by every tensor that
// has it; BATCH counts them.
TEST(Operators, LeadingDimensions) {
  const Operator& sw = operators().get("swiglu");
  for (const Shape& g : {Shape{9}, Shape{4, 9}, Shape{2, 3, 9}}) {
    auto shapes = sw.bind_shapes({{"g", g}}, "$.shapes");
    EXPECT_EQ(shapes[1], g);
    EXPECT_EQ(shapes[2], g);
    EXPECT_EQ(sw.flops(shapes), 5.0 * static_cast<double>(numel(g)));
  }
  auto shapes = operators().get("rmsnorm").bind_shapes({{"x", {2, 3, 9}}}, "$.shapes");
  EXPECT_EQ(shapes[1], (Shape{9}));
  expect_shape_error("swiglu", {{"g", {2, 3, 9}}, {"u", {2, 4, 9}}}, "$.shapes.u",
                     "leading dimensions [2, 4]");
  expect_shape_error("swiglu", {{"g", {3, 9}}, {"u", {9}}}, "$.shapes.u", "differ from [3] in g");
  expect_shape_error("swiglu", {{"u", {3, 9}}, {"y", {3, 9, 1}}}, "$.shapes.y",
                     "leading dimensions [3, 9] (the \"...\" of [..., N]) differ from [3] in u");
  expect_shape_error("swiglu", {{"u", {3, 9}}, {"y", {3, 8}}}, "$.shapes.y[1]", "size N is 8 here");
  expect_shape_error("rmsnorm", {{"w", {9}}}, "$.shapes.x", "missing: the \"...\" dimensions");
}

}  // namespace
}  // namespace kevo
