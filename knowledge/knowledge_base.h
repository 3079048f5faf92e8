// The knowledge base: optimization patterns, hardware figures and compiler
// errors from knowledge/corpus/, indexed in SQLite FTS5 and retrieved by BM25
// with tag filters (for prompts) or by regex over compiler output.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kevo {

// One indexed document: a pattern (Markdown), a hardware sheet or an error entry.
struct KbDoc {
  std::string id;
  std::string kind;  // pattern | hardware | error
  std::string title;
  std::string body;    // the indexed text (hardware: notes and figures; error: meaning and fix)
  std::string source;  // where the facts come from (several joined with "; ")
  // Tag words (see kb_tag_words); an empty list constrains nothing.
  std::vector<std::string> targets, ops, bounds;
  nlohmann::json figures = nlohmann::json::object();  // hardware: {name: number}
  // Hardware features (kb_tag_words("feature")): those a pattern needs, and
  // those a hardware sheet's part has.
  std::vector<std::string> needs, features;
  std::filesystem::path file;                         // relative to the corpus
};

// Empty fields (or "any") match everything; a value also matches documents
// tagged "any" on that axis.
struct KbFilter {
  std::string target = "", op = "", bound = "";  // initialized: {.op = "gemm"} stays quiet
  std::string kind = "";
  // When set, the hardware's features: a document that needs one outside
  // them is left out (a TMA pattern for a part without TMA).
  std::optional<std::vector<std::string>> features = std::nullopt;
};

struct KbHit {
  KbDoc doc;
  double score = 0;     // -bm25: higher is better; 0 for an empty query
  std::string snippet;  // a few words around the best match, matches in **bold**
};

struct KbError {
  std::string id, compiler, pattern, meaning, fix, source;
  std::vector<std::string> targets;
  std::string line;  // match_errors: the first output line it matched
};

struct KbStats {
  std::filesystem::path corpus, index;
  std::string corpus_hash;
  bool built_now = false;                                   // this open built the index
  std::vector<std::pair<std::string, size_t>> by_kind;      // documents per kind
  std::vector<std::pair<std::string, size_t>> by_target;    // per target tag word
  std::vector<std::pair<std::string, size_t>> by_compiler;  // error entries per compiler
  size_t documents = 0;
  size_t rules_files = 0;  // data files in rules/ (not indexed)
};

// The allowed tag words of an axis ("target", "op", "bound", with "any"), and
// of hardware features ("feature", without).
const std::vector<std::string>& kb_tag_words(std::string_view axis);
// "" when `word` is a tag word of `axis`, else why not ("unknown bound 'x'
// (expected one of: ...)").
std::string kb_tag_word_error(std::string_view axis, const std::string& word);

class KnowledgeBase {
 public:
  // corpus: default kevo_home()/knowledge/corpus; index: default
  // cache_dir()/knowledge-<hash prefix>.db. The index is (re)built when it is
  // missing or was built from other corpus contents, into a temporary file
  // renamed into place, so concurrent opens never see a partial index.
  // Throws UserError "FILE:LINE: what" for a malformed corpus file.
  static KnowledgeBase open(std::optional<std::filesystem::path> corpus = {},
                            std::optional<std::filesystem::path> index = {});
  ~KnowledgeBase();
  KnowledgeBase(KnowledgeBase&&) noexcept;
  KnowledgeBase& operator=(KnowledgeBase&&) noexcept;

  // The k best documents for free text (any text: it is split into words
  // that are OR-ed, never parsed as FTS5 syntax). Text without words gives
  // the documents that pass the filter, by id. UserError for an unknown
  // filter word.
  std::vector<KbHit> search(std::string_view text, const KbFilter& filter = {}, size_t k = 5) const;
  // Error entries whose pattern matches a line of `compiler_output`, each once,
  // most specific first (longest literal text in its pattern), at most k.
  // `target` keeps the entries tagged with it or "any". Colour escapes are
  // ignored, and typographic quotes (g++ in a UTF-8 locale) match ' in
  // patterns, so one pattern serves every locale.
  std::vector<KbError> match_errors(std::string_view compiler_output, std::string_view target = "",
                                    size_t k = 5) const;
  std::optional<KbDoc> get(std::string_view id) const;
  std::optional<KbDoc> hardware(std::string_view id) const;
  KbStats stats() const;

  // Calls on one object may come from several threads at once.
 private:
  struct Impl;
  explicit KnowledgeBase(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kevo
