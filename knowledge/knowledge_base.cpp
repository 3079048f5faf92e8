// Start with KnowledgeBase::open: hash the corpus, reuse the index built from
// exactly that corpus or build one, then load the error patterns. search()
// turns free text into an OR of quoted words so no input is FTS5 syntax.
#include "knowledge/knowledge_base.h"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <mutex>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/paths.h"
#include "knowledge/corpus.h"

namespace kevo {

namespace fs = std::filesystem;

namespace {

// BM25 column weights for docs_fts (id, title, body, tags): a word of the
// title counts as much as five of the body.
constexpr const char* kRank = "bm25(docs_fts, 2.0, 5.0, 1.0, 1.0)";
// A diagnosis or a compiler log can be long; its first distinct words are enough.
constexpr size_t kMaxTerms = 64;
// libstdc++'s std::regex recurses per character and can exhaust the stack
// on very long lines (long template names); error messages fit in this.
constexpr size_t kMaxLine = 2000;

constexpr const char* kSchema = R"(
  CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
  CREATE TABLE docs(n INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, kind TEXT NOT NULL,
                    title TEXT NOT NULL, body TEXT NOT NULL, source TEXT NOT NULL,
                    targets TEXT NOT NULL, ops TEXT NOT NULL, bounds TEXT NOT NULL,
                    figures TEXT NOT NULL, file TEXT NOT NULL, needs TEXT NOT NULL,
                    features TEXT NOT NULL);
  -- One row per tag word; a document without tags on an axis gets 'any' there.
  CREATE TABLE tags(doc INTEGER NOT NULL, axis TEXT NOT NULL, value TEXT NOT NULL);
  CREATE INDEX tags_by_value ON tags(axis, value, doc);
  CREATE VIRTUAL TABLE docs_fts USING fts5(id, title, body, tags,
                                           tokenize = 'porter unicode61 remove_diacritics 2');
  CREATE TABLE errors(n INTEGER PRIMARY KEY, id TEXT NOT NULL, compiler TEXT NOT NULL,
                      targets TEXT NOT NULL, pattern TEXT NOT NULL, meaning TEXT NOT NULL,
                      fix TEXT NOT NULL, source TEXT NOT NULL);
)";

constexpr const char* kDocColumns =
    "d.id, d.kind, d.title, d.body, d.source, d.targets, d.ops, d.bounds, d.figures, d.file, "
    "d.needs, d.features";

class Db {
 public:
  Db(const fs::path& path, bool create) : path_(path) {
    int flags = create ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY;
    if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
      std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      db_ = nullptr;
      throw UserError(fmt::format("cannot open knowledge index '{}': {}", path.string(), msg));
    }
  }
  ~Db() { sqlite3_close(db_); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  sqlite3* get() const { return db_; }
  [[noreturn]] void fail() const {
    throw UserError(fmt::format("knowledge index '{}': {}", path_.string(), sqlite3_errmsg(db_)));
  }
  void exec(const char* sql) {
    if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail();
  }

 private:
  fs::path path_;
  sqlite3* db_ = nullptr;
};

class Stmt {
 public:
  Stmt(const Db& db, std::string_view sql) : db_(db) {
    if (sqlite3_prepare_v2(db.get(), sql.data(), static_cast<int>(sql.size()), &s_, nullptr) !=
        SQLITE_OK)
      db.fail();
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  // Binds a named parameter (":kind") when the statement has it.
  Stmt& bind(const char* name, std::string_view text) {
    int i = sqlite3_bind_parameter_index(s_, name);
    if (i > 0 && sqlite3_bind_text(s_, i, text.data(), static_cast<int>(text.size()),
                                   SQLITE_TRANSIENT) != SQLITE_OK)
      db_.fail();
    return *this;
  }
  Stmt& bind(const char* name, int64_t v) {
    int i = sqlite3_bind_parameter_index(s_, name);
    if (i > 0 && sqlite3_bind_int64(s_, i, v) != SQLITE_OK) db_.fail();
    return *this;
  }
  bool step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) db_.fail();
    return false;
  }
  std::string text(int i) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, i));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(s_, i))) : std::string();
  }
  double number(int i) const { return sqlite3_column_double(s_, i); }
  int64_t integer(int i) const { return sqlite3_column_int64(s_, i); }

 private:
  const Db& db_;
  sqlite3_stmt* s_ = nullptr;
};

std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string s;
  for (const auto& w : v) s += (s.empty() ? "" : std::string(sep)) + w;
  return s;
}

std::vector<std::string> json_list(const std::string& text) {
  return nlohmann::json::parse(text).get<std::vector<std::string>>();
}

// The corpus hash an index was built from; "" when it is missing or unreadable.
std::string indexed_hash(const fs::path& index) {
  if (!fs::exists(index)) return "";
  try {
    Db db(index, false);
    Stmt s(db, "SELECT value FROM meta WHERE key = 'corpus_hash'");
    return s.step() ? s.text(0) : "";
  } catch (const UserError&) {
    return "";  // not a kevo index (or a damaged one): build it again
  }
}

void insert_doc(Db& db, int64_t n, const KbDoc& d) {
  auto tags_json = [](const std::vector<std::string>& v) { return nlohmann::json(v).dump(); };
  Stmt(db,
       "INSERT INTO docs VALUES (:n, :id, :kind, :title, :body, :source, :targets, :ops, "
       ":bounds, :figures, :file, :needs, :features)")
      .bind(":n", n)
      .bind(":id", d.id)
      .bind(":kind", d.kind)
      .bind(":title", d.title)
      .bind(":body", d.body)
      .bind(":source", d.source)
      .bind(":targets", tags_json(d.targets))
      .bind(":ops", tags_json(d.ops))
      .bind(":bounds", tags_json(d.bounds))
      .bind(":figures", d.figures.dump())
      .bind(":file", d.file.generic_string())
      .bind(":needs", tags_json(d.needs))
      .bind(":features", tags_json(d.features))
      .step();
  for (const auto& f : d.needs)
    Stmt(db, "INSERT INTO tags VALUES (:n, 'needs', :value)").bind(":n", n).bind(":value", f).step();
  std::vector<std::string> words;
  const std::pair<const char*, const std::vector<std::string>*> axes[] = {
      {"target", &d.targets}, {"op", &d.ops}, {"bound", &d.bounds}};
  for (auto [axis, tags] : axes) {
    for (const auto& t : tags->empty() ? std::vector<std::string>{"any"} : *tags)
      Stmt(db, "INSERT INTO tags VALUES (:n, :axis, :value)")
          .bind(":n", n)
          .bind(":axis", axis)
          .bind(":value", t)
          .step();
    words.insert(words.end(), tags->begin(), tags->end());
  }
  Stmt(db,
       "INSERT INTO docs_fts(rowid, id, title, body, tags) VALUES (:n, :id, :title, :body, :tags)")
      .bind(":n", n)
      .bind(":id", d.id)
      .bind(":title", d.title)
      .bind(":body", d.body)
      .bind(":tags", join(words, " "))
      .step();
}

// Builds into a private temporary file and renames it over `index`: a reader
// sees the old index or the new one, never half of one.
void build_index(const fs::path& index, const Corpus& corpus, const std::string& hash) {
  static std::atomic<unsigned> builds{0};
  std::error_code ec;
  if (index.has_parent_path()) fs::create_directories(index.parent_path(), ec);
  const fs::path tmp = fmt::format("{}.tmp.{}.{}", index.string(), getpid(), builds++);
  fs::remove(tmp, ec);
  try {
    {
      Db db(tmp, true);
      db.exec("PRAGMA journal_mode = OFF");  // a failed build is deleted, not rolled back
      db.exec(kSchema);
      db.exec("BEGIN");
      int64_t n = 0;
      for (const auto& d : corpus.docs) insert_doc(db, ++n, d);
      n = 0;
      for (const auto& e : corpus.errors)
        Stmt(db,
             "INSERT INTO errors VALUES (:n, :id, :compiler, :targets, :pattern, :meaning, "
             ":fix, :source)")
            .bind(":n", ++n)
            .bind(":id", e.id)
            .bind(":compiler", e.compiler)
            .bind(":targets", nlohmann::json(e.targets).dump())
            .bind(":pattern", e.pattern)
            .bind(":meaning", e.meaning)
            .bind(":fix", e.fix)
            .bind(":source", e.source)
            .step();
      Stmt(db, "INSERT INTO meta VALUES ('corpus_hash', :hash)").bind(":hash", hash).step();
      db.exec("COMMIT");
    }
    fs::rename(tmp, index, ec);
    if (ec)
      throw UserError(
          fmt::format("cannot write knowledge index '{}': {}", index.string(), ec.message()));
  } catch (...) {
    fs::remove(tmp, ec);
    throw;
  }
}

KbDoc read_doc(const Stmt& s) {
  KbDoc d;
  d.id = s.text(0);
  d.kind = s.text(1);
  d.title = s.text(2);
  d.body = s.text(3);
  d.source = s.text(4);
  d.targets = json_list(s.text(5));
  d.ops = json_list(s.text(6));
  d.bounds = json_list(s.text(7));
  d.figures = nlohmann::json::parse(s.text(8));
  d.file = s.text(9);
  d.needs = json_list(s.text(10));
  d.features = json_list(s.text(11));
  return d;
}

// The words of free text, lower-cased, each quoted and OR-ed: FTS5 then reads
// them as plain terms, whatever operators or quotes the text had.
std::string fts_query(std::string_view text) {
  std::vector<std::string> terms;
  std::set<std::string, std::less<>> seen;
  std::string word;
  auto flush = [&] {
    if (!word.empty() && terms.size() < kMaxTerms && seen.insert(word).second)
      terms.push_back(fmt::format("\"{}\"", word));
    word.clear();
  };
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    // Bytes of UTF-8 sequences stay in words, as unicode61 keeps letters.
    if (std::isalnum(u) || u >= 0x80)
      word += static_cast<char>(std::tolower(u));
    else
      flush();
  }
  flush();
  return join(terms, " OR ");
}

std::string collapse_space(const std::string& s) {
  std::string out;
  for (char c : s) {
    bool space = std::isspace(static_cast<unsigned char>(c));
    if (!space)
      out += c;
    else if (!out.empty() && out.back() != ' ')
      out += ' ';
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// A filter word: "" (no filter) for "any"; UserError for a word not in the vocabulary.
std::string filter_word(std::string_view axis, const std::string& word) {
  if (word.empty() || word == "any") return "";
  if (auto why = kb_tag_word_error(axis, word); !why.empty()) throw UserError(why);
  return word;
}

bool tagged(const std::vector<std::string>& tags, std::string_view word) {
  return word.empty() || tags.empty() || std::any_of(tags.begin(), tags.end(), [&](const auto& t) {
           return t == word || t == "any";
         });
}

// Compiler output as a terminal shows it may carry colour escapes (ESC [ ... m).
std::string strip_escapes(std::string_view line) {
  std::string out;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
      i += 2;
      while (i < line.size() && !std::isalpha(static_cast<unsigned char>(line[i]))) ++i;
      continue;
    }
    out += line[i];
  }
  return out;
}

// g++ quotes names with U+2018/U+2019 in a UTF-8 locale and with ' otherwise;
// both sides of a match get ', so a pattern need not care (and std::regex,
// which sees bytes, would take a typographic quote for three characters).
std::string ascii_quotes(std::string s) {
  for (const char* q : {"\xe2\x80\x98", "\xe2\x80\x99"})
    for (size_t at; (at = s.find(q)) != std::string::npos;) s.replace(at, 3, "'");
  return s;
}

}  // namespace

struct KnowledgeBase::Impl {
  struct Pattern {
    KbError entry;
    std::regex re;
    size_t literal = 0;  // literal characters: the more, the more specific
  };

  fs::path corpus, index;
  std::string hash;
  bool built_now = false;
  size_t rules_files = 0;
  std::vector<Pattern> patterns;
  std::unique_ptr<Db> db;
  std::mutex mu;  // one connection, one caller at a time
};

KnowledgeBase::KnowledgeBase(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KnowledgeBase::~KnowledgeBase() = default;
KnowledgeBase::KnowledgeBase(KnowledgeBase&&) noexcept = default;
KnowledgeBase& KnowledgeBase::operator=(KnowledgeBase&&) noexcept = default;

KnowledgeBase KnowledgeBase::open(std::optional<fs::path> corpus, std::optional<fs::path> index) {
  auto impl = std::make_unique<Impl>();
  impl->corpus = corpus ? *corpus : kevo_home() / "knowledge" / "corpus";
  const auto files = list_corpus(impl->corpus);
  impl->hash = corpus_hash(files);
  impl->index =
      index ? *index : cache_dir() / fmt::format("knowledge-{}.db", impl->hash.substr(0, 16));
  if (indexed_hash(impl->index) != impl->hash) {
    build_index(impl->index, parse_corpus(impl->corpus, files), impl->hash);
    impl->built_now = true;
  }
  impl->db = std::make_unique<Db>(impl->index, false);
  {
    Stmt s(*impl->db, "SELECT value FROM meta WHERE key = 'corpus_hash'");
    if (!s.step() || s.text(0) != impl->hash)
      throw UserError(fmt::format(
          "knowledge index '{}' was replaced by another corpus's index while opening it "
          "(give each corpus its own index path)",
          impl->index.string()));
  }
  Stmt s(*impl->db,
         "SELECT id, compiler, targets, pattern, meaning, fix, source FROM errors ORDER BY n");
  while (s.step()) {
    Impl::Pattern p;
    p.entry = {
        s.text(0), s.text(1), s.text(3), s.text(4), s.text(5), s.text(6), json_list(s.text(2)), ""};
    p.re = std::regex(ascii_quotes(p.entry.pattern), std::regex::ECMAScript);
    p.literal = pattern_literal_chars(p.entry.pattern);
    impl->patterns.push_back(std::move(p));
  }
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(impl->corpus / "rules", ec))
    if (e.is_regular_file()) ++impl->rules_files;
  return KnowledgeBase(std::move(impl));
}

std::vector<KbHit> KnowledgeBase::search(std::string_view text, const KbFilter& filter,
                                         size_t k) const {
  const std::string target = filter_word("target", filter.target);
  const std::string op = filter_word("op", filter.op);
  const std::string bound = filter_word("bound", filter.bound);
  const std::string kind = filter.kind == "any" ? std::string() : filter.kind;
  if (!kind.empty() && kind != "pattern" && kind != "hardware" && kind != "error")
    throw UserError(
        fmt::format("unknown kind '{}' (expected one of: pattern, hardware, error)", kind));
  if (k == 0) return {};
  const std::string filters =
      " AND (:kind = '' OR d.kind = :kind)"
      " AND (:target = '' OR d.n IN (SELECT doc FROM tags WHERE axis = 'target' AND value IN "
      "(:target, 'any')))"
      " AND (:op = '' OR d.n IN (SELECT doc FROM tags WHERE axis = 'op' AND value IN "
      "(:op, 'any')))"
      " AND (:bound = '' OR d.n IN (SELECT doc FROM tags WHERE axis = 'bound' AND value IN "
      "(:bound, 'any')))"
      " AND (:any_feature = 1 OR NOT EXISTS (SELECT 1 FROM tags t WHERE t.doc = d.n AND "
      "t.axis = 'needs' AND instr(:features, ',' || t.value || ',') = 0))";
  std::string features = ",";
  if (filter.features)
    for (const auto& f : *filter.features) features += filter_word("feature", f) + ",";
  const std::string match = fts_query(text);
  const std::string sql =
      match.empty() ? fmt::format("SELECT {}, 0, '' FROM docs d WHERE 1{} ORDER BY d.id LIMIT :k",
                                  kDocColumns, filters)
                    : fmt::format(
                          "SELECT {}, -{} AS score, snippet(docs_fts, 2, '**', '**', '...', 24) "
                          "FROM docs_fts JOIN docs d ON d.n = docs_fts.rowid "
                          "WHERE docs_fts MATCH :match{} ORDER BY score DESC LIMIT :k",
                          kDocColumns, kRank, filters);
  std::lock_guard lock(impl_->mu);
  Stmt s(*impl_->db, sql);
  s.bind(":match", match)
      .bind(":kind", kind)
      .bind(":target", target)
      .bind(":op", op)
      .bind(":bound", bound)
      .bind(":any_feature", static_cast<int64_t>(!filter.features.has_value()))
      .bind(":features", features)
      .bind(":k", static_cast<int64_t>(std::min<size_t>(k, INT64_MAX)));
  std::vector<KbHit> hits;
  while (s.step()) hits.push_back({read_doc(s), s.number(12), collapse_space(s.text(13))});
  return hits;
}

std::vector<KbError> KnowledgeBase::match_errors(std::string_view compiler_output,
                                                 std::string_view target, size_t k) const {
  const std::string want = filter_word("target", std::string(target));
  struct Found {
    const Impl::Pattern* p;
    size_t line_no;
    std::string line;
  };
  std::vector<Found> found;
  std::vector<bool> matched(impl_->patterns.size(), false);
  size_t line_no = 0;
  for (size_t pos = 0; pos < compiler_output.size();) {
    size_t nl = compiler_output.find('\n', pos);
    if (nl == std::string_view::npos) nl = compiler_output.size();
    std::string line = strip_escapes(compiler_output.substr(pos, nl - pos));
    pos = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.size() > kMaxLine) line.resize(kMaxLine);
    const std::string ascii = ascii_quotes(line);
    for (size_t i = 0; i < impl_->patterns.size(); ++i) {
      const auto& p = impl_->patterns[i];
      if (matched[i] || !tagged(p.entry.targets, want) || !std::regex_search(ascii, p.re)) continue;
      matched[i] = true;
      found.push_back({&p, line_no, line});
    }
  }
  std::stable_sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    if (a.p->literal != b.p->literal) return a.p->literal > b.p->literal;
    return a.line_no < b.line_no;
  });
  std::vector<KbError> out;
  for (size_t i = 0; i < found.size() && i < k; ++i) {
    out.push_back(found[i].p->entry);
    out.back().line = found[i].line;
  }
  return out;
}

std::optional<KbDoc> KnowledgeBase::get(std::string_view id) const {
  std::lock_guard lock(impl_->mu);
  Stmt s(*impl_->db, fmt::format("SELECT {} FROM docs d WHERE d.id = :id", kDocColumns));
  s.bind(":id", id);
  if (!s.step()) return std::nullopt;
  return read_doc(s);
}

std::optional<KbDoc> KnowledgeBase::hardware(std::string_view id) const {
  auto d = get(id);
  if (!d || d->kind != "hardware") return std::nullopt;
  return d;
}

KbStats KnowledgeBase::stats() const {
  KbStats st;
  st.corpus = impl_->corpus;
  st.index = impl_->index;
  st.corpus_hash = impl_->hash;
  st.built_now = impl_->built_now;
  st.rules_files = impl_->rules_files;
  std::lock_guard lock(impl_->mu);
  auto counts = [&](const char* sql) {
    std::vector<std::pair<std::string, size_t>> out;
    Stmt s(*impl_->db, sql);
    while (s.step()) out.emplace_back(s.text(0), static_cast<size_t>(s.integer(1)));
    return out;
  };
  st.by_kind = counts("SELECT kind, count(*) FROM docs GROUP BY kind ORDER BY kind");
  st.by_target = counts(
      "SELECT value, count(*) FROM tags WHERE axis = 'target' GROUP BY value ORDER BY value");
  st.by_compiler =
      counts("SELECT compiler, count(*) FROM errors GROUP BY compiler ORDER BY compiler");
  for (const auto& [kind, n] : st.by_kind) st.documents += n;
  return st;
}

}  // namespace kevo
