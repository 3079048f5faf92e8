// kevo's kernel headers (targets/<target>/include): inlined into a family's
// text when it is loaded, so the hash, the store, the compile cache and
// every written kernel see the whole program; folded back for the LLM.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "core/kernel_headers.h"
#include "core/paths.h"
#include "core/space.h"
#include "search/families.h"
#include "support/test_support.h"

namespace kevo {
namespace {

// KEVO_HOME pointed at a folder of the test's own for the test's life.
class KernelHeaders : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = test::temp_dir("kernel-headers");
    const char* old = std::getenv("KEVO_HOME");
    saved_ = old ? old : "";
    setenv("KEVO_HOME", home_.c_str(), 1);
    std::filesystem::create_directories(home_ / "targets" / "cpu" / "include");
    std::filesystem::create_directories(home_ / "targets" / "cuda" / "include");
    write("cpu", "kevo_a.h",
          "/* kevo_a.h: the interface.\n *   int a_twice(int x)\n */\n#ifndef A_H\n#define A_H\n"
          "#include \"kevo_b.h\"\nstatic inline int a_twice(int x) { return b_add(x, x); }\n#endif\n");
    write("cpu", "kevo_b.h", "/* kevo_b.h: b_add */\nstatic inline int b_add(int x, int y) { return x + y; }\n");
    write("cuda", "kevo_c.cuh", "/* kevo_c.cuh */\n__device__ int c_one() { return 1; }\n");
  }
  void TearDown() override {
    if (saved_.empty())
      unsetenv("KEVO_HOME");
    else
      setenv("KEVO_HOME", saved_.c_str(), 1);
  }
  void write(const std::string& target, const std::string& name, const std::string& text) {
    std::ofstream(home_ / "targets" / target / "include" / name) << text;
  }

  std::filesystem::path home_;
  std::string saved_;
};

// The names of the kevo headers inlined in `text`, by their begin markers.
std::vector<std::string> inlined_kernel_headers(const std::string& text) {
  static const std::regex begin(R"(/\* kevo: begin (kevo_\w+\.(h|cuh)) )");
  std::vector<std::string> names;
  for (std::sregex_iterator it(text.begin(), text.end(), begin), end; it != end; ++it)
    names.push_back((*it)[1].str());
  return names;
}

const std::string kKernel =
    "// @kevo knob N 4 {4, 8}\n"
    "#include \"kevo_kernel.h\"\n"
    "#include \"kevo_a.h\"\n"
    "  #  include \"kevo_b.h\"  \n"
    "#include \"kevo_missing.h\"\n"
    "int f(int x) { return a_twice(x) + N; }\n";

TEST_F(KernelHeaders, InlinedOnceEachAndFoldedBackExactly) {
  const Family f = make_family("k", "k.c", kKernel, "c");
  // Bodies in, include lines of kevo's headers out; the ABI header and a
  // name that is no header of the target stay as written.
  EXPECT_NE(f.text.find("return b_add(x, x);"), std::string::npos);
  EXPECT_NE(f.text.find("return x + y;"), std::string::npos);
  EXPECT_EQ(f.text.find("#include \"kevo_a.h\""), std::string::npos);
  EXPECT_NE(f.text.find("#include \"kevo_kernel.h\""), std::string::npos);
  EXPECT_NE(f.text.find("#include \"kevo_missing.h\""), std::string::npos);
  // b: inlined once (inside a), the second include a note
  size_t bodies = 0;
  for (size_t p = 0; (p = f.text.find("return x + y;", p)) != std::string::npos; ++p) ++bodies;
  EXPECT_EQ(bodies, 1u);
  EXPECT_EQ(inlined_kernel_headers(f.text), (std::vector<std::string>{"kevo_a.h", "kevo_b.h"}));
  // the knob is still the family's own
  ASSERT_TRUE(f.space.find("N"));
  // Folding gives back the text as written, byte for byte (the second
  // include of b loses only its spacing).
  std::string want = kKernel;
  const std::string spaced = "  #  include \"kevo_b.h\"  ";
  want.replace(want.find(spaced), spaced.size(), "#include \"kevo_b.h\"");
  EXPECT_EQ(fold_kernel_headers(f.text), want);
  EXPECT_EQ(fold_kernel_headers(kKernel), kKernel);  // nothing to fold
}

TEST_F(KernelHeaders, TheHashCoversTheHeadersItIncludes) {
  const Family before = make_family("k", "k.c", kKernel, "c");
  EXPECT_EQ(make_family("k", "k.c", kKernel, "c").source_hash, before.source_hash);
  // a change to a header the kernel includes only through another
  write("cpu", "kevo_b.h", "/* kevo_b.h: b_add */\nstatic inline int b_add(int x, int y) { return y + x; }\n");
  const Family after = make_family("k", "k.c", kKernel, "c");
  EXPECT_NE(after.source_hash, before.source_hash);
  EXPECT_NE(after.text.find("return y + x;"), std::string::npos);
  // a header it does not include changes nothing
  write("cuda", "kevo_c.cuh", "/* kevo_c.cuh */\n__device__ int c_one() { return 2; }\n");
  EXPECT_EQ(make_family("k", "k.c", kKernel, "c").source_hash, after.source_hash);
}

TEST_F(KernelHeaders, EachTargetReadsItsOwnFolder) {
  const std::string cu = "#include \"kevo_c.cuh\"\n#include \"kevo_a.h\"\n";
  const Family f = make_family("k", "k.cu", cu, "cuda");
  EXPECT_NE(f.text.find("c_one()"), std::string::npos);
  EXPECT_NE(f.text.find("#include \"kevo_a.h\""), std::string::npos);  // a cpu header
  const Family py = make_family("k", "k.py", "#include \"kevo_a.h\"\n", "triton");
  EXPECT_EQ(py.text, "#include \"kevo_a.h\"\n");
}

TEST_F(KernelHeaders, HeadersThatIncludeEachOtherAreInlinedOnce) {
  write("cpu", "kevo_b.h", "/* b */\n#include \"kevo_a.h\"\nstatic inline int b_add(int x, int y) { return x + y; }\n");
  const Family f = make_family("k", "k.c", "#include \"kevo_a.h\"\n", "c");
  EXPECT_EQ(inlined_kernel_headers(f.text), (std::vector<std::string>{"kevo_a.h", "kevo_b.h"}));
  EXPECT_NE(f.text.find("kevo_a.h already inlined above"), std::string::npos);
  EXPECT_EQ(fold_kernel_headers(f.text), "#include \"kevo_a.h\"\n");
}

TEST_F(KernelHeaders, TheInterfaceIsTheLeadingCommentNotTheBody) {
  const std::string iface = kernel_header_interfaces("c");
  EXPECT_NE(iface.find("int a_twice(int x)"), std::string::npos);
  EXPECT_NE(iface.find("#include \"kevo_b.h\""), std::string::npos);
  EXPECT_EQ(iface.find("return b_add(x, x);"), std::string::npos);
  EXPECT_EQ(iface.find("c_one"), std::string::npos);  // cuda's, not the cpu's
  EXPECT_EQ(kernel_header_interfaces("triton"), "");
}

// A prompt carries in full only the interfaces of the headers the task's
// families use; any other header is one line, so it costs little in a prompt.
TEST_F(KernelHeaders, OnlyTheHeadersInUseComeInFull) {
  const Family f = make_family("k", "k.c", "#include \"kevo_b.h\"\nint k(void) { return b_add(1, 2); }\n", "c");
  const std::set<std::string> used = kernel_headers_named(f.text);
  EXPECT_EQ(used, (std::set<std::string>{"kevo_b.h"}));
  EXPECT_EQ(kernel_headers_named("#include \"kevo_a.h\"\n# include \"kevo_c.cuh\"\n#include \"stdio.h\"\n"),
            (std::set<std::string>{"kevo_a.h", "kevo_c.cuh"}));
  const std::string iface = kernel_header_interfaces("c", &used);
  EXPECT_NE(iface.find("/* kevo_b.h: b_add */"), std::string::npos);
  EXPECT_NE(iface.find("#include \"kevo_a.h\"  (kevo inlines it; no family of this task uses it)\n"
                       "/* kevo_a.h: the interface. ... */"),
            std::string::npos)
      << iface;
  EXPECT_EQ(iface.find("int a_twice(int x)"), std::string::npos);  // a's interface is not shown
  const std::set<std::string> none;
  EXPECT_EQ(kernel_header_interfaces("c", &none).find("int a_twice(int x)"), std::string::npos);
  EXPECT_NE(kernel_header_interfaces("c").find("int a_twice(int x)"), std::string::npos);
}

TEST_F(KernelHeaders, AWrittenKernelIsOneFile) {
  const Family f = make_family("k", "k.c", kKernel, "c");
  const std::string out = standalone_source(f, {{"N", 8}}, "best of run 1", {});
  EXPECT_NE(out.find("#define N 8"), std::string::npos);
  EXPECT_NE(out.find("return x + y;"), std::string::npos);
  EXPECT_EQ(out.find("#include \"kevo_a.h\""), std::string::npos);
}

// The written kernel's knobs are baked in: none of its @kevo lines is read
// again (a start naming a knob that is now a #define would be an error).
TEST_F(KernelHeaders, AWrittenKernelDeclaresNothing) {
  const Family f = make_family("k", "k.c",
                               "// @kevo knob N 4 {4, 8}\n// @kevo require N > 2\n"
                               "// @kevo start N = DIM_x_0\nint k(void) { return N; }\n",
                               "c");
  EXPECT_EQ(f.space.starts().size(), 1u);
  const std::string out = standalone_source(f, {{"N", 8}}, "best of run 1", {});
  const KnobSpace again = KnobSpace::parse_source(out, "best.c");
  EXPECT_TRUE(again.empty());
  EXPECT_TRUE(again.constraints().empty());
  EXPECT_TRUE(again.starts().empty());
}

// kevo's own seed families: every include of a kevo header is inlined, the
// folded text is the file as written, and the shared layer is in one place.
TEST(SeedKernelHeaders, SeedFamiliesInlineTheirTargetsHeaders) {
  setenv("KEVO_HOME", KEVO_SOURCE_DIR, 1);
  const std::regex include(R"re(#\s*include\s*"(kevo_\w+\.(h|cuh))")re");
  int users = 0;
  for (const char* target : {"cpu", "cuda"}) {
    const auto kernels = std::filesystem::path(KEVO_SOURCE_DIR) / "targets" / target / "kernels";
    for (const auto& e : std::filesystem::recursive_directory_iterator(kernels)) {
      if (!e.is_regular_file()) continue;
      const std::string ext = e.path().extension().string();
      if (ext != ".c" && ext != ".cu") continue;
      const std::string text = read_text_file(e.path());
      const Family f = make_family(e.path().stem().string(), e.path(), text, ext == ".cu" ? "cuda" : "c");
      for (std::sregex_iterator it(f.text.begin(), f.text.end(), include), end; it != end; ++it)
        EXPECT_EQ((*it)[1].str(), "kevo_kernel.h") << e.path() << " still includes " << (*it)[1];
      EXPECT_EQ(fold_kernel_headers(f.text), text) << e.path();
      if (f.text != text) ++users;
    }
  }
  EXPECT_GE(users, 9);  // six CPU families and three CUDA row families share a layer
}

}  // namespace
}  // namespace kevo
