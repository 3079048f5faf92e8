// Reading knowledge/corpus/: which files are indexed, their content hash, and
// strict parsing of each into documents and error entries.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "knowledge/knowledge_base.h"

namespace kevo {

// An indexed corpus file: patterns/*.md, hardware/*.json, errors/*.json.
struct CorpusFile {
  std::filesystem::path rel;  // relative to the corpus root
  std::string text;
};

struct Corpus {
  std::vector<KbDoc> docs;  // patterns, hardware sheets, and each error entry as a document
  std::vector<KbError> errors;
};

// The indexed files in path order. UserError when `root` is not a folder or
// an indexed folder holds a file of another kind.
std::vector<CorpusFile> list_corpus(const std::filesystem::path& root);
// SHA-256 over the relative paths and contents (and the index layout version).
std::string corpus_hash(const std::vector<CorpusFile>& files);
// Parses and validates every file; UserError "ROOT/REL:LINE: what" on the first problem.
Corpus parse_corpus(const std::filesystem::path& root, const std::vector<CorpusFile>& files);

// Literal characters in an ECMAScript pattern: how specific it is.
size_t pattern_literal_chars(const std::string& pattern);

}  // namespace kevo
