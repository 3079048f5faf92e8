#include "eval/compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/defined_operator.h"
#include "core/dtype.h"
#include "core/error.h"

namespace kevo {
namespace {

const Operator& op() { return operators().get("swiglu"); }

CheckReport cmp(std::vector<float> got, std::vector<float> want, const std::string& mode) {
  Shape s = {1, static_cast<int64_t>(got.size())};
  return compare_outputs(op(), {ConstTensorView(DType::f32, s, got.data())},
                         {ConstTensorView(DType::f32, s, want.data())}, {CompareMode::parse(mode)});
}

TEST(Compare, ExactIsBitwise) {
  EXPECT_TRUE(cmp({1, 2, 3}, {1, 2, 3}, "exact").passed);
  auto r = cmp({1, std::nextafter(2.0f, 3.0f), 3}, {1, 2, 3}, "exact");
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatches, 1);
  ASSERT_TRUE(r.first.has_value());
  EXPECT_EQ(r.first->index, 1);
  EXPECT_EQ(r.first->coords, "[0, 1]");
  EXPECT_EQ(r.first->tensor, "y");
  EXPECT_EQ(r.max_ulp, 1);
  EXPECT_FALSE(cmp({-0.0f}, {0.0f}, "exact").passed);  // bitwise means bitwise
}

TEST(Compare, UlpCounts) {
  float one = 1.0f;
  float three_up = std::nextafter(std::nextafter(std::nextafter(one, 2.0f), 2.0f), 2.0f);
  EXPECT_TRUE(cmp({three_up}, {one}, "ulp:3").passed);
  auto r = cmp({three_up}, {one}, "ulp:2");
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.max_ulp, 3);
}

TEST(Compare, TolUsesAbsoluteAndRelative) {
  EXPECT_TRUE(cmp({1.001f}, {1.0f}, "tol:0,0.002").passed);
  EXPECT_FALSE(cmp({1.003f}, {1.0f}, "tol:0,0.002").passed);
  EXPECT_TRUE(cmp({1e-6f}, {0.0f}, "tol:1e-5,0").passed);
  auto r = cmp({0.5f, 10.0f, 2.0f}, {0.5f, 10.5f, 2.0f}, "tol:0.1,0.01");
  EXPECT_FALSE(r.passed);
  EXPECT_NEAR(r.max_abs_err, 0.5, 1e-9);
  EXPECT_EQ(r.first->index, 1);
  EXPECT_FLOAT_EQ(static_cast<float>(r.first->got), 10.0f);
  EXPECT_FLOAT_EQ(static_cast<float>(r.first->want), 10.5f);
}

TEST(Compare, NanWhereTheReferenceHasNoneIsAMismatch) {
  auto r = cmp({1, NAN, 3}, {1, 2, 3}, "tol:1,1");
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatches, 1);
  EXPECT_NE(r.note.find("1 NaN output"), std::string::npos);
  // NaN where the reference is NaN is fine; a number there is not.
  EXPECT_TRUE(cmp({NAN}, {NAN}, "tol:0,0").passed);
  EXPECT_FALSE(cmp({1.0f}, {NAN}, "tol:1,1").passed);
  auto all = cmp({NAN, NAN}, {1, 2}, "ulp:4");
  EXPECT_NE(all.note.find("were the outputs written at all?"), std::string::npos);
}

TEST(Compare, InfinitiesMustMatch) {
  EXPECT_TRUE(cmp({INFINITY}, {INFINITY}, "tol:0,0").passed);
  EXPECT_FALSE(cmp({-INFINITY}, {INFINITY}, "tol:1e30,1").passed);
  EXPECT_FALSE(cmp({1e30f}, {INFINITY}, "tol:1e30,1").passed);
}

TEST(Compare, LargeOutputsFindTheFirstMismatch) {
  std::vector<float> want(200000, 1.0f), got = want;
  got[150001] = 2;
  got[70000] = 3;
  auto r = cmp(got, want, "tol:0,0");
  EXPECT_EQ(r.mismatches, 2);
  EXPECT_EQ(r.first->index, 70000);
  EXPECT_EQ(r.checked, 200000);
}

TEST(Compare, EachOutputUnderItsOwnModeInItsOwnDtype) {
  // Two outputs: y in f32, z in bf16 (parsed only: the reference is not run).
  auto two =
      DefinedOperator::parse(nlohmann::json::parse(R"({"name": "two", "sizes": ["N"], "source": "",
        "tensors": [{"name": "x", "role": "in", "shape": ["N"]},
                    {"name": "y", "role": "out", "shape": ["N"]},
                    {"name": "z", "role": "out", "dtype": "bf16", "shape": ["N"]}]})"),
                             "$", {});
  std::vector<float> y_want = {1, 2, 3}, y_got = {1, 2.0001f, 3};
  std::vector<uint16_t> z_want = {float_to_bf16(1), float_to_bf16(2), float_to_bf16(3)};
  std::vector<uint16_t> z_got = z_want;
  z_got[2] += 1;  // one bf16 ulp
  auto run = [&](const std::string& y_mode, const std::string& z_mode) {
    return compare_outputs(*two,
                           {ConstTensorView(DType::f32, {3}, y_got.data()),
                            ConstTensorView(DType::bf16, {3}, z_got.data())},
                           {ConstTensorView(DType::f32, {3}, y_want.data()),
                            ConstTensorView(DType::bf16, {3}, z_want.data())},
                           {CompareMode::parse(y_mode), CompareMode::parse(z_mode)});
  };
  // y is 1e-4 off, z one ulp: tolerant y and exact z fails z only.
  CheckReport r = run("tol:0,1e-3", "exact");
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatches, 1);
  EXPECT_EQ(r.failed_outputs, std::vector<std::string>{"z"});
  ASSERT_TRUE(r.first.has_value());
  EXPECT_EQ(r.first->tensor, "z");
  EXPECT_EQ(r.first->compare, "exact");
  EXPECT_EQ(r.first->coords, "[2]");
  EXPECT_EQ(r.first->want, 3.0);
  EXPECT_TRUE(run("tol:0,1e-3", "ulp:1").passed);
  // The first failing output is the first mismatch; both are listed.
  CheckReport both = run("exact", "exact");
  EXPECT_EQ(both.failed_outputs, (std::vector<std::string>{"y", "z"}));
  EXPECT_EQ(both.first->tensor, "y");
  EXPECT_EQ(check_to_json(both)["failed_outputs"], nlohmann::json({"y", "z"}));
  EXPECT_EQ(check_to_json(both)["first_mismatch"]["compare"], "exact");
}

// bf16 and f32 are compared by a loop of their own: it must say what the
// element-by-element definition (load_element, ulp_distance) says, for
// every bf16 pattern (NaNs, infinities, zeros of both signs, subnormals)
// against neighbours and specials, under each mode.
TEST(Compare, TheBf16AndF32LoopsAgreeWithTheDefinition) {
  std::vector<uint16_t> got, want;
  const uint16_t specials[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x3f80, 0xbf80, 0x7f80,
                               0xff80, 0x7fc0, 0xffc1, 0x7f7f, 0x0080};
  for (uint32_t b = 0; b < 65536; ++b) {
    got.push_back(static_cast<uint16_t>(b));
    want.push_back(static_cast<uint16_t>(b % 7 == 0 ? specials[b % 12] : b + (b % 5) - 2));
  }
  // The same values widened to f32 bit patterns, with low bits set on some.
  std::vector<uint32_t> got32, want32;
  for (size_t i = 0; i < got.size(); ++i) {
    got32.push_back((uint32_t{got[i]} << 16) | (i % 3 == 0 ? 0x1234u : 0u));
    want32.push_back(uint32_t{want[i]} << 16);
  }
  const Shape s = {static_cast<int64_t>(got.size())};
  for (const char* text : {"exact", "ulp:1", "ulp:3", "tol:0,0", "tol:1e-3,0.016", "tol:1,1"}) {
    const CompareMode mode = CompareMode::parse(text);
    for (DType dt : {DType::bf16, DType::f32}) {
      const void* g = dt == DType::bf16 ? static_cast<const void*>(got.data()) : got32.data();
      const void* w = dt == DType::bf16 ? static_cast<const void*>(want.data()) : want32.data();
      int64_t mismatches = 0, first = -1;
      double max_abs = 0, max_ulp = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        const double gv = load_element(dt, g, i), wv = load_element(dt, w, i);
        const bool gn = std::isnan(gv), wn = std::isnan(wv);
        double abs_err = gv == wv ? 0.0 : std::fabs(gv - wv), ulp = ulp_distance(dt, g, w, i);
        bool ok;
        if (wn) ok = gn;
        else if (gn) ok = false;
        else if (mode.kind == CompareMode::exact)
          ok = std::memcmp(static_cast<const char*>(g) + i * dtype_size(dt),
                           static_cast<const char*>(w) + i * dtype_size(dt), dtype_size(dt)) == 0;
        else if (mode.kind == CompareMode::ulp) ok = ulp <= static_cast<double>(mode.max_ulp);
        else if (std::isinf(wv)) ok = gv == wv;
        else ok = abs_err <= mode.atol + mode.rtol * std::fabs(wv);
        if (!gn && !wn) {
          max_abs = std::max(max_abs, abs_err);
          max_ulp = std::max(max_ulp, ulp);
        }
        if (!ok && first < 0) first = static_cast<int64_t>(i);
        mismatches += !ok;
      }
      const CheckReport r = compare_outputs(op(), {ConstTensorView(dt, s, g)}, {ConstTensorView(dt, s, w)}, {mode});
      SCOPED_TRACE(fmt::format("{} {}", dtype_name(dt), text));
      EXPECT_GT(mismatches, 0);  // the data exercises the mode
      EXPECT_EQ(r.mismatches, mismatches);
      EXPECT_EQ(r.max_abs_err, max_abs);
      EXPECT_EQ(r.max_ulp, max_ulp);
      ASSERT_TRUE(r.first.has_value());
      EXPECT_EQ(r.first->index, first);
    }
  }
}

TEST(Compare, ModesParseAndPrint) {
  EXPECT_EQ(CompareMode::parse("ulp:4").str(), "ulp:4");
  EXPECT_EQ(CompareMode::parse("tol:1e-05,0.001").str(), "tol:1e-05,0.001");
  EXPECT_EQ(CompareMode::parse("exact").str(), "exact");
  for (const char* bad : {"ulp:", "ulp:-1", "ulp:x", "tol:1", "tol:a,b", "tol:-1,0", "close"})
    EXPECT_THROW(CompareMode::parse(bad), UserError) << bad;
}

}  // namespace
}  // namespace kevo
