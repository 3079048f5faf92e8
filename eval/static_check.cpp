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

std::string strip_python_comments_and_strings(const std::string& s) {
  std::string out = s;
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const char c = s[i];
    if (c == '#') {
      while (i < n && s[i] != '\n') out[i++] = ' ';
      continue;
    }
    if (c != '\'' && c != '"') {
      ++i;
      continue;
    }
    // A string: its prefix letters (r, b, u, f) are the word just before it.
    size_t p = i;
    bool formatted = false, raw = false;
    while (p > 0 && std::isalpha(static_cast<unsigned char>(s[p - 1]))) {
      const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(s[p - 1])));
      if (l == 'f') formatted = true;
      if (l == 'r') raw = true;
      --p;
    }
    const bool triple = i + 2 < n && s[i + 1] == c && s[i + 2] == c;
    const size_t open = triple ? 3 : 1;
    size_t j = i + open;
    while (j < n) {
      if (s[j] == '\\' && !raw) {
        j += 2;
        continue;
      }
      if (!triple && s[j] == '\n') break;
      if (s[j] == c && (!triple || (j + 2 < n && s[j + 1] == c && s[j + 2] == c))) break;
      ++j;
    }
    const size_t end = std::min(n, j + (j < n ? open : 0));
    // An f-string's text stays: what its braces hold is code.
    if (!formatted)
      for (size_t k = i; k < end; ++k)
        if (out[k] != '\n') out[k] = ' ';
    i = end;
  }
  return out;
}

namespace {

// What a Python candidate of `t` may import (its traits' python_imports).
bool python_import_allowed(const TargetTraits& t, const std::string& module) {
  if (!t.python_imports) return false;
  return std::regex_match(module, std::regex(t.python_imports));
}

// Names a Python candidate may not use, by what they reach. As a bare name
// or as an attribute (`torch.os`, `triton.runtime.build.subprocess`).
const Banned kBannedPython[] = {
    {"reads files, runs code from text or reflects on objects",
     "open|exec|eval|compile|globals|locals|vars|getattr|setattr|delattr|breakpoint|input|help|"
     "memoryview|exit|quit|dir"},
    {"reaches the operating system (processes, files, the environment, the network)",
     "os|sys|subprocess|socket|shutil|pathlib|builtins|importlib|ctypes|signal|multiprocessing|"
     "threading|io|pickle|marshal|inspect|gc|weakref|runpy|environ|getenv|system|popen"},
    {"loads code (extensions, custom ops, the hub)", "hub|load_library|cpp_extension|distributed"},
    {"reaches Triton's runtime, compiler or settings (kevo runs and compiles the kernels)",
     "runtime|compiler|driver|knobs|backends|testing"},
    {"tunes on its own (kevo is the tuner)", "autotune"},
    {"makes or switches streams or devices (launch on torch's current stream)",
     "Stream|ExternalStream|stream|set_stream|set_device|device_of"},
    {"changes torch's global settings", "set_[A-Za-z0-9_]+|manual_seed[A-Za-z0-9_]*|use_deterministic_algorithms"},
};

std::optional<std::string> static_check_python(const TargetTraits& t, const std::string& source,
                                               const std::string& entry_point) {
  const std::string code = strip_python_comments_and_strings(source);
  if (!std::regex_search(code, std::regex("(^|\n)def\\s+" + entry_point + "\\s*\\(")))
    return fmt::format("does not define the entry point {}() at the top level", entry_point);
  // Imports: each module named, and the names they bind.
  std::vector<std::string> bound = {"torch", "triton", "tl", "math"};
  std::vector<std::string> torch_names = {"torch"};  // names bound to torch itself
  {
    static const std::regex import_stmt(R"((^|[\n;])[ \t]*import[ \t]+([^\n;]+))");
    static const std::regex from_stmt(R"((^|[\n;])[ \t]*from[ \t]+([.\w]+)[ \t]+import[ \t]+\(?([^\n;)]+))");
    static const std::regex item(R"(([.\w]+)(?:[ \t]+as[ \t]+(\w+))?)");
    for (std::sregex_iterator it(code.begin(), code.end(), import_stmt), end; it != end; ++it) {
      const std::string list = (*it)[2].str();
      for (std::sregex_iterator m(list.begin(), list.end(), item); m != end; ++m) {
        const std::string module = (*m)[1].str();
        if (!python_import_allowed(t, module))
          return fmt::format("line {}: imports {}: a {} candidate imports only {}",
                             line_of(code, static_cast<size_t>(it->position(2))), module, t.name,
                             t.python_imports_doc ? t.python_imports_doc : "nothing");
        bound.push_back((*m)[2].matched ? (*m)[2].str() : module.substr(0, module.find('.')));
        if (module == "torch") torch_names.push_back(bound.back());
      }
    }
    for (std::sregex_iterator it(code.begin(), code.end(), from_stmt), end; it != end; ++it) {
      const std::string module = (*it)[2].str();
      const std::string list = (*it)[3].str();
      for (std::sregex_iterator m(list.begin(), list.end(), item); m != end; ++m) {
        const std::string name = (*m)[1].str();
        const std::string full = module + "." + name;
        if (!python_import_allowed(t, module) ||
            (module == "torch" && !python_import_allowed(t, full) &&
             std::regex_search(name, std::regex("^[a-z]"))))
          return fmt::format("line {}: imports {} from {}: a {} candidate imports only {}",
                             line_of(code, static_cast<size_t>(it->position(2))), name, module, t.name,
                             t.python_imports_doc ? t.python_imports_doc : "nothing");
        bound.push_back((*m)[2].matched ? (*m)[2].str() : name);
      }
    }
  }
  // Private and special attributes (torch._C, fn.__globals__) and special
  // names (__import__, __builtins__) reach past every rule below.
  {
    static const std::regex hidden(R"((\.[ \t]*_[A-Za-z0-9_]*)|((^|[^A-Za-z0-9_.])__[A-Za-z0-9_]*))");
    std::smatch m;
    if (std::regex_search(code, m, hidden))
      return fmt::format("line {}: uses {}, a private or special name: kernels may only compute",
                         line_of(code, static_cast<size_t>(m.position(0))), m[0].str());
  }
  for (const Banned& b : kBannedPython) {
    std::regex use(std::string("(^|[^A-Za-z0-9_])(") + b.names + ")(?![A-Za-z0-9_])");
    for (std::sregex_iterator it(code.begin(), code.end(), use), end; it != end; ++it) {
      const size_t pos = static_cast<size_t>(it->position(2));
      size_t after = pos + (*it)[2].length();
      while (after < code.size() && (code[after] == ' ' || code[after] == '\t')) ++after;
      // A keyword argument or a name of its own being bound (`stream=`,
      // `def load(`) is not the banned thing, unless it is an attribute.
      const bool attribute = pos > 0 && code[pos - 1] == '.';
      const bool keyword = after < code.size() && code[after] == '=' &&
                           (after + 1 >= code.size() || code[after + 1] != '=');
      if (!attribute && keyword) continue;
      return fmt::format("line {}: uses {}, which {}: kernels may only compute",
                         line_of(code, pos), (*it)[2].str(), b.what);
    }
  }
  // torch's own file and code loaders (tl.load is Triton's, and fine).
  for (const std::string& name : torch_names) {
    std::regex io("(^|[^A-Za-z0-9_.])" + name + "[ \\t]*\\.[ \\t]*(load|save|from_file|ops|library|utils)(?![A-Za-z0-9_])");
    std::smatch m;
    if (std::regex_search(code, m, io))
      return fmt::format("line {}: uses {}.{}, which reads or writes files or loads code: kernels "
                         "may only compute",
                         line_of(code, static_cast<size_t>(m.position(2))), name, m[2].str());
  }
  // State that outlives a call or changes what others see.
  {
    static const std::regex keyword(R"((^|[^A-Za-z0-9_.])(global|nonlocal)(?![A-Za-z0-9_]))");
    std::smatch m;
    if (std::regex_search(code, m, keyword))
      return fmt::format("line {}: uses '{}': a candidate keeps no state between calls",
                         line_of(code, static_cast<size_t>(m.position(2))), m[2].str());
  }
  for (const std::string& name : bound) {
    // At a statement's start or in a tuple of targets (`a, torch.x = ...`);
    // not `x: tl.constexpr = 1`, an annotation.
    std::regex assign("(^|[\\n;,(])[ \\t]*(" + name +
                      "(\\.[A-Za-z0-9_]+)+)[ \\t]*([-+*/%&|^@]|//|<<|>>|\\*\\*)?=(?!=)");
    std::smatch m;
    if (std::regex_search(code, m, assign))
      return fmt::format("line {}: assigns {}: a candidate may not change torch's, Triton's or "
                         "math's attributes",
                         line_of(code, static_cast<size_t>(m.position(2))), m[2].str());
    std::regex del("(^|[^A-Za-z0-9_.])del[ \\t]+(" + name + "(\\.[A-Za-z0-9_]+)+)");
    if (std::regex_search(code, m, del))
      return fmt::format("line {}: deletes {}: a candidate may not change torch's, Triton's or "
                         "math's attributes",
                         line_of(code, static_cast<size_t>(m.position(2))), m[2].str());
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> static_check(const std::string& source, const std::string& entry_point,
                                        const std::string& language) {
  if (const TargetTraits* t = traits_of_language(language); t && std::string(t->syntax) == "python")
    return static_check_python(*t, source, entry_point);
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
