#include "synth/llm/reply.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>

namespace kevo::llm {

namespace {

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < s.size()) {
    size_t nl = s.find('\n', start);
    if (nl == std::string::npos) nl = s.size();
    lines.push_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

std::string rstrip(const std::string& s) {
  size_t end = s.size();
  while (end > 0 && std::isspace(static_cast<unsigned char>(s[end - 1]))) --end;
  return s.substr(0, end);
}

std::string strip(const std::string& s) {
  std::string r = rstrip(s);
  size_t b = 0;
  while (b < r.size() && std::isspace(static_cast<unsigned char>(r[b]))) ++b;
  return r.substr(b);
}

std::string drop_cr(std::string s) {
  if (!s.empty() && s.back() == '\r') s.pop_back();
  return s;
}

// A marker line: 5 to 9 copies of `c`, then `word` (may be empty), nothing else.
bool is_marker(const std::string& line, char c, const char* word) {
  std::string s = strip(line);
  size_t n = 0;
  while (n < s.size() && s[n] == c) ++n;
  if (n < 5 || n > 9) return false;
  return strip(s.substr(n)) == word;
}

// ---- edits ---------------------------------------------------------------

struct EditScan {
  bool found = false;  // the reply has SEARCH/REPLACE markers
  std::vector<Edit> edits;
  std::string error;
};

EditScan scan_edits(const std::vector<std::string>& lines) {
  EditScan scan;
  enum class In { prose, search, replace } in = In::prose;
  Edit cur;
  for (const auto& line : lines) {
    bool search = is_marker(line, '<', "SEARCH");
    bool divider = is_marker(line, '=', "");
    bool replace = is_marker(line, '>', "REPLACE");
    size_t n = scan.edits.size() + 1;
    if (in == In::prose) {
      if (search) {
        scan.found = true;
        in = In::search;
      }
    } else if (in == In::search) {
      if (divider) {
        in = In::replace;
      } else if (search || replace) {
        scan.error = fmt::format("edit {}: no ======= line between SEARCH and REPLACE", n);
        return scan;
      } else {
        cur.search += drop_cr(line) + "\n";
      }
    } else {
      if (replace) {
        scan.edits.push_back(std::exchange(cur, Edit{}));
        in = In::prose;
      } else if (search) {
        scan.error = fmt::format("edit {}: no >>>>>>> REPLACE line before the next SEARCH", n);
        return scan;
      } else {
        cur.replace += drop_cr(line) + "\n";
      }
    }
  }
  if (in != In::prose)
    scan.error = fmt::format("edit {}: not closed by >>>>>>> REPLACE (reply cut short?)",
                             scan.edits.size() + 1);
  return scan;
}

// Applies `e` to `parent` in place, or says why it cannot.
std::optional<std::string> apply_edit(std::vector<std::string>& parent, const Edit& e) {
  std::vector<std::string> search = split_lines(e.search);
  bool blank = std::all_of(search.begin(), search.end(),
                           [](const std::string& l) { return rstrip(l).empty(); });
  if (blank) return std::string("empty SEARCH text");
  std::vector<size_t> at;
  for (size_t i = 0; i + search.size() <= parent.size(); ++i) {
    bool match = true;
    for (size_t k = 0; k < search.size() && match; ++k)
      match = rstrip(parent[i + k]) == rstrip(search[k]);
    if (match) at.push_back(i);
  }
  if (at.empty()) return std::string("SEARCH text not found in the parent");
  if (at.size() > 1)
    return fmt::format(
        "SEARCH text matches {} places in the parent (lines {} and {}); "
        "include more lines to make it unique",
        at.size(), at[0] + 1, at[1] + 1);
  // New lines take the line ending of the text they replace.
  size_t i = at[0];
  bool crlf = !parent[i].empty() && parent[i].back() == '\r';
  std::vector<std::string> repl = split_lines(e.replace);
  if (crlf)
    for (auto& l : repl) l += '\r';
  parent.erase(parent.begin() + i, parent.begin() + i + search.size());
  parent.insert(parent.begin() + i, repl.begin(), repl.end());
  return std::nullopt;
}

// ---- fenced blocks -------------------------------------------------------

const std::set<std::string> kCTags = {"",    "c",   "h",    "cc", "cpp", "c++",
                                      "cxx", "hpp", "cuda", "cu", "cuh"};
const std::set<std::string> kPythonTags = {"", "python", "py", "python3", "triton"};

ParsedReply largest_block(const std::vector<std::string>& lines, std::string_view syntax) {
  const bool python = syntax == "python";
  const std::set<std::string>& kCodeTags = python ? kPythonTags : kCTags;
  ParsedReply out;
  std::string best;
  std::set<std::string> other_tags;
  bool unclosed = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string open = strip(lines[i]);
    size_t ticks = 0;
    while (ticks < open.size() && open[ticks] == '`') ++ticks;
    if (ticks < 3) continue;
    std::string tag = strip(open.substr(ticks));
    tag = tag.substr(0, tag.find_first_of(" \t{"));
    std::transform(tag.begin(), tag.end(), tag.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    // The block ends at a line of at least as many backticks and nothing else.
    size_t j = i + 1;
    for (; j < lines.size(); ++j) {
      std::string close = strip(lines[j]);
      if (close.size() >= ticks && close.find_first_not_of('`') == std::string::npos) break;
    }
    std::string body;
    for (size_t k = i + 1; k < j; ++k) body += drop_cr(lines[k]) + "\n";
    if (j == lines.size()) {
      // A reply cut short at max_tokens: whatever came before it is at best a
      // fragment, unless it is the larger part (a stray fence at the end).
      unclosed = kCodeTags.count(tag) && body.size() > best.size();
      break;
    }
    i = j;
    if (!kCodeTags.count(tag)) {
      other_tags.insert(tag);
      continue;
    }
    if (strip(body).empty()) continue;
    if (body.size() > best.size()) best = std::move(body);
  }
  if (unclosed) {
    out.refusal = "the fenced code block is not closed (reply cut short?)";
  } else if (!best.empty()) {
    out.kind = ParsedReply::Kind::kernel;
    out.source = std::move(best);
  } else if (!other_tags.empty()) {
    std::string tags;
    for (const auto& t : other_tags) tags += (tags.empty() ? "" : ", ") + t;
    out.refusal = fmt::format("no fenced {} block (only: {})", python ? "Python" : "C, C++ or CUDA",
                              tags);
  } else {
    out.refusal = "no fenced code block and no SEARCH/REPLACE edit in the reply";
  }
  return out;
}

}  // namespace

ParsedReply apply_edits(std::vector<Edit> edits, const std::string& parent_source) {
  ParsedReply out;
  std::vector<std::string> lines = split_lines(parent_source);
  bool final_newline = !parent_source.empty() && parent_source.back() == '\n';
  for (size_t k = 0; k < edits.size(); ++k) {
    if (auto why = apply_edit(lines, edits[k])) {
      out.refusal = fmt::format("edit {} of {}: {}", k + 1, edits.size(), *why);
      return out;  // `lines` is a copy: the parent is untouched
    }
  }
  for (size_t k = 0; k < lines.size(); ++k) {
    out.source += lines[k];
    if (k + 1 < lines.size() || final_newline) out.source += '\n';
  }
  out.kind = ParsedReply::Kind::edits;
  out.edits = std::move(edits);
  return out;
}

ParsedReply parse_reply(const std::string& reply_text, const std::string& parent_source,
                        std::string_view syntax) {
  std::vector<std::string> lines = split_lines(reply_text);
  EditScan scan = scan_edits(lines);
  if (!scan.found) return largest_block(lines, syntax);
  if (!scan.error.empty()) return ParsedReply{ParsedReply::Kind::none, "", {}, scan.error};
  return apply_edits(std::move(scan.edits), parent_source);
}

}  // namespace kevo::llm
