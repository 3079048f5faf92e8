#include "core/expr.h"

#include <map>

#include <gtest/gtest.h>

namespace kevo {
namespace {

std::optional<int64_t> eval(const std::string& text, std::map<std::string, int64_t> vars = {}) {
  std::vector<std::string> names;
  std::vector<int64_t> values;
  for (const auto& [k, v] : vars) {
    names.push_back(k);
    values.push_back(v);
  }
  Expr e = Expr::parse(text, names);
  return e.evaluate(values.data());
}

TEST(Expr, Arithmetic) {
  EXPECT_EQ(eval("1 + 2 * 3"), 7);
  EXPECT_EQ(eval("(1 + 2) * 3"), 9);
  EXPECT_EQ(eval("7 / 2"), 3);
  EXPECT_EQ(eval("-7 % 3"), -1);
  EXPECT_EQ(eval("- -4"), 4);
  EXPECT_EQ(eval("10 - 2 - 3"), 5);  // left associative
}

TEST(Expr, LogicAndComparisons) {
  EXPECT_EQ(eval("BLOCK * VEC <= 4096", {{"BLOCK", 512}, {"VEC", 8}}), 1);
  EXPECT_EQ(eval("BLOCK * VEC <= 4096", {{"BLOCK", 1024}, {"VEC", 8}}), 0);
  EXPECT_EQ(eval("A == 1 || B != 2 && !C", {{"A", 0}, {"B", 2}, {"C", 0}}), 0);
  EXPECT_EQ(eval("A == 1 || (B != 2 || !C)", {{"A", 0}, {"B", 2}, {"C", 0}}), 1);
  EXPECT_EQ(eval("3 > 2 && 2 >= 2 && 1 < 2"), 1);
}

TEST(Expr, ShortCircuitAvoidsDivisionByZero) {
  EXPECT_EQ(eval("B != 0 && A / B > 2", {{"A", 10}, {"B", 0}}), 0);
  EXPECT_EQ(eval("B == 0 || A / B > 2", {{"A", 10}, {"B", 0}}), 1);
}

TEST(Expr, OverflowAndDivisionByZeroHaveNoValue) {
  EXPECT_FALSE(eval("1 / 0").has_value());
  EXPECT_FALSE(eval("5 % 0").has_value());
  EXPECT_FALSE(eval("9223372036854775807 + 1").has_value());
  EXPECT_FALSE(eval("4611686018427387904 * 4").has_value());
}

TEST(Expr, NamesAreRecorded) {
  Expr e = Expr::parse("A * B + A", {"A", "B", "C"});
  EXPECT_EQ(e.names(), (std::vector<std::string>{"A", "B"}));
}

void expect_error(const std::string& text, const std::string& fragment, int column) {
  try {
    Expr::parse(text, {"BLOCK", "VEC"});
    FAIL() << "no error for " << text;
  } catch (const ExprError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_EQ(e.column(), column) << text;
  }
}

TEST(Expr, ErrorsSayWhatAndWhere) {
  expect_error("BLOCK * VECC", "unknown name 'VECC' (known: BLOCK, VEC)", 9);
  expect_error("BLOCK *", "unexpected end of expression", 8);
  expect_error("(BLOCK + 1", "missing ')'", 11);
  expect_error("BLOCK $ 2", "unexpected character '$'", 7);
  expect_error("1 < 2 < 3", "chained comparison", 7);
  expect_error("BLOCK VEC", "unexpected 'VEC'", 7);
  expect_error("12abc", "bad number", 1);
  expect_error("", "unexpected end of expression", 1);
  expect_error("system(1)", "unknown name 'system'", 1);
}

// Found with the fuzz harness tests/fuzz/fuzz_expr (a hand-made input):
// parsing, evaluating and freeing recursed once per level, so a `@kevo require`
// line nested or chained a few ten thousand deep overflowed kevo's stack. Now a
// depth limit refuses it.
TEST(Expr, DeepNestingIsAnErrorNotACrash) {
  const std::string parens = std::string(100000, '(') + "1" + std::string(100000, ')');
  const std::string prefix = std::string(100000, '-') + "1";
  std::string chain = "1";
  for (int i = 0; i < 100000; ++i) chain += "+1";
  for (const std::string& text : {parens, prefix, chain}) {
    try {
      Expr::parse(text, {});
      ADD_FAILURE() << "no error for " << text.substr(0, 20) << "...";
    } catch (const ExprError& e) {
      EXPECT_NE(std::string(e.what()).find("more than 128 deep"), std::string::npos) << e.what();
    }
  }
  // What real constraints need stays well inside the limit.
  std::string nested = std::string(100, '(') + "1" + std::string(100, ')');
  EXPECT_EQ(eval(nested + " + " + chain.substr(0, 2 * 100 + 1)), 102);
}

}  // namespace
}  // namespace kevo
