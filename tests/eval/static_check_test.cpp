#include "eval/static_check.h"

#include <gtest/gtest.h>

namespace kevo {
namespace {

const std::string kEntry = "int kevo_kernel(const kevo_tensor* in) { return 0; }\n";

TEST(StaticCheck, PlainKernelPasses) { EXPECT_FALSE(static_check(kEntry, "kevo_kernel")); }

TEST(StaticCheck, MissingEntryPoint) {
  auto why = static_check("int other(void) { return 0; }", "kevo_kernel");
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("does not define the entry point kevo_kernel()"), std::string::npos);
}

// Found reviewing std::regex uses on LLM-written text: the entry point and the
// tensor-map lookup were matched with std::regex ("\\s*"), which recurses per
// character, so an LLM's kernel with a long run of spaces before a '('
// overflowed kevo's stack during the static check.
TEST(StaticCheck, LongWhitespaceIsScannedNotACrash) {
  const std::string spaces(1 << 20, ' ');
  EXPECT_FALSE(static_check("int kevo_kernel" + spaces + "(void) { return 0; }\n", "kevo_kernel"));
  EXPECT_TRUE(static_check("int kevo_kernel2" + spaces + "(void) { return 0; }\n", "kevo_kernel"));
  const std::string lookup = kEntry + "void f(void** p, void* q) { cuGetProcAddress" + spaces +
                             "(" + spaces + "\"cuTensorMapEncodeTiled\", p, 12000, 0, q); }\n";
  EXPECT_FALSE(static_check(lookup, "kevo_kernel", "cuda"));
}

TEST(StaticCheck, RefusesEscapes) {
  for (const char* call : {"fork()", "system(\"ls\")", "execve(a, b, c)", "fopen(p, \"w\")",
                           "socket(2, 1, 0)", "getenv(\"HOME\")", "dlopen(p, 1)", "syscall(39)",
                           "mprotect(p, 4096, 7)", "kill(1, 9)"}) {
    std::string src = kEntry + "void f(void) { " + call + "; }\n";
    auto why = static_check(src, "kevo_kernel");
    ASSERT_TRUE(why) << call;
    EXPECT_NE(why->find("line 2"), std::string::npos) << *why;
  }
}

// The obvious bypasses: the same functions reached without a plain call.
TEST(StaticCheck, RefusesBannedNamesWithoutACall) {
  for (const char* use : {"int (*f)(void) = fork;", "void* p = (void*)&fopen;",
                          "int r = ::fork();", "extern char** environ; char** e = environ;",
                          "char* (*g)(const char*) = secure_getenv;", "int x = std::system(\"ls\");",
                          "return (long)fopen;", "int open = (int)(long)fopen;"}) {
    std::string src = kEntry + "void f(void) { " + use + " }\n";
    auto why = static_check(src, "kevo_kernel");
    ASSERT_TRUE(why) << use;
    EXPECT_NE(why->find("line 2"), std::string::npos) << *why;
  }
  auto why = static_check(kEntry + "void* p = (void*)fopen;\n", "kevo_kernel");
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("uses fopen, which opens files"), std::string::npos) << *why;
}

// A driver entry point looked up by name would reach any driver call: only
// the tensor-map encoders, by a literal name, as the TMA seed kernels do.
TEST(StaticCheck, DriverEntryPointsOnlyForTensorMaps) {
  const std::string ok = kEntry +
                         "void f(void** p, void* q) { cudaGetDriverEntryPointByVersion(\n"
                         "  \"cuTensorMapEncodeTiled\", p, 12000, 0, q); }\n";
  EXPECT_FALSE(static_check(ok, "kevo_kernel", "cuda")) << *static_check(ok, "kevo_kernel", "cuda");
  for (const char* call : {"cudaGetDriverEntryPoint(\"cuStreamCreate\", p, 0)",
                           "cudaGetDriverEntryPoint(name, p, 0)",
                           "cuGetProcAddress(\"cuTensorMapEncodeTiled\" , p, 12000, 0)",
                           "cuGetProcAddress_v2(\"cuCtxCreate\", p, 12000, 0, q)"}) {
    std::string src = kEntry + "void f(void** p, const char* name, void* q) { " + call + "; }\n";
    auto why = static_check(src, "kevo_kernel", "cuda");
    if (std::string(call).find("cuTensorMapEncodeTiled") != std::string::npos) {
      EXPECT_FALSE(why) << call << ": " << *why;
      continue;
    }
    ASSERT_TRUE(why) << call;
    EXPECT_NE(why->find("looks up a driver entry point"), std::string::npos) << *why;
  }
}

TEST(StaticCheck, IgnoresCommentsStringsAndLookalikes) {
  std::string src = kEntry +
                    "// we never fork() here\n"
                    "/* system(\"x\") in a comment */\n"
                    "const char* s = \"popen(\";\n"
                    "int my_fork(int); int y = my_fork(1);\n"
                    "struct f { int open; }; int g(struct f* p) { return p->open; }\n"
                    "void h(void) { obj.open(1); std::remove(a, b, c); }\n";
  EXPECT_FALSE(static_check(src, "kevo_kernel")) << *static_check(src, "kevo_kernel");
}

TEST(StaticCheck, StripKeepsLayout) {
  std::string src = "a // x\n\"s\\\"q\" /* y\n z */ b";
  std::string out = strip_comments_and_strings(src);
  EXPECT_EQ(out.size(), src.size());
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 2);
  EXPECT_EQ(out.find('x'), std::string::npos);
  EXPECT_EQ(out.find('q'), std::string::npos);
  EXPECT_NE(out.find('b'), std::string::npos);
}

}  // namespace
}  // namespace kevo
