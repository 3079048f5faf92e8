#include "core/kernel_headers.h"

#include <algorithm>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "core/hash.h"
#include "core/paths.h"
#include "targets/traits.h"

namespace kevo {

namespace {

// `#include "kevo_NAME.h"` alone on its line (spaces allowed).
const std::regex& include_line() {
  static const std::regex re(R"re(^[ \t]*#[ \t]*include[ \t]*"(kevo_[A-Za-z0-9_]+\.(h|cuh))"[ \t]*$)re");
  return re;
}

std::string begin_marker(const std::string& name, const std::string& text) {
  return fmt::format("/* kevo: begin {} (inlined by kevo; sha256 {}) */", name,
                     sha256_hex(text).substr(0, 16));
}
std::string end_marker(const std::string& name) { return fmt::format("/* kevo: end {} */", name); }

// Each header is inlined once (`seen`), so headers that include each other
// end: the second include becomes a note.
std::string inline_into(const std::string& text, const std::filesystem::path& dir,
                        std::set<std::string>& seen) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    const bool has_nl = eol != std::string::npos;
    if (!has_nl) eol = text.size();
    const std::string line = text.substr(pos, eol - pos);
    std::smatch m;
    std::filesystem::path header;
    if (line.find("kevo_") != std::string::npos && std::regex_match(line, m, include_line()) &&
        std::filesystem::is_regular_file(header = dir / m[1].str())) {
      const std::string name = m[1].str();
      if (seen.insert(name).second) {
        std::string body = read_text_file(header);
        if (!body.empty() && body.back() != '\n') body += '\n';
        body = inline_into(body, dir, seen);
        out += begin_marker(name, body) + "\n" + body + end_marker(name);
      } else {
        out += fmt::format("/* kevo: {} already inlined above */", name);
      }
    } else {
      out += line;
    }
    if (has_nl) out += '\n';
    pos = eol + 1;
  }
  return out;
}

// The regular files of the language's header folder, sorted; none without one.
std::vector<std::filesystem::path> header_files(std::string_view language) {
  std::vector<std::filesystem::path> files;
  const std::filesystem::path dir = kernel_include_dir(language);
  std::error_code ec;
  if (dir.empty() || !std::filesystem::is_directory(dir, ec)) return files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

const std::regex& begin_line() {
  static const std::regex re(
      R"(/\* kevo: begin (kevo_[A-Za-z0-9_]+\.(h|cuh)) \(inlined by kevo; sha256 [0-9a-f]+\) \*/)");
  return re;
}

}  // namespace

std::filesystem::path kernel_include_dir(std::string_view language) {
  const TargetTraits* t = traits_of_language(language);
  if (!t) return {};
  return kevo_home() / "targets" / t->name / "include";
}

std::string inline_kernel_headers(const std::string& text, std::string_view language) {
  if (text.find("kevo_") == std::string::npos) return text;
  const std::filesystem::path dir = kernel_include_dir(language);
  if (dir.empty() || !std::filesystem::is_directory(dir)) return text;
  std::set<std::string> seen;
  return inline_into(text, dir, seen);
}

std::string fold_kernel_headers(const std::string& text) {
  if (text.find("/* kevo: begin ") == std::string::npos) return text;
  std::string out;
  size_t pos = 0;
  std::smatch m;
  while (pos < text.size()) {
    auto first = text.cbegin() + static_cast<std::ptrdiff_t>(pos);
    if (!std::regex_search(first, text.cend(), m, begin_line())) break;
    const std::string name = m[1].str();
    const size_t at = pos + static_cast<size_t>(m.position(0));
    const std::string end = end_marker(name);
    const size_t stop = text.find(end, at);
    if (stop == std::string::npos) break;  // unmatched: leave the rest as it is
    out.append(text, pos, at - pos);
    // Nested headers inside are folded with their includer.
    out += fmt::format("#include \"{}\"", name);
    pos = stop + end.size();
  }
  out.append(text, pos, std::string::npos);
  // Repeated includes leave a note; fold it back to the line it replaced.
  static const std::regex again(R"(/\* kevo: (kevo_[A-Za-z0-9_]+\.(h|cuh)) already inlined above \*/)");
  return std::regex_replace(out, again, "#include \"$1\"");
}

std::string kernel_headers_hash(std::string_view language) {
  const std::vector<std::filesystem::path> files = header_files(language);
  if (files.empty()) return "none";
  std::string all;
  for (const auto& f : files) {
    const std::string text = read_text_file(f);
    all += fmt::format("{}\n{}\n{}", f.filename().string(), text.size(), text);
  }
  return sha256_hex(all).substr(0, 16);
}

std::string kernel_header_interfaces(std::string_view language, const std::set<std::string>* used) {
  std::string out;
  for (const auto& f : header_files(language)) {
    const std::string name = f.filename().string();
    if (name.rfind("kevo_", 0) != 0) continue;
    const std::string text = read_text_file(f);
    // The leading comment block: the header documents its interface there.
    const size_t open = text.find("/*");
    const size_t close = open == std::string::npos ? open : text.find("*/", open);
    if (close == std::string::npos) continue;
    if (!used || used->count(name)) {
      out += fmt::format("#include \"{}\"  (kevo inlines it; its interface:)\n{}\n\n", name,
                         text.substr(open, close + 2 - open));
    } else {
      const size_t nl = text.find('\n', open);
      const std::string first = text.substr(open, std::min(nl, close + 2) - open);
      out += fmt::format("#include \"{}\"  (kevo inlines it; no family of this task uses it)\n{}{}\n\n",
                         name, first, first.size() < close + 2 - open ? " ... */" : "");
    }
  }
  return out;
}

std::set<std::string> kernel_headers_named(const std::string& text) {
  static const std::regex named(
      R"re((?:#[ \t]*include[ \t]*"|/\* kevo: begin )(kevo_[A-Za-z0-9_]+\.(?:h|cuh)))re");
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), named); it != std::sregex_iterator(); ++it)
    out.insert((*it)[1].str());
  return out;
}

}  // namespace kevo
