#include "eval/static_check.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <regex>

#include <fmt/format.h>

#include "targets/traits.h"

namespace kevo {

namespace {

// Calls a kernel has no business making, by what they reach.
struct Banned {
  const char* what;
  const char* names;  // alternatives for a regex
};
const Banned kBanned[] = {
    {"starts processes", "fork|vfork|clone|clone3|system|popen|posix_spawnp?|exec[lv]p?e?|execvpe"},
    {"signals or traces other processes", "kill|tgkill|ptrace"},
    {"opens files", "fopen|freopen|open|openat|creat|unlink|remove|rename|mkdir|rmdir|chdir|truncate"},
    {"uses the network", "socket|connect|bind|listen|accept|sendto|recvfrom|getaddrinfo"},
    {"reads or changes the environment",
     "getenv|secure_getenv|setenv|putenv|unsetenv|clearenv|environ|__environ"},
    {"loads code or makes raw system calls", "dlopen|dlsym|syscall|mprotect|setrlimit|prctl"},
};

// Whether the name at [pos, ...) with the next code at `after` is being
// declared (`int open;`, `struct f { int open; }`, `float open = 1;`): a new
// thing of the kernel's own, not the banned one. `return fopen;` is not.
bool declares(const std::string& code, size_t pos, size_t after) {
  size_t b = pos;
  while (b > 0 && std::isspace(static_cast<unsigned char>(code[b - 1]))) --b;
  if (b == 0 || !(std::isalnum(static_cast<unsigned char>(code[b - 1])) || code[b - 1] == '_'))
    return false;
  size_t w = b;
  while (w > 0 && (std::isalnum(static_cast<unsigned char>(code[w - 1])) || code[w - 1] == '_')) --w;
  static const char* const kNotTypes[] = {"return", "sizeof", "case", "throw", "co_return",
                                          "typeof", "decltype", "else", "do", "goto"};
  const std::string prev = code.substr(w, b - w);
  for (const char* k : kNotTypes)
    if (prev == k) return false;
  if (after >= code.size()) return false;
  const char next = code[after];
  if (next == '=') return after + 1 >= code.size() || code[after + 1] != '=';
  return next == ';' || next == ',' || next == '[' || next == ':' || next == ')';
}

size_t line_of(const std::string& code, size_t pos) {
  return 1 + static_cast<size_t>(std::count(code.begin(), code.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
}

}  // namespace

std::string strip_comments_and_strings(const std::string& s) {
  std::string out = s;
  enum { code, line_comment, block_comment, str, chr } state = code;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    char next = i + 1 < s.size() ? s[i + 1] : '\0';
    switch (state) {
      case code:
        if (c == '/' && next == '/') state = line_comment, out[i] = ' ';
        else if (c == '/' && next == '*') state = block_comment, out[i] = ' ';
        else if (c == '"') state = str;
        else if (c == '\'') state = chr;
        break;
      case line_comment:
        if (c == '\n') state = code;
        else out[i] = ' ';
        break;
      case block_comment:
        if (c == '*' && next == '/') {
          out[i] = out[i + 1] = ' ';
          ++i;
          state = code;
        } else if (c != '\n') {
          out[i] = ' ';
        }
        break;
      case str:
      case chr:
        if (c == '\\' && next) {
          out[i] = ' ';
          if (next != '\n') out[i + 1] = ' ';
          ++i;
        } else if ((state == str && c == '"') || (state == chr && c == '\'')) {
          state = code;
        } else if (c != '\n') {
          out[i] = ' ';
        }
        break;
    }
  }
  return out;
}

namespace {

bool is_word(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
size_t skip_space(const std::string& s, size_t i) {
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return i;
}

// Whether `code` holds the word `name` followed by `(`, spaces between. A
// scan, not std::regex: its executor recurses per character, and a kernel
// (an LLM's, say) with a long run of spaces there overflowed kevo's stack.
bool has_call_of(const std::string& code, const std::string& name) {
  for (size_t pos = code.find(name); pos != std::string::npos; pos = code.find(name, pos + 1)) {
    const size_t after = pos + name.size();
    if ((pos > 0 && is_word(code[pos - 1])) || (after < code.size() && is_word(code[after])))
      continue;
    const size_t paren = skip_space(code, after);
    if (paren < code.size() && code[paren] == '(') return true;
  }
  return false;
}

// Whether `source` at `pos` is a call of a word with a literal
// "cuTensorMapEncode..." first argument. A scan, as above.
bool looks_up_tensor_map_encoder(const std::string& source, size_t pos) {
  size_t i = pos;
  while (i < source.size() && is_word(source[i])) ++i;
  if (i == pos) return false;
  i = skip_space(source, i);
  if (i >= source.size() || source[i] != '(') return false;
  i = skip_space(source, i + 1);
  const std::string prefix = "\"cuTensorMapEncode";
  if (source.compare(i, prefix.size(), prefix) != 0) return false;
  i += prefix.size();
  while (i < source.size() && is_word(source[i])) ++i;
  return i < source.size() && source[i] == '"';
}

}  // namespace

std::optional<std::string> static_check(const std::string& source, const std::string& entry_point,
                                        const std::string& language) {
  const std::string code = strip_comments_and_strings(source);
  if (!has_call_of(code, entry_point))
    return fmt::format("does not define the entry point {}()", entry_point);
  // A banned name anywhere in the code, not only in a call: a function
  // pointer (`= fopen`, `(fn)fork`) and `::fork()` reach the same function.
  // A member of the kernel's own (`x.open`, `p->open`) and std::remove,
  // std::bind (the algorithm, the binder) are other things of the same name.
  for (const Banned& b : kBanned) {
    std::regex use(std::string("(^|[^A-Za-z0-9_])(") + b.names + ")(?![A-Za-z0-9_])");
    for (std::sregex_iterator it(code.begin(), code.end(), use), end; it != end; ++it) {
      const size_t pos = static_cast<size_t>(it->position(2));
      const std::string name = (*it)[2].str();
      if (pos >= 1 && code[pos - 1] == '.') continue;
      if (pos >= 2 && code.compare(pos - 2, 2, "->") == 0) continue;
      if (pos >= 5 && code.compare(pos - 5, 5, "std::") == 0 && (name == "remove" || name == "bind"))
        continue;
      size_t after = pos + name.size();
      while (after < code.size() && std::isspace(static_cast<unsigned char>(code[after]))) ++after;
      if (declares(code, pos, after)) continue;
      const bool called = after < code.size() && code[after] == '(';
      return fmt::format("line {}: {} {}, which {}: kernels may only compute", line_of(code, pos),
                         called ? "calls" : "uses", called ? name + "()" : name, b.what);
    }
  }
  // A driver entry point looked up by name reaches every driver call past
  // the rules: only the tensor-map encoders (TMA descriptors) may be looked
  // up, by a literal name.
  {
    std::regex lookup("(^|[^A-Za-z0-9_])(cudaGetDriverEntryPoint(ByVersion)?|cuGetProcAddress(_v2)?)"
                      "(?![A-Za-z0-9_])");
    for (std::sregex_iterator it(code.begin(), code.end(), lookup), end; it != end; ++it) {
      const size_t pos = static_cast<size_t>(it->position(2));
      // strip_comments_and_strings keeps positions: the literal is in `source`.
      if (looks_up_tensor_map_encoder(source, pos)) continue;
      return fmt::format(
          "line {}: looks up a driver entry point with {}, which reaches driver calls the checks "
          "cannot see (only cuTensorMapEncode* may be looked up, by a literal name)",
          line_of(code, pos), (*it)[2].str());
    }
  }
  // The target's own rules for code in its language (targets/traits.cpp).
  if (const TargetTraits* t = traits_of_language(language))
    for (const BannedUse& b : t->banned) {
      std::regex use(std::string("(^|[^A-Za-z0-9_])(") + b.names + ")\\b");
      std::smatch m;
      if (std::regex_search(code, m, use))
        return fmt::format("line {}: uses {}, which {}",
                           line_of(code, static_cast<size_t>(m.position(2))), m[2].str(), b.what);
    }
  return std::nullopt;
}

}  // namespace kevo
