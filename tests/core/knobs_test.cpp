#include "core/knobs.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/space.h"
#include "support/test_support.h"

namespace kevo {
namespace {

const char* kSource = R"(
#include "kevo_kernel.h"
// @kevo knob BLOCK 256 {64, 128, 256, 512, 1024}
// @kevo knob VEC 4 {1, 2, 4, 8}
/* @kevo knob UNROLL 1 {1, 2} */
// @kevo require BLOCK * VEC <= 2048
// @kevo require UNROLL == 1 || VEC >= 4
// This line mentions @kevo knob in prose and is not a declaration.
int kevo_kernel(void) { return 0; }
)";

TEST(Knobs, ParsesDeclarations) {
  KnobSpace s = KnobSpace::parse_source(kSource, "k.c");
  ASSERT_EQ(s.knobs().size(), 3u);
  EXPECT_EQ(s.knobs()[0].name, "BLOCK");
  EXPECT_EQ(s.knobs()[0].default_value, 256);
  EXPECT_EQ(s.knobs()[0].values, (std::vector<int64_t>{64, 128, 256, 512, 1024}));
  EXPECT_EQ(s.knobs()[0].line, 3);
  EXPECT_EQ(s.knobs()[2].name, "UNROLL");
  EXPECT_EQ(s.constraints().size(), 2u);
  EXPECT_EQ(s.defaults(), (KnobValues{{"BLOCK", 256}, {"UNROLL", 1}, {"VEC", 4}}));
}

TEST(Knobs, EnumeratesOnlyValidPoints) {
  KnobSpace s = KnobSpace::parse_source(kSource, "k.c");
  EXPECT_EQ(s.size_unconstrained(), 40u);
  auto all = s.enumerate_valid();
  // Count by hand: BLOCK*VEC <= 2048 and (UNROLL == 1 or VEC >= 4).
  size_t expect = 0;
  for (int64_t b : {64, 128, 256, 512, 1024})
    for (int64_t v : {1, 2, 4, 8})
      for (int64_t u : {1, 2})
        if (b * v <= 2048 && (u == 1 || v >= 4)) ++expect;
  EXPECT_EQ(all.size(), expect);
  for (const auto& p : all) {
    EXPECT_LE(p.at("BLOCK") * p.at("VEC"), 2048);
    EXPECT_TRUE(p.at("UNROLL") == 1 || p.at("VEC") >= 4);
    EXPECT_TRUE(s.valid(p));
  }
  EXPECT_EQ(s.enumerate_valid(3).size(), 3u);
}

// Every point of `s` in mixed-radix order (last knob fastest), kept where
// valid() says so: the plain count that for_each_valid's pruning replaces.
std::vector<KnobValues> counted_valid(const KnobSpace& s) {
  std::vector<KnobValues> out;
  const auto& k = s.knobs();
  std::vector<size_t> idx(k.size(), 0);
  for (;;) {
    KnobValues v;
    for (size_t i = 0; i < k.size(); ++i) v[k[i].name] = k[i].values[idx[i]];
    if (s.valid(v)) out.push_back(v);
    size_t i = k.size();
    for (;;) {
      if (i == 0) return out;
      --i;
      if (++idx[i] < k[i].values.size()) break;
      idx[i] = 0;
    }
  }
}

TEST(Knobs, EnumerationSkipsWhatAConstraintRulesOutAndKeepsTheCountsOrder) {
  // Constraints on the first knob, on the last, across all, one that divides
  // by zero for some points (invalid there), and one that reads no knob.
  KnobSpace s = KnobSpace::parse_source(R"(
// @kevo knob A 1 {1, 2, 3, 4}
// @kevo knob B 0 {0, 1, 2}
// @kevo knob C 8 {8, 16, 32}
// @kevo knob D 1 {1, 2, 4, 8}
// @kevo require A != 3
// @kevo require D <= 4 || B == 0
// @kevo require 16 / (A - 2) >= 0 || C == 8
// @kevo require A * C * D <= 128
// @kevo require 1 + 1 == 2
)", "k.c");
  const auto all = s.enumerate_valid();
  EXPECT_EQ(all, counted_valid(s));
  EXPECT_GT(all.size(), 10u);
  EXPECT_LT(all.size(), s.size_unconstrained());
  EXPECT_TRUE(s.with_require("1 == 2").enumerate_valid().empty());
  // A shipped family's own constraints (swapab: 8,640 combinations).
  std::ifstream f(test::repo_dir() / "targets/cuda/kernels/gemm/swapab.cu");
  std::stringstream text;
  text << f.rdbuf();
  KnobSpace shipped = KnobSpace::parse_source(text.str(), "swapab.cu");
  const auto kept = shipped.enumerate_valid();
  EXPECT_EQ(kept, counted_valid(shipped));
  EXPECT_LT(kept.size(), shipped.size_unconstrained());
}

TEST(Knobs, ResolveChecksOverrides) {
  KnobSpace s = KnobSpace::parse_source(kSource, "k.c");
  EXPECT_EQ(s.resolve({{"VEC", 8}}).at("VEC"), 8);
  EXPECT_THROW(s.resolve({{"VEC", 3}}), UserError);
  EXPECT_THROW(s.resolve({{"WIDTH", 2}}), UserError);
  try {
    s.resolve({{"BLOCK", 1024}, {"VEC", 8}});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("BLOCK * VEC <= 2048"), std::string::npos) << e.what();
  }
}

TEST(Knobs, RestrictKeepsAValidDefault) {
  KnobSpace s = KnobSpace::parse_source(kSource, "k.c");
  s.restrict("BLOCK", {64, 128, 4096});
  EXPECT_EQ(s.knobs()[0].values, (std::vector<int64_t>{64, 128}));
  EXPECT_EQ(s.defaults().at("BLOCK"), 64);
  EXPECT_THROW(s.restrict("VEC", {3}), UserError);
  EXPECT_THROW(s.restrict("NOPE", {1}), UserError);
}

TEST(Knobs, WithRequireNarrowsACopy) {
  const KnobSpace s = KnobSpace::parse_source(kSource, "k.c");
  const KnobSpace narrow = s.with_require("VEC == 8 && BLOCK <= NCPU * 1024");
  EXPECT_EQ(narrow.constraints().size(), s.constraints().size() + 1);
  const auto points = narrow.enumerate_valid();
  ASSERT_FALSE(points.empty());
  for (const auto& p : points) {
    EXPECT_EQ(p.at("VEC"), 8);
    EXPECT_TRUE(s.valid(p));  // the source's own constraints still hold
  }
  size_t expect = 0;  // VEC 8: BLOCK <= 256 by BLOCK * VEC <= 2048, both UNROLL values
  for (const auto& p : s.enumerate_valid())
    expect += p.at("VEC") == 8 && p.at("BLOCK") <= online_cpus() * 1024;
  EXPECT_EQ(points.size(), expect);
  EXPECT_GT(s.enumerate_valid().size(), points.size());  // the original is unchanged
  EXPECT_THROW(s.with_require("WIDTH > 1"), ExprError);
  EXPECT_THROW(s.with_require("VEC >"), ExprError);
}

TEST(Knobs, BuiltinNcpu) {
  KnobSpace s = KnobSpace::parse_source(
      "// @kevo knob THREADS 1 {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096}\n"
      "// @kevo require THREADS <= NCPU\n",
      "t.c");
  size_t n = s.enumerate_valid().size();
  size_t expect = 0;
  for (int64_t t = 1; t <= 4096; t *= 2) expect += t <= online_cpus() ? 1 : 0;
  EXPECT_EQ(n, expect);
}

void expect_error(const std::string& src, const std::string& fragment) {
  try {
    KnobSpace::parse_source(src, "bad.c");
    FAIL() << "no error for: " << src;
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Knobs, ErrorsNameFileAndLine) {
  expect_error("\n// @kevo knob A 3 {1, 2}\n", "bad.c:2: knob A: default 3 is not among its values");
  expect_error("// @kevo knob A 1 {1, x}\n", "bad.c:1: knob A: value 'x' is not an integer");
  expect_error("// @kevo knob A 1 {1, 1}\n", "value 1 listed twice");
  expect_error("// @kevo knob A 1 {}\n", "no values");
  expect_error("// @kevo knob A 1\n", "malformed knob declaration");
  expect_error("// @kevo knob A 1 {1}\n// @kevo knob A 1 {1}\n", "bad.c:2: knob 'A' declared twice");
  expect_error("// @kevo knob NCPU 1 {1}\n", "builtin name");
  expect_error("// @kevo knobs A 1 {1}\n", "unknown @kevo directive 'knobs'");
  expect_error("// @kevo knob A 1 {1, 2}\n// @kevo require A * B > 1\n",
               "bad.c:2: in '@kevo require A * B > 1' at column 5: unknown name 'B'");
  expect_error("// @kevo knob A 1 {1, 2}\n// @kevo require A >\n", "unexpected end of expression");
  expect_error("// @kevo knob A 1 {1, 2}\n// @kevo require A > 1\n", "default knob values (A=1) violate");
}

// Found while writing fuzz_knobs: a search space keeps a point as one byte
// per knob, so the 300th value of a knob came back as the 44th (300 mod 256)
// and the search measured points nobody asked for. More than 256 values is
// now a declaration error; 256 still index correctly.
TEST(Knobs, AtMost256ValuesPerKnobAndEachIndexesBack) {
  auto source = [](int n) {
    std::string list;
    for (int v = 0; v < n; ++v) list += (v ? ", " : "") + std::to_string(v);
    return "// @kevo knob A 0 {" + list + "}\n";
  };
  expect_error(source(300), "bad.c:1: knob A: more than 256 values");
  SearchSpace space({make_family("f", "f.c", source(256), "c")});
  ASSERT_EQ(space.size(), 256u);
  for (uint64_t i = 0; i < space.size(); ++i)
    EXPECT_EQ(space.at(i).knobs.at("A"), static_cast<int64_t>(i));
}

// Found with the fuzz harness tests/fuzz/fuzz_knobs (a hand-made input): the
// directive is matched with std::regex, which recurses per character, and a
// long @kevo line (from an LLM's kernel, say) overflowed kevo's stack. Such a
// line is now refused.
TEST(Knobs, OverlongDirectiveLineIsAnErrorNotACrash) {
  expect_error("// @kevo require " + std::string(1 << 20, 'A') + "\n",
               "bad.c:1: a line with @kevo of 1048593 characters (at most 4096)");
  expect_error("// @kevo knob A 1 {1" + std::string(1 << 20, ' ') + "}\n", "at most 4096");
  // A line of code without @kevo may be as long as it likes.
  KnobSpace s = KnobSpace::parse_source("int x = 0;" + std::string(1 << 20, ' ') + "\n", "ok.c");
  EXPECT_TRUE(s.empty());
}

TEST(Knobs, JsonRoundTripAndAssignments) {
  KnobValues v = {{"B", 2}, {"A", -1}};
  EXPECT_EQ(knobs_to_json(v), R"({"A":-1,"B":2})");
  EXPECT_EQ(knobs_from_json(knobs_to_json(v)), v);
  EXPECT_EQ(knobs_to_string(v), "A=-1 B=2");
  EXPECT_EQ(parse_knob_assignment("VEC=8"), (std::pair<std::string, int64_t>{"VEC", 8}));
  EXPECT_THROW(parse_knob_assignment("VEC"), UserError);
  EXPECT_THROW(parse_knob_assignment("VEC=eight"), UserError);
  EXPECT_THROW(parse_knob_assignment("8=8"), UserError);
}

// A family's starts: each expression reads the task's dimensions and the
// knobs set before it, and its value snaps to the knob's nearest declared value.
const char* kStarts = R"(
// @kevo knob BM 64 {16, 32, 64, 128}
// @kevo knob NCONS 1 {1, 2}
// @kevo knob SPLIT 1 {1, 2, 4, 8}
// @kevo require SPLIT == 1 || NCONS == 1
// @kevo start NCONS = 1 + (DIM_A_0 > 64), BM = DIM_A_0, SPLIT = 128 / ((DIM_A_0 + BM - 1) / BM * (DIM_B_1 / 128))
// @kevo start SPLIT = 8, NCONS = 2
)";

TEST(Knobs, StartsFollowTheShapeAndSnapToDeclaredValues) {
  KnobSpace s = KnobSpace::parse_source(kStarts, "k.cu");
  ASSERT_EQ(s.starts().size(), 2u);
  EXPECT_EQ(s.starts()[0].line, 6);
  EXPECT_EQ(s.starts()[0].reads, (std::vector<std::string>{"DIM_A_0", "DIM_B_1"}));
  std::string why;
  // M = 16, N = 4096: 32 tiles of 128 columns, SPLIT 128 / 32 = 4.
  auto p = s.start_point(s.starts()[0], {{"DIM_A_0", 16}, {"DIM_B_1", 4096}}, "k.cu", &why);
  ASSERT_TRUE(p) << why;
  EXPECT_EQ(*p, (KnobValues{{"BM", 16}, {"NCONS", 1}, {"SPLIT", 4}}));
  // M = 100: BM snaps to 128 (nearer than 64), NCONS 2, and SPLIT 128 / 32
  // = 4 breaks the constraint: no point, and the reason says which.
  p = s.start_point(s.starts()[0], {{"DIM_A_0", 100}, {"DIM_B_1", 4096}}, "k.cu", &why);
  EXPECT_FALSE(p);
  EXPECT_NE(why.find("BM=128 NCONS=2 SPLIT=4 breaks 'require SPLIT == 1 || NCONS == 1'"),
            std::string::npos) << why;
  // M = 48: halfway between 32 and 64, the smaller; N = 16384: SPLIT 128 /
  // (2 * 128) = 0 snaps to 1.
  p = s.start_point(s.starts()[0], {{"DIM_A_0", 48}, {"DIM_B_1", 16384}}, "k.cu", &why);
  ASSERT_TRUE(p) << why;
  EXPECT_EQ(*p, (KnobValues{{"BM", 32}, {"NCONS", 1}, {"SPLIT", 1}}));
  // A division by zero is no point either.
  p = s.start_point(s.starts()[0], {{"DIM_A_0", 0}, {"DIM_B_1", 4096}}, "k.cu", &why);
  EXPECT_FALSE(p);
  EXPECT_NE(why.find("cannot be computed"), std::string::npos) << why;
  // The second start reads no dimension; its point breaks the constraint.
  EXPECT_FALSE(s.start_point(s.starts()[1], {}, "k.cu", &why));
  // A dimension the task does not have is the family author's error.
  try {
    s.start_point(s.starts()[0], {{"DIM_A_0", 16}, {"DIM_W_1", 8}}, "k.cu", &why);
    ADD_FAILURE() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("k.cu:6: '@kevo start NCONS = 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("reads DIM_B_1, which this task does not have (it has: "
                                         "DIM_A_0, DIM_W_1)"),
              std::string::npos) << e.what();
  }
  // A device fact the target did not give skips the start; a missing
  // dimension is still the error, whatever the line reads first.
  KnobSpace f = KnobSpace::parse_source(
      "// @kevo knob SPLIT 1 {1, 2, 4, 8}\n// @kevo start SPLIT = SMS / (DIM_B_1 / 128)\n", "f.cu");
  EXPECT_EQ(f.starts()[0].reads, (std::vector<std::string>{"SMS", "DIM_B_1"}));
  p = f.start_point(f.starts()[0], {{"DIM_B_1", 4096}, {"SMS", 132}}, "f.cu", &why);
  ASSERT_TRUE(p) << why;
  EXPECT_EQ(p->at("SPLIT"), 4);  // 132 / 32
  p = f.start_point(f.starts()[0], {{"DIM_B_1", 4096}, {"SMS", 78}}, "f.cu", &why);
  ASSERT_TRUE(p) << why;
  EXPECT_EQ(p->at("SPLIT"), 2);  // 78 / 32
  EXPECT_FALSE(f.start_point(f.starts()[0], {{"DIM_B_1", 4096}}, "f.cu", &why));
  EXPECT_NE(why.find("SMS (the GPU's streaming multiprocessors) is not known here"), std::string::npos)
      << why;
  EXPECT_THROW(f.start_point(f.starts()[0], {{"DIM_A_0", 4096}}, "f.cu", &why), UserError);
  // A knob of that name is the knob.
  KnobSpace k = KnobSpace::parse_source(
      "// @kevo knob SMS 1 {1, 2}\n// @kevo knob B 1 {1, 2}\n// @kevo start B = SMS + 1\n", "k.cu");
  EXPECT_TRUE(k.starts()[0].reads.empty());
  p = k.start_point(k.starts()[0], {}, "k.cu", &why);
  ASSERT_TRUE(p) << why;
  EXPECT_EQ(p->at("B"), 2);
  // Restricting a knob restricts where a start may land.
  s.restrict("BM", {32, 64});
  p = s.start_point(s.starts()[0], {{"DIM_A_0", 16}, {"DIM_B_1", 4096}}, "k.cu", &why);
  ASSERT_TRUE(p) << why;
  EXPECT_EQ(p->at("BM"), 32);
}

TEST(Knobs, MalformedStartsNameFileAndLine) {
  const std::string knobs = "// @kevo knob A 1 {1, 2}\n// @kevo knob B 1 {1, 2}\n";
  expect_error(knobs + "// @kevo start\n", "bad.c:3: empty @kevo start");
  expect_error(knobs + "// @kevo start A 2\n", "bad.c:3: in '@kevo start A 2': 'A 2' is not NAME = EXPRESSION");
  expect_error(knobs + "// @kevo start A == 2\n", "'A == 2' is not NAME = EXPRESSION");
  expect_error(knobs + "// @kevo start A = 2,\n", "'' is not NAME = EXPRESSION");
  expect_error(knobs + "// @kevo start C = 2\n", "'C' is not a knob of this kernel");
  expect_error(knobs + "// @kevo start A = 2, A = 1\n", "knob A is set twice");
  expect_error(knobs + "// @kevo start A = X + 1\n", "A = X + 1: at column 1: unknown name 'X'");
  expect_error(knobs + "// @kevo start A = (DIM_x_0\n", "A = (DIM_x_0: at column");
  // A start may come before the knobs it sets.
  EXPECT_EQ(KnobSpace::parse_source("// @kevo start B = A + DIM_x_0\n" + knobs, "ok.c").starts().size(), 1u);
}

}  // namespace
}  // namespace kevo
