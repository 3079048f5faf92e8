// Reading LLM replies: whole kernels in fenced blocks, SEARCH/REPLACE edits
// applied all or nothing, and the reasons given when a reply is unusable.
#include <gtest/gtest.h>

#include "synth/llm/reply.h"

namespace kevo::llm {
namespace {

using Kind = ParsedReply::Kind;

const std::string kParent =
    "// @kevo knob BLOCK 256 {128, 256}\n"
    "int kevo_kernel(void) {\n"
    "  int x = 0;\n"
    "  return x;\n"
    "}\n";

TEST(LlmReply, WholeKernelInAFencedBlock) {
  ParsedReply p = parse_reply(
      "Here is a faster kernel:\n\n```c\nint kevo_kernel(void) { return 1; }\n```\n\nIt is faster.",
      kParent);
  EXPECT_EQ(p.kind, Kind::kernel);
  EXPECT_EQ(p.source, "int kevo_kernel(void) { return 1; }\n");
  EXPECT_TRUE(p.refusal.empty());
}

TEST(LlmReply, UntaggedAndCudaBlocksCount) {
  EXPECT_EQ(parse_reply("```\nint a;\n```", kParent).source, "int a;\n");
  EXPECT_EQ(parse_reply("```CUDA\n__global__ void k() {}\n```", kParent).source,
            "__global__ void k() {}\n");
}

TEST(LlmReply, LargestCodeBlockWins) {
  std::string reply =
      "The hot loop:\n```cpp\nfor (;;) {}\n```\n"
      "The whole kernel:\n```cu\n__global__ void k() {}\nint kevo_launch() { return 0; }\n```\n"
      "Build it with:\n```bash\nnvcc -O3 -arch=sm_90 kernel.cu -o kernel.so --shared -Xcompiler "
      "-fPIC\n```\n";
  ParsedReply p = parse_reply(reply, kParent);
  EXPECT_EQ(p.kind, Kind::kernel);
  EXPECT_EQ(p.source, "__global__ void k() {}\nint kevo_launch() { return 0; }\n");
}

TEST(LlmReply, NoBlockIsRefusedWithAReason) {
  ParsedReply p = parse_reply("I cannot make it faster than it is.", kParent);
  EXPECT_EQ(p.kind, Kind::none);
  EXPECT_NE(p.refusal.find("no fenced code block"), std::string::npos) << p.refusal;

  p = parse_reply("```python\nprint(1)\n```", kParent);
  EXPECT_EQ(p.kind, Kind::none);
  EXPECT_NE(p.refusal.find("python"), std::string::npos) << p.refusal;

  p = parse_reply("```c\nint kevo_kernel(void) {\n  for (int i = 0;", kParent);
  EXPECT_EQ(p.kind, Kind::none);
  EXPECT_NE(p.refusal.find("not closed"), std::string::npos) << p.refusal;
}

// A Triton kernel is Python: its replies' blocks are ```python (or untagged),
// and a C block there is no kernel, as a Python block is none for C.
TEST(LlmReply, PythonBlocksForPythonKernels) {
  const std::string parent = "# @kevo knob BLOCK 256 {128, 256}\ndef kevo_launch(i, o, s):\n    return 0\n";
  const std::string reply =
      "The launch with more warps:\n```python\nimport triton\n\ndef kevo_launch(i, o, s):\n"
      "    return 0\n```\nand to try it:\n```bash\nkevo eval best.py\n```\n";
  ParsedReply p = parse_reply(reply, parent, "python");
  EXPECT_EQ(p.kind, Kind::kernel);
  EXPECT_EQ(p.source, "import triton\n\ndef kevo_launch(i, o, s):\n    return 0\n");
  EXPECT_EQ(parse_reply("```py\nx = 1\n```", parent, "python").source, "x = 1\n");
  EXPECT_EQ(parse_reply("```\nx = 1\n```", parent, "python").source, "x = 1\n");

  p = parse_reply("```c\nint kevo_kernel(void) { return 0; }\n```", parent, "python");
  EXPECT_EQ(p.kind, Kind::none);
  EXPECT_NE(p.refusal.find("no fenced Python block (only: c)"), std::string::npos) << p.refusal;
  p = parse_reply(reply, kParent);  // the same reply for a C kernel
  EXPECT_EQ(p.kind, Kind::none);
  EXPECT_NE(p.refusal.find("no fenced C, C++ or CUDA block"), std::string::npos) << p.refusal;

  // Edits read the same in any language.
  p = parse_reply("<<<<<<< SEARCH\n    return 0\n=======\n    return 1\n>>>>>>> REPLACE\n", parent,
                  "python");
  EXPECT_EQ(p.kind, Kind::edits);
  EXPECT_NE(p.source.find("    return 1\n"), std::string::npos) << p.source;
}

TEST(LlmReply, EditsApplyInOrder) {
  std::string reply =
      "Two changes:\n"
      "```c\n"
      "<<<<<<< SEARCH\n"
      "  int x = 0;\n"
      "=======\n"
      "  int x = 41;\n"
      "  x += 1;\n"
      ">>>>>>> REPLACE\n"
      "```\n"
      "and then\n"
      "<<<<<<< SEARCH\n"
      "  x += 1;\n"  // only there after the first edit
      "  return x;\n"
      "=======\n"
      "  return x + 1;\n"
      ">>>>>>> REPLACE\n";
  ParsedReply p = parse_reply(reply, kParent);
  ASSERT_EQ(p.kind, Kind::edits) << p.refusal;
  ASSERT_EQ(p.edits.size(), 2u);
  EXPECT_EQ(p.edits[0].search, "  int x = 0;\n");
  EXPECT_EQ(p.edits[0].replace, "  int x = 41;\n  x += 1;\n");
  EXPECT_EQ(p.source,
            "// @kevo knob BLOCK 256 {128, 256}\n"
            "int kevo_kernel(void) {\n"
            "  int x = 41;\n"
            "  return x + 1;\n"
            "}\n");
}

TEST(LlmReply, AnEditThatDoesNotApplyRefusesThemAll) {
  std::string reply =
      "<<<<<<< SEARCH\n  int x = 0;\n=======\n  int x = 7;\n>>>>>>> REPLACE\n"
      "<<<<<<< SEARCH\n  return y;\n=======\n  return 0;\n>>>>>>> REPLACE\n";
  ParsedReply p = parse_reply(reply, kParent);
  EXPECT_EQ(p.kind, Kind::none);
  EXPECT_EQ(p.refusal, "edit 2 of 2: SEARCH text not found in the parent");
  EXPECT_TRUE(p.source.empty());
  EXPECT_TRUE(p.edits.empty());
}

TEST(LlmReply, AmbiguousOrEmptySearchIsRefused) {
  std::string parent = "a;\nb;\na;\n";
  ParsedReply p = parse_reply("<<<<<<< SEARCH\na;\n=======\nc;\n>>>>>>> REPLACE\n", parent);
  EXPECT_EQ(p.kind, Kind::none);
  EXPECT_EQ(p.refusal.rfind("edit 1 of 1: SEARCH text matches 2 places", 0), 0u) << p.refusal;

  p = parse_reply("<<<<<<< SEARCH\n=======\nc;\n>>>>>>> REPLACE\n", parent);
  EXPECT_EQ(p.kind, Kind::none);
  EXPECT_EQ(p.refusal, "edit 1 of 1: empty SEARCH text");
}

TEST(LlmReply, MalformedEditsAreRefused) {
  ParsedReply p = parse_reply("<<<<<<< SEARCH\n  int x = 0;\n>>>>>>> REPLACE\n", kParent);
  EXPECT_EQ(p.kind, Kind::none);
  EXPECT_NE(p.refusal.find("no ======="), std::string::npos) << p.refusal;

  p = parse_reply("<<<<<<< SEARCH\n  int x = 0;\n=======\n  int x = 1;\n", kParent);
  EXPECT_EQ(p.kind, Kind::none);
  EXPECT_NE(p.refusal.find("not closed"), std::string::npos) << p.refusal;
}

TEST(LlmReply, CrlfAndTrailingSpacesAreTolerated) {
  std::string parent = "int f(void) {\r\n  return 0;\r\n}\r\n";
  ParsedReply p = parse_reply(
      "<<<<<<< SEARCH\r\n  return 0;   \r\n=======\r\n  return 1;\r\n>>>>>>> REPLACE\r\n", parent);
  ASSERT_EQ(p.kind, Kind::edits) << p.refusal;
  EXPECT_EQ(p.source, "int f(void) {\r\n  return 1;\r\n}\r\n");

  // Leading whitespace is not forgiven: it is part of the code.
  p = parse_reply("<<<<<<< SEARCH\nreturn 0;\n=======\nreturn 1;\n>>>>>>> REPLACE\n", parent);
  EXPECT_EQ(p.kind, Kind::none);
}

}  // namespace
}  // namespace kevo::llm
