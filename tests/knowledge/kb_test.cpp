// The knowledge base on a fixture corpus: parsing and every malformed-file
// error, the index's lifetime, free-text retrieval with tag filters, and
// compiler-error lookup on output as g++ 12 and nvcc 13 print it.
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/paths.h"
#include "knowledge/knowledge_base.h"
#include "support/test_support.h"

namespace kevo {
namespace {

namespace fs = std::filesystem;

using Ids = std::vector<std::string>;

Ids ids(const std::vector<KbHit>& hits) {
  Ids out;
  for (const auto& h : hits) out.push_back(h.doc.id);
  return out;
}

Ids ids(const std::vector<KbError>& errors) {
  Ids out;
  for (const auto& e : errors) out.push_back(e.id);
  return out;
}

bool has(const Ids& v, const std::string& id) {
  return std::find(v.begin(), v.end(), id) != v.end();
}

// Real compiler output, captured from the compilers installed here.
// g++ 12.2 (C.UTF-8 locale: typographic quotes), `g++ -O3 -fPIC -shared -Wl,--no-undefined`.
const char* kGxxUndeclared = R"(b.cpp: In function ‘float f(const float*, int)’:
b.cpp:7:3: error: ‘undeclared_thing’ was not declared in this scope
    7 |   undeclared_thing(3);
      |   ^~~~~~~~~~~~~~~~
)";
const char* kGxxTargetMismatch = R"(c.cpp: In function ‘float f(const float*, int)’:
c.cpp:4:34: warning: AVX512F vector return without AVX512F enabled changes the ABI [-Wpsabi]
    4 |   __m512 acc = _mm512_setzero_ps();
      |                                  ^
In file included from /usr/lib/gcc/x86_64-linux-gnu/12/include/immintrin.h:49,
                 from c.cpp:1:
/usr/lib/gcc/x86_64-linux-gnu/12/include/avx512fintrin.h:305:1: error: inlining failed in call to ‘always_inline’ ‘__m512 _mm512_setzero_ps()’: target specific option mismatch
  305 | _mm512_setzero_ps (void)
)";
const char* kLdUndefined = R"(/usr/bin/ld: /tmp/ccpCd2sk.o: in function `f(float const*, int)':
c.cpp:(.text+0x42): undefined reference to `missing_symbol'
collect2: error: ld returned 1 exit status
)";
// The same g++ line with -fdiagnostics-color=always, as a terminal shows it.
const char* kGxxColoured =
    "\x1b[01m\x1b[Kd.cpp:1:23:\x1b[m\x1b[K \x1b[01;31m\x1b[Kerror: \x1b[m\x1b[K"
    "\xe2\x80\x98\x1b[01m\x1b[Kundeclared_thing\x1b[m\x1b[K\xe2\x80\x99 was not declared in "
    "this scope\r\n";
// nvcc 13.0 (V13.0.88), -gencode=arch=compute_90a,code=sm_90a -Xptxas -v.
const char* kNvccUndefined = R"(k.cu(7): error: identifier "undefined_var" is undefined
    y[i] = v + undefined_var;
               ^

1 error detected in the compilation of "k.cu".
)";
const char* kPtxasSharedAndSpills =
    R"(ptxas info    : Overriding maximum register limit 256 for '_Z5spillPfi' with  24 of maxrregcount option
ptxas error   : Entry function '_Z1kPf' uses too much shared data (0x3a980 bytes, 0x38c00 max)
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z5spillPfi' for 'sm_90a'
ptxas info    : Function properties for _Z5spillPfi
    440 bytes stack frame, 524 bytes spill stores, 616 bytes spill loads
ptxas info    : Used 24 registers, used 0 barriers, 440 bytes cumulative stack size
)";
// -gencode=arch=compute_80,code=sm_80 on a kernel with a Hopper instruction.
const char* kPtxasUnsupported =
    R"(ptxas /tmp/tmpxft_000034c3_00000000-6_k6.ptx, line 26; error   : Instruction 'wgmma.fence' not supported on .target 'sm_80'
ptxas fatal   : Ptx assembly aborted due to errors
)";

fs::path fixture() {
  return test::source_dir() / "knowledge" / "corpus_fixture";
}

class Kb : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::temp_dir(std::string("kb-") +
                          ::testing::UnitTest::GetInstance()->current_test_info()->name());
    corpus_ = dir_ / "corpus";
    index_ = dir_ / "kb.db";
    reset();
  }

  // A fresh copy of the fixture corpus.
  void reset() {
    fs::remove_all(corpus_);
    fs::copy(fixture(), corpus_, fs::copy_options::recursive);
  }

  KnowledgeBase open() const { return KnowledgeBase::open(corpus_, index_); }

  void write(const std::string& rel, const std::string& text) {
    std::ofstream(corpus_ / rel, std::ios::binary | std::ios::trunc) << text;
  }
  std::string read(const std::string& rel) const { return read_text_file(corpus_ / rel); }

  // The message of the UserError that opening throws.
  std::string open_error() const {
    try {
      open();
    } catch (const UserError& e) {
      return e.what();
    }
    return "(opened without an error)";
  }

  fs::path dir_, corpus_, index_;
};

TEST_F(Kb, ParsesEveryKindOfDocument) {
  auto kb = open();
  auto p = kb.get("fx-warp-reduce");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->kind, "pattern");
  EXPECT_EQ(p->title, "Warp reductions with register shuffles");
  EXPECT_EQ(p->targets, Ids{"cuda"});
  EXPECT_EQ((p->ops), (Ids{"reduction", "softmax"}));
  EXPECT_EQ(p->bounds, Ids{"memory-latency"});
  EXPECT_EQ(p->source, "test fixture");
  EXPECT_EQ(p->file, fs::path("patterns/fx-warp-reduce.md"));
  EXPECT_EQ(p->body.rfind("A row reduction", 0), 0u) << p->body;
  EXPECT_EQ(kb.get("fx-avx-fma")->title, "Register tiles for a CPU microkernel");  // unquoted

  auto h = kb.hardware("fx-gpu");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->figures.at("hbm_bandwidth_gbps"), 1000);
  EXPECT_EQ(h->figures.at("l2_mib"), 2.5);
  EXPECT_EQ(h->source, "test fixture; nowhere");
  EXPECT_NE(h->body.find("sm_count: 10"), std::string::npos) << h->body;
  EXPECT_TRUE(h->ops.empty());
  EXPECT_FALSE(kb.hardware("fx-warp-reduce"));
  EXPECT_FALSE(kb.get("no-such-doc"));

  auto e = kb.get("fx-ptxas-shared");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, "error");
  EXPECT_EQ(e->title, "nvcc: Static shared memory exceeds what one block may have.");
  EXPECT_EQ(e->file, fs::path("errors/nvcc.json"));

  KbStats st = kb.stats();
  EXPECT_EQ(st.documents, 14u);
  EXPECT_EQ(st.by_kind, (std::vector<std::pair<std::string, size_t>>{
                            {"error", 9}, {"hardware", 1}, {"pattern", 4}}));
  EXPECT_EQ(st.by_compiler,
            (std::vector<std::pair<std::string, size_t>>{{"gcc", 4}, {"neuron", 1}, {"nvcc", 4}}));
  EXPECT_EQ(st.rules_files, 1u);
  EXPECT_EQ(st.corpus_hash.size(), 64u);
  EXPECT_EQ(st.index, index_);
}

struct Malformed {
  std::string file;  // relative to the corpus
  std::string text;
  std::string error;  // expected after "<corpus>/<file>:"
};

const char* kPattern =
    "---\nid: fx-fusion\ntitle: T\nkind: pattern\ntargets: [any]\nops: [any]\nbounds: [any]\n"
    "source: s\n---\nBody.\n";

std::string pattern_with(const std::string& from, const std::string& to) {
  std::string s = kPattern;
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST_F(Kb, EveryMalformedFileIsAUserErrorNamingFileAndLine) {
  const std::string md = "patterns/fx-fusion.md", hw = "hardware/fx-gpu.json",
                    gcc = "errors/gcc.json";
  const std::string hw_ok =
      "{\n  \"id\": \"fx-gpu\",\n  \"kind\": \"hardware\",\n  \"title\": \"G\",\n"
      "  \"targets\": [\"cuda\"],\n  \"figures\": {\"sm_count\": 10},\n  \"notes\": \"n\",\n"
      "  \"sources\": [\"s\"]\n}\n";
  auto hw_with = [&](const std::string& from, const std::string& to) {
    std::string s = hw_ok;
    return s.replace(s.find(from), from.size(), to);
  };
  auto error_entry = [](const std::string& id, const std::string& pattern,
                        const std::string& targets) {
    return "  {\n    \"id\": \"" + id +
           "\",\n    \"kind\": \"error\",\n    \"compiler\": \"gcc\",\n    \"targets\": " +
           targets + ",\n    \"pattern\": \"" + pattern +
           "\",\n    \"meaning\": \"m\",\n    \"fix\": \"f\",\n    \"source\": \"s\"\n  }";
  };
  // Entry 0 spans lines 2-11 and entry 1 lines 12-21; "pattern" is their 6th line.
  auto errors = [&](const std::string& second_pattern, const std::string& second_targets) {
    return "[\n" + error_entry("fx-e0", "error:", "[\"cpu\"]") + ",\n" +
           error_entry("fx-e1", second_pattern, second_targets) + "\n]\n";
  };
  const std::vector<Malformed> cases = {
      {md, std::string(kPattern).substr(4), "1: expected front matter: a first line '---'"},
      {md, pattern_with("---\nBody.\n", ""), "1: front matter is not closed"},
      {md, pattern_with("kind: pattern\n", "colour: red\n"), "4: unknown key 'colour'"},
      {md, pattern_with("title: T\n", "just words\n"), "3: expected 'key: value'"},
      {md, pattern_with("title: T\n", "title: T\ntitle: U\n"), "4: key 'title' given twice"},
      {md, pattern_with("targets: [any]", "targets: [gpu]"),
       "5: targets: unknown target 'gpu' (expected one of: cpu, cuda, triton, trainium, any)"},
      {md, pattern_with("ops: [any]", "ops: [any, sorting]"), "6: ops: unknown op 'sorting'"},
      {md, pattern_with("bounds: [any]", "bounds: memory"), "7: bounds: expected a list"},
      {md, pattern_with("targets: [any]", "targets: []"), "5: targets: empty list"},
      {md, pattern_with("id: fx-fusion", "id: fusion"),
       "2: id 'fusion' differs from the file name 'fx-fusion'"},
      {md, pattern_with("source: s\n", ""), "1: front matter lacks 'source'"},
      {md, pattern_with("title: T", "title:"), "3: title: empty"},
      {md, pattern_with("kind: pattern", "kind: recipe"), "4: kind: expected pattern"},
      {md, pattern_with("Body.\n", "\n  \n"), "9: no text after the front matter"},
      {hw, hw_with("\"n\",", "\"n\",,"), "7: invalid JSON"},
      {hw, hw_with("\"id\": \"fx-gpu\"", "\"id\": \"gpu\""),
       "2: $.id: 'gpu' differs from the file name 'fx-gpu'"},
      {hw, hw_with("\"sm_count\": 10", "\"sm_count\": \"ten\""),
       "6: $.figures.sm_count: expected a number"},
      {hw, hw_with("\"figures\": {\"sm_count\": 10}", "\"figures\": {}"),
       "6: $.figures: expected an object of named numbers"},
      {hw, hw_with("\"title\"", "\"colour\": \"red\",\n  \"title\""), "4: $.colour: unknown key"},
      {hw, hw_with("[\"cuda\"]", "[\"tpu\"]"), "5: $.targets[0]: unknown target 'tpu'"},
      {hw, hw_with("\"kind\": \"hardware\"", "\"kind\": \"pattern\""),
       "3: $.kind: expected \"hardware\""},
      {hw, hw_with("\"sources\": [\"s\"]", "\"sources\": []"),
       "8: $.sources: expected at least one source"},
      {hw, hw_with("\"notes\"", "\"features\": [\"tma\", \"warp-drive\"],\n  \"notes\""),
       "7: $.features[1]: unknown feature 'warp-drive'"},
      {md, pattern_with("source: s\n", "source: s\nneeds: [tma, magic]\n"),
       "9: needs: unknown feature 'magic'"},
      {md, pattern_with("source: s\n", "source: s\nneeds: [any]\n"),
       "9: needs: unknown feature 'any'"},
      {gcc, errors("error: (unclosed", "[\"cpu\"]"),
       "17: $[1].pattern: does not compile as an ECMAScript regex"},
      {gcc, errors("error:", "[\"gpu\"]"), "16: $[1].targets[0]: unknown target 'gpu'"},
      {gcc, errors("", "[\"cpu\"]"), "17: $[1].pattern: must not be empty"},
      {gcc, "{\"id\": \"x\"}\n", "1: expected a JSON array of error entries"},
      {gcc, "[\n  {\"id\": \"x\", \"kind\": \"error\"}\n]\n", "2: $[0].compiler: missing"},
  };
  for (const auto& c : cases) {
    reset();
    write(c.file, c.text);
    const std::string want = (corpus_ / c.file).string() + ":" + c.error;
    const std::string got = open_error();
    EXPECT_EQ(got.rfind(want, 0), 0u) << "want: " << want << "\n got: " << got;
    EXPECT_EQ(got.find('\n'), std::string::npos) << got;
  }
  // Files are read in path order: errors/ before patterns/.
  reset();
  write(gcc, "[\n" + error_entry("fx-fusion", "error:", "[\"cpu\"]") + "\n]\n");
  EXPECT_EQ(open_error(), (corpus_ / md).string() + ":2: duplicate id 'fx-fusion' (also in " +
                              (corpus_ / gcc).string() + ")");
  reset();
  write("patterns/notes.txt", "stray");
  EXPECT_NE(open_error().find("notes.txt: unexpected in the corpus (only *.md files belong in "
                              "patterns/)"),
            std::string::npos)
      << open_error();
  fs::remove_all(corpus_);
  EXPECT_NE(open_error().find("no knowledge corpus at"), std::string::npos) << open_error();
}

TEST_F(Kb, IndexIsRebuiltWhenTheCorpusChangesAndNotOtherwise) {
  EXPECT_TRUE(open().stats().built_now);
  EXPECT_FALSE(open().stats().built_now);
  const std::string text = read("patterns/fx-fusion.md");
  write("patterns/fx-fusion.md", text);  // the same bytes, a new modification time
  EXPECT_FALSE(open().stats().built_now);

  write("patterns/fx-fusion.md", text + "A zebracrossing of words.\n");
  auto kb = open();
  EXPECT_TRUE(kb.stats().built_now);
  EXPECT_EQ(ids(kb.search("zebracrossing")), Ids{"fx-fusion"});
  EXPECT_FALSE(open().stats().built_now);

  write("errors/nvcc.json", "[]\n");  // a file emptied
  EXPECT_TRUE(open().stats().built_now);
  EXPECT_FALSE(open().get("fx-ptxas-shared"));

  std::ofstream(index_, std::ios::trunc) << "not an index";  // a damaged index
  EXPECT_TRUE(open().stats().built_now);
  EXPECT_TRUE(open().get("fx-fusion"));

  // By default the index lives in the cache, named by the corpus hash.
  KbStats before = KnowledgeBase::open(corpus_).stats();
  EXPECT_EQ(before.index.parent_path(), cache_dir());
  EXPECT_EQ(before.index.filename().string(),
            "knowledge-" + before.corpus_hash.substr(0, 16) + ".db");
  write("patterns/fx-fusion.md", text);
  KbStats after = KnowledgeBase::open(corpus_).stats();
  EXPECT_NE(after.index, before.index);
  EXPECT_FALSE(KnowledgeBase::open(corpus_).stats().built_now);
  // No temporary build files are left behind.
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

TEST_F(Kb, ConcurrentOpensAndSearchesAgree) {
  const Ids want = ids(open().search("warp shuffles registers", {}, 10));
  fs::remove(index_);
  std::vector<Ids> got(4);
  std::vector<std::string> failures(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] {
      try {
        got[t] = ids(open().search("warp shuffles registers", {}, 10));
      } catch (const std::exception& e) {
        failures[t] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (size_t t = 0; t < got.size(); ++t) {
    EXPECT_EQ(failures[t], "");
    EXPECT_EQ(got[t], want);
  }

  const auto kb = open();
  std::vector<int> wrong(4, 0);
  threads.clear();
  for (size_t t = 0; t < wrong.size(); ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        if (ids(kb.search("warp shuffles registers", {}, 10)) != want) ++wrong[t];
        if (ids(kb.match_errors(kGxxUndeclared)).empty()) ++wrong[t];
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong, std::vector<int>(4, 0));
}

TEST_F(Kb, QueriesThatAreFts5SyntaxNeverThrow) {
  auto kb = open();
  const std::vector<std::string> hostile = {"a AND (",
                                            "\"",
                                            "\"unbalanced quote",
                                            "*",
                                            "warp*",
                                            "NEAR(warp shuffles",
                                            "title:warp",
                                            "-",
                                            "^",
                                            "AND",
                                            "OR NOT",
                                            "()",
                                            "'; DROP TABLE docs; --",
                                            "\x01\xff\xfe",
                                            "caf\xc3\xa9 na\xc3\xafve",
                                            std::string(20000, 'x'),
                                            std::string(5000, '(')};
  for (const auto& q : hostile) {
    EXPECT_NO_THROW(kb.search(q)) << q.substr(0, 40);
    EXPECT_NO_THROW(kb.search(q, {"cuda", "reduction", "any", "pattern"})) << q.substr(0, 40);
  }
  // Operators and column filters are plain words.
  EXPECT_EQ(ids(kb.search("NEAR(warp shuffles")).at(0), "fx-warp-reduce");
  EXPECT_EQ(ids(kb.search("title:\"warp\" AND (")).at(0), "fx-warp-reduce");
  // A long diagnosis is fine too.
  std::string diagnosis;
  for (int i = 0; i < 200; ++i) diagnosis += "memory-bound: moves 134 MB at 23 GB/s, 48% of roof; ";
  EXPECT_NO_THROW(kb.search(diagnosis + "shuffles"));
}

TEST_F(Kb, TextWithoutWordsListsTheFilteredDocuments) {
  auto kb = open();
  for (const std::string q : {"", "   ", "*", "\"\""})
    EXPECT_EQ(ids(kb.search(q, {.target = "cpu"}, 100)),
              (Ids{"fx-avx-fma", "fx-fusion", "fx-gcc-any-error", "fx-gcc-target-mismatch",
                   "fx-gcc-undeclared", "fx-ld-undefined"}))
        << q;
  EXPECT_EQ(ids(kb.search("", {.kind = "hardware"})), Ids{"fx-gpu"});
  EXPECT_EQ(kb.search("", {}, 100).size(), 14u);
  EXPECT_TRUE(kb.search("", {}, 0).empty());
  EXPECT_TRUE(kb.search("shuffles", {}, 0).empty());
}

TEST_F(Kb, TagFiltersKeepMatchingAndAnyTaggedDocuments) {
  auto kb = open();
  // "registers": the CPU microkernel (cpu) and fusion (any) mention them.
  EXPECT_TRUE(has(ids(kb.search("registers")), "fx-avx-fma"));
  Ids cpu = ids(kb.search("registers", {.target = "cpu"}));
  EXPECT_TRUE(has(cpu, "fx-avx-fma"));
  EXPECT_TRUE(has(cpu, "fx-fusion"));
  Ids cuda = ids(kb.search("registers", {.target = "cuda"}));
  EXPECT_FALSE(has(cuda, "fx-avx-fma"));
  EXPECT_TRUE(has(cuda, "fx-fusion"));
  EXPECT_TRUE(has(cuda, "fx-warp-reduce"));  // "register shuffles" in its title
  EXPECT_EQ(ids(kb.search("registers", {.target = "trainium"})), Ids{"fx-fusion"});

  Ids gemm = ids(kb.search("loads", {.op = "gemm"}));
  EXPECT_TRUE(has(gemm, "fx-avx-fma"));  // "loaded" stems to "load"
  EXPECT_FALSE(has(gemm, "fx-vector-loads"));
  EXPECT_TRUE(has(ids(kb.search("loads", {.op = "norm"})), "fx-vector-loads"));
  EXPECT_FALSE(has(ids(kb.search("loads", {.bound = "compute"})), "fx-vector-loads"));
  EXPECT_TRUE(has(ids(kb.search("loads", {.bound = "dram-bandwidth"})), "fx-vector-loads"));

  // Hardware and error entries carry no op or bound tags: those filters keep them.
  EXPECT_EQ(ids(kb.search("HBM bandwidth", {.kind = "hardware"})), Ids{"fx-gpu"});
  EXPECT_TRUE(has(ids(kb.search("HBM bandwidth", {.op = "gemm", .bound = "memory"})), "fx-gpu"));
  EXPECT_FALSE(has(ids(kb.search("HBM bandwidth", {.target = "cpu"})), "fx-gpu"));
  EXPECT_FALSE(has(ids(kb.search("bandwidth", {.kind = "pattern"})), "fx-gpu"));
  for (const auto& h : kb.search("shared memory", {.kind = "error"}))
    EXPECT_EQ(h.doc.kind, "error");

  // "any" as a filter value filters nothing.
  EXPECT_EQ(ids(kb.search("registers", {"any", "any", "any", "any"})), ids(kb.search("registers")));

  EXPECT_THROW(kb.search("x", {.target = "gpu"}), UserError);
  EXPECT_THROW(kb.search("x", {.op = "sort"}), UserError);
  EXPECT_THROW(kb.search("x", {.bound = "slow"}), UserError);
  EXPECT_THROW(kb.search("x", {.kind = "recipe"}), UserError);
}

// A pattern that needs a hardware feature is retrieved for a part whose
// sheet has it, and not for one without; without a feature list, for all.
TEST_F(Kb, PatternsThatNeedAFeatureOnlyForPartsThatHaveIt) {
  write("patterns/fx-tma.md",
        "---\nid: fx-tma\ntitle: Bulk tensor copies\nkind: pattern\ntargets: [cuda]\nops: [any]\n"
        "bounds: [memory]\nsource: s\nneeds: [tma, clusters]\n---\nCopy tiles with the tensor "
        "memory accelerator.\n");
  write("hardware/fx-gpu.json",
        "{\n  \"id\": \"fx-gpu\",\n  \"kind\": \"hardware\",\n  \"title\": \"G\",\n"
        "  \"targets\": [\"cuda\"],\n  \"figures\": {\"sm_count\": 10},\n"
        "  \"features\": [\"cp-async\", \"tma\", \"clusters\"],\n  \"notes\": \"n\",\n"
        "  \"sources\": [\"s\"]\n}\n");
  auto kb = open();
  const KbDoc sheet = *kb.hardware("fx-gpu");
  EXPECT_EQ(sheet.features, (Ids{"cp-async", "tma", "clusters"}));
  EXPECT_EQ(kb.get("fx-tma")->needs, (Ids{"tma", "clusters"}));
  EXPECT_TRUE(has(ids(kb.search("tensor memory accelerator")), "fx-tma"));
  EXPECT_TRUE(has(ids(kb.search("tensor memory accelerator", {.features = sheet.features})), "fx-tma"));
  EXPECT_FALSE(has(ids(kb.search("tensor memory accelerator", {.features = Ids{"cp-async", "tma"}})),
                   "fx-tma"));  // no clusters
  EXPECT_FALSE(has(ids(kb.search("tensor memory accelerator", {.features = Ids{}})), "fx-tma"));
  // Patterns that need nothing stay for every part.
  EXPECT_TRUE(has(ids(kb.search("registers", {.features = Ids{}})), "fx-fusion"));
  EXPECT_THROW(kb.search("x", {.features = Ids{"warp-drive"}}), UserError);
}

TEST_F(Kb, RankingStemsWordsWeighsTitlesAndShowsASnippet) {
  auto kb = open();
  EXPECT_TRUE(has(ids(kb.search("vectorize")), "fx-vector-loads"));  // body says "vectorized"
  EXPECT_EQ(ids(kb.search("reducing")).at(0), "fx-warp-reduce");
  // "fusion" is in one title and, once, in another document's body.
  write("patterns/fx-avx-fma.md",
        read("patterns/fx-avx-fma.md") + "Fusion with a bias comes later.\n");
  auto kb2 = open();
  auto hits = kb2.search("fusion");
  ASSERT_EQ(ids(hits), (Ids{"fx-fusion", "fx-avx-fma"}));
  EXPECT_GT(hits[0].score, hits[1].score);
  EXPECT_GT(hits[1].score, 0);

  auto s = kb2.search("barrier shuffles").at(0);
  EXPECT_EQ(s.doc.id, "fx-warp-reduce");
  EXPECT_NE(s.snippet.find("**barrier**"), std::string::npos) << s.snippet;
  EXPECT_EQ(s.snippet.find('\n'), std::string::npos) << s.snippet;
  EXPECT_EQ(kb2.search("bandwidth", {}, 1).size(), 1u);
}

TEST_F(Kb, CompilerOutputMatchesItsErrorEntriesMostSpecificFirst) {
  auto kb = open();
  auto found = kb.match_errors(kGxxUndeclared);
  EXPECT_EQ(ids(found), (Ids{"fx-gcc-undeclared", "fx-gcc-any-error"}));
  EXPECT_EQ(found.at(0).line,
            "b.cpp:7:3: error: ‘undeclared_thing’ was not declared in this scope");
  EXPECT_EQ(found.at(0).fix, "Declare it or include its header.");
  EXPECT_EQ(found.at(0).compiler, "gcc");

  // The pattern says .always_inline. where g++ printed ‘always_inline’ (3 bytes each quote).
  EXPECT_EQ(ids(kb.match_errors(kGxxTargetMismatch)),
            (Ids{"fx-gcc-target-mismatch", "fx-gcc-any-error"}));
  // The same line from g++ in the C locale.
  EXPECT_EQ(ids(kb.match_errors("x.h:305:1: error: inlining failed in call to 'always_inline' "
                                "'__m512 _mm512_setzero_ps()': target specific option mismatch")),
            (Ids{"fx-gcc-target-mismatch", "fx-gcc-any-error"}));
  // One entry per kind of error however many lines match it.
  EXPECT_EQ(ids(kb.match_errors(std::string(kLdUndefined) + kGxxUndeclared + kGxxUndeclared)),
            (Ids{"fx-gcc-undeclared", "fx-ld-undefined", "fx-gcc-any-error"}));
  EXPECT_EQ(ids(kb.match_errors(kGxxColoured)), (Ids{"fx-gcc-undeclared", "fx-gcc-any-error"}));
  EXPECT_EQ(kb.match_errors(kGxxColoured).at(0).line,
            "d.cpp:1:23: error: ‘undeclared_thing’ was not declared in this scope");

  EXPECT_EQ(ids(kb.match_errors(kNvccUndefined, "cuda")), Ids{"fx-nvcc-undefined-identifier"});
  EXPECT_EQ(ids(kb.match_errors(kPtxasSharedAndSpills)),
            (Ids{"fx-ptxas-shared", "fx-ptxas-spills"}));
  EXPECT_EQ(ids(kb.match_errors(kPtxasUnsupported)), Ids{"fx-ptxas-unsupported"});
  EXPECT_EQ(ids(kb.match_errors("ERROR: [NCC_FXTEST01] something\n", "trainium")),
            Ids{"fx-ncc-made-up"});

  // Target: entries for it or for any; k bounds the answer.
  EXPECT_EQ(ids(kb.match_errors(std::string(kLdUndefined) + kGxxUndeclared, "cuda")),
            Ids{"fx-ld-undefined"});
  EXPECT_EQ(kb.match_errors(kGxxUndeclared, "", 1).size(), 1u);
  EXPECT_TRUE(kb.match_errors("all good\n").empty());
  EXPECT_TRUE(kb.match_errors("").empty());
  EXPECT_THROW(kb.match_errors(kGxxUndeclared, "gpu"), UserError);
  // A very long line is cut, not a stack overflow in std::regex.
  EXPECT_EQ(ids(kb.match_errors(std::string(1 << 20, 'x') + "\nc.cpp:(.text+0x42): undefined "
                                                            "reference to `f'\n")),
            Ids{"fx-ld-undefined"});
}

}  // namespace
}  // namespace kevo
