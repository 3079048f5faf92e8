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
