// What the real corpus (knowledge/corpus/) must hold and retrieve: every
// listed document, queries as the synthesizer and users ask them, and real
// compiler output explained by its error entries.
#include <regex>

#include <gtest/gtest.h>

#include "knowledge/knowledge_base.h"

namespace kevo {
namespace {

// One index for the whole suite, opened (and built when needed) once.
const KnowledgeBase& corpus() {
  static const KnowledgeBase kb = KnowledgeBase::open();
  return kb;
}

TEST(KbCorpus, HoldsEveryListedPatternAndHardwareSheet) {
  for (const char* id : {"cuda-vectorized-access",
                         "cuda-coalescing",
                         "cuda-warp-shuffle-reduction",
                         "cuda-block-reduction-smem",
                         "cuda-online-softmax",
                         "cuda-register-row-cache",
                         "cuda-occupancy-vs-registers",
                         "cuda-launch-bounds",
                         "cuda-smem-bank-conflicts",
                         "cuda-cp-async-pipeline",
                         "cuda-tma-bulk-copy",
                         "cuda-wgmma-tiling",
                         "cuda-mma-sync-ldmatrix",
                         "cuda-split-k",
                         "cuda-decode-weight-streaming",
                         "cuda-persistent-grid",
                         "cuda-thread-block-clusters",
                         "cuda-cache-hints",
                         "cuda-tail-effect-waves",
                         "cuda-ilp-unroll",
                         "cuda-fast-math-intrinsics",
                         "cuda-bf16-packed-math",
                         "cuda-spills-local-memory",
                         "cuda-swizzle-smem-layout",
                         "cuda-epilogue-fusion",
                         "cuda-multi-row-per-block",
                         "cuda-grid-stride-loops",
                         "cpu-avx512-register-blocking",
                         "cpu-avx2-fma-vectorization",
                         "cpu-cache-blocking-gemm",
                         "cpu-non-temporal-stores",
                         "cpu-software-prefetch",
                         "cpu-horizontal-reduction",
                         "cpu-exp-polynomial-approx",
                         "cpu-thread-partitioning",
                         "cpu-masked-remainder",
                         "cpu-fuse-passes",
                         "nki-partition-tiling-128",
                         "nki-psum-accumulation",
                         "nki-dma-sizes",
                         "nki-sbuf-budget",
                         "nki-engine-overlap",
                         "nki-matmul-tile-shapes",
                         "nki-activation-fusion",
                         "general-roofline-reading",
                         "general-kernel-fusion"}) {
    auto d = corpus().get(id);
    ASSERT_TRUE(d) << id;
    EXPECT_EQ(d->kind, "pattern") << id;
  }
  for (const char* id :
       {"x86-avx2", "x86-avx512", "a100", "h100", "h200", "trn1", "trn2", "trn3", "inf2"}) {
    auto d = corpus().hardware(id);
    ASSERT_TRUE(d) << id;
    EXPECT_FALSE(d->figures.empty()) << id;
  }
  KbStats st = corpus().stats();
  for (const char* compiler : {"gcc", "nvcc", "neuron"})
    EXPECT_TRUE(std::any_of(st.by_compiler.begin(), st.by_compiler.end(),
                            [&](const auto& c) { return c.first == compiler && c.second > 0; }))
        << "no error entries for " << compiler;
  EXPECT_EQ(st.rules_files, 1u);  // rules/knob.json
}

struct QueryCase {
  std::string text;
  KbFilter filter;
  std::string want;  // this document ...
  size_t within;     // ... among the first `within` hits
};

void PrintTo(const QueryCase& c, std::ostream* os) {
  *os << '"' << c.text << "\" -> " << c.want;
}

class KbQuery : public ::testing::TestWithParam<QueryCase> {};

TEST_P(KbQuery, FindsItsDocument) {
  const QueryCase& c = GetParam();
  auto hits = corpus().search(c.text, c.filter, c.within);
  std::string got;
  for (const auto& h : hits) got += h.doc.id + " ";
  EXPECT_TRUE(
      std::any_of(hits.begin(), hits.end(), [&](const KbHit& h) { return h.doc.id == c.want; }))
      << "\"" << c.text << "\" should find " << c.want << " in the first " << c.within
      << "; got: " << got;
}

const KbFilter kCuda{.target = "cuda"}, kCpu{.target = "cpu"}, kTrainium{.target = "trainium"},
    kHardware{.kind = "hardware"};

INSTANTIATE_TEST_SUITE_P(
    Corpus, KbQuery,
    ::testing::Values(
        // As a person types them.
        QueryCase{"warp shuffle reduce sum", kCuda, "cuda-warp-shuffle-reduction", 3},
        QueryCase{"memory-bound softmax single pass", {}, "cuda-online-softmax", 3},
        QueryCase{"PSUM accumulate matmul", kTrainium, "nki-psum-accumulation", 3},
        QueryCase{"spill stores local memory", {}, "cuda-spills-local-memory", 3},
        QueryCase{"AVX-512 gemm microkernel registers", kCpu, "cpu-avx512-register-blocking", 3},
        QueryCase{"H200 HBM bandwidth", kHardware, "h200", 1},
        QueryCase{"A100 bf16 tensor core peak", kHardware, "a100", 1},
        QueryCase{"Trainium2 memory bandwidth", kHardware, "trn2", 1},
        QueryCase{"Inferentia2", kHardware, "inf2", 1},
        QueryCase{"AVX-512 machine peak FMA", kHardware, "x86-avx512", 2},
        QueryCase{"float4 128-bit loads per thread", kCuda, "cuda-vectorized-access", 3},
        QueryCase{"consecutive threads consecutive addresses", kCuda, "cuda-coalescing", 3},
        QueryCase{"shared memory bank conflict padding", kCuda, "cuda-smem-bank-conflicts", 3},
        QueryCase{"cp.async double buffering", kCuda, "cuda-cp-async-pipeline", 3},
        QueryCase{"TMA bulk tensor copy mbarrier", kCuda, "cuda-tma-bulk-copy", 3},
        QueryCase{"wgmma warpgroup tiles Hopper", kCuda, "cuda-wgmma-tiling", 3},
        QueryCase{"ldmatrix mma.sync fragments", kCuda, "cuda-mma-sync-ldmatrix", 3},
        QueryCase{"split K dimension across blocks small M N", {}, "cuda-split-k", 3},
        QueryCase{"decode GEMM few rows weight bandwidth", kCuda, "cuda-decode-weight-streaming", 2},
        QueryCase{"launch_bounds maxrregcount", kCuda, "cuda-launch-bounds", 3},
        QueryCase{"last partial wave idle SMs", kCuda, "cuda-tail-effect-waves", 3},
        QueryCase{"__expf fast exponential", kCuda, "cuda-fast-math-intrinsics", 3},
        QueryCase{"__nv_bfloat162 packed conversion", kCuda, "cuda-bf16-packed-math", 3},
        QueryCase{"streaming stores bypass the cache", kCpu, "cpu-non-temporal-stores", 3},
        QueryCase{"prefetch distance", kCpu, "cpu-software-prefetch", 3},
        QueryCase{"exp polynomial range reduction", kCpu, "cpu-exp-polynomial-approx", 3},
        QueryCase{"masked tail remainder loop", kCpu, "cpu-masked-remainder", 3},
        QueryCase{"false sharing first touch threads", kCpu, "cpu-thread-partitioning", 3},
        QueryCase{"packing panels MC KC NC blocking", kCpu, "cpu-cache-blocking-gemm", 3},
        QueryCase{"128 partitions SBUF tile", kTrainium, "nki-partition-tiling-128", 3},
        QueryCase{"small DMA transfers inefficient", kTrainium, "nki-dma-sizes", 3},
        QueryCase{"arithmetic intensity ridge point", {}, "general-roofline-reading", 3},
        QueryCase{"intermediate tensor round trip through memory", {}, "general-kernel-fusion", 3},
        // As the synthesizer asks them: a diagnosis and a bound.
        QueryCase{"memory-bound: moves 134 MB at 23 GB/s, 48% of the roof; scaled_softmax",
                  {.target = "cuda", .op = "softmax", .bound = "memory"},
                  "cuda-online-softmax",
                  5},
        QueryCase{"bottleneck spills: 524 bytes spill stores, 616 bytes spill loads",
                  {.target = "cuda", .bound = "spills"},
                  "cuda-spills-local-memory",
                  3},
        QueryCase{"low achieved occupancy, 128 registers per thread",
                  {.target = "cuda", .bound = "occupancy"},
                  "cuda-occupancy-vs-registers",
                  3},
        QueryCase{"compute-bound gemm far from the fp32 FMA peak",
                  {.target = "cpu", .op = "gemm", .bound = "compute"},
                  "cpu-avx512-register-blocking",
                  5}));

// Real compiler lines and what an explanation of them must talk about.
struct OutputCase {
  std::string name;
  std::string output;
  std::string target;
  std::string compiler;            // of the first (most specific) entry
  std::vector<std::string> words;  // one of them in its meaning or fix
};

void PrintTo(const OutputCase& c, std::ostream* os) {
  *os << c.name;
}

class KbCompilerOutput : public ::testing::TestWithParam<OutputCase> {};

TEST_P(KbCompilerOutput, IsExplained) {
  const OutputCase& c = GetParam();
  auto found = corpus().match_errors(c.output, c.target);
  ASSERT_FALSE(found.empty()) << "no entry explains:\n" << c.output;
  EXPECT_EQ(found[0].compiler, c.compiler) << found[0].id;
  const std::string text = found[0].meaning + " " + found[0].fix;
  EXPECT_TRUE(std::any_of(c.words.begin(), c.words.end(),
                          [&](const std::string& w) { return text.find(w) != std::string::npos; }))
      << found[0].id << ": " << text;
}

// Captured from g++ 12.2 (C.UTF-8) and nvcc 13.0 here; see kb_test.cpp.
INSTANTIATE_TEST_SUITE_P(
    Corpus, KbCompilerOutput,
    ::testing::Values(
        OutputCase{
            "GxxUndeclared",
            "b.cpp:7:3: error: \u2018undeclared_thing\u2019 was not declared in this scope\n",
            "cpu",
            "gcc",
            {"declar", "include"}},
        OutputCase{"GccCUndeclared",
                   "a.c:3:48: error: \u2018scale\u2019 undeclared (first use in this function)\n",
                   "cpu",
                   "gcc",
                   {"declar", "define"}},
        OutputCase{"GxxTargetMismatch",
                   "/usr/lib/gcc/x86_64-linux-gnu/12/include/avx512fintrin.h:305:1: error: "
                   "inlining failed in call to \u2018always_inline\u2019 \u2018__m512 "
                   "_mm512_setzero_ps()\u2019: target specific option mismatch\n",
                   "cpu",
                   "gcc",
                   {"-march", "-mavx", "target"}},
        OutputCase{"GccExpectedSemicolon",
                   "a.c:5:16: error: expected \u2018;\u2019 before \u2018}\u2019 token\n",
                   "cpu",
                   "gcc",
                   {";", "semicolon"}},
        OutputCase{"NvccUndefinedIdentifier",
                   "k.cu(7): error: identifier \"undefined_var\" is undefined\n",
                   "cuda",
                   "nvcc",
                   {"declar", "__device__"}},
        OutputCase{"NvccHostFromGlobal",
                   "k3.cu(2): error: calling a __host__ function(\"host_only(float)\") from a "
                   "__global__ function(\"k\") is not allowed\n",
                   "cuda",
                   "nvcc",
                   {"__device__"}},
        OutputCase{"PtxasTooMuchShared",
                   "ptxas error   : Entry function '_Z1kPf' uses too much shared data (0x3a980 "
                   "bytes, 0x38c00 max)\n",
                   "cuda",
                   "nvcc",
                   {"shared"}},
        OutputCase{"PtxasUnsupportedOnTarget",
                   "ptxas /tmp/tmpxft_000034c3_00000000-6_k6.ptx, line 26; error   : Instruction "
                   "'wgmma.fence' not supported on .target 'sm_80'\n",
                   "cuda",
                   "nvcc",
                   {"sm_90a", "arch"}},
        OutputCase{"NvccNoOverload",
                   "k.cu(10): error: no instance of overloaded function \"__shfl_xor_sync\" "
                   "matches the argument list\n",
                   "cuda",
                   "nvcc",
                   {"argument", "overload"}}),
    [](const auto& info) { return info.param.name; });

// Every Neuron compiler code in the error index finds its own entry by search.
TEST(KbCorpus, NeuronErrorCodesFindTheirEntries) {
  auto entries = corpus().search("", {.target = "trainium", .kind = "error"}, 1000);
  const std::regex code("NCC_[A-Z]+[0-9]+");
  size_t codes = 0;
  for (const auto& e : entries) {
    std::smatch m;
    if (!std::regex_search(e.doc.body, m, code)) continue;
    ++codes;
    auto hits = corpus().search(m.str(), {.kind = "error"}, 1);
    ASSERT_EQ(hits.size(), 1u) << m.str();
    EXPECT_EQ(hits[0].doc.id, e.doc.id) << m.str();
  }
  EXPECT_GE(codes, 3u) << "fewer than 3 NCC codes in the error index";
}

}  // namespace
}  // namespace kevo
