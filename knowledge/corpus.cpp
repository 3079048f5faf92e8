#include "knowledge/corpus.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/json_reader.h"
#include "core/paths.h"
#include "targets/traits.h"

namespace kevo {

namespace fs = std::filesystem;

namespace {

// Part of the corpus hash: bumped when what goes into the index changes, so
// an index built by an older kevo is never reused.
constexpr std::string_view kIndexLayout = "kevo-kb-index-2";  // 2: needs, features

struct Folder {
  const char* name;
  const char* ext;
};
constexpr Folder kFolders[] = {{"patterns", ".md"}, {"hardware", ".json"}, {"errors", ".json"}};

[[noreturn]] void fail(const fs::path& file, size_t line, std::string_view what) {
  throw UserError(fmt::format("{}:{}: {}", file.string(), line, what));
}

size_t line_at(std::string_view text, size_t pos) {
  pos = std::min(pos, text.size());
  return 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + pos, '\n'));
}

std::string_view trim(std::string_view s) {
  const char* ws = " \t\r\n";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

std::string unquote(std::string_view s) {
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front())
    s = s.substr(1, s.size() - 2);
  return std::string(s);
}

std::string words(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& w : v) s += (s.empty() ? "" : ", ") + w;
  return s;
}

// Ids name documents everywhere (kevo kb show, prompts): one id, one document.
class Ids {
 public:
  void claim(const std::string& id, const fs::path& shown, size_t line) {
    auto [it, fresh] = files_.emplace(id, shown);
    if (!fresh)
      fail(shown, line, fmt::format("duplicate id '{}' (also in {})", id, it->second.string()));
  }

 private:
  std::map<std::string, fs::path, std::less<>> files_;
};

// ---- JSON files ----------------------------------------------------------

// [begin, end) of the n-th element of the top-level array in `text`.
std::pair<size_t, size_t> array_element(std::string_view text, size_t n) {
  int depth = 0;
  bool in_string = false;
  size_t seen = 0, begin = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth == 2) {
        if (seen == n) begin = i;
        ++seen;
      }
    } else if ((c == '}' || c == ']') && depth-- == 2 && seen == n + 1) {
      return {begin, i + 1};
    }
  }
  return {0, text.size()};
}

// The line a JSON path ("$[3].figures.hbm_tbps") points at: the element, then
// each key in turn. nlohmann::json keeps no positions, so the keys are found
// in the text; where one is not found the line of the last one found is kept.
size_t json_line(std::string_view text, std::string_view path) {
  size_t pos = 0, end = text.size(), i = 1;
  if (path.substr(0, 2) == "$[") {
    size_t close = path.find(']');
    auto [b, e] = array_element(text, std::stoul(std::string(path.substr(2, close - 2))));
    pos = b;
    end = e;
    i = close + 1;
  }
  while (i < path.size()) {
    size_t next = path.find_first_of(".[", i + 1);
    if (next == std::string_view::npos) next = path.size();
    if (path[i] == '.') {
      std::string quoted = fmt::format("\"{}\"", path.substr(i + 1, next - i - 1));
      size_t at = text.find(quoted, pos);
      if (at != std::string_view::npos && at < end) pos = at;
    }
    i = next;
  }
  return line_at(text, pos);
}

nlohmann::json parse_json(const fs::path& shown, const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    if (auto p = what.find("syntax error"); p != std::string::npos) what = what.substr(p);
    fail(shown, line_at(text, e.byte > 0 ? e.byte - 1 : 0), "invalid JSON: " + what);
  }
}

std::string nonempty_string(JsonObject& o, std::string_view key) {
  std::string s = o.get_string(key);
  if (trim(s).empty()) throw ConfigError(o.path_of(key), "must not be empty");
  return s;
}

std::vector<std::string> tag_list(JsonObject& o, std::string_view key, std::string_view axis) {
  auto tags = o.get_string_list(key);
  if (tags.empty()) throw ConfigError(o.path_of(key), "empty list (use [\"any\"])");
  for (size_t i = 0; i < tags.size(); ++i)
    if (auto why = kb_tag_word_error(axis, tags[i]); !why.empty())
      throw ConfigError(fmt::format("{}[{}]", o.path_of(key), i), why);
  return tags;
}

void check_kind(JsonObject& o, std::string_view want) {
  if (o.get_string("kind") != want)
    throw ConfigError(o.path_of("kind"), fmt::format("expected \"{}\"", want));
}

KbDoc parse_hardware(const fs::path& shown, const CorpusFile& f, Ids& ids) {
  nlohmann::json j = parse_json(shown, f.text);
  KbDoc d;
  try {
    JsonObject o(j, "$");
    d.id = nonempty_string(o, "id");
    if (d.id != f.rel.stem().string())
      throw ConfigError(o.path_of("id"), fmt::format("'{}' differs from the file name '{}'", d.id,
                                                     f.rel.stem().string()));
    check_kind(o, "hardware");
    d.kind = "hardware";
    d.title = nonempty_string(o, "title");
    d.targets = tag_list(o, "targets", "target");
    const nlohmann::json* figures = o.get_raw("figures");
    if (!figures || !figures->is_object() || figures->empty())
      throw ConfigError(o.path_of("figures"), "expected an object of named numbers");
    std::string figure_lines;
    for (auto it = figures->begin(); it != figures->end(); ++it) {
      json_to_number(*it, fmt::format("$.figures.{}", it.key()));
      figure_lines += fmt::format("- {}: {}\n", it.key(), it->dump());
    }
    d.figures = *figures;
    // What the part has that some patterns need (optional: none).
    d.features = o.get_string_list("features", std::vector<std::string>{});
    for (size_t i = 0; i < d.features.size(); ++i)
      if (auto why = kb_tag_word_error("feature", d.features[i]); !why.empty())
        throw ConfigError(fmt::format("{}[{}]", o.path_of("features"), i), why);
    std::string notes = nonempty_string(o, "notes");
    auto sources = o.get_string_list("sources");
    if (sources.empty()) throw ConfigError(o.path_of("sources"), "expected at least one source");
    o.finish();
    d.body = notes + "\n\nFigures:\n" + figure_lines;
    if (!d.features.empty()) d.body += "\nFeatures: " + words(d.features) + "\n";
    for (const auto& s : sources) d.source += (d.source.empty() ? "" : "; ") + s;
  } catch (const ConfigError& e) {
    fail(shown, json_line(f.text, e.path()), e.what());
  }
  ids.claim(d.id, shown, json_line(f.text, "$.id"));
  return d;
}

// An error entry's title: the first sentence of its meaning.
std::string first_sentence(const std::string& s) {
  size_t end = s.find(". ");
  return end == std::string::npos ? s : s.substr(0, end + 1);
}

void parse_errors(const fs::path& shown, const CorpusFile& f, Ids& ids, Corpus& out) {
  nlohmann::json j = parse_json(shown, f.text);
  if (!j.is_array()) fail(shown, 1, "expected a JSON array of error entries");
  for (size_t i = 0; i < j.size(); ++i) {
    KbError e;
    try {
      JsonObject o(j[i], fmt::format("$[{}]", i));
      e.id = nonempty_string(o, "id");
      check_kind(o, "error");
      e.compiler = nonempty_string(o, "compiler");
      e.targets = tag_list(o, "targets", "target");
      e.pattern = nonempty_string(o, "pattern");
      try {
        std::regex re(e.pattern, std::regex::ECMAScript);
      } catch (const std::regex_error& err) {
        throw ConfigError(o.path_of("pattern"),
                          fmt::format("does not compile as an ECMAScript regex: {}", err.what()));
      }
      e.meaning = nonempty_string(o, "meaning");
      e.fix = nonempty_string(o, "fix");
      e.source = nonempty_string(o, "source");
      o.finish();
    } catch (const ConfigError& err) {
      fail(shown, json_line(f.text, err.path()), err.what());
    }
    ids.claim(e.id, shown, json_line(f.text, fmt::format("$[{}].id", i)));
    KbDoc d;
    d.id = e.id;
    d.kind = "error";
    d.title = fmt::format("{}: {}", e.compiler, first_sentence(e.meaning));
    d.body = fmt::format("{}\n\nFix: {}\n\nOutput: {}", e.meaning, e.fix, e.pattern);
    d.source = e.source;
    d.targets = e.targets;
    d.file = f.rel;
    out.docs.push_back(std::move(d));
    out.errors.push_back(std::move(e));
  }
}

// ---- Markdown patterns ---------------------------------------------------

std::vector<std::string> front_matter_list(const fs::path& shown, size_t line, std::string_view key,
                                           const std::string& value, std::string_view axis) {
  if (value.size() < 2 || value.front() != '[' || value.back() != ']')
    fail(shown, line,
         fmt::format("{}: expected a list like [{}, any]", key, kb_tag_words(axis)[0]));
  std::vector<std::string> out;
  std::string_view rest(value.data() + 1, value.size() - 2);
  while (!trim(rest).empty()) {
    size_t comma = rest.find(',');
    std::string word = unquote(trim(rest.substr(0, comma)));
    if (word.empty()) fail(shown, line, fmt::format("{}: empty item in the list", key));
    if (auto why = kb_tag_word_error(axis, word); !why.empty())
      fail(shown, line, fmt::format("{}: {}", key, why));
    out.push_back(word);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  if (out.empty()) fail(shown, line, fmt::format("{}: empty list (use [any])", key));
  return out;
}

KbDoc parse_pattern(const fs::path& shown, const CorpusFile& f, Ids& ids) {
  static const std::vector<std::string> kKeys = {"id",  "title",  "kind",   "targets",
                                                 "ops", "bounds", "source", "needs"};
  const std::string& text = f.text;
  // Each line with the offset just past it.
  std::vector<std::pair<std::string_view, size_t>> lines;
  for (size_t pos = 0; pos < text.size();) {
    size_t nl = text.find('\n', pos);
    size_t next = nl == std::string::npos ? text.size() : nl + 1;
    lines.emplace_back(std::string_view(text).substr(pos, next - pos), next);
    pos = next;
  }
  if (lines.empty() || trim(lines[0].first) != "---")
    fail(shown, 1, "expected front matter: a first line '---'");
  std::map<std::string, std::pair<std::string, size_t>, std::less<>> kv;  // key: value, line
  size_t close = 1;
  for (; close < lines.size() && trim(lines[close].first) != "---"; ++close) {
    std::string_view line = trim(lines[close].first);
    if (line.empty() || line[0] == '#') continue;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos)
      fail(shown, close + 1, "expected 'key: value' in the front matter");
    std::string key(trim(line.substr(0, colon)));
    if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end())
      fail(shown, close + 1,
           fmt::format("unknown key '{}' (expected one of: {})", key, words(kKeys)));
    if (!kv.emplace(key, std::pair(unquote(trim(line.substr(colon + 1))), close + 1)).second)
      fail(shown, close + 1, fmt::format("key '{}' given twice", key));
  }
  if (close == lines.size()) fail(shown, 1, "front matter is not closed by a line '---'");
  auto need = [&](const std::string& key) -> const std::pair<std::string, size_t>& {
    auto it = kv.find(key);
    if (it == kv.end()) fail(shown, 1, fmt::format("front matter lacks '{}'", key));
    if (it->second.first.empty()) fail(shown, it->second.second, fmt::format("{}: empty", key));
    return it->second;
  };
  KbDoc d;
  d.id = need("id").first;
  if (d.id != f.rel.stem().string())
    fail(shown, need("id").second,
         fmt::format("id '{}' differs from the file name '{}'", d.id, f.rel.stem().string()));
  if (need("kind").first != "pattern") fail(shown, need("kind").second, "kind: expected pattern");
  d.kind = "pattern";
  d.title = need("title").first;
  d.source = need("source").first;
  d.targets =
      front_matter_list(shown, need("targets").second, "targets", need("targets").first, "target");
  d.ops = front_matter_list(shown, need("ops").second, "ops", need("ops").first, "op");
  d.bounds =
      front_matter_list(shown, need("bounds").second, "bounds", need("bounds").first, "bound");
  // Hardware features the pattern needs (optional): it is retrieved only for
  // a part whose sheet has them all.
  if (auto it = kv.find("needs"); it != kv.end())
    d.needs = front_matter_list(shown, it->second.second, "needs", it->second.first, "feature");
  d.body = std::string(trim(std::string_view(text).substr(lines[close].second)));
  if (d.body.empty()) fail(shown, close + 1, "no text after the front matter");
  ids.claim(d.id, shown, need("id").second);
  return d;
}

}  // namespace

const std::vector<std::string>& kb_tag_words(std::string_view axis) {
  static const std::vector<std::string> targets = [] {
    std::vector<std::string> names;
    for (const TargetTraits& t : all_target_traits()) names.emplace_back(t.name);
    names.emplace_back("any");
    return names;
  }();
  static const std::vector<std::string> ops = {"elementwise", "reduction", "softmax",
                                               "norm",        "gemm",      "any"};
  static const std::vector<std::string> bounds = {"memory",         "compute",        "latency",
                                                  "dram-bandwidth", "l2-bandwidth",   "memory-latency",
                                                  "occupancy",      "spills",         "launch",
                                                  "any"};
  // Hardware features (no "any": a pattern that needs none says nothing).
  static const std::vector<std::string> features = {"avx2",     "fma",      "avx512", "cp-async",
                                                    "mma-sync", "tma",      "wgmma",  "clusters",
                                                    "fp8"};
  if (axis == "target") return targets;
  if (axis == "op") return ops;
  if (axis == "feature") return features;
  KEVO_ASSERT(axis == "bound");
  return bounds;
}

std::string kb_tag_word_error(std::string_view axis, const std::string& word) {
  const auto& allowed = kb_tag_words(axis);
  if (std::find(allowed.begin(), allowed.end(), word) != allowed.end()) return "";
  return fmt::format("unknown {} '{}' (expected one of: {})", axis, word, words(allowed));
}

std::vector<CorpusFile> list_corpus(const fs::path& root) {
  if (!fs::is_directory(root))
    throw UserError(fmt::format("no knowledge corpus at '{}' (set KEVO_HOME to kevo's source tree)",
                                root.string()));
  std::vector<CorpusFile> out;
  for (const auto& folder : kFolders) {
    const fs::path dir = root / folder.name;
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      const fs::path& p = entry.path();
      if (p.filename().string().front() == '.') continue;  // editors' swap and lock files
      if (!entry.is_regular_file() || p.extension() != folder.ext)
        throw UserError(fmt::format("{}: unexpected in the corpus (only *{} files belong in {}/)",
                                    p.string(), folder.ext, folder.name));
      out.push_back({p.lexically_relative(root), read_text_file(p)});
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.rel < b.rel; });
  return out;
}

std::string corpus_hash(const std::vector<CorpusFile>& files) {
  Sha256 h;
  h.field(kIndexLayout);
  for (const auto& f : files) h.field(f.rel.generic_string()).field(f.text);
  return h.hex();
}

Corpus parse_corpus(const fs::path& root, const std::vector<CorpusFile>& files) {
  Corpus out;
  Ids ids;
  for (const auto& f : files) {
    const fs::path shown = root / f.rel;
    const std::string folder = f.rel.begin()->string();
    if (folder == "errors") {
      parse_errors(shown, f, ids, out);
      continue;
    }
    KbDoc d = folder == "patterns" ? parse_pattern(shown, f, ids) : parse_hardware(shown, f, ids);
    d.file = f.rel;
    out.docs.push_back(std::move(d));
  }
  return out;
}

size_t pattern_literal_chars(const std::string& p) {
  size_t n = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      // \s \d \w \b ... are classes or assertions; an escaped punctuation mark is literal.
      if (!std::isalnum(static_cast<unsigned char>(p[++i]))) ++n;
    } else if (c == '[' || c == '{') {
      const char close = c == '[' ? ']' : '}';
      while (i + 1 < p.size() && p[i + 1] != close) i += p[i + 1] == '\\' ? 2 : 1;
      ++i;
    } else if (std::string_view(".*+?()|^$").find(c) == std::string_view::npos) {
      ++n;
    }
  }
  return n;
}

}  // namespace kevo
